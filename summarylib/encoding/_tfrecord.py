"""TFRecord framing with masked CRC-32C, as TensorFlow writes and reads it.

A record is ``u64le length``, ``u32le masked_crc(length bytes)``, ``payload``,
``u32le masked_crc(payload)``. The mask rotates the CRC-32C right by 15 bits and
adds ``0xA282EAD8`` (mod 2**32). There is no file header, footer or padding.

This module is the one owner of the record bytes: the writer frames with it, the
readers check with it, and the bulk paths on both sides (framing a run of scalar
events at once, checking the checksums of thousands of records at once) take their
CRC tables from :func:`crc_tables`.
"""

from __future__ import annotations

import functools
import struct
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "MASK_DELTA",
    "crc32c",
    "crc_tables",
    "frame",
    "frame_many",
    "mask",
    "masked_crc32c",
    "unmask",
]

HEADER_SIZE = 12  # u64 length + u32 masked CRC of the length
FOOTER_SIZE = 4  # u32 masked CRC of the payload
#: What the mask adds after its rotation (the mask of a zero CRC).
MASK_DELTA = 0xA282EAD8

_pack_q = struct.Struct("<Q").pack
_pack_i = struct.Struct("<I").pack

# The `crc32c` package imports importlib.metadata at import time (~50 ms), so
# it is loaded on first use instead of when summarylib is imported.
_Buffer = bytes | bytearray | memoryview
_crc_impl: Callable[[_Buffer], int] | None = None


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return the (unmasked) CRC-32C of ``data``."""
    return _crc()(data)


def _crc() -> Callable[[_Buffer], int]:
    global _crc_impl
    if _crc_impl is None:
        import crc32c as _lib

        _crc_impl = _lib.crc32c
    return _crc_impl


def mask(crc: Any) -> Any:
    """Mask a CRC-32C the way TFRecord stores it.

    ``crc`` is an int, or a numpy ``uint32`` array (masked element-wise, in uint32
    arithmetic: the rotation drops the bits shifted out, the addition wraps).
    """
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """Invert :func:`mask`."""
    rot = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return the masked CRC-32C of ``data``."""
    c = _crc()(data)
    # mask() written out: readers call this twice per record, and the call is a
    # measurable share of it (as in frame_many).
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF


# Headers depend only on the payload length, and the same lengths recur
# (every scalar event of one tag has the same size), so they are memoised.
_header_cache: dict[int, bytes] = {}


def _header(n: int) -> bytes:
    h = _header_cache.get(n)
    if h is None:
        length = _pack_q(n)
        h = length + _pack_i(masked_crc32c(length))
        if len(_header_cache) < 4096:
            _header_cache[n] = h
    return h


def frame(payload: bytes) -> bytes:
    """Return ``payload`` framed as one TFRecord."""
    return _header(len(payload)) + payload + _pack_i(masked_crc32c(payload))


def frame_many(payloads: Iterable[bytes]) -> bytes:
    """Frame every payload and concatenate the records into one block."""
    crc = _crc()
    get = _header_cache.get
    parts: list[bytes] = []
    append = parts.append
    for p in payloads:
        h = get(len(p))
        if h is None:
            h = _header(len(p))
        c = crc(p)
        append(h)
        append(p)
        # mask() written out: this loop runs once per event on the writer thread,
        # and a call per record is a measurable share of it.
        append(_pack_i((((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF))
    return b"".join(parts)


def crc_tables(distances: Sequence[int]) -> Any:
    """The CRC-32C contribution of a byte at each of ``distances``, as a ``[k, 256]`` table.

    ``table[i, v]`` is what a byte of value ``v``, standing ``distances[i]`` bytes before
    the end of a message (0: the last byte), XORs into the message's CRC-32C compared with
    a zero byte there. CRC-32C is affine over GF(2), so for two messages ``a`` and ``b`` of
    one length, ``crc(a) ^ crc(b)`` is the XOR of the entries of the bytes of ``a ^ b``; the
    entries do not depend on the message's length or its other bytes. The bulk framer and
    the bulk checksum check both rest on this.

    numpy must be imported by the caller (the writer thread never imports it). Each row
    costs nine CRCs of ``distance + 1`` bytes and 1 KiB; rows are cached (a bounded cache).
    """
    np = sys.modules["numpy"]
    if not distances:
        return np.zeros((0, 256), dtype=np.uint32)
    return np.stack([_crc_row(int(d)) for d in distances])


# Byte values by their bits, (256, 8): which basis entries make up each table entry.
_BITS: Any = None


@functools.lru_cache(maxsize=1024)
def _crc_row(distance: int) -> Any:
    global _BITS
    np = sys.modules["numpy"]
    crc = _crc()
    if distance < 0:
        raise ValueError(f"crc_tables: a distance must be >= 0, got {distance}")
    tail = bytes(distance)
    zero = crc(b"\0" + tail)
    # What a single 1 bit in the byte does; every byte value is an XOR of these.
    basis = np.array([crc(bytes((1 << b,)) + tail) ^ zero for b in range(8)], dtype=np.uint32)
    if _BITS is None:
        _BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(bool)
    row = np.bitwise_xor.reduce(np.where(_BITS, basis, np.uint32(0)), axis=1)
    row.flags.writeable = False  # shared by every caller through the cache
    return row
