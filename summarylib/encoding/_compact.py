"""Compact records: queue entries that stand for an Event until the writer thread expands them.

An op that registers a record format with the buffered writer gets a marker, and then
queues ``marker + data`` instead of a whole Event; the writer thread hands the record to
the format's expander (see ``RecordCodecs.register`` in the writer). A marker is
:data:`MARKER_SIZE` bytes: :data:`MARK`, then the format's number, 3 bytes little-endian.

:data:`MARK` is a zero byte because no serialized Event begins with one: protobuf has no
field number 0 (and an empty Event is empty), so a queue entry that begins with it is
never an Event.
"""

from __future__ import annotations

__all__ = ["MARK", "MARKER_FORMAT", "MARKER_SIZE", "MAX_FORMATS", "format_number", "marker"]

MARK = 0
MARKER_SIZE = 4
#: The marker as a ``struct`` field, for record formats that pack it with their data.
MARKER_FORMAT = f"{MARKER_SIZE}s"
#: How many format numbers a marker can hold.
MAX_FORMATS = 1 << (8 * (MARKER_SIZE - 1))


def marker(number: int) -> bytes:
    """The marker of format ``number`` (0 <= number < MAX_FORMATS)."""
    if not 0 <= number < MAX_FORMATS:
        raise ValueError(f"marker: a format number must be in [0, {MAX_FORMATS}), got {number}")
    return bytes((MARK,)) + number.to_bytes(MARKER_SIZE - 1, "little")


def format_number(record: bytes) -> int:
    """The format number of a compact record (one that begins with :data:`MARK`)."""
    return int.from_bytes(record[1:MARKER_SIZE], "little")
