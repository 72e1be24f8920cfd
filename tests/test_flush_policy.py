"""The buffered writer: when events reach the file, the bound, errors, close."""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path

import pytest

import summarylib as sl
from summarylib.reader import iter_records
from summarylib.writer._gate import WriterGate
from tests.helpers import only_file, record_payloads, tb_events, wait_until


def n_records(path: Path) -> int:
    return len(list(iter_records(path)))


def test_nothing_is_written_until_more_than_max_queue_events(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=3, flush_millis=10**9)
    path = only_file(logdir)
    with w.as_default(step=0):
        for i in range(3):
            sl.scalar("x", i)
        # Only the thread writes, and only when woken: 3 events do not wake it.
        time.sleep(0.2)
        assert n_records(path) == 1
        sl.scalar("x", 3)  # the 4th pending event passes max_queue
        assert wait_until(lambda: n_records(path) == 5)
        sl.set_step(None)
    w.close()


def test_time_based_flush_without_further_writes(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=1000, flush_millis=100)
    path = only_file(logdir)
    with w.as_default(step=0):
        sl.scalar("x", 1.0)
        assert wait_until(lambda: n_records(path) == 2, timeout=5)
        sl.scalar("x", 2.0)
        assert wait_until(lambda: n_records(path) == 3, timeout=5)
    w.close()


