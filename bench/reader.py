"""Reading benchmark: read_columns beside TensorBoard's EventAccumulator, tbparse and
read_scalars on one file of scalars, plus export throughput.

    python bench/reader.py              # 900,000 scalars (3 tags x 300,000 steps), ~2 min
    python bench/reader.py --quick      # 90,000 scalars
    python bench/reader.py --export-mb 1000   # also a ~1 GB logdir exported to Parquet

Each reader runs in a fresh interpreter (so one reader's caches and allocations do not
help or hurt the next), three times; the table shows medians and ratios to read_columns.
Memory is the peak traced by tracemalloc during read_columns, against the bytes of the
arrays it returns. Peers that are not installed are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TAGS = ("loss", "accuracy", "learning_rate")

_READERS = {
    "read_columns": """
from summarylib.reader import read_columns
r = read_columns(LOGDIR)
n = sum(len(c.step) for t in r.values() for c in t.values())
""",
    "read_scalars": """
from summarylib.reader import read_scalars
r = read_scalars(LOGDIR)
n = sum(len(s) for t in r.values() for s in t.values())
""",
    "EventAccumulator": """
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(LOGDIR, size_guidance={ea.TENSORS: 0, ea.SCALARS: 0})
acc.Reload()
n = sum(len(acc.Tensors(t)) for t in acc.Tags()["tensors"])
""",
    "tbparse": """
import warnings
warnings.simplefilter("ignore")
from tbparse import SummaryReader
n = len(SummaryReader(LOGDIR).tensors)
""",
}

_MEMORY = """
import tracemalloc
from summarylib.reader import read_columns
tracemalloc.start()
r = read_columns(LOGDIR)
peak = tracemalloc.get_traced_memory()[1]
arrays = sum(c.step.nbytes + c.wall_time.nbytes + c.value.nbytes
             for t in r.values() for c in t.values())
print(json.dumps({"peak": peak, "arrays": arrays}))
"""


def write_log(logdir: str, steps: int) -> int:
    import summarylib as sl

    w = sl.create_file_writer(logdir, max_queue=100_000)
    with w.as_default():
        for s in range(steps):
            sl.scalar("loss", 1.0 / (s + 1), step=s)
            sl.scalar("accuracy", s / steps, step=s)
            sl.scalar("learning_rate", 0.1, step=s)
    w.close()
    return sum(f.stat().st_size for f in Path(logdir).iterdir())


def run_reader(code: str, logdir: str) -> tuple[float, str]:
    program = (
        "import json, sys, time\nLOGDIR = sys.argv[1]\nt0 = time.perf_counter()\n"
        + code
        + "\nprint(json.dumps({'secs': time.perf_counter() - t0, 'n': n}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program, logdir], capture_output=True, text=True, cwd=REPO
    )
    if proc.returncode != 0:
        return float("nan"), proc.stderr.strip().splitlines()[-1]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(out["secs"]), str(out["n"])


def available(name: str) -> bool:
    import importlib.util

    module = {"EventAccumulator": "tensorboard", "tbparse": "tbparse"}.get(name)
    return module is None or importlib.util.find_spec(module) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--export-mb", type=int, default=0)
    args = parser.parse_args()
    steps = 30_000 if args.quick else 300_000
    with tempfile.TemporaryDirectory() as tmp:
        logdir = os.path.join(tmp, "run")
        size = write_log(logdir, steps)
        print(f"{3 * steps:,} scalars in one file ({size / 1e6:.1f} MB)\n")
        results = {}
        for name, code in _READERS.items():
            if not available(name):
                print(f"{name}: not installed, skipped")
                continue
            times = []
            for _ in range(args.repeat):
                secs, n = run_reader(code, logdir)
                times.append(secs)
            results[name] = (statistics.median(times), n)
        base = results["read_columns"][0]
        print(f"{'reader':<18} {'median s':>9} {'x read_columns':>15} {'points':>9}")
        for name, (secs, n) in results.items():
            print(f"{name:<18} {secs:>9.3f} {secs / base:>15.1f} {n:>9}")
        print("\ntargets: EventAccumulator >= 10x read_columns, tbparse >= 20x")
        program = "import json, sys\nLOGDIR = sys.argv[1]\n" + _MEMORY
        proc = subprocess.run(
            [sys.executable, "-c", program, logdir], capture_output=True, text=True, cwd=REPO
        )
        mem = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"read_columns memory: peak {mem['peak'] / 1e6:.1f} MB for "
            f"{mem['arrays'] / 1e6:.1f} MB of arrays ({mem['peak'] / mem['arrays']:.2f}x; "
            "target <= 2x)"
        )
        if args.export_mb:
            export_bench(tmp, args.export_mb)


def export_bench(tmp: str, megabytes: int) -> None:
    from summarylib.reader.export import export_scalars

    logdir = os.path.join(tmp, "big")
    size = 0
    run = 0
    while size < megabytes * 1e6:
        size += write_log(os.path.join(logdir, f"run{run}"), 300_000)
        run += 1
    t0 = time.perf_counter()
    rows = export_scalars(logdir, os.path.join(tmp, "out.parquet"), "parquet")
    secs = time.perf_counter() - t0
    print(
        f"export to parquet: {size / 1e6:.0f} MB, {rows:,} rows in {secs:.1f} s = "
        f"{size / 1e6 / secs:.0f} MB/s (target >= 100 MB/s)"
    )


if __name__ == "__main__":
    main()
