"""The compact record of a :func:`~summarylib.scalars` event, and the Event it stands for.

On the fast path the caller packs only a record: the marker of its format, the time, the
step and one float32 per tag (``_RECORD_FIELDS``); the writer thread turns records into
Events, one at a time (:meth:`Layout.expand`) or a run of them at once
(:meth:`Layout.frame_run`, framed TFRecords, through
:class:`~summarylib.encoding._template_framing.TemplateFramer`). Both give the bytes that
the op's checked path writes: the wall-time field, the step field, the ``Event.summary``
key and length (fixed: every value is 4 bytes), then per ``Value`` its cached head (key,
length, tag, tensor header) and the value's 4 bytes, copied from the record.

Both the record's offsets and the Event's are derived from one definition each: the
record's from ``_RECORD_FIELDS``, the Event's from :meth:`Layout._pieces`, which lists its
constant bytes and the widths of what each record fills in.
"""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import Any

from summarylib.encoding._compact import MARKER_FORMAT
from summarylib.encoding._events import (
    STEP_KEY,
    SUMMARY_KEY,
    WALL_TIME_KEY,
    step_field,
    step_varint_bytes,
    step_varint_lengths,
)
from summarylib.encoding._template_framing import TemplateFramer, numpy_if_loaded
from summarylib.encoding._tfrecord import frame_many
from summarylib.encoding._wire import varint

__all__ = ["Layout"]

# The record: the format's marker, the Event's wall time (a double, whose 8 bytes are the
# Event's own), its step (int64), then one float32 per value.
_RECORD_FIELDS = (MARKER_FORMAT, "d", "q")
_TIME_AT = struct.calcsize("<" + MARKER_FORMAT)
_STEP_AT = struct.calcsize("<" + "".join(_RECORD_FIELDS[:2]))
_VALUES_AT = struct.calcsize("<" + "".join(_RECORD_FIELDS))
# Runs shorter than this are expanded one record at a time (numpy's per-call cost).
_MIN_VECTOR_RUN = 8
#: Events longer than this (about 500 tags) are not framed in runs: a run of hundreds
#: of them would be megabytes held twice over, where one at a time the writer frames
#: them in its bounded blocks.
MAX_RUN_EVENT_BYTES = 16384

# A piece of an Event's bytes: constant bytes, or the width of bytes a record fills in.
_Piece = bytes | int


class Layout:
    """The record format of one set of tags in one file.

    ``heads[i]`` is the i-th Value's bytes before its 4 value bytes. Valid only
    in a file where every tag has its metadata, so layouts live in the writer's
    per-file state (the writer's tag ledger), which is replaced with the metadata.
    """

    __slots__ = (
        "_framers",
        "_parts",
        "event_size",
        "marker",
        "pack",
        "template",
        "types",
        "unpack",
    )

    def __init__(self, heads: list[bytes]) -> None:
        n = len(heads)
        self.marker = b""  # set once the writer has registered the format
        self.pack = struct.Struct("<" + "".join(_RECORD_FIELDS) + "f" * n).pack
        # The record's time as its 8 bytes (the Event's own double), the step, and
        # each value's 4 bytes.
        self.unpack = struct.Struct(f"<{_TIME_AT}x8sq{'4s' * n}").unpack
        summary_head = bytes((SUMMARY_KEY,)) + varint(sum(len(h) + 4 for h in heads))
        # The constant bytes before each value.
        self._parts = [summary_head + heads[0], *heads[1:]]
        # The Event with %s for the time, the step field and the values ("%" escaped).
        self.template = b"".join(
            b"%s" if isinstance(p, int) else p.replace(b"%", b"%%") for p in self._pieces(None)
        )
        #: The Event's length without its step field.
        self.event_size = sum(p if isinstance(p, int) else len(p) for p in self._pieces(0))
        # The last tuple of value types found packable as they are (the op checks and
        # sets it; set only after the check passed, so a race only repeats it).
        self.types: tuple[type, ...] = (float,) * n
        # Step-field length -> the framer of Events with a step field that long.
        self._framers: dict[int, TemplateFramer] = {}

    def _pieces(self, step_len: int | None) -> list[_Piece]:
        # The Event: the wall-time key and the time's 8 bytes; the step field (its key
        # and a varint of `step_len` bytes, nothing for 0; None: the whole field, of any
        # length, as one piece); the summary head and the first Value's head; then each
        # value's 4 bytes and the next Value's head.
        pieces: list[_Piece] = [bytes((WALL_TIME_KEY,)), 8]
        if step_len is None:
            pieces.append(1)  # a stand-in: expand() puts the whole field there
        elif step_len:
            pieces += [bytes((STEP_KEY,)), step_len]
        for part in self._parts:
            pieces += [part, 4]
        return pieces

    def expand(self, record: bytes) -> bytes:
        """The Event ``record`` stands for."""
        fields = self.unpack(record)
        return self.template % (fields[0], step_field(fields[1]), *fields[2:])

    def run_framer(self) -> Any:
        """:meth:`frame_run`, or None for layouts whose Events are too long to frame in runs."""
        return self.frame_run if self.event_size <= MAX_RUN_EVENT_BYTES else None

    def frame_run(self, records: list[bytes]) -> bytes:
        """The TFRecords of ``records`` (of this layout), in order, framed.

        Equal to ``frame_many(map(self.expand, records))``; with numpy already
        imported, runs of records whose step fields have one length are made in
        a few numpy calls.
        """
        np = numpy_if_loaded()
        if np is None or len(records) < _MIN_VECTOR_RUN:
            return frame_many([self.expand(r) for r in records])
        raw = np.frombuffer(b"".join(records), dtype=np.uint8).reshape(len(records), -1)
        # The steps as uint64: their two's complement, as varints encode them.
        steps = raw[:, _STEP_AT:_VALUES_AT].copy().view("<u8")[:, 0]
        lengths = step_varint_lengths(steps)
        if lengths[0] == lengths[-1] and (lengths == lengths[0]).all():
            cuts = [0, len(records)]
        else:
            cuts = [0, *(np.flatnonzero(np.diff(lengths)) + 1).tolist(), len(records)]
        blocks = []
        for start, end in pairwise(cuts):
            if end - start < _MIN_VECTOR_RUN:
                blocks.append(frame_many([self.expand(r) for r in records[start:end]]))
                continue
            k = int(lengths[start])
            framer = self._framers.get(k) or self._framer(k)
            rows = raw[start:end]
            # The columns in the order of the pieces the framer was made of.
            columns = [rows[:, _TIME_AT:_STEP_AT]]
            if k:
                columns.append(step_varint_bytes(steps[start:end], k))
            columns.append(rows[:, _VALUES_AT:])
            blocks.append(framer.frame(np.concatenate(columns, axis=1)))
        return b"".join(blocks)

    def _framer(self, k: int) -> TemplateFramer:
        # Events whose step field has a varint of k bytes (none for k == 0): the template
        # is the pieces with zeros for what records fill in, at the positions of those.
        template = bytearray()
        positions: list[int] = []
        for piece in self._pieces(k):
            if isinstance(piece, int):
                positions += range(len(template), len(template) + piece)
                template += bytes(piece)
            else:
                template += piece
        framer = self._framers[k] = TemplateFramer(bytes(template), positions)
        return framer
