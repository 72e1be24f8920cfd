"""The writer's core: one buffered event file, its lifecycle and the default-writer context.

:class:`WriterBase` holds what every writer object does (``as_default``, ``flush``,
``close``, pickling); the public :class:`summarylib.SummaryWriter` adds the ``add_*``
methods on top of it, and :mod:`summarylib.creation` makes writers. This module knows
nothing of summary kinds: ops depend on the writer, never the reverse.
"""

from __future__ import annotations

import contextlib
import os
import warnings
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, TypeVar

from summarylib.encoding._events import file_version_event
from summarylib.encoding._tfrecord import frame
from summarylib.errors import ArgumentError, WriteFailedError, WriterClosedError
from summarylib.writer._buffered import EXIT_TIMEOUT_SECS, BufferedEventWriter
from summarylib.writer._context import (
    FLUSH_BARRIERS,
    EventSink,
    Step,
    _local,
    check_step,
    forget_writer,
    wait_for_compiled_code,
    writer_opened,
)
from summarylib.writer._output import Output
from summarylib.writer._settings import WriterSettings

__all__ = [
    "SOURCE_WRITER",
    "WriterBase",
    "check_local_dir",
    "check_logdir",
    "flush",
    "open_writer_resource",
]
#: ``Event.source_metadata.writer`` of the first event of every file.
SOURCE_WRITER = "summarylib"

W = TypeVar("W", bound="WriterBase")


