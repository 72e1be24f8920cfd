"""pr_curve / pr_curve_raw and their _pb forms: TensorBoard's pb arithmetic bit-for-bit, server.

TensorBoard's numpy ``pb`` and ``raw_data_pb`` import ``tensorflow.compat.v1``
only to reach ``Summary``, ``SummaryMetadata`` and ``make_tensor_proto``.
TensorFlow is not installed here, so ``tensorboard_pb_helpers`` lends them
TensorBoard's own protos and ``tensor_util`` for the duration of each call;
every line of their arithmetic is TensorBoard's.
"""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding._events import summary_event
from summarylib.ops import pr_curve as pr_mod
from tests.helpers import only_file, record_payloads, tb_events
from tests.tbserver import TensorBoardServer

# Typed loosely: the tests pass the six vectors as *lists and **dicts.
raw_op: Any = sl.pr_curve_raw
raw_pb: Any = sl.pr_curve_raw_pb


# ---------------------------------------------------------------------------
# TensorBoard's encoders
# ---------------------------------------------------------------------------
@contextlib.contextmanager
def tensorboard_pb_helpers() -> Iterator[None]:
    """Make ``import tensorflow.compat.v1`` give TensorBoard's protos, for one call."""
    import tensorboard.compat
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    # Resolve TensorBoard's lazy TF handle first, so it keeps its stub.
    assert "tensorflow_stub" in tensorboard.compat.tf.__file__
    v1 = types.ModuleType("tensorflow.compat.v1")
    v1.SummaryMetadata = summary_pb2.SummaryMetadata  # type: ignore[attr-defined]
    v1.Summary = summary_pb2.Summary  # type: ignore[attr-defined]
    v1.make_tensor_proto = tensor_util.make_tensor_proto  # type: ignore[attr-defined]
    v1.float32 = np.float32  # type: ignore[attr-defined]
    compat = types.ModuleType("tensorflow.compat")
    compat.v1 = v1  # type: ignore[attr-defined]
    tf = types.ModuleType("tensorflow")
    tf.compat = compat  # type: ignore[attr-defined]
    fake = {"tensorflow": tf, "tensorflow.compat": compat, "tensorflow.compat.v1": v1}
    saved = {name: sys.modules.get(name) for name in fake}
    sys.modules.update(fake)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def tb_pb(name: str, labels: Any, predictions: Any, **kwargs: Any) -> Any:
    from tensorboard.plugins.pr_curve import summary

    # NaN predictions make its int32 cast warn (and drop them); nothing else does.
    with tensorboard_pb_helpers(), np.errstate(invalid="ignore"):
        return summary.pb(name, labels, predictions, **kwargs)


def tb_raw_data_pb(name: str, *vectors: Any, **kwargs: Any) -> Any:
    from tensorboard.plugins.pr_curve import summary

    with tensorboard_pb_helpers():
        return summary.raw_data_pb(name, *vectors, **kwargs)


def tb_metadata(name: str, num_thresholds: int, description: str | None) -> bytes:
    from tensorboard.plugins.pr_curve import metadata

    return metadata.create_summary_metadata(  # type: ignore[no-any-return]
        display_name=name, description=description or "", num_thresholds=num_thresholds
    ).SerializeToString()


def decoded(value: Any) -> np.ndarray:
    """The float32 ``[6, T]`` array of a Summary.Value (ours: tensor_content)."""
    from tensorboard.util import tensor_util

    t = value.tensor
    assert t.dtype == 1  # DT_FLOAT
    assert len(t.tensor_shape.dim) == 2 and t.tensor_shape.dim[0].size == 6
    return tensor_util.make_ndarray(t)  # type: ignore[no-any-return]


def as_tb_value(summary: Any) -> Any:
    from tensorboard.compat.proto import summary_pb2

    (value,) = summary_pb2.Summary.FromString(summary.SerializeToString()).value
    return value


def ours(
    labels: Any, predictions: Any, num_thresholds: int = 201, weights: Any = None
) -> np.ndarray:
    summary = sl.pr_curve_pb("pr", labels, predictions, num_thresholds, weights)
    value = as_tb_value(summary)
    assert len(value.tensor.tensor_content) == 24 * num_thresholds
    return decoded(value)


