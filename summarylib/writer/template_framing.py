"""Frame many payloads of one template at once, CRCs included, in a few numpy calls.

A run of scalar events of one set of tags is one template (the keys, lengths,
tags and tensor headers) with the same byte positions filled in differently
(the time, the step, the values). Framing them one by one costs about a
microsecond of Python each on the writer thread, and the writer thread shares
the interpreter lock with the training loop. Here a whole run costs a few numpy
calls.

The CRC works because CRC-32C is affine over GF(2): for messages of one length,
``crc(a ^ b ^ c) == crc(a) ^ crc(b) ^ crc(c)``. With ``T`` the template with its
variable positions zeroed and ``D`` a payload's variable bytes (zero
elsewhere), ``crc(T ^ D) == crc(T) ^ crc(D) ^ crc(zeros)``, and
``crc(D) ^ crc(zeros)`` is the XOR of one table entry per variable position,
indexed by that position's byte. The tables come from 8 CRCs per position
(one per bit), computed with the same CRC-32C as everything else.

numpy must be imported by the caller (the writer thread never imports it: an
import holds the interpreter lock for a long time); see :func:`numpy_if_loaded`.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from typing import Any

from summarylib.writer.records import HEADER_SIZE, crc32c, mask

__all__ = ["TemplateFramer", "numpy_if_loaded"]

# The mask adds a constant after the rotation: the mask of a zero CRC is that constant.
_MASK_DELTA = mask(0)


def numpy_if_loaded() -> Any:
    """The numpy module if this process has imported it already, else None."""
    return sys.modules.get("numpy")


class TemplateFramer:
    """TFRecords of payloads that differ from ``template`` only at ``positions``.

    Args:
      template: a payload; its bytes at ``positions`` are ignored.
      positions: distinct byte offsets into ``template``, in the order of the
        columns given to :meth:`frame`.

    ``frame(rows)`` equals ``frame_many`` of the payloads that ``rows`` fill in.
    """

    def __init__(self, template: bytes, positions: Sequence[int]) -> None:
        np = numpy_if_loaded()
        if np is None:
            raise RuntimeError("TemplateFramer needs numpy imported by the caller")
        size = len(template)
        if len(set(positions)) != len(positions) or not all(0 <= p < size for p in positions):
            raise ValueError(f"positions must be distinct offsets below {size}")
        base = bytearray(template)
        for p in positions:
            base[p] = 0
        zeros = bytearray(size)
        zero_crc = crc32c(zeros)
        base_crc = crc32c(base)  # crc(T); each payload's table entries XOR in
        self._base_rotated = np.uint32(((base_crc >> 15) | (base_crc << 17)) & 0xFFFFFFFF)
        # basis[i, b]: what a 1 in bit b at positions[i] adds, crc(e) ^ crc(zeros).
        basis = np.empty((len(positions), 8), dtype=np.uint32)
        for i, p in enumerate(positions):
            for b in range(8):
                zeros[p] = 1 << b
                basis[i, b] = crc32c(zeros) ^ zero_crc
            zeros[p] = 0
        bits = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(bool)  # (256, 8)
        table = np.zeros((len(positions), 256), dtype=np.uint32)
        for b in range(8):
            table ^= np.where(bits[:, b], basis[:, b : b + 1], np.uint32(0))
        # The mask's rotation is linear too: the tables and the base hold rotated CRCs,
        # so a payload's masked CRC is the XOR of its entries plus the mask's constant.
        self._table = (table >> np.uint32(15)) | (table << np.uint32(17))
        self._columns = np.arange(len(positions))
        length = struct.pack("<Q", size)
        header = length + struct.pack("<I", mask(crc32c(length)))
        row = np.frombuffer(header + bytes(base) + b"\0\0\0\0", dtype=np.uint8)
        self._row = row
        self._positions = np.asarray(positions, dtype=np.intp) + HEADER_SIZE
        self._size = size
        self._np = np

    def frame(self, rows: Any) -> bytes:
        """The framed records of ``rows``: a (m, len(positions)) uint8 array."""
        np = self._np
        m = rows.shape[0]
        rotated = np.bitwise_xor.reduce(self._table[self._columns, rows], axis=1)  # (m,)
        rotated ^= self._base_rotated
        masked = (rotated + np.uint32(_MASK_DELTA)).astype("<u4", copy=False)
        out = np.tile(self._row, (m, 1))
        out[:, self._positions] = rows
        out[:, HEADER_SIZE + self._size :] = masked.view(np.uint8).reshape(m, 4)
        framed: bytes = out.tobytes()
        return framed