class WriterBase:
    """Writes summaries to one event file: the lifecycle shared by every writer object.

    Ops (``scalar``, ``histogram``, ...) write to the *default* writer of the
    calling thread; make a writer the default with :meth:`as_default` (a
    context manager) or :meth:`set_as_default`. ``with writer:`` is
    ``as_default()`` and closes the writer on exit.

    All methods are thread-safe. A writer can be pickled: unpickling creates
    a new writer on the same logdir with the same settings (a new file).
    """

    _resource: BufferedEventWriter | None
    #: What ops write to (:class:`~summarylib.writer._context.EventSink`); None for the
    #: no-op writer. The same object as the resource, seen through the ops' interface.
    events: EventSink | None
    #: False for a writer made with ``sync_device_values=True``: ops read device values
    #: at the call (and wait for the device) instead of on the writer thread.
    defers_device_values: bool
    _logdir: str | None

    def _setup(
        self,
        resource: BufferedEventWriter | None,
        logdir: str | None,
        settings: WriterSettings,
    ) -> None:
        self._resource = resource
        self.events = resource
        self._logdir = logdir
        self._settings = settings
        self.defers_device_values = not settings.sync_device_values
        self._context_stack: list[Any] = []
        # Events written last, whoever closes the writer (close(), garbage collection or
        # interpreter exit), by name: e.g. the end of the run's trial. Each maker takes
        # whether the close is explicit and returns a serialized Event. The finalizer holds
        # this dict, never the writer, so that dropping the last reference closes at once.
        self._last_words: dict[str, Callable[[bool], bytes]] = {}
        if resource is not None:
            self._finalizer = weakref.finalize(
                self, _close_quietly, resource, self._last_words
            )
            writer_opened(self)

    @classmethod
    def _wrap(
        cls: type[W],
        resource: BufferedEventWriter | None,
        logdir: str | None,
        settings: WriterSettings,
    ) -> W:
        """A writer object around an open resource, from :func:`open_writer_resource`
        (no ``__init__``)."""
        obj = cls.__new__(cls)
        obj._setup(resource, logdir, settings)
        return obj

    # -- the context --------------------------------------------------------
    def as_default(self: W, step: Step | None = None) -> _DefaultContext[W]:
        """Make this the calling thread's default writer inside the block.

        Args:
          step: if not None, also the default step inside the block.

        On exit the previous default writer (and, if ``step`` was given, the
        previous default step) is restored, and every event logged so far is
        written before the exit returns, as TensorFlow flushes on exit (the
        summaries of compiled code called in the block included). A few
        pending events on a local file (a block per training step) are written
        by the calling thread itself, one ``write`` call, so a block per step
        costs well under twice one block around the loop; more, or an object
        store, is a ``flush()``. A write error is raised as by ``flush()``.

        On the no-op writer it does nothing at all, as in TensorFlow: inside
        another writer's block, ops keep writing to that writer.

        Raises:
          WriterClosedError: the writer is closed.
        """
        # A small class rather than a generator: a block per training step is a common
        # pattern, and this keeps its cost near that of the op inside it.
        return _DefaultContext(self, step)

    def set_as_default(self, step: Step | None = None) -> None:
        """Make this the calling thread's default writer until changed.

        Args:
          step: if not None, also set the thread's default step.

        On the no-op writer it does nothing, as in TensorFlow.
        """
        if self._resource is None:
            return
        self._check_open("set_as_default")
        if step is not None:
            check_step(step, "set_as_default")
            _local.state.step = step
        _local.state.writer = self

    def __enter__(self: W) -> W:
        cm = self.as_default()
        cm.__enter__()
        self._context_stack.append(cm)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        cm = self._context_stack.pop()
        try:
            cm.__exit__(exc_type, exc, tb)
        finally:
            self.close()

    # -- lifecycle -----------------------------------------------------------
    def init(self) -> None:
        """Do nothing: the event file is already open (``tf.summary``'s ``init()``).

        Kept so that code written for ``tf.summary``, which calls it to
        initialize a writer, runs unchanged.

        Raises:
          WriterClosedError: the writer is closed (TensorFlow raises there too).
        """
        self._check_open("init")

    def flush(self, timeout: float | None = None) -> None:
        """Write every event logged so far to the file; return once it is there.

        Data is then safe from a crash of this process (it is in the operating
        system's hands), not yet from power loss: ``close()`` (or
        ``fsync=True`` at creation, which syncs every flush) makes it durable.
        A flush of a closed writer does nothing.

        Raises:
          WriteFailedError: an event logged before this call could not be
            written (even if another call already reported that failure), or
            an earlier background write failed since the last report.
          TimeoutError: ``timeout`` seconds passed first.
          TypeError, ValueError: ``timeout`` is not None or a number >= 0.
        """
        _check_timeout("flush", timeout)
        if self._resource is not None:
            # Summaries of compiled code dispatched before: written first.
            error = wait_for_compiled_code() if FLUSH_BARRIERS else None
            self._resource.flush(timeout)
            if error is not None:
                raise error

    def close(self, timeout: float | None = None) -> None:
        """Write every pending event, ``fsync`` the file and close it.

        Returns once that is done; a concurrent call waits for the same, and
        a later one does nothing. The writer stops being the default writer
        of every thread at once (ops there then find no default writer, as
        before one was set; a surrounding ``as_default()`` block of another
        writer is restored when it ends). Ops that still write to it (an op
        racing with ``close()``, ``add_*`` methods) raise
        :class:`~summarylib.errors.WriterClosedError`.

        Raises:
          WriteFailedError: an event logged before ``close()`` could not be
            written, or the final ``fsync`` failed. The writer is closed anyway.
          TimeoutError: ``timeout`` seconds passed first; the writer is not
            closed yet: call ``close()`` again (interpreter exit also does).
          TypeError, ValueError: ``timeout`` is not None or a number >= 0.
        """
        _check_timeout("close", timeout)
        if self._resource is not None:
            error = None
            if FLUSH_BARRIERS and not self._resource.closed:
                error = wait_for_compiled_code()  # its summaries are written before the close
            forget_writer(self)
            try:
                _say_last_words(self._resource, self._last_words, True)
            finally:
                try:
                    self._resource.close(timeout)
                finally:
                    if self._resource.closed:
                        self._finalizer.detach()
            if error is not None:
                raise error

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._resource is not None and self._resource.closed

    @property
    def settings(self) -> WriterSettings:
        """The writer's checked settings (frozen; sub-runs and pickled copies share them)."""
        return self._settings

    @property
    def logdir(self) -> str | None:
        """The directory this writer writes to (None for the no-op writer)."""
        return self._logdir

    @property
    def path(self) -> str | None:
        """The event file written (None for the no-op writer).

        In a process forked from the one that created the writer it is None
        until the first event is written: the child then opens a file of its
        own (its pid in the name).
        """
        return None if self._resource is None else self._resource.path

    def _check_open(self, where: str) -> None:
        if self.closed:
            raise WriterClosedError(f"{where}: the summary writer for {self.path} is closed")

    # -- what ops use ------------------------------------------------------
    def _append(self, payload: bytes) -> bool:
        """Queue one serialized Event (ops call this); False if an exit hook closed the writer."""
        return self._resource.append(payload)  # type: ignore[union-attr]

    # -- pickling ------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        if self._resource is None:
            return (_reopen, (type(self), None, self._settings))
        if self._logdir is None:
            raise TypeError("a writer to a custom Output cannot be pickled")
        return (_reopen, (type(self), self._logdir, self._settings))

    def __repr__(self) -> str:
        if self._resource is None:
            return f"<{type(self).__name__} noop>"
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} {state} path={self.path!r}>"


