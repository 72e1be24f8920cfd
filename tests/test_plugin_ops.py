"""Custom scalars, mesh, video and figure summaries: the ops' bytes against protobuf
serialization and against TensorBoard's and torch's own helpers, bad input (nothing is
written), and what the real TensorBoard server serves from our files."""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import io
import re
import threading
import types
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding._events import summary_event
from summarylib.ops import video as video_mod
from summarylib.ops.custom_scalars import CONFIG_TAG, custom_scalars, custom_scalars_pb, layout_pb
from summarylib.ops.figure import figure, figure_pb, figure_rgb
from summarylib.ops.mesh import mesh, mesh_pb
from summarylib.ops.video import encode_gif, prepare, video, video_pb
from summarylib.proto import custom_scalar_pb2, summary_pb2
from tests.helpers import record_payloads
from tests.tbserver import TensorBoardServer

FIXED_TIME = 1712345678.25


# -- helpers ------------------------------------------------------------------------------
def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def written(call: Callable[[], Any], step: int | None = None) -> list[bytes]:
    """The events (after file_version) that ``call`` writes to a fresh in-memory writer,
    with the wall time fixed."""
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: FIXED_TIME)
    try:
        with w.as_default(step=step):
            call()
    finally:
        w.close()
    events = payloads(out.getvalue())
    assert b"brain.Event:2" in events[0]  # the file_version event
    return events[1:]


def event(step: int, *values: summary_pb2.Summary.Value) -> bytes:
    return summary_event(FIXED_TIME, step, summary_pb2.Summary(value=values).SerializeToString())


def without_metadata(v: summary_pb2.Summary.Value) -> summary_pb2.Summary.Value:
    copy = summary_pb2.Summary.Value()
    copy.CopyFrom(v)
    copy.ClearField("metadata")
    return copy


def assert_rejected(call: Callable[[], Any], exc: type[Exception], pattern: str) -> None:
    """``call`` raises ``exc`` matching ``pattern``; the file then holds only file_version."""
    def run() -> None:
        with pytest.raises(exc, match=pattern):
            call()

    assert written(run, step=0) == []


def decode_gif(blob: bytes) -> list[tuple[np.ndarray, int]]:
    """(RGB frame, duration in ms) of each frame pillow reads from a GIF."""
    from PIL import Image

    im = Image.open(io.BytesIO(blob))
    assert im.format == "GIF" and im.info.get("loop") == 0  # loops forever
    frames = []
    for i in range(getattr(im, "n_frames", 1)):
        im.seek(i)
        frames.append((np.asarray(im.convert("RGB")), int(im.info["duration"])))
    return frames


def timeline(blob: bytes, frame_ms: int) -> np.ndarray:
    """The GIF as one RGB frame per ``frame_ms``: pillow merges equal consecutive frames
    into one shown longer, so repeat each by its duration."""
    out = []
    for frame, duration in decode_gif(blob):
        assert duration % frame_ms == 0
        out += [frame] * (duration // frame_ms)
    return np.stack(out)


def rgb(frames: np.ndarray) -> np.ndarray:
    """uint8 [..., C] frames as pillow shows them in RGB (grey repeated, alpha dropped)."""
    return np.repeat(frames, 3, axis=-1) if frames.shape[-1] == 1 else frames[..., :3]


def decode_png(blob: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(blob)))


# -- custom scalars -----------------------------------------------------------------------
def _valid_regex(s: str) -> bool:
    try:
        re.compile(s)
    except re.error:
        return False
    return True


titles = st.text(max_size=5)
tag_names = st.text(min_size=1, max_size=5)
regexes = st.text(alphabet="ab/_.*+?()", min_size=1, max_size=6).filter(_valid_regex)
charts = st.dictionaries(titles, st.one_of(
    st.lists(regexes, min_size=1, max_size=3).map(lambda t: ["Multiline", t]),
    st.lists(tag_names, min_size=3, max_size=3).map(lambda t: ["Margin", t])), max_size=3)
layouts = st.dictionaries(titles, charts, max_size=3)


