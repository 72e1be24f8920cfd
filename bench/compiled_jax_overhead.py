"""The host cost per call of summary ops inside a jitted JAX function, on a tiny step.

    python bench/compiled_jax_overhead.py [--calls 2000] [--rounds 5]

A step whose device work is negligible (tanh of 64 values) logs two scalars computed in
it, at the step passed in as a Python int. Modes, per call (median of rounds, each
round alternating the modes):

* ``plain``: ``jax.jit``, no logging (the dispatch alone);
* ``metrics``: ``jax.jit`` returns the two values and the loop hands the arrays to
  ``sl.scalar`` (the hand-written pattern: the best a user can do today);
* ``ours``: the ops called inside the function, compiled with
  ``summarylib.integrations.jax.jit`` (values leave as outputs and are replayed).

What ``ours`` costs beyond ``metrics`` is the replay of the recorded calls.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax
import jax.numpy as jnp

import summarylib as sl
from summarylib.integrations.jax import jit


def body(x: Any) -> tuple[Any, Any, Any]:
    y = jnp.tanh(x) * 1.01
    return y, jnp.mean(y), jnp.max(y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    plain = jax.jit(lambda x, s: body(x)[0])
    returning = jax.jit(lambda x, s: body(x))

    @jit
    def ours(x: Any, s: Any) -> Any:
        y, a, b = body(x)
        sl.scalar("a", a, step=s)
        sl.scalar("b", b, step=s)
        return y

    def metrics(x: Any, s: int) -> Any:
        y, a, b = returning(x, s)
        sl.scalar("a", a, step=s)
        sl.scalar("b", b, step=s)
        return y

    modes = {"plain": plain, "metrics": metrics, "ours": ours}
    x0 = jnp.ones((64,))
    per_call: dict[str, list[float]] = {m: [] for m in modes}
    with sl.create_file_writer(tempfile.mkdtemp()) as w, w.as_default():
        for fn in modes.values():
            jax.block_until_ready(fn(x0, 0))
        for _ in range(args.rounds):
            for m, fn in modes.items():
                y = x0
                t = time.perf_counter()
                for i in range(args.calls):
                    y = fn(y, i)
                jax.block_until_ready(y)
                per_call[m].append((time.perf_counter() - t) / args.calls * 1e6)
    print(f"jax {jax.__version__}, {args.rounds} rounds of {args.calls} calls, two scalars a call")
    print(f"{'mode':<8} {'µs/call':>8}")
    for m, v in per_call.items():
        print(f"{m:<8} {statistics.median(v):>8.1f}")


if __name__ == "__main__":
    main()