def theirs(
    labels: Any, predictions: Any, num_thresholds: int = 201, weights: Any = None
) -> np.ndarray:
    labels, predictions = np.asarray(labels), np.asarray(predictions)  # pb takes arrays only
    (value,) = tb_pb(
        "pr", labels, predictions, num_thresholds=num_thresholds, weights=weights
    ).value
    return decoded(value)


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def file_values(logdir: Path) -> list[tuple[int, Any]]:
    from tensorboard.compat.proto import event_pb2

    out: list[tuple[int, Any]] = []
    for p in payloads(only_file(logdir).read_bytes())[1:]:
        ev = event_pb2.Event.FromString(p)
        out.extend((ev.step, v) for v in ev.summary.value)
    return out


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------
@st.composite
def curves(draw: st.DrawFn) -> dict[str, Any]:
    """Labels, predictions in [0, 1] (many exactly on thresholds), weights, T."""
    t = draw(st.integers(2, 260))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=12))
    dtype = draw(st.sampled_from(["float16", "float32", "float64"]))
    width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
    on_threshold = st.integers(0, t - 1).map(lambda i: i / (t - 1))
    predictions = draw(
        hnp.arrays(
            np.dtype(dtype),
            shape,
            elements=st.one_of(st.floats(0, 1, width=width), on_threshold),  # type: ignore[arg-type]
        )
    )
    labels = draw(hnp.arrays(np.bool_, shape))
    kind = draw(st.sampled_from(["none", "scalar", "full", "broadcast"]))
    weights: Any = None
    w_elements = st.floats(-2, 10, width=32)
    if kind == "scalar":
        weights = draw(w_elements)
    elif kind == "full":
        weights = draw(hnp.arrays(np.float32, shape, elements=w_elements))
    elif kind == "broadcast" and len(shape) == 2:
        weights = draw(hnp.arrays(np.float64, (1, shape[1]), elements=w_elements))
    return {"labels": labels, "predictions": predictions, "num_thresholds": t, "weights": weights}


# ---------------------------------------------------------------------------
# Against TensorBoard's encoders
# ---------------------------------------------------------------------------
@settings(max_examples=150)
@given(curve=curves(), description=st.one_of(st.none(), st.text(max_size=8)))
def test_pr_curve_pb_equals_tensorboards_pb(curve: dict[str, Any], description: str | None) -> None:
    mine = as_tb_value(sl.pr_curve_pb("my/curve", **curve, description=description))
    (tb,) = tb_pb("my/curve", **curve, description=description).value
    assert mine.tag == tb.tag == "my/curve/pr_curves"
    assert mine.metadata.SerializeToString() == tb.metadata.SerializeToString()
    assert mine.metadata.SerializeToString() == tb_metadata(
        "my/curve", curve["num_thresholds"], description
    )
    got = decoded(mine)
    assert got.shape == (6, curve["num_thresholds"])
    # Bit-for-bit: the same float64 operations in the same order (1e-6 was allowed).
    np.testing.assert_array_equal(got, decoded(tb))


def test_many_weighted_points_sum_in_numpy_histograms_blocks() -> None:
    # numpy.histogram (in TensorBoard's pb) sums weights per 65536-value block;
    # so do we, which keeps float64 sums identical beyond one block.
    rng = np.random.default_rng(3)
    n = 3 * 65536 + 17
    labels = rng.random(n) < 0.3
    predictions = rng.random(n).astype(np.float32)
    weights = rng.random(n) * 1e3 + 1e-3
    for t in (2, 127, 1000):
        np.testing.assert_array_equal(
            ours(labels, predictions, t, weights), theirs(labels, predictions, t, weights)
        )
        np.testing.assert_array_equal(ours(labels, predictions, t), theirs(labels, predictions, t))


