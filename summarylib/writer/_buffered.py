"""The buffered writer resource: events in, TFRecords out, I/O off the caller's thread.

Composed of small parts, each one concept:

* :class:`~summarylib.writer._queue.EventQueue`: the lock-free append, the byte bound;
* :class:`~summarylib.writer._batch.BatchEncoder`: a batch of entries (Events, deferred
  events, compact records) encoded and framed onto the :class:`Output`;
* :class:`~summarylib.writer._losses.LossLedger`: which events were lost, who was told;
* :class:`~summarylib.writer._tags.TagLedger`: the current file's tags with metadata;
* :mod:`~summarylib.writer._lifecycle`: exit, garbage collection, fork, multiprocessing.

This class is the flush protocol and the background thread that drives them.

Flush policy (as ``tf.summary``'s file writer): when more than ``max_queue`` events are
pending; at most ``flush_secs`` after the last flush; on ``flush()`` and ``close()``
(both wait until the data is written, up to their ``timeout``: all I/O, including
close's final fsync, happens on the background thread, and the lock is never held during
I/O); at interpreter exit and when the owning writer is garbage collected.

Errors raised by the output in the background are parked and raised on the caller's
thread by the next ``append``, ``flush`` or ``close`` as
:class:`~summarylib.errors.WriteFailedError` (or warned with ``on_error="warn"``); every
``flush()``/``close()`` that covered a lost event reports it (see the loss ledger). The
batch that failed is dropped; waits are timed and check that the thread is alive.

After ``fork()`` the child drops the parent's pending events (the parent writes them) and
opens its own file on first use. A writer whose output cannot be reopened (a custom
:class:`Output`) refuses to write in the child. The lock is re-entrant: a signal handler
or warnings hook running on a thread inside a call may call the writer again. Such a
re-entered call never *waits*: waiting releases the lock under the interrupted call, and a
handler interrupted in its wait by the next signal would nest without bound. A re-entered
``flush()`` asks the writer thread to write and returns at once; a re-entered append does
not wait for room (see :meth:`BufferedEventWriter.held_by_this_thread`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Literal

from summarylib.writer import _lifecycle as lifecycle
from summarylib.writer._batch import BatchEncoder, Deferred, RecordCodecs
from summarylib.writer._gate import WriterGate
from summarylib.writer._lifecycle import EXIT_TIMEOUT_SECS
from summarylib.writer._losses import Failures, again
from summarylib.writer._output import Output
from summarylib.writer._queue import EventQueue
from summarylib.writer._tags import TagLedger
from summarylib.writer._worker import COALESCE_SECS, Worker

__all__ = [
    "COALESCE_SECS",
    "EXIT_TIMEOUT_SECS",
    "BufferedEventWriter",
    "Deferred",
    "OnError",
    "live_writers",
]

OnError = Literal["raise", "warn"]

# start_flush() gives up on the lock after this long: it is held for microseconds, so
# only a stuck holder (a bug) makes it wait; the events are then written by the policy.
_LOCK_SECS = 1.0


class BufferedEventWriter:
    """A thread-safe, bounded, background-flushed event record writer.

    Args:
      open_output: returns a fresh output whose first record (the file
        version event) is already written. Called once now, and again in a
        forked child on first use.
      max_queue: flush when more than this many events are pending (>= 0).
      flush_secs: flush pending events at most this long after the last flush.
      max_buffer_bytes: bound on the payload bytes accepted but not written
        (queued, the batch in flight, and what the output holds back); a caller
        whose event takes the total above it waits.
      on_error: "raise" to raise background errors on the caller's next call,
        "warn" to warn and keep going.
      fsync: also ``fsync`` after every background flush (``close()`` always syncs).
      reopenable: ``open_output`` makes a new output each call, so a forked
        child can open its own; False for a caller-provided output.
    """

    def __init__(
        self,
        open_output: Callable[[], Output],
        *,
        max_queue: int,
        flush_secs: float,
        max_buffer_bytes: int,
        on_error: OnError = "raise",
        fsync: bool = False,
        reopenable: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        #: The wall time of events made without one (seconds since the epoch): ops call it.
        self.clock = clock
        self._open_output = open_output
        self._reopenable = reopenable
        self._max_queue = max_queue if flush_secs > 0 else 0
        self._flush_secs = flush_secs
        self._max_buffer_bytes = max_buffer_bytes
        self._on_error: OnError = on_error
        self._fsync = fsync
        output = open_output()
        #: The current file's tag ledger (replaced on a new file or a loss).
        self.tags = TagLedger()
        self._codecs = RecordCodecs()  # kept across files: queued records find theirs
        # The parts refer back to this writer weakly: no reference cycle, so a writer
        # nobody holds is freed at once (its owner's finalizer has closed it by then).
        me = weakref.proxy(self)
        self._encoder = BatchEncoder(self._codecs, lambda index, err: me._lose_one(index, err))
        self._init_state(output, output.name)
        lifecycle.register(self)

    def _init_state(self, output: Output | None, name: str) -> None:
        self._lock = threading.RLock()
        me = weakref.proxy(self)
        self._gate = gate = WriterGate(
            self._lock, Failures(self._on_error), max_queue=self._max_queue,
            max_buffer_bytes=self._max_buffer_bytes,
            on_start=lambda: me._started())
        # Weakly again (the gate holds the queue and the worker): no cycle among the parts.
        g = weakref.proxy(gate)
        self._queue = gate.queue = EventQueue(self._lock, g, max_queue=self._max_queue,
                                              max_buffer_bytes=self._max_buffer_bytes)
        #: Queue one serialized Event (or a :class:`Deferred` one). Thread-safe. True, or
        #: False (dropping it) once an exit hook closed the writer. Raises
        #: WriterClosedError (closed) or WriteFailedError (an earlier write failed).
        self.append = self._queue.append
        self._worker = gate.worker = Worker(
            self._lock, self._queue, output, open_output=self._open_output,
            encoder=self._encoder, park=lambda err, first, end: me.park_error(err, first, end),
            error_parked=lambda: g.failures.pending is not None,
            batch_lost=lambda: me._new_ledger(), finished=lambda: me._forget(),
            name=name, max_queue=self._max_queue, flush_secs=self._flush_secs,
            fsync=self._fsync, reopenable=self._reopenable)

    @property
    def name(self) -> str:
        """The output's name (in messages)."""
        return self._worker.name

    @property
    def path(self) -> str | None:
        """The output's name while it is open or was last open; None in a forked child
        until it opens its own file."""
        return self._worker.path

    @property
    def queue(self) -> EventQueue:
        """The event queue (a seam for diagnostics and tests: its ``entries`` list may be
        replaced, under the lock and while empty, by a list that runs code in ``append``)."""
        return self._queue

    @property
    def output(self) -> Output | None:
        """The open output (None once closed, and in a forked child until first use)."""
        return self._worker.output

    @property
    def error_pending(self) -> bool:
        """True while a background failure waits to be reported by the next call."""
        return self._gate.failures.pending is not None

    @property
    def codecs(self) -> RecordCodecs:
        """The registered compact record formats: an op registers one with
        ``codecs.register(expand, frame_run)`` (see :class:`RecordCodecs`)."""
        return self._codecs

    @property
    def lock(self) -> threading.RLock:
        """The writer's lock: the queue's slow path, the flush protocol and error parking."""
        return self._lock

    def _started(self) -> None:
        lifecycle.close_at_multiprocessing_exit(self)

    def _forget(self) -> None:
        lifecycle.forget(self)

    # -- errors (lock held) -----------------------------------------------------------
    def _new_ledger(self) -> None:
        # Lost events may have carried their tags' metadata, so every tag's next event
        # carries it again (readers ignore repeats).
        self.tags = TagLedger()

    def park_error(self, err: BaseException, first: int, end: int) -> None:
        """Record a background failure that lost events ``[first, end)`` (numbered from the
        file's first event); the lock must be held.

        What the writer thread does when a write fails: the next call reports ``err``, and
        so does every ``flush()``/``close()`` covering those events; appends take the slow
        path until then. A seam for tests of the error path (``first == end``: no event
        lost, an error to report).
        """
        self._gate.park_error(err, first, end)

    def lost_ranges(self) -> list[tuple[int, int]]:
        """The ranges ``[first, end)`` of events lost so far, merged (for diagnostics)."""
        return self._gate.failures.ledger.ranges()

    # -- flush and close ------------------------------------------------------------
    def flush(self, timeout: float | None = None, *, sync: bool = False) -> None:
        """Write every event appended before this call; return when it is written.

        Also hands over what the output holds back (an object store uploads it now).
        Raises (or warns) if an event it covers was lost, even when another thread's
        call reported that loss first.

        Called re-entrantly (from a signal handler or warnings hook running on a thread
        inside a call of this writer) it cannot wait: it asks the writer thread to write
        everything now and returns at once.

        Args:
          timeout: give up waiting after this many seconds (``TimeoutError``).
          sync: also ``fsync`` the output once the events are written.
        """
        if self.held_by_this_thread():
            self.start_flush(sync=sync)
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        gate = self._gate
        gate.acquire(deadline, "flushing", timeout)
        try:
            worker = self._worker
            if gate.closed or worker.finished:
                # Nothing left to write, but a loss of this thread's events may have been
                # told to another thread only (the one whose close() met it): tell it here.
                own = gate.failures.covered(worker.taken + len(self._queue))
                if own is not None:
                    gate.failures.report(own)
                return
            target = worker.taken + len(self._queue)
            failed = None
            if target > worker.written or sync or self._queue.held_bytes:
                ticket = worker.request_round(sync)
                gate.wait(lambda: worker.served(ticket), deadline, "flushing", timeout)
                failed = worker.round_error(ticket)
            own = gate.failures.covered(target)
            if gate.failures.pending is not None:
                gate.failures.fold(own)
                gate.surface_error()
            elif own is not None:
                gate.failures.report(own)
            elif failed is not None:
                # Its round's upload (or fsync) failed, and another thread's call took
                # the parked error: this flush() did not do what it promises either.
                gate.failures.report(again(failed))
        finally:
            gate.release()

    def write_pending_here(self, most: int) -> None:
        """Write every event appended before this call, as :meth:`flush` does, on the
        calling thread when that is cheaper than waking the writer thread: at most
        ``most`` events pending, none in flight, a local file (see ``Worker.take_here``).
        Otherwise (and for an error to report) it is :meth:`flush`.

        What leaving ``as_default()`` calls: TensorFlow's block ends with its events in
        the file, and a block per training step writes its one event with one ``write``
        instead of a round trip to the writer thread.
        """
        queue = self._queue
        if not len(queue) and not queue.inflight_bytes:
            return  # nothing pending, nothing in flight (a read without the lock: exact
            # for this thread's own appends, which happened before)
        if self.held_by_this_thread():
            self.start_flush()  # re-entered: never waits
            return
        worker = self._worker
        lock = self._lock
        with lock:
            taken = None if self._gate.closing else worker.take_here(most)
        if taken is None:
            self.flush()
            return
        batch, first = taken
        own = None
        failures = self._gate.failures
        try:
            worker.write_here(batch, first)
        finally:
            with lock:
                worker.done_here(len(batch))
                if failures.pending is None:  # an event of the batch lost on its own
                    own = failures.covered(first + len(batch))
        if failures.pending is not None:
            self.flush()  # reports the failure, as flush() would have
        elif own is not None:
            failures.report(own)

    def start_flush(self, *, sync: bool = False, urgent: bool = True) -> None:
        """Ask the writer thread to write (and push) what is pending now; never waits
        for the write.

        ``urgent=False`` lets the request join the writer thread's pacing: written at
        once if it is idle, else at the end of its current cool-down (at most
        ``COALESCE_SECS``), so a caller asking at every training step wakes it a few
        times a second, not at every step. It takes the lock, which is only ever held
        briefly (no I/O happens under it); a re-entered call already holds it.
        """
        worker = self._worker
        if not urgent and worker.wake_pending:  # asked already: nothing to add (no lock)
            return
        if not self._lock.acquire(timeout=_LOCK_SECS):  # pragma: no cover - a stuck holder
            return
        try:
            if worker.started and not self._gate.closing:
                worker.wake(urgent=urgent, sync=sync)
        finally:
            self._lock.release()

    def callers_waiting(self) -> int:
        """How many threads are inside a ``flush()``, ``close()`` or an append waiting for
        room (diagnostics, and a seam for tests of concurrent calls)."""
        return self._gate.callers_waiting()

    def held_by_this_thread(self) -> bool:
        """True while the calling thread is inside a call of this writer.

        That includes a wait inside a call (the lock is released then). A signal
        handler checks it: it must not wait for the writer thread then (see
        :mod:`summarylib.writer._signals`).
        """
        return self._gate.held_by_this_thread()

    def flush_quietly(self, timeout: float, *, sync: bool = False) -> None:
        """Flush for a signal handler or exit hook: skip a writer being closed.

        A writer that is closing is written out by its ``close()``; waiting for it here
        could wait for the very frame this handler interrupted.
        """
        if self._gate.closed or self._gate.closing:
            return
        self.flush(timeout, sync=sync)

    def close(self, timeout: float | None = None) -> None:
        """Write every pending event, ``fsync`` and close the output.

        Returns once that is done; a concurrent call waits for the same, a later one
        does nothing. The writer thread does the I/O, never the caller, so ``timeout``
        holds even while the storage hangs. After a ``TimeoutError`` no new events are
        accepted, and calling ``close()`` again finishes the job.

        Raises:
          WriteFailedError: an event accepted before ``close()`` was lost and this
            thread was not told yet, or the final ``fsync``/close failed. The writer
            is closed anyway.
          TimeoutError: ``timeout`` seconds passed first.
        """
        if self._worker.on_this_thread():
            # On the writer thread itself (a finalizer ran there): it cannot wait for
            # itself, so a helper closes.
            threading.Thread(target=lifecycle.close_at_exit, args=(lambda: self,),
                             name="summarylib-close", daemon=True).start()
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        gate = self._gate
        gate.acquire(deadline, "closing", timeout)
        try:
            if gate.closed:
                # A later close() does nothing, but reports a loss of this thread's events
                # that only another thread was told of.
                own = gate.failures.covered(self._worker.taken + len(self._queue))
                if own is not None:
                    gate.failures.report(own)
                return
            worker = self._worker
            if not gate.closing:
                gate.closing = True
                self._queue.stop_fast_path()  # no new events from here on
            worker.begin_close()
            # The worker writes what is pending, then pushes, syncs and closes the
            # output, all outside the lock: this wait keeps its own deadline even when
            # the storage hangs (and so does every flush() meanwhile).
            gate.wait(lambda: worker.finished, deadline, "closing", timeout)
            failures = gate.failures
            own = failures.covered(worker.taken + len(self._queue))
            failures.fold(own)
            err = None  # a concurrent close() reported the parked error
            if not gate.closed:
                gate.closed = True
                err, failures.pending = failures.pending, None
            close_error = worker.close_error
        finally:
            gate.release()
        if err is None:
            err = own if own is not None else (None if close_error is None
                                               else again(close_error))
        if err is not None:
            gate.failures.report(err)

    def close_at_exit(self, timeout: float) -> None:
        """``close(timeout)`` for exit hooks: later ops return False with one warning."""
        # Unlocked: an exit hook must not wait for a lock a stuck thread holds (close()
        # has its own deadline), and a racing user close() only makes late ops quiet.
        gate = self._gate
        if not (gate.closed or gate.closing):
            gate.closed_by_exit = True
        self.close(timeout)

    @property
    def closed(self) -> bool:
        """True once ``close()`` has finished."""
        return self._gate.closed

    def _lose_one(self, index: int, err: BaseException) -> None:
        # An entry's own encoding failed on the writer thread: that event alone is lost.
        with self._lock:
            self.park_error(err, index, index + 1)

    # -- fork -------------------------------------------------------------------------
    def after_fork_in_child(self) -> None:
        """Reset in a forked child (only the forking thread exists; locks may be held by
        threads that are gone). The parent's pending events stay with the parent."""
        if self._gate.closed:
            return
        closing = self._gate.closing
        out = self._worker.output
        if out is not None:
            with contextlib.suppress(Exception):  # the parent's file is not ours to fix
                out.discard()
        self.tags = TagLedger()  # the child's file starts without any metadata
        if closing:
            # The parent's close() had begun: the parent finishes it; here it is closed.
            self._init_state(None, self.name)
            self._gate.closed = True
            self._queue.stop_fast_path()
            lifecycle.forget(self)
            return
        if not self._reopenable:
            self._init_state(None, self.name)
            self._gate.orphaned = True
            self._queue.stop_fast_path()  # every append raises
        else:
            self._init_state(
                None, f"a new event file of process {os.getpid()} (opened on first use)")


def live_writers() -> list[BufferedEventWriter]:
    """Every writer of this process that is not closed yet."""
    return [w for w in lifecycle.live_writers() if isinstance(w, BufferedEventWriter)]
