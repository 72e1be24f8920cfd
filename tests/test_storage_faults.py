"""Storage faults: full disks, I/O errors, permissions lost, unwritable logdirs.

Faults are injected at the system call (``os.write``/``os.fsync`` as the
file output makes them, including a short write before ENOSPC, as a real
full disk does), and also produced for real: a 64 KiB tmpfs mounted in a
private user+mount namespace (skipped where unprivileged namespaces are not
allowed), a file size limit (RLIMIT_FSIZE → EFBIG, needs no privileges), and
a directory the (unprivileged) process may not write.

Promise under test: the error surfaces on the next call, flush or close as
WriteFailedError naming the file; what was written before stays readable
(whole records only); the writer closes cleanly; ``on_error="warn"`` keeps a
training loop going; nothing hangs.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.reader import RecordReader, iter_events, iter_run_events, read_scalars
from summarylib.writer import _output as output_module
from tests.helpers import only_file, tb_directory_watcher, tb_events, wait_until

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 60.0


class Faults:
    """``os.write``/``os.fsync`` for summarylib.writer._output, with faults on demand."""

    def __init__(self) -> None:
        self.write_error: int | None = None  # errno for the next write()s
        self.space: int | None = None  # bytes left before ENOSPC (then a short write)
        self.fsync_error: int | None = None
        self.ftruncate_error: int | None = None
        self.on_full: Callable[[], None] | None = None
        self.failures = 0

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.write_error is not None:
            self.failures += 1
            raise OSError(self.write_error, os.strerror(self.write_error))
        if self.space is not None:
            if self.space == 0:
                self.failures += 1
                if self.on_full is not None:
                    self.on_full()  # e.g. a reader reading the file as it is now
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            data = memoryview(data)[: self.space]  # a short write, as a filling disk does
            self.space -= len(data)
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.fsync_error is not None:
            raise OSError(self.fsync_error, os.strerror(self.fsync_error))
        os.fsync(fd)

    def ftruncate(self, fd: int, length: int) -> None:
        if self.ftruncate_error is not None:
            raise OSError(self.ftruncate_error, os.strerror(self.ftruncate_error))
        os.ftruncate(fd, length)


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[Faults]:
    f = Faults()
    proxy = types.SimpleNamespace()
    proxy.__dict__.update({k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    proxy.write = f.write
    proxy.fsync = f.fsync
    proxy.ftruncate = f.ftruncate
    monkeypatch.setattr(output_module, "os", proxy)
    yield f


def _readable(path: Path, *, torn_tail: bool = False) -> list[tuple[str, int]]:
    """(tag, step) of every value; the file must be whole records only (or, with
    ``torn_tail``, may end in a partly written block, which readers take for its end)."""
    reader = RecordReader(path)
    records = list(reader)
    if not torn_tail:
        assert reader.truncated_at is None, "a torn record was left in the file"
        assert reader.end == path.stat().st_size
    ours = [(v.tag, e.step) for e in iter_events(path) for v in e.summary.value]
    assert len(records) == 1 + len(ours)
    assert [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value] == ours
    return ours


FAULTS = [errno.ENOSPC, errno.EIO, errno.EACCES, errno.EROFS, errno.EDQUOT]


@pytest.mark.parametrize("code", FAULTS, ids=[errno.errorcode[c] for c in FAULTS])
def test_fault_surfaces_on_flush_and_earlier_data_stays(
    logdir: Path, faults: Faults, code: int
) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    path = only_file(logdir)
    w.set_as_default()
    for i in range(50):
        sl.scalar("ok", float(i), step=i)
    w.flush()
    faults.write_error = code
    for i in range(50):
        assert sl.scalar("lost", float(i), step=i)  # accepted into memory
    with pytest.raises(sl.WriteFailedError) as info:
        w.flush()
    e = info.value
    assert e.errno == code
    assert e.path == str(path) and str(path) in str(e)
    assert os.strerror(code) in str(e) and e.strerror == os.strerror(code)  # says why
    assert isinstance(e, OSError) and isinstance(e.__cause__, OSError)
    assert _readable(path) == [("ok", i) for i in range(50)]
    w.close()  # the failure was reported: closing is clean
    assert w.closed
    with pytest.raises(sl.WriterClosedError):
        w.add_scalar("after", 1.0, 0)
    assert _readable(path) == [("ok", i) for i in range(50)]


def test_a_partly_written_record_is_completed_in_the_same_file_when_space_returns(
    logdir: Path, faults: Faults
) -> None:
    # The disk fills up in the middle of a block: the kernel takes part of it, then
    # refuses. Nothing is cut (a reader tailing the file may have read it); once space
    # returns, the rest of the record the file ends in is written first, and the file
    # goes on with whole records: one file, every reader sees the same events.
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    first = only_file(logdir)
    w.set_as_default()
    for i in range(20):
        sl.scalar("ok", float(i), step=i)
    w.flush()
    whole = first.stat().st_size
    faults.space = 100  # then ENOSPC
    for i in range(1000):
        sl.scalar("big", float(i), step=i)
    with pytest.raises(sl.WriteFailedError) as info:
        w.flush()
    assert info.value.errno == errno.ENOSPC
    assert first.stat().st_size == whole + 100  # nothing was cut
    reader = RecordReader(first)
    list(reader)
    assert reader.truncated_at is not None  # a record still being written, to a reader
    faults.space = None  # space comes back (files deleted elsewhere): the writer goes on
    sl.scalar("later", 1.0, step=99)
    w.close()
    assert [p for p in logdir.iterdir() if "tfevents" in p.name] == [first]
    events = _readable(first)  # whole records only, the same to TensorBoard
    assert events[:20] == [("ok", i) for i in range(20)]
    assert events[-1] == ("later", 99)
    big = events[20:-1]  # the records of the failed block that reached the disk
    assert big and big == [("big", i) for i in range(len(big))]


def test_a_write_cut_at_a_record_boundary_leaves_nothing_to_write_later(
    logdir: Path, faults: Faults
) -> None:
    # The disk took whole records of a block and refused the rest: the file ends in whole
    # records, so nothing of the failed block is written once space returns (its events
    # were reported lost; only a record a reader may be waiting on is completed).
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    path = only_file(logdir)
    w.set_as_default()
    sl.scalar("x", 0.0, step=0)  # the tag's first value carries its metadata
    w.flush()
    before = path.stat().st_size
    sl.scalar("x", 1.0, step=1)
    w.flush()
    faults.space = path.stat().st_size - before  # room for one record of the next block
    sl.scalar("x", 2.0, step=2)
    sl.scalar("x", 3.0, step=3)
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    faults.space = None
    sl.scalar("x", 4.0, step=4)
    w.close()
    assert _readable(path) == [("x", 0), ("x", 1), ("x", 2), ("x", 4)]


def _block_after_one_scalar(logdir: Path, lengths: list[int]) -> tuple[Any, Path, int]:
    """A writer whose file holds one scalar (flushed), with text events of ``lengths``
    queued after it; its file and the size of the file so far."""
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    path = only_file(logdir)
    w.set_as_default()
    sl.scalar("before", 0.0, step=0)
    w.flush()
    for i, n in enumerate(lengths):
        sl.text("t", "x" * n, step=i)
    return w, path, path.stat().st_size


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(0, 400), min_size=1, max_size=6),
       refusals=st.integers(0, 3), data=st.data())
def test_after_a_cut_short_write_a_record_is_in_the_file_iff_the_disk_took_part_of_it(
    tmp_path: Path, faults: Faults, lengths: list[int], refusals: int, data: st.DataObject
) -> None:
    # A block of records of any sizes, cut anywhere (at a record's start, inside its
    # header, data or footer), then refused ``refusals`` more times before space returns:
    # the file is whole records, and of the failed block it holds exactly the records the
    # disk had taken a byte of (the one it cut is completed; none is started later).
    import tempfile

    w, path, start = _block_after_one_scalar(Path(tempfile.mkdtemp(dir=tmp_path)), lengths)
    w.close()
    block = path.stat().st_size - start  # the block's size, written whole
    # Cut anywhere, and often at a record's start or a byte or a header (12) from it.
    starts = [r.offset - start for r in RecordReader(path) if r.offset >= start]
    near = sorted({s + d for s in starts for d in (-1, 0, 1, 12) if 0 <= s + d < block})
    taken = data.draw(st.one_of(st.sampled_from(near), st.integers(0, block - 1)), "taken")
    w, path, start_again = _block_after_one_scalar(Path(tempfile.mkdtemp(dir=tmp_path)),
                                                   lengths)
    assert start_again == start
    faults.space = taken
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    for _ in range(refusals):  # still full: later writes are refused meanwhile
        sl.scalar("refused", 0.0, step=0)
        with pytest.raises(sl.WriteFailedError):
            w.flush()
    faults.space = None
    sl.scalar("after", 0.0, step=1)
    w.close()
    tags = [tag for tag, _ in _readable(path)]  # whole records, the same to TensorBoard
    assert tags[0] == "before" and tags[-1] == "after" and "refused" not in tags
    records = list(RecordReader(path))[1:]  # after the file's version record: one a value
    kept = [r for r, tag in zip(records, tags, strict=True) if tag == "t"]
    assert all(r.offset < start + taken for r in kept)  # none started after the cut
    if taken:  # the record the disk cut is there, whole
        assert kept and kept[-1].offset + 16 + len(kept[-1].payload) >= start + taken
    else:
        assert not kept


def test_a_record_that_cannot_be_completed_ends_its_file_and_a_new_one_follows(
    logdir: Path, faults: Faults
) -> None:
    # Completing the partial record fails for a reason other than space (an I/O error):
    # the torn record stays the end of that file, and later events go to a new file that
    # sorts after it, where readers move on.
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    first = only_file(logdir)
    w.set_as_default()
    for i in range(20):
        sl.scalar("ok", float(i), step=i)
    w.flush()
    whole = first.stat().st_size
    faults.space = 100
    for i in range(1000):
        sl.scalar("big", float(i), step=i)
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    faults.space = None
    faults.write_error = errno.EIO
    sl.scalar("lost", 1.0, step=50)
    with pytest.raises(sl.WriteFailedError) as info:
        w.flush()
    assert info.value.errno == errno.EIO
    faults.write_error = None
    sl.scalar("later", 1.0, step=99)
    w.close()
    files = sorted(p for p in logdir.iterdir() if "tfevents" in p.name)
    assert len(files) == 2 and files[0] == first
    assert first.stat().st_size == whole + 100
    reader = RecordReader(first)
    list(reader)
    assert reader.truncated_at is not None and whole <= reader.truncated_at
    in_first = [(v.tag, e.step) for e in iter_events(first) for v in e.summary.value]
    assert in_first[:20] == [("ok", i) for i in range(20)]
    assert {tag for tag, _ in in_first[20:]} <= {"big"}  # whole records before the tear
    assert _readable(files[1]) == [("later", 99)]  # with its metadata again
    ours = [(v.tag, e.step) for _, e in iter_run_events(logdir) for v in e.summary.value]
    assert ours == [*in_first, ("later", 99)]
    watcher = tb_directory_watcher(logdir)
    theirs = [(v.tag, e.step) for e in watcher.Load() for v in e.summary.value]  # type: ignore[attr-defined]
    assert theirs == ours


def test_a_disk_that_fills_and_empties_again_and_again_keeps_one_file(
    logdir: Path, faults: Faults
) -> None:
    # Hundreds of writes cut short or refused as the disk fills and empties: every event
    # whose flush() returned is read by TensorBoard, once, in order, and the run is still
    # one file (a file per failed write would cost every reader a listing and an open).
    import random

    rng = random.Random(11)
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    w.set_as_default()
    acknowledged: list[int] = []
    failures = 0
    for step in range(400):
        roll = rng.random()
        if roll < 0.2:
            faults.space = rng.randint(0, 60)  # cut short (or refused) at this write
        elif roll < 0.3:
            faults.write_error = errno.ENOSPC  # refused outright
        sl.scalar("x", float(step), step=step)
        try:
            w.flush()
            acknowledged.append(step)
        except sl.WriteFailedError as e:
            assert e.errno == errno.ENOSPC
            failures += 1
        faults.space = faults.write_error = None
    w.close()
    assert failures >= 50
    [path] = [p for p in logdir.iterdir() if "tfevents" in p.name]
    steps = [step for tag, step in _readable(path) if tag == "x"]
    assert set(acknowledged) <= set(steps)
    assert steps == sorted(set(steps))  # no duplicates, in order


def test_a_live_reader_sees_every_event_despite_torn_writes(logdir: Path, faults: Faults) -> None:
    # TensorBoard's loader tails the run while writes are cut short now and then. What it
    # showed is exactly what a fresh reader finds at the end: nothing it read was
    # rewritten under it, and nothing written later was hidden from it.
    import random

    from summarylib.reader.tailing import follow_scalars

    rng = random.Random(3)
    live = tb_directory_watcher(logdir)
    w = sl.create_file_writer(logdir, max_queue=0)  # every event written at once
    w.set_as_default()
    seen: list[int] = []
    failures = 0
    # summarylib's own follower polls alongside: it too waits at a partly written record.
    follower = follow_scalars(logdir, interval=0, from_start=True)
    followed: list[int] = []

    def read_now() -> None:  # the readers poll while the torn bytes are on disk
        seen.extend(e.step for e in live.Load() if e.HasField("summary"))  # type: ignore[attr-defined]
        followed.extend(p[2] for p in next(follower))

    faults.on_full = read_now
    for step in range(300):
        if step % 23 == 7:
            faults.space = rng.randint(1, 40)  # this event's write is cut short
        sl.scalar("x", float(step), step=step)
        try:
            w.flush()
        except sl.WriteFailedError:
            failures += 1
        faults.space = None
        if step % 5 == 0:
            read_now()
    w.close()
    read_now()
    fresh = tb_directory_watcher(logdir)
    final = [e.step for e in fresh.Load() if e.HasField("summary")]  # type: ignore[attr-defined]
    assert failures >= 10
    assert seen == final
    assert len(final) >= 300 - failures
    assert followed == final


def test_fault_surfaces_on_the_next_op_call(logdir: Path, faults: Faults) -> None:
    w = sl.create_file_writer(logdir, max_queue=0)  # every event is written at once
    path = only_file(logdir)
    w.set_as_default()
    sl.scalar("ok", 1.0, step=0)
    w.flush()
    faults.write_error = errno.EIO
    sl.scalar("lost", 2.0, step=1)
    res = w._resource
    assert res is not None
    assert wait_until(lambda: res.error_pending, TIMEOUT)
    with pytest.raises(sl.WriteFailedError, match=str(path)):
        sl.scalar("not-even-queued", 3.0, step=2)  # raises before queueing anything
    faults.write_error = None
    assert sl.scalar("recovered", 4.0, step=3)
    w.close()
    assert _readable(path) == [("ok", 0), ("recovered", 3)]


def test_fault_surfaces_on_close_and_the_writer_is_closed(logdir: Path, faults: Faults) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    path = only_file(logdir)
    w.set_as_default()
    sl.scalar("ok", 1.0, step=0)
    w.flush()
    sl.scalar("lost", 2.0, step=1)
    faults.write_error = errno.ENOSPC
    with pytest.raises(sl.WriteFailedError, match=str(path)):
        w.close()
    assert w.closed
    w.close()  # a second close is a no-op
    faults.write_error = None
    assert _readable(path) == [("ok", 0)]


def test_fsync_failure_at_close_is_reported(logdir: Path, faults: Faults) -> None:
    w = sl.create_file_writer(logdir)
    w.set_as_default()
    sl.scalar("ok", 1.0, step=0)
    faults.fsync_error = errno.EIO
    with pytest.raises(sl.WriteFailedError) as info:
        w.close()
    assert info.value.errno == errno.EIO
    assert w.closed
    faults.fsync_error = None
    assert _readable(only_file(logdir)) == [("ok", 0)]


def test_fsync_true_reports_a_failing_fsync_on_flush(logdir: Path, faults: Faults) -> None:
    w = sl.create_file_writer(logdir, fsync=True)
    w.set_as_default()
    sl.scalar("ok", 1.0, step=0)
    faults.fsync_error = errno.EIO
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    faults.fsync_error = None
    w.close()
    assert _readable(only_file(logdir)) == [("ok", 0)]


def test_on_error_warn_keeps_a_training_loop_going(logdir: Path, faults: Faults) -> None:
    w = sl.create_file_writer(logdir, max_queue=5, on_error="warn")
    path = only_file(logdir)
    w.set_as_default()
    written = []
    with pytest.warns(RuntimeWarning, match=str(path)):
        for step in range(300):
            faults.write_error = errno.ENOSPC if 100 <= step < 200 else None
            assert sl.scalar("loss", float(step), step=step)  # never raises
            if step % 10 == 9:
                w.flush()  # never raises either
            written.append(step)
        faults.write_error = None
        w.close()
    steps = [s for _, s in _readable(path)]
    # Everything outside the outage is there, in order; some events around
    # it may be lost with their batch, nothing is duplicated or torn.
    assert steps == sorted(set(steps))
    assert set(range(100)) <= set(steps) and set(range(210, 300)) <= set(steps)
    assert not set(range(110, 200)) & set(steps)


def test_a_caller_waiting_for_buffer_room_is_released_by_a_failure(
    logdir: Path, faults: Faults
) -> None:
    # The caller waits for room in a full buffer; the write fails instead of
    # making room. The caller must come back (with the error), not hang.
    gate = threading.Event()
    real_write = faults.write

    def slow_failing_write(fd: int, data: bytes | memoryview) -> int:
        if faults.write_error is not None:
            assert gate.wait(TIMEOUT)
        return real_write(fd, data)

    output_module.os.write = slow_failing_write  # type: ignore[attr-defined]
    w = sl.create_file_writer(logdir, max_queue=0, max_buffer_bytes=4096)
    outcome: list[BaseException | None] = []

    def produce() -> None:
        w.set_as_default()
        try:
            for i in range(100_000):
                sl.scalar("x", float(i), step=i)
            outcome.append(None)
        except sl.WriteFailedError as e:
            outcome.append(e)

    faults.write_error = errno.EIO
    t = threading.Thread(target=produce, daemon=True)
    t.start()
    res = w._resource
    assert res is not None
    # The producer waits: queued plus in-flight bytes passed the bound.
    assert wait_until(lambda: res.queue.buffered_bytes() > 4096, TIMEOUT)
    gate.set()
    t.join(TIMEOUT)
    assert not t.is_alive(), "the producer hung"
    assert len(outcome) == 1 and isinstance(outcome[0], sl.WriteFailedError)
    faults.write_error = None
    # This thread's close() covers the lost events and was not told of them yet.
    with pytest.raises(sl.WriteFailedError):
        w.close()
    assert _readable(only_file(logdir)) == []


# -- unwritable logdirs fail at create_file_writer -----------------------------------------


def test_logdir_below_a_regular_file_fails_at_creation(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(sl.WriteFailedError) as info:
        sl.create_file_writer(tmp_path / "file" / "logs")
    assert info.value.errno == errno.ENOTDIR
    assert str(tmp_path / "file" / "logs") in str(info.value)


def test_logdir_that_is_a_file_fails_at_creation(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("x")
    with pytest.raises(sl.WriteFailedError) as info:
        sl.create_file_writer(tmp_path / "logs")
    assert info.value.errno in (errno.EEXIST, errno.ENOTDIR)
    assert str(tmp_path / "logs") in str(info.value)


def _run_child(code: str, *, wrap: list[str] | None = None) -> dict[str, object]:
    proc = subprocess.run(
        [*(wrap or []), sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


_TRY_CREATE = """
import errno, json, os, sys
import summarylib as sl
logdir = sys.argv[-1] if len(sys.argv) > 1 else {logdir!r}
try:
    sl.create_file_writer(logdir)
    print(json.dumps({{"ok": True}}))
