"""TFRecord framing with masked CRC-32C, as TensorFlow writes and reads it.

A record is ``u64le length``, ``u32le masked_crc(length bytes)``, ``payload``,
``u32le masked_crc(payload)``. The mask rotates the CRC-32C right by 15 bits and
adds ``0xA282EAD8`` (mod 2**32). There is no file header, footer or padding.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "crc32c",
    "frame",
    "frame_many",
    "mask",
    "masked_crc32c",
    "unmask",
]

HEADER_SIZE = 12  # u64 length + u32 masked CRC of the length
FOOTER_SIZE = 4  # u32 masked CRC of the payload
_MASK_DELTA = 0xA282EAD8

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


def mask(crc: int) -> int:
    """Mask a CRC-32C the way TFRecord stores it."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """Invert :func:`mask`."""
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return the masked CRC-32C of ``data``."""
    c = _crc()(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


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
        append(_pack_i((((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF))
    return b"".join(parts)
