"""torch's input conventions, checked against torch.utils.tensorboard's own functions.

The oracle is torch's code itself (``_utils.convert_to_HWC``, ``_prepare_video``,
``summary.compute_curve``, ``summary.make_histogram``, ``summary.draw_boxes``), run on the
same random inputs as ours.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from summarylib.ops.histogram_proto import (
    check_rule_bins,
    histogram_proto_bytes,
    make_histogram,
    tensorflow_bins,
)
from summarylib.proto import histogram_pb2
from summarylib.torch_conventions import (
    boxed_image,
    default_log_dir,
    image_hwc,
    pr_curve_data,
    video_frames,
)

tb_utils = pytest.importorskip("torch.utils.tensorboard._utils")
tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")


def torch_image(arr: np.ndarray, fmt: str) -> np.ndarray:
    hwc = tb_utils.convert_to_HWC(arr, fmt)
    scale = tb_summary._calc_scale_factor(hwc)
    return (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


shapes = {
    "CHW": st.tuples(st.sampled_from([1, 3, 4]), st.integers(1, 9), st.integers(1, 9)),
    "HWC": st.tuples(st.integers(1, 9), st.integers(1, 9), st.sampled_from([1, 3, 4])),
    "HW": st.tuples(st.integers(1, 9), st.integers(1, 9)),
    "NCHW": st.tuples(st.integers(1, 11), st.sampled_from([1, 3]), st.integers(1, 5),
                      st.integers(1, 5)),
    "NHWC": st.tuples(st.integers(1, 11), st.integers(1, 5), st.integers(1, 5),
                      st.sampled_from([1, 3])),
}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), fmt=st.sampled_from(sorted(shapes)), dtype=st.sampled_from(
    [np.uint8, np.float32, np.float64]))
def test_image_conversion_equals_torch(data: st.DataObject, fmt: str, dtype: type) -> None:
    shape = data.draw(shapes[fmt])
    if dtype is np.uint8:
        arr = data.draw(hnp.arrays(np.uint8, shape))
    else:  # values beyond [0, 1] too: both clip
        arr = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-0.5, 1.5, width=32)))
    np.testing.assert_array_equal(image_hwc(arr, fmt, "t"), torch_image(arr, fmt))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), t=st.integers(1, 3), c=st.sampled_from([1, 3]),
       uint8=st.booleans(), seed=st.integers(0, 2**16))
def test_video_frames_equal_torch(n: int, t: int, c: int, uint8: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vid = (rng.integers(0, 256, (n, t, c, 4, 5)).astype(np.uint8) if uint8
           else rng.random((n, t, c, 4, 5)).astype(np.float32))
    expected = tb_utils._prepare_video(vid.copy())
    expected = (expected.astype(np.float32) * tb_summary._calc_scale_factor(expected))
    expected = expected.clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(video_frames(vid, "t"), expected)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), t=st.integers(2, 127), seed=st.integers(0, 2**16),
       weighted=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]))
def test_pr_curve_data_equals_torch(n: int, t: int, seed: int, weighted: bool,
                                    dtype: type) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.random(n) > 0.5
    predictions = rng.random(n).astype(dtype)
    predictions[: n // 7] = 1.0  # the top bucket, where floor() edges matter
    weights = rng.random(n) if weighted else None
    expected = tb_summary.compute_curve(labels, predictions, num_thresholds=t, weights=weights)
    ours = pr_curve_data(labels, predictions, t, weights, "t")
    np.testing.assert_array_equal(ours, expected.astype(np.float32))


def torch_histogram_bytes(values: np.ndarray, bins: object, max_bins: int | None) -> bytes:
    """torch's HistogramProto of ``values``, but for the one documented difference: where
    the smallest or largest value is a zero and both zeros are among the values, numpy's
    ``min()``/``max()`` (torch's) pick one by the position of the zeros in its vector loop;
    ours is -0.0 for the minimum when any -0.0 is there and +0.0 for the maximum when any
    +0.0 is, whatever the order (what compiled code computes too)."""
    proto = tb_summary.make_histogram(values.astype(float), bins, max_bins)
    zeros = values[values == 0]
    if proto.min == 0 and np.signbit(zeros).any():
        proto.min = -0.0
    if proto.max == 0 and (~np.signbit(zeros)).any():
        proto.max = 0.0
    return proto.SerializeToString()


@settings(max_examples=80, deadline=None)
@given(values=hnp.arrays(np.float64, st.integers(1, 200),
                         elements=st.floats(-1e6, 1e6, allow_nan=False)),
       bins=st.sampled_from(["tensorflow", "auto", "fd", 1, 7, 30]),
       max_bins=st.sampled_from([None, 1, 3, 50]))
# Both zeros, in both orders: numpy's min() of [-0.0, 0.0] is 0.0 on this machine.
@example(values=np.array([-0.0, 0.0]), bins="tensorflow", max_bins=None)
@example(values=np.array([0.0, -0.0]), bins=7, max_bins=None)
@example(values=np.array([0.0, -0.0, 0.0]), bins="tensorflow", max_bins=3)
def test_make_histogram_equals_torch(values: np.ndarray, bins: object,
                                     max_bins: int | None) -> None:
    edges = tensorflow_bins() if bins == "tensorflow" else bins
    if isinstance(edges, str):
        try:
            check_rule_bins(values, edges)
        except ValueError:
            # Values over many orders of magnitude: the rule asks for more bins than any
            # memory holds. We refuse; torch's writer would try to allocate them.
            with pytest.raises(ValueError, match="bins"):
                make_histogram(values, edges, max_bins)
            return
    assert make_histogram(values, edges, max_bins) == torch_histogram_bytes(values, edges,
                                                                            max_bins)


_EDGES = np.array([-10.0, -1.0, 0.0, 0.5, 1.0, 3.0])


@settings(max_examples=80, deadline=None)
@given(values=hnp.arrays(np.float64, st.integers(1, 60),
                         elements=st.one_of(st.sampled_from([*_EDGES.tolist(), -11.0, 4.0]),
                                            st.floats(-20, 20, allow_nan=False))),
       max_bins=st.sampled_from([None, 2]))
def test_make_histogram_equals_torch_on_explicit_edges(values: np.ndarray,
                                                       max_bins: int | None) -> None:
    # Values on every edge (the last bucket is closed), and outside the edges (not counted).
    assume(((values >= _EDGES[0]) & (values <= _EDGES[-1])).any())  # else both refuse
    assert make_histogram(values, _EDGES, max_bins) == torch_histogram_bytes(values, _EDGES,
                                                                             max_bins)


def test_tensorflow_bins_equal_torchs_default_bins(tmp_path: object) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    w = TorchWriter(str(tmp_path))
    try:
        np.testing.assert_array_equal(tensorflow_bins(), np.array(w.default_bins))
    finally:
        w.close()


@given(vals=st.lists(st.floats(allow_nan=False, width=64), min_size=5, max_size=5),
       limits=st.lists(st.floats(allow_nan=False), max_size=6),
       counts=st.lists(st.floats(0, 1e9), max_size=6))
def test_histogram_proto_bytes_equal_protobuf(vals: list[float], limits: list[float],
                                              counts: list[float]) -> None:
    expected = histogram_pb2.HistogramProto(
        min=vals[0], max=vals[1], num=vals[2], sum=vals[3], sum_squares=vals[4],
        bucket_limit=limits, bucket=counts).SerializeToString()
    ours = histogram_proto_bytes(*vals, np.array(limits, dtype=np.float64),
                                 np.array(counts, dtype=np.float64))
    assert ours == expected


@pytest.mark.parametrize("labels", [None, ["a", "bb"]])
def test_boxes_drawn_as_torch_draws_them(labels: list[str] | None) -> None:
    from PIL import Image

    rng = np.random.default_rng(3)
    hwc = rng.integers(0, 256, (40, 50, 3)).astype(np.uint8)
    boxes = np.array([[2, 3, 20, 30], [10.5, 5, 45, 38]])
    expected = np.asarray(tb_summary.draw_boxes(Image.fromarray(hwc.copy()), boxes, labels))
    np.testing.assert_array_equal(boxed_image(hwc, boxes, labels, 1, "t"), expected)
    assert not np.array_equal(expected, hwc)  # something was drawn


def test_default_log_dir_is_torchs_pattern() -> None:
    import re
    import socket

    d = default_log_dir("_x")
    assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d\d_\d\d-\d\d-\d\d_" + re.escape(
        socket.gethostname()) + "_x", d)


@pytest.mark.parametrize("fmt,shape,msg", [
    ("CHW", (2, 4, 4), "1, 3 or 4 channels"),
    ("CHW", (4, 4), "has 2 dimensions"),
    ("CCW", (3, 4, 4), "ordering"),
    ("NCHW", (0, 3, 4, 4), "no images"),
])
def test_image_conversion_errors_name_the_argument(fmt: str, shape: tuple[int, ...],
                                                   msg: str) -> None:
    with pytest.raises(ValueError, match=msg) as e:
        image_hwc(np.zeros(shape), fmt, "add_image")
    assert str(e.value).startswith("add_image:")
