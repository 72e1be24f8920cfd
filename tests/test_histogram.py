"""histogram / histogram_pb: TF2's bucketing exactly, TensorBoard's encoder, edge cases, server.

Two independent references: ``ref_tf2`` below (TF2's ``_buckets`` spelled out
one Python float at a time) and TensorBoard's own numpy ``histogram_pb``,
which runs the same algorithm (its ``np.linspace`` computes the same edges
``lo + width * i`` and ends exactly at the max). Both are only defined where
``max - min`` and ``(max - min) / k`` are normal finite floats; outside that
domain summarylib's documented choices are tested on their own.
"""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import math
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding._bucketing import histogram_buckets
from summarylib.encoding._events import summary_event
from summarylib.encoding._plugins import HISTOGRAMS
from summarylib.ops import histogram as hist_mod
from tests.helpers import only_file, record_payloads, tb_events
from tests.tbserver import TensorBoardServer

DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint64", "bool"]


# ---------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------
def ref_tf2(data: Any, k: int = 30) -> np.ndarray:
    """TF2's ``_buckets`` one float64 at a time, on the finite values (our NaN policy)."""
    xs = [float(v) for v in np.asarray(data).reshape(-1).tolist()]
    xs = [x for x in xs if math.isfinite(x)]
    out = np.zeros((k, 3))
    if not xs:
        return out
    lo, hi = min(xs), max(xs)
    if hi - lo == 0:
        out[:, 0] = out[:, 1] = hi
        out[-1, 2] = len(xs)
        return out
    width = (hi - lo) / k
    for x in xs:
        out[min(math.floor((x - lo) / width), k - 1), 2] += 1
    edges = [lo + width * i for i in range(k)] + [hi]
    out[:, 0] = edges[:-1]
    out[:, 1] = edges[1:]
    return out


def in_tf_domain(data: np.ndarray, k: int) -> bool:
    """Where TF2's algorithm is well defined: finite range, normal nonzero width."""
    flat = np.asarray(data, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        return True
    with np.errstate(over="ignore"):
        range_ = float(flat.max()) - float(flat.min())
    return range_ == 0 or (math.isfinite(range_) and range_ / k >= np.finfo(np.float64).tiny)


def tb_histogram_pb(tag: str, data: Any, buckets: int | None, description: str | None) -> Any:
    from tensorboard.plugins.histogram import summary_v2

    # Its np.linspace computes width * k before replacing the last edge by
    # the max, which may overflow (harmlessly) near float64's max.
    with np.errstate(over="ignore"):
        return summary_v2.histogram_pb(tag, data, buckets=buckets, description=description)


def tb_buckets(data: Any, buckets: int | None) -> np.ndarray:
    """TensorBoard's histogram_pb buckets for ``data``."""
    return decoded(tb_histogram_pb("h", data, buckets, None).value[0])


def tb_metadata(description: str | None) -> bytes:
    from tensorboard.plugins.histogram import metadata

    return metadata.create_summary_metadata(  # type: ignore[no-any-return]
        display_name=None, description=description
    ).SerializeToString()


def decoded(value: Any) -> np.ndarray:
    """The ``[k, 3]`` array of a Summary.Value, checked to be TF2's layout."""
    from tensorboard.util import tensor_util

    t = value.tensor
    assert t.dtype == 2  # DT_DOUBLE
    k = t.tensor_shape.dim[0].size
    assert [d.size for d in t.tensor_shape.dim] == [k, 3]
    assert len(t.tensor_content) == 24 * k  # tensor_content, as TF2 writes it
    return tensor_util.make_ndarray(t)  # type: ignore[no-any-return]


def as_tb_value(summary: Any) -> Any:
    from tensorboard.compat.proto import summary_pb2

    (value,) = summary_pb2.Summary.FromString(summary.SerializeToString()).value
    return value


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def file_values(logdir: Path) -> list[tuple[int, Any]]:
    """(step, Summary.Value) of every summary event, parsed raw with TensorBoard's protos."""
    from tensorboard.compat.proto import event_pb2

    out: list[tuple[int, Any]] = []
    for p in payloads(only_file(logdir).read_bytes())[1:]:
        ev = event_pb2.Event.FromString(p)
        out.extend((ev.step, v) for v in ev.summary.value)
    return out


def memory_writer(
    clock: Callable[[], float] | None = None,
) -> tuple[sl.SummaryWriter, sl.MemoryOutput]:
    out = sl.MemoryOutput()
    return sl.create_writer(out, clock=clock), out


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------
def finite_elements(dtype: str) -> st.SearchStrategy[Any]:
    if dtype.startswith("float"):
        width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
        return st.one_of(
            st.floats(-10, 10, width=width),  # type: ignore[arg-type]
            st.floats(allow_nan=False, allow_infinity=False, width=width),  # type: ignore[arg-type]
        )
    return hnp.from_dtype(np.dtype(dtype))


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=7))
    return draw(hnp.arrays(np.dtype(dtype), shape, elements=finite_elements(dtype)))


