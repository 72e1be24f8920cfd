"""A ``with writer.as_default(step=i):`` block per training step, beside one block around the loop.

    python bench/context_per_step.py            # ~10 s
    python bench/context_per_step.py --quick    # fewer steps and repetitions

Both loops log one ``scalar()`` a step to the same warm writer (default policy) and end with
``flush()``, so every write is counted. Prints microseconds per step (median of alternating
repetitions) and their ratio. Target: the per-step block within 2x of the single block,
although leaving ``as_default()`` returns only once the block's events are in the file (as
TensorFlow's): the calling thread writes its one pending event itself, with one ``write``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def main() -> None:
    import summarylib as sl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, reps = (5_000, 5) if args.quick else (50_000, 9)
    with tempfile.TemporaryDirectory() as logdir:
        w = sl.create_file_writer(logdir)

        def one_block(start: int) -> float:
            t0 = time.perf_counter()
            with w.as_default():
                for i in range(start, start + n):
                    sl.scalar("loss", 1.0, step=i)
            w.flush()
            return (time.perf_counter() - t0) / n * 1e6

        def block_per_step(start: int) -> float:
            t0 = time.perf_counter()
            for i in range(start, start + n):
                with w.as_default(step=i):
                    sl.scalar("loss", 1.0)
            w.flush()
            return (time.perf_counter() - t0) / n * 1e6

        one_block(0)  # warm: imports, the tag's cached bytes, the writer thread
        block_per_step(0)
        single, per_step = [], []
        for r in range(reps):  # alternating, so load changes hit both alike
            single.append(one_block((2 * r + 1) * n))
            per_step.append(block_per_step((2 * r + 2) * n))
        w.close()
    a, b = statistics.median(single), statistics.median(per_step)
    print("| loop | µs per step |")
    print("|---|---|")
    print(f"| one `with w.as_default():` around the loop | {a:.2f} |")
    print(f"| `with w.as_default(step=i):` every step | {b:.2f} |")
    print(f"ratio per-step / one block: {b / a:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
