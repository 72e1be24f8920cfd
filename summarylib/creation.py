"""Making writers: ``create_file_writer``, ``create_writer`` and ``create_noop_writer``.

Each returns a :class:`summarylib.SummaryWriter`, the one writer class (the same class that
``SummaryWriter(log_dir)`` constructs the way torch does).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from summarylib.summary_writer import SummaryWriter
from summarylib.writer._buffered import OnError
from summarylib.writer._file_writer import check_logdir, open_writer_resource
from summarylib.writer._naming import normalize_suffix
from summarylib.writer._output import Output
from summarylib.writer._path_safety import check_name_text
from summarylib.writer._settings import WriterSettings

__all__ = ["create_file_writer", "create_noop_writer", "create_writer"]


def create_file_writer(
    logdir: str | os.PathLike[str],
    max_queue: int | None = None,
    flush_millis: int | None = None,
    filename_suffix: str | None = None,
    name: str | None = None,
    *,
    max_buffer_bytes: int | None = None,
    on_error: OnError = "raise",
    fsync: bool = False,
    storage_options: dict[str, Any] | None = None,
    sync_device_values: bool = False,
    clock: Callable[[], float] | None = None,
    compact_on_close: bool = False,
) -> SummaryWriter:
    """Create a writer of a new event file in ``logdir``.

    The directory is created if missing. The new file,
    ``events.out.tfevents.<secs>.<host>.<pid>.<n><suffix>``, holds its first
    event (``file_version="brain.Event:2"``, ``source_metadata.writer =
    "summarylib"``) on disk when this returns. Every call makes a new file; the
    files of one process sort by name in creation order (``<n>`` is written so
    that names sort as numbers: ``0``-``9``, ``a10``-``a99``, ``b100``, ...).

    Events are written by a background thread: when more than ``max_queue``
    are pending, at most ``flush_millis`` after the previous write, and on
    ``flush()``, exit of ``as_default()``, ``close()``, when the last reference to
    the writer is dropped (at once: ``del writer`` leaves the file written and
    closed) and at interpreter exit.

    Args:
      logdir: a local directory, or a URL of any fsspec protocol (``s3://bucket/run``,
        ``gs://...``, ``memory://...``): then the events go to object storage as a
        sequence of objects, each byte uploaded once (README: "URL logdirs"; needs
        ``summarylib[remote]``).
      max_queue: flush when more than this many events are pending (default 10).
      flush_millis: flush pending events at most this long after the last flush
        (default 120000).
      filename_suffix: file name suffix (default ``".v2"``; a "." is prepended
        if missing).
      name: accepted for ``tf.summary`` compatibility; unused.
      max_buffer_bytes: bound on the bytes of events logged but not yet
        written (default 16 MiB): queued events plus the batch being written.
        An op whose event takes the total above it waits, with that event
        already queued, until the writer thread has made room; so the total
        exceeds the bound by at most one event per thread waiting. Nothing
        is dropped. Images, audio and large histograms, encoded by the
        writer thread, count with an estimate of their size.
      on_error: what a failed background write does: ``"raise"`` (default) raises
        :class:`~summarylib.errors.WriteFailedError` from the next call, flush
        or close; ``"warn"`` issues a ``RuntimeWarning`` and keeps going.
      fsync: ``fsync`` after every background flush, so flushed data survives
        power loss, not only a crash of the process. ``close()`` always syncs.
      storage_options: keyword arguments of the fsspec filesystem of a URL ``logdir``
        (credentials, endpoint); never shown in messages.
      sync_device_values: read arrays that live on an accelerator (JAX arrays, torch
        CUDA tensors, CuPy arrays) at the call, waiting for the device, as other
        loggers do. By default they are captured without waiting (their copy to the
        host starts at the call) and written once ready; errors of the device then
        surface from a later call, ``flush()`` or ``close()``. For debugging.
      clock: a zero-argument callable giving the wall time (seconds since the epoch)
        of events logged without one; default ``time.time``. A fixed clock makes files
        byte-for-byte reproducible (tests, golden files).
      compact_on_close: for a URL ``logdir``: ``close()`` (also at garbage collection
        and interpreter exit) then merges the file's objects into one, keeping only
        those of the last minute, which a live TensorBoard may still be reading (see
        ``summarylib compact``; ``summarylib compact URL`` merges those
        later). It downloads and re-uploads the file once, so ``close()`` takes that
        long; a failed merge warns and loses nothing. No effect on a local directory
        (a local event file is one file already).

    Raises:
      ValueError, TypeError: a bad argument (named in the message).
      WriteFailedError: the directory or file cannot be created or written.
    """
    del name
    where = "create_file_writer"
    path = check_logdir(where, "logdir", logdir)
    suffix = check_name_text(normalize_suffix(filename_suffix), where, "filename_suffix")
    settings = WriterSettings.checked(
        where, max_queue=max_queue, flush_millis=flush_millis,
        max_buffer_bytes=max_buffer_bytes, on_error=on_error, fsync=fsync,
        filename_suffix=suffix, storage_options=storage_options,
        sync_device_values=sync_device_values, clock=clock, compact_on_close=compact_on_close,
    )
    return SummaryWriter._wrap(open_writer_resource(path, settings), path, settings)


def create_writer(
    output: Output,
    max_queue: int | None = None,
    flush_millis: int | None = None,
    *,
    max_buffer_bytes: int | None = None,
    on_error: OnError = "raise",
    fsync: bool = False,
    sync_device_values: bool = False,
    clock: Callable[[], float] | None = None,
) -> SummaryWriter:
    """Create a writer of event records to any :class:`~summarylib.Output`.

    The same as :func:`create_file_writer` (same policy and arguments) but
    for an output you provide: a :class:`~summarylib.MemoryOutput` in tests,
    or your own sink. The first event is written to ``output`` at once. Such
    a writer cannot be pickled, and it cannot write in a forked child (ops
    there raise :class:`~summarylib.errors.WriterClosedError`): the child
    would share the parent's output. Methods that write files beside the
    event file (``add_embedding``, ``add_scalars``' sub-runs) need a
    directory and raise ``ValueError`` on such a writer.
    """
    if not isinstance(output, Output):
        raise TypeError(
            f"create_writer: 'output' must be a summarylib.Output, got {type(output).__name__}"
        )
    settings = WriterSettings.checked(
        "create_writer", max_queue=max_queue, flush_millis=flush_millis,
        max_buffer_bytes=max_buffer_bytes, on_error=on_error, fsync=fsync,
        sync_device_values=sync_device_values, clock=clock,
    )
    return SummaryWriter._wrap(open_writer_resource(None, settings, output), None, settings)


def create_noop_writer() -> SummaryWriter:
    """A writer that records nothing, as ``tf.summary.create_noop_writer``.

    Its ``as_default()``, ``set_as_default()``, ``init()``, ``flush()`` and
    ``close()`` do nothing, and its ``add_*`` methods write nothing and return
    False. Used alone, ops then find no default writer and return False:
    useful for processes that must not log, e.g. every rank but 0. As in
    TensorFlow it is transparent: inside another writer's ``as_default()``
    block, ``with noop.as_default():`` changes nothing and ops keep writing
    to the outer writer (to silence a block, use ``record_if(False)``).
    """
    return SummaryWriter._wrap(None, None, WriterSettings())
