"""The loss promise under flaky storage, many trials: figures for the record.

Each trial runs four threads that log scalars and flush at random through a writer whose
output fails 15% of its writes (tests/flaky_storage.py). It prints, over all trials, how
many events were acknowledged, how many were lost and reported as promised, and how many
losses were hidden from a flush()/close() that covered them (the promise: none) or written
twice (none).

    python bench/flaky_storage.py [TRIALS]      # default 200
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.flaky_storage import run_trial


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    totals = {"acknowledged": 0, "lost": 0, "hidden": 0, "duplicates": 0,
              "failed writes": 0, "trials with a loss": 0}
    started = time.monotonic()
    for seed in range(trials):
        r = run_trial(seed)
        totals["acknowledged"] += r.acknowledged
        totals["lost"] += r.lost
        totals["hidden"] += len(r.hidden)
        totals["duplicates"] += r.duplicates
        totals["failed writes"] += r.failures
        totals["trials with a loss"] += r.lost > 0
        for line in r.hidden[:3]:
            print("HIDDEN", line)
    print(f"{trials} trials in {time.monotonic() - started:.1f} s")
    for name, value in totals.items():
        print(f"  {name:>20}: {value}")
    return 1 if totals["hidden"] or totals["duplicates"] else 0


if __name__ == "__main__":
    sys.exit(main())
