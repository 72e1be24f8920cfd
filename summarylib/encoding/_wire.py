"""Protobuf wire-format primitives, written by hand for the hot paths.

Only what summarylib emits is here: varints (int64 as two's complement, like
protobuf), length-delimited fields, and fixed 32/64-bit values. Tests prove the
bytes equal the ``protobuf`` package's serialization.
"""

from __future__ import annotations

import struct

__all__ = ["field_bytes", "field_varint", "key", "varint"]

_ONE_BYTE = [bytes((i,)) for i in range(128)]

pack_double = struct.Struct("<d").pack
pack_float = struct.Struct("<f").pack
_pack_u16 = struct.Struct("<H").pack


def varint(value: int) -> bytes:
    """Encode an int64/uint64 as a protobuf varint (negatives take 10 bytes)."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if 0 <= value < 0x4000:
        # Two bytes (lengths of most encoded tensors): low 7 bits with the
        # continuation bit, then the high 7 bits; no loop.
        return _pack_u16((value & 0x7F) | 0x80 | (value >> 7) << 8)
    if value < 0:
        value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(field_number: int, wire_type: int) -> bytes:
    """Encode a field key (tag) for ``field_number`` and ``wire_type``."""
    return varint((field_number << 3) | wire_type)


def field_bytes(field_number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): strings, bytes, sub-messages."""
    return varint((field_number << 3) | 2) + varint(len(payload)) + payload


def field_varint(field_number: int, value: int) -> bytes:
    """A varint field (wire type 0). Zero is still written; callers skip defaults."""
    return varint(field_number << 3) + varint(value)