def test_flush_returns_when_data_is_in_the_file(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    with w.as_default(step=1):
        for i in range(100):
            sl.scalar("x", i)
        sl.flush()
        assert n_records(only_file(logdir)) == 101
        for i in range(5):
            sl.scalar("y", i)
        w.flush()
        assert n_records(only_file(logdir)) == 106
    w.close()


def test_as_default_exit_flushes(logdir: Path) -> None:
    # Leaving the block asks the writer thread to write at once (without waiting for it).
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    with w.as_default(step=1):
        sl.scalar("x", 1.0)
    assert wait_until(lambda: n_records(only_file(logdir)) == 2)
    w.close()


def test_close_flushes_and_is_idempotent(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    w.close()
    assert w.closed
    assert n_records(only_file(logdir)) == 2
    w.close()  # no-op
    w.flush()  # no-op
    assert sl.scalar("x", 2.0) is False  # no longer the default writer
    with pytest.raises(sl.WriterClosedError):
        w.add_scalar("x", 2.0)
    with pytest.raises(sl.WriterClosedError), w.as_default():
        pass
    with pytest.raises(sl.WriterClosedError):
        w.set_as_default()
    assert n_records(only_file(logdir)) == 2


def test_with_writer_sets_default_and_closes(logdir: Path) -> None:
    with sl.create_file_writer(logdir) as w:
        assert sl.scalar("x", 1.0, step=0)
    assert w.closed
    assert not sl.should_record_summaries()
    assert n_records(only_file(logdir)) == 2


def test_garbage_collected_writer_is_flushed(logdir: Path) -> None:
    import gc

    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    for i in range(3):  # add_scalar: no default writer holds a reference to w
        w.add_scalar("x", float(i), i)
    del w
    gc.collect()
    assert wait_until(lambda: n_records(only_file(logdir)) == 4)


def test_interpreter_exit_flushes(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import summarylib as sl\n"
        f"w = sl.create_file_writer({str(tmp_path)!r}, max_queue=10**6, flush_millis=10**9)\n"
        "w.set_as_default(step=0)\n"
        "for i in range(50): sl.scalar('x', i)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    path = only_file(tmp_path)
    assert [ev.step for ev in tb_events(path)][1:] == [0] * 50


# -- the bound -----------------------------------------------------------------


class GateOutput(sl.MemoryOutput):
    """A memory output whose writes block until the gate opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.writes = 0

    def write(self, data: bytes) -> None:
        if self.writes:  # let the first event (file version) through
            self.gate.wait(30)
        self.writes += 1
        super().write(data)


def test_full_buffer_makes_the_caller_wait_and_drops_nothing() -> None:
    out = GateOutput()
    w = sl.create_writer(out, max_queue=0, max_buffer_bytes=2000)
    done = threading.Event()

    def produce() -> None:
        with w.as_default(step=0):
            for i in range(2000):
                sl.scalar("x", float(i))
        done.set()

    t = threading.Thread(target=produce)
    t.start()
    # The output is stuck, so the producer must block once 2000 bytes wait.
    assert not done.wait(0.5)
    out.gate.set()
    assert done.wait(30)
    t.join(30)
    w.close()
    events = [r for r in _events(out.getvalue())]
    assert len(events) == 2001


@pytest.mark.parametrize("producers", [1, 4])
def test_the_bound_counts_every_unwritten_event(
    monkeypatch: pytest.MonkeyPatch, producers: int
) -> None:
    # The output is stalled with a batch in flight. Bytes accepted but not
    # written (queued plus that batch) may pass max_buffer_bytes by at most
    # one event per producer, the one each is waiting with.
    import numpy as np

    bound = 32 * 1024
    out = GateOutput()
    w = sl.create_writer(out, max_buffer_bytes=bound)
    res = w._resource
    assert res is not None
    lock = threading.Lock()
    accepted = [0, 0]  # bytes of all events appended, the largest one

    real_append = res.append

    def counting_append(payload: bytes) -> None:
        with lock:
            accepted[0] += len(payload)
            accepted[1] = max(accepted[1], len(payload))
        real_append(payload)

    res.append = counting_append  # type: ignore[method-assign]  # what ops call
    waiting = [0]
    real_queued = WriterGate.queued

    def noting_wait(self: WriterGate, payload: object, reentered: bool) -> None:
        if self.queue.over_bound():  # lock held: this caller is about to wait for room
            waiting[0] += 1
        real_queued(self, payload, reentered)

    # The queue's Gate protocol: told of every append on the slow path.
    monkeypatch.setattr(WriterGate, "queued", noting_wait)
    blob = np.zeros(900, dtype=np.float32)  # ~3.6 KB events: just under the size counted at once

    def produce() -> None:
        with w.as_default(step=0):
            for i in range(20_000):
                if i % 3:
                    sl.scalar("x", float(i), step=i)
                else:
                    sl.write("blob", blob, step=i)

    threads = [threading.Thread(target=produce) for _ in range(producers)]
    try:
        for t in threads:
            t.start()
        assert wait_until(lambda: waiting[0] >= producers, timeout=30)  # all held back
        with lock:
            unwritten = accepted[0]  # the output has written nothing since the first event
        assert unwritten <= bound + producers * accepted[1], (unwritten, bound)
    finally:
        out.gate.set()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads)
    w.close()
    assert len(_events(out.getvalue())) == 1 + producers * 20_000  # nothing was dropped


def _events(data: bytes) -> list[bytes]:
    return record_payloads(data)


# -- background errors ------------------------------------------------------------


class FlakyOutput(sl.MemoryOutput):
    """Fails with ENOSPC while ``failing`` is set."""

    def __init__(self) -> None:
        super().__init__(name="/fake/disk/events.out.tfevents.x")
        self.failing = False
        self.failures = 0

    def write(self, data: bytes) -> None:
        if self.failing:
            self.failures += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(data)


def test_background_error_surfaces_on_flush_naming_the_file() -> None:
    out = FlakyOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    sl.scalar("ok", 1.0)
    w.flush()
    good = out.getvalue()
    out.failing = True
    sl.scalar("lost", 2.0)
    with pytest.raises(sl.WriteFailedError, match="/fake/disk") as info:
        w.flush()
    assert info.value.errno == errno.ENOSPC
    assert isinstance(info.value, OSError)
    assert out.getvalue() == good  # what was written stays intact
    out.failing = False
    sl.scalar("later", 3.0)  # the writer keeps working after reporting
    w.close()
    tags = [e for e in _events(out.getvalue())]
    assert len(tags) == 3  # file version, "ok", "later"


def test_background_error_surfaces_on_the_next_call() -> None:
    out = FlakyOutput()
    w = sl.create_writer(out, max_queue=0)
    w.set_as_default(step=0)
    out.failing = True
    sl.scalar("x", 1.0)
    res = w._resource
    assert res is not None
    assert wait_until(lambda: res.error_pending)
    with pytest.raises(sl.WriteFailedError, match="/fake/disk"):
        sl.scalar("x", 2.0)  # raised before anything is appended
    out.failing = False
    assert sl.scalar("x", 3.0)
    w.close()
    assert len(_events(out.getvalue())) == 2  # file version + the 3.0


def test_background_error_surfaces_on_close() -> None:
    out = FlakyOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    out.failing = True
    with pytest.raises(sl.WriteFailedError):
        w.close()
    assert w.closed
    assert out.closed
    w.close()  # still a no-op


def test_on_error_warn_keeps_going() -> None:
    out = FlakyOutput()
    w = sl.create_writer(out, max_queue=10**6, on_error="warn")
    w.set_as_default(step=0)
    out.failing = True
    sl.scalar("x", 1.0)
    with pytest.warns(RuntimeWarning, match="/fake/disk"):
        w.flush()
    out.failing = False
    sl.scalar("x", 2.0)
    w.close()
    assert len(_events(out.getvalue())) == 2


def test_a_failed_background_encoding_leaves_the_metadata_to_the_next_event(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first image of a tag carries the plugin metadata, and TensorBoard
    # lists a tag only from metadata. If encoding that image fails on the
    # writer thread, the next image of the tag written must carry it instead.
    import numpy as np
    from tensorboard.backend.event_processing import plugin_event_accumulator

    from summarylib.ops import image as image_module

    real = image_module._tensor_values
    calls = [0]

    def fail_once(*args: object) -> object:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("injected encoder failure")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(image_module, "_tensor_values", fail_once)
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    w.set_as_default()
    pic = np.zeros((1, 4, 4, 3), dtype=np.uint8)
    assert sl.image("pic", pic, step=0)  # carries the metadata; its encoding fails
    assert sl.image("pic", pic, step=1)  # queued before anyone knows
    with pytest.raises(sl.SummaryError, match="encoding"):
        w.flush()
    assert sl.image("pic", pic, step=2)
    w.close()
    events = [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]
    assert [e.step for e in events] == [1, 2]
    plugins = [e.summary.value[0].metadata.plugin_data.plugin_name for e in events]
    assert plugins == ["images", ""]  # once, on the first image written
    acc = plugin_event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    assert "pic" in acc.PluginTagToContent("images")


def test_dead_writer_thread_never_hangs_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    from summarylib.writer._worker import Worker

    monkeypatch.setattr(Worker, "_loop", lambda self: None)  # the thread exits at once
    w = sl.create_writer(sl.MemoryOutput(), max_queue=10**6)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    with pytest.raises(sl.SummaryError, match="died"):
        w.flush(timeout=10)
    w.close()


def test_flush_timeout() -> None:
    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    w.set_as_default(step=0)
    sl.scalar("x", 1.0)
    with pytest.raises(TimeoutError):
        w.flush(timeout=0.2)
    out.gate.set()
    w.close()
    assert len(_events(out.getvalue())) == 2


def _records(data: bytes) -> list[bytes]:
    return record_payloads(data, whole=False)


class _CountingOutput(sl.MemoryOutput):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        super().write(data)


def test_a_fast_loop_gets_few_large_writes_not_one_per_max_queue() -> None:
    # After a write that the queue length called for, the writer thread waits
    # COALESCE_SECS before the next one: a loop that passes max_queue every few
    # microseconds wakes it a few times, not once per 10 events (each wake-up costs the
    # training thread a fight for the GIL).
    from summarylib.writer._buffered import COALESCE_SECS

    out = _CountingOutput()
    w = sl.create_writer(out, max_queue=10)
    t0 = time.monotonic()
    with w.as_default():
        for i in range(2000):
            sl.scalar("loss", float(i), step=i)
        elapsed = time.monotonic() - t0
        bound = 2 + int(elapsed / COALESCE_SECS) * 2  # the first write, then one per window
        assert out.writes <= bound, (out.writes, elapsed)
    w.close()
    assert len(list(_records(out.getvalue()))) == 2001  # with the file-version event


def test_events_past_max_queue_are_written_without_a_flush() -> None:
    out = _CountingOutput()
    w = sl.create_writer(out, max_queue=10, flush_millis=10**9)
    with w.as_default():
        for batch in range(3):
            for i in range(11):
                sl.scalar("loss", float(i), step=batch * 11 + i)
            want = 1 + 11 * (batch + 1)
            assert wait_until(lambda want=want: len(list(_records(out.getvalue()))) == want, 10)
    w.close()


def test_the_bound_is_the_memory_the_queue_holds() -> None:
    # A stalled output: scalar() events pile up until the producer waits for room. The
    # memory they hold (measured by tracemalloc, the list and the bytes objects) stays
    # within 1.2x max_buffer_bytes: the bound counts each entry's overhead, not only its
    # serialized bytes (a 40-byte event takes about 90 bytes of memory).
    import tracemalloc

    bound = 2 << 20
    out = GateOutput()
    w = sl.create_writer(out, max_buffer_bytes=bound, max_queue=10**9, flush_millis=10**9)
    with w.as_default(step=0):
        sl.scalar("loss", 0.0)  # the tag's prefix is cached; the writer thread is blocked
    logged = [0]
    blocked = threading.Event()

    def produce() -> None:
        with w.as_default():
            for i in range(1, 10**7):
                if blocked.is_set():
                    return
                sl.scalar("loss", float(i), step=i)
                logged[0] = i

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        t = threading.Thread(target=produce, daemon=True)
        t.start()
        last = -1
        while logged[0] != last:  # until the producer stops moving: it waits for room
            last = logged[0]
            time.sleep(0.5)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        blocked.set()
        out.gate.set()
    t.join(30)
    w.close()
    assert logged[0] > 10_000
    assert held <= 1.2 * bound, (held, bound, logged[0])
