"""Summaries from inside a jitted JAX training step, beside the ways users log today.

    python bench/compiled_jax.py            # ~2 min on 2 cores
    python bench/compiled_jax.py --quick
    python bench/compiled_jax.py --model large   # a step ~5x longer (~7 min)

A jitted MLP training step (JAX's CPU backend, which dispatches asynchronously like an
accelerator) that logs loss and accuracy every step and a histogram of every parameter
every 100 steps. Modes:

* ``none``: no logging (the reference);
* ``collected``: the ops called inside the step, compiled with
  ``summarylib.integrations.jax.jit`` (values leave as outputs; no host round trip), the
  histograms' cadence a static argument (``record_if(hist)``: two compiled variants);
* ``gated``: the same, the cadence a condition on the device (``record_if(step % 100 ==
  0)``: one variant; the histograms' arrays are handed over every step and read on the
  writer thread only when the condition holds);
* ``interval``: as ``collected``, but loss and accuracy are written every 100 steps as
  their mean over the 100 steps (``scalar(..., reduce="mean")`` under ``record_if(step %
  100 == 0)``: the sums are kept on the device);
* ``callback``: the same ops inside plain ``jax.jit`` (an ordered host callback per op);
* ``float``: the step returns loss and accuracy, the loop logs ``float(loss)`` (a host
  sync every step: what every peer's ``add_scalar`` does);
* ``metrics``: the step returns a metrics dict and the loop hands the arrays to
  ``sl.scalar`` (Levanter's pattern done by hand: the best a user can do today).

Short blocks of every mode alternate over many rounds (each round starting with the next
mode); each mode's rate is divided by the ``none`` block of the same round, and the median
of those ratios is printed (a shared 2-core machine's load drifts faster than separate long
runs could tell apart).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax
import jax.numpy as jnp
import numpy as np

import summarylib as sl
from summarylib.integrations.jax import jit

HIST_EVERY = 100
#: The MLP's layer sizes and batch, by ``--model``.
MODELS = {"small": ((64, 256, 256, 10), 128), "large": ((128, 512, 512, 10), 256)}


def init(key: Any, sizes: tuple[int, ...]) -> list[tuple[Any, Any]]:
    params = []
    for a, b in itertools.pairwise(sizes):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (a, b)) / np.sqrt(a), jnp.zeros(b)))
    return params


def forward(params: Any, x: Any) -> Any:
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_acc(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
    logits = forward(params, x)
    loss = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))
    return loss, jnp.mean(jnp.argmax(logits, -1) == y)


def sgd(params: Any, x: Any, y: Any) -> tuple[Any, Any, Any]:
    (loss, acc), grads = jax.value_and_grad(loss_acc, has_aux=True)(params, x, y)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
    return params, loss, acc


def logged_step(params: Any, x: Any, y: Any, step: Any, hist: Any = None) -> Any:
    # hist: a static bool (two compiled variants) or None (a condition on the device).
    params, loss, acc = sgd(params, x, y)
    sl.scalar("loss", loss, step=step)
    sl.scalar("accuracy", acc, step=step)
    with sl.record_if(step % HIST_EVERY == 0 if hist is None else hist):
        for i, (w, b) in enumerate(params):
            sl.histogram(f"layer{i}/w", w, step=step)
            sl.histogram(f"layer{i}/b", b, step=step)
    return params


def interval_step(params: Any, x: Any, y: Any, step: Any, hist: bool = False) -> Any:
    # Loss and accuracy: their means over the steps between two writes, kept on the device.
    params, loss, acc = sgd(params, x, y)
    with sl.record_if(step % HIST_EVERY == 0):
        sl.scalar("loss", loss, step=step, reduce="mean")
        sl.scalar("accuracy", acc, step=step, reduce="mean")
    with sl.record_if(hist):
        for i, (w, b) in enumerate(params):
            sl.histogram(f"layer{i}/w", w, step=step)
            sl.histogram(f"layer{i}/b", b, step=step)
    return params


def make_modes() -> dict[str, Any]:
    plain_step = jax.jit(lambda p, x, y, s: sgd(p, x, y)[0])
    returning = jax.jit(sgd)
    gated = jit(logged_step)
    static = jit(logged_step, static_argnames="hist")
    callback = jax.jit(logged_step)
    reduced = jit(interval_step, static_argnames="hist")

    def interval(p: Any, x: Any, y: Any, i: int) -> Any:
        return reduced(p, x, y, i, hist=i % HIST_EVERY == 0)

    def collected(p: Any, x: Any, y: Any, i: int) -> Any:
        return static(p, x, y, i, hist=i % HIST_EVERY == 0)

    def none(p: Any, x: Any, y: Any, i: int) -> Any:
        return plain_step(p, x, y, i)

    def with_float(p: Any, x: Any, y: Any, i: int) -> Any:
        p, loss, acc = returning(p, x, y)
        sl.scalar("loss", float(loss), step=i)
        sl.scalar("accuracy", float(acc), step=i)
        if i % HIST_EVERY == 0:
            for j, (w, b) in enumerate(p):
                sl.histogram(f"layer{j}/w", np.asarray(w), step=i)
                sl.histogram(f"layer{j}/b", np.asarray(b), step=i)
        return p

    def metrics(p: Any, x: Any, y: Any, i: int) -> Any:
        p, loss, acc = returning(p, x, y)
        sl.scalar("loss", loss, step=i)
        sl.scalar("accuracy", acc, step=i)
        if i % HIST_EVERY == 0:
            for j, (w, b) in enumerate(p):
                sl.histogram(f"layer{j}/w", w, step=i)
                sl.histogram(f"layer{j}/b", b, step=i)
        return p

    return {"none": none, "collected": collected, "gated": gated, "interval": interval,
            "callback": callback,
            "float": with_float, "metrics": metrics}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--model", choices=list(MODELS), default="small",
                    help="the MLP's size: 'small' (a step of about a millisecond here, "
                         "where logging's fixed cost per step shows most) or 'large'")
    args = ap.parse_args()
    rounds, block = (6, 100) if args.quick else (20, 200)
    sizes, batch = MODELS[args.model]
    if args.model != "small":
        block = HIST_EVERY  # every block holds one histogram step, as the small's two
    key = jax.random.PRNGKey(0)
    params0 = init(key, sizes)
    x = jax.random.normal(key, (batch, sizes[0]))
    y = jax.random.randint(key, (batch,), 0, sizes[-1])
    modes = make_modes()
    tmp = Path(tempfile.mkdtemp())
    ratios: dict[str, list[float]] = {m: [] for m in modes}
    rates: dict[str, list[float]] = {m: [] for m in modes}
    step = 0
    try:
        writers = {m: sl.create_file_writer(str(tmp / m)) for m in modes}
        for m, fn in modes.items():  # compile everything first
            with writers[m].as_default():
                jax.block_until_ready(fn(params0, x, y, 0))
        names = list(modes)
        for r in range(rounds):
            got = {}
            # Each round starts with another mode: a block's place in the round changes
            # its rate by a few percent (the first block of a round ran ~4 % slower than
            # the same block later), which would otherwise favour or penalise one mode.
            for m in names[r % len(names):] + names[:r % len(names)]:
                fn = modes[m]
                p = params0
                with writers[m].as_default():
                    t0 = time.perf_counter()
                    for _ in range(block):
                        p = fn(p, x, y, step)
                        step += 1
                    jax.block_until_ready(p)
                    got[m] = block / (time.perf_counter() - t0)
            for m in modes:
                rates[m].append(got[m])
                ratios[m].append(got[m] / got["none"])
        for w in writers.values():
            w.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"jax {jax.__version__}, model {args.model} {sizes} batch {batch}, {rounds} rounds "
          f"of {block} steps per mode, histograms every {HIST_EVERY} steps")
    print(f"{'mode':<10} {'steps/s':>10} {'÷ none (median of rounds)':>28}")
    for m in modes:
        print(f"{m:<10} {statistics.median(rates[m]):>10.0f} "
              f"{statistics.median(ratios[m]):>28.3f}")


if __name__ == "__main__":
    main()
