"""The caller's time for the first ``sl.histogram`` of each new shape of a JAX array.

    python bench/histogram_first_call.py            # ~10 s on 2 cores
    python bench/histogram_first_call.py --json /tmp/h.json

A model's first logging step histograms every parameter: each parameter shape is new to
the device reductions (:mod:`summarylib.encoding._device_reductions`), which need compiled
kernels for it. This measures, in one fresh process, ``sl.histogram`` on ten arrays of
distinct shapes (all large enough to be bucketed on the device, on JAX's CPU backend):

* the caller's time of the process's first device histogram (it also traces the kernels
  once, abstractly: no compile),
* the caller's time of the first call of each of the nine later new shapes,
* the caller's time of a call of a shape seen before,
* the writer's time to write them (``flush()`` after the ten first calls: the compiles).

Every histogram is then checked against the host path's bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
warnings.filterwarnings("ignore")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import summarylib as sl  # noqa: E402

SHAPES = [(784, 256), (256, 256), (256, 128), (128, 1024), (64, 64, 3, 3), (50000,),
          (300, 100), (512, 64), (3, 3, 64, 128), (40, 40, 40)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    arrays = [jnp.sin(jnp.arange(np.prod(s), dtype=jnp.float32).reshape(s) * 0.37)
              for s in SHAPES]
    for a in arrays:
        a.block_until_ready()
    histogram = sl.histogram  # loads the op's module (lazily imported), outside the timing
    logdir = tempfile.mkdtemp()
    writer = sl.create_file_writer(logdir)
    first: list[float] = []
    warm: list[float] = []
    with writer.as_default():
        for i, a in enumerate(arrays):
            t0 = time.perf_counter()
            histogram(f"p{i}", a, step=0)
            first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        writer.flush()
        flush_s = time.perf_counter() - t0
        for i, a in enumerate(arrays):
            t0 = time.perf_counter()
            histogram(f"p{i}", a, step=1)
            warm.append(time.perf_counter() - t0)
        writer.flush()
    writer.close()
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(logdir, size_guidance={"tensors": 0})
    acc.Reload()
    for i, a in enumerate(arrays):
        want = sl.histogram_pb("t", np.asarray(a)).value[0].tensor.tensor_content
        got = [e.tensor_proto.tensor_content for e in acc.Tensors(f"p{i}")]
        assert got == [want, want], f"p{i} differs from the host histogram"
    figures = {
        "first call of the process ms": round(first[0] * 1e3, 2),
        "first call of a new shape ms (median of 9)": round(statistics.median(first[1:]) * 1e3, 2),
        "first call of a new shape ms (max of 9)": round(max(first[1:]) * 1e3, 2),
        "call of a known shape ms (median of 10)": round(statistics.median(warm) * 1e3, 3),
        "writer: flush after the 10 first calls s": round(flush_s, 2),
    }
    for name, value in figures.items():
        print(f"{name:45s} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