except sl.WriteFailedError as e:
    print(json.dumps({{"ok": False, "errno": e.errno, "message": str(e), "path": e.path}}))
"""


def test_logdir_without_write_permission_fails_at_creation(tmp_path: Path) -> None:
    # A real EACCES. Root ignores permissions, so a root test run drops to
    # an unprivileged user (nobody) for the child, in a directory it can reach.
    import tempfile

    wrap: list[str] = []
    base = tmp_path
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and setpriv(1) is missing to drop privileges")
        wrap = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        probe = subprocess.run(
            [*wrap, sys.executable, "-c", "import summarylib"],
            capture_output=True, text=True, timeout=TIMEOUT,
        )
        if probe.returncode != 0:  # e.g. a libpython under /root, unreadable by nobody
            pytest.skip(f"this Python cannot run as an unprivileged user: {probe.stderr.strip()}")
        base = Path(tempfile.mkdtemp())
        base.chmod(0o755)
    try:
        parent = base / "readonly"
        parent.mkdir()
        logdir = parent / "logs"
        parent.chmod(0o755 if wrap else 0o500)  # root-owned 755: nobody may not write
        got = _run_child(_TRY_CREATE.format(logdir=str(logdir)), wrap=wrap)
        parent.chmod(0o700)
    finally:
        if wrap:
            shutil.rmtree(base)
    assert got["ok"] is False
    assert got["errno"] == errno.EACCES
    assert got["path"] == str(logdir) and str(logdir) in got["message"]


# -- real faults -----------------------------------------------------------------------------

_FILL_AND_REPORT = """
import errno, json, os, shutil, sys
import summarylib as sl
from summarylib.reader import iter_events
logdir, copy_to = sys.argv[-2], sys.argv[-1]
w = sl.create_file_writer(logdir, max_queue=100)
w.set_as_default()
ok_steps, error = 0, None
try:
    for step in range(10**6):
        sl.scalar("x", float(step), step=step)
        if step % 100 == 99:
            w.flush()
            ok_steps = step + 1
