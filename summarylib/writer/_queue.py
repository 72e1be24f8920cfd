"""The writer's queue: lock-free appends, a byte bound, and when the slow path runs.

Callers append serialized Events (or deferred ones, or compact records) to a plain list
without taking the lock. That is safe because of one invariant, kept by this class alone:

* under the GIL (or the list's own lock on a free-threaded build) ``list.append`` and
  ``len`` are atomic, and only lock holders ever *remove* entries, from the front, and
  never swap the list;
* an append takes the slow path (the lock) when the list grows past ``trigger`` entries,
  when its payload is larger than ``large`` bytes, or when ``trigger`` is negative;
* every state that needs the lock first (closing, a parked error, after fork) sets
  ``trigger`` to -1 (:meth:`EventQueue.stop_fast_path`);
* an append that raced such a change is taken back under the lock and decided there
  (:meth:`EventQueue.settle`), so nothing is acknowledged that will not be written.

The byte bound: entries are summed in batches (at most every ``CHECK_EVERY`` appends, and
at once above ``large`` bytes) and ``trigger`` is placed so that the appends skipped
between two counts can never take the total past ``max_buffer_bytes``. The total counts
what is queued, the batch being written, and what the output holds back (an object store
between uploads), and each entry's own overhead (:data:`ENTRY_OVERHEAD`), so the bound is
the memory the queue holds.

The queue knows nothing of threads, outputs or errors: its :class:`Gate` (the writer)
decides whether an append may proceed and what happens once an entry is queued.
"""

from __future__ import annotations

import threading
from typing import Protocol

__all__ = ["CHECK_EVERY", "ENTRY_OVERHEAD", "EventQueue", "Gate", "TakenBack"]

# Payloads above a size limit (LARGE_PAYLOAD while there is plenty of room, down to
# MIN_LARGE_PAYLOAD when the buffer is nearly full) are accounted at once; smaller ones
# are summed in batches, at most every CHECK_EVERY appends, which keeps the scalar path
# lean. The limit times the appends between counts never exceeds the room left.
# 8 KiB: a deferred event holding one pending JAX array (a scalar of a device value, a
# compiled call's packed summaries: ~5 KiB counted) is summed in batches too; at 4 KiB
# every such event took the lock, which cost a compiled step more than its logging.
LARGE_PAYLOAD = 8192
MIN_LARGE_PAYLOAD = 256
CHECK_EVERY = 256
#: What an entry costs in memory beyond its payload's length: the bytes object's header
#: (33 bytes) rounded up to the allocator's blocks, the queue's list slot (with its
#: over-allocation) and, once taken, the batch's. Counted so that the bound is the memory
#: the queue really holds, not only the payload bytes: a 40-byte scalar event takes about
#: 104 bytes of memory (tracemalloc), which the count then matches.
ENTRY_OVERHEAD = 64


class TakenBack:
    """The placeholder of an entry taken back by its caller (see :meth:`EventQueue.settle`)."""

    __slots__ = ()

    def __len__(self) -> int:
        return 0


TAKEN_BACK = TakenBack()


class _Sized(Protocol):
    def __len__(self) -> int: ...


class Gate(Protocol):
    """What the queue asks its writer on the slow path (always with the lock held)."""

    def admit(self) -> bool:
        """May an append proceed now? False drops it quietly; raising refuses it."""

    def reentered(self) -> bool:
        """Is the calling thread already inside a call of the writer (a signal handler
        or warnings hook interrupted it)? Asked before the lock is taken."""

    def queued(self, payload: _Sized, reentered: bool) -> None:
        """An entry was queued and counted: start or wake the writer, wait for room
        (never when ``reentered``: that would wait under the interrupted call)."""


