"""Merging a finished URL event file's objects: TensorBoard's own loader (over moto's S3
server on 127.0.0.1) sees each event once whether it starts after the merge or was
following the run, each byte is uploaded at most twice, and unfinished files are refused."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest

import summarylib as sl
from summarylib.reader import list_runs, read_columns
from tests import test_remote

# The moto S3 server and memory:// fixtures of the URL-logdir tests.
s3 = test_remote.s3
memory_logdir = test_remote.memory_logdir

fsspec = pytest.importorskip("fsspec")


def loss_steps(watcher: object) -> list[int]:
    """The steps of the ``loss`` values that one ``Load()`` of TensorBoard's watcher yields."""
    return [e.step for e in watcher.Load()  # type: ignore[attr-defined]
            for v in e.summary.value if v.tag == "loss"]


def log_flushed(writer: sl.SummaryWriter, steps: range) -> Iterator[int]:
    """Log ``loss`` at each step, flushing each (one object per step); yields each step."""
    with writer.as_default():
        for step in steps:
            sl.scalar("loss", float(step), step=step)
            writer.flush()
            yield step


def object_names(url: str) -> list[str]:
    """The names of the objects of the run at ``url``, sorted (as readers list them)."""
    return [u.rpartition("/")[2] for u in list_runs(url.rpartition("/")[0])[url.rpartition("/")[2]]]


def test_tensorboard_sees_each_event_once_after_compaction_fresh_or_following(s3: str) -> None:
    # One moto server for both cases: TensorBoard's S3 client reads its endpoint once.
    fresh_or_following(s3)
    recent_objects_are_kept(s3)


def fresh_or_following(s3: str) -> None:
    from tests.helpers import tb_directory_watcher

    url = "s3://logs/cmp/run"
    writer = sl.create_file_writer(url)
    follower = tb_directory_watcher(url)  # a TensorBoard following the run as it is written
    seen: list[int] = []
    for step in log_flushed(writer, range(6)):
        if step % 3 == 2:
            seen += loss_steps(follower)
    writer.close()
    seen += loss_steps(follower)
    assert seen == list(range(6))
    names = object_names(url)
    assert len(names) == 8 and names[-1].endswith(".end")  # header, 6 flushes, the end

    out = io.StringIO()
    from summarylib.cli import compact_command

    assert compact_command("s3://logs/cmp", out, grace=0) == 0, out.getvalue()
    assert "8 objects -> 2" in out.getvalue()
    names = object_names(url)
    assert [n.rsplit(".", 1)[1] for n in names] == ["compacted", "end"]
    # The follower sits on the end object: the merged one sorts before it, never read.
    assert loss_steps(follower) == []
    # A TensorBoard started now reads every event once.
    assert loss_steps(tb_directory_watcher(url)) == list(range(6))
    # The follower still follows the run: a later file (a resumed run) reaches it.
    with sl.create_file_writer(url) as again, again.as_default():
        sl.scalar("loss", 99.0, step=6)
    assert loss_steps(follower) == [6]


def recent_objects_are_kept(s3: str) -> None:
    """TensorBoard's loader that sits on an object which is then deleted fails on its next
    reload, for good. A merge takes only objects whose successor is ``grace_secs`` old: here
    objects of ten minutes ago merge, those of the last moments stay, and a follower that
    last loaded a moment ago reads the rest of the run once, without an error."""
    import s3fs

    from summarylib.writer._compaction import compact_file
    from tests.helpers import tb_directory_watcher

    url = "s3://logs/grace/run"
    writer = sl.create_file_writer(url)
    follower = tb_directory_watcher(url)
    seen: list[int] = []
    for step in log_flushed(writer, range(6)):
        if step == 4:
            seen += loss_steps(follower)  # it now sits on the object of step 4
    writer.close()
    fs = s3fs.S3FileSystem()
    base = writer.path.removeprefix("s3://")  # type: ignore[union-attr]
    paths = sorted(fs.find("logs/grace/run"))
    now = time.time()
    # Objects 0..2 (header, steps 0 and 1) uploaded ten minutes ago; the rest just now.
    modified = {p: now - 600 if i <= 2 else now for i, p in enumerate(paths)}
    report = compact_file(fs, base, writer.path, modified=modified, now=now)  # type: ignore[arg-type]
    # Object 2 stays: its successor is recent, so a follower may have been sitting on it.
    assert (report.merged, report.kept_recent) == (2, 5)
    assert report.objects_after == 8 - 2 + 1
    seen += loss_steps(follower)
    assert seen == list(range(6))
    assert loss_steps(tb_directory_watcher(url)) == list(range(6))
    # Later (grace over): the rest merges into a second object; nothing is uploaded twice.
    again = compact_file(fs, base, writer.path, grace_secs=0)  # type: ignore[arg-type]
    assert (again.merged, again.objects_after) == (5, 3)
    assert loss_steps(follower) == []


