"""The writer's queue through its own interface: lock-free appends and the byte bound.

An :class:`EventQueue` is built here with a gate of the test's own (the writer's role),
so each rule is checked without a writer thread: when the slow path runs, what the byte
count holds, what a take-back leaves, and that the appends allowed between two counts
can never take the total past ``max_buffer_bytes``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.encoding._pending import JAX_ARRAY_BYTES, buffer_bytes
from summarylib.writer._batch import Deferred
from summarylib.writer._queue import CHECK_EVERY, ENTRY_OVERHEAD, EventQueue, TakenBack
from summarylib.writer._settings import DEFAULT_MAX_BUFFER_BYTES


class Gate:
    """Admits everything (unless told otherwise) and notes each slow-path call."""

    def __init__(self) -> None:
        self.admitting = True
        self.calls: list[int] = []  # the queue's counted bytes at each queued()
        self.on_queued: Callable[[], None] | None = None
        self.queue: EventQueue | None = None

    def admit(self) -> bool:
        if not self.admitting:
            raise RuntimeError("refused")
        return True

    def reentered(self) -> bool:
        return False

    def queued(self, payload: Any, reentered: bool) -> None:
        assert self.queue is not None
        self.calls.append(self.queue.buffered_bytes())
        hook, self.on_queued = self.on_queued, None
        if hook is not None:
            hook()


def held(entries: list[Any]) -> int:
    """The memory the queue counts for ``entries``: payloads and each entry's overhead."""
    return sum(map(len, entries)) + ENTRY_OVERHEAD * len(entries)


def make(limit: int = 1 << 20, max_queue: int = 10**6) -> tuple[EventQueue, Gate]:
    gate = Gate()
    queue = EventQueue(threading.RLock(), gate, max_queue=max_queue, max_buffer_bytes=limit)
    gate.queue = queue
    return queue, gate


def test_the_first_append_and_large_payloads_take_the_slow_path() -> None:
    queue, gate = make()
    queue.append(b"x" * 10)
    assert len(gate.calls) == 1  # the first append starts the writer
    for _ in range(5):
        queue.append(b"y" * 10)
    assert len(gate.calls) == 1  # small ones skip it
    queue.append(b"z" * (queue.fast_payload_limit + 1))
    assert len(gate.calls) == 2 and gate.calls[-1] == held(queue.entries)


def test_a_count_racing_an_append_counts_each_entry_once() -> None:
    # The count reads the list while callers append without the lock: an entry appended
    # during the count is counted then or next time, never twice.
    queue, _ = make()
    racing = b"r" * (queue.fast_payload_limit + 884)

    class AppendDuringTheCount(list):  # type: ignore[type-arg]
        armed = False

        def __getitem__(self, index: object) -> object:
            if AppendDuringTheCount.armed and isinstance(index, slice):
                AppendDuringTheCount.armed = False
                super().append(racing)  # another thread's append, just before the read
            return super().__getitem__(index)  # type: ignore[index]

    queue.entries = AppendDuringTheCount()
    AppendDuringTheCount.armed = True
    queue.append(b"b" * len(racing))  # above the size limit: counted at once
    queue.account()
    assert queue.buffered_bytes() == held(queue.entries) == 2 * (len(racing) + ENTRY_OVERHEAD)


def test_appends_after_a_count_use_up_the_window_not_add_to_it() -> None:
    # After a count the queue lets some small appends skip the lock, sized to fit the room
    # left. Appends other threads made between the count and the new window use it up.
    limit = 256 * 1024
    queue, gate = make(limit)
    queue.append(b"\x09" + bytes(8))

    def other_threads_append_right_after_the_count() -> None:
        while queue.fast_appends_left > 0:  # appends the old window lets skip the lock
            queue.entries.append(b"\x09" + bytes(queue.fast_payload_limit - 1))

    gate.on_queued = other_threads_append_right_after_the_count
    large = queue.fast_payload_limit + 1000
    queue.append(b"\x09" + bytes(large - 1))  # above the size limit: this caller counts
    while queue.fast_appends_left > 0:  # everything the new window lets through
        queue.append(b"\x09" + bytes(queue.fast_payload_limit - 1))
    assert held(queue.entries) <= limit + large + ENTRY_OVERHEAD


def test_a_pending_jax_value_skips_the_slow_path() -> None:
    # A scalar of a JAX array, or the packed summaries of a compiled call, is queued as
    # a deferred event holding one array (counted as JAX_ARRAY_BYTES of runtime objects
    # plus its buffer, host copy and closures): far below the room of a fresh writer, so
    # such events are summed in batches like serialized ones, not counted one by one
    # under the lock (which cost a compiled step more than the rest of its logging).
    queue, gate = make(DEFAULT_MAX_BUFFER_BYTES)
    queue.append(b"x")  # the first append starts the writer
    held_by_a_call = JAX_ARRAY_BYTES + 2 * buffer_bytes(12) + 2 * 96
    for _ in range(10):
        queue.append(Deferred(lambda: b"", held_by_a_call, "a compiled call"))
    assert len(gate.calls) == 1
    queue.account()  # counted in full when counted
    assert queue.buffered_bytes() == held(queue.entries) > 10 * JAX_ARRAY_BYTES


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 9000), min_size=1, max_size=3000),
       limit=st.integers(4096, 1 << 20))
def test_the_bound_holds_at_every_count(sizes: list[int], limit: int) -> None:
    # Nothing is ever taken out here (a stalled writer). Whenever the queue is over its
    # bound, the gate hears of it at once: the total when it first does is at most the
    # bound plus the one payload that crossed it.
    queue, gate = make(limit)
    for size in sizes:
        queue.append(b"\x09" * size)
        if queue.over_bound():
            break
    over = [c for c in gate.calls if c > limit]
    if over:
        assert over[0] <= limit + max(sizes) + ENTRY_OVERHEAD
    queue.account()
    if not over:
        assert queue.buffered_bytes() <= limit


def test_a_stopped_fast_path_asks_the_gate_and_a_refusal_queues_nothing() -> None:
    queue, gate = make()
    queue.append(b"a")
    queue.stop_fast_path()  # as the writer does (with its lock) when closing
    gate.admitting = False
    with pytest.raises(RuntimeError, match="refused"):
        queue.append(b"b")
    assert queue.entries == [b"a"]
    gate.admitting = True
    assert queue.append(b"c") is True
    assert queue.entries == [b"a", b"c"]


def test_a_take_back_leaves_a_placeholder_and_its_bytes_go() -> None:
    queue, _ = make()
    big = b"q" * 5000
    queue.append(b"a" * 10)
    queue.append(big)  # counted at once
    assert queue.buffered_bytes() == 5010 + 2 * ENTRY_OVERHEAD
    assert queue.take_back(big) is True
    assert isinstance(queue.entries[1], TakenBack) and len(queue.entries) == 2
    assert queue.buffered_bytes() == 10 + ENTRY_OVERHEAD
    assert queue.take_back(big) is False  # not queued any more


def test_take_all_moves_the_bytes_in_flight_until_the_batch_is_done() -> None:
    queue, _ = make()
    for _ in range(CHECK_EVERY + 3):
        queue.append(b"e" * 100)
    batch = queue.take_all()
    assert len(batch) == CHECK_EVERY + 3 and not queue.entries
    assert queue.buffered_bytes() == held(batch)  # still in memory
    queue.batch_done(held_bytes=40)
    assert queue.buffered_bytes() == 40  # what the output holds back still counts
