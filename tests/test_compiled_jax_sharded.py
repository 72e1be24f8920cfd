"""Summary ops on sharded arrays inside compiled JAX code (``jax.jit`` over a mesh of two
CPU devices): each execution writes the values of the whole, unsharded array.

The CPU backend splits into several devices only when ``XLA_FLAGS`` says so before JAX
is imported, so the check runs in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax", reason="needs JAX (pip install jax[cpu])")

_PROGRAM = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
import summarylib as sl
from summarylib.integrations.jax import jit

assert len(jax.devices()) == 2, jax.devices()
mesh = Mesh(np.array(jax.devices()), ("data",))
x = jax.device_put(jnp.arange(16.0).reshape(4, 4), NamedSharding(mesh, PartitionSpec("data")))
assert len(x.sharding.device_set) == 2

def step_fn(x, step):
    sl.scalar("sum", jnp.sum(x), step=step)
    sl.histogram("values", x, step=step, buckets=4)
    return x * 2.0

sharded = NamedSharding(mesh, PartitionSpec("data"))
# Ours with shardings, called inside plain jax.jit: kept as a nested jax.jit (callbacks).
nested = jit(step_fn, in_shardings=(sharded, None), out_shardings=sharded)
routes = [("collected", jit(step_fn)), ("callback", jax.jit(step_fn)),
          ("nested", jax.jit(lambda x, s: nested(x, s) + 0.0))]
for route, compiled in routes:
    y = x
    with sl.create_file_writer(sys.argv[1] + "/" + route).as_default() as writer:
        for i in range(3):
            y = compiled(y, i)
        writer.flush()

# Over two devices a call returns before its callbacks run: flush() waits for them.
@jax.jit
def slow(x):
    y = jax.lax.fori_loop(0, 100, lambda _, v: jnp.tanh(v @ v.T), x)
    sl.scalar("late", jnp.sum(y), step=7)
    return y

big = jax.device_put(jnp.full((512, 512), 0.001), NamedSharding(mesh, PartitionSpec("data")))
with sl.create_file_writer(sys.argv[1] + "/flush").as_default() as writer:
    slow(big).block_until_ready()  # compiled and run: the next call only dispatches
    slow(big)
    writer.flush()
    from summarylib.reader import read_scalars
    seen = read_scalars(sys.argv[1] + "/flush")["."]["late"]
    with open(sys.argv[1] + "/flush.json", "w") as f:
        json.dump({"late_after_flush": len(seen)}, f)
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("sharded")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(where)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return where


@pytest.mark.parametrize("route", ["collected", "callback", "nested"])
def test_sharded_arrays_write_the_whole_arrays_values(logdir: Path, route: str,
                                                      tmp_path: Path) -> None:
    from tensorboard.util import tensor_util

    from summarylib.reader import iter_summary_values, read_scalars

    whole = np.arange(16.0)
    expected_sums = [(i, float(whole.sum() * 2**i)) for i in range(3)]
    assert [(s, v) for s, _, v in read_scalars(logdir / route)["."]["sum"]] == expected_sums
    histograms = [(e.step, tensor_util.make_ndarray(v.tensor))
                  for e, v in iter_summary_values(logdir / route) if v.tag == "values"]
    assert [s for s, _ in histograms] == [0, 1, 2]
    for i, table in histograms:
        # The host path's table for the same numbers: edges and counts of all 16 values.
        with_host = _host_table(whole * 2**i, tmp_path / f"host{i}")
        np.testing.assert_array_equal(table, with_host)


def _host_table(values: np.ndarray, logdir: Path) -> np.ndarray:
    from tensorboard.util import tensor_util

    import summarylib as sl
    from summarylib.reader import iter_summary_values

    with sl.create_file_writer(logdir).as_default():
        sl.histogram("values", values, step=0, buckets=4)
    [table] = [tensor_util.make_ndarray(v.tensor) for _, v in iter_summary_values(logdir)
               if v.tag == "values"]
    return table


def test_flush_waits_for_the_summaries_of_code_dispatched_before_it(logdir: Path) -> None:
    # Over two CPU devices the call returns before the code's callbacks write: flush()
    # waits for them, as for any op called before it.
    import json

    assert json.loads((logdir / "flush.json").read_text()) == {"late_after_flush": 2}