# ---------------------------------------------------------------------------
# Against TensorBoard's encoder and the reference
# ---------------------------------------------------------------------------
@settings(max_examples=150)
@given(
    data=arrays(),
    buckets=st.one_of(st.none(), st.integers(1, 40)),
    description=st.one_of(st.none(), st.text(max_size=8)),
)
def test_histogram_pb_matches_tensorboard_and_tf2_reference(
    data: np.ndarray, buckets: int | None, description: str | None
) -> None:
    k = 30 if buckets is None else buckets
    assume(in_tf_domain(data, k))
    ours = as_tb_value(sl.histogram_pb("h", data, buckets, description))
    (theirs,) = tb_histogram_pb("h", data, buckets, description).value
    assert ours.tag == "h"
    assert ours.metadata.SerializeToString() == theirs.metadata.SerializeToString()
    assert ours.metadata.SerializeToString() == tb_metadata(description)
    got = decoded(ours)
    # Exact: same float64 operations in the same order (1e-6 would be allowed).
    np.testing.assert_array_equal(got, decoded(theirs))
    np.testing.assert_array_equal(got, ref_tf2(data, k))


def test_float32_edges_are_computed_in_float64_as_tf2_does() -> None:
    # The anchors' floor (np.histogram on float32) differs in the last bits;
    # TF2 casts to float64 first.
    x = np.random.default_rng(5).standard_normal(1000).astype(np.float32)
    got = decoded(as_tb_value(sl.histogram_pb("h", x)))
    np.testing.assert_array_equal(got, ref_tf2(x))
    lo, hi = float(x.min()), float(x.max())
    assert got[0, 0] == lo and got[-1, 1] == hi
    np.testing.assert_array_equal(got[1:, 0], got[:-1, 1])


@settings(max_examples=40)
@given(data=arrays(), step=st.integers(0, 2**63 - 1), buckets=st.integers(1, 12))
def test_op_bytes_equal_histogram_pb_serialization(
    data: np.ndarray, step: int, buckets: int
) -> None:
    # The hand-encoded (deferred) events equal the protobuf serialization of
    # histogram_pb, metadata on the first event of the tag only.
    fixed = 1712345678.5
    w, out = memory_writer(clock=lambda: fixed)
    with w.as_default(step=step):
        assert sl.histogram("a/b", data, buckets=buckets)
        assert sl.histogram("a/b", data, buckets=buckets)
    w.close()
    first, second = payloads(out.getvalue())[1:]
    pb = sl.histogram_pb("a/b", data, buckets)
    assert first == summary_event(fixed, step, pb.SerializeToString())
    pb.value[0].ClearField("metadata")
    assert second == summary_event(fixed, step, pb.SerializeToString())


def test_metadata_bytes_equal_protobuf_and_tensorboard() -> None:
    for desc in (None, "", "a **histogram** ✓"):
        ours = HISTOGRAMS.metadata_bytes(desc, "histogram")
        assert ours == hist_mod.create_summary_metadata(desc).SerializeToString()
        assert ours == tb_metadata(desc)
    assert HISTOGRAMS.plugin_data == b"\x0a\x0c\x0a\x0ahistograms"  # empty content


def test_summarylib_protobuf_metadata_content_is_empty_plugin_data() -> None:
    from summarylib.proto import plugin_data_pb2

    md = hist_mod.create_summary_metadata()
    assert md.plugin_data.content == b""
    assert plugin_data_pb2.HistogramPluginData.FromString(md.plugin_data.content).version == 0
    assert md.data_class == 0 and not md.display_name


# ---------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------
def buckets_of(data: Any, buckets: int | None = None) -> np.ndarray:
    return decoded(as_tb_value(sl.histogram_pb("h", data, buckets)))