class EventQueue:
    """A list of pending entries with lock-free appends and a byte bound.

    Args:
      lock: the writer's lock (re-entrant); the slow path and every removal hold it.
      gate: the writer's decisions on the slow path.
      max_queue: the length past which the gate is told of every append.
      max_buffer_bytes: the bound on queued, in-flight and held-back bytes.
    """

    def __init__(self, lock: threading.RLock, gate: Gate, *, max_queue: int,
                 max_buffer_bytes: int) -> None:
        self._lock = lock
        self._gate = gate
        self._max_queue = max_queue
        self.max_buffer_bytes = max_buffer_bytes
        self.entries: list[_Sized] = []
        self._counted = 0  # entries already summed into _queued_bytes
        self._queued_bytes = 0
        self.inflight_bytes = 0  # the batch being written (still in memory)
        self.held_bytes = 0  # written to the output, held back from readers
        self._large = LARGE_PAYLOAD
        self._trigger = 0  # the first append takes the slow path (starts the writer)
        self._stopped = False

    # -- caller side, no lock -------------------------------------------------------
    def append(self, payload: _Sized) -> bool:
        """Queue ``payload``; True unless the gate dropped it. Thread-safe."""
        if self._trigger >= 0:
            entries = self.entries
            entries.append(payload)
            if len(entries) > self._trigger or len(payload) > self._large:
                return self.settle(payload)
            return True
        return self._append_locked(payload)

    # -- slow path ------------------------------------------------------------------
    def _append_locked(self, payload: _Sized) -> bool:
        reentered = self._gate.reentered()
        with self._lock:
            if self._trigger < 0 and not self._admit():
                return False
            entries = self.entries
            entries.append(payload)
            if len(entries) > self._trigger or len(payload) > self._large:
                self._queued(payload, reentered)
        return True

    def settle(self, payload: _Sized) -> bool:
        """The slow path of a lock-free append (``payload`` is queued already)."""
        reentered = self._gate.reentered()
        with self._lock:
            if self._trigger >= 0:
                self._queued(payload, reentered)
                return True
            # The fast path closed after this append began. Still queued: take it back
            # and decide under the lock, as if it came now. Already taken by the writer:
            # it is written (or its loss reported) like every entry before it.
            if not self.take_back(payload):
                return True
        return self._append_locked(payload)

    def _admit(self) -> bool:
        admitted = self._gate.admit()
        if admitted:
            self._stopped = False
            self._trigger = 0
        return admitted

    def _queued(self, payload: _Sized, reentered: bool) -> None:
        self.account()
        self._gate.queued(payload, reentered)
        self.place_trigger()

    def take_back(self, payload: _Sized) -> bool:
        """Lock held: replace ``payload`` by a placeholder if it is still queued.

        Replaced, not removed: a flush may have counted it, and entry indices (flush
        targets, loss ranges) must not shift. The writer writes nothing for it.
        """
        entries = self.entries
        for i in range(len(entries) - 1, -1, -1):
            if entries[i] is payload:
                entries[i] = TAKEN_BACK
                if i < self._counted:
                    self._queued_bytes -= len(payload) + ENTRY_OVERHEAD
                return True
        return False

    def account(self) -> None:
        """Lock held: add the entries appended since the last count.

        One slice: callers append without the lock, so a length taken apart from the
        slice could count an entry twice.
        """
        new = self.entries[self._counted:]
        if new:
            self._queued_bytes += sum(map(len, new)) + ENTRY_OVERHEAD * len(new)
            self._counted += len(new)

    def buffered_bytes(self) -> int:
        """Lock held: what the bound counts (queued, in flight, held back)."""
        return self._queued_bytes + self.inflight_bytes + self.held_bytes

    def over_bound(self) -> bool:
        """Lock held: the counted bytes are above ``max_buffer_bytes``."""
        return self.buffered_bytes() > self.max_buffer_bytes

    def place_trigger(self) -> None:
        """Lock held: how many appends may skip the slow path, and up to what size.

        Skipped entries hold at most ``large + ENTRY_OVERHEAD`` bytes each, and ``step``
        of them fit in the room, so the total stays within the bound until the next
        count. A nearly full buffer
        lowers the size limit rather than counting after every scalar. The step counts
        from the entries already counted: entries other threads appended since (without
        the lock) use it up, they do not add to it.
        """
        if self._stopped:
            self._trigger = -1
            return
        n = self._counted
        room = max(0, self.max_buffer_bytes - self.buffered_bytes())
        large = min(LARGE_PAYLOAD, max(MIN_LARGE_PAYLOAD, room // CHECK_EVERY))
        step = min(CHECK_EVERY, room // (large + ENTRY_OVERHEAD))
        self._large = large
        self._trigger = min(self._max_queue, n + step) if n <= self._max_queue else n + step

    def stop_fast_path(self) -> None:
        """Lock held: every append takes the slow path (and asks the gate) from now on."""
        self._stopped = True
        self._trigger = -1

    def resume_fast_path(self) -> None:
        """Lock held: the gate admits appends again."""
        self._stopped = False
        self.place_trigger()

    def take_all(self) -> list[_Sized]:
        """Lock held: every queued entry, as the batch in flight (it still counts).

        The list itself stays (callers append to it without the lock); entries appended
        during the copy stay queued.
        """
        entries = self.entries
        batch = entries[:]
        del entries[:len(batch)]
        uncounted = batch[self._counted:]
        self.inflight_bytes = (self._queued_bytes + sum(map(len, uncounted))
                               + ENTRY_OVERHEAD * len(uncounted))
        self._queued_bytes = 0
        self._counted = 0
        self.place_trigger()
        return batch

    def batch_done(self, held_bytes: int) -> None:
        """Lock held: the batch in flight was written; the output now holds ``held_bytes``."""
        self.inflight_bytes = 0
        self.held_bytes = held_bytes

    @property
    def fast_appends_left(self) -> int:
        """How many more appends skip the slow path (diagnostics and tests; <= 0: none)."""
        return self._trigger - len(self.entries) if self._trigger >= 0 else 0

    @property
    def fast_payload_limit(self) -> int:
        """The largest payload that may skip the slow path now (diagnostics and tests)."""
        return self._large

    def __len__(self) -> int:
        return len(self.entries)
