"""The buffered writer resource: events in, TFRecords out, I/O off the caller's thread.

Callers append serialized ``Event`` payloads. A background thread frames them
(TFRecord + masked CRC-32C) and writes them to an :class:`Output`.

Flush policy (as ``tf.summary``'s file writer):

* when more than ``max_queue`` events are pending;
* at most ``flush_secs`` after the last flush, even if nobody writes again;
* on ``flush()`` and ``close()`` (both wait until the data is written, up to
  their ``timeout``: all I/O, including close's final fsync, happens on the
  background thread, and the lock is never held during I/O);
* at interpreter exit and when the owning writer is garbage collected (the
  owner arranges that through :func:`weakref.finalize`).

The buffer is bounded in **bytes** (``max_buffer_bytes``): events queued plus
the batch being written. A caller whose event takes the total above the bound
waits for the background thread: nothing is ever dropped to make room.

Errors raised by the output in the background are parked and raised on the
caller's thread by the next ``append``, ``flush`` or ``close`` as
:class:`~summarylib.errors.WriteFailedError` (naming the file), or turned into a
warning with ``on_error="warn"``. The batch that failed is dropped and the
file is cut back to its last whole record, so what was written before stays
readable. Waits are timed and check that the thread is alive: a dead thread
never hangs the caller.

After ``fork()`` the child drops the parent's pending events (the parent
writes them) and opens its own file on first use. A writer whose output
cannot be reopened (a custom :class:`Output`) refuses to write in the child:
sharing the parent's output would interleave records. A writer whose
``close()`` had begun in the parent (even one that timed out) is closed in
the child.

The lock is re-entrant: code that runs on a thread while it holds the lock
(a signal handler between two bytecodes, a warnings hook) may call the writer
again. A signal handler never *waits* while its thread holds the lock,
though: waiting on a condition releases the lock under the interrupted call
(see :mod:`summarylib.writer.signals`, which uses :meth:`held_by_this_thread`).

Hot-path design: ``append`` takes no lock. It appends to a list and compares
its length with ``_trigger`` (and the payload's with ``_large``): both are
atomic under the GIL, and the writer thread only ever removes entries from
the front of that list, under the lock. Everything else (waking the thread,
byte accounting, the bound, parked errors, closed state, fork) lives in the
slow paths, which take the lock and run only when the list length passes
``_trigger``, a payload is larger than ``_large``, or ``_trigger`` is
negative. An append that raced a close or a parked error is taken back from
the queue under the lock and decided there, so no event is acknowledged that
will not be written.

Compact records (:meth:`BufferedEventWriter.register_record_format`) let an
op queue its values in a few bytes and leave the assembly of the Event to
the writer thread; :func:`~summarylib.scalars` uses them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Literal

from summarylib.encoding.compact import MARK, MARKER_SIZE, format_number, marker
from summarylib.encoding.tfrecord import frame_many
from summarylib.errors import SummaryError, WriteFailedError, WriterClosedError
from summarylib.writer.output import Output

__all__ = ["BufferedEventWriter", "Deferred", "OnError", "live_writers"]

OnError = Literal["raise", "warn"]

# Payloads above a size limit (_LARGE_PAYLOAD while there is plenty of room,
# down to _MIN_LARGE_PAYLOAD when the buffer is nearly full) are accounted at
# once; smaller ones are summed in batches, at most every _CHECK_EVERY appends,
# which keeps the scalar path lean. Limit times appends between counts never
# exceeds the room left, so the bound holds exactly (see _set_trigger).
_LARGE_PAYLOAD = 4096
_MIN_LARGE_PAYLOAD = 256
_CHECK_EVERY = 256
# Blocks handed to the output stay under glibc's mmap threshold (128 KiB):
# bigger short-lived buffers are mmapped and unmapped on every write.
_BLOCK_BYTES = 96 * 1024
# How often waiting callers re-check that the background thread is alive.
_POLL_SECS = 0.05
#: After writing a batch that the queue length called for, the writer thread waits this
#: long before the next such batch: a fast loop then gets a few large writes instead of a
#: wake-up (and a fight for the GIL) every ``max_queue`` events. Each batch costs a
#: training loop far more than its own CPU time (the thread takes the GIL several times
#: while the loop wants it back from torch's ops), so batches are few; TensorBoard reloads
#: every few seconds and cannot tell. flush(), close(), a full buffer and interpreter exit
#: never wait for it.
COALESCE_SECS = 0.25
# Queue entries that begin with MARK are compact records (see register_record_format
# and summarylib.encoding.compact).
_MAX_RECORD_FORMATS = 4096


class _TakenBack:
    """The queue's placeholder for an event taken back by its caller (see _take_back)."""

    __slots__ = ()

    def __len__(self) -> int:
        return 0