except sl.WriteFailedError as e:
    error = {"errno": e.errno, "path": e.path, "message": str(e)}
try:
    w.close()
    closed_cleanly = True
except sl.WriteFailedError:
    closed_cleanly = w.closed
shutil.copy(w.path, copy_to)
print(json.dumps({"error": error, "ok_steps": ok_steps, "path": w.path,
                  "closed": closed_cleanly}))
"""


def _check_real_fault(got: dict, copy: Path, code: int) -> None:
    assert got["error"] is not None, got
    assert got["error"]["errno"] == code
    assert got["error"]["path"] == got["path"] and got["path"] in got["error"]["message"]
    assert got["closed"]
    steps = [s for _, s in _readable(copy, torn_tail=True)]
    # Every flushed step survived; whatever else is there is whole and in order (the
    # block the disk cut short stays at the end: nothing is cut from a file).
    assert steps[: got["ok_steps"]] == list(range(got["ok_steps"]))
    assert steps == list(range(len(steps)))


def _mount_point_or_skip(tmp_path: Path) -> Path:
    """A directory where a private namespace can mount a small tmpfs; skip if none can."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to make a private mount namespace")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         f"mount -t tmpfs -o size=64k tmpfs {mnt}"],
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs without root here: {probe.stderr.strip()}")
    return mnt


