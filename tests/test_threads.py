"""Threads: many writers of one file, close() racing with them, concurrent flush and close.

"Acknowledged" here: an op call that returned True. Every such call must be
in the file, even one that raced with ``close()``; a call that loses the race
raises WriterClosedError, or returns False once close() has cleared the default
writer, and writes nothing. Every wait is bounded.
"""

from __future__ import annotations

import errno
import random
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import summarylib as sl
from summarylib.reader import RecordReader, iter_events
from summarylib.writer._buffered import Deferred
from tests.helpers import only_file, record_payloads, tb_events, wait_until

JOIN = 60.0


def _start(fn: Callable[[], None], n: int = 1) -> list[threading.Thread]:
    threads = [threading.Thread(target=fn, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def _join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(JOIN)
    assert not any(t.is_alive() for t in threads), "a thread hung"


def _steps_by_tag(path: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for e in iter_events(path):
        for v in e.summary.value:
            out.setdefault(v.tag, []).append(e.step)
    return out


def test_16_threads_times_10000_scalars_exactly(logdir: Path) -> None:
    # A small buffer bound makes producers wait for the writer thread too.
    w = sl.create_file_writer(logdir, max_buffer_bytes=64 * 1024)
    errors: list[BaseException] = []
    ids = iter(range(16))
    lock = threading.Lock()

    def produce() -> None:
        with lock:
            k = next(ids)
        try:
            w.set_as_default()
            for i in range(10_000):
                assert sl.scalar(f"t{k}", float(i), step=i)
        except BaseException as e:
            errors.append(e)

    _join(_start(produce, 16))
    w.close()
    assert errors == []
    path = only_file(logdir)
    assert len(list(RecordReader(path))) == 1 + 160_000
    steps = _steps_by_tag(path)
    assert steps == {f"t{k}": list(range(10_000)) for k in range(16)}
    for e in iter_events(path):
        for v in e.summary.value:  # values travel with their own step
            assert struct.unpack("<f", v.tensor.tensor_content) == (e.step,)


def _close_while_writing(logdir: Path, rng: random.Random, threads: int, limit: int) -> None:
    """Close at a random moment while ``threads`` threads log; check the file."""
    w = sl.create_file_writer(
        logdir,
        max_queue=rng.choice([0, 10, 1000]),
        flush_millis=rng.choice([1, 100, 10**9]),
        max_buffer_bytes=rng.choice([2048, 1 << 20]),
    )
    ok = [0] * threads
    unexpected: list[BaseException] = []
    started = threading.Barrier(threads + 1, timeout=JOIN)
    ids = iter(range(threads))
    lock = threading.Lock()

    def produce() -> None:
        with lock:
            k = next(ids)
        w.set_as_default()
        started.wait()
        try:
            for i in range(limit):
                if k % 3 == 2:
                    done = sl.scalars({f"t{k}": float(i), f"t{k}b": float(-i)}, step=i)
                else:
                    done = sl.scalar(f"t{k}", float(i), step=i)
                if not done:
                    break  # close() cleared the default writer: nothing written
                ok[k] += 1  # acknowledged
        except sl.WriterClosedError:
            pass
        except BaseException as e:
            unexpected.append(e)

    ts = _start(produce, threads)
    started.wait()
    time.sleep(rng.random() * 0.02)
    acked_before_close = list(ok)
    w.close(timeout=JOIN)
    _join(ts)
    assert unexpected == []
    steps = _steps_by_tag(only_file(logdir))
    for k in range(threads):
        # Every acknowledged call is there, once, in order; nothing else is.
        assert steps.get(f"t{k}", []) == list(range(ok[k])), k
        assert ok[k] >= acked_before_close[k]
        if k % 3 == 2:
            assert steps.get(f"t{k}b", []) == list(range(ok[k]))


def test_close_while_threads_write_loses_nothing_acknowledged(logdir: Path) -> None:
    _close_while_writing(logdir, random.Random(1), threads=16, limit=10**9)


def test_close_while_writing_50_repetitions(tmp_path: Path) -> None:
    rng = random.Random(2)
    for rep in range(50):
        _close_while_writing(
            tmp_path / str(rep), rng, threads=rng.randint(2, 8), limit=rng.choice([100, 10**9])
        )


class GateOutput(sl.MemoryOutput):
    """Writes (after the first record) block until ``gate`` is set; may fail."""

    def __init__(self) -> None:
        super().__init__(name="/gated/events.out.tfevents.test")
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail_with: int | None = None
        self.writes = 0

    def write(self, data: bytes) -> None:
        if self.writes:
            self.entered.set()
            assert self.gate.wait(JOIN)
        self.writes += 1
        if self.fail_with is not None:
            raise OSError(self.fail_with, "injected")
        super().write(data)


def _records(data: bytes) -> int:
    return len(record_payloads(data))


def test_a_second_concurrent_close_waits_until_the_data_is_written() -> None:
    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    for i in range(100):
        sl.scalar("x", float(i))
    first = _start(lambda: w.close(timeout=JOIN))
    second = _start(lambda: w.close(timeout=JOIN))
    assert out.entered.wait(JOIN)
    second[0].join(0.3)
    # close() returning means "everything is written and the file closed".
    assert second[0].is_alive(), "the second close() returned before the data was written"
    out.gate.set()
    _join(first + second)
    assert out.closed
    assert _records(out.getvalue()) == 101


def test_close_that_timed_out_can_be_completed_later() -> None:
    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    for i in range(10):
        sl.scalar("x", float(i))
    with pytest.raises(TimeoutError):
        w.close(timeout=0.2)
    assert not w.closed
    with pytest.raises(sl.WriterClosedError):
        w.add_scalar("x", 1.0)  # closing has begun: no new events
    assert sl.scalar("x", 1.0) is False  # and it is no longer the default writer
    out.gate.set()
    w.close(timeout=JOIN)
    assert w.closed and out.closed
    assert _records(out.getvalue()) == 11


class HangingSync(sl.MemoryOutput):
    """``sync()`` (fsync) hangs until ``gate`` is set: storage that stops answering."""

    def __init__(self) -> None:
        super().__init__(name="/hanging/events.out.tfevents.test")
        self.gate = threading.Event()
        self.syncing = threading.Event()

    def sync(self) -> None:
        self.syncing.set()
        assert self.gate.wait(JOIN)


def test_close_and_flush_keep_their_deadline_while_fsync_hangs() -> None:
    out = HangingSync()
    w = sl.create_writer(out, max_queue=10**6)
    res = w._resource
    assert res is not None
    w.set_as_default(step=0)
    for i in range(10):
        sl.scalar("x", float(i))
    with pytest.raises(TimeoutError):
        w.close(timeout=0.2)
    assert out.syncing.wait(JOIN)  # the final fsync has begun and hangs
    assert not w.closed
    with pytest.raises(TimeoutError):
        w.close(timeout=0.1)  # again: still bounded
    results: list[object] = []

    def flush_meanwhile() -> None:
        try:
            w.flush(timeout=0.1)  # the events are written: only the fsync hangs
            results.append("flushed")
            res.flush(0.1, sync=True)  # waiting for that fsync times out
        except BaseException as e:
            results.append(e)

    _join(_start(flush_meanwhile))  # neither waits for the hanging fsync
    assert results[0] == "flushed" and isinstance(results[1], TimeoutError), results
    with pytest.raises(sl.WriterClosedError):
        w.add_scalar("x", 1.0)
    out.gate.set()
    w.close(timeout=JOIN)  # finishes the job
    assert w.closed and out.closed
    assert _records(out.getvalue()) == 11


def test_every_flush_that_covered_lost_events_reports_it() -> None:
    # Two threads each log and flush; the batch holding both their events
    # fails. flush() returning normally means "written", so both must raise,
    # even though one parked error is shared between them.
    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    results: dict[str, BaseException | None] = {}
    both_logged = threading.Barrier(2, timeout=JOIN)

    def log_and_flush(name: str) -> None:
        w.set_as_default(step=0)
        sl.scalar(name, 1.0)
        both_logged.wait()
        try:
            w.flush(timeout=JOIN)
            results[name] = None
        except sl.WriteFailedError as e:
            results[name] = e

    ts = [threading.Thread(target=log_and_flush, args=(n,)) for n in ("a", "b")]
    for t in ts:
        t.start()
    assert out.entered.wait(JOIN)
    time.sleep(0.2)  # both threads are waiting in flush()
    out.fail_with = errno.EIO
    out.gate.set()
    _join(ts)
    assert set(results) == {"a", "b"}
    assert all(isinstance(e, sl.WriteFailedError) for e in results.values()), results
    out.fail_with = None
    with pytest.raises(sl.WriteFailedError):  # and so does this thread's close()
        w.close()


def test_close_reports_a_loss_even_when_a_flush_reported_it_first() -> None:
    # One thread flushes, another closes, and the batch holding the pending
    # event fails: both calls covered it, so both must raise.
    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    results: dict[str, BaseException | None] = {}

    def call(name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
            results[name] = None
        except sl.WriteFailedError as e:
            results[name] = e

    flusher = threading.Thread(target=call, args=("flush", lambda: w.flush(timeout=JOIN)))
    flusher.start()
    assert out.entered.wait(JOIN)
    closer = threading.Thread(target=call, args=("close", lambda: w.close(timeout=JOIN)))
    closer.start()
    time.sleep(0.2)  # both are waiting
    out.fail_with = errno.EIO
    out.gate.set()
    _join([flusher, closer])
    assert set(results) == {"flush", "close"}
    assert all(isinstance(e, sl.WriteFailedError) for e in results.values()), results
    assert w.closed and out.closed


def test_concurrent_closes_all_report_a_loss_they_covered() -> None:
    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    results: list[BaseException | None] = []

    def close() -> None:
        try:
            w.close(timeout=JOIN)
            results.append(None)
        except sl.WriteFailedError as e:
            results.append(e)

    closers = _start(close, 2)
    assert out.entered.wait(JOIN)
    res = w._resource
    assert res is not None
    # Both close() calls are inside, waiting for the writer thread.
    assert wait_until(lambda: res.callers_waiting() == 2, JOIN)
    out.fail_with = errno.EIO
    out.gate.set()
    _join(closers)
    assert len(results) == 2 and all(isinstance(e, sl.WriteFailedError) for e in results), results
    assert w.closed and out.closed
    # This thread logged the lost event and was not told yet: its later close() tells it,
    # once; the next has nothing left to report.
    with pytest.raises(sl.WriteFailedError):
        w.close()
    w.close()


def test_close_from_the_writer_thread_itself_does_not_fail(logdir: Path) -> None:
    # A garbage-collected writer is closed by its finalizer on whatever thread
    # the collector runs on, which can be the writer's own thread.
    w = sl.create_file_writer(logdir, max_queue=0)
    res = w._resource
    assert res is not None
    ran = threading.Event()

    def make() -> bytes:
        w._finalizer()  # what gc would do here
        ran.set()
        return b"\x10\x07"  # an Event with step 7

    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    res.append(Deferred(make, 2, "a deferred event"))
    assert ran.wait(JOIN)
    assert wait_until(lambda: res.closed, timeout=JOIN)
    events = tb_events(only_file(logdir))
    assert [e.step for e in events] == [0, 0, 7]


def test_flush_and_close_from_many_threads_at_once(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=5)
    unexpected: list[BaseException] = []
    stop = threading.Event()
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    ids = iter(range(8))

    def work() -> None:
        with lock:
            k = next(ids)
        w.set_as_default()
        i = 0
        try:
            while not stop.is_set():
                if not sl.scalar(f"t{k}", float(i), step=i):
                    break  # close() cleared the default writer
                i += 1
                if i % 7 == 0:
                    w.flush(timeout=JOIN)
        except sl.WriterClosedError:
            pass
        except BaseException as e:
            unexpected.append(e)
        with lock:
            counts[f"t{k}"] = i

    ts = _start(work, 8)
    time.sleep(0.1)
    closers = _start(lambda: w.close(timeout=JOIN), 3)
    _join(closers)
    stop.set()
    _join(ts)
    assert unexpected == []
    steps = _steps_by_tag(only_file(logdir))
    assert {tag: len(s) for tag, s in steps.items() if s} == {t: n for t, n in counts.items() if n}
    for s in steps.values():
        assert s == list(range(len(s)))


class PushFailsOnceOutput(sl.MemoryOutput):
    """The second write blocks until ``gate``, the third until ``gate2``; the first push()
    after the third write fails, as an object store's upload does during an outage."""

    def __init__(self) -> None:
        super().__init__(name="/gated/events.out.tfevents.push")
        self.gate = threading.Event()
        self.gate2 = threading.Event()
        self.entered = threading.Event()
        self.writes = 0
        self.failed = False

    def write(self, data: bytes) -> None:
        if self.writes == 1:
            self.entered.set()
            self.gate.wait(JOIN)
        elif self.writes == 2:
            self.gate2.wait(JOIN)
        self.writes += 1
        super().write(data)

    def push(self) -> None:
        if self.writes >= 3 and not self.failed:
            self.failed = True
            raise OSError(errno.EIO, "upload failed")


def test_a_failed_upload_is_reported_to_every_flush_its_round_served() -> None:
    # Two threads' flush() calls are served by one round whose upload fails: both raise,
    # not only the one that takes the parked error first.
    out = PushFailsOnceOutput()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    w.flush()  # the file's first record, written on its own (writes never block for it)
    w.set_as_default(step=0)
    sl.scalar("first", 1.0)
    res = w._resource
    assert res is not None
    results: dict[str, BaseException | None] = {}

    def flush() -> None:
        name = threading.current_thread().name
        try:
            w.flush(timeout=JOIN)
            results[name] = None
        except sl.WriteFailedError as e:
            results[name] = e

    starter = _start(flush)  # its round takes "first" and blocks writing it
    assert out.entered.wait(JOIN)
    sl.scalar("second", 2.0)  # queued meanwhile: the next round has work
    flushers = _start(flush, 2)  # both tickets wait for that one round
    assert wait_until(lambda: res.callers_waiting() == 3, JOIN)
    out.gate.set()
    # The first round's upload goes through. (Its flush() returns before the next round
    # runs: an error parked by that round could otherwise reach it first, as the next
    # call of any thread, which is the general contract.)
    _join(starter)
    assert results[starter[0].name] is None
    out.gate2.set()
    _join(flushers)
    assert all(isinstance(results[t.name], sl.WriteFailedError) for t in flushers), results
    w.close()