_TAKEN_BACK = _TakenBack()
# (expand one record, frame a run of records or None): see register_record_format.
_RecordFormat = tuple[Callable[[bytes], bytes], Callable[[list[bytes]], bytes] | None]
# Runs of records of one format this long or longer go to its run framer, in pieces
# of at most _MAX_RUN (whose framed bytes stay near _BLOCK_BYTES).
_MIN_RUN = 8
_MAX_RUN = 384
# Failed batches remembered so that every flush()/close() that covered one
# reports it, even after another call consumed the parked error.
_LOSS_HISTORY = 64
#: How long an exit hook (interpreter exit, garbage collection, the end of a
#: multiprocessing child) waits for a writer to finish before giving up.
EXIT_TIMEOUT_SECS = 30.0

_live: weakref.WeakSet[BufferedEventWriter] = weakref.WeakSet()


def live_writers() -> list[BufferedEventWriter]:
    """Every writer of this process that is not closed yet."""
    return list(_live)


class Deferred:
    """An event whose payload is computed by the writer thread, not the caller.

    ``make`` returns the serialized Event. ``size`` estimates its length for
    the buffer bound (``len()`` returns it). ``what`` names it in errors.
    Ops validate their input on the caller's thread and copy what they keep,
    so ``make`` is pure computation (PNG/WAV encoding, bucketing).
    """

    __slots__ = ("make", "prepare", "size", "what")

    def __init__(
        self,
        make: Callable[[], bytes],
        size: int,
        what: str,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        self.make = make
        self.size = size
        self.what = what
        #: Optional: the expensive, order-free part of ``make`` (PNG/WAV encoding), which
        #: must never raise and leaves its result where ``make`` finds it. The writer runs
        #: the ``prepare`` of several events on a few threads at once (the encoders release
        #: the GIL); ``make`` still runs in file order.
        self.prepare = prepare

    def __len__(self) -> int:
        return self.size


# What the queue holds: serialized Events (or compact records), deferred ones, and
# placeholders of events taken back.
_Entry = bytes | Deferred | _TakenBack


class BufferedEventWriter:
    """A thread-safe, bounded, background-flushed event record writer.

    Args:
      open_output: returns a fresh output whose first record (the file
        version event) is already written. Called once now, and again in a
        forked child on first use.
      max_queue: flush when more than this many events are pending (>= 0).
      flush_secs: flush pending events at most this long after the last flush.
      max_buffer_bytes: bound on the payload bytes accepted but not written
        (queued plus the batch in flight); a caller whose event takes the
        total above it waits, so it is exceeded by at most one event per
        waiting caller.
      on_error: "raise" to raise background errors on the caller's next call,
        "warn" to warn and keep going.
      fsync: also ``fsync`` after every background flush (``close()`` always
        syncs).
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
    ) -> None:
        self._open_output = open_output
        self._reopenable = reopenable
        self._orphaned = False  # a non-reopenable writer in a forked child
        self._mp_exit_hook_pid = 0  # the process that registered an exit hook
        self._max_queue = max_queue if flush_secs > 0 else 0
        self._flush_secs = flush_secs
        self._max_buffer_bytes = max_buffer_bytes
        self._on_error = on_error
        self._fsync = fsync
        self._output: Output | None = open_output()
        self.name = self._output.name
        #: The output's name while it is open or was last open; None in a
        #: forked child until it opens its own file.
        self.path: str | None = self.name
        #: Per-file state of the encoders (tags whose metadata is written,
        #: cached scalar prefixes); cleared whenever a new file is opened.
        self.scalar_prefixes: dict[str, bytes] = {}
        self.tags_with_metadata: set[str] = set()
        #: Per-file layouts of :func:`~summarylib.scalars` events (the ops' own objects).
        self.scalar_layouts: dict[Any, Any] = {}
        # Expanders of compact records, by number; only ever appended to, so that a
        # record queued before a reset still finds its format.
        self._record_formats: list[_RecordFormat] = []
        self._init_state()
        self._closed = False
        _live.add(self)

    def _init_state(self) -> None:
        # Re-entrant: a signal handler or warnings hook may call the writer
        # on a thread that holds it (see the module docstring).
        self._lock = threading.RLock()
        self._work = threading.Condition(self._lock)  # the thread waits here
        self._progress = threading.Condition(self._lock)  # callers wait here
        self._pending: list[_Entry] = []
        self._pending_bytes = 0
        self._counted = 0  # entries of _pending already summed into _pending_bytes
        self._inflight_bytes = 0  # the batch the thread is writing (still in memory)
        self._large = _LARGE_PAYLOAD  # payloads above this take the slow path
        self._trigger = 0  # the first append starts the thread
        self._taken = 0  # events handed to the thread, ever
        self._written = 0  # events the thread finished with, ever
        self._wake_requested = False
        self._urgent = False  # flush(), close() or a full buffer: no cool-down wait
        self._took_urgent = False
        self._cooling = False  # the writer thread waits out COALESCE_SECS
        self._sync_requested = False
        self._closing = False
        # Closed by an exit hook (interpreter exit, garbage collection), not by the user: a
        # thread still logging then gets False from its ops instead of an exception.
        self._closed_by_exit = False
        self._dropped_warned = False
        self._error: BaseException | None = None
        # (first, end, error) of every event range lost since, by index as
        # counted by _taken; _loss_count counts ranges ever recorded.
        self._losses: deque[tuple[int, int, BaseException]] = deque(maxlen=_LOSS_HISTORY)
        self._loss_count = 0
        self._close_from: tuple[int, int] | None = None  # (_written, _loss_count) then
        # The writer thread has written everything and flushed, synced and
        # closed the output (close() then reports; _closed follows).
        self._finished = False
        self._close_error: BaseException | None = None  # that final flush/sync/close failed
        self._thread: threading.Thread | None = None
        self._last_flush = time.monotonic()

    # ------------------------------------------------------------------
    # Caller side
    # ------------------------------------------------------------------
    def append(self, payload: bytes | Deferred) -> bool:
        """Queue one serialized Event (or a :class:`Deferred` one). Thread-safe.

        Returns True, or False (and drops ``payload``) once an exit hook has closed the
        writer: see :meth:`close_at_exit`.

        Raises:
          WriterClosedError: the writer is closed (by ``close()``).
          WriteFailedError: an earlier background write failed (once per failure).
        """
        # No lock on the common path: under the GIL (or the list's own lock on a
        # free-threaded build) append() and len() are atomic, the writer thread only
        # removes entries from the front of the list (never swaps it), and every
        # state that needs the lock (closing, a parked error, after fork) sets
        # _trigger to -1 first. A payload that raced such a change is taken back
        # in _settle, so no event is acknowledged that will not be written.
        if self._trigger >= 0:
            pending = self._pending
            pending.append(payload)
            if len(pending) > self._trigger or len(payload) > self._large:
                return self._settle(payload)
            return True
        return self._append_locked(payload)

    def _append_locked(self, payload: bytes | Deferred) -> bool:
        with self._lock:
            if self._trigger < 0 and not self._before_append():
                return False
            pending = self._pending
            pending.append(payload)
            if len(pending) > self._trigger or len(payload) > self._large:
                self._after_append()
        return True

    def _settle(self, payload: bytes | Deferred) -> bool:
        # Slow path of a lock-free append (payload is queued already).
        with self._lock:
            if self._trigger >= 0:
                self._after_append()
                return True
            # The writer closed or parked an error after this append began. Still
            # queued: take it back and decide under the lock, as if it came now.
            # Already taken by the writer thread: it is written (or its loss is
            # reported) like every event before it.
            if not self._take_back(payload):
                return True
        return self._append_locked(payload)

    def _take_back(self, payload: bytes | Deferred) -> bool:
        # Lock held: remove payload from the queue if it is still there. Other
        # threads may append meanwhile (at the end); only lock holders remove.
        # The entry is replaced, not removed: a flush() may have counted it already,
        # and event indices (flush targets, loss ranges) must not shift. The writer
        # thread counts the placeholder as written and writes nothing for it.
        pending = self._pending
        for i in range(len(pending) - 1, -1, -1):
            if pending[i] is payload:
                pending[i] = _TAKEN_BACK
                if i < self._counted:
                    self._pending_bytes -= len(payload)
                return True
        return False

    def register_record_format(
        self,
        expand: Callable[[bytes], bytes],
        frame_run: Callable[[list[bytes]], bytes] | None = None,
    ) -> bytes | None:
        """The 4-byte prefix of compact records that ``expand`` turns into Events.

        A record is ``prefix + data``; it is appended like an Event and costs the
        caller only the packing of ``data``. The writer thread calls ``expand(record)``
        (the whole record, prefix included) and writes the Event it returns, in the
        record's place in the file. For a run of consecutive records of the format it
        calls ``frame_run(records)`` instead, if given, which must return exactly
        ``frame_many([expand(r) for r in records])``. Neither may fail for records
        their caller made. None when this writer has as many formats as it keeps
        (4096): the caller then appends whole Events.
        """
        with self._lock:
            number = len(self._record_formats)
            if number >= _MAX_RECORD_FORMATS:
                return None
            self._record_formats.append((expand, frame_run))
        return marker(number)

    def _before_append(self) -> bool:
        # Slow path, lock held: closed, or an error is parked. False: drop the event.
        if self._orphaned:
            raise WriterClosedError(
                f"the summary writer for {self.name} writes to a custom Output of the "
                "parent process; it cannot write after fork(): create a writer in the child"
            )
        if self._closed or self._closing:
            if self._closed_by_exit:
                self._warn_dropped()
                return False
            raise WriterClosedError(f"summary writer for {self.name} is closed")
        self._surface_error()
        self._trigger = 0
        return True

    def _warn_dropped(self) -> None:
        # Once per writer: a daemon thread that logs in a loop must not flood stderr.
        if not self._dropped_warned:
            self._dropped_warned = True
            warnings.warn(
                f"summarylib: the writer for {self.name} was closed at interpreter exit; "
                "events logged after that are dropped",
                RuntimeWarning,
                stacklevel=4,
            )

    def _after_append(self) -> None:
        # Slow path, lock held: account bytes, start or wake the thread, bound.
        if self._thread is None:
            self._start_thread()
        if len(self._pending) > self._max_queue:
            self._wake()
        self._account()
        if self._pending_bytes + self._inflight_bytes > self._max_buffer_bytes:
            self._wait_for_room()
        self._set_trigger()

    def _account(self) -> None:
        # Lock held: add the entries appended since the last count.
        # One slice: callers append without the lock, so a length taken apart from
        # the slice could count an entry twice.
        new = self._pending[self._counted :]
        if new:
            self._pending_bytes += sum(map(len, new))
            self._counted += len(new)

    def _set_trigger(self) -> None:
        # Lock held: how many appends may skip the slow path, and up to what
        # size. Skipped entries are at most _large bytes each, and step * _large
        # <= room: the total stays within max_buffer_bytes until the next count.
        # A nearly full buffer lowers the size limit rather than counting after
        # every scalar. The step counts from the entries already counted, not
        # from the list's length: entries other threads appended since (without
        # the lock) use up the step, they do not add to it.
        if self._error is not None or self._closing:
            self._trigger = -1  # the next append raises (or warns) first
            return
        n = self._counted
        room = max(0, self._max_buffer_bytes - self._pending_bytes - self._inflight_bytes)
        large = min(_LARGE_PAYLOAD, max(_MIN_LARGE_PAYLOAD, room // _CHECK_EVERY))
        step = min(_CHECK_EVERY, room // large)
        self._large = large
        self._trigger = min(self._max_queue, n + step) if n <= self._max_queue else n + step

    def _wait_for_room(self) -> None:
        # The caller waits (nothing is dropped) until the thread has written
        # enough; an error or a dead thread ends the wait with an exception.
        # Other callers append meanwhile (the wait releases the lock): their
        # entries are counted here too.
        while self._pending_bytes + self._inflight_bytes > self._max_buffer_bytes:
            if self._inflight_bytes == 0:
                self._wake(urgent=True)  # the thread is idle: let it take what is pending
            self._check_thread()
            if self._error is not None:
                # A write failed: stop waiting; the next call reports it
                # before it appends anything.
                return
            self._progress.wait(_POLL_SECS)
            self._account()

    def _wake(self, urgent: bool = False) -> None:
        # Lock held. While the writer thread cools down, a queue-length wake only marks
        # the work (the thread takes it when the cool-down ends); an urgent one ends it.
        if urgent:
            self._urgent = True
            if self._cooling:
                self._work.notify()
        if not self._wake_requested:
            self._wake_requested = True
            if not self._cooling:
                self._work.notify()

    def _start_thread(self) -> None:
        t = threading.Thread(target=self._run, name=f"summarylib-writer:{self.name}", daemon=True)
        self._thread = t
        t.start()
        _close_at_multiprocessing_exit(self)

    def _check_thread(self) -> None:
        t = self._thread
        if t is not None and not t.is_alive() and self._error is None:
            self._error = SummaryError(f"summarylib's writer thread for {self.name} died")

    def _surface_error(self) -> None:
        err = self._error
        if err is None:
            return
        self._error = None
        if not self._closing and not self._closed:
            self._trigger = 0
        if self._on_error == "warn":
            warnings.warn(str(err), RuntimeWarning, stacklevel=2)
            return
        raise err

    def flush(self, timeout: float | None = None, *, sync: bool = False) -> None:
        """Write every event appended before this call; return when it is written.

        Args:
          timeout: give up waiting after this many seconds (``TimeoutError``).
          sync: also ``fsync`` the output once the events are written.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self._acquire(deadline, "flushing", timeout)
        try:
            if self._closed or self._finished:
                return
            written, losses = self._written, self._loss_count
            target = self._taken + len(self._pending)
            if target > written or sync:
                if self._thread is None:
                    self._start_thread()
                self._sync_requested = self._sync_requested or sync
                self._wake_requested = True
                self._urgent = True
                self._work.notify()
                # Wait for the batch holding `target`; with sync, for one more
                # round so the fsync happens after it.
                while self._written < target or (sync and self._sync_requested):
                    if self._finished:
                        break  # a close() wrote, synced and closed everything
                    self._check_thread()
                    if self._error is not None:
                        break
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(f"flushing {self.name} took longer than {timeout} s")
                    wait = _POLL_SECS if remaining is None else min(remaining, _POLL_SECS)
                    self._progress.wait(wait)
            own = self._loss_since(written, losses, target)
            if self._error is not None:
                self._surface_error()
            elif own is not None:
                self._raise_or_warn(_again(own))
        finally:
            self._lock.release()

    def _acquire(self, deadline: float | None, doing: str, timeout: float | None) -> None:
        # The lock is only ever held briefly (no I/O under it), but a caller
        # with a deadline never waits for it beyond that deadline either.
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=wait):
            raise TimeoutError(f"{doing} {self.name} took longer than {timeout} s")

    def _park(self, err: BaseException, first: int, end: int) -> None:
        # Lock held: remember a failure that lost events [first, end); the
        # next call reports it (the first one parked wins).
        if end > first:
            self._losses.append((first, end, err))
            self._loss_count += 1
        if self._error is None:
            self._error = err
        self._trigger = -1

    def _loss_since(self, written: int, losses: int, target: int) -> BaseException | None:
        # Lock held: a failure recorded after a call saw (written, losses)
        # that lost one of the events the call covers, [written, target).
        new = self._loss_count - losses
        if new <= 0:
            return None
        history = list(self._losses)
        if new > len(history):
            return history[-1][2]  # more failures than remembered: report one
        for first, end, err in history[-new:]:
            if first < target and end > written:
                return err
        return None

    def _raise_or_warn(self, err: BaseException) -> None:
        if self._on_error == "warn":
            warnings.warn(str(err), RuntimeWarning, stacklevel=3)
            return
        raise err

    def start_flush(self, *, sync: bool = False) -> None:
        """Ask the writer thread to write what is pending now; never waits.

        Does nothing if another thread holds the lock at this moment (its
        ``flush()`` or the next one wakes the writer thread anyway).
        """
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._thread is not None and not self._closing:
                self._sync_requested = self._sync_requested or sync
                self._wake(urgent=True)
        finally:
            self._lock.release()

    def held_by_this_thread(self) -> bool:
        """True while the calling thread is inside a call of this writer.

        A signal handler checks it: it must not wait for the writer thread
        then (see :mod:`summarylib.writer.signals`).
        """
        return bool(self._lock._is_owned())  # type: ignore[attr-defined]

    def flush_quietly(self, timeout: float, *, sync: bool = False) -> None:
        """Flush for a signal handler or exit hook: skip a writer being closed.

        A writer that is closing is written out by its ``close()``; waiting for
        it here could wait for the very frame this handler interrupted.
        """
        if self._closed or self._closing:
            return
        self.flush(timeout, sync=sync)

    def close(self, timeout: float | None = None) -> None:
        """Write every pending event, ``fsync`` and close the output.

        Returns once that is done; a concurrent call waits for the same, a
        later one does nothing. The writer thread does the I/O, never the
        caller, so ``timeout`` holds even while the storage hangs (and so
        does a ``flush(timeout)`` meanwhile). After a ``TimeoutError`` no new
        events are accepted, and calling ``close()`` again finishes the job.

        Raises:
          WriteFailedError: an event accepted before ``close()`` could not be
            written (also when another call already reported the failure),
            or the final ``fsync``/close failed. The writer is closed anyway.
          TimeoutError: ``timeout`` seconds passed first.
        """
        if self._thread is not None and threading.current_thread() is self._thread:
            # On the writer thread itself (the garbage collector ran a
            # finalizer there): it cannot wait for itself, so a helper closes.
            threading.Thread(
                target=_close_at_exit, args=(lambda: self,), name="summarylib-close", daemon=True
            ).start()
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        self._acquire(deadline, "closing", timeout)
        try:
            if self._closed:
                return
            if self._close_from is None:
                self._close_from = (self._written, self._loss_count)
                self._closing = True
                self._trigger = -1  # no new events from here on
            self._wake_requested = True
            self._work.notify()
            # The writer thread writes what is pending, then flushes, syncs
            # and closes the output (_finish), all outside the lock: so this
            # wait, and every flush() meanwhile, keeps its own deadline even
            # when the storage hangs.
            while not self._finished:
                t = self._thread
                if t is None or not t.is_alive():
                    self._start_finisher()  # nothing was ever logged, or the thread died
                remaining = _remaining(deadline, None)
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"closing {self.name} took longer than {timeout} s")
                self._progress.wait(_POLL_SECS if remaining is None else min(remaining, _POLL_SECS))
            written, losses = self._close_from
            own = self._loss_since(written, losses, self._taken + len(self._pending))
            if self._closed:
                err = None  # a concurrent close() reported the parked error
            else:
                self._closed = True
                err, self._error = self._error, None
            close_error = self._close_error
        finally:
            self._lock.release()
        # Every close() that waited for the events reports their loss, and
        # a failed final flush/fsync/close.
        if err is None and own is not None:
            err = _again(own)
        if err is None and close_error is not None:
            err = _again(close_error)
        if err is not None:
            self._raise_or_warn(err)

    def close_at_exit(self, timeout: float) -> None:
        """``close(timeout)`` for exit hooks (interpreter exit, garbage collection).

        Ops called after it (a daemon thread still logging while the interpreter exits)
        return False with one warning instead of raising :class:`WriterClosedError` into a
        thread that cannot handle it. Everything appended before it is written as by
        ``close()``; a user's ``close()`` keeps raising for later events.
        """
        # Unlocked: an exit hook must not wait for a lock a stuck thread holds (close() has
        # its own deadline), and a racing user close() only makes late ops quiet.
        if not (self._closed or self._closing):
            self._closed_by_exit = True
        self.close(timeout)

    @property
    def closed(self) -> bool:
        """True once ``close()`` has finished."""
        return self._closed

    # ------------------------------------------------------------------
    # Background thread
    # ------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # pragma: no cover - a bug; never hang waiters
            with self._lock:
                err = SummaryError(f"summarylib's writer thread for {self.name} died: {e!r}")
                self._park(err, self._written, self._taken)
                self._progress.notify_all()
            raise

    def _loop(self) -> None:
        lock = self._lock
        while True:
            with lock:
                batch, first, sync, stop = self._next_batch()
                urgent = self._took_urgent
            if batch:
                self._write_batch(batch, first)
            if urgent and not stop and self._error is None and self._output is not None:
                # An explicit flush: outputs that hold back data (object stores, which
                # upload in windows) hand over everything now.
                push = getattr(self._output, "push", None)
                if push is not None:
                    try:
                        push()
                    except Exception as e:
                        with lock:
                            self._park(_write_failed(self.name, e), 0, 0)
            sync = sync and not stop  # _finish syncs once, last
            if sync and self._error is None and self._output is not None:
                try:
                    self._output.sync()
                except Exception as e:
                    with lock:
                        self._park(_write_failed(self.name, e), 0, 0)
            with lock:
                self._written += len(batch)
                self._inflight_bytes = 0
                if sync:
                    self._sync_requested = False
                self._last_flush = time.monotonic()
                if self._error is not None:
                    self._trigger = -1
                self._progress.notify_all()
                if batch and not stop and not urgent and self._error is None:
                    self._cool_down()
            if stop:
                self._finish()
                return

    def _cool_down(self) -> None:
        # Lock held (released while waiting): see COALESCE_SECS. Never longer than
        # flush_secs, and not at all with max_queue 0 (every event written at once).
        if self._max_queue == 0:
            return
        deadline = time.monotonic() + min(COALESCE_SECS, self._flush_secs)
        self._cooling = True
        try:
            while not (self._urgent or self._closing):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._work.wait(remaining)
        finally:
            self._cooling = False

    def _start_finisher(self) -> None:
        # Lock held, closing: no writer thread to finish the job (never
        # started, or died), so a thread of its own does, never the caller.
        t = threading.Thread(target=self._finish, name=f"summarylib-close:{self.name}", daemon=True)
        self._thread = t
        t.start()

    def _finish(self) -> None:
        # The end of close(), on the writer thread: write whatever is still
        # pending (only if the thread died), then flush, fsync and close the
        # output. close() and flush() wait for _finished with their deadline.
        error: BaseException | None = None
        try:
            with self._lock:
                leftover = self._take_all()
                first = self._taken
                self._taken += len(leftover)
            if leftover:
                self._write_batch(leftover, first)
                with self._lock:
                    self._written += len(leftover)
            output = self._output
            if output is not None:
                try:
                    output.flush()
                    output.sync()
                finally:
                    output.close()
        except Exception as e:
            error = _write_failed(self.name, e)
        finally:
            with self._lock:
                self._output = None
                self._close_error = error
                self._finished = True
                self._sync_requested = False
                self._progress.notify_all()
            _live.discard(self)

    def _next_batch(self) -> tuple[list[_Entry], int, bool, bool]:
        # Lock held. Wait until there is a reason to write, then take the batch.
        while True:
            if self._closing:
                break
            if self._wake_requested:
                break
            if self._pending:
                wait = self._last_flush + self._flush_secs - time.monotonic()
                if wait <= 0:
                    break
            else:
                wait = self._flush_secs
            self._work.wait(min(wait, threading.TIMEOUT_MAX))
        batch = self._take_all()
        # The batch stays in memory until written: it still counts.
        self._inflight_bytes = self._pending_bytes + sum(map(len, batch[self._counted :]))
        self._pending_bytes = 0
        self._counted = 0
        first = self._taken
        self._taken += len(batch)
        self._wake_requested = False
        self._took_urgent, self._urgent = self._urgent, False
        self._set_trigger()
        sync = self._sync_requested or (self._fsync and bool(batch))
        return batch, first, sync, self._closing

    def _take_all(self) -> list[_Entry]:
        # Lock held: everything queued. The list itself stays (callers append to it
        # without the lock); entries appended during the copy stay queued.
        pending = self._pending
        batch = pending[:]
        del pending[: len(batch)]
        return batch

    def _write_batch(self, batch: list[_Entry], first: int) -> None:
        # Encodes deferred events, frames and writes in blocks. A failing
        # encoder loses only its own event; a failing output parks the error
        # and loses the rest of the batch (which no flush() acknowledges).
        # `first` is the index of batch[0] among all events ever taken.
        done = 0  # batch[:done] is written (or its losses recorded one by one)
        out = self._output
        try:
            if out is None:
                out = self._reopen()
            block: list[bytes] = []
            size = 0
            _prepare_in_parallel(batch)
            formats = self._record_formats
            i, n = 0, len(batch)
            scanned = 0  # batch[:scanned] was looked at for runs already
            while i < n:
                item = batch[i]
                if isinstance(item, _TakenBack):
                    i += 1
                    continue
                if isinstance(item, Deferred):
                    made = self._materialize(item, first + i)
                    if made is None:
                        i += 1
                        continue
                    payload = made
                elif item and item[0] == MARK:
                    end = i
                    if i >= scanned and _has_run_framer(formats, item):
                        end = scanned = _run_end(batch, i, item[:MARKER_SIZE])
                    if end - i >= _MIN_RUN:
                        framed = self._frame_run(formats, batch[i:end])  # type: ignore[arg-type]  # _run_end: all bytes
                        if framed is not None:
                            if block:
                                out.write(frame_many(block))
                                block = []
                                size = 0
                                done = i
                            out.write(framed)
                            i = done = end
                            continue
                    made = self._expand(formats, item, first + i)
                    if made is None:
                        i += 1
                        continue
                    payload = made
                else:
                    payload = item
                block.append(payload)
                size += len(payload) + 16
                i += 1
                if size >= _BLOCK_BYTES:
                    out.write(frame_many(block))
                    block = []
                    size = 0
                    done = i
            if block:
                out.write(frame_many(block))
            out.flush()
        except Exception as e:
            name = self.name
            if out is None and isinstance(getattr(e, "filename", None), str):
                name = e.filename  # type: ignore[attr-defined]  # the file we could not open
            with self._lock:
                self._park(_write_failed(name, e), first + done, first + len(batch))
                if done < len(batch):
                    self._forget_metadata()

    def _forget_metadata(self) -> None:
        # Lock held. Lost events may have carried the metadata of their tags,
        # and TensorBoard lists a tag from its first value in the file: every
        # tag's next event carries metadata again (readers ignore repeats).
        # New objects, not clear(): ops hold no lock while they read these,
        # and scalars() memos which dict it has checked by identity. An op
        # that read the old prefix just before this still writes its event
        # without metadata; that only matters if it races the failure.
        self.scalar_prefixes = {}
        self.tags_with_metadata = set()
        self.scalar_layouts = {}

    def _materialize(self, item: Deferred, index: int) -> bytes | None:
        try:
            return item.make()
        except Exception as e:
            err = SummaryError(f"summarylib: encoding {item.what} failed: {e!r}")
            err.__cause__ = e
            with self._lock:
                self._park(err, index, index + 1)
            return None

    def _frame_run(self, formats: list[_RecordFormat], records: list[bytes]) -> bytes | None:
        # A run of records of one format, framed by the format itself; None: one by one
        # (no run framer, or it failed: then each record's own expansion decides).
        frame_run = formats[format_number(records[0])][1]
        if frame_run is None:
            return None
        try:
            return frame_run(records)
        except Exception:
            return None

    def _expand(self, formats: list[_RecordFormat], record: bytes, index: int) -> bytes | None:
        try:
            return formats[format_number(record)][0](record)
        except Exception as e:  # a bug in an expander: lose this event only, and say so
            err = SummaryError(f"summarylib: expanding a compact record failed: {e!r}")
            err.__cause__ = e
            with self._lock:
                self._park(err, index, index + 1)
            return None

    def _reopen(self) -> Output:
        # First use in a forked child: a new file of our own.
        out = self._open_output()
        with self._lock:
            self._output = out
            self.name = self.path = out.name
        return out

    # ------------------------------------------------------------------
    # fork()
    # ------------------------------------------------------------------
    def _after_fork_in_child(self) -> None:
        # Only the forking thread exists now; the locks may be held by threads
        # that are gone, so everything is rebuilt. The parent's pending events
        # stay with the parent (it writes them); its descriptor is dropped.
        if self._closed:
            return
        closing = self._closing
        out, self._output = self._output, None
        if out is not None:
            with contextlib.suppress(Exception):  # the parent's file is not ours to fix
                out.discard()
        self._forget_metadata()  # the child's file starts without any
        self._init_state()
        if closing:
            # The parent's close() had begun (it timed out, or runs on another
            # thread): the parent finishes it; here the writer is closed.
            self._closed = True
            self._trigger = -1
            _live.discard(self)
            return
        if not self._reopenable:
            self._orphaned = True
            self._trigger = -1  # every append raises
        else:
            self.path = None
            self.name = f"a new event file of process {os.getpid()} (opened on first use)"


