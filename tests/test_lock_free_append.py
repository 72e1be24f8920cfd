"""The writer's lock-free append: what a caller is told always matches the file.

``BufferedEventWriter.append`` appends without the lock and only then checks
whether the writer closed or parked an error meanwhile. These tests put such a
change exactly into that window (a queue whose ``append`` runs a hook), then
check with a real reader that every call answered True is in the file and no
call that raised is. A stress test does the same with real threads.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable

import pytest

import summarylib as sl
from summarylib.errors import WriteFailedError, WriterClosedError
from summarylib.proto import event_pb2
from summarylib.writer.buffered import BufferedEventWriter

TIMEOUT = 60.0


def steps_in(data: bytes) -> list[int]:
    """The step of every event in TFRecord ``data`` (the file-version event first)."""
    steps, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        steps.append(event_pb2.Event.FromString(data[pos + 12 : pos + 12 + n]).step)
        pos += n + 16
    assert pos == len(data)
    return steps


class HookedQueue(list):  # type: ignore[type-arg]
    """A pending list that runs ``before`` or ``after`` around one append, once."""

    def __init__(self, before: Callable[[], None] | None = None,
                 after: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.before, self.after = before, after

    def append(self, item: object) -> None:
        before, self.before = self.before, None
        if before is not None:
            before()
        super().append(item)
        after, self.after = self.after, None
        if after is not None:
            after()


def hooked_writer(out: sl.MemoryOutput) -> tuple[sl.SummaryWriter, BufferedEventWriter]:
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    res = w._resource
    assert res is not None
    with w.as_default():
        sl.scalar("x", 1.0, step=1)
    w.flush()
    return w, res


def arm(res: BufferedEventWriter, **hooks: Callable[[], None] | None) -> None:
    queue = HookedQueue(**hooks)
    with res._lock:
        assert not res._pending
        res._pending = queue


def test_close_finished_before_the_append_raises_and_writes_nothing() -> None:
    out = sl.MemoryOutput()
    w, res = hooked_writer(out)
    # The caller saw an open writer; close() runs to the end before its append.
    arm(res, before=lambda: res.close(TIMEOUT))
    with w.as_default(), pytest.raises(WriterClosedError):
        sl.scalar("x", 2.0, step=2)
    assert steps_in(out.getvalue()) == [0, 1]
    assert not res._pending  # taken back: nothing left behind


def test_close_that_drains_the_appended_event_acknowledges_it() -> None:
    out = sl.MemoryOutput()
    w, res = hooked_writer(out)
    # close() starts right after the append: its final drain takes the event.
    arm(res, after=lambda: res.close(TIMEOUT))
    with w.as_default():
        assert sl.scalar("x", 2.0, step=2) is True
    assert steps_in(out.getvalue()) == [0, 1, 2]


def test_a_batch_taken_before_the_append_leaves_the_event_queued() -> None:
    out = sl.MemoryOutput()
    w, res = hooked_writer(out)

    def another_event_then_a_flush() -> None:
        sl.scalar("x", 5.0, step=5)
        res.flush(TIMEOUT)  # the writer thread takes the queue's entries meanwhile

    arm(res, before=another_event_then_a_flush)
    with w.as_default():
        assert sl.scalar("x", 2.0, step=2) is True
    w.close()
    assert steps_in(out.getvalue()) == [0, 1, 5, 2]


def test_error_parked_before_the_check_is_raised_and_the_event_dropped() -> None:
    out = sl.MemoryOutput()
    w, res = hooked_writer(out)

    def fail() -> None:
        with res._lock:  # as the writer thread does when a write fails
            res._park(WriteFailedError(res.name, OSError(28, "No space left")), 0, 0)

    arm(res, after=fail)
    with w.as_default():
        with pytest.raises(WriteFailedError, match="No space left"):
            sl.scalars({"a": 2.0}, step=2)
        assert sl.scalars({"a": 3.0}, step=3) is True  # reported once, then going on
    w.close()
    assert steps_in(out.getvalue()) == [0, 1, 3]


def test_error_with_on_error_warn_keeps_the_event() -> None:
    out = sl.MemoryOutput()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9, on_error="warn")
    res = w._resource
    assert res is not None

    def fail() -> None:
        with res._lock:
            res._park(WriteFailedError(res.name, OSError(5, "I/O error")), 0, 0)

    arm(res, after=fail)
    with w.as_default(), pytest.warns(RuntimeWarning, match="I/O error"):
        assert sl.scalar("x", 2.0, step=2) is True
    w.close()
    assert steps_in(out.getvalue()) == [0, 2]


def test_threads_racing_a_close_are_told_the_truth() -> None:
    # Real threads: scalars() (compact records), scalar() and bigger events log until
    # the writer closes under them. Every call that returned True is in the file
    # exactly once; every call after its thread saw WriterClosedError is not.
    with sl.create_writer(sl.MemoryOutput()).as_default():  # imports done, not timed
        sl.text("t", "x", step=0)
    for _ in range(5):
        out = sl.MemoryOutput()
        w = sl.create_writer(out, max_queue=7, flush_millis=1)
        acknowledged: list[list[int]] = [[] for _ in range(4)]
        started = threading.Barrier(5)

        def log(
            k: int,
            w: sl.SummaryWriter = w,
            started: threading.Barrier = started,
            acknowledged: list[list[int]] = acknowledged,
        ) -> None:
            with w.as_default():
                started.wait()
                i = 0
                try:
                    while True:
                        step = k * 10**9 + i
                        if k == 0:
                            ok = sl.scalars({"a": 1.0, "b": 2.0}, step=step)
                        elif k == 1:
                            ok = sl.scalar("c", 3.0, step=step)
                        elif k == 2:
                            ok = sl.text("t", "x" * 5000, step=step)  # above the size limit
                        else:
                            ok = sl.scalars({"d": float(i)}, step=step)
                        assert ok is True
                        acknowledged[k].append(step)
                        i += 1
                except WriterClosedError:
                    return

        threads = [threading.Thread(target=log, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        started.wait()
        threading.Event().wait(0.1)
        w.close()
        for t in threads:
            t.join(TIMEOUT)
            assert not t.is_alive()
        written = steps_in(out.getvalue())[1:]
        expected = sorted(s for steps in acknowledged for s in steps)
        assert sorted(written) == expected
        assert all(acknowledged)  # every thread got some events in
