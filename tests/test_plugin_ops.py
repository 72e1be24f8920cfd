"""The custom scalars, mesh, video and figure kinds: encoders against protobuf, errors,
and what TensorBoard's loader and server make of them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.ops import custom_scalars as cs
from summarylib.ops.video import encode_gif
from summarylib.proto import custom_scalar_pb2, summary_pb2
from tests.helpers import only_file, tb_events
from tests.observe import observe


def only_values(logdir: Path) -> list[summary_pb2.Summary.Value]:
    return [v for e in tb_events(only_file(logdir)) for v in e.summary.value]


# -- custom scalars ----------------------------------------------------------------------
titles = st.text(min_size=1, max_size=6)
tags = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3)
charts = st.dictionaries(titles, st.one_of(
    tags.map(lambda t: ["Multiline", t]),
    st.tuples(*[st.text(min_size=1, max_size=4)] * 3).map(lambda t: ["Margin", list(t)])),
    max_size=3)


@settings(max_examples=60, deadline=None)
@given(layout=st.dictionaries(titles, charts, max_size=3))
def test_layout_from_dict_equals_torchs(layout: dict) -> None:
    from torch.utils.tensorboard.summary import custom_scalars as torch_custom_scalars

    theirs = torch_custom_scalars(layout)
    ours = cs.custom_scalars_pb(layout)
    assert ours.SerializeToString() == theirs.SerializeToString()


def test_layout_message_is_accepted_and_written(tmp_path: Path) -> None:
    from tensorboard.plugins.custom_scalar import layout_pb2

    theirs = layout_pb2.Layout(category=[layout_pb2.Category(title="c", closed=True, chart=[
        layout_pb2.Chart(title="t", multiline=layout_pb2.MultilineChartContent(tag=["a.*"]))])])
    with sl.create_file_writer(tmp_path).as_default(step=3), sl.name_scope("ignored"):
        assert sl.custom_scalars(theirs)
    (value,) = only_values(tmp_path)
    assert value.tag == "custom_scalars__config__"
    assert value.metadata.plugin_data.plugin_name == "custom_scalars"
    assert custom_scalar_pb2.Layout.FromString(value.tensor.string_val[0]).category[0].closed
    assert sl.custom_scalars(theirs) is False  # no default writer


@pytest.mark.parametrize("layout,exc,msg", [
    ([1], TypeError, "'layout' must be a dict"),
    ({"c": {"t": ["Bars", ["a"]]}}, ValueError, "'Multiline' or 'Margin'"),
    ({"c": {"t": ["Margin", ["a", "b"]]}}, ValueError, "needs 3 tags"),
    ({"c": {"t": ["Multiline", "a"]}}, TypeError, "must list its tags"),
    ({"c": ["x"]}, TypeError, "must map chart titles"),
])
def test_layout_errors(tmp_path: Path, layout: object, exc: type, msg: str) -> None:
    with sl.create_file_writer(tmp_path).as_default(), pytest.raises(exc, match=msg):
        sl.custom_scalars(layout)
    assert only_values(tmp_path) == []


# -- mesh --------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 2), n=st.integers(3, 8), f=st.integers(0, 5), colors=st.booleans(),
       seed=st.integers(0, 1000), config=st.sampled_from([None, {"camera": {"fov": 75}}]))
def test_mesh_pb_equals_the_protobuf_construction(b: int, n: int, f: int, colors: bool,
                                                  seed: int, config: dict | None) -> None:
    from tensorboard.plugins.mesh import metadata as tb_mesh
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(seed)
    verts = rng.normal(size=(b, n, 3))
    faces = rng.integers(0, n, (b, f, 3)) if f else None
    cols = rng.integers(0, 256, (b, n, 3)) if colors else None
    ours = sl.mesh_pb("m", verts, faces=faces, colors=cols, config_dict=config)
    parts = [(verts.astype(np.float32), 1)]
    if faces is not None:
        parts.append((faces.astype(np.int32), 2))
    if cols is not None:
        parts.append((cols.astype(np.uint8), 3))
    components = tb_mesh.get_components_bitmask([k for _, k in parts])
    config_json = json.dumps(config, sort_keys=True) if config else "{}"
    expected = summary_pb2.Summary()
    for arr, kind in parts:
        md = tb_mesh.create_summary_metadata("m", None, kind, components, list(arr.shape),
                                             json_config=config_json)
        value = expected.value.add(tag=tb_mesh.get_instance_name("m", kind))
        value.metadata.ParseFromString(md.SerializeToString())
        value.tensor.ParseFromString(tensor_util.make_tensor_proto(arr).SerializeToString())
    assert ours.SerializeToString() == expected.SerializeToString()


@pytest.mark.parametrize("kwargs,exc,msg", [
    ({"vertices": np.zeros((4, 3))}, ValueError, "'vertices' must have shape [B, N, 3]"),
    ({"vertices": np.full((1, 3, 3), np.nan)}, ValueError, "'vertices' must be finite"),
    ({"vertices": np.zeros((1, 3, 3)), "faces": np.array([[[0, 1, 3]]])}, ValueError,
     "'faces' must index vertices in [0, 3)"),
    ({"vertices": np.zeros((1, 3, 3)), "faces": np.zeros((1, 1, 3)) + 0.5}, TypeError,
     "'faces' must hold integers"),
    ({"vertices": np.zeros((1, 3, 3)), "colors": np.full((1, 3, 3), 256)}, ValueError,
     "'colors' must be in [0, 255]"),
    ({"vertices": np.zeros((1, 3, 3)), "colors": np.zeros((1, 2, 3), int)}, ValueError,
     "'colors' must have shape [1, 3, 3]"),
    ({"vertices": np.zeros((1, 3, 3)), "config_dict": {"a": object()}}, TypeError,
     "'config_dict' is not JSON-serializable"),
])
def test_mesh_errors_write_nothing(tmp_path: Path, kwargs: dict, exc: type, msg: str) -> None:
    with sl.create_file_writer(tmp_path).as_default(step=0), pytest.raises(
        exc, match=msg.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
        .replace(")", r"\)")
    ):
        sl.mesh("m", **kwargs)
    assert only_values(tmp_path) == []


def test_mesh_served_by_tensorboard(tmp_path: Path) -> None:
    from tests.tbserver import TensorBoardServer

    verts = np.array([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]], np.float32)
    faces = np.array([[[0, 1, 2], [0, 2, 3]]], np.int32)
    colors = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [9, 9, 9]]], np.uint8)
    with sl.create_file_writer(tmp_path).as_default(step=4):
        sl.mesh("cloud", verts, faces=faces, colors=colors, config_dict={"camera": {"fov": 60}})
    with TensorBoardServer(tmp_path) as tb:
        tags = tb.poll(lambda: tb.get_json("/data/plugin/mesh/tags"), lambda t: "." in t)
        assert list(tags["."]) == ["cloud"]
        for kind, arr in (("VERTEX", verts), ("FACE", faces), ("COLOR", colors)):
            data = tb.get("/data/plugin/mesh/data", run=".", tag="cloud", sample=0,
                          content_type=kind, step=4)
            assert np.frombuffer(data, arr.dtype).tobytes() == arr.tobytes(), kind
        meta = tb.get_json("/data/plugin/mesh/meshes", run=".", tag="cloud", sample=0)
        assert {json.dumps(json.loads(m["config"]), sort_keys=True) for m in meta} == {
            '{"camera": {"fov": 60}}'}


# -- video -------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(frames=hnp.arrays(np.uint8, st.tuples(st.integers(1, 4), st.integers(1, 6),
                                             st.integers(1, 6), st.just(1))),
       fps=st.sampled_from([1, 4, 10, 25.0]))
def test_gif_round_trips_grey_frames(frames: np.ndarray, fps: float) -> None:
    from PIL import Image

    image = Image.open(io.BytesIO(encode_gif(frames, fps)))
    assert image.format == "GIF" and image.info.get("loop") == 0
    # pillow merges equal consecutive frames into one shown longer: rebuild the timeline.
    per_frame = max(1, round(1000 / fps))
    timeline = []
    for i in range(image.n_frames):
        image.seek(i)
        repeats = round(image.info["duration"] / per_frame)
        timeline += [np.asarray(image.convert("L"))] * repeats
    assert len(timeline) == len(frames)
    for shown, frame in zip(timeline, frames, strict=True):
        np.testing.assert_array_equal(shown, frame[:, :, 0])


def test_video_is_served_as_an_image(tmp_path: Path) -> None:
    from tests.tbserver import TensorBoardServer

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (5, 12, 16, 1)).astype(np.uint8)
    with sl.create_file_writer(tmp_path).as_default(step=2):
        assert sl.video("clip", frames, fps=5)
    with TensorBoardServer(tmp_path) as tb:
        entries = tb.poll(lambda: tb.get_json("/data/plugin/images/images", run=".",
                                               tag="clip", sample=0), lambda e: len(e) == 1)
        assert entries[0]["step"] == 2
        gif = tb.get("/data/plugin/images/individualImage?" + entries[0]["query"])
    from PIL import Image

    image = Image.open(io.BytesIO(gif))
    assert image.format == "GIF" and image.size == (16, 12) and image.n_frames == 5


@pytest.mark.parametrize("data,fps,exc,msg", [
    (np.zeros((4, 4, 3)), 4, ValueError, "'data' must have shape [T, H, W, C]"),
    (np.zeros((1, 4, 4, 2)), 4, ValueError, "'data' must have shape"),
    (np.zeros((1, 4, 4, 3)), 0, ValueError, "'fps' must be a number > 0"),
    (np.array([[[["a"]]]]), 4, TypeError, "'data' must hold real numbers"),
])
def test_video_errors(tmp_path: Path, data: np.ndarray, fps: float, exc: type,
                      msg: str) -> None:
    with sl.create_file_writer(tmp_path).as_default(step=0), pytest.raises(
        exc, match=msg.replace("[", r"\[").replace("]", r"\]")
    ):
        sl.video("v", data, fps=fps)
    assert only_values(tmp_path) == []


# -- figure ------------------------------------------------------------------------------
def test_figure_pixels_and_closing(tmp_path: Path) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1), dpi=40)
    fig.patch.set_facecolor((1.0, 0.0, 0.0))
    with sl.create_file_writer(tmp_path).as_default(step=1):
        assert sl.figure("fig", fig, close=False)
        assert plt.fignum_exists(fig.number)
        assert sl.figure("fig", [fig, fig])  # one value of two images, then closed
        assert not plt.fignum_exists(fig.number)
    obs = observe(tmp_path)["."]["fig"]
    first, second = obs.values
    assert len(first) == 1 and len(second) == 2
    assert first[0].shape == (40, 40, 4)
    assert (first[0][..., :3] == [255, 0, 0]).all()
    fig2 = plt.figure()
    assert sl.figure("fig", fig2) is False and not plt.fignum_exists(fig2.number)


def test_figure_errors(tmp_path: Path) -> None:
    with sl.create_file_writer(tmp_path).as_default(step=0):
        with pytest.raises(TypeError, match="figure: 'figure' must be a matplotlib Figure"):
            sl.figure("f", np.zeros((3, 3)))
        with pytest.raises(ValueError, match="figure: 'figure' is an empty list"):
            sl.figure("f", [])
    assert only_values(tmp_path) == []
