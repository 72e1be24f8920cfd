"""Frame many payloads of one template at once, CRCs included, in a few numpy calls.

A run of scalar events of one set of tags is one template (the keys, lengths,
tags and tensor headers) with the same byte positions filled in differently
(the time, the step, the values). Framing them one by one costs about a
microsecond of Python each on the writer thread, and the writer thread shares
the interpreter lock with the training loop. Here a whole run costs a few numpy
calls.

The CRC works because CRC-32C is affine over GF(2) (see
:func:`~summarylib.encoding._tfrecord.crc_tables`): with ``T`` the template with its
variable positions zeroed, a payload's CRC is ``crc(T)`` XOR one table entry per
variable position, indexed by that position's byte.

The tables cost 1 KiB per position, and making them costs nine CRCs of up to the
payload's length per position: for a template with many positions (thousands of
tags in one event) that is megabytes kept for the life of the file and seconds of
work. Past ``max_table_positions`` the framer keeps no tables: it still assembles
the payloads in numpy, and computes each record's CRC directly, which for payloads
that large costs less per record than the table lookups.

numpy must be imported by the caller (the writer thread never imports it: an
import holds the interpreter lock for a long time); see :func:`numpy_if_loaded`.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from typing import Any

from summarylib.encoding._tfrecord import HEADER_SIZE, crc32c, crc_tables, mask

__all__ = ["MAX_TABLE_POSITIONS", "TemplateFramer", "numpy_if_loaded"]

#: Templates with more variable positions than this are framed without CRC tables: past
#: about 20 scalars (8 time bytes, the step, 4 bytes a value) a CRC per record costs less
#: than the table lookups, and the tables (1 KiB a position) are not worth keeping.
MAX_TABLE_POSITIONS = 96

_pack_i = struct.Struct("<I").pack


def numpy_if_loaded() -> Any:
    """The numpy module if this process has imported it already, else None."""
    return sys.modules.get("numpy")


class TemplateFramer:
    """TFRecords of payloads that differ from ``template`` only at ``positions``.

    Args:
      template: a payload; its bytes at ``positions`` are ignored.
      positions: distinct byte offsets into ``template``, in the order of the
        columns given to :meth:`frame`.
      max_table_positions: with more positions than this, no CRC tables are made
        (see the module docstring); :attr:`table_bytes` is then 0.

    ``frame(rows)`` equals ``frame_many`` of the payloads that ``rows`` fill in,
    whichever way the CRCs are computed.
    """

    def __init__(
        self,
        template: bytes,
        positions: Sequence[int],
        *,
        max_table_positions: int = MAX_TABLE_POSITIONS,
    ) -> None:
        np = numpy_if_loaded()
        if np is None:
            raise RuntimeError("TemplateFramer needs numpy imported by the caller")
        size = len(template)
        if len(set(positions)) != len(positions) or not all(0 <= p < size for p in positions):
            raise ValueError(f"positions must be distinct offsets below {size}")
        base = bytearray(template)
        for p in positions:
            base[p] = 0
        self._table: Any = None
        if len(positions) <= max_table_positions:
            # crc(T) and, per position, what each byte value there XORs into it.
            self._base_crc = np.uint32(crc32c(base))
            self._table = crc_tables([size - 1 - p for p in positions])
            self._columns = np.arange(len(positions))
        length = struct.pack("<Q", size)
        header = length + _pack_i(mask(crc32c(length)))
        self._row = np.frombuffer(header + bytes(base) + b"\0\0\0\0", dtype=np.uint8)
        self._positions = np.asarray(positions, dtype=np.intp) + HEADER_SIZE
        self._size = size
        self._np = np

    @property
    def table_bytes(self) -> int:
        """Bytes held by this framer's CRC tables (0 when it computes CRCs per record)."""
        return 0 if self._table is None else int(self._table.nbytes)

    def frame(self, rows: Any) -> bytes:
        """The framed records of ``rows``: a (m, len(positions)) uint8 array."""
        np = self._np
        m = rows.shape[0]
        out = np.tile(self._row, (m, 1))
        out[:, self._positions] = rows
        end = HEADER_SIZE + self._size
        if self._table is not None:
            crcs = np.bitwise_xor.reduce(self._table[self._columns, rows], axis=1)  # (m,)
            crcs ^= self._base_crc
        else:
            # One CRC per payload, each a C call over the payload's bytes in place.
            payloads = out[:, HEADER_SIZE:end]
            crcs = np.fromiter((crc32c(p) for p in payloads), dtype=np.uint32, count=m)
        out[:, end:] = mask(crcs).astype("<u4", copy=False).view(np.uint8).reshape(m, 4)
        framed: bytes = out.tobytes()
        return framed