@pytest.mark.parametrize("data", [[], np.zeros((0,)), np.zeros((3, 0), np.float32), ()])
def test_empty_data_gives_k_zero_rows(data: Any) -> None:
    np.testing.assert_array_equal(buckets_of(data), np.zeros((30, 3)))
    np.testing.assert_array_equal(buckets_of(data, 4), np.zeros((4, 3)))
    np.testing.assert_array_equal(buckets_of(data, 4), tb_buckets(data, 4))


@pytest.mark.parametrize(
    ("data", "value", "n"),
    [
        (5.0, 5.0, 1),
        ([-3], -3.0, 1),
        (np.full(1000, -2.5, np.float32), -2.5, 1000),
        (np.full((4, 5), 7, np.int64), 7.0, 20),
        (np.ones(3, bool), 1.0, 3),
    ],
)
def test_single_value_and_constant_data(data: Any, value: float, n: int) -> None:
    for k in (None, 1, 5):
        got = buckets_of(data, k)
        rows = 30 if k is None else k
        expected = np.zeros((rows, 3))
        expected[:, :2] = value
        expected[-1, 2] = n
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, tb_buckets(data, k))


def test_one_bucket_holds_everything_between_min_and_max() -> None:
    got = buckets_of([3.0, -1.0, 2.0, 2.5], 1)
    np.testing.assert_array_equal(got, [[-1.0, 3.0, 4.0]])


def test_max_lands_in_the_last_closed_bucket() -> None:
    got = buckets_of([0.0, 1.0, 2.0, 3.0], 3)
    np.testing.assert_array_equal(got, [[0, 1, 1], [1, 2, 1], [2, 3, 2]])


def test_huge_float32_values_match_tensorflow() -> None:
    x = np.array([1e38, -1e38, 0, 5, 3e38, -3.4e38], np.float32)
    got = buckets_of(x, 7)
    np.testing.assert_array_equal(got, tb_buckets(x, 7))
    np.testing.assert_array_equal(got, ref_tf2(x, 7))
    assert np.isfinite(got).all() and got[:, 2].sum() == 6


def test_range_beyond_float64_max_still_gives_finite_buckets() -> None:
    # max - min overflows: TF2 writes inf edges; we bucket halved values.
    big = np.finfo(np.float64).max
    x = np.array([-big, -big / 2, 0.0, 1.0, big / 2, big, big])
    got = buckets_of(x, 4)
    assert np.isfinite(got).all()
    assert got[0, 0] == -big and got[-1, 1] == big
    np.testing.assert_array_equal(got[1:, 0], got[:-1, 1])
    np.testing.assert_allclose(got[:, 0], [-big, -big / 2, 0, big / 2], rtol=1e-15)
    np.testing.assert_array_equal(got[:, 2], [1, 1, 2, 3])
    # The same through the chunked path, with huge counts in every chunk.
    many = np.tile(x, 30_000)
    np.testing.assert_array_equal(buckets_of(many, 4)[:, 2], [30_000, 30_000, 60_000, 90_000])


def test_range_of_a_few_subnormals_is_bucketed_not_lost() -> None:
    # (max - min) / k underflows to 0: TF2 loses every count; we scale by 2**1000.
    tiny = 5e-324
    x = np.array([0.0, tiny, 2 * tiny, 2 * tiny])
    got = buckets_of(x, 4)
    assert got[:, 2].sum() == 4
    assert got[0, 0] == 0.0 and got[-1, 1] == 2 * tiny
    assert (np.diff(got[:, :2].reshape(-1)) >= 0).all()
    assert got[0, 2] == 1 and got[-1, 2] == 2


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_and_inf_are_left_out(dtype: str) -> None:
    finite = np.array([1.0, 2.0, 2.5, 4.0], dtype)
    x = np.array([np.nan, 1.0, np.inf, 2.0, -np.inf, 2.5, np.nan, 4.0], dtype)
    expected = tb_buckets(finite, 6)
    np.testing.assert_array_equal(buckets_of(x, 6), expected)
    np.testing.assert_array_equal(buckets_of(x, 6), ref_tf2(x, 6))
    assert buckets_of(x, 6)[:, 2].sum() == 4
    # Only one finite value left: the single-value case.
    np.testing.assert_array_equal(
        buckets_of(np.array([np.nan, 3.0, np.inf], dtype), 2), [[3, 3, 0], [3, 3, 1]]
    )


