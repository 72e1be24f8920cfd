"""Summaries from inside a ``torch.compile``'d training step, beside torch's own writer.

    python bench/compiled_torch.py            # ~3 min on 2 cores
    python bench/compiled_torch.py --quick
    python bench/compiled_torch.py --quick --threads 1   # one intra-op thread
    python bench/compiled_torch.py --model large   # a step several times longer

An MLP training step compiled with ``torch.compile`` (inductor, CPU) that logs loss and
accuracy every step and a histogram of every parameter every 100 steps. Modes:

* ``none``: the compiled step, no logging (the reference);
* ``summarylib``: ``sl.scalar``/``sl.histogram`` called inside the compiled step
  (``fullgraph=True``), histograms under ``record_if(step % 100 == 0)`` on a tensor step,
  each block of steps inside one ``as_default()`` of the writer;
* ``interval``: as ``summarylib``, but loss and accuracy are written every 100 steps as
  their mean over the 100 steps (``scalar(..., reduce="mean")`` under the same
  ``record_if``: the sums are kept in tensors, updated inside the custom op);
* ``writer``: as ``summarylib``, through a ``SummaryWriter``'s methods
  (``writer.add_scalar``/``writer.add_histogram`` inside the compiled step, no default
  writer);
* ``torch_item``: torch's ``SummaryWriter.add_scalar(tag, loss.item())`` after the step
  (the compiled step returns loss and accuracy; ``item()`` waits for them);
* graph breaks: the distinct breaks dynamo records (``counters["graph_break"]``, by
  reason) while ``torch._dynamo.explain`` traces the step with our ops, with torch's
  ``add_scalar(loss.item())`` and with ``SummaryWriter.add_*`` inside it, beside the
  number of graphs explain found. Explain's own ``graph_break_count`` is that number of
  graphs less one, so breaks after which no tensor work follows count as none there:
  torch's ``item()`` (and the ``add_scalar`` call dynamo skips after it) read 0 breaks and
  1 graph; dynamo records 2. Recompiles: dynamo's counters over every step run.

Short blocks of every mode alternate over rounds (each round starting with the next
mode); each mode's rate is divided by the ``none`` block of the same round and the median
of those ratios is printed.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
from torch._dynamo.utils import counters

import summarylib as sl

HIST_EVERY = 100
#: The MLP's layer sizes and batch, by ``--model``.
MODELS = {"small": ((64, 256, 256, 10), 128), "large": ((128, 512, 512, 10), 256)}


def make_model(sizes: tuple[int, ...] = MODELS["small"][0]) -> torch.nn.Module:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def train_fns(model: torch.nn.Module, writer: Any) -> dict[str, Any]:
    # The compiled region: forward, loss and accuracy (and the logging); backward and the
    # optimizer step run outside it, as usual with torch.compile on a module's forward.
    params = list(model.parameters())
    names = [n for n, _ in model.named_parameters()]

    def plain(x: Any, y: Any, step: Any) -> Any:
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        return loss, acc

    def logged(x: Any, y: Any, step: Any) -> Any:
        loss, acc = plain(x, y, step)
        sl.scalar("loss", loss, step=step)
        sl.scalar("accuracy", acc, step=step)
        with sl.record_if(step % HIST_EVERY == 0):
            for n, p in zip(names, params, strict=True):
                sl.histogram(n, p, step=step)
        return loss, acc

    def interval(x: Any, y: Any, step: Any) -> Any:
        loss, acc = plain(x, y, step)
        with sl.record_if(step % HIST_EVERY == 0):
            sl.scalar("loss", loss, step=step, reduce="mean")
            sl.scalar("accuracy", acc, step=step, reduce="mean")
            for n, p in zip(names, params, strict=True):
                sl.histogram(n, p, step=step)
        return loss, acc

    def methods(x: Any, y: Any, step: Any) -> Any:
        loss, acc = plain(x, y, step)
        writer.add_scalar("loss", loss, step)
        writer.add_scalar("accuracy", acc, step)
        with sl.record_if(step % HIST_EVERY == 0):
            for n, p in zip(names, params, strict=True):
                writer.add_histogram(n, p, step)
        return loss, acc

    return {"plain": plain, "logged": logged, "interval": interval, "methods": methods}


def graph_breaks(fn: Any, *args: Any) -> tuple[int, int]:
    """``(graph breaks, graphs)`` of ``fn(*args)`` under ``torch._dynamo.explain``: the
    breaks as dynamo records them, one per distinct reason (a break is recorded again
    when dynamo restarts the frame's analysis after it), also one that leaves no tensor
    work after it and so makes no second graph; the graphs as explain finds them."""
    counters.clear()
    explanation = torch._dynamo.explain(fn)(*args)
    breaks = len(counters["graph_break"])
    counters.clear()
    return breaks, explanation.graph_count


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--model", choices=list(MODELS), default="small",
                    help="the MLP's size: 'small' (where logging's fixed cost per step "
                         "shows most) or 'large' (a step several times longer)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch's intra-op threads (default: torch's own choice); on a "
                         "loaded machine one thread keeps OpenMP's waits out of the timing")
    args = ap.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    rounds, block = (5, 100) if args.quick else (15, 200)
    sizes, batch = MODELS[args.model]
    if args.model != "small":
        block = HIST_EVERY  # every block holds one histogram step
    model = make_model(sizes)
    tmp = Path(tempfile.mkdtemp())
    methods_writer = sl.SummaryWriter(str(tmp / "methods"))
    fns = train_fns(model, methods_writer)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def train(fn: Any, i: int) -> tuple[Any, Any]:
        loss, acc = fn(x, y, torch.tensor(i))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach(), acc
    x = torch.randn(batch, sizes[0])
    y = torch.randint(0, sizes[-1], (batch,))
    try:
        from torch.utils.tensorboard import SummaryWriter

        tb = SummaryWriter(str(tmp / "torch"))
        ours = sl.create_file_writer(str(tmp / "ours"))

        def torch_inside(xx: Any, yy: Any, step: Any) -> Any:
            loss, acc = fns["plain"](xx, yy, step)
            tb.add_scalar("loss", loss.item(), int(step))
            return loss, acc

        with ours.as_default():
            breaks_ours = graph_breaks(fns["logged"], x, y, torch.tensor(0))
        breaks_torch = graph_breaks(torch_inside, x, y, torch.tensor(0))
        breaks_methods = graph_breaks(fns["methods"], x, y, torch.tensor(0))
        torch._dynamo.reset()
        counters.clear()
        none = torch.compile(fns["plain"], fullgraph=True)
        logged = torch.compile(fns["logged"], fullgraph=True)
        reduced = torch.compile(fns["interval"], fullgraph=True)
        with_methods = torch.compile(fns["methods"], fullgraph=True)

        def run_none(i: int) -> None:
            train(none, i)

        def run_ours(i: int) -> None:
            train(logged, i)

        def run_interval(i: int) -> None:
            train(reduced, i)

        def run_methods(i: int) -> None:
            train(with_methods, i)

        def run_torch(i: int) -> None:
            loss, acc = train(none, i)
            tb.add_scalar("loss", loss.item(), i)
            tb.add_scalar("accuracy", acc.item(), i)
            if i % HIST_EVERY == 0:
                for n, p in model.named_parameters():
                    tb.add_histogram(n, p.detach(), i)

        modes = {"none": run_none, "summarylib": run_ours, "interval": run_interval,
                 "writer": run_methods, "torch_item": run_torch}
        # The module-level ops write to the default writer: each block runs inside one
        # as_default(), as a training loop does (leaving it writes the pending events, as
        # TensorFlow's does: entered per step, that is one file write per step).
        default_writer = {"summarylib": ours, "interval": ours}
        for m, run in modes.items():  # compile first
            with default_writer[m].as_default() if m in default_writer else nullcontext():
                run(0)
        graphs_after_warmup = counters["stats"]["unique_graphs"]
        ratios: dict[str, list[float]] = {m: [] for m in modes}
        step = 1
        total = 0
        names = list(modes)
        for r in range(rounds):
            got = {}
            # Each round starts with another mode: a block's place in the round changes
            # its rate by a few percent, which would otherwise favour one mode.
            for m in names[r % len(names):] + names[:r % len(names)]:
                run = modes[m]
                t0 = time.perf_counter()
                with default_writer[m].as_default() if m in default_writer else nullcontext():
                    for _ in range(block):
                        run(step)
                        step += 1
                got[m] = block / (time.perf_counter() - t0)
            total += block
            for m in modes:
                ratios[m].append(got[m] / got["none"])
        recompiles = counters["stats"]["unique_graphs"] - graphs_after_warmup
        tb.close()
        ours.close()
        methods_writer.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"torch {torch.__version__}, inductor on the CPU ({torch.get_num_threads()} "
          f"threads), model {args.model} {sizes} batch {batch}, {rounds} rounds of {block} "
          "steps")
    print(f"graph breaks (graphs): summarylib ops inside the step "
          f"{breaks_ours[0]} ({breaks_ours[1]}), torch's add_scalar(loss.item()) inside it "
          f"{breaks_torch[0]} ({breaks_torch[1]}), SummaryWriter.add_* inside it "
          f"{breaks_methods[0]} ({breaks_methods[1]})")
    print(f"new graphs after the first call, over {total * len(modes)} calls: {recompiles}")
    print(f"{'mode':<12} {'÷ none (median of rounds)':>28}")
    for m in modes:
        print(f"{m:<12} {statistics.median(ratios[m]):>28.3f}")


if __name__ == "__main__":
    main()
