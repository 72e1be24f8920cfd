"""Turning a batch of queue entries into framed records on an output.

A queue entry is one of:

* a serialized ``Event`` (bytes), framed as it is;
* a :class:`Deferred` event, whose bytes are computed here, on the writer's thread
  (PNG/WAV encoding, bucketing, values copied from a device);
* a compact record of a registered :class:`RecordCodecs` format (see
  :mod:`summarylib.encoding._compact`), which the format expands into an Event; runs of
  records of one format may be framed at once;
* the queue's placeholder of an entry its caller took back, which is skipped.

:class:`BatchEncoder` knows nothing of the queue, the lock or the flush protocol: it
writes one batch and says, through :class:`BatchWriteError` and its ``lose`` callback,
exactly which entries did not reach the output.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from summarylib.encoding._compact import MARK, MARKER_SIZE, format_number, marker
from summarylib.encoding._tfrecord import frame_many
from summarylib.errors import NonFiniteError, SummaryError
from summarylib.writer._output import Output
from summarylib.writer._queue import TakenBack

__all__ = ["BatchEncoder", "BatchWriteError", "Deferred", "NotRecorded", "RecordCodecs"]


class NotRecorded(Exception):  # a decision, not an error
    """Raised by a :class:`Deferred` event's ``make`` when the event is not to be written
    after all: its recording condition, read on the writer thread, was false (a
    ``record_if`` on a device value, see :mod:`summarylib.ops._traced`). The event is
    left out silently; it is no loss."""

# Blocks handed to the output stay under glibc's mmap threshold (128 KiB): bigger
# short-lived buffers are mmapped and unmapped on every write.
_BLOCK_BYTES = 96 * 1024
# Formats a writer keeps (the marker could number more).
_MAX_RECORD_FORMATS = 4096
# Runs of records of one format this long or longer go to its run framer, in pieces of at
# most _MAX_RUN (whose framed bytes stay near _BLOCK_BYTES).
_MIN_RUN = 8
_MAX_RUN = 384


# What a deferred event holds besides the data its ``size`` counts: this object, the
# ``make`` (and ``prepare``) closures and their cells, the message (measured: 400-700 B).
DEFERRED_BYTES = 640


class Deferred:
    """An event whose payload is computed by the writer thread, not the caller.

    ``make`` returns the serialized Event, or a list of several (the summaries of one
    compiled call, :mod:`summarylib.ops._call_unit`) in which None stands for an event
    not recorded and an exception for an event lost with that error. ``size`` estimates
    its length and the memory it holds until then (pending device values, copies) for
    the buffer bound; ``len()`` returns it plus :data:`DEFERRED_BYTES`. ``what`` names it in errors.
    Ops validate their input on the caller's thread and copy what they keep,
    so ``make`` is pure computation (PNG/WAV encoding, bucketing).
    """

    __slots__ = ("make", "prepare", "size", "what")

    def __init__(
        self,
        make: Callable[[], bytes] | Callable[[], list[Any]],
        size: int,
        what: str,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        self.make = make
        self.size = size + DEFERRED_BYTES
        self.what = what
        #: Optional: the expensive, order-free part of ``make`` (PNG/WAV encoding), which
        #: must never raise and leaves its result where ``make`` finds it. The writer runs
        #: the ``prepare`` of several events on a few threads at once (the encoders release
        #: the GIL); ``make`` still runs in file order.
        self.prepare = prepare

    def __len__(self) -> int:
        return self.size


# (expand one record, frame a run of records or None)
_RecordFormat = tuple[Callable[[bytes], bytes], Callable[[list[bytes]], bytes] | None]


class RecordCodecs:
    """The compact record formats of one writer, by number; only ever appended to, so a
    record queued before a file rotation still finds its format."""

    __slots__ = ("_formats", "_lock")

    def __init__(self) -> None:
        self._formats: list[_RecordFormat] = []
        self._lock = threading.Lock()

    def register(
        self,
        expand: Callable[[bytes], bytes],
        frame_run: Callable[[list[bytes]], bytes] | None = None,
    ) -> bytes | None:
        """The 4-byte prefix of compact records that ``expand`` turns into Events.

        A record is ``prefix + data``; it is appended to the writer like an Event and costs
        the caller only the packing of ``data``. The writer thread calls
        ``expand(record)`` and writes the Event it returns in the record's place; for a run
        of records of the format, ``frame_run(records)`` if given, which must return
        exactly ``frame_many([expand(r) for r in records])``. Neither may fail for records
        their caller made. None when no more formats fit (4096 per writer).
        """
        with self._lock:
            number = len(self._formats)
            if number >= _MAX_RECORD_FORMATS:
                return None
            self._formats.append((expand, frame_run))
        return marker(number)

    def format_of(self, record: bytes) -> _RecordFormat:
        """The ``(expand, frame_run)`` of ``record``'s format."""
        return self._formats[format_number(record)]

    def __len__(self) -> int:
        """How many formats are registered."""
        return len(self._formats)

    def __getitem__(self, number: int) -> _RecordFormat:
        return self._formats[number]

    def __setitem__(self, number: int, codec: _RecordFormat) -> None:
        """Replace format ``number`` by an equivalent one (a test may wrap a format to
        observe its calls); records already queued use the replacement."""
        self._formats[number] = codec