#: Leaving ``as_default()`` writes at most this many pending events on the calling
#: thread; more wait for the writer thread (its batches are encoded in parallel).
_WRITE_HERE_MAX = 64


class _DefaultContext(Generic[W]):
    """What ``as_default()`` returns: makes its writer the thread's default inside the block."""

    __slots__ = ("_saved", "_state", "_step", "_writer")

    def __init__(self, writer: W, step: Step | None) -> None:
        self._writer = writer
        self._step = step

    def __enter__(self) -> W:
        writer = self._writer
        if writer._resource is None:
            self._state = None  # the no-op writer changes nothing (TensorFlow's)
            return writer
        writer._check_open("as_default")
        step = self._step
        if step is not None:
            check_step(step, "as_default")
        st = self._state = _local.state
        self._saved = (st.writer, st.step)
        st.writer = writer
        if step is not None:
            st.step = step
        return writer

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        st = self._state
        if st is None:
            return
        # Summaries of compiled code that ran in the block are waited for first, while
        # the block's writer is still the default (callbacks can run after the call that
        # dispatched them returned, on another thread, and write to this thread's default;
        # flush() waits for them the same way).
        error = wait_for_compiled_code() if FLUSH_BARRIERS else None
        saved_writer, saved_step = self._saved
        # A writer closed meanwhile is no one's default any more: not restored.
        st.writer = None if saved_writer is None or saved_writer.closed else saved_writer
        if self._step is not None:
            st.step = saved_step
        # TensorFlow's exit: the block's events are in the file when it returns. A
        # block per training step has one or a few events pending: this thread writes
        # them itself (one write call), cheaper than waking the writer thread and
        # waiting for it; more, or a remote store, is a flush().
        self._writer._resource.write_pending_here(_WRITE_HERE_MAX)  # type: ignore[union-attr]
        if error is not None:
            raise error


def open_writer_resource(
    logdir: str | None, settings: WriterSettings, output: Output | None = None
) -> BufferedEventWriter:
    """Open the buffered resource of a new writer: the one way every writer is made.

    A new event file in ``logdir`` (a local directory or a URL), or ``output`` when given
    (then ``logdir`` is None, and the resource cannot reopen itself in a forked child).
    The file's first event is on the output at return.

    Raises:
      WriteFailedError: the directory or file cannot be created or written.
    """
    if output is not None:
        return _open_resource(lambda: output, None, settings, reopenable=False)
    from summarylib.writer._remote import event_output_opener

    assert logdir is not None, "a writer writes to a logdir or an output"
    on_closed = None
    if settings.compact_on_close:
        from summarylib.writer._compaction import compact_at_close

        on_closed = compact_at_close
    opener = event_output_opener(logdir, settings.filename_suffix, settings.storage_options,
                                 on_closed=on_closed)
    return _open_resource(opener, logdir, settings, reopenable=True)