@st.composite
def unclipped_curves(draw: st.DrawFn) -> dict[str, Any]:
    """Predictions of any value (NaN, ±inf, outside [0, 1], -0.0) mixed with ones inside."""
    t = draw(st.integers(2, 260))
    n = draw(st.integers(0, 40))
    dtype = draw(st.sampled_from(["float16", "float32", "float64"]))
    width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
    inside = st.one_of(st.floats(0, 1, width=width), st.sampled_from([0.0, -0.0, 1.0]))
    predictions = draw(hnp.arrays(np.dtype(dtype), (n,), elements=inside))  # type: ignore[arg-type]
    # A few values replaced by ones just outside [0, 1], far outside, NaN, ±inf.
    outside = st.one_of(
        st.floats(1, 2, exclude_min=True, width=width),
        st.floats(-1, 0, exclude_max=True, width=width),
        st.floats(width=width),
        st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    )
    for _ in range(draw(st.integers(0, 3)) if n else 0):
        predictions[draw(st.integers(0, n - 1))] = draw(outside)
    labels = draw(hnp.arrays(np.bool_, (n,)))
    weights = None
    if draw(st.booleans()):
        weights = draw(hnp.arrays(np.float64, (n,), elements=st.floats(-2, 10)))
    return {"labels": labels, "predictions": predictions, "num_thresholds": t, "weights": weights}


@settings(max_examples=150)
@given(curve=unclipped_curves())
def test_unclipped_predictions_equal_tensorboards_pb_of_the_clipped_ones(
    curve: dict[str, Any],
) -> None:
    # pr_curve clips to [0, 1] (TensorBoard's op does; its pb does not) and
    # leaves NaN out (as its pb does): TensorBoard's pb of the clipped input.
    # Inputs all inside [0, 1] take pr_data's shortcut past the clip; the
    # others (and empty ones) the clip, so both are compared here.
    p = curve["predictions"]
    clipped = np.clip(p, 0, 1)
    assert clipped.dtype == p.dtype
    t, w = curve["num_thresholds"], curve["weights"]
    np.testing.assert_array_equal(
        ours(curve["labels"], p, t, w), theirs(curve["labels"], clipped, t, w)
    )


@settings(max_examples=40)
@given(
    t=st.integers(2040, 4200) | st.sampled_from([2049, 2050, 2051, 4097, 4099]),
    dtype=st.sampled_from(["float16", "float32"]),
    data=st.data(),
)
def test_many_thresholds_where_t_minus_1_is_inexact_in_float16(
    t: int, dtype: str, data: st.DataObject
) -> None:
    # Above 2048, T - 1 may round in float16 (up: indices >= T are dropped,
    # as numpy.histogram's range does in TensorBoard's pb).
    width = 16 if dtype == "float16" else 32
    on_threshold = st.integers(0, t - 1).map(lambda i: i / (t - 1))
    elements = st.one_of(st.floats(0, 1, width=width), on_threshold)
    p = data.draw(hnp.arrays(np.dtype(dtype), (50,), elements=elements))  # type: ignore[arg-type]
    labels = data.draw(hnp.arrays(np.bool_, (50,)))
    np.testing.assert_array_equal(ours(labels, p, t), theirs(labels, p, t))


@settings(max_examples=60)
@given(
    t=st.integers(2, 200),
    data=st.data(),
    description=st.one_of(st.none(), st.text(max_size=8)),
)
def test_pr_curve_raw_pb_equals_tensorboards_raw_data_pb(
    t: int, data: st.DataObject, description: str | None
) -> None:
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int64]))
    vectors = [data.draw(hnp.arrays(dtype, (t,))) for _ in range(6)]
    with np.errstate(over="ignore", invalid="ignore"):  # huge float64 -> float32 is inf
        mine = as_tb_value(raw_pb("raw", *vectors, num_thresholds=t, description=description))
        (tb,) = tb_raw_data_pb("raw", *vectors, num_thresholds=t, description=description).value
    assert mine.tag == tb.tag == "raw/pr_curves"
    assert mine.metadata.SerializeToString() == tb.metadata.SerializeToString()
    np.testing.assert_array_equal(decoded(mine), decoded(tb))


def test_raw_num_thresholds_defaults_to_the_vectors_length() -> None:
    # TensorBoard's raw_data_pb would write num_thresholds 0 (empty content).
    vectors = [np.arange(5.0)] * 6
    md = as_tb_value(raw_pb("raw", *vectors)).metadata
    assert md.SerializeToString() == tb_metadata("raw", 5, None)
    assert md.plugin_data.content == b"\x10\x05"