@settings(max_examples=60)
@given(layout=layouts)
def test_layout_dict_gives_torchs_bytes(layout: dict[str, Any]) -> None:
    torch_summary = pytest.importorskip("torch.utils.tensorboard.summary")
    assert (custom_scalars_pb(layout).SerializeToString()
            == torch_summary.custom_scalars(layout).SerializeToString())


@settings(max_examples=30)
@given(layout=layouts, step=st.integers(0, 2**63 - 1))
def test_custom_scalars_op_bytes_equal_pb_serialization(
    layout: dict[str, Any], step: int
) -> None:
    events = written(lambda: (custom_scalars(layout, step=step), custom_scalars(layout, step)))
    (value,) = custom_scalars_pb(layout).value
    assert events == [event(step, value), event(step, without_metadata(value))]


def test_layout_messages_step_and_literal_tag() -> None:
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.custom_scalar import layout_pb2

    theirs = layout_pb2.Layout(category=[layout_pb2.Category(title="c", closed=True, chart=[
        layout_pb2.Chart(title="t", multiline=layout_pb2.MultilineChartContent(tag=["a.*"]))])])
    ours = layout_pb(theirs)
    assert isinstance(ours, custom_scalar_pb2.Layout)
    assert ours.SerializeToString() == theirs.SerializeToString()
    assert layout_pb(ours).SerializeToString() == theirs.SerializeToString()

    def calls() -> None:
        with sl.name_scope("ignored"):
            assert custom_scalars(theirs)  # the default step, 7
            assert custom_scalars(ours, step=3)
        sl.set_step(None)
        assert custom_scalars(ours)  # no default step: 0

    steps = []
    for raw in written(calls, step=7):
        ev = event_pb2.Event.FromString(raw)
        (value,) = ev.summary.value
        assert value.tag == CONFIG_TAG == "custom_scalars__config__"
        assert layout_pb2.Layout.FromString(value.tensor.string_val[0]) == theirs
        steps.append(ev.step)
    assert steps == [7, 3, 0]
    assert custom_scalars(theirs) is False  # no default writer
    bad_step: Any = "x"
    assert_rejected(lambda: custom_scalars({}, step=bad_step), TypeError, "^custom_scalars: 'step'")


@pytest.mark.parametrize("layout,exc,fragment", [
    ([1], TypeError, "must be a dict .* or a Layout message, got list"),
    (summary_pb2.Summary(), TypeError, "got a summarylib.Summary message"),
    ({1: {}}, TypeError, "category title must be a str"),
    ({"c": ["x"]}, TypeError, "category 'c' must be a dict"),
    ({"c": {2: ["Multiline", ["a"]]}}, TypeError, "chart title must be a str"),
    ({"c": {"t": ["Multiline"]}}, ValueError, r"chart 't' \(category 'c'\) must be \[kind, "),
    ({"c": {"t": ["Bars", ["a"]]}}, ValueError, "kind must be 'Multiline' or 'Margin'"),
    ({"c": {"t": ["Margin", ["a", "b"]]}}, ValueError, "needs 3 tags"),
    ({"c": {"t": ["Multiline", "a"]}}, TypeError, "must list its tags"),
    ({"c": {"t": ["Multiline", []]}}, ValueError, "at least one tag"),
    ({"c": {"t": ["Multiline", [""]]}}, ValueError, "empty tag"),
    ({"c": {"t": ["Multiline", [3]]}}, TypeError, "tag must be a str"),
    ({"c": {"t": ["Multiline", ["loss("]]}}, ValueError, "not a valid regular expression"),
])
def test_custom_scalars_bad_layouts_write_nothing(layout: Any, exc: type, fragment: str) -> None:
    assert_rejected(lambda: custom_scalars(layout), exc, f"^custom_scalars: 'layout' .*{fragment}")
    with pytest.raises(exc, match=f"^custom_scalars_pb: 'layout' .*{fragment}"):
        custom_scalars_pb(layout)