def test_real_full_filesystem(tmp_path: Path) -> None:
    mnt = _mount_point_or_skip(tmp_path)
    script = tmp_path / "fill.py"
    script.write_text(_FILL_AND_REPORT)
    copy = tmp_path / "copy.tfevents"
    _check_real_fault(_run_in_namespace(mnt, script, copy), copy, errno.ENOSPC)


def _run_in_namespace(mnt: Path, script: Path, copy: Path, size: str = "64k") -> dict:
    proc = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         f'mount -t tmpfs -o size={size} tmpfs "$1" && exec "$2" "$3" "$1/logs" "$4"',
         "sh", str(mnt), sys.executable, str(script), str(copy)],
        cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


_FILL_AND_EMPTY = """
import errno, json, os, shutil, sys
import summarylib as sl
logdir, copy_to = sys.argv[-2], sys.argv[-1]
ballast = os.path.join(os.path.dirname(logdir), "ballast")
w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
w.set_as_default()
acknowledged, failures, errnos = [], 0, set()


def fill_the_disk():
    chunk = b"b" * 4096
    with open(ballast, "ab", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


for step in range(300):
    if step % 3 == 0:
        fill_the_disk()  # another process takes all the space left
    for k in range(40):  # a block of about 2 KB: it often crosses into a page not there
        sl.scalar(f"x{k}", float(step), step=step)
    try:
        w.flush()
        acknowledged.append(step)
    except sl.WriteFailedError as e:
        failures += 1
        errnos.add(e.errno)
        os.remove(ballast)  # ... and gives it back
w.close()
os.makedirs(copy_to)
for name in os.listdir(logdir):
    shutil.copy(os.path.join(logdir, name), copy_to)
print(json.dumps({"acknowledged": acknowledged, "failures": failures,
                  "errnos": sorted(errnos)}))
"""


