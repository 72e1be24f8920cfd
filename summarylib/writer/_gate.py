"""The buffered writer's gate: whether a call may go on, and what it waits for.

:class:`WriterGate` answers the queue's slow-path questions (the
:class:`~summarylib.writer._queue.Gate` protocol: admit, reentered, queued) and the waits of
``flush()`` and ``close()``. It owns the state those answers depend on: whether the writer
is open, closing, closed (by an exit hook) or orphaned in a forked child; the background
failures still to be reported (:class:`~summarylib.writer._losses.Failures`); and the
threads waiting inside a call, so that a call re-entered from a signal handler never waits.
Every method except :meth:`held_by_this_thread` runs with the writer's lock held.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from summarylib.errors import SummaryError, WriterClosedError
from summarylib.writer._losses import Failures

if TYPE_CHECKING:
    from summarylib.writer._queue import EventQueue
    from summarylib.writer._worker import Worker

__all__ = ["POLL_SECS", "WriterGate"]

# How often waiting callers re-check that the background thread is alive.
POLL_SECS = 0.05


#: How long a call whose deadline has passed still waits for the (briefly held) lock.
_LOCK_GRACE_SECS = 0.05


class WriterGate:
    """The open/closed state, failures and waits of one buffered writer.

    Args:
      lock: the writer's lock (re-entrant).
      failures: the writer's failures to report (``on_error`` decides raise or warn).
      max_queue: past this many queued events, every append wakes the writer thread.
      max_buffer_bytes: the bound an append waits under.
      on_start: called once, when the first append starts the writer thread.
    """

    def __init__(self, lock: threading.RLock, failures: Failures, *, max_queue: int,
                 max_buffer_bytes: int, on_start: Callable[[], None]) -> None:
        self._lock = lock
        self.failures = failures
        self._max_queue = max_queue
        self._max_buffer_bytes = max_buffer_bytes
        self._on_start = on_start
        self.queue: EventQueue  # set by the writer, which makes the queue with this gate
        self.worker: Worker  # likewise
        self.closing = False  # close() began: no new events
        self.closed = False  # close() finished
        self.closed_by_exit = False  # closed by an exit hook: late ops get False
        self.orphaned = False  # a writer to a caller's output, in a forked child
        self._dropped_warned = False
        # Threads waiting inside a call (the lock released): a call they make meanwhile,
        # from a signal handler, is re-entered as one made under the lock is.
        self._waiting: set[int] = set()

    # -- the queue's Gate protocol ----------------------------------------------------
    def admit(self) -> bool:
        """Slow path: closed, or an error is parked. False drops the event."""
        name = self.worker.name
        if self.orphaned:
            raise WriterClosedError(
                f"the summary writer for {name} writes to a custom Output of the "
                "parent process; it cannot write after fork(): create a writer in the child"
            )
        if self.closed or self.closing:
            if self.closed_by_exit:
                if not self._dropped_warned:  # once: a daemon thread must not flood stderr
                    self._dropped_warned = True
                    warnings.warn(
                        f"summarylib: the writer for {name} was closed at interpreter "
                        "exit; events logged after that are dropped", RuntimeWarning,
                        stacklevel=5)
                return False
            raise WriterClosedError(f"summary writer for {name} is closed")
        self.surface_error()
        return True

    def reentered(self) -> bool:
        """The calling thread is inside a call of this writer (see held_by_this_thread)."""
        return self.held_by_this_thread()

    def queued(self, payload: Any, reentered: bool) -> None:
        """An entry was queued: start or wake the thread; wait while over the bound.

        A re-entered append does not wait for room: the bound is exceeded by its event.
        """
        worker, queue = self.worker, self.queue
        if not worker.started:
            worker.start()
            self._on_start()
        if len(queue) > self._max_queue:
            worker.wake()
        if reentered:
            if queue.over_bound():
                worker.wake(urgent=True)
            return
        me = threading.get_ident()
        self._waiting.add(me)
        try:
            self._wait_for_room(payload)
        finally:
            self._waiting.discard(me)

    def _wait_for_room(self, payload: Any) -> None:
        worker, queue, failures = self.worker, self.queue, self.failures
        while queue.over_bound():
            # Nothing is dropped: the caller waits for the thread. A failure that lost
            # events freed their room; one that keeps the bytes (an object store that is
            # down) does not: raise mode takes this event back and raises, warn mode
            # warns and keeps waiting while the output retries.
            if queue.inflight_bytes == 0:
                worker.wake(urgent=True)
            self.check_thread()
            if failures.pending is not None:
                if worker.died() or queue.held_bytes <= self._max_buffer_bytes:
                    return
                if failures.on_error == "raise" and queue.take_back(payload):
                    self.surface_error()  # raises
                self.surface_error()
            worker.progress.wait(POLL_SECS)
            queue.account()

    # -- failures -----------------------------------------------------------------------
    def check_thread(self) -> None:
        """Park an error if the writer thread died (and nothing else is parked)."""
        if self.worker.died() and self.failures.pending is None:
            self.failures.pending = SummaryError(
                f"summarylib's writer thread for {self.worker.name} died")

    def park_error(self, err: BaseException, first: int, end: int) -> None:
        """A failure lost events ``[first, end)``: reported by the next call and by every
        flush()/close() covering them; appends take the slow path until then."""
        self.failures.park(err, first, end)
        self.queue.stop_fast_path()

    def surface_error(self) -> None:
        """Report a parked failure to this caller (raise or warn), if one waits."""
        err = self.failures.take(self.worker.taken + len(self.queue))
        if err is None:
            return
        if not self.closing and not self.closed and not self.orphaned:
            self.queue.resume_fast_path()
        self.failures.report(err, stacklevel=3)

    # -- waits ----------------------------------------------------------------------------
    def callers_waiting(self) -> int:
        """How many threads are inside a call that waits (flush, close, room in the queue)."""
        return len(self._waiting)

    def held_by_this_thread(self) -> bool:
        """True while the calling thread is inside a call of this writer, waiting
        included (the lock is released then)."""
        if self._lock._is_owned():  # type: ignore[attr-defined]
            return True
        return bool(self._waiting) and threading.get_ident() in self._waiting

    def acquire(self, deadline: float | None, doing: str, timeout: float | None) -> None:
        """Take the lock; the caller counts as inside the writer until :meth:`release`.

        The lock is only held briefly (no I/O under it), but a caller with a deadline
        never waits for it beyond that deadline either (``TimeoutError``).
        """
        # Past the deadline it still waits a moment: the lock is held only briefly (the
        # writer thread takes it between batches), and a writer that is done must not
        # fail a flush only because its thread held the lock at that instant.
        wait = -1.0 if deadline is None else max(_LOCK_GRACE_SECS, deadline - time.monotonic())
        if not self._lock.acquire(timeout=wait):
            raise TimeoutError(f"{doing} {self.worker.name} took longer than {timeout} s")
        self._waiting.add(threading.get_ident())

    def release(self) -> None:
        """Leave the call begun by :meth:`acquire`."""
        self._waiting.discard(threading.get_ident())
        self._lock.release()

    def wait(self, done: Callable[[], bool], deadline: float | None, doing: str,
             timeout: float | None) -> None:
        """Wait (the lock released meanwhile) until ``done()``, or the deadline
        (``TimeoutError``). Short polls: a dead writer thread never hangs the caller (a
        flush gives up on it; a close has a thread of its own finish the job)."""
        worker = self.worker
        while not done():
            if worker.died():
                if doing == "flushing":
                    self.check_thread()
                    return
                worker.begin_close()
            elif doing == "flushing" and worker.finished:
                return
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"{doing} {worker.name} took longer than {timeout} s")
            worker.progress.wait(POLL_SECS if remaining is None else min(remaining, POLL_SECS))