# -- mesh ---------------------------------------------------------------------------------
@pytest.fixture
def tensorboard_mesh_pb(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """TensorBoard's own ``summary_v2.mesh_pb``. It takes only the dtype constants
    ``tf.float32/int32/uint8`` from TensorFlow (absent here); TensorBoard's TensorFlow
    stub supplies those, the rest is TensorBoard's code unchanged. (``summary.pb``, the
    v1 helper, imports TensorFlow itself and cannot run.)"""
    from tensorboard.compat.tensorflow_stub import dtypes
    from tensorboard.plugins.mesh import summary_v2

    stub = types.SimpleNamespace(float32=dtypes.float32, int32=dtypes.int32, uint8=dtypes.uint8)
    monkeypatch.setattr(summary_v2, "tf", stub)
    return summary_v2.mesh_pb  # type: ignore[no-any-return]


@st.composite
def meshes(draw: st.DrawFn) -> dict[str, Any]:
    b, n, f = draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(0, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vdtype = draw(st.sampled_from(["float64", "float32", "float16", "int16"]))
    kw: dict[str, Any] = {"vertices": (rng.normal(size=(b, n, 3)) * 10).astype(vdtype)}
    if draw(st.booleans()):
        kw["faces"] = rng.integers(0, n, (b, f, 3)).astype(
            draw(st.sampled_from(["int64", "int32", "uint8"])))
    if draw(st.booleans()):
        kw["colors"] = rng.integers(0, 256, (b, n, 3)).astype(
            draw(st.sampled_from(["int64", "uint8", "uint16"])))
    kw["config_dict"] = draw(st.sampled_from([
        None, {}, {"camera": {"cls": "PerspectiveCamera", "fov": 75}},
        {"b": [1, 2.5, True, None], "a": "x"}]))
    kw["description"] = draw(st.sampled_from([None, "", "a *mesh*"]))
    return kw


@settings(max_examples=50)
@given(kw=meshes())
def test_mesh_pb_equals_tensorboards_mesh_pb(
    tensorboard_mesh_pb: Callable[..., Any], kw: dict[str, Any]
) -> None:
    theirs = tensorboard_mesh_pb("pts", **kw)
    assert mesh_pb("pts", **kw).SerializeToString() == theirs.SerializeToString()


@settings(max_examples=30)
@given(kw=meshes(), step=st.integers(0, 2**63 - 1))
def test_mesh_op_bytes_equal_pb_serialization(kw: dict[str, Any], step: int) -> None:
    pb = mesh_pb("a/pts", **kw)
    values = [*pb.value]

    def calls() -> None:
        with sl.name_scope("scope"):  # the name is used literally
            assert mesh("a/pts", step=step, **kw)
            assert mesh("a/pts", step=step, **kw)

    assert written(calls) == [event(step, v) for v in values] + [
        event(step, without_metadata(v)) for v in values]
    assert [v.tag for v in pb.value] == ["a/pts_VERTEX"] + ["a/pts_FACE"] * ("faces" in kw) + [
        "a/pts_COLOR"] * ("colors" in kw)


class ArrayLike:
    """Stands for a framework tensor: numpy sees it only through ``__array__``."""

    def __init__(self, arr: np.ndarray) -> None:
        self._arr = arr

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._arr if dtype is None else self._arr.astype(dtype)


def test_mesh_accepts_array_likes_and_torch_tensors() -> None:
    verts = np.arange(18, dtype=np.float32).reshape(1, 6, 3)
    faces = np.array([[[0, 1, 2], [3, 4, 5]]])
    colors = np.arange(18).reshape(1, 6, 3) * 10
    expected = mesh_pb("m", verts, faces, colors).SerializeToString()
    got = mesh_pb("m", ArrayLike(verts), ArrayLike(faces), ArrayLike(colors))
    assert got.SerializeToString() == expected
    assert mesh_pb("m", verts.tolist(), faces.tolist(), colors.tolist()).SerializeToString() == (
        expected)
    torch = pytest.importorskip("torch")
    tv = torch.tensor(verts, requires_grad=True)  # refuses __array__; read through detach()
    got = mesh_pb("m", tv, torch.tensor(faces), torch.tensor(colors, dtype=torch.uint8))
    assert got.SerializeToString() == expected


V = np.zeros((1, 3, 3))


@pytest.mark.parametrize("kwargs,exc,fragment", [
    ({"vertices": np.zeros((4, 3))}, ValueError, r"'vertices' must have shape \[B, N, 3\], "
     r"got \(4, 3\)"),
    ({"vertices": np.zeros((1, 3, 2))}, ValueError, r"'vertices' must have shape \[B, N, 3\]"),
    ({"vertices": np.zeros((0, 3, 3))}, ValueError, "'vertices' must hold at least one mesh"),
    ({"vertices": np.full((1, 3, 3), np.nan)}, ValueError, "'vertices' must be finite"),
    ({"vertices": np.full((1, 3, 3), 1e39)}, ValueError, "'vertices' must be finite in float32"),
    ({"vertices": np.zeros((1, 3, 3), bool)}, TypeError, "'vertices' must hold real numbers"),
    ({"vertices": [["a", "b", "c"]]}, TypeError, "'vertices' must hold real numbers"),
    ({"vertices": V, "faces": np.array([[[0, 1, 3]]])}, ValueError,
     r"'faces' must hold vertex indices in \[0, 3\), got values in \[0, 3\]"),
    ({"vertices": V, "faces": np.array([[[0, -1, 2]]])}, ValueError, r"'faces' .*\[0, 3\)"),
    ({"vertices": V, "faces": np.zeros((1, 1, 3)) + 0.5}, TypeError, "'faces' must hold integers"),
    ({"vertices": V, "faces": np.zeros((2, 1, 3), int)}, ValueError,
     r"'faces' must have shape \[1, F, 3\]"),
    ({"vertices": V, "faces": np.zeros((1, 3), int)}, ValueError, r"'faces' must have shape"),
    ({"vertices": V, "colors": np.full((1, 3, 3), 256)}, ValueError,
     r"'colors' must be in \[0, 255\]"),
    ({"vertices": V, "colors": np.full((1, 3, 3), -1)}, ValueError, r"'colors' must be in"),
    ({"vertices": V, "colors": np.zeros((1, 2, 3), int)}, ValueError,
     r"'colors' must have shape \[1, 3, 3\]"),
    ({"vertices": V, "colors": np.full((1, 3, 3), 0.5)}, TypeError, "'colors' must hold integers"),
    ({"vertices": V, "config_dict": {"a": object()}}, TypeError,
     "'config_dict' must be JSON-serializable"),
    ({"vertices": V, "config_dict": {"a": float("nan")}}, TypeError, "'config_dict' must be JSON"),
    ({"vertices": V, "config_dict": [("a", 1)]}, TypeError, "'config_dict' must be a dict"),
    ({"vertices": V, "description": 3}, TypeError, "'description' must be a str"),
])
def test_mesh_bad_input_writes_nothing(kwargs: dict[str, Any], exc: type, fragment: str) -> None:
    assert_rejected(lambda: mesh("m", **kwargs), exc, f"^mesh: {fragment}")
    with pytest.raises(exc, match=f"^mesh_pb: {fragment}"):
        mesh_pb("m", **kwargs)


def test_mesh_bad_name_writes_nothing() -> None:
    assert_rejected(lambda: mesh(3, V), TypeError, "^mesh: 'name' must be a str")  # type: ignore[arg-type]
    assert_rejected(lambda: mesh("", V), ValueError, "^mesh: 'name' must be a non-empty")
    assert mesh("m", "not even looked at") is False  # no default writer


# -- video --------------------------------------------------------------------------------
def torch_video_frames(data: np.ndarray) -> np.ndarray:
    """torch's add_video pixels (before moviepy) for our [N, T, H, W, C] layout."""
    summary = pytest.importorskip("torch.utils.tensorboard.summary")
    from torch.utils.tensorboard._utils import _prepare_video

    # torch takes [N, T, C, H, W]
    tensor = _prepare_video(data.transpose(0, 1, 4, 2, 3))  # type: ignore[no-untyped-call]
    scale = summary._calc_scale_factor(tensor)
    out: np.ndarray = (tensor.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return out


videos = st.tuples(st.integers(1, 9), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4),
                   st.sampled_from([1, 3, 4]))


@settings(max_examples=60)
@given(shape=videos, dtype=st.sampled_from(["uint8", "float32", "float64"]),
       seed=st.integers(0, 2**32 - 1))
def test_tiling_and_pixels_equal_torchs(shape: tuple[int, ...], dtype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        data = rng.integers(0, 256, shape).astype(np.uint8)
    else:  # out-of-range values too: both clip
        data = rng.uniform(-0.2, 1.2, shape).astype(dtype)
    ours = prepare(data, "t")
    np.testing.assert_array_equal(ours, torch_video_frames(data))
    np.testing.assert_array_equal(prepare(data[0], "t"), prepare(data[:1], "t"))  # [T, H, W, C]


def test_tiling_layout() -> None:
    # Three one-pixel videos of distinct values: padded to 4, one row (rows = 2**(1 // 2)).
    data = np.arange(1, 4, dtype=np.uint8).reshape(3, 1, 1, 1, 1)
    assert prepare(data, "t")[0, :, :, 0].tolist() == [[1, 2, 3, 0]]
    # Five: padded to 8, rows = 2 ** (2 // 2) = 2, filled row by row.
    data = np.arange(1, 6, dtype=np.uint8).reshape(5, 1, 1, 1, 1)
    assert prepare(data, "t")[0, :, :, 0].tolist() == [[1, 2, 3, 4], [5, 0, 0, 0]]
    # Sixteen: 4 x 4.
    assert prepare(np.zeros((16, 2, 3, 5, 1), np.uint8), "t").shape == (2, 12, 20, 1)


def test_float_pixels_convert_as_torch_does() -> None:
    values = [0, 0.5, 1.0, 1.5, -1, np.nan, np.inf, -np.inf, 0.999, 1e300]
    data = np.array(values).reshape(1, 1, len(values), 1)
    assert prepare(data, "t").reshape(-1).tolist() == [0, 127, 255, 255, 0, 0, 255, 0, 254, 255]
    ml_dtypes = pytest.importorskip("ml_dtypes")
    half = np.array([0.5, 1.0], ml_dtypes.bfloat16).reshape(1, 1, 2, 1)
    assert prepare(half, "t").reshape(-1).tolist() == [127, 255]


@st.composite
def few_colour_frames(draw: st.DrawFn) -> np.ndarray:
    """[T, H, W, C] uint8 frames with at most 16 colours, so GIF keeps them exactly."""
    t, h, w = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    c = draw(st.sampled_from([1, 3, 4]))
    palette = draw(hnp.arrays(np.uint8, (draw(st.integers(1, 16)), c)))
    index = draw(hnp.arrays(np.intp, (t, h, w), elements=st.integers(0, len(palette) - 1)))
    out: np.ndarray = palette[index]
    return out


@settings(max_examples=40)
@given(frames=few_colour_frames(), fps=st.sampled_from([1, 2, 4, 5, 10, 20, 25.0]))
def test_gif_plays_back_our_frames(frames: np.ndarray, fps: float) -> None:
    shown = timeline(encode_gif(frames, fps), round(1000 / fps))
    np.testing.assert_array_equal(shown, rgb(frames))


def test_gif_of_many_colours_is_close() -> None:
    frames = np.random.default_rng(1).integers(0, 256, (2, 16, 16, 3)).astype(np.uint8)
    shown = timeline(encode_gif(frames, 4), 250).astype(int)
    assert shown.shape == frames.shape and np.abs(shown - frames).mean() < 16


@settings(max_examples=15)
@given(frames=few_colour_frames(), n=st.integers(1, 3), step=st.integers(0, 2**63 - 1),
       description=st.sampled_from([None, "a *clip*"]))
def test_video_op_bytes_equal_pb_serialization(
    frames: np.ndarray, n: int, step: int, description: str | None
) -> None:
    data = np.stack([frames] * n)
    (value,) = video_pb("v/clip", data, fps=5, description=description).value

    def calls() -> None:
        with sl.name_scope("v"):
            assert video("clip", data, step, 5, description)
            assert video("clip", data, step, fps=5)

    assert written(calls) == [event(step, value), event(step, without_metadata(value))]


def test_gif_is_encoded_on_the_writer_thread_from_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = []

    def spy(frames: np.ndarray, fps: float) -> bytes:
        threads.append(threading.get_ident())
        return encode_gif(frames, fps)

    monkeypatch.setattr(video_mod, "encode_gif", spy)
    buf = np.zeros((2, 3, 4, 1), np.uint8)

    def calls() -> None:
        for step in range(3):
            buf[:] = 10 * step
            assert video("v", buf, step)
        buf[:] = 255

    events = written(calls)
    assert len(threads) == 3 and threading.get_ident() not in threads
    from tensorboard.compat.proto import event_pb2

    for step, raw in enumerate(events):
        blob = event_pb2.Event.FromString(raw).summary.value[0].tensor.string_val[2]
        assert (timeline(blob, 250) == 10 * step).all()


@pytest.mark.parametrize("data,fps,exc,fragment", [
    (np.zeros((4, 4, 3)), 4, ValueError, r"'data' must have shape \[T, H, W, C\] or "),
    (np.zeros((1, 4, 4, 2)), 4, ValueError, r"'data' must have shape .* got \(1, 4, 4, 2\)"),
    (np.zeros((0, 4, 4, 3)), 4, ValueError, "'data' must have shape"),
    (np.zeros((0, 1, 4, 4, 3)), 4, ValueError, "'data' must have shape"),
    (np.zeros((1, 4, 4, 3), np.int64), 4, TypeError, "'data' must be uint8 .* got dtype int64"),
    (np.zeros((1, 4, 4, 3), bool), 4, TypeError, "'data' must be uint8"),
    (np.array([[[["a"]]]]), 4, TypeError, "'data' must be uint8"),
    (np.zeros((1, 1, 70000, 1), np.uint8), 4, ValueError,
     "'data' makes frames of 70000x1 pixels; a GIF may be at most 65535"),
    (np.zeros((1, 4, 4, 3)), 0, ValueError, "'fps' must be a finite number > 0"),
    (np.zeros((1, 4, 4, 3)), -2.5, ValueError, "'fps' must be a finite number > 0"),
    (np.zeros((1, 4, 4, 3)), float("nan"), ValueError, "'fps' must be a finite number"),
    (np.zeros((1, 4, 4, 3)), "4", TypeError, "'fps' must be a real number, got str"),
    (np.zeros((1, 4, 4, 3)), True, TypeError, "'fps' must be a real number, got bool"),
])
def test_video_bad_input_writes_nothing(data: np.ndarray, fps: Any, exc: type,
                                        fragment: str) -> None:
    assert_rejected(lambda: video("v", data, fps=fps), exc, f"^video: {fragment}")
    with pytest.raises(exc, match=f"^video_pb: {fragment}"):
        video_pb("v", data, fps=fps)


# -- figure -------------------------------------------------------------------------------
def make_figure(width: float = 1.5, height: float = 1.0, dpi: int = 40,
                colour: str = "red") -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [2, 0, 1], color=colour)
    ax.set_title("t")
    return fig


def test_figure_pixels_equal_torchs() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    figs = [make_figure(), make_figure(colour="blue")]
    own = FigureCanvasSVG(figs[0])  # a canvas of another backend: it must stay attached
    ours = figure_rgb(figs, False, "t")
    assert figs[0].canvas is own
    assert ours.shape == (2, 40, 60, 3) and ours.dtype == np.uint8
    assert not (ours[0] == ours[1]).all()
    utils = pytest.importorskip("torch.utils.tensorboard._utils")
    theirs = utils.figure_to_image(figs, close=False)  # [k, 3, h, w]
    np.testing.assert_array_equal(ours, theirs.transpose(0, 2, 3, 1))


def test_figure_op_bytes_equal_pb_and_image_pb() -> None:
    pytest.importorskip("matplotlib")
    figs = [make_figure(), make_figure(colour="green")]
    pb = figure_pb("plots/f", figs, close=False, description="two")
    (value,) = pb.value
    assert pb == sl.image_pb("plots/f", figure_rgb(figs, False, "t"), max_outputs=2,
                             description="two")
    assert list(value.tensor.string_val[:2]) == [b"60", b"40"]
    for blob, pixels in zip(value.tensor.string_val[2:], figure_rgb(figs, False, "t"),
                            strict=True):
        np.testing.assert_array_equal(decode_png(blob), pixels)

    def calls() -> None:
        with sl.name_scope("plots"):
            assert figure("f", figs, 5, close=False, description="two")
            assert figure("f", figs, 5, close=False)

    assert written(calls) == [event(5, value), event(5, without_metadata(value))]


def test_figure_closing_and_backend() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    figs = [plt.figure(figsize=(1, 1), dpi=20) for _ in range(3)]
    backend = matplotlib.get_backend()

    def calls() -> None:
        assert figure("f", figs[0], close=False)
        assert plt.fignum_exists(figs[0].number)
        assert figure("f", figs[:2])
        assert not plt.fignum_exists(figs[0].number) and not plt.fignum_exists(figs[1].number)

    events = written(calls, step=0)
    from tensorboard.compat.proto import event_pb2

    counts = [len(event_pb2.Event.FromString(e).summary.value[0].tensor.string_val) - 2
              for e in events]
    assert counts == [1, 2]  # one image, then one value of two images
    # Nothing recording: nothing drawn, but the figure is still closed as asked.
    assert figure("f", figs[2]) is False and not plt.fignum_exists(figs[2].number)
    assert matplotlib.get_backend() == backend


def test_figure_bad_input_writes_nothing() -> None:
    pytest.importorskip("matplotlib")
    cases: list[tuple[Any, type, str]] = [
        (np.zeros((3, 3)), TypeError, "'figure' must be a matplotlib Figure or a list of "
                                      "them, got ndarray"),
        ([make_figure(), "x"], TypeError, "'figure' must be a matplotlib Figure .* got str"),
        ([], ValueError, "'figure' is an empty list"),
        ([make_figure(), make_figure(width=2)], ValueError,
         r"'figure' must have one size in pixels, got \(width, height\) \[\(60, 40\), \(80, "),
    ]
    for fig, exc, fragment in cases:
        assert_rejected(partial(figure, "f", fig, close=False), exc, f"^figure: .*{fragment}")
        with pytest.raises(exc, match=f"^figure_pb: .*{fragment}"):
            figure_pb("f", fig, close=False)
    bad: Any = b"x"
    assert_rejected(lambda: figure("f", make_figure(), description=bad), TypeError,
                    "^figure: 'description' must be a str")


# -- the real TensorBoard serves each kind --------------------------------------------------
Served = tuple[TensorBoardServer, dict[str, Any]]  # the server, and what it should serve
LAYOUT = {"Losses": {"both": ["Multiline", ["loss/.*"]]},
          "Accuracy": {"band": ["Margin", ["acc", "acc_lo", "acc_hi"]]}}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One logdir with a run per kind, and one TensorBoard server on it."""
    logdir = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(0)
    expected: dict[str, Any] = {}

    with sl.create_file_writer(logdir / "cs").as_default() as w:
        for step in range(3):
            for tag in ("loss/train", "loss/eval", "acc", "acc_lo", "acc_hi"):
                sl.scalar(tag, step / 4, step=step)
        assert custom_scalars(LAYOUT)
    w.close()

    verts = rng.normal(size=(2, 4, 3)).astype(np.float32)
    faces = np.array([[[0, 1, 2], [0, 2, 3]], [[1, 2, 3], [3, 2, 0]]], np.int32)
    colors = rng.integers(0, 256, (2, 4, 3)).astype(np.uint8)
    expected["mesh"] = (verts, faces, colors)
    with sl.create_file_writer(logdir / "mesh").as_default(step=4) as w:
        assert mesh("cloud", verts, faces, colors, config_dict={"camera": {"fov": 60}})
    w.close()

    # Three videos of 4 frames, each frame one of a few colours: GIF keeps them exactly.
    palette = np.array([[255, 0, 0], [0, 128, 255], [20, 200, 40], [250, 250, 250]], np.uint8)
    clips = palette[rng.integers(0, 4, (3, 4, 6, 5))]  # [N, T, H, W, 3]
    # torch's tiling by hand: three padded to four, in one row.
    expected["video"] = np.concatenate([*clips, np.zeros_like(clips[0])], axis=2)
    with sl.create_file_writer(logdir / "video").as_default(step=2) as w:
        assert video("clip", clips, fps=5)
    w.close()

    figs = [make_figure(), make_figure(colour="blue")]
    expected["figure"] = figure_rgb(figs, False, "t")
    with sl.create_file_writer(logdir / "figure").as_default(step=1) as w:
        assert figure("fig", figs)
    w.close()

    with TensorBoardServer(logdir) as tb:
        tb.poll(lambda: tb.get_json("/data/runs"), lambda r: len(r) == 4)
        yield tb, expected


def test_server_serves_the_custom_scalars_layout(served: Served) -> None:
    tb, _ = served
    layout = tb.poll(lambda: tb.get_json("/data/plugin/custom_scalars/layout"), bool)
    assert layout == {"version": 0, "category": [
        {"title": "Losses", "closed": False,
         "chart": [{"title": "both", "multiline": {"tag": ["loss/.*"]}}]},
        {"title": "Accuracy", "closed": False,
         "chart": [{"title": "band", "margin": {"series": [
             {"value": "acc", "lower": "acc_lo", "upper": "acc_hi"}]}}]}]}
    got = tb.get_json("/data/plugin/custom_scalars/scalars", run="cs", tag="loss/.*")
    assert got["regex_valid"] and set(got["tag_to_events"]) == {"loss/train", "loss/eval"}


def test_server_serves_the_mesh_exactly(served: Served) -> None:
    tb, expected = served
    verts, faces, colors = expected["mesh"]
    tags = tb.poll(lambda: tb.get_json("/data/plugin/mesh/tags"), lambda t: "mesh" in t)
    assert tags["mesh"] == {"cloud": {"samples": 2}}
    meta = tb.get_json("/data/plugin/mesh/meshes", run="mesh", tag="cloud", sample=0)
    assert sorted(m["content_type"] for m in meta) == [1, 2, 3]
    assert {(m["step"], m["components"], m["config"]) for m in meta} == {
        (4, 14, '{"camera": {"fov": 60}}')}
    for sample in (0, 1):
        for kind, arr in (("VERTEX", verts), ("FACE", faces), ("COLOR", colors)):
            data = tb.get("/data/plugin/mesh/data", run="mesh", tag="cloud", sample=sample,
                          content_type=kind, step=4)
            assert data == arr[sample].tobytes(), (kind, sample)


def test_server_serves_the_video_as_an_animated_image(served: Served) -> None:
    tb, expected = served
    frames = expected["video"]
    entries = tb.poll(lambda: tb.get_json("/data/plugin/images/images", run="video",
                                          tag="clip", sample=0), lambda e: len(e) == 1)
    assert entries[0]["step"] == 2
    gif = tb.get("/data/plugin/images/individualImage?" + entries[0]["query"])
    np.testing.assert_array_equal(timeline(gif, 200), frames)


def test_server_serves_the_figures(served: Served) -> None:
    tb, expected = served
    for sample, pixels in enumerate(expected["figure"]):
        entries = tb.poll(partial(tb.get_json, "/data/plugin/images/images", run="figure",
                                  tag="fig", sample=sample), lambda e: len(e) == 1)
        assert entries[0]["step"] == 1
        png = tb.get("/data/plugin/images/individualImage?" + entries[0]["query"])
        np.testing.assert_array_equal(decode_png(png), pixels)