@settings(max_examples=40)
@given(curve=curves(), step=st.integers(0, 2**63 - 1))
def test_op_bytes_equal_pr_curve_pb_serialization(curve: dict[str, Any], step: int) -> None:
    fixed = 1712345678.75
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: fixed)
    with w.as_default(step=step):
        assert sl.pr_curve("a", **curve)
        assert sl.pr_curve("a", **curve)
    w.close()
    first, second = payloads(out.getvalue())[1:]
    pb = sl.pr_curve_pb("a", **curve)
    assert first == summary_event(fixed, step, pb.SerializeToString())
    pb.value[0].ClearField("metadata")
    assert second == summary_event(fixed, step, pb.SerializeToString())


def test_raw_op_bytes_equal_pr_curve_raw_pb_serialization() -> None:
    vectors = [np.linspace(0, i, 7) for i in range(6)]
    fixed = 1712345678.0
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: fixed)
    with w.as_default(step=9):
        assert raw_op("r", *vectors, description="d")
    w.close()
    (event,) = payloads(out.getvalue())[1:]
    assert event == summary_event(
        fixed, 9, raw_pb("r", *vectors, description="d").SerializeToString()
    )


def test_metadata_bytes_equal_protobuf_and_tensorboard() -> None:
    for name, t, desc in [
        ("pr", 201, None),
        ("a/b", 2, ""),
        ("ü", 127, "**md** ✓"),
        ("x", 2**31 - 1, "d"),
    ]:
        mine = pr_mod._metadata(name, t, desc, "pr_curve")
        assert mine == pr_mod.create_summary_metadata(name, t, desc).SerializeToString()
        assert mine == tb_metadata(name, t, desc)
    md = pr_mod.create_summary_metadata("pr", 201)
    assert md.plugin_data.plugin_name == "pr_curves"
    assert md.plugin_data.content == b"\x10\xc9\x01"  # format.md §5.1
    assert md.display_name == "pr" and md.data_class == 0


@given(t=st.integers(0, 2**32 - 1))
def test_plugin_content_equals_protobuf_encoding(t: int) -> None:
    from tensorboard.plugins.pr_curve import plugin_data_pb2 as tb_plugin_data

    from summarylib.proto import plugin_data_pb2

    mine = pr_mod.plugin_content(t)
    assert (
        mine == plugin_data_pb2.PrCurvePluginData(version=0, num_thresholds=t).SerializeToString()
    )
    assert mine == tb_plugin_data.PrCurvePluginData(version=0, num_thresholds=t).SerializeToString()


# ---------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------
def test_small_example_by_hand() -> None:
    # Thresholds 0, 0.5, 1: buckets floor(p * 2) = [1, 1, 0, 0].
    got = ours([True, False, True, False], np.array([0.9, 0.8, 0.3, 0.1]), 3)
    expected = [
        [2, 1, 0],  # TP
        [2, 1, 0],  # FP
        [0, 1, 2],  # TN
        [0, 1, 2],  # FN
        [0.5, 0.5, 0],  # precision (0 / 1e-7 = 0)
        [1, 0.5, 0],  # recall
    ]
    np.testing.assert_array_equal(got, np.array(expected, np.float32))


def test_all_positive_labels() -> None:
    p = np.linspace(0, 1, 50, dtype=np.float32)
    got = ours(np.ones(50, bool), p, 11)
    np.testing.assert_array_equal(got, theirs(np.ones(50, bool), p, 11))
    assert (got[1] == 0).all() and (got[2] == 0).all()  # no FP, no TN
    assert (got[4][got[0] > 0] == 1).all()  # precision 1 wherever anything is predicted
    assert got[0, 0] == 50 and got[5, 0] == 1


def test_all_negative_labels() -> None:
    p = np.linspace(0, 1, 50)
    got = ours(np.zeros(50, bool), p, 11)
    np.testing.assert_array_equal(got, theirs(np.zeros(50, bool), p, 11))
    assert (got[0] == 0).all() and (got[3] == 0).all()  # no TP, no FN
    assert (got[4] == 0).all() and (got[5] == 0).all()
    assert got[1, 0] == 50 and got[2, -1] == 50 - 1  # p == 1 is counted at threshold 1


