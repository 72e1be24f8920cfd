"""Logging a CUDA training loop without waiting for the GPU: summarylib beside the peers.

    python bench/gpu_device_values.py                  # ~1-2 min on one GPU
    python bench/gpu_device_values.py --steps 300 --reps 1 --device cpu   # a smoke run

A small MLP trains for ``--steps`` steps (default 2,000); the loss is logged every step
and a histogram of every parameter every 100 steps. Modes, alternating within every
repetition (medians over ``--reps``):

* ``no logging``;
* ``summarylib``: ``scalar("loss", loss)`` and ``histogram(name, param)`` on the CUDA
  tensors themselves, every call inside ``torch.cuda.set_sync_debug_mode("error")``,
  which raises on a synchronizing call: the run itself proves that no call waited;
* ``torch.utils.tensorboard`` and ``tensorboardX``: ``add_scalar`` and
  ``add_histogram`` on the same tensors (they convert on the caller's thread);
* compiled steps (``torch.compile(fullgraph=True)`` of the forward and loss, inductor):
  ``compiled, no logging`` and ``compiled, summarylib`` (``sl.scalar`` inside the
  compiled region, the histograms under ``record_if(step % 100 == 0)`` on a device step);
  on CUDA also ``compiled CUDA graphs, summarylib`` (``mode="reduce-overhead"``): its
  rate, or the error the compile gave (the run reports which).

After the summarylib run the written values are checked against copies made on the
device at each call (``clone()``, queued like the capture): the loss values equal, and
each histogram equals the host histogram of the parameter at the call, although the
optimizer updates the parameters in place right after it.

Prints a table of steps/s and the ratio to no logging (goal: summarylib >= 0.98x), and
writes the numbers to ``--json`` (default ``$OUT/gpu_device_values.json`` when ``$OUT``
is set).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import summarylib as sl  # noqa: E402


def _peers() -> dict[str, Any]:
    found: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        found["torch.utils.tensorboard"] = TorchWriter
    with contextlib.suppress(Exception):
        from tensorboardX import SummaryWriter as XWriter

        found["tensorboardX"] = XWriter
    return found


@contextlib.contextmanager
def no_sync(device: torch.device) -> Iterator[None]:
    """Raise on any synchronizing CUDA call inside (nothing to check on the CPU)."""
    if device.type != "cuda":
        yield
        return
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_model(device: torch.device) -> tuple[torch.nn.Module, Any, Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(128, 256, device=device)
    y = torch.randint(0, 10, (128,), device=device)
    return model, opt, x, y


COMPILED = {"compiled, no logging": "default", "compiled, summarylib": "default",
            "compiled CUDA graphs, summarylib": "reduce-overhead"}


def compiled_step(model: torch.nn.Module, mode: str, hist_every: int) -> Any:
    """The forward and loss compiled as one region, logging inside it when ``mode`` says."""
    names = [n for n, _ in model.named_parameters()]
    params = list(model.parameters())
    logs = "summarylib" in mode

    def forward(x: Any, y: Any, step: Any) -> Any:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if logs:
            sl.scalar("loss", loss, step=step)
            with sl.record_if(step % hist_every == 0):
                for n, p in zip(names, params, strict=True):
                    sl.histogram(f"weights/{n}", p, step=step)
        return loss

    return torch.compile(forward, fullgraph=True, mode=COMPILED[mode])


def run(mode: str, steps: int, hist_every: int, device: torch.device, peers: dict[str, Any],
        check: bool) -> tuple[float, dict[str, Any]]:
    if mode in COMPILED:
        return run_compiled(mode, steps, hist_every, device, check)
    model, opt, x, y = make_model(device)
    d = tempfile.mkdtemp()
    writer: Any = None
    if mode == "summarylib":
        writer = sl.create_file_writer(d)
        writer.set_as_default()  # as_default() flushes on exit, and a flush waits
    elif mode in peers:
        writer = peers[mode](d)
    kept_loss: list[torch.Tensor] = []
    kept_params: list[tuple[int, str, torch.Tensor]] = []
    for _ in range(10):  # warm-up: kernels, allocator
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    sync(device)
    t0 = time.perf_counter()
    for i in range(steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if mode == "summarylib":
            with no_sync(device):
                sl.scalar("loss", loss, step=i)
                if i % hist_every == 0:
                    for name, p in model.named_parameters():
                        sl.histogram(f"weights/{name}", p, step=i)
            if check:
                kept_loss.append(loss.detach().clone())
                if i % hist_every == 0:
                    kept_params += [(i, n, p.detach().clone())
                                    for n, p in model.named_parameters()]
        elif writer is not None:
            writer.add_scalar("loss", loss, i)
            if i % hist_every == 0:
                for name, p in model.named_parameters():
                    writer.add_histogram(f"weights/{name}", p, i)
        opt.step()  # updates the parameters in place, right after the calls
    sync(device)
    if writer is not None:
        writer.flush()
    elapsed = time.perf_counter() - t0
    verdict: dict[str, Any] = {}
    if writer is not None:
        writer.close()
    if mode == "summarylib":
        sl.create_noop_writer().set_as_default()
        if check:
            verdict = verify(d, kept_loss, kept_params)
    shutil.rmtree(d, ignore_errors=True)
    return steps / elapsed, verdict


def run_compiled(mode: str, steps: int, hist_every: int, device: torch.device,
                 check: bool) -> tuple[float, dict[str, Any]]:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model, opt, x, y = make_model(device)
    step_fn = compiled_step(model, mode, hist_every)
    d = tempfile.mkdtemp()
    writer = sl.create_file_writer(d)
    writer.set_as_default()
    steps_on_device = [torch.tensor(i, device=device) for i in range(-10, steps)]
    kept_loss: list[torch.Tensor] = []
    verdict: dict[str, Any] = {}

    def one(i: int) -> Any:
        # After the warm-up, the compiled step with our ops inside must not synchronize.
        with no_sync(device) if i >= 0 and "summarylib" in mode else contextlib.nullcontext():
            loss = step_fn(x, y, steps_on_device[i + 10])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    try:
        for i in range(-10, 0):  # warm-up: compiles (and records the CUDA graphs)
            one(i)
    except Exception as e:  # a mode that does not compile says so in the table
        writer.close()
        sl.create_noop_writer().set_as_default()
        shutil.rmtree(d, ignore_errors=True)
        return float("nan"), {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    graphs = counters["stats"]["unique_graphs"]
    sync(device)
    t0 = time.perf_counter()
    for i in range(steps):
        try:
            loss = one(i)
        except Exception as e:  # a synchronizing call inside the step, say
            writer.close()
            sl.create_noop_writer().set_as_default()
            shutil.rmtree(d, ignore_errors=True)
            return float("nan"), {"error": f"step {i}: {type(e).__name__}: {str(e)[:300]}"}
        if check and "summarylib" in mode:
            kept_loss.append(loss.detach().clone())
    sync(device)
    writer.flush()
    elapsed = time.perf_counter() - t0
    writer.close()
    sl.create_noop_writer().set_as_default()
    verdict["recompiles"] = counters["stats"]["unique_graphs"] - graphs
    if check and "summarylib" in mode:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

        (name,) = [f for f in os.listdir(d) if "tfevents" in f]
        got = {e.step: struct.unpack("<f", v.tensor.tensor_content)[0]
               for e in EventFileLoader(os.path.join(d, name)).Load()
               for v in e.summary.value if v.tag == "loss"}
        want = torch.stack(kept_loss).float().cpu().numpy()
        verdict["loss_values_equal"] = [got.get(i) for i in range(steps)] == [
            float(w) for w in want]
    shutil.rmtree(d, ignore_errors=True)
    return steps / elapsed, verdict


def verify(logdir: str, losses: list[torch.Tensor],
           params: list[tuple[int, str, torch.Tensor]]) -> dict[str, Any]:
    """The file's values against the device copies made at each call."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    (name,) = [f for f in os.listdir(logdir) if "tfevents" in f]
    scalars: dict[int, float] = {}
    hists: dict[tuple[int, str], bytes] = {}
    for event in EventFileLoader(os.path.join(logdir, name)).Load():
        for v in event.summary.value:
            if v.tag == "loss":
                scalars[event.step] = struct.unpack("<f", v.tensor.tensor_content)[0]
            elif v.tag.startswith("weights/"):
                hists[(event.step, v.tag[len("weights/"):])] = v.tensor.tensor_content
    want = torch.stack(losses).float().cpu().numpy()
    loss_ok = [scalars.get(i) for i in range(len(want))] == [float(w) for w in want]
    hist_ok = all(
        hists.get((i, n)) == sl.histogram_pb("h", p.cpu().numpy()).value[0].tensor.tensor_content
        for i, n, p in params
    )
    return {"loss_values_equal": loss_ok, "histograms_equal": hist_ok,
            "histograms": len(params)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--hist-every", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    device = torch.device(args.device)
    peers = _peers()
    compiled = [m for m in COMPILED if device.type == "cuda" or "CUDA" not in m]
    modes = ["no logging", "summarylib", *peers, *compiled]
    rates: dict[str, list[float]] = {m: [] for m in modes}
    verdict: dict[str, Any] = {}
    compiled_verdicts: dict[str, dict[str, Any]] = {}
    for rep in range(args.reps):
        order = modes[rep % len(modes):] + modes[: rep % len(modes)]
        for mode in order:
            rate, v = run(mode, args.steps, args.hist_every, device, peers, check=rep == 0)
            rates[mode].append(rate)
            if mode in COMPILED:
                compiled_verdicts.setdefault(mode, {}).update(v)
            elif mode == "summarylib":
                verdict = verdict or v
    med = {m: statistics.median(r) for m, r in rates.items()}
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"## A CUDA training loop, loss every step, histograms every {args.hist_every} "
          f"({args.steps} steps, {gpu}, torch {torch.__version__})\n")
    print("| mode | steps/s | vs no logging |")
    print("|---|---|---|")
    for mode, rate in med.items():
        base = med["compiled, no logging"] if mode in COMPILED else med["no logging"]
        print(f"| {mode} | {rate:,.0f} | {rate / base:.3f}x |")
    print("\n(compiled modes are divided by `compiled, no logging`)")
    for mode, v in compiled_verdicts.items():
        print(f"{mode}: {v}")
    ratio = med["summarylib"] / med["no logging"]
    print(f"\nsummarylib {ratio:.3f}x of no logging (goal >= 0.98x); "
          f"no synchronizing call under set_sync_debug_mode('error'): "
          f"{'checked' if device.type == 'cuda' else 'not checked (no CUDA)'}; "
          f"values: {verdict}")
    out = args.json or (os.path.join(os.environ["OUT"], "gpu_device_values.json")
                        if os.environ.get("OUT") else None)
    if out:
        with open(out, "w") as f:
            json.dump({"device": gpu, "torch": torch.__version__, "steps": args.steps,
                       "steps_per_s": med, "runs": rates, "ratio": ratio,
                       "verify": verdict, "compiled": compiled_verdicts,
                       "numpy": np.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