def test_each_byte_uploaded_at_most_twice_and_an_interrupted_merge_resumes(
    memory_logdir: str,
) -> None:
    from summarylib.writer._compaction import compact_file

    url = f"{memory_logdir}/run"
    writer = sl.create_file_writer(url)
    for _ in log_flushed(writer, range(40)):
        pass
    writer.close()
    fs = fsspec.filesystem("memory")
    base = fs._strip_protocol(writer.path)
    paths = sorted(fs.find(fs._strip_protocol(url)))
    sizes = {p: fs.size(p) for p in paths}
    written = sum(sizes.values())  # what the writer uploaded: each byte once
    kept = fs.cat_file(paths[30])
    now = time.time()
    halfway = {p: now - 600 if i < 20 else now for i, p in enumerate(paths)}
    first = compact_file(fs, base, writer.path, modified=halfway, now=now)  # type: ignore[arg-type]
    second = compact_file(fs, base, writer.path, grace_secs=0)  # type: ignore[arg-type]
    assert first.merged + second.merged == 41  # header + 40 flushes; the end object stays
    assert written + first.bytes_uploaded + second.bytes_uploaded <= 2 * written
    assert len(object_names(url)) == 3
    assert read_columns(url)["."]["loss"].step.tolist() == list(range(40))
    # A merge interrupted between its upload and its delete leaves objects that its merged
    # object holds: put one back, as if its delete never happened.
    fs.pipe_file(paths[30], kept)
    assert len(read_columns(url)["."]["loss"].step.tolist()) == 41  # read twice meanwhile
    resumed = compact_file(fs, base, writer.path, grace_secs=0)  # type: ignore[arg-type]
    assert (resumed.merged, resumed.bytes_uploaded) == (1, 0)
    assert read_columns(url)["."]["loss"].step.tolist() == list(range(40))


def test_unfinished_files_are_refused_and_close_can_compact(
    memory_logdir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from summarylib.cli import compact_command
    from summarylib.writer import _compaction as compaction

    live = sl.create_file_writer(f"{memory_logdir}/live")
    for _ in log_flushed(live, range(3)):
        pass
    out = io.StringIO()
    assert compact_command(memory_logdir, out, grace=0) == 1
    assert f"skipped: {live.path} is still being written" in out.getvalue()
    with pytest.raises(compaction.CompactionError, match="still being written"):
        compaction.compact(live.path, grace_secs=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'url' must be an object-store URL"):
        compaction.compact("/tmp/logs")
    before = len(object_names(f"{memory_logdir}/live"))
    live.close()
    assert len(object_names(f"{memory_logdir}/live")) == before + 1  # the end object

    # compact_on_close (here with no grace, so that this run's objects are old enough).
    monkeypatch.setattr(compaction, "DEFAULT_GRACE_SECS", 0.0)
    url = f"{memory_logdir}/closing"
    writer = sl.create_file_writer(url, compact_on_close=True)
    for _ in log_flushed(writer, range(8)):
        pass
    writer.close()
    assert [n.rsplit(".", 1)[1] for n in object_names(url)] == ["compacted", "end"]
    assert read_columns(url)["."]["loss"].step.tolist() == list(range(8))
    with pytest.raises(TypeError, match="'compact_on_close' must be a bool"):
        sl.create_file_writer(url, compact_on_close="yes")  # type: ignore[arg-type]


def test_summarylib_tail_prints_nothing_twice_across_a_merge(memory_logdir: str) -> None:
    from summarylib.reader.tailing import follow_scalars
    from summarylib.writer._compaction import compact

    url = f"{memory_logdir}/run"
    writer = sl.create_file_writer(url)
    for _ in log_flushed(writer, range(6)):
        pass
    polls = iter(range(4))
    seen: list[int] = []
    for points in follow_scalars(memory_logdir, interval=0.0, from_start=True,
                                 stop=lambda: next(polls, None) is None):
        seen += [p[2] for p in points]
        if len(seen) == 6:  # the follower has read the first objects; the run goes on
            for _ in log_flushed(writer, range(6, 9)):
                pass
            writer.close()
            compact(memory_logdir, grace_secs=0)  # merges objects it read and not yet
    assert seen == list(range(9))


def test_no_live_readers_leaves_one_object_per_file(
    memory_logdir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from summarylib.cli import main

    url = f"{memory_logdir}/run"
    writer = sl.create_file_writer(url)
    for _ in log_flushed(writer, range(5)):
        pass
    writer.close()
    # Merged with the default first (two objects), then told no reader is left: one.
    assert main(["compact", memory_logdir, "--grace", "0"]) == 0
    assert len(object_names(url)) == 2
    assert main(["compact", memory_logdir, "--no-live-readers"]) == 0
    assert "2 objects -> 1" in capsys.readouterr().out
    names = object_names(url)
    assert len(names) == 1 and names[0].endswith(".compacted")
    assert read_columns(url)["."]["loss"].step.tolist() == list(range(5))
    # A merged file stays as it is: nothing to refuse, nothing to merge.
    assert main(["compact", memory_logdir]) == 0
    assert "nothing to merge" in capsys.readouterr().out
    assert main(["compact", "s3x://"]) == 2
    assert main(["compact", f"{memory_logdir}/nothing-here"]) == 2
    assert f"{memory_logdir}/nothing-here" in capsys.readouterr().err
