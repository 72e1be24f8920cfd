"""What a writer has to report: the failure waiting for the next call, and every loss.

:class:`Failures` holds the failure that the next call of the writer raises (or warns
about, ``on_error="warn"``) and the :class:`LossLedger` of lost events.

Which events a writer lost, and which callers have been told:

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
import warnings
from typing import Literal

from summarylib.errors import NonFiniteError, SummaryError, WriteFailedError

__all__ = ["KEEP", "NAMED", "Failures", "LossLedger", "again", "one_report", "write_failed"]

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
        """The losses among events ``[0, target)`` not yet reported to this thread, as one
        exception (see :func:`one_report`), or None when there is none.

        Every such loss counts as reported to the calling thread from now on (the caller
        raises or warns once for all of them).
        """
        told = self._told
        found: list[BaseException] = []
        if told.low < self._forgotten:
            if self._last_forgotten is not None:
                found.append(self._last_forgotten)
            told.low = self._forgotten
            told.above = {i for i in told.above if i >= told.low}
        for index in range(told.low, len(self)):
            if index in told.above:
                continue
            first, _end, error = self._ranges[index - self._forgotten]
            if first < target:
                told.above.add(index)
                found.append(error)
        while told.low in told.above:
            told.above.discard(told.low)
            told.low += 1
        return one_report(found)


class Failures:
    """The failure the writer's next call reports, the losses, and how reports are made.

    Not thread-safe by itself: the writer calls it with its lock held (except
    :meth:`report`, which raises or warns on the caller's thread).
    """

    def __init__(self, on_error: Literal["raise", "warn"]) -> None:
        self.on_error = on_error
        #: The failure the next call of the writer reports (the first one parked wins).
        self.pending: BaseException | None = None
        self.ledger = LossLedger()

    def park(self, error: BaseException, first: int, end: int) -> None:
        """A failure, which lost events ``[first, end)`` (none if empty)."""
        self.ledger.record(first, end, error)
        if self.pending is None:
            self.pending = error

    def take(self, events: int) -> BaseException | None:
        """The pending failure, now reported to the calling thread, with every loss among
        ``[0, events)`` recorded so far (its later flush()/close() do not repeat them)."""
        error, self.pending = self.pending, None
        if error is not None:
            losses = self.ledger.take_unreported(events)
            if losses is not None and losses is not error and not isinstance(
                error, WriteFailedError
            ):
                # Several events lost (device values deleted before they were read, say):
                # the report names them all, not only the one parked first.
                error = losses if str(error) in str(losses) else one_report([error, losses])
        return error

    def fold(self, own: BaseException | None) -> None:
        """Make the pending failure also name the losses ``own`` (this thread's, from
        :meth:`covered`), so that the one report a caller gets names every lost event."""
        pending = self.pending
        if own is None or pending is None or isinstance(pending, WriteFailedError):
            return
        self.pending = own if str(pending) in str(own) else one_report([pending, own])

    def covered(self, target: int) -> BaseException | None:
        """A fresh copy of the first loss among ``[0, target)`` this thread was not told
        of (see :meth:`LossLedger.take_unreported`), or None."""
        own = self.ledger.take_unreported(target)
        return None if own is None else again(own)

    def report(self, error: BaseException, stacklevel: int = 3) -> None:
        """Raise ``error``, or warn with it (``on_error="warn"``)."""
        if self.on_error == "warn":
            warnings.warn(str(error), RuntimeWarning, stacklevel=stacklevel + 1)
            return
        raise error


def write_failed(path: str, cause: BaseException) -> WriteFailedError:
    """``cause`` as the :class:`WriteFailedError` of ``path`` (as it is if it is one)."""
    if isinstance(cause, WriteFailedError):
        return cause  # the output named itself already (FileOutput does)
    err = WriteFailedError(path, cause)
    err.__cause__ = cause
    return err


#: How many lost events a combined report names one by one.
NAMED = 5


def one_report(errors: list[BaseException]) -> BaseException | None:
    """One exception for the losses ``errors`` (oldest first) reported to a caller at once.

    One loss: itself. Several: a :class:`SummaryError` that says how many and names the
    first :data:`NAMED` (each a lost event's tag and step, or a failed write's file), with
    the first as its cause; a write failure among them keeps its own type, first.
    """
    if not errors:
        return None
    if len(errors) == 1:
        return errors[0]
    for e in errors:
        if isinstance(e, WriteFailedError):
            return e  # the file failed: its message names what the caller must look at
    names = [str(e) for e in errors[:NAMED]]
    more = len(errors) - len(names)
    tail = f"; and {more} more" if more else ""
    combined = SummaryError(
        f"summarylib: {len(errors)} events were lost: " + "; ".join(names) + tail
    )
    combined.__cause__ = errors[0]
    return combined


def again(error: BaseException) -> BaseException:
    """A fresh exception for a failure already raised elsewhere (one exception object is
    never raised in two threads: their tracebacks would mix)."""
    cause = error.__cause__
    if isinstance(error, WriteFailedError):
        return write_failed(error.path, cause if cause is not None else error)
    if isinstance(error, NonFiniteError):  # keeps its type: callers catch it by name
        fresh: SummaryError = NonFiniteError(error.tag, error.step, str(error))
        fresh.__cause__ = cause
        return fresh
    fresh = SummaryError(str(error))
    fresh.__cause__ = cause
    return fresh