def test_weights_scale_counts_and_zero_weights_drop_points() -> None:
    rng = np.random.default_rng(1)
    labels = rng.random(40) < 0.5
    p = rng.random(40).astype(np.float32)
    np.testing.assert_array_equal(ours(labels, p, 21, 3.0)[:4], 3 * ours(labels, p, 21)[:4])
    keep = rng.random(40) < 0.5
    np.testing.assert_array_equal(
        ours(labels, p, 21, keep.astype(np.float32)), ours(labels[keep], p[keep], 21)
    )
    # [n, 1] weights broadcast over [n, m] labels
    l2, p2 = labels.reshape(8, 5), p.reshape(8, 5)
    w2 = np.arange(8.0).reshape(8, 1)
    np.testing.assert_array_equal(ours(l2, p2, 21, w2), theirs(l2, p2, 21, w2))


def test_two_thresholds() -> None:
    labels = [True, True, False, False, True]
    p = np.array([1.0, 0.99, 1.0, 0.0, 0.5], np.float32)
    got = ours(labels, p, 2)
    np.testing.assert_array_equal(got, theirs(labels, p, 2))
    np.testing.assert_array_equal(got[:4], [[3, 1], [2, 1], [0, 1], [0, 2]])


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single_point(n: int) -> None:
    labels, p = np.ones(n, bool), np.full(n, 0.5)
    np.testing.assert_array_equal(ours(labels, p, 5), theirs(labels, p, 5))
    assert ours(labels, p, 5)[0, 0] == n


def test_predictions_are_clipped_to_the_unit_interval() -> None:
    labels = [True, False, True, False, True]
    p = np.array([-0.5, 1.5, np.inf, -np.inf, 0.25], np.float32)
    np.testing.assert_array_equal(ours(labels, p, 9), theirs(labels, np.clip(p, 0, 1), 9))


def test_nan_predictions_are_left_out_as_tensorboard_pb_does() -> None:
    labels = np.array([True, False, True, False, True])
    p = np.array([0.2, np.nan, 0.7, 0.4, np.nan])
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(ours(labels, p, 11, w), theirs(labels, p, 11, w))
    keep = ~np.isnan(p)
    np.testing.assert_array_equal(ours(labels, p, 11, w), ours(labels[keep], p[keep], 11, w[keep]))


def test_numeric_labels_and_predictions() -> None:
    p = np.array([0.1, 0.6, 0.9, 0.4])
    expected = ours(np.array([False, True, True, False]), p, 5)
    for labels in ([0, 1, 1, 0], np.array([0.0, 1.0, 1.0, 0.0]), np.array([0, 1, 1, 0], np.uint8)):
        np.testing.assert_array_equal(ours(labels, p, 5), expected)
    # integer and bool predictions are numbers too (0 and 1)
    np.testing.assert_array_equal(
        ours([True, False], [1, 0], 3), theirs(np.array([True, False]), np.array([1.0, 0.0]), 3)
    )
    np.testing.assert_array_equal(
        ours([True, False], [True, False], 3), ours([True, False], [1, 0], 3)
    )


def test_float16_predictions_bucket_in_float16_as_tensorboard_does() -> None:
    # 0.1 in float16 times 200 rounds to 20.0 in float16 (19.995 in float32).
    p = np.array([0.1, 0.3, 0.7], np.float16)
    labels = np.array([True, False, True])
    np.testing.assert_array_equal(ours(labels, p, 201), theirs(labels, p, 201))
    # Beyond float16's range for T - 1, the product runs in float32 instead of overflowing.
    big = ours(labels, p, 70_001)
    np.testing.assert_array_equal(big, ours(labels, p.astype(np.float32), 70_001))


def test_name_scope_tag_and_display_name(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0) as w, sl.name_scope("eval"):
        assert sl.pr_curve("cls", [True], [0.5], num_thresholds=3, description="the curve")
        assert sl.pr_curve("cls", [True], [0.5], num_thresholds=3)
    w.close()
    values = [v for _, v in file_values(logdir)]
    assert [v.tag for v in values] == ["eval/cls/pr_curves"] * 2
    assert [v.HasField("metadata") for v in values] == [True, False]
    assert values[0].metadata.SerializeToString() == tb_metadata("cls", 3, "the curve")