def test_a_real_disk_that_fills_and_empties_again_and_again_keeps_one_file(
    tmp_path: Path,
) -> None:
    # A real filesystem (a 1 MiB tmpfs) that another process fills, then empties, 100
    # times: the disk cuts blocks short at a page it cannot allocate, or refuses them.
    # The run stays one file, and TensorBoard reads every acknowledged step in it, once.
    mnt = _mount_point_or_skip(tmp_path)
    script = tmp_path / "fill.py"
    script.write_text(_FILL_AND_EMPTY)
    copy = tmp_path / "copy"
    got = _run_in_namespace(mnt, script, copy, size="1m")
    assert got["failures"] == 100 and got["errnos"] == [errno.ENOSPC]
    files = list(copy.iterdir())
    assert len(files) == 1, f"{len(files)} event files"
    events = _readable(files[0])
    per_step: dict[int, int] = {}
    for _, step in events:
        per_step[step] = per_step.get(step, 0) + 1
    assert all(per_step.get(step) == 40 for step in got["acknowledged"])
    assert len(set(events)) == len(events)  # no value twice
    assert [step for _, step in events] == sorted(step for _, step in events)


def test_real_file_size_limit(tmp_path: Path) -> None:
    # RLIMIT_FSIZE needs no privileges: writes past it fail with EFBIG
    # (after a short write), like a quota.
    script = tmp_path / "fill.py"
    script.write_text(
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))\n" + _FILL_AND_REPORT
    )
    copy = tmp_path / "copy.tfevents"
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "logs"), str(copy)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # shutil.copy ran under the same limit: the copy is at most 50,000 bytes,
    # and so is the original.
    _check_real_fault(got, copy, errno.EFBIG)


