"""read_columns against TensorBoard's own loaders, on every kind and on peers' files.

The reference is TensorBoard's ``plugin_event_accumulator`` (what its Python server uses:
legacy values migrated to tensors, then purged by EventAccumulator's rules), with every
point kept; and, for ``purge="preempt"``, the Rust data server over HTTP.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import summarylib as sl
from summarylib.encoding._tfrecord import frame
from summarylib.errors import DataLossError
from summarylib.reader import read_columns
from summarylib.reader.runs import list_runs
from tests.helpers import only_file
from tests.tbserver import TensorBoardServer

pea = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator")
tensor_util = pytest.importorskip("tensorboard.util.tensor_util")

ALL_KINDS = ("scalars", "histograms", "images", "audio", "text", "tensors")
_KIND_OF_PLUGIN = {
    "scalars": "scalars",
    "histograms": "histograms",
    "images": "images",
    "audio": "audio",
    "text": "text",
}


def tensorboard_series(run_dir: str) -> dict[str, tuple[str, list[tuple[int, float, Any]]]]:
    """``{tag: (kind, [(step, wall_time, array)])}`` as TensorBoard's Python loader keeps them."""
    acc = pea.EventAccumulator(run_dir, size_guidance={pea.TENSORS: 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        try:
            plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        except KeyError:  # no event of the tag carried metadata
            plugin = ""
        points = [
            (e.step, e.wall_time, tensor_util.make_ndarray(e.tensor_proto))
            for e in acc.Tensors(tag)
        ]
        out[tag] = (_KIND_OF_PLUGIN.get(plugin, "tensors"), points)
    return out


def assert_same_as_tensorboard(logdir: Path) -> int:
    """Every run, tag and point of ``read_columns`` equals TensorBoard's; returns the points."""
    ours = read_columns(logdir, ALL_KINDS)
    runs = list_runs(logdir)
    assert set(ours) <= set(runs)
    compared = 0
    for run in runs:
        theirs = tensorboard_series(str(logdir / run) if run != "." else str(logdir))
        mine = ours.get(run, {})
        expected_tags = {
            t for t, (kind, pts) in theirs.items() if pts and _keeps(kind, pts[0][2])
        }
        assert set(mine) == expected_tags, run
        for tag in expected_tags:
            kind, points = theirs[tag]
            cols = mine[tag]
            assert cols.step.dtype == np.int64 and cols.wall_time.dtype == np.float64
            assert cols.step.tolist() == [p[0] for p in points], (run, tag)
            assert cols.wall_time.tolist() == [p[1] for p in points], (run, tag)
            for i, (_, _, arr) in enumerate(points):
                _assert_value(kind, cols.value[i], arr, tag)
            compared += len(points)
    return compared


def _keeps(kind: str, first: np.ndarray) -> bool:
    # We keep DT_FLOAT scalars only, as TensorBoard's data server shows them.
    return kind != "scalars" or first.dtype == np.float32


def _assert_value(kind: str, mine: Any, arr: np.ndarray, tag: str) -> None:
    if kind == "scalars":
        assert np.float32(mine).tobytes() == np.float32(arr.item()).tobytes(), tag
    elif kind == "histograms":
        np.testing.assert_array_equal(mine, arr.astype(np.float64), err_msg=tag)
    elif kind == "images":
        assert mine == [bytes(b) for b in arr[2:]], tag
    elif kind == "audio":
        clips = arr[:, 0] if arr.ndim == 2 else arr  # [k, 2] (clip, label) or [k]
        assert mine == [bytes(b) for b in clips], tag
    elif kind == "text":
        expected = np.vectorize(lambda b: b.decode("utf-8", "replace"), otypes=[object])(arr)
        assert mine == (expected.item() if expected.size == 1 else expected.tolist()), tag
    else:
        np.testing.assert_array_equal(mine, arr, err_msg=tag)


def write_every_kind(logdir: Path) -> None:
    rng = np.random.default_rng(0)
    w = sl.create_file_writer(str(logdir / "ours"))
    with w.as_default():
        for step in range(40):
            sl.scalar("loss", 1.0 / (step + 1), step=step)
            sl.scalars({"acc": step / 40, "lr": 0.1, "a/long/tag/name": -step}, step=step)
            if step % 10 == 0:
                sl.histogram("weights", rng.normal(size=500), step=step)
                sl.histogram("few", [1.0, 2.0, 2.0], step=step, buckets=3)
                sl.image("img", rng.random((2, 4, 5, 3)), step=step)
                sl.audio("snd", rng.uniform(-1, 1, (1, 800, 1)), 8000, step=step)
                sl.text("note", f"step **{step}**", step=step)
                sl.text("table", [["a", "b"], ["c", "d"]], step=step)
                sl.pr_curve("pr", rng.random(50) > 0.5, rng.random(50), step=step)
    w.close()


def test_every_kind_of_ours_equals_tensorboards_loader(tmp_path: Path) -> None:
    write_every_kind(tmp_path)
    assert assert_same_as_tensorboard(tmp_path) > 40 * 4


def _peer_script(writer_cls: Any, logdir: Path, *, audio: bool = True) -> None:
    rng = np.random.default_rng(1)
    w = writer_cls(str(logdir))
    for step in range(30):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalars("metrics", {"a": step, "b": -step}, step)
        if step % 10 == 0:
            w.add_histogram("h", rng.normal(size=200), step)
            w.add_image("img", rng.random((3, 8, 8)), step)
            w.add_text("note", f"hello {step}", step)
            if audio:
                w.add_audio("snd", rng.uniform(-1, 1, 400), step, sample_rate=8000)
            w.add_pr_curve("pr", rng.random(40) > 0.5, rng.random(40), step)
    w.close()


def test_torch_writers_files_equal_tensorboards_loader(tmp_path: Path) -> None:
    tb = pytest.importorskip("torch.utils.tensorboard")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _peer_script(tb.SummaryWriter, tmp_path)
    assert assert_same_as_tensorboard(tmp_path) > 30


def test_tensorboardx_files_equal_tensorboards_loader(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # tensorboardX's add_audio needs the soundfile package, not installed here.
        _peer_script(tbx.SummaryWriter, tmp_path, audio=False)
    assert assert_same_as_tensorboard(tmp_path) > 30


# -- purge rules ----------------------------------------------------------------------------


def _event(step: int, *, wall: float = 1.0, **fields: Any) -> bytes:
    from summarylib.proto import event_pb2

    e = event_pb2.Event(step=step, wall_time=wall, **fields)
    return frame(e.SerializeToString())


def _scalar_event(tag: str, step: int, value: float, *, legacy: bool = True) -> bytes:
    from summarylib.proto import event_pb2, summary_pb2

    v = summary_pb2.Summary.Value(tag=tag, simple_value=value)
    return frame(
        event_pb2.Event(step=step, wall_time=100.0 + step, summary=summary_pb2.Summary(value=[v]))
        .SerializeToString()
    )


def _start(step: int) -> bytes:
    from summarylib.proto import event_pb2

    return _event(step, session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START))


def _write(path: Path, records: list[bytes]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    f = path / "events.out.tfevents.1.host"
    f.write_bytes(b"".join(records))
    return f


@pytest.mark.parametrize("versioned", [True, False], ids=["file-version-2", "no-version"])
def test_restarts_purge_as_eventaccumulator_does(tmp_path: Path, versioned: bool) -> None:
    from summarylib.proto import event_pb2

    records = [_event(0, file_version="brain.Event:2")] if versioned else []
    records += [_start(0)]
    records += [_scalar_event("a", s, s) for s in range(6)]
    records += [_scalar_event("b", s, -s) for s in range(6)]
    records += [_start(3)]  # a restart from step 3's checkpoint
    records += [_scalar_event("a", s, 10 + s) for s in range(3, 8)]
    records += [_scalar_event("b", 2, 99.0)]  # out of order for a no-version file
    records += [_event(1, session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.STOP))]
    _write(tmp_path, records)
    assert assert_same_as_tensorboard(tmp_path) > 0
    ours = read_columns(tmp_path, purge="none")["."]
    assert len(ours["a"].step) == 11  # "none" keeps every point


def test_preempt_matches_the_rust_data_server(tmp_path: Path) -> None:
    steps = [0, 1, 2, 3, 1, 2, 5, 5, 4]
    _write(tmp_path, [_scalar_event("loss", s, float(i)) for i, s in enumerate(steps)])
    mine = read_columns(tmp_path, purge="preempt")["."]["loss"]
    assert mine.step.tolist() == [0, 1, 2, 4]
    assert mine.value.tolist() == [0.0, 4.0, 5.0, 8.0]
    with TensorBoardServer(tmp_path) as tb:
        points = tb.poll(
            lambda: tb.get_json("/data/plugin/scalars/scalars", run=".", tag="loss"),
            lambda pts: len(pts) > 0,
        )
    assert [p[1] for p in points] == mine.step.tolist()
    assert [p[2] for p in points] == mine.value.tolist()


# -- what counts as a scalar, arguments -----------------------------------------------------


def test_double_scalars_are_left_out_as_the_data_server_does(tmp_path: Path) -> None:
    from summarylib.proto import event_pb2, summary_pb2, tensor_pb2

    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = "scalars"
    records = []
    for tag, tensor in (
        ("f32", tensor_pb2.TensorProto(dtype=1, float_val=[1.5])),
        ("f64", tensor_pb2.TensorProto(dtype=2, double_val=[2.5])),
    ):
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=md)
        event = event_pb2.Event(step=0, wall_time=1.0, summary=summary_pb2.Summary(value=[value]))
        records.append(frame(event.SerializeToString()))
    _write(tmp_path, records)
    assert set(read_columns(tmp_path)["."]) == {"f32"}
    with TensorBoardServer(tmp_path) as tb:
        tags = tb.poll(
            lambda: tb.get_json("/data/plugin/scalars/tags"), lambda t: "." in t
        )
    assert set(tags["."]) == {"f32"}


def test_tags_runs_and_bad_arguments(tmp_path: Path) -> None:
    for run in ("r1", "r2"):
        w = sl.create_file_writer(str(tmp_path / run))
        with w.as_default():
            for s in range(3):
                sl.scalars({"x": s, "y": -s}, step=s)
        w.close()
    got = read_columns(tmp_path, tags=["y"], runs=["r2"])
    assert list(got) == ["r2"] and list(got["r2"]) == ["y"]
    cols = got["r2"]["y"]
    assert cols["step"] is cols.step and list(cols) == ["step", "wall_time", "value"]
    assert cols.value.dtype == np.float32 and cols.value.tolist() == [0, -1, -2]
    one = read_columns(only_file(tmp_path / "r1"))
    assert list(one) == ["."] and one["."]["x"].step.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="read_columns: unknown kinds"):
        read_columns(tmp_path, ("scalar",))
    with pytest.raises(ValueError, match="'purge'"):
        read_columns(tmp_path, purge="latest")  # type: ignore[arg-type]


