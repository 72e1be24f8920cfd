"""Compose ``Event``, ``Summary`` and ``Summary.Value`` wire bytes by hand.

This module owns the Event layout: the field keys below, the step field and its
tables, and the ``struct`` packers of a whole scalar Event are defined here once,
and the ops' fast paths, the compact scalar records and the bulk reader all take
them from here.

Fields are emitted in field-number order, which is what protobuf's serializer
does, so the bytes equal ``Event(...).SerializeToString()``; tests check this.
Defaults are skipped as proto3 does (a step of 0 is not written).

Event:   1 wall_time (double), 2 step (int64), 3 file_version, 4 graph_def,
         5 summary, 8 tagged_run_metadata, 10 source_metadata
Summary: 1 value (repeated Value)
Value:   1 tag, 2 simple_value (float), 4 image (Summary.Image), 5 histo,
         6 audio (Summary.Audio), 8 tensor (TensorProto), 9 metadata (SummaryMetadata)

TensorFlow 2's ops write ``tensor`` values; torch's ``SummaryWriter`` writes the legacy
``simple_value``, ``image`` and ``audio`` fields, composed here too.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterable
from typing import Any

from summarylib.encoding._wire import field_bytes, field_varint, key, pack_double, varint

__all__ = [
    "AFTER_WALL_TIME",
    "AUDIO_KEY",
    "EVENT_PACKS",
    "FILE_VERSION",
    "IMAGE_KEY",
    "MAX_EVENT_BYTES",
    "METADATA_KEY",
    "SCALAR_TENSOR_HEAD",
    "SIMPLE_VALUE_KEY",
    "STEP3_LOW",
    "STEP_FIELDS",
    "STEP_KEY",
    "SUMMARY_KEY",
    "TAG_KEY",
    "TENSOR_KEY",
    "VALUE_KEY",
    "WALL_TIME_AT",
    "WALL_TIME_KEY",
    "audio_proto_bytes",
    "event_bytes",
    "event_packs",
    "file_version_event",
    "image_proto_bytes",
    "simple_value_prefix",
    "step_field",
    "step_varint_bytes",
    "step_varint_lengths",
    "summary_bytes",
    "summary_event",
    "value_bytes",
]

FILE_VERSION = "brain.Event:2"
#: The largest serialized Event that readers can parse: protobuf refuses messages of
#: 2 GiB or more (its sizes are signed 32-bit), so TensorBoard, TensorFlow and
#: summarylib's reader would stop at a larger record. Ops refuse to write one.
MAX_EVENT_BYTES = 2**31 - 1

# Field keys, (field number << 3) | wire type; each is one byte.
WALL_TIME_KEY = (1 << 3) | 1  # Event.wall_time, fixed64: 0x09
STEP_KEY = (2 << 3) | 0  # Event.step, varint: 0x10
SUMMARY_KEY = (5 << 3) | 2  # Event.summary, length-delimited: 0x2a
VALUE_KEY = (1 << 3) | 2  # Summary.value, length-delimited: 0x0a
TAG_KEY = (1 << 3) | 2  # Summary.Value.tag: 0x0a
SIMPLE_VALUE_KEY = (2 << 3) | 5  # Summary.Value.simple_value, fixed32: 0x15
IMAGE_KEY = (4 << 3) | 2  # Summary.Value.image: 0x22
AUDIO_KEY = (6 << 3) | 2  # Summary.Value.audio: 0x32
TENSOR_KEY = (8 << 3) | 2  # Summary.Value.tensor: 0x42
METADATA_KEY = (9 << 3) | 2  # Summary.Value.metadata: 0x4a

#: Where the wall time's 8 bytes stand in every Event written here (first, after its key),
#: and where the field after it begins.
WALL_TIME_AT = 1
AFTER_WALL_TIME = WALL_TIME_AT + 8

_WALL_TIME = bytes((WALL_TIME_KEY,))
_STEP = bytes((STEP_KEY,))
_SUMMARY = bytes((SUMMARY_KEY,))
_TAG = bytes((TAG_KEY,))
_TENSOR = bytes((TENSOR_KEY,))
_METADATA = bytes((METADATA_KEY,))

# A rank-0 TensorProto whose tensor_content holds 4 bytes: dtype (1) DT_FLOAT (1),
# an empty tensor_shape (2), then tensor_content's (4) key and length.
_FLOAT_SCALAR_HEAD = field_varint(1, 1) + field_bytes(2, b"") + key(4, 2) + varint(4)
#: ``Summary.Value.tensor`` of a float32 scalar, key and length included, up to its 4
#: value bytes, which follow: every scalar value ends with these 8 bytes and the 4.
SCALAR_TENSOR_HEAD = _TENSOR + varint(len(_FLOAT_SCALAR_HEAD) + 4) + _FLOAT_SCALAR_HEAD

#: The step field of steps below 2**14 (one- and two-byte varints), by step: nearly
#: every training step falls here and this saves a varint loop per event.
STEP_FIELDS = (
    [b""]
    + [bytes((STEP_KEY, i)) for i in range(1, 128)]
    + [bytes((STEP_KEY, (i & 0x7F) | 0x80, i >> 7)) for i in range(128, 1 << 14)]
)


#: Steps from 2**14 to 2**21 (three-byte varints: up to about two million): their
#: field is ``STEP3_LOW[step & 0x3FFF]`` (the key and the low 14 bits' two bytes)
#: and then the high 7 bits as one byte: ~0.1 µs against ~0.5 µs for the varint
#: loop. The table (16384 entries, ~0.7 MB) is built on first use, so imports stay
#: light; ops read it directly and fall back to step_field() while it is empty.
STEP3_LOW: list[bytes] = []
_STEP3_HIGH = [bytes((i,)) for i in range(128)]


def _build_step3_low() -> None:
    STEP3_LOW[:] = [
        bytes((STEP_KEY, (i & 0x7F) | 0x80, ((i >> 7) & 0x7F) | 0x80)) for i in range(1 << 14)
    ]


def step_field(step: int) -> bytes:
    """The ``Event.step`` field for ``step`` (empty for 0, as proto3 does)."""
    if 0 <= step < 16384:
        return STEP_FIELDS[step]
    if 16384 <= step < 2097152:
        if not STEP3_LOW:
            _build_step3_low()
        return STEP3_LOW[step & 0x3FFF] + _STEP3_HIGH[step >> 14]
    return _STEP + varint(step)


# The step values from which a varint takes 1..10 bytes, and the shifts of its 7-bit
# groups, as numpy arrays: made on first use (by a caller that has numpy loaded).
_VARINT_THRESHOLDS: Any = None
_VARINT_SHIFTS: Any = None


def step_varint_lengths(steps: Any) -> Any:
    """The length of each step's varint (0 for step 0: the field is left out).

    ``steps``: a numpy ``uint64`` array (int64 steps as their two's complement, as
    varints encode them). numpy must be imported by the caller.
    """
    global _VARINT_THRESHOLDS, _VARINT_SHIFTS
    np = sys.modules["numpy"]
    if _VARINT_THRESHOLDS is None:
        _VARINT_THRESHOLDS = np.array([1] + [1 << (7 * j) for j in range(1, 10)], dtype=np.uint64)
        _VARINT_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)
    return np.searchsorted(_VARINT_THRESHOLDS, steps, side="right")


def step_varint_bytes(steps: Any, k: int) -> Any:
    """The varints of ``steps`` whose varints are all ``k`` bytes long, as (m, k) uint8.

    The bytes after the step field's key; see :func:`step_varint_lengths`.
    """
    np = sys.modules["numpy"]
    step_varint_lengths(steps[:0])  # makes the tables
    groups = (steps[:, None] >> _VARINT_SHIFTS[:k]) & np.uint64(0x7F)
    groups[:, :-1] |= np.uint64(0x80)  # every byte but the last continues
    return groups.astype(np.uint8)


#: len(prefix) -> the ``struct`` packers of a whole scalar Event whose bytes after the
#: step field are ``prefix`` and a float32 (see :func:`event_packs`).
EVENT_PACKS: dict[int, list[Callable[..., bytes]]] = {}
# Bounded: prefix lengths are few, and past the bound entries are only rebuilt.
_MAX_EVENT_PACKS = 256


def event_packs(prefix_len: int) -> list[Callable[..., bytes]]:
    """The packers of Events ``wall_time, step, prefix, float32`` for one prefix length.

    ``packs[k](WALL_TIME_KEY, time, step_field, prefix, value)`` for a step field of
    ``k`` bytes (0 to 11); ``packs[-1](WALL_TIME_KEY, time, STEP3_LOW[step & 0x3FFF],
    step >> 14, prefix, value)`` for a three-byte step. Cached in :data:`EVENT_PACKS`.
    """
    packs = [struct.Struct(f"<Bd{k}s{prefix_len}sf").pack for k in range(12)]
    packs.append(struct.Struct(f"<Bd3sB{prefix_len}sf").pack)
    if len(EVENT_PACKS) >= _MAX_EVENT_PACKS:
        EVENT_PACKS.clear()
    EVENT_PACKS[prefix_len] = packs
    return packs


# The functions below join their parts once: the payloads (encoded tensors,
# kilobytes for images and PR curves) are copied once, not once per field.
def event_bytes(wall_time: float, step: int, what: bytes) -> bytes:
    """An Event: wall_time, step, then ``what`` (an already encoded field)."""
    return b"".join((_WALL_TIME, pack_double(wall_time), step_field(step), what))


def summary_event(wall_time: float, step: int, summary: bytes) -> bytes:
    """An Event whose ``summary`` field (5) holds the serialized ``summary``."""
    return b"".join(
        (
            _WALL_TIME,
            pack_double(wall_time),
            step_field(step),
            _SUMMARY,
            varint(len(summary)),
            summary,
        )
    )


def value_bytes(
    tag: str, tensor: bytes, metadata: bytes | None = None, field: bytes = _TENSOR
) -> bytes:
    """A ``Summary.Value`` with a tag, a serialized tensor and optional metadata.

    ``field`` is the key of the value's field: ``tensor`` by default, or the legacy
    ``image``/``audio`` (``bytes((IMAGE_KEY,))``...) holding a serialized
    ``Summary.Image``/``Summary.Audio`` (:func:`image_proto_bytes`).
    """
    tag_b = tag.encode("utf-8")
    if metadata is None:
        return b"".join((_TAG, varint(len(tag_b)), tag_b, field, varint(len(tensor)), tensor))
    return b"".join(
        (
            _TAG,
            varint(len(tag_b)),
            tag_b,
            field,
            varint(len(tensor)),
            tensor,
            _METADATA,
            varint(len(metadata)),
            metadata,
        )
    )


def simple_value_prefix(tag_field: bytes) -> bytes:
    """The bytes every ``simple_value`` scalar Event of a tag shares after its step.

    ``Event.summary`` key and length, ``Value`` key and length, the tag field, the
    ``simple_value`` key; only the 4 float32 bytes of the value follow. The layout of
    the tensor scalar's prefix, so the same packers make both Events.
    """
    value_len = len(tag_field) + 1 + 4
    value_head = bytes((VALUE_KEY,)) + varint(value_len)
    return (_SUMMARY + varint(len(value_head) + value_len) + value_head + tag_field
            + bytes((SIMPLE_VALUE_KEY,)))


def image_proto_bytes(height: int, width: int, colorspace: int, encoded: bytes) -> bytes:
    """A serialized ``Summary.Image``: 1 height, 2 width, 3 colorspace (channels), 4 the
    encoded image (PNG, or GIF for torch's videos); zeros left out as proto3 does."""
    return b"".join((
        field_varint(1, height) if height else b"",
        field_varint(2, width) if width else b"",
        field_varint(3, colorspace) if colorspace else b"",
        field_bytes(4, encoded) if encoded else b"",
    ))


def audio_proto_bytes(sample_rate: float, channels: int, frames: int, encoded: bytes,
                      content_type: str = "audio/wav") -> bytes:
    """A serialized ``Summary.Audio``: 1 sample_rate (float), 2 num_channels,
    3 length_frames, 4 the encoded clip, 5 content_type; zeros left out."""
    return b"".join((
        key(1, 5) + struct.pack("<f", sample_rate) if sample_rate else b"",
        field_varint(2, channels) if channels else b"",
        field_varint(3, frames) if frames else b"",
        field_bytes(4, encoded) if encoded else b"",
        field_bytes(5, content_type.encode()) if content_type else b"",
    ))


def summary_bytes(values: Iterable[bytes]) -> bytes:
    """A ``Summary`` holding the given serialized values."""
    return b"".join(field_bytes(1, v) for v in values)


def file_version_event(wall_time: float, writer_name: str) -> bytes:
    """The first event of every file: ``file_version`` and ``source_metadata``."""
    source_metadata = field_bytes(1, writer_name.encode("utf-8"))
    return (
        _WALL_TIME
        + pack_double(wall_time)
        + field_bytes(3, FILE_VERSION.encode("ascii"))
        + field_bytes(10, source_metadata)
    )
