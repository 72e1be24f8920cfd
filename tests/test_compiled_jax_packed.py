"""The summaries of a call of ``summarylib.integrations.jax.jit``: one small buffer out of
the compiled code, written by the writer thread with exactly the eager calls' bytes.

The compiled function's outputs are observed through ``fn.lower(...).out_info`` (JAX's
own description of what the compiled code returns); the files are compared record by
record with those of the eager calls on the same values, under a fixed clock.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.reader import iter_records

jax = pytest.importorskip("jax", reason="needs JAX (pip install jax[cpu])")
jnp = jax.numpy
from summarylib.integrations.jax import jit  # noqa: E402

WALL_TIME = 1234.5


def _records(logdir: Path) -> list[bytes]:
    (path,) = sorted(logdir.glob("events.out.tfevents.*"))
    return [r.payload for r in iter_records(path)]


def _writer(logdir: Path, **kwargs: Any) -> Any:
    return sl.create_file_writer(str(logdir), clock=lambda: WALL_TIME, **kwargs)


def _summaries(x: Any, step: Any, cond: Any) -> None:
    # Called compiled (traced values) and eagerly (the same values, as device arrays).
    sl.scalar("loss", jnp.mean(x), step=step)
    # An op whose value leaves whole (replayed on its own), between packed ones: the
    # events keep the order of the calls.
    sl.image("img", jnp.reshape(jnp.tanh(x[:48]) * 0.5 + 0.5, (1, 4, 4, 3)), step=step)
    sl.scalar("count", jnp.sum(x > 0), step=step)
    with sl.record_if(cond):
        sl.histogram("x", x, step=step)
        sl.scalar("max", jnp.max(x), step=step)
    with sl.name_scope("train"):
        sl.scalar("min", jnp.min(x), step=step)


def test_a_call_hands_its_summaries_out_as_one_small_buffer(tmp_path: Path) -> None:
    def step_fn(x: Any, i: Any) -> Any:
        _summaries(x, i, i % 3 == 0)
        return x * 2.0

    fn = jit(step_fn)
    x = jnp.arange(48, dtype=jnp.float32)
    with sl.create_file_writer(str(tmp_path)).as_default():
        lowered = fn.lower(x, 0)
    outputs = jax.tree_util.tree_leaves(lowered.out_info)
    # The function's own output, one uint8 buffer for five ops' values, their steps and
    # the condition (one copy to the host per call), then the image and its step, which
    # leave as they are.
    assert len(outputs) == 4
    assert outputs[0].shape == x.shape
    assert outputs[1].dtype == jnp.uint8 and outputs[1].ndim == 1
    assert outputs[1].shape[0] < 4 * 64  # four scalars, a bucket table, steps, a bool
    assert outputs[2].shape == (1, 4, 4, 3)


@pytest.mark.parametrize("sync", [False, True])
def test_bytes_equal_the_eager_calls_and_a_false_device_condition_writes_nothing(
    tmp_path: Path, sync: bool
) -> None:
    traces = []

    def step_fn(x: Any, i: Any) -> Any:
        traces.append(1)
        _summaries(x, i, i % 3 == 0)
        return x * -1.5 + 0.25

    fn = jit(step_fn)
    inputs = []
    x = jnp.linspace(-2.0, 3.0, 50, dtype=jnp.float32)
    with _writer(tmp_path / "compiled", sync_device_values=sync).as_default():
        for i in range(7):
            inputs.append(x)
            x = fn(x, i)
    with _writer(tmp_path / "eager", sync_device_values=sync).as_default():
        for i, xi in enumerate(inputs):
            # The compiled code bucketed the histogram; eagerly it is the host path's,
            # which is byte for byte the same (tests/test_compiled_histogram.py).
            _summaries(xi, i, i % 3 == 0)
    assert len(traces) == 1
    compiled, eager = _records(tmp_path / "compiled"), _records(tmp_path / "eager")
    assert compiled == eager
    # 4 ops every call, 2 more in the 3 calls whose condition held, after the version.
    assert len(compiled) == 1 + 7 * 4 + 3 * 2


def test_first_value_of_a_tag_carries_its_metadata_before_eager_calls(tmp_path: Path) -> None:
    fn = jit(lambda x, i: (sl.scalar("loss", jnp.mean(x), step=i), x + 1.0)[1])
    x = jnp.ones(3)
    with _writer(tmp_path).as_default():
        for i in range(3):
            x = fn(x, i)
            sl.scalar("loss", 7.0, step=100 + i)  # queued after the compiled call's
    from summarylib.reader import iter_summary_values

    events = [(e.step, v.metadata.plugin_data.plugin_name)
              for e, v in iter_summary_values(tmp_path)]
    # The eager call may carry the metadata too (it decides at its call, before the
    # writer thread made the compiled call's event); the first event always does.
    assert events[0] == (0, "scalars")
    assert [s for s, _ in events] == [0, 100, 1, 101, 2, 102]
    assert all(name == "" for _, name in events[2:])


class _FailingOutput(sl.MemoryOutput):
    """Its writes fail while ``failing`` is set (nothing of a failed write is kept)."""

    failing = False

    def write(self, data: bytes) -> None:
        if self.failing:
            raise OSError(errno.EIO, "injected failure")
        super().write(data)


def test_after_a_lost_write_the_next_call_carries_the_metadata_again(tmp_path: Path) -> None:
    # A call decides at the call which of its events carries a tag's metadata. A failed
    # write starts the file's record of tags over, so the calls after it carry the
    # metadata again (TensorBoard lists a tag from its first value in a file).
    from summarylib.reader import iter_summary_values

    out = _FailingOutput(name="/fake/events.out.tfevents.x")
    fn = jit(lambda x, i: (sl.scalar("loss", jnp.mean(x), step=i),
                           sl.scalar("acc", jnp.max(x), step=i), x + 1.0)[2])
    w = sl.create_writer(out, max_queue=10**6, clock=lambda: WALL_TIME)
    x = jnp.ones(3)
    with w.as_default():
        x = fn(x, 0)
        w.flush()
        out.failing = True
        x = fn(x, 1)
        with pytest.raises(sl.WriteFailedError, match="injected"):
            w.flush()
        out.failing = False
        for i in (2, 3):
            x = fn(x, i)
    w.close()
    (tmp_path / Path(str(out.name)).name).write_bytes(out.getvalue())
    written = [(e.step, v.tag, v.metadata.plugin_data.plugin_name)
               for e, v in iter_summary_values(tmp_path)]
    assert written == [(0, "loss", "scalars"), (0, "acc", "scalars"),
                       (2, "loss", "scalars"), (2, "acc", "scalars"),
                       (3, "loss", ""), (3, "acc", "")]


def test_default_step_host_arguments_and_a_missing_step(tmp_path: Path) -> None:
    # step=None: the default step at the call; a value passed as a Python number is
    # written as given; with no step at all the call raises, naming the op.
    fn = jit(lambda x, lr: (sl.scalar("lr", lr), sl.scalar("x", jnp.sum(x)), x)[2])
    x = jnp.ones(2)
    with _writer(tmp_path).as_default():
        with pytest.raises(ValueError, match=r"scalar: no step"):
            fn(x, 0.5)
        for i in range(3):
            sl.set_step(10 + i)
            fn(x, 0.1 * i)
    from summarylib.reader import read_scalars

    runs = read_scalars(tmp_path)["."]
    assert [(s, v) for s, _, v in runs["lr"]] == [
        (10 + i, float(np.float32(0.1 * i))) for i in range(3)]
    assert [(s, v) for s, _, v in runs["x"]] == [(10 + i, 2.0) for i in range(3)]


def _bits_body(a: Any, b: Any, c: Any, i: Any) -> None:
    sl.scalar("a", a, step=i)
    with sl.record_if(i >= 0):
        sl.scalar("b", b, step=i)
    sl.scalar("c", c, step=i)


_BIT_FNS: dict[str, Any] = {}
_DTYPES = ["float32", "float16", "bfloat16", "int8", "int32", "uint8", "bool"]


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_packed_values_arrive_bit_for_bit(tmp_path_factory: Any, data: Any) -> None:
    # Values of every packed dtype (NaN, ±inf, subnormals, -0.0 among floats) leave the
    # compiled code as bytes: each scalar is written as the eager call writes it.
    dtype = data.draw(st.sampled_from(_DTYPES))
    # NaN with a payload, ±inf, subnormals, -0.0 (in the low bits for narrower floats).
    special = [0x7FC00001, 0x7F800000, 0xFF800000, 0x00000001, 0x80000000, 0x80000001,
               0x7E01, 0x7C00, 0xFC00, 0x8001, 0x0080, 0x7FC1]
    bit = st.one_of(st.sampled_from(special), st.integers(0, 2**32 - 1))
    bits = data.draw(st.lists(bit, min_size=3, max_size=3))
    np_dtype = jnp.dtype(dtype)
    if dtype == "bool":
        values = [bool(b & 1) for b in bits]
        arrays = [jnp.asarray(v) for v in values]
    else:
        raw = np.array(bits, np.uint32).astype(f"u{np_dtype.itemsize}")
        arrays = [jnp.asarray(np.frombuffer(raw[k:k + 1].tobytes(), np_dtype)[0])
                  for k in range(3)]
    logdir = tmp_path_factory.mktemp("bits")
    fn = _BIT_FNS.setdefault(dtype, jit(_bits_body))  # one compilation per dtype
    with _writer(logdir / "compiled").as_default():
        for i in range(2):
            fn(*arrays, jnp.int32(i))
    with _writer(logdir / "eager").as_default():
        for i in range(2):
            _bits_body(*arrays, i)
    assert _records(logdir / "compiled") == _records(logdir / "eager")
