"""Where the CPU time of logging from inside ``jax.jit`` goes, per step, by thread.

    python bench/compiled_jax_cost.py                 # ~4 min on 2 cores
    python bench/compiled_jax_cost.py --steps 500 --rounds 3
    python bench/compiled_jax_cost.py --profile       # cProfile of both threads too

The MLP step of ``bench/compiled_jax.py`` (loss and accuracy every step, six parameter
histograms every 100 steps, the cadence a static argument) run in stages that add one
part of the logging at a time:

* ``a-none``: the plain ``jax.jit`` step, no logging;
* ``a-values``: plain ``jax.jit`` returning loss and accuracy too, unused (what
  computing the logged values and handing them out costs, with no logging at all);
* ``b-packed``: the step compiled by ``summarylib.integrations.jax.jit``, its summaries'
  buffer returned, nothing done with it (the plan's replay skipped);
* ``c-queued``: + the replay on the calling thread (the buffer's unit queued), while the
  writer thread turns each unit into no events;
* ``d-written``: + the writer thread's work (the whole pipeline: what users run);
* ``e-timed``: ``d-written`` with the CPU time spent in the plan's replay (calling
  thread) and in the units' ``make`` (writer thread) added up (columns ``replay`` and
  ``make``; the timers cost ~0.5 µs per call);
* ``metrics``: the step returns loss and accuracy, the loop hands them to ``sl.scalar``.

Stages ``b`` and ``c`` replace one method each for the run (the bench's own switch, not
an API). Wall time depends on the machine's load; CPU time per thread much less so. For
each stage it prints, per step (median over rounds, stages interleaved in every round):
wall µs, the process's CPU µs, the calling thread's, the writer thread's, and the rest
(XLA's threads), then the stage's rate divided by the first stage's in the same round,
plus the load average before and after.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax

import summarylib as sl
from bench.compiled_jax import HIST_EVERY, init, make_modes, sgd
from summarylib.ops import _call_unit


def thread_cpu(ident: int | None) -> float:
    """CPU seconds of the thread ``ident`` (0.0 if it is gone or not started)."""
    if ident is None:
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (OSError, ProcessLookupError):
        return 0.0


def writer_ident(logdir: Path) -> int | None:
    """The ident of the writer thread of the writer into ``logdir`` (None: not started)."""
    for t in threading.enumerate():
        if t.name.startswith("summarylib-writer") and str(logdir) in t.name:
            return t.ident
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--stages",
                    default="a-none,a-values,b-packed,c-queued,d-written,e-timed,metrics")
    args = ap.parse_args()
    key = jax.random.PRNGKey(0)
    params0 = init(key, (64, 256, 256, 10))
    x = jax.random.normal(key, (128, 64))
    y = jax.random.randint(key, (128,), 0, 10)
    modes = make_modes()  # the steps of bench/compiled_jax.py, with this bench's data
    returning = jax.jit(sgd)

    def none(p: Any, i: int) -> Any:
        return modes["none"](p, x, y, i)

    def returned(p: Any, i: int) -> Any:
        return returning(p, x, y)[0]

    def collected(p: Any, i: int) -> Any:
        return modes["collected"](p, x, y, i)

    def metrics(p: Any, i: int) -> Any:
        return modes["metrics"](p, x, y, i)

    real_replay = _call_unit.CallPlan.replay
    real_make = _call_unit._Run.make

    def skip_replay(*a: Any, **k: Any) -> None:
        return None

    def no_events(self: Any) -> list[Any]:
        self.buffer = None
        return []

    spent = {"replay": 0, "make": 0}

    def timed_replay(*a: Any, **k: Any) -> None:
        t = time.thread_time_ns()
        real_replay(*a, **k)
        spent["replay"] += time.thread_time_ns() - t

    def timed_make(self: Any) -> list[Any]:
        t = time.thread_time_ns()
        try:
            return real_make(self)
        finally:
            spent["make"] += time.thread_time_ns() - t

    stages: dict[str, tuple[Any, Any, Any]] = {  # fn, replay, make
        "a-none": (none, real_replay, real_make),
        "a-values": (returned, real_replay, real_make),
        "b-packed": (collected, skip_replay, real_make),
        "c-queued": (collected, real_replay, no_events),
        "d-written": (collected, real_replay, real_make),
        "metrics": (metrics, real_replay, real_make),
        # d-written, with the CPU time inside the replay and the unit's make counted
        "e-timed": (collected, timed_replay, timed_make),
    }
    chosen = args.stages.split(",")
    tmp = Path(tempfile.mkdtemp())
    names = ("wall", "process", "caller", "writer", "xla", "replay", "make")
    got: dict[str, dict[str, list[float]]] = {s: {n: [] for n in names} for s in chosen}
    profiles = {s: (cProfile.Profile(), cProfile.Profile()) for s in chosen}
    load0 = os.getloadavg()
    step = 0
    try:
        writers = {s: sl.create_file_writer(str(tmp / s)) for s in chosen}
        for s in chosen:
            fn, replay, make = stages[s]
            with writers[s].as_default():
                _call_unit.CallPlan.replay = replay  # type: ignore[method-assign]
                _call_unit._Run.make = make  # type: ignore[method-assign]
                for i in range(2):  # compile both variants
                    jax.block_until_ready(fn(params0, i * HIST_EVERY + 1 - i))
                writers[s].flush()
        for r in range(args.rounds):
            for s in chosen:
                fn, replay, make = stages[s]
                w = writers[s]
                _call_unit.CallPlan.replay = replay  # type: ignore[method-assign]
                _call_unit._Run.make = make  # type: ignore[method-assign]
                if args.profile and r == args.rounds - 1:
                    _profile_writer(w, profiles[s][1])
                with w.as_default():
                    w.flush()
                    p = params0
                    wid = writer_ident(tmp / s)
                    t0 = time.perf_counter()
                    c0 = time.process_time()
                    m0 = time.thread_time()
                    k0 = thread_cpu(wid)
                    prof = profiles[s][0] if args.profile and r == args.rounds - 1 else None
                    if prof is not None:
                        prof.enable()
                    spent["replay"] = spent["make"] = 0
                    for _ in range(args.steps):
                        p = fn(p, step)
                        step += 1
                    jax.block_until_ready(p)
                    if prof is not None:
                        prof.disable()
                    m1 = time.thread_time()
                    w.flush()  # the writer thread's share of these steps
                    wid = wid or writer_ident(tmp / s)
                    k1 = thread_cpu(wid)
                    c1 = time.process_time()
                    t1 = time.perf_counter()
                n = args.steps / 1e6
                row = got[s]
                row["wall"].append((t1 - t0) / n)
                row["process"].append((c1 - c0) / n)
                row["caller"].append((m1 - m0) / n)
                row["writer"].append((k1 - k0) / n)
                row["xla"].append((c1 - c0 - (m1 - m0) - (k1 - k0)) / n)
                row["replay"].append(spent["replay"] / 1e3 / args.steps)
                row["make"].append(spent["make"] / 1e3 / args.steps)
        for w in writers.values():
            w.close()
    finally:
        _call_unit.CallPlan.replay = real_replay  # type: ignore[method-assign]
        _call_unit._Run.make = real_make  # type: ignore[method-assign]
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"jax {jax.__version__}, {args.rounds} rounds of {args.steps} steps per stage; "
          f"load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    print("µs per step (median of rounds)")
    base = chosen[0]
    print(f"{'stage':<10}" + "".join(f"{n:>10}" for n in names) + f"   rate ÷ {base}")
    for s in chosen:
        # The rate relative to the first stage, in the same round (median of rounds).
        ratio = statistics.median(b / w for b, w in zip(got[base]["wall"], got[s]["wall"],
                                                         strict=True))
        print(f"{s:<10}" + "".join(f"{statistics.median(got[s][n]):>10.1f}" for n in names)
              + f"{ratio:>12.3f}")
    if args.profile:
        for s in chosen:
            for who, prof in zip(("caller", "writer"), profiles[s], strict=True):
                out = io.StringIO()
                try:
                    st = pstats.Stats(prof, stream=out)
                except TypeError:  # never enabled (no batch written while profiled)
                    continue
                st.sort_stats("tottime").print_stats(18)
                print(f"--- {s}: {who} thread, {args.steps} steps ---")
                print("\n".join(out.getvalue().splitlines()[:45]))


def _profile_writer(writer: Any, prof: cProfile.Profile) -> None:
    # Profile the writer thread's batches: wrap its encoder's write (bench only).
    worker = writer._resource._worker
    enc = worker._encoder
    if getattr(enc, "_bench_wrapped", False):
        return
    real = enc.write

    def write(*a: Any, **k: Any) -> Any:
        prof.enable()
        try:
            return real(*a, **k)
        finally:
            prof.disable()

    enc.write = write
    enc._bench_wrapped = True


if __name__ == "__main__":
    main()