# -- property tests -------------------------------------------------------------------------

_tags = st.sampled_from(["loss", "acc", "a/b", "x" * 150])
_values = st.floats(width=32, allow_nan=False)
_steps = st.integers(min_value=0, max_value=(1 << 40))


@given(
    points=st.lists(st.tuples(_tags, _steps, _values), min_size=1, max_size=300),
    batch=st.booleans(),
)
def test_round_trip_equals_read_scalars(tmp_path_factory: Any, points: Any, batch: bool) -> None:
    logdir = tmp_path_factory.mktemp("rt")
    w = sl.create_file_writer(str(logdir), max_queue=1000)
    with w.as_default():
        for tag, step, value in points:
            if batch:
                sl.scalars({tag: value, "other": -value}, step=step)
            else:
                sl.scalar(tag, value, step=step)
    w.close()
    expected = sl.reader.read_scalars(logdir)["."]
    got = read_columns(logdir, purge="none")["."]
    assert set(got) == set(expected)
    for tag, series in expected.items():
        assert got[tag].step.tolist() == [p[0] for p in series]
        assert got[tag].wall_time.tolist() == [p[1] for p in series]
        assert got[tag].value.tolist() == [p[2] for p in series]


@given(data=st.data())
def test_any_flipped_bit_is_data_loss(tmp_path_factory: Any, data: Any) -> None:
    logdir = tmp_path_factory.mktemp("flip")
    w = sl.create_file_writer(str(logdir))
    with w.as_default():
        for s in range(200):
            sl.scalars({"loss": 1.0 / (s + 1), "lr": 0.1}, step=s)
    w.close()
    path = only_file(logdir)
    raw = bytearray(path.read_bytes())
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= 1 << data.draw(st.integers(0, 7))
    path.write_bytes(bytes(raw))
    with pytest.raises(DataLossError) as info:
        read_columns(logdir)
    assert info.value.path == os.fspath(path)


