"""The torch-style SummaryWriter methods beside our ops, torch's and tensorboardX's methods.

    python bench/drop_in.py            # ~1 min
    python bench/drop_in.py --quick    # fewer repetitions

Each row times one call on a warm writer (median of repeated batches, in microseconds per
call; per value for add_scalars) and prints the ratio to our own op or to tensorboardX.
Images, histograms and embeddings are measured including ``flush()`` of the batch, so the
work deferred to the writer's thread is counted. Targets: add_scalar <= 1.3x scalar();
add_scalars <= 2 us per value; add_image and add_histogram as fast as our ops;
add_embedding of 10k x 128 float32 <= 0.5x tensorboardX.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np

warnings.simplefilter("ignore")


def timed(fn: Callable[[int], None], n: int, reps: int, after: Callable[[], None]) -> float:
    """Median over ``reps`` of the time per call of ``n`` calls (``after`` counted)."""
    fn(0)
    after()
    samples = []
    for r in range(reps):
        t0 = time.perf_counter()
        for i in range(n):
            fn(r * n + i + 1)
        after()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 3 if args.quick else 7
    import summarylib as sl

    tmp = tempfile.mkdtemp()
    ours = sl.SummaryWriter(f"{tmp}/ours", max_queue=1000)
    op_writer = sl.create_file_writer(f"{tmp}/op", max_queue=1000)
    op_writer.set_as_default()
    peers: dict[str, object] = {}
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        peers["torch"] = TorchWriter(f"{tmp}/torch", max_queue=1000)
    except ImportError:
        pass
    try:
        from tensorboardX import SummaryWriter as XWriter

        peers["tensorboardX"] = XWriter(f"{tmp}/tbx", max_queue=1000)
    except ImportError:
        pass

    rng = np.random.default_rng(0)
    image = rng.random((3, 64, 64)).astype(np.float32)
    image_hwc = np.ascontiguousarray(image.transpose(1, 2, 0))[None]
    values = rng.normal(size=10_000).astype(np.float32)
    twenty = {f"k{i}": float(i) for i in range(20)}
    mat = rng.random((10_000, 128)).astype(np.float32)

    rows: list[tuple[str, str, float, dict[str, float]]] = []
    paired: dict[str, float] = {}

    def row(name: str, baseline_name: str, baseline: Callable[[], float],
            calls: dict[str, Callable], n: int, flush_all: bool, per: int = 1) -> None:
        # Ours and the baseline are timed in alternation and compared pair by pair (this
        # machine's speed drifts more than the difference); the peers once each.
        results: dict[str, float] = {}
        ratios, bases, mine = [], [], []
        flush_ours = ours.flush if flush_all else (lambda: None)
        for _ in range(reps):
            b = baseline()
            o = timed(calls["summarylib"], n, 1, flush_ours)
            bases.append(b)
            mine.append(o)
            ratios.append(o / b)
        results["summarylib"] = statistics.median(mine) / per
        for who, fn in calls.items():
            writer = peers.get(who)
            if writer is None:
                continue
            flush = writer.flush if flush_all else (lambda: None)  # type: ignore[attr-defined]
            results[who] = timed(fn, n, reps, flush) / per
        rows.append((name, baseline_name, statistics.median(bases) / per, results))
        paired[name] = statistics.median(ratios)

    def all_writers(method: str, *a: object, **kw: object) -> dict[str, Callable]:
        out: dict[str, Callable] = {}
        for who, w in [("summarylib", ours), *peers.items()]:
            out[who] = (lambda i, w=w: getattr(w, method)(*a, global_step=i, **kw))
        return out

    def base() -> float:
        return timed(lambda i: sl.scalar("loss", 0.5, step=i), 2000, 1, lambda: None)

    row("add_scalar", "scalar()", base, {
        who: (lambda i, w=w: w.add_scalar("loss", 0.5, i))
        for who, w in [("summarylib", ours), *peers.items()]}, 2000, False)
    row("add_scalars (20 values), per value", "scalars()",
        lambda: timed(lambda i: sl.scalars(twenty, step=i), 200, 1, lambda: None),
        all_writers("add_scalars", "grp", twenty), 200, False, per=20)
    row("add_image 3x64x64 float", "image()",
        lambda: timed(lambda i: sl.image("img", image_hwc, step=i), 50, 1, op_writer.flush),
        all_writers("add_image", "img", image), 50, True)
    # Two baselines: the op of the same kind (torch's 1,400 "tensorflow" bin edges), which
    # shows what the method adds, and histogram() (30 equal buckets), a different bucketing.
    row("add_histogram 10k", "histogram_bins()",
        lambda: timed(lambda i: sl.histogram_bins("h", values, step=i), 50, 1,
                      op_writer.flush),
        all_writers("add_histogram", "h", values), 50, True)
    row("add_histogram 10k ", "histogram()",
        lambda: timed(lambda i: sl.histogram("h", values, step=i), 50, 1, op_writer.flush),
        all_writers("add_histogram", "h", values), 50, True)
    emb: dict[str, Callable] = {}
    for who, w in [("summarylib", ours), *peers.items()]:
        if who != "torch":  # torch's needs TensorFlow's gfile for embeddings
            emb[who] = (lambda i, w=w: w.add_embedding(mat, global_step=i, tag="e"))
    rows.append(("add_embedding 10k x 128", "-", float("nan"),
                 {who: timed(fn, 1, max(2, reps // 2), lambda: None)
                  for who, fn in emb.items()}))

    print(f"{'call':38} {'baseline':>26} {'summarylib':>11} {'torch':>11} {'tbX':>11} "
          f"{'ours/base':>9} {'ours/tbX':>9}")
    for name, base_name, base_us, res in rows:
        s = res.get("summarylib", float("nan"))
        t = res.get("torch", float("nan"))
        x = res.get("tensorboardX", float("nan"))
        ratio = paired.get(name, float("nan"))
        print(f"{name:38} {base_name + f' {base_us:8.2f}':>26} {s:11.2f} {t:11.2f} {x:11.2f} "
              f"{ratio:9.2f} {s / x:9.3f}")
    print("(microseconds per call, medians; per value for add_scalars; ours/base is the median"
          " of paired ratios)")
    ours.close()
    op_writer.close()
    for w in peers.values():
        w.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
