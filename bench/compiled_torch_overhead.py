"""Where the time of logging inside ``torch.compile`` goes, in CPU time per step.

    python bench/compiled_torch_overhead.py                 # ~2 min on 2 cores
    python bench/compiled_torch_overhead.py --profile summarylib

The training step of ``bench/compiled_torch.py`` (inductor, CPU, one intra-op thread),
timed with CPU clocks so that other jobs on a shared machine count less: the calling
thread's CPU time (``time.thread_time``) and the CPU time of every other thread of the
process (``time.process_time`` minus the caller's: the writer thread, as torch runs one
intra-op thread here). Modes alternate in blocks of steps over rounds; each figure is the
median over rounds of µs per step. The gap to the no-logging step is cut into:

* (a) ``none``: the compiled step without logging;
* (b) ``noop``: the same region with a custom op of the summary op's signature, given the
  same tensors at the same places, whose implementation returns at once (the dispatch of
  the ops in the graph, and the gate's kernel, writing nothing);
* (c) ``summarylib`` on the caller beyond ``noop``: the summary op's own work when it
  runs (gates read, calls replayed, events queued);
* (d) the writer thread's CPU time beyond ``none``'s (events encoded and written).

``interval`` and ``writer`` are the other modes of ``bench/compiled_torch.py``.
``--forward`` times the compiled region alone (no backward, no optimizer, under
``no_grad``) and adds the minimum over rounds of each mode's caller CPU time: on a loaded
machine the medians move with the load, the minima much less.
``--profile MODE`` runs cProfile on the calling thread and, separately, on the writer
thread over a block of that mode, and prints the top functions of each.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
from compiled_torch import HIST_EVERY, make_model, train_fns

import summarylib as sl

# A custom op of the summary op's signature that does nothing: the graph's dispatch cost.
_LIB = torch.library.Library("summarylib_bench", "DEF")  # type: ignore[no-untyped-call]
_LIB.define("noop(Tensor(a!) token, int call, Tensor[] values) -> ()")  # type: ignore[no-untyped-call]


def _noop(token: torch.Tensor, call: int, values: list[torch.Tensor]) -> None:
    return None


_LIB.impl("noop", _noop, "CompositeExplicitAutograd")  # type: ignore[no-untyped-call]


@torch.library.register_fake("summarylib_bench::noop", lib=_LIB)  # type: ignore[untyped-decorator]
def _noop_fake(token: torch.Tensor, call: int, values: list[torch.Tensor]) -> None:
    return None


_TOKEN = torch.zeros(1)


def noop_fn(model: torch.nn.Module, plain: Callable[..., Any]) -> Callable[..., Any]:
    params = list(model.parameters())

    def noop(x: Any, y: Any, step: Any) -> Any:
        loss, acc = plain(x, y, step)
        op = torch.ops.summarylib_bench.noop
        op(_TOKEN, 0, [loss, step])
        op(_TOKEN, 1, [acc, step])
        gate = step % HIST_EVERY == 0
        for i, p in enumerate(params):
            op(_TOKEN, 2 + i, [p, step, gate])
        return loss, acc

    return noop


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--block", type=int, default=300)
    ap.add_argument("--modes", default="none,noop,summarylib,interval,writer")
    ap.add_argument("--profile", default=None, help="a mode to profile (cProfile, per thread)")
    ap.add_argument("--forward", action="store_true",
                    help="the compiled region alone (no backward or optimizer step)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    threads: list[cProfile.Profile] = []
    if args.profile:
        # One profiler for each thread started from here on (the writers' threads).
        def start_in_thread(*_: Any) -> None:
            prof = cProfile.Profile()
            threads.append(prof)
            prof.enable()  # replaces this hook for the thread

        threading.setprofile(start_in_thread)
    model = make_model()
    tmp = Path(tempfile.mkdtemp())
    methods_writer = sl.SummaryWriter(str(tmp / "methods"))
    fns = train_fns(model, methods_writer)
    fns["noop"] = noop_fn(model, fns["plain"])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(128, 64)
    y = torch.randint(0, 10, (128,))
    names = {"none": "plain", "noop": "noop", "summarylib": "logged", "interval": "interval",
             "writer": "methods"}
    modes = args.modes.split(",")
    compiled = {m: torch.compile(fns[names[m]], fullgraph=True) for m in modes}
    ours = sl.create_file_writer(str(tmp / "ours"))
    uses_default = {"summarylib", "interval"}

    def block(m: int | str, start: int, n: int) -> tuple[float, float, float]:
        fn = compiled[str(m)]
        w0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        if m in uses_default:
            ours_ctx = ours.as_default()
            ours_ctx.__enter__()
        if args.forward:
            with torch.no_grad():
                for i in range(start, start + n):
                    fn(x, y, torch.tensor(i))
        else:
            for i in range(start, start + n):
                loss, _ = fn(x, y, torch.tensor(i))
                opt.zero_grad()
                loss.backward()
                opt.step()
        if m in uses_default:
            ours_ctx.__exit__(None, None, None)
            ours.flush()  # the writer thread's work for the block, counted in the block
        else:
            methods_writer.flush()
        w1, c1, p1 = time.perf_counter(), time.thread_time(), time.process_time()
        return ((w1 - w0) / n * 1e6, (c1 - c0) / n * 1e6, ((p1 - p0) - (c1 - c0)) / n * 1e6)

    try:
        step = 0
        for m in modes:  # compile, and warm every path
            block(m, step, 2 * HIST_EVERY)
            step += 2 * HIST_EVERY
        if args.profile:
            threading.setprofile(None)  # type: ignore[arg-type]
            profile(block, args.profile, step, args.block * 3, threads)
            return
        load = [os.getloadavg()[0]]
        got: dict[str, list[tuple[float, float, float]]] = {m: [] for m in modes}
        for _ in range(args.rounds):
            for m in modes:
                got[m].append(block(m, step, args.block))
                step += args.block
            load.append(os.getloadavg()[0])
        ours.close()
        methods_writer.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {m: tuple(statistics.median(r[k] for r in got[m]) for k in range(3)) for m in modes}
    low = {m: min(r[1] for r in got[m]) for m in modes}
    print(f"torch {torch.__version__}, inductor, 1 thread; {args.rounds} rounds of "
          f"{args.block} {'forward passes' if args.forward else 'steps'}; load average "
          f"(1 min) {min(load):.1f}-{max(load):.1f}; medians of rounds (caller CPU: also "
          f"the minimum)")
    print(f"{'mode':<12} {'wall µs/step':>13} {'caller CPU':>11} {'(min)':>8} "
          f"{'other threads':>14}")
    for m in modes:
        w, c, o = med[m]
        print(f"{m:<12} {w:>13.1f} {c:>11.1f} {low[m]:>8.1f} {o:>14.1f}")
    if {"none", "noop", "summarylib"} <= set(modes):
        a, b, c = med["none"], med["noop"], med["summarylib"]
        print("decomposition of summarylib, µs of CPU per step:")
        print(f"  (a) step without logging (caller)        {a[1]:8.1f}")
        print(f"  (b) ops in the graph writing nothing      {b[1] - a[1]:8.1f}")
        print(f"  (c) + the op's work on the caller         {c[1] - b[1]:8.1f}")
        print(f"  (d) + writer thread                       {c[2] - a[2]:8.1f}")
        total = (c[1] - a[1]) + (c[2] - a[2])
        print(f"  logging in all: {total:.1f} µs = {100 * total / a[1]:.1f}% of the step")
        print(f"  minima: (a) {low['none']:.1f}, (b) {low['noop'] - low['none']:.1f}, "
              f"(c) {low['summarylib'] - low['noop']:.1f}")
    for m in ("interval", "writer"):
        if m in med and "none" in med:
            print(f"  {m}: caller +{med[m][1] - med['none'][1]:.1f} (minima "
                  f"+{low[m] - low['none']:.1f}), writer thread "
                  f"+{med[m][2] - med['none'][2]:.1f} µs per step")


def profile(block: Callable[[str, int, int], Any], mode: str, step: int, n: int,
            threads: list[cProfile.Profile]) -> None:
    for prof in threads:
        prof.clear()  # the warm-up's work (the writers are idle after its flush)
    caller = cProfile.Profile()
    caller.enable()
    block(mode, step, n)
    caller.disable()
    print(f"--- calling thread, {mode}, {n} steps ---")
    pstats.Stats(caller).sort_stats("tottime").print_stats(25)
    for prof in threads:
        prof.create_stats()
        if sum(row[2] for row in prof.stats.values()) > 0.01:  # type: ignore[attr-defined]
            print("--- another thread ---")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
