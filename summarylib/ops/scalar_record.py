"""The compact record of a :func:`~summarylib.scalars` event, and the Event it stands for.

On the fast path the caller packs only ``marker + time + step + values``
(``<4sdq`` then one float32 per tag); the writer thread turns records into
Events, one at a time (:meth:`Layout.expand`) or a run of them at once
(:meth:`Layout.frame_run`, framed TFRecords, through
:class:`~summarylib.writer.template_framing.TemplateFramer`). Both give the
bytes that the op's checked path writes: the wall-time field, the step field,
the ``Event.summary`` key and length (fixed: every value is 4 bytes), then per
``Value`` its cached head (key, length, tag, tensor header) and the value's 4
bytes, copied from the record.
"""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import Any

from summarylib.encoding.events import _STEP_FIELDS, step_field
from summarylib.encoding.wire import varint
from summarylib.writer.records import frame_many
from summarylib.writer.template_framing import TemplateFramer, numpy_if_loaded

__all__ = ["Layout"]

# Marker (4), time (8), step (8), then 4 bytes per value.
_VALUES_AT = 20
# Runs shorter than this are expanded one record at a time (numpy's per-call cost).
_MIN_VECTOR_RUN = 8


def _varint_tables() -> None:
    # Made on first use (numpy is loaded by then): the step values from which a
    # varint takes 1..10 bytes, and the shifts of its 7-bit groups.
    global _VARINT_THRESHOLDS, _VARINT_SHIFTS
    np = numpy_if_loaded()
    _VARINT_THRESHOLDS = np.array([1] + [1 << (7 * j) for j in range(1, 10)], dtype=np.uint64)
    _VARINT_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)


_VARINT_THRESHOLDS: Any = None
_VARINT_SHIFTS: Any = None


class Layout:
    """The record format of one set of tags in one file.

    ``heads[i]`` is the i-th Value's bytes before its 4 value bytes. Valid only
    in a file where every tag has its metadata, so layouts live in the writer's
    per-file state (the writer's tag ledger), which is replaced with the metadata.
    """

    __slots__ = ("_framers", "_parts", "marker", "pack", "template", "types", "unpack")

    def __init__(self, heads: list[bytes]) -> None:
        n = len(heads)
        self.marker = b""  # set once the writer has registered the format
        self.pack = struct.Struct(f"<4sdq{n}f").pack
        # The record's time as its 8 bytes (the Event's own double), the step, and
        # each value's 4 bytes.
        self.unpack = struct.Struct(f"<4x8sq{'4s' * n}").unpack
        summary_head = b"\x2a" + varint(sum(len(h) + 4 for h in heads))
        # The constant bytes before each value.
        self._parts = [summary_head + heads[0], *heads[1:]]
        # The Event with %s for the time, the step field and the values ("%" escaped).
        self.template = b"\x09%s%s" + b"".join(
            part.replace(b"%", b"%%") + b"%s" for part in self._parts
        )
        # The last tuple of value types found packable as they are (the op checks and
        # sets it; set only after the check passed, so a race only repeats it).
        self.types: tuple[type, ...] = (float,) * n
        # Step-field length -> the framer of Events with a step field that long.
        self._framers: dict[int, TemplateFramer] = {}

    def expand(self, record: bytes) -> bytes:
        """The Event ``record`` stands for."""
        fields = self.unpack(record)
        step = fields[1]
        return self.template % (
            fields[0],
            _STEP_FIELDS[step] if 0 <= step < 16384 else step_field(step),
            *fields[2:],
        )

    def frame_run(self, records: list[bytes]) -> bytes:
        """The TFRecords of ``records`` (of this layout), in order, framed.

        Equal to ``frame_many(map(self.expand, records))``; with numpy already
        imported, runs of records whose step fields have one length are made in
        a few numpy calls.
        """
        np = numpy_if_loaded()
        if np is None or len(records) < _MIN_VECTOR_RUN:
            return frame_many([self.expand(r) for r in records])
        n = len(self._parts)
        if _VARINT_THRESHOLDS is None:
            _varint_tables()
        raw = np.frombuffer(b"".join(records), dtype=np.uint8).reshape(len(records), -1)
        steps = raw[:, 12:20].copy().view("<u8")[:, 0]  # two's complement, as varints are
        # Varint length of each step (0 for step 0: proto3 leaves the field out).
        lengths = np.searchsorted(_VARINT_THRESHOLDS, steps, side="right")
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
            columns = [rows[:, 4:12]]  # the time's 8 bytes
            if k:
                groups = (steps[start:end, None] >> _VARINT_SHIFTS[:k]) & np.uint64(0x7F)
                groups[:, :-1] |= np.uint64(0x80)  # every byte but the last continues
                columns.append(groups.astype(np.uint8))
            columns.append(rows[:, _VALUES_AT : _VALUES_AT + 4 * n])
            blocks.append(framer.frame(np.concatenate(columns, axis=1)))
        return b"".join(blocks)

    def _framer(self, k: int) -> TemplateFramer:
        # Events whose step field has a varint of k bytes (none for k == 0).
        step = b"\x10" + bytes(k) if k else b""
        template = self.template % (bytes(8), step, *([bytes(4)] * len(self._parts)))
        positions = list(range(1, 9))  # the time
        at = 9
        if k:
            positions += range(at + 1, at + 1 + k)  # after the field's key, 0x10
            at += 1 + k
        for part in self._parts:
            at += len(part)
            positions += range(at, at + 4)
            at += 4
        framer = self._framers[k] = TemplateFramer(template, positions)
        return framer

