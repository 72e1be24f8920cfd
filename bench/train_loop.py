"""What logging costs a real training loop, per step: a small torch MLP trained with SGD on
one thread, 10 metrics logged every step, with and without the four parameter histograms
every 100 steps, beside torch's and tensorboardX's SummaryWriter.

    python bench/train_loop.py                  # 10,000 logged steps, 5 repetitions, ~4 min
    python bench/train_loop.py --steps 3000 --reps 3

Micro-benchmarks time logging calls back to back, with warm caches and nothing else to do;
a training loop runs torch ops between the calls (which release the GIL, and evict the
logging code from the CPU caches), so the writer's thread and its wake-ups compete with
the loop. Every mode runs in a fresh interpreter, in rotating order, with the same model,
data and seed; inside it, chunks of 1,000 steps alternate without and with logging. Each
logged chunk ends with the writer's flush(), timed with it: the background work that the
chunk's events cause lands in the chunk, not in the next, unlogged one (with shorter
chunks and no flush, a write could land in either, and medians then hid it). The overhead
is the mean of the paired differences (this machine's speed drifts by more than the
overhead between processes, so only chunks of one process are compared). The metric values
are computed (``.item()``) in every step, logged or not, so the difference is the logging
alone; the writer's close() is spread over the logged steps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

MODES = {
    "summarylib": "summarylib scalars(), 10 metrics",
    "summarylib+hist": "summarylib, + 4 histograms every 100 steps",
    "summarylib-bigqueue": "summarylib, max_queue=100000 (no flush during the loop)",
    "torch": "torch add_scalar x10",
    "torch+hist": "torch add_scalar x10, + 4 add_histogram every 100 steps",
    "tensorboardX": "tensorboardX add_scalar x10",
    "tensorboardX+hist": "tensorboardX add_scalar x10, + 4 add_histogram every 100 steps",
}

_CHILD = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import torch
mode, steps, logdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
y = torch.randint(0, 10, (16,))
loss_fn = torch.nn.CrossEntropyLoss()
names = [f"metric_{i}" for i in range(10)]
hist = mode.endswith("+hist")
log = None
if mode.startswith("summarylib"):
    import summarylib as sl
    w = sl.create_file_writer(logdir, max_queue=100000 if mode.endswith("bigqueue") else 10)
    w.set_as_default()
    scalars, histogram = sl.scalars, sl.histogram
    def log(step, values):
        scalars(dict(zip(names, values)), step=step)
        if hist and step % 100 == 0:
            for name, p in model.named_parameters():
                histogram(name, p.detach(), step=step)
elif mode.startswith(("torch", "tensorboardX")):
    if mode.startswith("torch"):
        from torch.utils.tensorboard import SummaryWriter
    else:
        from tensorboardX import SummaryWriter
    w = SummaryWriter(logdir)
    add_scalar, add_histogram = w.add_scalar, w.add_histogram
    def log(step, values):
        for name, v in zip(names, values):
            add_scalar(name, v, step)
        if hist and step % 100 == 0:
            for name, p in model.named_parameters():
                add_histogram(name, p.detach(), step)

def train(n, first, logging):
    t = time.perf_counter()
    for step in range(first, first + n):
        opt.zero_grad()
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        opt.step()
        l = loss.item()
        values = [l * (i + 1) for i in range(10)]
        if logging:
            log(step, values)
    if logging:
        w.flush()  # the background work of this chunk's events is timed with it
    return time.perf_counter() - t

# Warm-up (first events, metadata, caches), then chunks of CHUNK steps, alternately without
# and with logging: the machine's drift hits both alike, and the mean of the paired
# differences is the overhead.
CHUNK = 1000
train(200, 0, log is not None)
pairs = []
step = 200
for _ in range(max(1, steps // CHUNK)):
    base = train(CHUNK, step, False)
    step += CHUNK
    logged = train(CHUNK, step, log is not None)
    step += CHUNK
    pairs.append((base / CHUNK, logged / CHUNK))
t0 = time.perf_counter()
if log is not None:
    w.close()
print(json.dumps({"pairs": pairs, "close": time.perf_counter() - t0}))
'''


def run(mode: str, steps: int) -> tuple[float, float]:
    """(µs per step without logging, µs of logging per step), medians over chunk pairs."""
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, mode, str(steps), d],
            capture_output=True, text=True, timeout=900,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode}: {proc.stderr.strip().splitlines()[-1:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    pairs = out["pairs"]  # seconds per step, without and with logging
    base = statistics.median(b for b, _ in pairs) * 1e6
    extra = statistics.fmean(lg - b for b, lg in pairs) * 1e6
    return base, extra + out["close"] / steps * 1e6


def available(mode: str) -> bool:
    import importlib.util

    if mode.startswith("tensorboardX"):
        return importlib.util.find_spec("tensorboardX") is not None
    if mode.startswith("torch"):
        return importlib.util.find_spec("tensorboard") is not None
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    modes = [m for m in args.modes if available(m) and m != "none"]
    results: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for r in range(args.reps):
        k = r % len(modes)
        for mode in modes[k:] + modes[:k]:
            results[mode].append(run(mode, args.steps))
            print(".", end="", flush=True)
    print()
    base = statistics.median(b for m in modes for b, _ in results[m])
    print(f"{args.steps} logged SGD steps of a 32-64-10 MLP, batch 16, one thread, in chunks "
          f"of 1,000 (each ending with flush()) alternating with as many unlogged steps; "
          f"median of {args.reps} processes; a step without logging: {base:.0f} µs\n")
    print("| mode | overhead µs/step (incl. close) | overhead ÷ summarylib |")
    print("|---|---:|---:|")
    rows = {m: statistics.median(e for _, e in results[m]) for m in modes}
    ours = rows.get("summarylib")
    for mode in modes:
        ratio = f"{rows[mode] / ours:.1f}x" if ours else ""
        print(f"| {MODES[mode]} | {rows[mode]:.1f} | {ratio} |")
    print("\ntarget: summarylib's default writer adds <= 5 µs per step for 10 metrics")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "results": results, "overhead_us": rows}, f, indent=1)


if __name__ == "__main__":
    main()