def _close_at_multiprocessing_exit(writer: BufferedEventWriter) -> None:
    # A multiprocessing child started by "fork" or "forkserver" ends with
    # os._exit(): atexit hooks (which close writers elsewhere) never run there,
    # only multiprocessing's own finalizers. Register one, once per process.
    mp = sys.modules.get("multiprocessing")
    if mp is None or mp.parent_process() is None:
        return
    pid = os.getpid()
    if writer._mp_exit_hook_pid == pid:
        return
    writer._mp_exit_hook_pid = pid
    from multiprocessing import util

    util.Finalize(writer, _close_at_exit, args=(weakref.ref(writer),), exitpriority=0)


# Threads that run Deferred.prepare, shared by every writer of this process (a new pool
# after fork: the parent's threads do not exist in the child).
_pool: Any = None
_pool_pid = 0
_pool_lock = threading.Lock()
_PARALLEL_MIN = 2


def _encoder_pool() -> Any:
    global _pool, _pool_pid
    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(workers, thread_name_prefix="summarylib-encode")
            _pool_pid = os.getpid()
        return _pool


def _prepare_in_parallel(batch: list[_Entry]) -> None:
    # Run the prepare step of the batch's deferred events on the pool, and wait for all
    # of them; make() then runs in file order on the writer thread. With fewer than two,
    # or no pool (one CPU, interpreter exit), make() does the whole work itself.
    jobs = [item.prepare for item in batch if isinstance(item, Deferred) and item.prepare]
    if len(jobs) < _PARALLEL_MIN:
        return
    try:
        pool = _encoder_pool()
        if pool is None:
            return
        futures = [pool.submit(job) for job in jobs]
    except RuntimeError:  # the interpreter is shutting down: make() encodes inline
        return
    for f in futures:
        f.result()