@pytest.mark.parametrize("data", [[math.nan], [math.inf, -math.inf], np.full(70_000, np.nan)])
def test_no_finite_values_is_like_no_data(data: Any) -> None:
    np.testing.assert_array_equal(buckets_of(data, 3), np.zeros((3, 3)))


def test_integers_beyond_float64_precision_are_cast_as_tensorflow_does() -> None:
    x = np.array([2**62 + 1, -(2**62), 0, 2**53 + 1, 2**63 - 1], np.int64)
    np.testing.assert_array_equal(buckets_of(x, 5), tb_buckets(x, 5))
    u = np.array([0, 2**64 - 1, 2**63], np.uint64)
    np.testing.assert_array_equal(buckets_of(u, 3), tb_buckets(u, 3))


def test_bfloat16_is_bucketed_as_float32_values() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([0.5, -1.25, 3.0, np.nan], dtype=ml_dtypes.bfloat16)
    np.testing.assert_array_equal(buckets_of(x, 4), ref_tf2([0.5, -1.25, 3.0], 4))


def test_many_values_across_chunks_match_tensorboard() -> None:
    # > 3 chunks of 64 Ki values, with the max repeated in several chunks.
    rng = np.random.default_rng(8)
    x = rng.standard_normal(3 * 65536 + 5).astype(np.float32)
    x[[7, 70_000, 150_000, -1]] = x.max()
    for k in (1, 30, 77):
        got = buckets_of(x, k)
        np.testing.assert_array_equal(got, tb_buckets(x, k))
        assert got[:, 2].sum() == x.size


def test_many_buckets_over_several_chunks() -> None:
    # k = 40,000: chunks grow to 2k values, so the per-chunk bincount stays cheap.
    x = np.random.default_rng(6).standard_normal(200_003)
    got = histogram_buckets(x, 40_000)
    np.testing.assert_array_equal(got, ref_tf2(x, 40_000))


def test_bucketing_uses_constant_extra_memory() -> None:
    # TF2 builds an n x k one-hot matrix (2.4 GB for 10M values); we need
    # ~1 MiB of scratch however large n is (numpy reports to tracemalloc).
    x = np.random.default_rng(2).standard_normal(4_000_000).astype(np.float32)  # 16 MB
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = histogram_buckets(x, 30)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert out[:, 2].sum() == x.size
    assert peak < 2 * 2**20, peak


def test_large_input_is_bucketed_on_the_callers_thread_without_a_copy(logdir: Path) -> None:
    x = np.random.default_rng(4).standard_normal(600_000)  # 4.8 MB > the 1 MiB deferral limit
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            assert sl.histogram("big", x)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        x[:] = 0  # too late to matter: the buckets are already computed
    w.close()
    assert peak < x.nbytes / 2, peak
    ((_, v),) = file_values(logdir)
    expected = histogram_buckets(np.random.default_rng(4).standard_normal(600_000), 30)
    np.testing.assert_array_equal(decoded(v), expected)


@pytest.mark.parametrize(
    "make",
    [
        lambda buf: buf,
        lambda buf: buf[::2],  # a strided view
        lambda buf: buf.reshape(4, -1).T,  # flattening copies: private already
    ],
)
def test_caller_may_mutate_its_array_at_once(make: Any) -> None:
    # Bucketing happens later on the writer thread; it must see the data as
    # it was at the call.
    buf = np.zeros(400, np.float32)
    w, out = memory_writer()
    with w.as_default():
        for step in range(20):
            buf[:] = np.arange(400) * (step + 1)
            sl.histogram("h", make(buf), step=step, buckets=5)
        buf[:] = -1
    w.close()
    from tensorboard.compat.proto import event_pb2

    events = [event_pb2.Event.FromString(p) for p in payloads(out.getvalue())[1:]]
    assert [e.step for e in events] == list(range(20))
    for e in events:
        data = make(np.arange(400, dtype=np.float32) * (e.step + 1))
        np.testing.assert_array_equal(decoded(e.summary.value[0]), ref_tf2(data, 5))


