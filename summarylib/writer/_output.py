"""Where framed records go: a small ``Output`` interface and two implementations.

An output receives whole blocks of TFRecords. Bytes once written are never rewritten or
cut: a reader tailing the file may have read them already. A ``write`` that fails part
way leaves part of a record at the end of the file, which every reader takes for a
record still being written and waits on. The file output keeps the rest of that record
and writes it first on the next ``write``, so a disk that fills and empties leaves one
file of whole records. Only when completing the record fails too, for a reason other
than space, is the output :attr:`Output.torn`: the writer closes it and continues in a
new file (readers move on to the newer file).

* :class:`FileOutput` appends to a local event file through a raw file
  descriptor: no user-space buffer, so a crash of the process loses nothing
  that ``write`` returned for, and a forked child can drop its copy of the
  descriptor without flushing anyone's data.
* :class:`MemoryOutput` keeps the bytes in memory, for tests and tools.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import os
import struct

from summarylib.errors import WriteFailedError
from summarylib.writer._naming import event_file_name

__all__ = ["FileOutput", "MemoryOutput", "Output", "open_event_file"]


class Output(abc.ABC):
    """A sink for framed event records.

    Subclasses implement ``write``; ``flush``, ``sync``, ``close`` and ``discard``
    default to no-ops, ``push`` to ``flush`` and ``held_bytes`` to 0. Methods are
    called from one thread at a time (the writer's thread).
    """

    #: A human-readable name used in error messages (a path for files).
    name: str = "<output>"

    @abc.abstractmethod
    def write(self, data: bytes) -> None:
        """Append ``data`` (one or more whole records), all of it or none."""

    def flush(self) -> None:  # noqa: B027 - optional hook
        """Make written data visible to readers as the output's own policy allows.

        Called after every batch the writer writes. An output may hold data back
        here (an object store uploads in windows): see :meth:`push`.
        """

    def push(self) -> None:
        """Make everything written so far visible to readers now.

        Called for ``flush()``, exiting ``as_default()`` and ``close()``. The default
        is :meth:`flush`; outputs that hold data back override it.
        """
        self.flush()

    @property
    def held_bytes(self) -> int:
        """Bytes written but held back from readers (0 for outputs that hold nothing).

        They count toward the writer's ``max_buffer_bytes``, and ``flush()`` pushes
        them. Read by the writer thread between writes.
        """
        return 0

    def sync(self) -> None:  # noqa: B027 - optional hook
        """Make written data durable against power loss (e.g. ``fsync``)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources. Called once; no calls follow."""

    @property
    def torn(self) -> bool:
        """True once a failed write left part of its data at the end of the output.

        Nothing may be appended after torn bytes (every reader stops there), so the
        writer closes this output and continues in a new one. False by default.
        """
        return False

    def discard(self) -> None:  # noqa: B027 - optional hook
        """Let go of the parent's output in a forked child. The default does nothing.

        It runs inside ``os.fork()``, in a child where only the forking thread
        exists: a lock that the writer thread (or any other) held at that
        moment stays locked forever, so calling ``close()`` here could hang
        the child. Override it only with code that takes no lock and writes
        nothing (the parent still owns the data), e.g. closing a descriptor.
        """


# Errors after which the same file is written again: the disk (or quota) had no room this
# time and may have some later. Any other error while completing a record tears the file.
_SPACE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT})


class FileOutput(Output):
    """Append-only writes to a local file through a raw descriptor.

    A write cut short (a disk filling up takes part of a block, then refuses) leaves the
    start of a record at the end of the file. Its remaining bytes are kept (at most one
    record's) and written before anything else by the next ``write``: the file then
    continues with whole records, and a reader that waited at the partial record reads
    it whole. Events of the failed block are reported lost all the same (the record
    completed later is one of them; whole records before it were written too), so a
    report may count an event the file holds, never the reverse.
    """

    def __init__(self, path: str, fd: int) -> None:
        self.name = path
        self.path = path
        self._fd = fd
        self._dir_synced = False
        self._torn = False
        self._unfinished = b""  # the rest of a record whose start ends the file

    @property
    def torn(self) -> bool:
        return self._torn

    @property
    def unfinished(self) -> int:
        """Bytes of a partly written record still to be written (0: whole records only)."""
        return len(self._unfinished)

    def write(self, data: bytes) -> None:
        if self._torn:
            raise WriteFailedError(self.path, OSError(
                errno.EIO, "the file ends in a partly written block; nothing is appended "
                "after it"))
        if self._unfinished:
            self._finish_record()
        view = memoryview(data)
        written = [0]
        try:
            _write_all(self._fd, view, written)
        except BaseException:
            # Never cut the partial block off: a reader tailing the file may have read
            # past it already, and would never see what we wrote in its place. Keep the
            # rest of the record it ends in, for the next write to complete.
            if written[0]:
                self._unfinished = bytes(view[written[0]:_record_end(view, written[0])])
            raise

    def _finish_record(self) -> None:
        # Write the rest of the partly written record before anything else. Cut short
        # again by a full disk: keep what is left and try at the next write. Any other
        # failure: the record stays torn, the writer moves on to a new file.
        view = memoryview(self._unfinished)
        written = [0]
        try:
            _write_all(self._fd, view, written)
        except OSError as e:
            self._unfinished = bytes(view[written[0]:])
            if e.errno not in _SPACE_ERRORS:
                self._torn = True
            raise
        self._unfinished = b""

    def sync(self) -> None:
        """``fsync`` the file; the first time also its directory (the new name)."""
        self._try_to_finish_record()
        os.fsync(self._fd)
        if not self._dir_synced:
            _fsync_directory(os.path.dirname(self.path) or ".")
            self._dir_synced = True

    def close(self) -> None:
        """Complete a partly written record if the disk allows, and close the descriptor."""
        try:
            self._try_to_finish_record()
        finally:
            self._close_fd()

    def _try_to_finish_record(self) -> None:
        # At sync and close: the failure that left the record partial was reported
        # already; one that stays partial is taken by readers for the file's end.
        if self._unfinished and not self._torn:
            with contextlib.suppress(OSError):
                self._finish_record()

    def discard(self) -> None:
        # Only the child's copy of the descriptor is closed: that takes no
        # lock and, with no user-space buffer, writes nothing of the parent's.
        self._close_fd()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


class MemoryOutput(Output):
    """Keeps written records in memory. ``getvalue()`` returns them."""

    def __init__(self, name: str = "<memory>") -> None:
        self.name = name
        self._buf = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self._buf += data

    def getvalue(self) -> bytes:
        """All bytes written so far."""
        return bytes(self._buf)

    def close(self) -> None:
        self.closed = True


def _write_all(fd: int, view: memoryview, written: list[int]) -> None:
    """Write all of ``view`` to ``fd``; ``written[0]`` counts the bytes taken so far (also
    when a write raises part way)."""
    while written[0] < len(view):
        n = os.write(fd, view[written[0]:])
        if n == 0:  # pragma: no cover - a regular file never returns 0
            raise OSError(errno.EIO, "write returned 0 bytes")
        written[0] += n


def _record_end(block: memoryview, offset: int) -> int:
    """The end of the record of ``block`` (whole TFRecords) that holds byte ``offset``;
    ``offset`` itself where a record ends there (the bytes before it are whole records:
    nothing to complete, and the next record is not started)."""
    start = 0
    while True:
        length = int(struct.unpack_from("<Q", block, start)[0])
        end = start + 8 + 4 + length + 4  # length, its CRC, the data, the data's CRC
        if end >= offset or end >= len(block):
            return min(end, len(block))
        start = end


def _fsync_directory(path: str) -> None:
    # A new file survives power loss only once its directory entry does.
    # Some filesystems cannot open or sync a directory: nothing more to do there.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES):
            raise
    finally:
        os.close(fd)


def open_event_file(logdir: str, suffix: str) -> FileOutput:
    """Create ``logdir`` if needed and a new, exclusively owned event file in it."""
    os.makedirs(logdir, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    for _ in range(1000):
        path = os.path.join(logdir, event_file_name(suffix))
        try:
            fd = os.open(path, flags, 0o666)
        except FileExistsError:
            continue  # the counter moves on with every name; try the next one
        return FileOutput(path, fd)
    raise FileExistsError(errno.EEXIST, "could not find a free event file name", logdir)
