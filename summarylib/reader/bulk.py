"""Find and check the records of an event-file chunk in bulk, with numpy.

Event files are long runs of records of a few sizes that repeat: a training loop logs the
same tags every step, so record sizes follow a short period (``loss``, ``acc``, ``lr``,
``loss``, ...). :func:`scan_chunk` walks a few records one by one, finds that period, and
then checks thousands of records at once through strided views of the buffer (each phase of
the period is a fixed stride apart). Where the pattern breaks it walks again.

Checksums are checked in bulk too. CRC-32C is affine over GF(2) for a fixed length:
``crc(x) = crc(ref) ^ L(x ^ ref)`` with ``L`` linear (the tables of
:func:`~summarylib.encoding._tfrecord.crc_tables`, which the writer's bulk framer uses too), so
for records of one length, only the byte columns that differ from a reference record (the wall
time, the step, the value) need a table lookup each; every other column is checked for
equality with the reference instead.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from summarylib.encoding._tfrecord import crc32c, crc_tables, mask, masked_crc32c
from summarylib.errors import DataLossError

__all__ = ["Phase", "ScannedChunk", "phase_rows", "scan_chunk"]

_unpack_q = struct.Struct("<Q").unpack_from
_unpack_i = struct.Struct("<I").unpack_from
_WALK = 24  # records walked one by one before looking for a period
_MAX_PERIOD = 12
# Past these, checking each record with crc32c costs less than the bulk tables.
_MAX_BULK_LENGTH = 4096
_MAX_VARYING = 48
_PROBE = 8


@dataclass
class Phase:
    """Records of one length found by one bulk step: ``starts`` are payload offsets."""

    length: int
    starts: np.ndarray  # int64, payload offsets into the chunk, in file order
    order: np.ndarray  # int64, the records' indices in the chunk (file order)


@dataclass
class ScannedChunk:
    """The whole records at the start of a chunk: bulk phases plus singly walked records."""

    phases: list[Phase]
    count: int  # records in the chunk
    end: int  # offset just past the last whole record
    truncated: bool  # the bytes after ``end`` cannot start a whole record (only at EOF)


def scan_chunk(buf: bytes, path: str, base: int, *, check_crc: bool = True) -> ScannedChunk:
    """Find every whole record in ``buf`` (a chunk starting at file offset ``base``).

    Records that are cut by the end of ``buf`` are left for the next chunk. Raises
    :class:`DataLossError` (file offset) on a bad length or data checksum.
    """
    n = len(buf)
    groups: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    # Records walked one by one, as Python ints (many logs have no short period: a
    # model's hundreds of histograms a step), and the parts of `groups` they go before.
    walked: dict[int, tuple[list[int], list[int]]] = {}
    off = 0
    count = 0
    while True:
        sizes: list[int] = []
        o = off
        while len(sizes) < _WALK and o + 12 <= n:
            if masked_crc32c(buf[o : o + 8]) != _unpack_i(buf, o + 8)[0]:
                raise DataLossError(path, base + o, "corrupted record (bad length checksum)")
            (length,) = _unpack_q(buf, o)
            if o + 16 + length > n:
                break  # cut by the chunk's end (or a torn last record at the file's)
            sizes.append(length)
            o += 16 + length
        if not sizes:
            break
        period = _period(sizes) if len(sizes) == _WALK else None
        if period is None:
            _add_walked(walked, off, sizes, count)
            count += len(sizes)
            off = o
            continue
        pattern = sizes[:period]
        stride = sum(pattern) + 16 * period
        k = _bulk_count(buf, off, pattern, stride, path, base)
        _flush_walked(walked, groups)
        _add(groups, off, pattern, count, k)
        count += k * period
        off += k * stride
    truncated = False
    if off < n:
        if n - off >= 12:
            (length,) = _unpack_q(buf, off)
            truncated = masked_crc32c(buf[off : off + 8]) == _unpack_i(buf, off + 8)[0]
        else:
            truncated = True
    _flush_walked(walked, groups)
    phases = []
    for length, parts in groups.items():
        starts = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        order = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
        phase = Phase(length, starts, order)
        if check_crc:
            _check_data_crcs(buf, phase, path, base)
        phases.append(phase)
    return ScannedChunk(phases, count, off, truncated)


def _period(sizes: list[int]) -> int | None:
    for p in range(1, _MAX_PERIOD + 1):
        if all(sizes[i] == sizes[i - p] for i in range(p, len(sizes))):
            return p
    return None


def _bulk_count(buf: bytes, off: int, pattern: list[int], stride: int, path: str, base: int) -> int:
    # How many whole repetitions of `pattern` start at `off`: every phase's length field
    # must equal the pattern's (a strided view per phase), and its checksum too.
    k = (len(buf) - off) // stride
    ok = np.ones(k, dtype=bool)
    c = 0
    for length in pattern:
        view = np.ndarray((k,), dtype="<u8", buffer=buf, offset=off + c, strides=(stride,))
        ok &= view == length
        c += length + 16
    bad = np.flatnonzero(~ok)
    k = int(bad[0]) if bad.size else k
    c = 0
    for length in pattern:
        crcs = np.ndarray((k,), dtype="<u4", buffer=buf, offset=off + c + 8, strides=(stride,))
        want = masked_crc32c(struct.pack("<Q", length))
        wrong = np.flatnonzero(crcs != want)
        if wrong.size:
            raise DataLossError(
                path,
                base + off + c + int(wrong[0]) * stride,
                "corrupted record (bad length checksum)",
            )
        c += length + 16
    return k


def _add(
    groups: dict[int, list[tuple[np.ndarray, np.ndarray]]],
    off: int,
    pattern: list[int],
    first: int,
    reps: int,
) -> None:
    # Records `first`, `first + 1`, ...: `reps` repetitions of `pattern` from `off`.
    stride = sum(pattern) + 16 * len(pattern)
    rep = np.arange(reps, dtype=np.int64)
    c = 0
    for j, length in enumerate(pattern):
        starts = off + c + 12 + rep * stride
        order = first + j + rep * len(pattern)
        groups.setdefault(length, []).append((starts, order))
        c += length + 16


def _add_walked(
    walked: dict[int, tuple[list[int], list[int]]], off: int, sizes: list[int], first: int
) -> None:
    # Records `first`, `first + 1`, ... of lengths `sizes`, one after the other from `off`.
    for length in sizes:
        part = walked.get(length)
        if part is None:
            part = walked[length] = ([], [])
        part[0].append(off + 12)
        part[1].append(first)
        first += 1
        off += length + 16


def _flush_walked(
    walked: dict[int, tuple[list[int], list[int]]],
    groups: dict[int, list[tuple[np.ndarray, np.ndarray]]],
) -> None:
    # The walked records join their lengths' parts as arrays, before any later part.
    for length, (starts, order) in walked.items():
        groups.setdefault(length, []).append(
            (np.array(starts, dtype=np.int64), np.array(order, dtype=np.int64)))
    walked.clear()


def _check_data_crcs(buf: bytes, phase: Phase, path: str, base: int) -> None:
    # crc(x) = crc(ref) ^ L(x ^ ref) for records of one length (see the module docstring):
    # a lookup per column that varies, an equality test per column that does not.
    length = phase.length
    starts = phase.starts
    u8 = np.frombuffer(buf, dtype=np.uint8)
    footers = _gather_u32(u8, starts + length)
    if length == 0:
        want = masked_crc32c(b"")
        bad = np.flatnonzero(footers != want)
        if bad.size:
            raise DataLossError(
                path, base + int(starts[bad[0]]) - 12, "corrupted record (bad data checksum)"
            )
        return
    if len(starts) < 4 or length > _MAX_BULK_LENGTH:
        _check_one_by_one(buf, starts, length, footers, path, base)
        return
    # A few records first: records of one length that differ in many columns (a
    # histogram's table) are checked one by one without gathering them all.
    probe = phase_rows(buf, starts[:_PROBE], length)
    if np.count_nonzero((probe != probe[0]).any(axis=0)) > _MAX_VARYING:
        _check_one_by_one(buf, starts, length, footers, path, base)
        return
    rows = phase_rows(buf, starts, length)
    ref = rows[0]
    varying = np.flatnonzero((rows != ref).any(axis=0))
    if len(varying) > _MAX_VARYING:
        _check_one_by_one(buf, starts, length, footers, path, base)
        return
    crc_ref = crc32c(bytes(ref))
    acc = np.full(len(starts), crc_ref, dtype=np.uint32)
    tables = crc_tables((length - 1 - varying).tolist())
    for i, col in enumerate(varying.tolist()):
        acc ^= tables[i][rows[:, col] ^ ref[col]]
    masked = mask(acc)
    bad = np.flatnonzero(masked != footers)
    if bad.size:
        raise DataLossError(
            path, base + int(starts[bad[0]]) - 12, "corrupted record (bad data checksum)"
        )


def _check_one_by_one(
    buf: bytes, starts: np.ndarray, length: int, footers: np.ndarray, path: str, base: int
) -> None:
    view = memoryview(buf)
    for start, footer in zip(starts.tolist(), footers.tolist(), strict=True):
        if masked_crc32c(view[start : start + length]) != footer:
            raise DataLossError(path, base + start - 12, "corrupted record (bad data checksum)")


def phase_rows(buf: bytes, starts: np.ndarray, length: int) -> np.ndarray:
    """The payloads at ``starts`` (all ``length`` bytes) as a ``[k, length]`` uint8 array.

    A strided view of ``buf`` when the starts are evenly spaced, else a gathered copy.
    """
    if _scattered(starts):
        u8 = np.frombuffer(buf, dtype=np.uint8)
        return u8[starts[:, None] + np.arange(length)]
    return _strided(buf, starts, length)


def _scattered(starts: np.ndarray) -> bool:
    return len(starts) < 2 or bool(np.any(np.diff(starts) != starts[1] - starts[0]))


def _strided(buf: bytes, starts: np.ndarray, length: int) -> np.ndarray:
    stride = int(starts[1] - starts[0])
    return np.ndarray(  # type: ignore[no-any-return]
        (len(starts), length),
        dtype=np.uint8,
        buffer=buf,
        offset=int(starts[0]),
        strides=(stride, 1),
    )


def _gather_u32(u8: np.ndarray, at: np.ndarray) -> np.ndarray:
    b = u8[at[:, None] + np.arange(4)].astype(np.uint32)
    return b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)
