"""The value layer (``summarylib.encoding._values``, docs/architecture.md "Values"): host
data, a pending device array and a traced array behind one interface.

JAX's CPU backend stands in for an accelerator: its arrays are device values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from summarylib.encoding._bucketing import buckets_from_table, histogram_buckets
from summarylib.encoding._device_reductions import histogram_table, pr_bucket_table
from summarylib.encoding._pending import JAX_ARRAY_BYTES
from summarylib.encoding._values import value_of

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _host(data: Any) -> tuple[np.ndarray, bool]:
    arr = np.asarray(data)
    return arr.reshape(-1), arr is not data


def _checks(seen: list[tuple[tuple[int, ...], Any]]) -> Any:
    def check(shape: tuple[int, ...], dtype: Any) -> None:
        seen.append((shape, dtype))

    return check


_arrays = hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=6),
                     elements=st.floats(-1e6, 1e6, width=32))


@settings(max_examples=30, deadline=None)
@given(_arrays)
def test_every_kind_reads_what_the_host_reader_gives(arr: np.ndarray) -> None:
    # Host data is converted at the call, a device array only when read; both read back
    # the host reader's form of the value as it was when kept.
    seen: list[Any] = []
    host = value_of(arr, True, _host, _checks(seen))
    device = value_of(jnp.asarray(arr), True, _host, _checks(seen))
    assert host.at_hand and not device.at_hand
    assert seen == [(arr.shape, device.dtype)]  # the check runs on the device value only
    assert host.shape == (arr.size,) and device.shape == arr.shape
    assert host.size == device.size == arr.size
    kept_host, kept_device = host.keep(), device.keep()
    expected = arr.reshape(-1).copy()
    arr[...] = 7  # the caller reuses its buffer: the kept host value is a private copy
    np.testing.assert_array_equal(kept_host.read(), expected)
    np.testing.assert_array_equal(kept_device.read(), expected)
    # The bound counts at least the bytes read, and the arrays and objects held until then.
    assert kept_device.nbytes >= expected.nbytes + JAX_ARRAY_BYTES


@settings(max_examples=8, deadline=None)
@given(hnp.arrays(np.float32, st.sampled_from([1, 300]),
                  elements=st.floats(-1e3, 1e3, width=32)),
       st.sampled_from([1, 20]))  # few shapes: each compiles the device kernels once
def test_a_device_reduction_equals_the_host_one(arr: np.ndarray, k: int) -> None:
    device = value_of(jnp.asarray(arr), True, _host, _checks([]))
    table = device.reduce(lambda d: histogram_table(d, k),
                          lambda t: buckets_from_table(t, k))
    assert table is not None
    np.testing.assert_array_equal(table.read(), histogram_buckets(arr.astype(np.float64), k))
    # Host data is reduced on the host: the layer offers no device reduction for it.
    assert value_of(arr, True, _host, _checks([])).reduce(
        lambda d: histogram_table(d, k), lambda t: t) is None


def test_a_synchronous_writer_reads_a_device_array_at_the_call() -> None:
    value = value_of(jnp.arange(4.0), False, _host, _checks([]))
    assert value.at_hand
    np.testing.assert_array_equal(value.read(), [0, 1, 2, 3])


def test_map_runs_on_the_device_before_the_copy() -> None:
    device = value_of(jnp.arange(12.0).reshape(3, 4), True, _host, _checks([]))
    sliced = device.map(lambda d: d[:2] * 2).keep()
    np.testing.assert_array_equal(sliced.read(), np.arange(8.0) * 2)
    host = value_of(np.arange(3.0), True, _host, _checks([]))
    assert host.map(lambda d: d * 2) is host  # host data: the host reader did the work


def test_a_traced_value_has_a_shape_and_a_dtype_and_no_numbers() -> None:
    seen: list[Any] = []
    out: list[Any] = []

    @jax.jit
    def f(x: Any) -> Any:
        value = value_of(x, True, _host, _checks(seen))
        out.append((value.shape, value.dtype, value.at_hand))
        with pytest.raises(TypeError, match="no numbers until the compiled code runs"):
            value.read()
        with pytest.raises(TypeError, match="no numbers"):
            value.keep()
        return x

    f(jnp.zeros((2, 5), jnp.float32))
    assert out == [((2, 5), jnp.float32, False)]
    assert seen == [((2, 5), jnp.float32)]


def test_a_stand_in_has_the_shape_and_host_dtype_and_reads_no_numbers() -> None:
    # Several arrays of one op are checked together on the caller's thread: host data as
    # it is, a device or traced array as a zero-memory array of its shape and the dtype
    # its numbers will be read in (bfloat16 read as float32).
    host_arr = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert value_of(host_arr, True, lambda d: (d, False), _checks([])).stand_in() is host_arr
    device = value_of(jnp.ones((4, 5), jnp.bfloat16), True, _host, _checks([]))
    look = device.stand_in()
    assert look.shape == (4, 5) and look.dtype == np.float32
    assert not look.flags.writeable and look.strides == (0, 0) and not look.any()
    seen: list[Any] = []

    @jax.jit
    def f(x: Any) -> Any:
        stand_in = value_of(x, True, _host, _checks([])).stand_in()
        seen.append((stand_in.shape, stand_in.dtype))
        return x

    f(jnp.zeros((3,), jnp.int8))
    assert seen == [((3,), np.int8)]


@settings(max_examples=6, deadline=None)
@given(hnp.arrays(np.float32, st.just(40), elements=st.floats(0, 1, width=32)),
       hnp.arrays(np.bool_, st.just(40)))
def test_a_reduction_of_two_device_values_equals_the_host_one(
        predictions: np.ndarray, labels: np.ndarray) -> None:
    # A PR curve's counts, made on the device from its labels and predictions together:
    # only the per-bucket table crosses, and it gives the host's curve.
    from summarylib.ops.pr_curve import pr_data, pr_from_buckets

    t = 7
    lab = value_of(jnp.asarray(labels), True, _host, _checks([]))
    pred = value_of(jnp.asarray(predictions), True, _host, _checks([]))
    table = lab.reduce(lambda a, b: pr_bucket_table(a, b, t),
                       lambda c: pr_from_buckets(c[:-1].astype(np.int64).reshape(t, 2)), pred)
    assert table is not None
    np.testing.assert_array_equal(table.read(), pr_data(labels, predictions, None, t))
    # With host data among them there is no device reduction: the op counts on the host.
    host_pred = value_of(predictions, True, _host, _checks([]))
    assert lab.reduce(lambda a, b: pr_bucket_table(a, b, t), lambda c: c, host_pred) is None


def test_reading_a_traced_value_gives_the_ops_own_refusal() -> None:
    # An op that is not recorded in compiled code (or a core called directly) says what
    # it said before the value layer: its host reader's error, naming the argument.
    def refusing(data: Any) -> tuple[np.ndarray, bool]:
        raise TypeError(f"op: cannot convert 'frames' ({type(data).__name__})")

    messages: list[str] = []

    @jax.jit
    def f(x: Any) -> Any:
        value = value_of(x, True, refusing, _checks([]))
        for attempt in (value.keep, value.read):
            with pytest.raises(TypeError) as e:
                attempt()
            messages.append(str(e.value))
        return x

    f(jnp.zeros((2,), jnp.float32))
    assert len(messages) == 2
    for message in messages:
        assert message.startswith("op: cannot convert 'frames' (")
        assert "no numbers until the compiled code runs" in message