def _open_resource(
    make_output: Callable[[], Output],
    logdir: str | None,
    settings: WriterSettings,
    *,
    reopenable: bool,
) -> BufferedEventWriter:
    clock = settings.clock

    def open_output() -> Output:
        out = make_output()
        try:
            out.write(frame(file_version_event(clock(), SOURCE_WRITER)))
            out.flush()
        except BaseException:
            out.close()
            raise
        return out

    try:
        resource = BufferedEventWriter(
            open_output,
            max_queue=settings.max_queue,
            flush_secs=settings.flush_millis / 1000.0,
            max_buffer_bytes=settings.max_buffer_bytes,
            on_error=settings.on_error,
            fsync=settings.fsync,
            reopenable=reopenable,
            clock=clock,
        )
    except OSError as e:
        raise WriteFailedError(logdir or "<output>", e) from e
    return resource


def check_logdir(where: str, arg: str, logdir: object) -> str:
    """``logdir`` as a str: a local directory or a URL (``s3://bucket/run``, ...)."""
    if isinstance(logdir, str) and "://" in logdir:
        if "\x00" in logdir:
            raise ValueError(f"{where}: {arg!r} must not contain NUL")
        protocol, _, rest = logdir.partition("://")
        if not protocol or not rest.strip("/"):
            raise ValueError(f"{where}: {arg!r} is not a usable URL: {logdir!r}")
        return logdir
    return check_local_dir(where, arg, logdir)


def check_local_dir(where: str, arg: str, logdir: object) -> str:
    """``logdir`` as a str path to a local directory, or a clear error naming ``arg``."""
    if logdir is None:
        raise ValueError(f"{where}: {arg!r} is required, got None")
    if not isinstance(logdir, (str, os.PathLike)):
        raise TypeError(f"{where}: {arg!r} must be a path, got {type(logdir).__name__}")
    path = os.fspath(logdir)
    if not isinstance(path, str) or not path:
        raise ValueError(f"{where}: {arg!r} must be a non-empty path, got {logdir!r}")
    if "\x00" in path:
        raise ValueError(f"{where}: {arg!r} must not contain NUL, got {path!r}")
    if "://" in path:
        raise ValueError(f"{where}: only local directories are supported, got {path!r}")
    return path


def _reopen(cls: type[W], logdir: str | None, settings: WriterSettings) -> W:
    if logdir is None:
        return cls._wrap(None, None, settings)
    return cls._wrap(open_writer_resource(logdir, settings), logdir, settings)


def _check_timeout(where: str, timeout: object) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(
            f"{where}: 'timeout' must be None or a number of seconds, got "
            f"{type(timeout).__name__} {timeout!r}"
        )
    if not timeout >= 0:  # also NaN
        raise ValueError(f"{where}: 'timeout' must be >= 0, got {timeout!r}")


def _say_last_words(
    resource: BufferedEventWriter, last_words: dict[str, Callable[[bool], bytes]],
    explicit: bool,
) -> None:
    """Queue the writer's last events (once each) before it closes."""
    while last_words:
        _, make = last_words.popitem()
        if resource.closed:
            continue
        # Closing may have begun elsewhere (an exit hook): then nothing more goes in.
        with contextlib.suppress(WriterClosedError):
            resource.append(make(explicit))


def _close_quietly(
    resource: BufferedEventWriter, last_words: dict[str, Callable[[bool], bytes]]
) -> None:
    # Runs at garbage collection or interpreter exit: never raise, never hang.
    try:
        try:
            _say_last_words(resource, last_words, False)
        finally:
            resource.close_at_exit(EXIT_TIMEOUT_SECS)
    except Exception as e:
        warnings.warn(
            f"summarylib: closing {resource.name} failed: {e}", RuntimeWarning, stacklevel=1
        )


def flush(writer: WriterBase | None = None) -> None:
    """Flush ``writer``, or the calling thread's default writer if None."""
    target = _local.state.writer if writer is None else writer
    if target is None:
        return
    if not isinstance(target, WriterBase):
        raise ArgumentError(  # TensorFlow raises ValueError: both
            f"flush: 'writer' must be a SummaryWriter or None, got {type(target).__name__}"
        )
    target.flush()