def _has_run_framer(formats: list[_RecordFormat], record: bytes) -> bool:
    number = format_number(record)
    return number < len(formats) and formats[number][1] is not None


def _run_end(batch: list[_Entry], start: int, prefix: bytes) -> int:
    # The end of the run of records with `prefix` from batch[start], at most _MAX_RUN.
    end = start + 1
    stop = min(len(batch), start + _MAX_RUN)
    while end < stop:
        item = batch[end]
        if type(item) is not bytes or item[:MARKER_SIZE] != prefix:
            break
        end += 1
    return end


def _remaining(deadline: float | None, default: float | None) -> float | None:
    if deadline is None:
        return default
    return max(0.0, deadline - time.monotonic())


def _write_failed(path: str, cause: BaseException) -> WriteFailedError:
    if isinstance(cause, WriteFailedError):
        return cause  # the output named itself already (FileOutput does)
    err = WriteFailedError(path, cause)
    err.__cause__ = cause
    return err


def _again(err: BaseException) -> BaseException:
    # A fresh exception for a failure already raised elsewhere (never raise
    # one exception object in two threads: tracebacks would mix).
    cause = err.__cause__
    if isinstance(err, WriteFailedError):
        return _write_failed(err.path, cause if cause is not None else err)
    again = SummaryError(str(err))
    again.__cause__ = cause
    return again


def _close_at_exit(ref: Callable[[], BufferedEventWriter | None]) -> None:
    writer = ref()
    if writer is None:
        return
    try:
        writer.close_at_exit(EXIT_TIMEOUT_SECS)
    except Exception as e:
        message = f"summarylib: closing {writer.name} failed: {e}"
        warnings.warn(message, RuntimeWarning, stacklevel=1)


def _reset_after_fork() -> None:
    for w in list(_live):
        w._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
