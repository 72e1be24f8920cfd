"""summarylib.reader: records, events, runs, read_scalars; checked against TensorBoard's loader."""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.encoding._tfrecord import frame
from summarylib.errors import DataLossError
from summarylib.reader import (
    RecordReader,
    event_files,
    iter_events,
    iter_records,
    iter_run_events,
    list_runs,
    read_scalars,
)
from tests.helpers import only_file, tb_events, tb_scalar_points


def _write_run(logdir: Path, points: dict[str, list[tuple[int, float]]]) -> Path:
    with sl.create_file_writer(logdir):
        for tag, series in points.items():
            for step, value in series:
                assert sl.scalar(tag, value, step=step)
    return only_file(logdir)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_round_trip_matches_tensorboard_loader(tmp_path: Path) -> None:
    points = {"loss": [(s, 1.0 / (s + 1)) for s in range(50)], "acc": [(0, 0.5), (7, 0.75)]}
    path = _write_run(tmp_path, points)
    ours = read_scalars(tmp_path)["."]
    theirs = tb_scalar_points(path)
    assert ours.keys() == theirs.keys() == points.keys()
    for tag, series in points.items():
        assert [(s, v) for s, _, v in ours[tag]] == [
            (s, float(np.float32(v))) for s, v in series
        ]
        # Same steps, wall times and values as TensorBoard's own reader, point by point.
        assert ours[tag] == theirs[tag]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**63), 2**63 - 1),
            st.floats(width=32, allow_nan=True, allow_infinity=True),
        ),
        min_size=1,
        max_size=20,
    ),
    st.text(min_size=1, max_size=20).filter(lambda t: "\x00" not in t),
)
def test_property_round_trip_with_tensorboard(
    tmp_path_factory: pytest.TempPathFactory, series: list[tuple[int, float]], tag: str
) -> None:
    logdir = tmp_path_factory.mktemp("run")
    path = _write_run(logdir, {tag: series})
    ours = read_scalars(logdir)["."][tag]
    theirs = tb_scalar_points(path)[tag]
    assert len(ours) == len(theirs) == len(series)
    for (s, wt, v), (ts, twt, tv), (es, ev) in zip(ours, theirs, series, strict=True):
        assert s == ts == es
        assert wt == twt
        assert _same(v, tv) and _same(v, float(np.float32(ev)))


def test_events_equal_tensorboard_events_field_by_field(tmp_path: Path) -> None:
    path = _write_run(tmp_path, {"x": [(1, 2.0), (2, 3.0)]})
    ours = [e.SerializeToString() for e in iter_events(path)]
    theirs = [e.SerializeToString() for e in tb_events(path)]
    assert ours == theirs
    first = next(iter_events(path))
    assert first.file_version == "brain.Event:2"
    assert first.source_metadata.writer == "summarylib"