def test_lazy_and_framework_inputs(logdir: Path) -> None:
    class FakeTensor:  # __array__ only, never imported
        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
            return self.a

    labels = np.array([True, False, True])
    p = np.array([0.2, 0.5, 0.9], np.float32)
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        assert sl.pr_curve("t", FakeTensor(labels), FakeTensor(p), num_thresholds=5)
        assert sl.pr_curve("l", lambda: labels, lambda: p, num_thresholds=5, weights=lambda: 2.0)
    w.close()
    got = {v.tag: decoded(v) for e in tb_events(only_file(logdir)) for v in e.summary.value}
    np.testing.assert_array_equal(got["t/pr_curves"], theirs(labels, p, 5))
    np.testing.assert_array_equal(got["l/pr_curves"], theirs(labels, p, 5, 2.0))


# ---------------------------------------------------------------------------
# Nothing recorded, nothing computed
# ---------------------------------------------------------------------------
class Untouchable:
    shape = (3,)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise AssertionError("data was converted although nothing records")


def test_no_work_without_writer_or_when_not_recording(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lazy() -> np.ndarray:
        raise AssertionError("lazy data was evaluated although nothing records")

    def no_counting(*args: Any) -> np.ndarray:
        raise AssertionError("counting ran although nothing records")

    monkeypatch.setattr(pr_mod, "pr_data", no_counting)
    u = Untouchable()
    assert sl.pr_curve("x", u, u, step=0) is False
    assert sl.pr_curve("x", lazy, lazy, step=0, num_thresholds=1) is False
    assert raw_op("x", u, u, u, u, u, u, step=0) is False
    with sl.create_noop_writer().as_default():
        assert sl.pr_curve("x", u, u, step=0) is False
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with sl.record_if(False):
            assert sl.pr_curve("x", u, u, weights=u) is False
            assert raw_op("x", lazy, lazy, lazy, lazy, lazy, lazy) is False
        with sl.record_if(lambda: False):
            assert sl.pr_curve("x", lazy, u) is False
    w.close()
    assert not [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
BAD_INPUTS = [
    ({"labels": np.array(["yes", "no", "no"])}, TypeError, r"'labels' must be bool.*<U3"),
    ({"labels": [1, 2, 0]}, ValueError, r"'labels' must be bool, or numbers that are all 0 or 1"),
    ({"labels": [1.0, np.nan, 0.0]}, ValueError, r"'labels'.*0 or 1"),
    ({"labels": [object(), 1, 0]}, TypeError, r"'labels'.*object"),
    ({"labels": [True, False]}, ValueError, r"same shape, got \(2,\) and \(3,\)"),
    ({"labels": [[True, False, True]]}, ValueError, r"same shape, got \(1, 3\) and \(3,\)"),
    (
        {"predictions": ["a", "b", "c"]},
        TypeError,
        r"'predictions' must hold real numbers, got dtype <U1",
    ),
    ({"predictions": np.zeros(3, complex)}, TypeError, r"'predictions'.*complex128"),
    ({"predictions": [0.5, None, 0.1]}, TypeError, r"'predictions'.*object"),
    ({"predictions": None}, TypeError, r"'predictions'"),
    (
        {"weights": [1.0, 2.0]},
        ValueError,
        r"'weights' of shape \(2,\) does not broadcast .* \(3,\)",
    ),
    ({"weights": "heavy"}, TypeError, r"'weights' must hold real numbers"),
    ({"num_thresholds": 1}, ValueError, r"'num_thresholds' must be in \[2, 2\*\*24\], got 1"),
    ({"num_thresholds": 0}, ValueError, r"'num_thresholds'.*got 0"),
    ({"num_thresholds": -4}, ValueError, r"'num_thresholds'.*got -4"),
    ({"num_thresholds": 2**31}, ValueError, r"'num_thresholds'.*got 2147483648"),
    # Refused at the call, not by a MemoryError of the counting (32 GiB for this one).
    ({"num_thresholds": 2**31 - 1}, ValueError, r"'num_thresholds'.*2\*\*24\], got 2147483647"),
    ({"num_thresholds": 100.0}, TypeError, r"'num_thresholds' must be an int, got float 100.0"),
    ({"num_thresholds": True}, TypeError, r"'num_thresholds' must be an int, got bool"),
    ({"num_thresholds": None}, TypeError, r"'num_thresholds' must be an int, got NoneType"),
    ({"description": 3}, TypeError, r"'description' must be a str"),
    ({"name": ""}, ValueError, r"'name'"),
    ({"name": 5}, TypeError, r"'name'"),
    ({"name": None}, TypeError, r"'name'"),
    ({"step": 1.5}, TypeError, r"'step'"),
]
GOOD: dict[str, Any] = {"labels": [True, False, True], "predictions": [0.2, 0.5, 0.9]}


def first_value_only(logdir: Path) -> None:
    values = file_values(logdir)
    assert [s for s, _ in values] == [1]
    np.testing.assert_array_equal(
        decoded(values[0][1]), theirs(np.array([True, False, True]), np.array([0.2, 0.5, 0.9]), 5)
    )


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS)
def test_bad_input_raises_writes_nothing_and_keeps_earlier_data(
    logdir: Path, override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"name": "x", **GOOD, "step": 2, "num_thresholds": 5, **override}
    with sl.create_file_writer(logdir).as_default() as w:
        assert sl.pr_curve("x", **GOOD, step=1, num_thresholds=5)
        with pytest.raises(exc, match=pattern) as info:
            sl.pr_curve(**args)
        assert str(info.value).startswith("pr_curve: ")
    w.close()
    first_value_only(logdir)


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS[:-1])
def test_pr_curve_pb_rejects_the_same_input(
    override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"name": "x", **GOOD, **override}
    with pytest.raises(exc, match=pattern) as info:
        sl.pr_curve_pb(**args)
    assert str(info.value).startswith("pr_curve_pb: ")


