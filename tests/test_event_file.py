"""Event files: names, the first event, one file per writer."""

from __future__ import annotations

import os
import re
import socket
import threading
from pathlib import Path

import pytest

import summarylib as sl
from summarylib.reader import iter_records
from tests.helpers import only_file, tb_events

NAME = re.compile(
    r"^events\.out\.tfevents\.(\d{10})\.(?P<host>.+)\.(?P<pid>\d+)\.(?P<n>\d|[a-z]\d{2,})(?P<suffix>.*)$"
)


def test_logdir_is_created_and_first_event_is_on_disk_at_return(logdir: Path) -> None:
    assert not logdir.exists()
    w = sl.create_file_writer(logdir)
    try:
        path = only_file(logdir)
        records = list(iter_records(path))  # read before any flush or close
        assert len(records) == 1
        (first,) = tb_events(path)
        assert first.file_version == "brain.Event:2"
        assert first.source_metadata.writer == "summarylib"
        assert first.wall_time > 1e9
        assert first.step == 0
    finally:
        w.close()


def test_file_name_follows_tf2_pattern(logdir: Path) -> None:
    w = sl.create_file_writer(logdir)
    w.close()
    m = NAME.match(only_file(logdir).name)
    assert m, only_file(logdir).name
    assert m["host"] == socket.gethostname()
    assert int(m["pid"]) == os.getpid()
    assert m["suffix"] == ".v2"
    assert w.path == str(only_file(logdir))


@pytest.mark.parametrize(("suffix", "expected"), [("x", ".x"), (".y", ".y"), ("", "")])
def test_filename_suffix_gets_a_leading_dot(logdir: Path, suffix: str, expected: str) -> None:
    sl.create_file_writer(logdir, filename_suffix=suffix).close()
    m = NAME.match(only_file(logdir).name)
    assert m and m["suffix"] == expected


def test_every_writer_gets_its_own_file(logdir: Path) -> None:
    writers = [sl.create_file_writer(logdir) for _ in range(5)]
    names = {w.path for w in writers}
    for i, w in enumerate(writers):
        with w.as_default():
            sl.scalar("x", float(i), step=0)
        w.close()
    assert len(names) == 5
    values = sorted(tb_events(p)[1].summary.value[0].tensor.tensor_content for p in names)
    assert len(set(values)) == 5  # nobody overwrote anybody


def test_threads_creating_writers_never_share_a_file(logdir: Path) -> None:
    paths: list[str] = []
    lock = threading.Lock()

    def make() -> None:
        w = sl.create_file_writer(logdir)
        with lock:
            paths.append(str(w.path))
        w.close()

    threads = [threading.Thread(target=make) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(set(paths)) == 16
    assert len(list(logdir.iterdir())) == 16


def test_an_existing_file_name_is_never_reused(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Force the same name twice: O_EXCL makes the second writer take another.
    from summarylib.writer import _output as output

    logdir.mkdir()
    taken = logdir / "events.out.tfevents.0000000001.h.1.0.v2"
    taken.write_bytes(b"someone else's data")
    names = iter([taken.name, "events.out.tfevents.0000000001.h.1.1.v2"])
    monkeypatch.setattr(output, "event_file_name", lambda suffix: next(names))
    w = sl.create_file_writer(logdir)
    w.close()
    assert taken.read_bytes() == b"someone else's data"
    assert Path(str(w.path)).name.endswith(".1.1.v2")


def test_unwritable_logdir_fails_at_creation(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(sl.WriteFailedError, match="file"):
        sl.create_file_writer(blocker / "logs")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_logdir_fails_at_creation(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(sl.WriteFailedError, match="ro"):
            sl.create_file_writer(ro)
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize(
    ("kwargs", "exc", "fragment"),
    [
        ({"logdir": None}, ValueError, "'logdir'"),
        ({"logdir": 3}, TypeError, "'logdir'"),
        ({"logdir": ""}, ValueError, "'logdir'"),
        ({"logdir": "gs://"}, ValueError, "not a usable URL"),
        ({"max_queue": -1}, ValueError, "'max_queue'"),
        ({"max_queue": 1.5}, TypeError, "'max_queue'"),
        ({"flush_millis": "10"}, TypeError, "'flush_millis'"),
        ({"filename_suffix": 3}, TypeError, "'filename_suffix'"),
        ({"filename_suffix": "a/b"}, ValueError, "'filename_suffix'"),
        ({"on_error": "ignore"}, ValueError, "'on_error'"),
        ({"max_buffer_bytes": 0}, ValueError, "'max_buffer_bytes'"),
    ],
)
def test_bad_writer_arguments(
    tmp_path: Path, kwargs: dict[str, object], exc: type[Exception], fragment: str
) -> None:
    args = {"logdir": tmp_path / "d", **kwargs}
    with pytest.raises(exc, match=fragment):
        sl.create_file_writer(**args)  # type: ignore[arg-type]