def test_a_torn_last_record_is_ignored(tmp_path: Path) -> None:
    w = sl.create_file_writer(str(tmp_path))
    with w.as_default():
        for s in range(50):
            sl.scalar("loss", s, step=s)
    w.close()
    path = only_file(tmp_path)
    path.write_bytes(path.read_bytes()[:-7])
    assert read_columns(tmp_path)["."]["loss"].step.tolist() == list(range(49))


def test_large_logs_cross_chunk_boundaries(tmp_path: Path) -> None:
    # More than a chunk (1 MiB) of records, with step varints of 1 to 3 bytes and tags whose
    # events have the same length as others' (a short tag at a long step).
    w = sl.create_file_writer(str(tmp_path), max_queue=100_000)
    with w.as_default():
        for s in range(0, 40_000):
            sl.scalar("ab", s, step=s)
            sl.scalar("abc", -s, step=s * 131)
    w.close()
    got = read_columns(tmp_path)["."]
    assert got["ab"].step.tolist() == list(range(40_000))
    assert got["abc"].step.tolist() == [s * 131 for s in range(40_000)]
    assert got["abc"].value.tolist() == [-s for s in range(40_000)]


def test_records_longer_than_a_chunk(tmp_path: Path) -> None:
    big = np.arange(900_000, dtype=np.float32)  # 3.6 MB: several read chunks
    w = sl.create_file_writer(str(tmp_path))
    with w.as_default():
        sl.scalar("before", 1.0, step=0)
        sl.write("big", big, step=1)
        sl.scalar("after", 2.0, step=2)
    w.close()
    got = read_columns(tmp_path, ("scalars", "tensors"))["."]
    np.testing.assert_array_equal(got["big"].value[0], big)
    assert got["before"].step.tolist() == [0] and got["after"].step.tolist() == [2]


