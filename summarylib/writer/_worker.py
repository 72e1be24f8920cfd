"""The writer's background thread: batches from the queue onto the output.

The :class:`Worker` waits for a reason to write (the queue's length, ``flush_secs``, a
flush, close), takes the whole queue as one batch, has the batch encoder write it, and
for a flush round pushes what the output holds back and syncs. At close it writes what is
left, pushes, syncs and closes the output. All I/O happens here, outside the lock; the
lock is held only to take a batch and to publish progress.

Flush rounds: a ``flush()`` takes a ticket (:meth:`Worker.request_round`); a round serves
every ticket issued before it took its batch, and marks them served only after pushing
and syncing. So a flush never returns on a round that began before it was asked.

Every method of :class:`Output` it calls is declared there: ``write``/``flush`` (through
the encoder), ``push``, ``sync``, ``close``, ``held_bytes``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from summarylib.errors import SummaryError
from summarylib.writer._batch import BatchEncoder, BatchWriteError
from summarylib.writer._losses import write_failed
from summarylib.writer._output import FileOutput, Output
from summarylib.writer._queue import EventQueue

__all__ = ["COALESCE_SECS", "Worker"]

#: After writing a batch that the queue length called for, the worker waits this long
#: before the next such batch: a fast loop then gets a few large writes instead of a
#: wake-up (and a fight for the GIL) every ``max_queue`` events. Each batch costs a
#: training loop far more than its own CPU time; TensorBoard reloads every few seconds and
#: cannot tell. flush(), close(), a full buffer and interpreter exit never wait for it.
COALESCE_SECS = 0.25


class Worker:
    """Drives one writer's output from its queue on a thread of its own.

    Args:
      lock: the writer's lock, with ``work`` (the thread waits there) and ``progress``
        (callers wait there) conditions on it.
      queue: the writer's queue.
      output: the open output, or None in a forked child (opened on first write).
      open_output: opens a new output.
      encoder: writes batches.
      park: ``park(error, first, end)``, lock held: a failure lost events [first, end).
      error_parked: lock held: a failure waits to be reported.
      batch_lost: lock held: a batch was (partly) lost (its tags' metadata with it).
      finished: called once the output is closed.
    """

    def __init__(self, lock: threading.RLock, queue: EventQueue, output: Output | None, *,
                 open_output: Callable[[], Output], encoder: BatchEncoder,
                 park: Callable[[BaseException, int, int], None],
                 error_parked: Callable[[], bool], batch_lost: Callable[[], None],
                 finished: Callable[[], None], name: str, max_queue: int,
                 flush_secs: float, fsync: bool, reopenable: bool = True) -> None:
        self._lock = lock
        self.work = threading.Condition(lock)
        self.progress = threading.Condition(lock)
        self._queue = queue
        self.output = output
        self.name = name  # the output's name (in messages and the thread's name)
        #: The output's name while it is open or was last open; None in a forked child
        #: until it opens its own file.
        self.path: str | None = output.name if output is not None else None
        self._open_output = open_output
        self._encoder = encoder
        self._park = park
        self._error_parked = error_parked
        self._batch_lost = batch_lost
        self._on_finished = finished
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._fsync = fsync
        self._reopenable = reopenable
        self.taken = 0  # events taken from the queue, ever
        self.written = 0  # events finished with (written or lost), ever
        self._requested = self._served = 0
        # Rounds whose push or sync failed: (after, upto, error) serves the tickets in
        # (after, upto]. Every flush() such a round served reports it, whichever thread
        # took the parked error first (a failed upload loses no event: the bytes stay
        # held back for the next upload, so the loss ledger has nothing to record).
        self._failed_rounds: list[tuple[int, int, BaseException]] = []
        self._sync_requested = False
        self._wake_requested = False
        self._urgent = False  # flush(), close() or a full buffer: no cool-down wait
        self._cooling = False
        self.closing = False
        self.finished = False  # wrote, pushed, synced and closed the output
        self.close_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._last_flush = time.monotonic()
        self._writing_here = False  # a caller writes a batch itself (see take_here)

    # -- asked by the writer (lock held) ------------------------------------------------
    @property
    def started(self) -> bool:
        return self._thread is not None

    def on_this_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def start(self) -> None:
        """Start the thread (on the first event)."""
        self._thread = threading.Thread(target=self._run, name=f"summarylib-writer:{self.name}",
                                        daemon=True)
        self._thread.start()

    @property
    def wake_pending(self) -> bool:
        """A round was asked for and not taken yet (read without the lock: a hint)."""
        return self._wake_requested

    def died(self) -> bool:
        """The thread is gone without finishing (a bug): no round will come."""
        t = self._thread
        return t is not None and not t.is_alive() and not self.finished

    def wake(self, urgent: bool = False, sync: bool = False) -> None:
        """Ask for a round. While cooling down, a plain wake only marks the work (taken
        when the cool-down ends); an urgent one ends it."""
        self._sync_requested = self._sync_requested or sync
        if urgent:
            self._urgent = True
            if self._cooling:
                self.work.notify()
        if not self._wake_requested:
            self._wake_requested = True
            if not self._cooling:
                self.work.notify()

    def request_round(self, sync: bool) -> int:
        """A flush's ticket: a round that takes the queue from now on, then pushes."""
        if self._thread is None:
            self.start()
        self._requested += 1
        self.wake(urgent=True, sync=sync)
        return self._requested

    def served(self, ticket: int) -> bool:
        return self._served >= ticket

    def round_error(self, ticket: int) -> BaseException | None:
        """The error of the push or sync of the round that served ``ticket``, or None
        (lock held)."""
        for after, upto, error in reversed(self._failed_rounds):
            if after < ticket <= upto:
                return error
        return None

    def begin_close(self) -> None:
        """Write what is queued, then push, sync and close the output."""
        self.closing = True
        self._wake_requested = True
        self.work.notify()
        t = self._thread
        if t is None or not t.is_alive():
            # Nothing was ever logged, or the thread died: a thread of its own finishes,
            # never the caller.
            self._thread = threading.Thread(target=self._finish,
                                            name=f"summarylib-close:{self.name}", daemon=True)
            self._thread.start()

    # -- a small batch written by the caller -----------------------------------------
    def take_here(self, most: int) -> tuple[list[Any], int] | None:
        """Lock held: the queue as a batch for the *calling* thread to write itself, or
        None where it must ask this thread instead.

        Taken only when that is exact and cheap: at most ``most`` events, none in flight
        (so file order holds), a local file open, no ``fsync`` per write, no error
        waiting to be reported, not closing. Hand the batch to :meth:`write_here`, then
        :meth:`done_here`; until then this thread takes no batch.
        """
        out = self.output
        if (self.closing or self.finished or self._writing_here or self._fsync
                or self.taken != self.written or self._error_parked()
                or not isinstance(out, FileOutput) or out.torn or len(self._queue) > most):
            return None
        batch = self._queue.take_all()
        first = self.taken
        self.taken += len(batch)
        self._writing_here = True
        return batch, first

    def write_here(self, batch: list[Any], first: int) -> None:
        """On the caller's thread, without the lock: write a batch of :meth:`take_here`
        (a failure is parked and reported as the thread's own would be)."""
        self._write(batch, first)

    def done_here(self, count: int) -> None:
        """Lock held: the batch of :meth:`take_here` (``count`` events) is written."""
        self.written += count
        self._queue.batch_done(0)
        self._last_flush = time.monotonic()
        self._writing_here = False
        self.progress.notify_all()
        self.work.notify_all()

    def _wait_for_caller_batch(self) -> None:
        # Lock held: a caller is writing a batch itself; the next one follows it.
        while self._writing_here:
            self.work.wait()

    # -- the thread -----------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except ReferenceError:
            return  # the writer was freed without being closed: nobody waits for this thread
        except BaseException as e:  # pragma: no cover - a bug; never hang waiters
            with self._lock:
                err = SummaryError(f"summarylib's writer thread for {self.name} died: {e!r}")
                self._park(err, self.written, self.taken)
                self.progress.notify_all()
            raise

    def _loop(self) -> None:
        lock = self._lock
        while True:
            with lock:
                batch, first, urgent, stop = self._next_batch()
                serving = self._requested
                sync = self._sync_requested or (self._fsync and bool(batch))
            if batch:
                self._write(batch, first)
            output = self.output
            failed = None
            if output is not None and not stop:
                # An explicit flush: outputs that hold back data (object stores upload in
                # windows) hand over everything now, even after an earlier failure.
                if urgent or serving > self._served:
                    failed = self._call(output.push)
                if sync and not self._error_parked():
                    failed = self._call(output.sync) or failed
            held = output.held_bytes if output is not None else 0
            with lock:
                self.written += len(batch)
                self._queue.batch_done(held)
                if failed is not None and serving > self._served:
                    self._failed_rounds.append((self._served, serving, failed))
                    del self._failed_rounds[:-64]  # a flush waits for its own round only
                self._served = max(self._served, serving)
                if sync and not stop:
                    self._sync_requested = False
                self._last_flush = time.monotonic()
                self.progress.notify_all()
                if batch and not stop and not urgent and not self._error_parked():
                    self._cool_down()
            if stop:
                self._finish()
                return

    def _call(self, method: Callable[[], None]) -> BaseException | None:
        try:
            method()
        except Exception as e:
            err = write_failed(self.name, e)
            with self._lock:
                self._park(err, 0, 0)
            return err
        return None

    def _cool_down(self) -> None:
        # Lock held (released while waiting): see COALESCE_SECS. Never longer than
        # flush_secs, and not at all with max_queue 0 (every event written at once).
        if self._max_queue == 0:
            return
        deadline = time.monotonic() + min(COALESCE_SECS, self._flush_secs)
        self._cooling = True
        try:
            while not (self._urgent or self.closing):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.work.wait(remaining)
        finally:
            self._cooling = False

    def _next_batch(self) -> tuple[list[Any], int, bool, bool]:
        # Lock held. Wait until there is a reason to write, then take the batch.
        while not (self.closing or self._wake_requested):
            if len(self._queue):
                wait = self._last_flush + self._flush_secs - time.monotonic()
                if wait <= 0:
                    break
            else:
                wait = self._flush_secs
            self.work.wait(min(wait, threading.TIMEOUT_MAX))
        self._wait_for_caller_batch()
        batch = self._queue.take_all()
        first = self.taken
        self.taken += len(batch)
        self._wake_requested = False
        urgent, self._urgent = self._urgent, False
        return batch, first, urgent, self.closing

    def _write(self, batch: list[Any], first: int) -> None:
        # A failing encoder loses only its own event; a failing output parks the error and
        # loses the rest of the batch (which no flush() acknowledges).
        out = self.output
        try:
            if out is None:
                out = self._reopen()
            self._encoder.write(batch, first, out)
        except Exception as e:
            cause = e.cause if isinstance(e, BatchWriteError) else e
            done = e.done if isinstance(e, BatchWriteError) else 0
            name = self.name
            if out is None and isinstance(getattr(cause, "filename", None), str):
                name = cause.filename  # type: ignore[attr-defined]  # the file we could not open
            with self._lock:
                self._park(write_failed(name, cause), first + done, first + len(batch))
                if done < len(batch):
                    self._batch_lost()
            if out is not None and out.torn and self._reopenable:
                self._leave_torn(out)

    def _leave_torn(self, out: Output) -> None:
        # The output ends in a partly written block: nothing may follow it, and nothing
        # of it may be cut (a reader may have read it). Close it; the next write opens a
        # new file, which sorts after this one, so readers move on to it. Its tags have
        # their metadata again (a new ledger), as in any new file.
        with contextlib.suppress(Exception):  # the write's own error is reported already
            out.close()
        with self._lock:
            self.output = None
            self._batch_lost()

    def _reopen(self) -> Output:
        # First use in a forked child: a new file of our own.
        out = self._open_output()
        with self._lock:
            self.output = out
            self.name = self.path = out.name
        return out

    def _finish(self) -> None:
        # The end of close(): write whatever is still queued (only if the thread died),
        # then push, fsync and close the output.
        error: BaseException | None = None
        try:
            with self._lock:
                self._wait_for_caller_batch()
                leftover = self._queue.take_all()
                first = self.taken
                self.taken += len(leftover)
            if leftover:
                self._write(leftover, first)
                with self._lock:
                    self.written += len(leftover)
            output = self.output
            if output is not None:
                try:
                    output.push()
                    output.sync()
                finally:
                    output.close()
        except Exception as e:
            error = write_failed(self.name, e)
        finally:
            with self._lock:
                self.output = None
                self.close_error = error
                self.finished = True
                self._served = self._requested
                self._sync_requested = False
                self.progress.notify_all()
            self._on_finished()