V = np.arange(4.0)
BAD_RAW = [
    ({"recall": np.arange(5.0)}, ValueError, r"same length, got .*precision=4, recall=5"),
    (
        {"precision": np.zeros((2, 2))},
        ValueError,
        r"'precision' must have rank 1, got shape \(2, 2\)",
    ),
    (
        {"true_positive_counts": 3.0},
        ValueError,
        r"'true_positive_counts' must have rank 1, got shape \(\)",
    ),
    (
        {"false_negative_counts": ["a"] * 4},
        TypeError,
        r"'false_negative_counts' must hold real numbers",
    ),
    ({"num_thresholds": 5}, ValueError, r"'num_thresholds' is 5 but the vectors have length 4"),
    ({"num_thresholds": 1.5}, TypeError, r"'num_thresholds' must be an int"),
    (dict.fromkeys(pr_mod._RAW_ARGS, np.zeros(1)), ValueError, r"length >= 2.*got 1"),
    ({"description": ["d"]}, TypeError, r"'description' must be a str"),
    ({"name": None}, TypeError, r"'name'"),
]


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_RAW)
def test_raw_bad_input_raises_and_writes_nothing(
    logdir: Path, override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    good: dict[str, Any] = dict.fromkeys(pr_mod._RAW_ARGS, V)
    with sl.create_file_writer(logdir).as_default() as w:
        assert raw_op("x", **good, step=1)
        with pytest.raises(exc, match=pattern) as info:
            raw_op(**{"name": "x", **good, "step": 2, **override})
        assert str(info.value).startswith("pr_curve_raw: ")
        with pytest.raises(exc, match=pattern) as info:
            raw_pb(**{"name": "x", **good, **override})
        assert str(info.value).startswith("pr_curve_raw_pb: ")
    w.close()
    ((step, value),) = file_values(logdir)
    assert step == 1
    np.testing.assert_array_equal(decoded(value), np.tile(V, (6, 1)))


# ---------------------------------------------------------------------------
# The real TensorBoard serves our curves back
# ---------------------------------------------------------------------------
def test_tensorboard_serves_pr_curves(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    data = {}
    for step in range(3):
        labels = rng.random(300) < 0.4
        p = np.clip(labels * 0.3 + rng.random(300) * 0.7, 0, 1).astype(np.float32)
        data[step] = (labels, p)
    raw = [
        np.array([5, 3, 0.0]),
        np.array([5, 1, 0.0]),
        np.array([0, 4, 5.0]),
        np.array([0, 2, 5.0]),
        np.array([0.5, 0.75, 0]),
        np.array([1, 0.6, 0]),
    ]
    with sl.create_file_writer(tmp_path / "run").as_default() as w:
        for step, (labels, p) in data.items():
            sl.pr_curve("cls", labels, p, step=step, num_thresholds=11)
        raw_op("raw", *raw, step=4)
    w.close()
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(
            lambda: tb.get_json("/data/plugin/pr_curves/tags"),
            lambda t: set(t.get("run", {})) == {"cls/pr_curves", "raw/pr_curves"},
        )
        curves = tb.poll(
            lambda: tb.get_json("/data/plugin/pr_curves/pr_curves", run="run", tag="cls/pr_curves"),
            lambda r: len(r.get("run", [])) == 3,
        )["run"]
        (raw_entry,) = tb.get_json(
            "/data/plugin/pr_curves/pr_curves", run="run", tag="raw/pr_curves"
        )["run"]
    assert [c["step"] for c in curves] == [0, 1, 2]
    for c in curves:
        expected = theirs(*data[c["step"]], 11)
        end = len(c["thresholds"])  # TensorBoard trims trailing thresholds with TP + FP = 0
        assert 0 < end <= 11
        np.testing.assert_allclose(c["thresholds"], np.linspace(0, 1, 11)[:end])
        for row, key in enumerate(
            [
                "true_positives",
                "false_positives",
                "true_negatives",
                "false_negatives",
                "precision",
                "recall",
            ]
        ):
            np.testing.assert_array_equal(np.array(c[key], np.float32), expected[row, :end])
    assert raw_entry["step"] == 4
    assert raw_entry["thresholds"] == [0.0, 0.5]  # the last threshold has TP + FP = 0
    assert raw_entry["true_positives"] == [5, 3]
    np.testing.assert_array_equal(
        np.array(raw_entry["recall"], np.float32), np.array([1, 0.6], np.float32)
    )


def test_display_name_as_tensorboard(logdir: Path) -> None:
    # TensorBoard's op/pb/raw_data_op/raw_data_pb take display_name (default: the name).
    labels, preds = np.array([True, False, True]), np.array([0.2, 0.5, 0.9])
    vectors = [np.array([3.0, 2.0, 1.0]), np.array([2.0, 1.0, 0.0]), np.array([0.0, 1.0, 2.0]),
               np.array([0.0, 1.0, 2.0]), np.array([0.6, 0.7, 1.0]), np.array([1.0, 0.7, 0.3])]
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        assert sl.pr_curve("cls", labels, preds, num_thresholds=3, description="d",
                           display_name="Class A")
        assert sl.pr_curve_raw("raw", *vectors, display_name="Raw curve")
        assert sl.pr_curve_raw("empty", *vectors, display_name="")
        with pytest.raises(TypeError, match="pr_curve: 'display_name'"):
            sl.pr_curve("bad", labels, preds, display_name=3)  # type: ignore[arg-type]
    w.close()
    got = [v.metadata.SerializeToString() for _, v in file_values(logdir)]
    tb = tb_pb("cls", labels, preds, num_thresholds=3, description="d", display_name="Class A")
    tb_raw = tb_raw_data_pb("raw", *vectors, num_thresholds=3, display_name="Raw curve")
    tb_empty = tb_raw_data_pb("empty", *vectors, num_thresholds=3, display_name="")
    assert got == [v.metadata.SerializeToString() for v in (tb.value[0], tb_raw.value[0],
                                                            tb_empty.value[0])]
    mine = sl.pr_curve_pb("cls", labels, preds, num_thresholds=3, description="d",
                          display_name="Class A")
    assert as_tb_value(mine).metadata == tb.value[0].metadata
    mine_raw = sl.pr_curve_raw_pb("raw", *vectors, display_name="Raw curve")
    assert as_tb_value(mine_raw).metadata == tb_raw.value[0].metadata
    with pytest.raises(TypeError, match="pr_curve_raw_pb: 'display_name'"):
        sl.pr_curve_raw_pb("raw", *vectors, display_name=b"x")  # type: ignore[arg-type]