def test_tags_whose_first_event_was_lost_get_their_metadata_again(
    logdir: Path, faults: Faults
) -> None:
    # TensorBoard lists a tag from the metadata on its first value in a file.
    # When a failed write loses that value, the tag's next value written must
    # carry the metadata again, or the tag stays invisible for the whole file.
    from tensorboard.backend.event_processing import plugin_event_accumulator

    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9, on_error="warn")
    path = only_file(logdir)
    w.set_as_default()
    faults.write_error = errno.EIO
    assert sl.scalar("loss", 1.0, step=0)
    assert sl.scalars({"acc": 0.5, "lr": 0.1}, step=0)
    assert sl.histogram("w", [1.0, 2.0], step=0)
    with pytest.warns(RuntimeWarning, match=str(path)):
        w.flush()
    faults.write_error = None
    for step in (1, 2):
        assert sl.scalar("loss", 1.0 / step, step=step)
        assert sl.scalars({"acc": 0.5, "lr": 0.1}, step=step)
        assert sl.histogram("w", [1.0, 2.0], step=step)
    w.close()
    written = [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value]
    assert written == [(tag, step) for step in (1, 2) for tag in ("loss", "acc", "lr", "w")]
    acc = plugin_event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    assert sorted(acc.PluginTagToContent("scalars")) == ["acc", "loss", "lr"]
    assert list(acc.PluginTagToContent("histograms")) == ["w"]
    assert [e.step for e in acc.Tensors("loss")] == [1, 2]
    assert read_scalars(logdir)["."]["acc"][0][0] == 1


