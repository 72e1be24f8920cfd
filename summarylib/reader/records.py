"""Iterate the TFRecords of one file, checking both CRCs of each."""

from __future__ import annotations

import io
import os
import stat
import struct
from collections.abc import Iterator
from typing import NamedTuple

from crc32c import crc32c

from summarylib.encoding._tfrecord import FOOTER_SIZE, HEADER_SIZE, mask, masked_crc32c
from summarylib.errors import DataLossError

__all__ = ["Record", "RecordReader", "iter_records"]

_unpack_header = struct.Struct("<QI").unpack
_unpack_footer = struct.Struct("<I").unpack
_READ_BUFFER = 1 << 20
#: Records longer than this have their data checksum checked before they are read whole.
BIG_RECORD = 1 << 24


class Record(NamedTuple):
    """One record: where it starts in the file and its payload."""

    offset: int
    payload: bytes


class RecordReader:
    """Reads the records of one event file: an iterator that resumes as the file grows.

    A truncated last record (partial header, payload or footer at the end of
    the file) ends iteration quietly: it is what a file still being written
    looks like; ``truncated_at`` then holds its offset. Like TensorFlow's
    ``tf_record_iterator`` and TensorBoard's event file loader, the reader
    keeps its place: once exhausted, ``next()`` (or another ``for`` loop over
    the same reader) reads from the end of the last whole record again, so it
    yields records appended since, and a torn record once its missing bytes
    have arrived. A length is never trusted beyond the bytes the file holds,
    so a corrupt length cannot make the reader allocate more than the file's
    size, and (while data checksums are checked) a record longer than
    :data:`BIG_RECORD` is held in memory only once its checksum, streamed from
    the file, matches. The file is open only
    while records are being read: it is closed each time the reader reaches
    the end.

    Raises (while iterating):
      DataLossError: a length or payload CRC does not match (file, offset).
        The reader stays at that record: reading again raises again.
    """

    def __init__(self, path: str | os.PathLike[str], *, check_data_crc: bool = True) -> None:
        self.path = os.fspath(path)
        self.check_data_crc = check_data_crc
        #: Offset of a torn last record when the reader last reached the end, else None.
        self.truncated_at: int | None = None
        #: Offset just past the last whole record read so far: where reading resumes.
        self.end = 0
        self._records: Iterator[Record] | None = None

    def __iter__(self) -> RecordReader:
        return self

    def __next__(self) -> Record:
        records = self._records
        if records is None:
            records = self._records = self._read_from(self.end)
        try:
            return next(records)
        except BaseException:
            # The end (or an error): the file is closed; the next call opens it again
            # at `end`, with its size read afresh.
            self._records = None
            raise

    def _read_from(self, offset: int) -> Iterator[Record]:
        name = self.path
        with _open_regular(name) as f:
            size = file_size(f)
            if offset:
                f.seek(offset)
            read = f.read
            while True:
                header = read(HEADER_SIZE)
                if len(header) < HEADER_SIZE:
                    self.truncated_at = offset if header else None
                    return
                length, length_crc = _unpack_header(header)
                if masked_crc32c(header[:8]) != length_crc:
                    raise DataLossError(name, offset, "corrupted record (bad length checksum)")
                if length > size - offset - HEADER_SIZE - FOOTER_SIZE:
                    self.truncated_at = offset
                    return
                if length > BIG_RECORD and self.check_data_crc:
                    whole = check_big_record(f, name, offset, length)
                    if not whole:
                        self.truncated_at = offset  # the file shrank while we read
                        return
                payload = read(length)
                footer = read(FOOTER_SIZE)
                if len(payload) < length or len(footer) < FOOTER_SIZE:
                    self.truncated_at = offset  # the file shrank while we read
                    return
                if self.check_data_crc and masked_crc32c(payload) != _unpack_footer(footer)[0]:
                    raise DataLossError(name, offset, "corrupted record (bad data checksum)")
                offset += HEADER_SIZE + length + FOOTER_SIZE
                self.end = offset
                self.truncated_at = None
                yield Record(offset - HEADER_SIZE - length - FOOTER_SIZE, payload)


def check_big_record(f: io.BufferedReader, path: str, offset: int, length: int) -> bool:
    """Check the data CRC of the record at ``offset`` by streaming it, before it is read whole.

    A record's bytes are held in memory only once they are known to be its own: a length
    that a hole in a sparse file (or any corruption) backs costs a pass over the file, not
    an allocation of that size. ``f`` is left where it was. False if the file ends first.

    Raises:
      DataLossError: the data checksum does not match.
    """
    where = f.tell()
    f.seek(offset + HEADER_SIZE)
    crc = 0
    left = length
    try:
        while left:
            chunk = f.read(min(left, _READ_BUFFER))
            if not chunk:
                return False
            crc = crc32c(chunk, crc)
            left -= len(chunk)
        footer = f.read(FOOTER_SIZE)
        if len(footer) < FOOTER_SIZE:
            return False
        if mask(crc) != _unpack_footer(footer)[0]:
            raise DataLossError(path, offset, "corrupted record (bad data checksum)")
        return True
    finally:
        f.seek(where)


class _InMemory(io.BufferedReader):
    """An object's bytes, downloaded whole, read like a local file."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.size = len(data)


def file_size(f: io.BufferedReader) -> int:
    """The size of a file opened by :func:`_open_regular`."""
    size = getattr(f, "size", None)
    return int(size) if size is not None else os.fstat(f.fileno()).st_size


def _open_regular(path: str) -> io.BufferedReader:
    if "://" in path and not path.startswith("file://"):
        from summarylib.writer._remote import reading_filesystem

        fs = reading_filesystem(path)
        return _InMemory(fs.cat_file(fs._strip_protocol(path)))
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
    # writer forever. Only a regular file can hold event records.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataLossError(path, 0, "not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        # The buffer never needs to be larger than the file.
        size = max(io.DEFAULT_BUFFER_SIZE, min(_READ_BUFFER, st.st_size))
        return io.BufferedReader(io.FileIO(fd, "rb", closefd=True), buffer_size=size)
    except BaseException:
        os.close(fd)
        raise


def iter_records(path: str | os.PathLike[str], *, check_data_crc: bool = True) -> Iterator[Record]:
    """The records of an event file in order, resuming as it grows (see :class:`RecordReader`)."""
    return RecordReader(path, check_data_crc=check_data_crc)