# -- tensor events read in bulk -------------------------------------------------------------


def _tensor_event(tag: str, step: int, wall: float, table: np.ndarray,
                  plugin: str | None) -> bytes:
    from summarylib.proto import event_pb2, summary_pb2, tensor_pb2

    tensor = tensor_pb2.TensorProto(dtype=1 if table.dtype == np.float32 else 2,
                                    tensor_content=table.tobytes())
    for d in table.shape:
        tensor.tensor_shape.dim.add(size=d)
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if plugin is not None:
        value.metadata.plugin_data.plugin_name = plugin
    event = event_pb2.Event(step=step, wall_time=wall, summary=summary_pb2.Summary(value=[value]))
    return frame(event.SerializeToString())


def test_a_models_histograms_every_step_equal_tensorboards_loader(tmp_path: Path) -> None:
    # What watch() makes: a histogram of each of many parameters every step (no short
    # period of record lengths; each tag once or twice a read chunk), tags of one length
    # and of several, a tag longer than 127 bytes, steps whose varint grows, more than a
    # chunk in a file, a PR curve (float32 [6, k]) among them, a second file and a restart.
    rng = np.random.default_rng(3)
    names = [f"parameters/layers.{i}.{part}" for i in range(12)
             for part in ("attn.q.weight", "attn.k.weight", "mlp.fc1.bias")]
    names += ["g" * 140]
    for steps in (range(0, 90), range(120, 140)):
        w = sl.create_file_writer(str(tmp_path / "run"), max_queue=10_000)
        with w.as_default():
            for step in steps:
                for j, name in enumerate(names):
                    sl.histogram(name, rng.normal(size=50) * (j + 1), step=step, buckets=12)
                sl.pr_curve("pr", rng.random(40) > 0.5, rng.random(40), step=step,
                            num_thresholds=9)
        w.close()
    files = sorted((tmp_path / "run").glob("events.out.tfevents.*"))
    assert len(files) == 2 and files[0].stat().st_size > 1 << 20
    with open(files[-1], "ab") as f:  # a restart from step 130
        f.write(_start(130))
        for step in range(130, 136):
            f.write(_tensor_event(names[0], step, 9e9 + step, rng.normal(size=(12, 3)), None))
    assert assert_same_as_tensorboard(tmp_path) > 80 * len(names)
    got = read_columns(tmp_path, ("histograms",))["run"]
    assert got[names[0]].value.shape[1:] == (12, 3)  # one table, not a list