def test_a_fault_writing_at_the_end_of_a_block_is_raised_there(
    logdir: Path, faults: Faults
) -> None:
    # Leaving as_default() writes the block's events (on the calling thread, a few events
    # on a local file): a failure is raised there, as by flush(), and earlier data stays.
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    path = only_file(logdir)
    with w.as_default(step=0):
        sl.scalar("ok", 1.0)
    faults.write_error = errno.EIO
    with pytest.raises(sl.WriteFailedError, match=str(path)), w.as_default(step=1):
        sl.scalar("lost", 2.0)
    faults.write_error = None
    with w.as_default(step=2):
        sl.scalar("again", 3.0)
    assert _readable(path) == [("ok", 0), ("again", 2)]
    w.close()


@pytest.mark.parametrize("on_error", ["raise", "warn"])
def test_a_loss_told_to_a_closing_thread_is_told_to_the_thread_that_logged(
    logdir: Path, faults: Faults, on_error: str
) -> None:
    # B logs, the write fails, A's close() reports it; B's own flush() and close() must
    # still hear of B's lost event (each thread hears of each loss once).
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9, on_error=on_error)
    path = only_file(logdir)
    logged = threading.Event()

    def thread_b_logs() -> None:
        w.set_as_default()  # (leaving an as_default() block would write, and tell B there)
        assert sl.scalar("from_b", 1.0, step=0)
        logged.set()

    faults.write_error = errno.EIO
    b = threading.Thread(target=thread_b_logs)
    b.start()
    b.join()
    assert logged.is_set()
    if on_error == "raise":
        with pytest.raises(sl.WriteFailedError):
            w.close()  # thread A
    else:
        with pytest.warns(RuntimeWarning):
            w.close()
    faults.write_error = None
    told: list[str] = []

    def thread_b_flushes_and_closes() -> None:
        for call in (w.flush, w.close):
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    call()
                told.extend(f"{call.__name__}: {c.message}" for c in caught)
            except sl.WriteFailedError as e:
                told.append(f"{call.__name__}: {e}")

    b = threading.Thread(target=thread_b_flushes_and_closes)
    b.start()
    b.join()
    assert len(told) == 1 and told[0].startswith("flush: ")  # told once, at its first call
    assert str(path) in told[0]
    assert _readable(path) == []