def test_iter_events_on_directory_reads_files_in_name_order(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with sl.create_file_writer(tmp_path, filename_suffix=f".{name}") as w:
            assert w is not None
            sl.scalar("t", 1.0 if name == "a" else 2.0, step=0)
    files = event_files(tmp_path)
    assert files == sorted(files) and len(files) == 2
    values = [
        v.tensor.tensor_content for e in iter_events(tmp_path) if e.HasField("summary")
        for v in e.summary.value
    ]
    assert values == [struct.pack("<f", 1.0), struct.pack("<f", 2.0)]


def test_list_runs_as_tensorboard_defines_them(tmp_path: Path) -> None:
    for run in ("train", "eval/a", "."):
        with sl.create_file_writer(tmp_path / run):
            sl.scalar("t", 1.0, step=0)
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not an event file")
    runs = list_runs(tmp_path)
    assert sorted(runs) == [".", "eval/a", "train"]
    assert all(len(files) == 1 for files in runs.values())
    assert set(read_scalars(tmp_path)) == {".", "eval/a", "train"}
    # The same directories TensorBoard's own discovery finds.
    from tensorboard.backend.event_processing import io_wrapper

    found = io_wrapper.GetLogdirSubdirectories(str(tmp_path))
    theirs = {os.path.relpath(d, tmp_path) for d in found}
    assert theirs == set(runs)
    with pytest.raises(NotADirectoryError, match="logdir"):
        list_runs(tmp_path / "missing")


def test_iter_run_events_reads_every_run_of_a_logdir(tmp_path: Path) -> None:
    values = {"train": [1.0, 2.0], "eval/a": [3.0], ".": [4.0]}
    for run, series in values.items():
        with sl.create_file_writer(tmp_path / run):
            for step, v in enumerate(series):
                sl.scalar("t", v, step=step)
    with sl.create_file_writer(tmp_path / "train", filename_suffix=".second"):
        sl.scalar("t", 5.0, step=2)  # a run's second file comes after its first

    got: dict[str, list[tuple[int, float]]] = {}
    heads: dict[str, int] = {}
    for run, event in iter_run_events(tmp_path):
        if event.file_version:
            heads[run] = heads.get(run, 0) + 1
        for v in event.summary.value:
            got.setdefault(run, []).append(
                (event.step, struct.unpack("<f", v.tensor.tensor_content)[0])
            )
    assert got == {".": [(0, 4.0)], "eval/a": [(0, 3.0)], "train": [(0, 1.0), (1, 2.0), (2, 5.0)]}
    assert heads == {".": 1, "eval/a": 1, "train": 2}
    # iter_events on the logdir itself is one run: its own file only.
    assert [e.step for e in iter_events(tmp_path) if e.HasField("summary")] == [0]
    # Each run's events are exactly what TensorBoard's loader reads from its files.
    for run, files in list_runs(tmp_path).items():
        ours = [e.SerializeToString() for r, e in iter_run_events(tmp_path) if r == run]
        assert ours == [e.SerializeToString() for f in files for e in tb_events(f)]
    with pytest.raises(NotADirectoryError, match="logdir"):
        next(iter_run_events(tmp_path / "missing"))


def test_truncated_tail_ends_quietly_at_every_cut(tmp_path: Path) -> None:
    path = _write_run(tmp_path, {"x": [(s, float(s)) for s in range(3)]})
    data = path.read_bytes()
    offsets = [r.offset for r in iter_records(path)]
    cut_file = tmp_path / "cut.tfevents"
    for cut in range(offsets[-1] + 1, len(data)):
        cut_file.write_bytes(data[:cut])
        reader = RecordReader(cut_file)
        assert [r.offset for r in reader] == offsets[:-1]
        assert reader.truncated_at == offsets[-1]
        assert reader.end == offsets[-1]


def test_corrupt_payload_raises_with_file_and_offset(tmp_path: Path) -> None:
    path = _write_run(tmp_path, {"x": [(s, float(s)) for s in range(3)]})
    offsets = [r.offset for r in iter_records(path)]
    data = bytearray(path.read_bytes())
    data[offsets[2] + 12 + 3] ^= 0x40  # a payload byte of the third record
    path.write_bytes(bytes(data))
    with pytest.raises(DataLossError) as info:
        list(iter_records(path))
    assert info.value.offset == offsets[2]
    assert info.value.path == os.fspath(path)
    assert "data checksum" in str(info.value) and str(offsets[2]) in str(info.value)
    # Records before the damage are still delivered.
    got = []
    with pytest.raises(DataLossError):
        for r in iter_records(path):
            got.append(r.offset)
    assert got == offsets[:2]


def test_corrupt_length_raises(tmp_path: Path) -> None:
    path = tmp_path / "f.tfevents"
    path.write_bytes(frame(b"hello") + frame(b"world"))
    data = bytearray(path.read_bytes())
    data[len(frame(b"hello")) + 1] ^= 1  # length of the second record
    path.write_bytes(bytes(data))
    with pytest.raises(DataLossError, match="length checksum") as info:
        list(iter_records(path))
    assert info.value.offset == len(frame(b"hello"))


def test_huge_length_with_valid_crc_is_a_truncated_tail_not_an_allocation(tmp_path: Path) -> None:
    from summarylib.encoding._tfrecord import masked_crc32c

    header = struct.pack("<Q", 2**64 - 1)
    path = tmp_path / "f.tfevents"
    path.write_bytes(frame(b"ok") + header + struct.pack("<I", masked_crc32c(header)) + b"xx")
    reader = RecordReader(path)
    assert [r.payload for r in reader] == [b"ok"]
    assert reader.truncated_at == len(frame(b"ok"))


def test_record_that_is_not_an_event_raises(tmp_path: Path) -> None:
    path = tmp_path / "f.tfevents"
    path.write_bytes(frame(b"\xff\xff\xff"))
    with pytest.raises(DataLossError, match="not an Event"):
        list(iter_events(path))


def test_read_scalars_skips_other_plugins_and_reads_legacy_simple_value(tmp_path: Path) -> None:
    from summarylib.proto import summary_pb2

    with sl.create_file_writer(tmp_path) as w:
        assert w is not None
        sl.scalar("loss", 0.25, step=3)
        legacy = summary_pb2.Summary()
        legacy.value.add(tag="old", simple_value=1.5)
        assert sl.write_raw_pb(legacy, step=4)
        sl.write("other", np.arange(3, dtype=np.float32), step=5)
    got = read_scalars(tmp_path)["."]
    assert set(got) == {"loss", "old"}
    assert [(s, v) for s, _, v in got["loss"]] == [(3, 0.25)]
    assert [(s, v) for s, _, v in got["old"]] == [(4, 1.5)]


# tbparse 0.0.9 calls sort_values(inplace=True), which pandas 3 deprecates; not ours to fix.
@pytest.mark.filterwarnings("ignore:The inplace keyword:Warning")
def test_tbparse_reads_our_scalars(tmp_path: Path) -> None:
    tbparse = pytest.importorskip("tbparse")
    points = {"loss": [(s, 0.5 * s) for s in range(10)], "lr": [(0, 0.1), (5, 0.05)]}
    for run in ("a", "b"):
        _write_run(tmp_path / run, points)
    # tbparse files tf.summary (TF2) scalars under .tensors, as it does for TensorFlow's own
    # files (its .scalars holds TF1 simple_value scalars only): ours must land there too.
    reader = tbparse.SummaryReader(os.fspath(tmp_path), extra_columns={"dir_name"})
    assert reader.scalars.empty
    df = reader.tensors
    for run in ("a", "b"):
        sub = df[df["dir_name"] == run]
        for tag, series in points.items():
            rows = sub[sub["tag"] == tag].sort_values("step")
            assert list(rows["step"]) == [s for s, _ in series]
            assert np.allclose(rows["value"], [v for _, v in series])


def _next_counter() -> int:
    # The counter part of the next name this process creates (its digits, whatever the
    # letters around them), read from a fresh name.
    from summarylib.writer._naming import event_file_name

    name = event_file_name(".x", now=0)
    counter = name.rsplit(f".{os.getpid()}.", 1)[1].removesuffix(".x")
    return int("".join(c for c in counter if c.isdigit())) + 1


def test_event_file_names_sort_in_creation_order_for_any_count() -> None:
    from summarylib.writer._naming import counter_text, event_file_name

    numbers = [0, 1, 9, 10, 11, 99, 100, 999, 1000, 10**6 - 1, 10**6, 2**63 - 1, 2**64]
    assert sorted(numbers, key=counter_text) == numbers
    assert [counter_text(n) for n in (0, 9, 10, 123)] == ["0", "9", "a10", "b123"]
    # Names created in one second by one process, past at least one more digit.
    names = [event_file_name(".v2", now=1_700_000_000)]
    while len(names[-1]) == len(names[0]) or len(names) < 20:
        names.append(event_file_name(".v2", now=1_700_000_000))
    assert sorted(names) == names
    assert all(n.startswith("events.out.tfevents.1700000000.") for n in names)


def test_twelve_writers_in_one_second_are_read_in_creation_order_live(tmp_path: Path) -> None:
    from tests.helpers import tb_directory_watcher

    # Start a few writers before the counter gains a digit, so that the twelve straddle it.
    while True:
        n = _next_counter()
        if 10 ** len(str(n)) - n == 5:
            break
    watcher = tb_directory_watcher(tmp_path)
    seen: list[int] = []
    for step in range(12):
        with sl.create_file_writer(tmp_path):
            assert sl.scalar("loss", float(step), step=step)
        # A live TensorBoard reloads between writers: each reload sees the newest file.
        seen += [e.step for e in watcher.Load() if e.HasField("summary")]  # type: ignore[attr-defined]
    assert seen == list(range(12))
    assert [e.step for e in iter_events(tmp_path) if e.HasField("summary")] == list(range(12))
    assert [p[0] for p in read_scalars(tmp_path)["."]["loss"]] == list(range(12))


def _drain(it: object) -> list:
    return list(it)  # type: ignore[call-overload]


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.floats(0, 1), max_size=8))
def test_readers_resume_on_a_growing_file_as_tensorboards_loader(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[float]
) -> None:
    from tensorboard.backend.event_processing import event_file_loader

    tmp = tmp_path_factory.mktemp("grow")
    data = _write_run(tmp / "src", {"x": [(s, float(s)) for s in range(5)], "y": [(0, 1.0)]})
    data_bytes = data.read_bytes()
    path = tmp / "events.out.tfevents.grow"
    path.write_bytes(b"")
    records = iter_records(path)
    events = iter_events(path)
    theirs_loader = event_file_loader.LegacyEventFileLoader(str(path))
    got_records: list = []
    got_events: list = []
    got_theirs: list = []
    for cut in [*sorted(int(c * len(data_bytes)) for c in cuts), len(data_bytes)]:
        with open(path, "r+b") as f:  # grow the file to `cut` bytes (appending only)
            f.seek(0, os.SEEK_END)
            f.write(data_bytes[f.tell() : max(cut, f.tell())])
        got_records += _drain(records)
        got_events += _drain(events)
        got_theirs += _drain(theirs_loader.Load())
        assert [e.SerializeToString() for e in got_events] == [
            e.SerializeToString() for e in got_theirs
        ]
        assert [r.payload for r in got_records] == [e.SerializeToString() for e in got_events]
    assert [r.payload for r in got_records] == [r.payload for r in iter_records(data)]


def test_a_torn_record_is_held_back_until_whole_then_read(tmp_path: Path) -> None:
    path = tmp_path / "f.tfevents"
    whole = frame(b"first") + frame(b"second")
    path.write_bytes(whole[:-3])
    reader = RecordReader(path)
    assert [r.payload for r in reader] == [b"first"]
    assert reader.truncated_at == len(frame(b"first")) == reader.end
    assert next(reader, None) is None  # still torn: nothing, and it stays put
    assert reader.truncated_at == len(frame(b"first"))
    with open(path, "ab") as f:
        f.write(whole[-3:] + frame(b"third"))
    assert [(r.offset, r.payload) for r in reader] == [
        (len(frame(b"first")), b"second"),
        (len(whole), b"third"),
    ]
    assert reader.truncated_at is None and reader.end == path.stat().st_size