def test_framework_tensor_lazy_callable_lists_and_scalars(logdir: Path) -> None:
    class FakeTensor:  # like a torch tensor: __array__ only, never imported
        shape = (2, 3)

        def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
            return np.arange(6, dtype=np.float32).reshape(2, 3)

    calls = []

    def lazy() -> np.ndarray:
        calls.append(1)
        return np.array([1.0, 2.0])

    with sl.create_file_writer(logdir).as_default(step=1) as w:
        assert sl.histogram("torch", FakeTensor(), buckets=3)
        assert sl.histogram("lazy", lazy, buckets=2)
        assert sl.histogram("lists", [[1, 2], [3, 4]], buckets=2)
        assert sl.histogram("scalar", 2.5)
    w.close()
    assert calls == [1]
    got = {v.tag: decoded(v) for e in tb_events(only_file(logdir)) for v in e.summary.value}
    np.testing.assert_array_equal(got["torch"], ref_tf2(np.arange(6), 3))
    np.testing.assert_array_equal(got["lazy"], ref_tf2([1.0, 2.0], 2))
    np.testing.assert_array_equal(got["lists"], ref_tf2([1, 2, 3, 4], 2))
    np.testing.assert_array_equal(got["scalar"], ref_tf2([2.5]))


def test_metadata_and_description_on_first_event_only(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w, sl.name_scope("layer1"):
        for step in range(3):
            sl.histogram("weights", np.arange(step + 2), step=step, description="the weights")
    w.close()
    values = [v for _, v in file_values(logdir)]
    assert [v.tag for v in values] == ["layer1/weights"] * 3
    assert [v.HasField("metadata") for v in values] == [True, False, False]
    assert values[0].metadata.SerializeToString() == tb_metadata("the weights")
    assert values[0].metadata.data_class == 0


# ---------------------------------------------------------------------------
# Nothing recorded, nothing computed
# ---------------------------------------------------------------------------
class Untouchable:
    """Data that fails the test if anyone looks at it."""

    shape = (10,)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise AssertionError("data was converted although nothing records")


def test_no_work_without_writer_or_when_not_recording(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lazy() -> np.ndarray:
        raise AssertionError("lazy data was evaluated although nothing records")

    def no_bucketing(*args: Any) -> np.ndarray:
        raise AssertionError("bucketing ran although nothing records")

    monkeypatch.setattr(hist_mod, "histogram_buckets", no_bucketing)
    assert sl.histogram("x", Untouchable(), step=0) is False
    assert sl.histogram("x", lazy, step=0, buckets=-5) is False
    with sl.create_noop_writer().as_default():
        assert sl.histogram("x", Untouchable(), step=0) is False
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with sl.record_if(False):
            assert sl.histogram("x", Untouchable()) is False
            assert sl.histogram("x", lazy, buckets="many") is False  # type: ignore[arg-type]
        with sl.record_if(lambda: False):
            assert sl.histogram("x", Untouchable()) is False
    w.close()
    assert not [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
BAD_INPUTS = [
    ({"data": np.array(["a", "b"])}, TypeError, r"'data' must hold real numbers, got dtype <U1"),
    ({"data": np.zeros(3, np.complex64)}, TypeError, r"'data'.*complex64"),
    ({"data": [1, None]}, TypeError, r"'data'.*object"),
    ({"data": "1.5"}, TypeError, r"'data'"),
    ({"data": None}, TypeError, r"'data'"),
    ({"data": [[1, 2], [3]]}, TypeError, r"'data'"),  # ragged
    ({"data": np.array(["2020-01-01"], "datetime64[D]")}, TypeError, r"'data'.*datetime64"),
    ({"buckets": -3}, ValueError, r"'buckets' must be in \[0, 2\*\*24\], got -3"),
    ({"buckets": 2**31}, ValueError, r"'buckets'.*got 2147483648"),
    # Refused at the call: the bucketing would run out of memory on the writer thread.
    ({"buckets": 2**31 - 1}, ValueError, r"'buckets' must be in \[0, 2\*\*24\], got 2147483647"),
    ({"buckets": 2**24 + 1}, ValueError, r"'buckets'.*got 16777217"),
    ({"buckets": 2.0}, TypeError, r"'buckets' must be an int, got float 2.0"),
    ({"buckets": True}, TypeError, r"'buckets' must be an int, got bool"),
    ({"buckets": "30"}, TypeError, r"'buckets' must be an int, got str"),
    ({"description": 3}, TypeError, r"'description' must be a str"),
    ({"name": ""}, ValueError, r"'name'"),
    ({"name": 5}, TypeError, r"'name'"),
    ({"name": None}, TypeError, r"'name'"),
    ({"step": 1.5}, TypeError, r"'step'"),
]


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS)
def test_bad_input_raises_writes_nothing_and_keeps_earlier_data(
    logdir: Path, override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    good = np.arange(10.0)
    args: dict[str, Any] = {"name": "x", "data": good, "step": 2, **override}
    with sl.create_file_writer(logdir).as_default() as w:
        assert sl.histogram("x", good, step=1)
        with pytest.raises(exc, match=pattern) as info:
            sl.histogram(**args)
        assert str(info.value).startswith("histogram: ")
    w.close()
    values = file_values(logdir)
    assert [s for s, _ in values] == [1]
    np.testing.assert_array_equal(decoded(values[0][1]), ref_tf2(good))


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS[:-4])
def test_histogram_pb_rejects_the_same_input(
    override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"data": np.arange(3.0), **override}
    with pytest.raises(exc, match=pattern) as info:
        sl.histogram_pb("x", **args)
    assert str(info.value).startswith("histogram_pb: ")


def test_histogram_pb_rejects_a_bad_tag() -> None:
    with pytest.raises(TypeError, match="histogram_pb: 'tag'"):
        sl.histogram_pb(None, [1.0])  # type: ignore[arg-type]


def test_numpy_integer_buckets_are_accepted() -> None:
    np.testing.assert_array_equal(buckets_of([1.0, 2.0], np.int64(2)), ref_tf2([1.0, 2.0], 2))


# ---------------------------------------------------------------------------
# The real TensorBoard serves our buckets back
# ---------------------------------------------------------------------------
def test_tensorboard_serves_the_buckets(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    series = {
        0: rng.standard_normal(500).astype(np.float32),
        1: rng.standard_normal(500) * 3 + 1,
        2: np.array([np.nan, 1.0, 2.0, np.inf, 5.0]),  # NaN/Inf left out
        3: np.full(9, 4.0),  # constant
    }
    with sl.create_file_writer(tmp_path / "run").as_default() as w:
        for step, data in series.items():
            sl.histogram("acts", data, step=step, buckets=12)
    w.close()
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(
            lambda: tb.get_json("/data/plugin/histograms/tags"),
            lambda t: "acts" in t.get("run", {}),
        )
        events = tb.poll(
            lambda: tb.get_json("/data/plugin/histograms/histograms", run="run", tag="acts"),
            lambda e: len(e) == 4,
        )
    assert [e[1] for e in events] == [0, 1, 2, 3]
    for _wall_time, step, buckets in events:
        np.testing.assert_array_equal(np.array(buckets), ref_tf2(series[step], 12))


def test_zero_buckets_write_an_empty_histogram_as_tensorflow(logdir: Path) -> None:
    # TensorFlow (and TensorBoard's histogram_pb) write a [0, 3] tensor for buckets=0.
    expected = as_tb_value(tb_histogram_pb("h", [1.0, 2.0], 0, None)).tensor
    assert [d.size for d in expected.tensor_shape.dim] == [0, 3]
    with sl.create_file_writer(logdir).as_default(step=4) as w:
        assert sl.histogram("h", [1.0, 2.0], buckets=0)
        assert sl.histogram("h", np.arange(10_000.0), buckets=0)  # beyond the deferred size
        assert sl.histogram("h", [], buckets=0)
        with pytest.raises(TypeError, match="histogram: 'data'"):
            sl.histogram("h", ["a"], buckets=0)  # the data is still checked
    w.close()
    values = file_values(logdir)
    assert [step for step, _ in values] == [4, 4, 4]
    for _, value in values:
        assert value.tensor == expected
        assert decoded(value).shape == (0, 3)
    assert as_tb_value(sl.histogram_pb("h", [1.0, 2.0], buckets=0)).tensor == expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_a_zero_extreme_does_not_depend_on_the_order_of_the_values(dtype: Any) -> None:
    # numpy's max of [-0.0, 0.0] depends on where each zero is; the top edge here does
    # not: +0.0 when any value is +0.0, -0.0 only when every zero is -0.0.
    for values in ([-0.0, 0.0], [0.0, -0.0], [-1.0] + [-0.0] * 40 + [0.0],
                   [-1.0, 0.0] + [-0.0] * 40):
        top = buckets_of(np.array(values, dtype), 3)[-1, 1]
        assert top == 0.0 and not np.signbit(top), values
    top = buckets_of(np.array([-1.0, -0.0, -0.0], dtype), 3)[-1, 1]
    assert top == 0.0 and np.signbit(top)