_plugins = st.sampled_from([None, "histograms", "pr_curves", "custom"])


@given(data=st.data())
def test_tensor_events_equal_tensorboards_loader(tmp_path_factory: Any, data: Any) -> None:
    # Tags of float tensors, each with a kind of its own (metadata on its first event, as
    # every writer does, on a later one, or on none), events interleaved at random steps
    # (negative, huge), sometimes of another shape, some repeating the metadata.
    logdir = tmp_path_factory.mktemp("tensors")
    specs = data.draw(st.lists(st.tuples(
        st.sampled_from(["h", "hist/a", "hist/b", "t" * 130]),
        st.sampled_from([np.float32, np.float64]),
        st.sampled_from([(4, 3), (1, 3), (2, 5), (7,)]),
        _plugins,
        st.integers(0, 3),  # the event that first carries the metadata
    ).filter(lambda s: s[3] != "histograms" or s[2][1:] == (3,)),  # a histogram is [k, 3]
        min_size=1, max_size=4, unique_by=lambda s: s[0]))
    count = data.draw(st.integers(2, 60))
    records = [_event(0, file_version="brain.Event:2")]
    seen = dict.fromkeys(range(len(specs)), 0)
    for _ in range(count):
        i = data.draw(st.integers(0, len(specs) - 1))
        tag, dtype, shape, plugin, first_named = specs[i]
        if data.draw(st.integers(0, 9)) == 0:
            shape = (shape[0] + 1, *shape[1:])  # now and then another shape
        table = np.asarray(data.draw(st.lists(
            st.floats(allow_nan=False, width=32), min_size=int(np.prod(shape)),
            max_size=int(np.prod(shape)))), dtype=dtype).reshape(shape)
        named = (plugin if seen[i] == first_named or data.draw(st.integers(0, 19)) == 0
                 else None)
        step = data.draw(st.one_of(st.integers(0, 300), st.integers(-5, 1 << 62)))
        wall = data.draw(st.floats(1.0, 2e9))
        records.append(_tensor_event(tag, step, wall, table, named))
        seen[i] += 1
    _write(logdir, records)
    assert_same_as_tensorboard(logdir)
