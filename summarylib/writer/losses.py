"""Which events a writer lost, and which callers have been told.

A writer numbers its events in the order its thread takes them (0, 1, 2, ...). When a
write fails, the events it held are lost and their range is recorded here. The promise
this ledger keeps: every ``flush()`` or ``close()`` that covered a lost event reports the
loss, whichever thread calls it, even when another thread's call reported it first.

"Covered" is per thread: a call covers the events appended before it that its thread has
not yet been told about. So a thread hears of each loss in its first ``flush()`` or
``close()`` after the loss, and not again in later ones; a report to thread A never hides
the loss from thread B. The bookkeeping is per thread, per loss record (not a high-water
mark), because a loss can be recorded after a call that did not cover it yet.

Losses are rare (one record per failed write), so the ledger keeps a plain list. Past
:data:`KEEP` records the oldest are forgotten; a thread that was never told of a forgotten
one is told of the newest forgotten loss instead: over-reporting, never hiding.
"""

from __future__ import annotations

import threading

__all__ = ["KEEP", "LossLedger"]

#: How many loss records a ledger keeps before forgetting the oldest.
KEEP = 4096


class _Told(threading.local):
    def __init__(self) -> None:
        # Records below `low` were all told to this thread; `above` holds the told
        # records at or past `low` (records not covered yet stay untold).
        self.low = 0
        self.above: set[int] = set()


class LossLedger:
    """The ranges of events lost, and per thread, which of them were reported.

    Not thread-safe by itself: the writer calls it with its lock held.
    """

    __slots__ = ("_forgotten", "_last_forgotten", "_ranges", "_told")

    def __init__(self) -> None:
        self._ranges: list[tuple[int, int, BaseException]] = []
        self._forgotten = 0  # records dropped from the front of _ranges
        self._last_forgotten: BaseException | None = None
        self._told = _Told()

    def __len__(self) -> int:
        """How many losses were ever recorded."""
        return self._forgotten + len(self._ranges)

    def record(self, first: int, end: int, error: BaseException) -> None:
        """Events ``[first, end)`` were lost to ``error`` (nothing is recorded if empty)."""
        if end <= first:
            return
        self._ranges.append((first, end, error))
        if len(self._ranges) > KEEP:
            self._last_forgotten = self._ranges.pop(0)[2]
            self._forgotten += 1

    def ranges(self) -> list[tuple[int, int]]:
        """The ``(first, end)`` event ranges lost and still kept, oldest first."""
        return [(first, end) for first, end, _ in self._ranges]

    def take_unreported(self, target: int) -> BaseException | None:
        """The first loss among events ``[0, target)`` not yet reported to this thread.

        Every such loss counts as reported to the calling thread from now on (the caller
        raises or warns once for all of them). None when there is none.
        """
        told = self._told
        found: BaseException | None = None
        if told.low < self._forgotten:
            found = self._last_forgotten
            told.low = self._forgotten
            told.above = {i for i in told.above if i >= told.low}
        for index in range(told.low, len(self)):
            if index in told.above:
                continue
            first, _end, error = self._ranges[index - self._forgotten]
            if first < target:
                told.above.add(index)
                if found is None:
                    found = error
        while told.low in told.above:
            told.above.discard(told.low)
            told.low += 1
        return found
