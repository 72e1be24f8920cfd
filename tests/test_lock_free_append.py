"""The writer's lock-free append: what a caller is told always matches the file.

``BufferedEventWriter.append`` appends without the lock and only then checks
whether the writer closed or parked an error meanwhile. These tests put such a
change exactly into that window (a queue whose ``append`` runs a hook), then
check with a real reader that every call answered True is in the file and no
call that raised is. A stress test does the same with real threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import summarylib as sl
from summarylib.errors import WriteFailedError, WriterClosedError
from summarylib.proto import event_pb2
from summarylib.writer._buffered import BufferedEventWriter
from tests.helpers import record_payloads

TIMEOUT = 60.0


def steps_in(data: bytes) -> list[int]:
    """The step of every event in TFRecord ``data`` (the file-version event first)."""
    return [event_pb2.Event.FromString(p).step for p in record_payloads(data)]


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
    with res.lock:
        assert not res.queue.entries
        res.queue.entries = queue


def test_close_finished_before_the_append_raises_and_writes_nothing() -> None:
    out = sl.MemoryOutput()
    w, res = hooked_writer(out)
    # The caller saw an open writer; close() runs to the end before its append.
    arm(res, before=lambda: res.close(TIMEOUT))
    with w.as_default(), pytest.raises(WriterClosedError):
        sl.scalar("x", 2.0, step=2)
    assert steps_in(out.getvalue()) == [0, 1]
    assert not any(isinstance(e, bytes) for e in res.queue.entries)  # taken back


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
        with res.lock:  # as the writer thread does when a write fails
            res.park_error(WriteFailedError(res.name, OSError(28, "No space left")), 0, 0)

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
        with res.lock:
            res.park_error(WriteFailedError(res.name, OSError(5, "I/O error")), 0, 0)

    arm(res, after=fail)
    with w.as_default(), pytest.warns(RuntimeWarning, match="I/O error"):
        assert sl.scalar("x", 2.0, step=2) is True
    w.close()
    assert steps_in(out.getvalue()) == [0, 2]


def test_threads_racing_a_close_are_told_the_truth() -> None:
    # Real threads: scalars() (compact records), scalar() and bigger events log until
    # the writer closes under them. Every call that returned True is in the file
    # exactly once; every call after its thread saw WriterClosedError (or False, once
    # the close cleared the default writer) is not.
    with sl.create_writer(sl.MemoryOutput()).as_default():  # imports done, not timed
        sl.text("t", "x", step=0)
    for _ in range(5):
        out = sl.MemoryOutput()
        w = sl.create_writer(out, max_queue=7, flush_millis=1)
        acknowledged: list[list[int]] = [[] for _ in range(4)]
        refused: list[tuple[int, int, object]] = []
        started = threading.Barrier(5)

        def log(
            k: int,
            w: sl.SummaryWriter = w,
            started: threading.Barrier = started,
            acknowledged: list[list[int]] = acknowledged,
            refused: list[tuple[int, int, object]] = refused,
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
                        if ok is False and not sl.should_record_summaries():
                            return  # close() cleared the default writer: nothing written
                        if ok is not True:
                            refused.append((k, step, ok))  # checked by the main thread
                            return
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
        assert not refused
        assert all(acknowledged)  # every thread got some events in


def test_a_flush_that_counted_a_taken_back_event_still_returns() -> None:
    # flush() counts every queued entry in its target. If one of them is then taken
    # back (its append raced a parked error), the flush must still end, reporting
    # the error, rather than wait for an event that will never be written.
    from summarylib.writer._buffered import Deferred

    out = sl.MemoryOutput()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    res = w._resource
    assert res is not None
    encoding, fail_now = threading.Event(), threading.Event()

    def failing_encoder() -> bytes:
        encoding.set()
        fail_now.wait(TIMEOUT)
        raise ValueError("encoder bug")

    res.append(Deferred(failing_encoder, 10, "a failing event"))
    try:
        _flush_the_failing_event(res, encoding, fail_now)
    finally:
        fail_now.set()
        # This thread was never told of the lost event: its close() covers it and says so.
        with pytest.raises(sl.SummaryError, match="encoder bug"):
            w.close()
    assert steps_in(out.getvalue()) == [0]  # neither event was written


def _flush_the_failing_event(
    res: BufferedEventWriter,
    encoding: threading.Event,
    fail_now: threading.Event,
) -> None:
    from summarylib.errors import SummaryError

    # The writer thread takes the failing event and blocks in its encoder. (start_flush
    # does nothing while the just-started thread holds the lock: ask until it runs.)
    for _ in range(int(TIMEOUT * 100)):
        res.start_flush()
        if encoding.wait(0.01):
            break
    assert encoding.is_set()
    event = b"\x09" + bytes(8) + b"\x10\x07"
    res.queue.entries.append(event)  # a caller's lock-free append, before its check
    flushed: list[BaseException | None] = []

    def flush() -> None:
        try:
            res.flush(TIMEOUT)
            flushed.append(None)
        except BaseException as e:  # reported below
            flushed.append(e)

    flusher = threading.Thread(target=flush)
    flusher.start()
    assert wait_for(lambda: _waiting_in_flush(flusher))  # its target counts `event`
    park = res.park_error
    caller: list[BaseException] = []

    def park_then_check(*args: object) -> None:
        park(*args)  # type: ignore[arg-type]
        res.park_error = park  # type: ignore[method-assign]
        try:
            res.queue.settle(event)  # the caller's check, right after the error is parked
        except SummaryError as e:
            caller.append(e)

    res.park_error = park_then_check  # type: ignore[method-assign]
    fail_now.set()
    flusher.join(TIMEOUT)
    assert not flusher.is_alive()
    assert len(caller) == 1 and "encoder bug" in str(caller[0])
    assert len(flushed) == 1 and not isinstance(flushed[0], TimeoutError)


def _waiting_in_flush(thread: threading.Thread) -> bool:
    # The thread's stack passes through the writer's wait loop: flush() has counted its
    # target and released the lock.
    import sys

    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "wait" and "gate" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def wait_for(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    pause = threading.Event()
    for _ in range(int(timeout * 100)):
        if predicate():
            return True
        pause.wait(0.01)
    return predicate()


def test_a_failed_run_write_does_not_count_the_block_before_it_as_lost() -> None:
    # The writer writes the plain events queued before a run of records, then the run.
    # If the run's write fails, only the run is lost: the block before it is on file,
    # and a flush() that covered only that block must not report a loss.
    from summarylib.writer._output import Output

    class FailingFourthWrite(Output):
        name = "<fails on its fourth write>"

        def __init__(self) -> None:
            self.blocks: list[bytes] = []

        def write(self, data: bytes) -> None:
            if len(self.blocks) == 3:  # file version, first flush, the block, the run
                raise OSError(28, "No space left on device")
            self.blocks.append(data)

    out = FailingFourthWrite()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    res = w._resource
    assert res is not None
    with w.as_default():
        sl.scalars({"a": 1.0, "b": 2.0}, step=0)  # the layout is made
        w.flush()
        sl.scalar("other", 5.0, step=1)  # a plain event: the block before the run
        for step in range(2, 22):
            sl.scalars({"a": 1.0, "b": 2.0}, step=step)  # 20 records: one run
        with pytest.raises(WriteFailedError, match="No space left"):
            w.flush()
    assert b"other" in out.blocks[-1]
    # Events are numbered from 0 (the layout's first event); "other" is number 1.
    assert res.lost_ranges() == [(2, 22)]
    w.close()  # the loss was reported by the flush that covered it


@pytest.mark.parametrize(("max_queue", "flush_millis"), [(10, 0), (0, 10**6), (10, 50)])
def test_the_write_spacing_never_delays_past_flush_millis(
    max_queue: int, flush_millis: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writes that the queue length calls for are spaced COALESCE_SECS apart, but never
    # more than flush_millis, and not at all when every event is to be written at once
    # (max_queue 0; flush_millis=0 makes it 0). With the spacing set to 600 s here, each
    # lone event must still be on file long before that (10 s allowed, against 600).
    from summarylib.writer import _buffered as buffered

    monkeypatch.setattr(buffered, "COALESCE_SECS", 600.0)
    out = sl.MemoryOutput()
    w = sl.create_writer(out, max_queue=max_queue, flush_millis=flush_millis)
    with w.as_default():
        for step in range(1, 4):
            sl.scalar("x", 1.0, step=step)
            assert wait_for(lambda step=step: steps_in(out.getvalue())[-1:] == [step], 10.0)
    w.close()