class BatchWriteError(Exception):
    """The output failed: entries ``[done, len(batch))`` of the batch were not written."""

    def __init__(self, done: int, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.done = done
        self.cause = cause


class BatchEncoder:
    """Encodes and frames one batch at a time onto an output (the writer's thread only).

    ``lose(index, error)`` is called for an entry whose own encoding failed (that entry
    alone is lost); an output failure raises :class:`BatchWriteError`.
    """

    def __init__(self, codecs: RecordCodecs, lose: Callable[[int, BaseException], None]) -> None:
        self.codecs = codecs
        self._lose = lose

    def write(self, batch: list[Any], first: int, out: Output) -> None:
        """Write ``batch`` (entry ``i`` is event ``first + i``) and ``out.flush()``."""
        done = 0  # batch[:done] is written (or its losses reported one by one)
        try:
            block: list[bytes] = []
            size = 0
            _prepare_in_parallel(batch)
            i, n = 0, len(batch)
            scanned = 0  # batch[:scanned] was looked at for runs already
            while i < n:
                item = batch[i]
                if isinstance(item, TakenBack):
                    i += 1
                    continue
                if isinstance(item, Deferred):
                    payload = self._materialize(item, first + i)
                    if isinstance(payload, list):  # several events made at once
                        for part in payload:
                            if part is None:
                                continue
                            if isinstance(part, BaseException):
                                self._lose(first + i, part)
                                continue
                            block.append(part)
                            size += len(part) + 16
                        i += 1
                        if size >= _BLOCK_BYTES:
                            out.write(frame_many(block))
                            block = []
                            size = 0
                            done = i
                        continue
                elif item and item[0] == MARK:
                    end = i
                    if i >= scanned and self.codecs.format_of(item)[1] is not None:
                        end = scanned = _run_end(batch, i, item[:MARKER_SIZE])
                    if end - i >= _MIN_RUN:
                        framed = self._frame_run(batch[i:end])
                        if framed is not None:
                            if block:
                                out.write(frame_many(block))
                                block = []
                                size = 0
                                done = i
                            out.write(framed)
                            i = done = end
                            continue
                    payload = self._expand(item, first + i)
                else:
                    payload = item
                i += 1
                if payload is None:
                    continue
                block.append(payload)
                size += len(payload) + 16
                if size >= _BLOCK_BYTES:
                    out.write(frame_many(block))
                    block = []
                    size = 0
                    done = i
            if block:
                out.write(frame_many(block))
            out.flush()
        except Exception as e:
            raise BatchWriteError(done, e) from e

    def _materialize(self, item: Deferred, index: int) -> bytes | list[Any] | None:
        try:
            return item.make()
        except NotRecorded:
            return None
        except NonFiniteError as e:  # a check_finite found a NaN or inf: raised as it is
            self._lose(index, e)
            return None
        except Exception as e:
            err = SummaryError(f"summarylib: encoding {item.what} failed: {e!r}")
            err.__cause__ = e
            self._lose(index, err)
            return None

    def _frame_run(self, records: list[bytes]) -> bytes | None:
        # A run of records of one format, framed by the format itself; None: one by one
        # (it failed: then each record's own expansion decides).
        frame_run = self.codecs.format_of(records[0])[1]
        assert frame_run is not None
        try:
            return frame_run(records)
        except Exception:
            return None

    def _expand(self, record: bytes, index: int) -> bytes | None:
        try:
            return self.codecs.format_of(record)[0](record)
        except Exception as e:  # a bug in an expander: lose this event only, and say so
            err = SummaryError(f"summarylib: expanding a compact record failed: {e!r}")
            err.__cause__ = e
            self._lose(index, err)
            return None


def _run_end(batch: list[Any], start: int, prefix: bytes) -> int:
    # The end of the run of records with `prefix` from batch[start], at most _MAX_RUN.
    end = start + 1
    stop = min(len(batch), start + _MAX_RUN)
    while end < stop:
        item = batch[end]
        if type(item) is not bytes or item[:4] != prefix:
            break
        end += 1
    return end


# Threads that run Deferred.prepare, shared by every writer of this process (a new pool
# after fork: the parent's threads do not exist in the child).
_pool: Any = None
_pool_pid = 0
_pool_lock = threading.Lock()
_PARALLEL_MIN = 2


def _new_pool_lock() -> None:
    # In a forked child: a thread of the parent may have held the lock (making the pool)
    # at fork, and it never releases it here.
    global _pool_lock
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_pool_lock)


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


def _prepare_in_parallel(batch: list[Any]) -> None:
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
