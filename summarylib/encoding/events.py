"""Compose ``Event``, ``Summary`` and ``Summary.Value`` wire bytes by hand.

Fields are emitted in field-number order, which is what protobuf's serializer
does, so the bytes equal ``Event(...).SerializeToString()``; tests check this.
Defaults are skipped as proto3 does (a step of 0 is not written).

Event:   1 wall_time (double), 2 step (int64), 3 file_version, 4 graph_def,
         5 summary, 8 tagged_run_metadata, 10 source_metadata
Summary: 1 value (repeated Value)
Value:   1 tag, 8 tensor (TensorProto), 9 metadata (SummaryMetadata)
"""

from __future__ import annotations

from collections.abc import Iterable

from summarylib.encoding.wire import field_bytes, pack_double, varint

__all__ = [
    "FILE_VERSION",
    "MAX_EVENT_BYTES",
    "event_bytes",
    "file_version_event",
    "step_field",
    "summary_bytes",
    "summary_event",
    "value_bytes",
]

FILE_VERSION = "brain.Event:2"
#: The largest serialized Event that readers can parse: protobuf refuses messages of
#: 2 GiB or more (its sizes are signed 32-bit), so TensorBoard, TensorFlow and
#: summarylib's reader would stop at a larger record. Ops refuse to write one.
MAX_EVENT_BYTES = 2**31 - 1

_WALL_TIME_KEY = b"\x09"  # field 1, fixed64
_STEP_KEY = b"\x10"  # field 2, varint

# Steps below 2**14 (one- and two-byte varints) are precomputed: nearly every
# training step falls here and this saves a varint loop per event.
_STEP_FIELDS = (
    [b""]
    + [bytes((0x10, i)) for i in range(1, 128)]
    + [bytes((0x10, (i & 0x7F) | 0x80, i >> 7)) for i in range(128, 1 << 14)]
)


# Steps from 2**14 to 2**21 (three-byte varints: up to about two million)
# are the key and the low 14 bits' two bytes from a table, then the high 7
# bits as one byte: ~0.1 µs against ~0.5 µs for the varint loop. The table
# (16384 entries, ~0.7 MB) is built on first use, so imports stay light;
# ops read it directly and fall back to step_field() while it is empty.
_STEP3_LOW: list[bytes] = []
_STEP3_HIGH = [bytes((i,)) for i in range(128)]


def _build_step3_low() -> None:
    _STEP3_LOW[:] = [
        bytes((0x10, (i & 0x7F) | 0x80, ((i >> 7) & 0x7F) | 0x80)) for i in range(1 << 14)
    ]


def step_field(step: int) -> bytes:
    """The ``Event.step`` field for ``step`` (empty for 0, as proto3 does)."""
    if 0 <= step < 16384:
        return _STEP_FIELDS[step]
    if 16384 <= step < 2097152:
        if not _STEP3_LOW:
            _build_step3_low()
        return _STEP3_LOW[step & 0x3FFF] + _STEP3_HIGH[step >> 14]
    return _STEP_KEY + varint(step)


# The functions below join their parts once: the payloads (encoded tensors,
# kilobytes for images and PR curves) are copied once, not once per field.
def event_bytes(wall_time: float, step: int, what: bytes) -> bytes:
    """An Event: wall_time, step, then ``what`` (an already encoded field)."""
    return b"".join((_WALL_TIME_KEY, pack_double(wall_time), step_field(step), what))


def summary_event(wall_time: float, step: int, summary: bytes) -> bytes:
    """An Event whose ``summary`` field (5) holds the serialized ``summary``."""
    return b"".join(
        (
            _WALL_TIME_KEY,
            pack_double(wall_time),
            step_field(step),
            b"\x2a",
            varint(len(summary)),
            summary,
        )
    )


def value_bytes(tag: str, tensor: bytes, metadata: bytes | None = None) -> bytes:
    """A ``Summary.Value`` with a tag, a serialized tensor and optional metadata."""
    tag_b = tag.encode("utf-8")
    if metadata is None:
        return b"".join((b"\x0a", varint(len(tag_b)), tag_b, b"\x42", varint(len(tensor)), tensor))
    return b"".join(
        (
            b"\x0a",
            varint(len(tag_b)),
            tag_b,
            b"\x42",
            varint(len(tensor)),
            tensor,
            b"\x4a",
            varint(len(metadata)),
            metadata,
        )
    )


def summary_bytes(values: Iterable[bytes]) -> bytes:
    """A ``Summary`` holding the given serialized values."""
    return b"".join(field_bytes(1, v) for v in values)


def file_version_event(wall_time: float, writer_name: str) -> bytes:
    """The first event of every file: ``file_version`` and ``source_metadata``."""
    source_metadata = field_bytes(1, writer_name.encode("utf-8"))
    return (
        _WALL_TIME_KEY
        + pack_double(wall_time)
        + field_bytes(3, FILE_VERSION.encode("ascii"))
        + field_bytes(10, source_metadata)
    )
