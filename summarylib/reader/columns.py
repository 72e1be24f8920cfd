"""``read_columns``: a logdir's series as numpy columns, built in bulk.

Scalar events, which are nearly all of a training log, and events of one float tensor
(histograms, PR curves) after their tag's first are found and decoded in bulk
(:mod:`summarylib.reader.bulk`, :mod:`summarylib.reader.templates`); anything unusual goes
through protobuf. What counts as which kind, and which points survive a restart, follow
TensorBoard (see :func:`read_columns`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Collection, Iterator, Mapping
from typing import Any, Literal

import numpy as np

from summarylib.encoding._events import AFTER_WALL_TIME, STEP_KEY
from summarylib.encoding._plugins import AUDIO, HISTOGRAMS, IMAGES, SCALARS, TEXT
from summarylib.reader.bulk import phase_rows, scan_chunk
from summarylib.reader.runs import is_logdir, is_remote, list_runs
from summarylib.reader.templates import (
    TensorTemplate,
    decode_rows,
    decode_tensor_rows,
    scalar_template,
    tensor_record_matches,
    tensor_template,
)
from summarylib.reader.tensors import tensor_array, tensor_strings

__all__ = ["KINDS", "Columns", "Purge", "iter_columns", "read_columns"]

#: The kinds ``read_columns`` can return.
KINDS = ("scalars", "histograms", "images", "audio", "text", "tensors")
#: How points that a restart made obsolete are dropped (see :func:`read_columns`).
Purge = Literal["eventaccumulator", "preempt", "none"]

_CHUNK = 1 << 20
_TEMPLATE_ROUNDS = 4
# Tensor events set aside before they are decoded (bytes): hundreds of tags' events a
# decode, and the copies of the records a small part of what they decode to.
_PENDING_BYTES = 16 << 20
# plugin name -> kind: the plugins' names as the ops write them.
_PLUGIN_KIND = {
    SCALARS.name: "scalars",
    HISTOGRAMS.name: "histograms",
    IMAGES.name: "images",
    AUDIO.name: "audio",
    TEXT.name: "text",
}
_LEGACY_KIND = {
    "simple_value": "scalars",
    "histo": "histograms",
    "image": "images",
    "audio": "audio",
}
_SESSION_START = 1


class Columns(Mapping[str, Any]):
    """One series: ``step`` (int64), ``wall_time`` (float64) and ``value``, as attributes and keys.

    ``value`` depends on the kind: float32 ``[n]`` for scalars; float64 ``[n, k, 3]``
    (left edge, right edge, count) for histograms whose events all have ``k`` buckets, else a
    list of ``[k_i, 3]`` arrays; for images and audio a list (one entry per event) of lists of
    encoded PNG/WAV bytes; for text a list of ``str`` (a text tensor of one element, whatever
    its rank, is its string; larger ones are nested lists of ``str`` in their shape); for
    other tensors a list of arrays.
    """

    __slots__ = ("step", "value", "wall_time")

    def __init__(self, step: np.ndarray, wall_time: np.ndarray, value: Any) -> None:
        self.step = step
        self.wall_time = wall_time
        self.value = value

    def __getitem__(self, key: str) -> Any:
        if key in ("step", "wall_time", "value"):
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("step", "wall_time", "value"))

    def __len__(self) -> int:
        return 3

    def __repr__(self) -> str:
        return f"Columns(<{len(self.step)} points>)"


def read_columns(
    logdir_or_file: str | os.PathLike[str],
    kinds: Collection[str] = ("scalars",),
    tags: Collection[str] | None = None,
    runs: Collection[str] | None = None,
    *,
    purge: Purge = "eventaccumulator",
    check_crc: bool = True,
    follow_links: bool = True,
) -> dict[str, dict[str, Columns]]:
    """Return ``{run: {tag: Columns}}`` for the chosen kinds, tags and runs.

    Args:
      logdir_or_file: a logdir (every run under it, named as :func:`read_scalars` names
        them, ``"."`` for the logdir itself) or one event file (run ``"."``).
      kinds: any of :data:`KINDS`. A tag is of the kind its first metadata in the run names
        (plugin ``scalars``, ``histograms``, ``images``, ``audio``, ``text``; anything else
        with a tensor is ``tensors``); legacy ``simple_value``, ``histo``, ``image`` and
        ``audio`` values are scalars, histograms, images and audio. A scalar is a one-element
        DT_FLOAT tensor or a ``simple_value``, as TensorBoard's data server shows them; other
        dtypes under the scalars plugin are left out (read them with ``kinds=("tensors",)``
        or :func:`read_scalars`).
      tags, runs: only these (None: all).
      purge: ``"eventaccumulator"`` (default) drops what TensorBoard's ``EventAccumulator``
        drops: in files with a file version of 2 or more, a ``SessionLog.START`` at step ``s``
        drops every earlier point of the run with step >= ``s`` (but the run's first, the
        session's own start); in files without one, a
        summary event whose step is below the previous summary event's drops the earlier
        points of its own tags with step >= its step. ``"preempt"`` does what TensorBoard's
        data server does: a point drops every earlier point of its tag with a step >= its own
        (a repeated step keeps the last value). ``"none"`` keeps every point in file order.
      check_crc: check both checksums of every record (the default).
      follow_links: follow symbolic links to directories outside the logdir too (the
        default, as TensorBoard does); links inside it are always followed.

    Points are in file order within a run (files in name order).

    Raises:
      ValueError: an unknown kind or purge mode.
      DataLossError: a corrupt record (file and offset).
    """
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"read_columns: unknown kinds {unknown}; expected any of {KINDS}")
    if purge not in ("eventaccumulator", "preempt", "none"):
        raise ValueError(
            f"read_columns: 'purge' must be 'eventaccumulator', 'preempt' or 'none', got {purge!r}"
        )
    return dict(iter_columns(logdir_or_file, kinds, tags, runs, purge=purge,
                             check_crc=check_crc, follow_links=follow_links))


def iter_columns(
    logdir_or_file: str | os.PathLike[str],
    kinds: Collection[str] = ("scalars",),
    tags: Collection[str] | None = None,
    runs: Collection[str] | None = None,
    *,
    purge: Purge = "eventaccumulator",
    check_crc: bool = True,
    follow_links: bool = True,
) -> Iterator[tuple[str, dict[str, Columns]]]:
    """:func:`read_columns` one run at a time: ``(run, {tag: Columns})`` for each run with
    data, runs sorted by name (arguments checked by the caller)."""
    path = os.fspath(logdir_or_file)
    run_files = list_runs(path, follow_links=follow_links) if is_logdir(path) else {".": [path]}
    tag_set = None if tags is None else set(tags)
    for run, files in sorted(run_files.items()):
        if runs is not None and run not in runs:
            continue
        builder = _read_run(run, files, path, set(kinds), tag_set, purge, check_crc,
                            follow_links)
        series = builder.finish()
        if series:
            yield run, series


def _read_run(run: str, files: list[str], logdir: str, kinds: set[str],
              tags: set[str] | None, purge: Purge, check_crc: bool,
              follow_links: bool) -> _RunBuilder:
    """A builder that has read the run's files. On an object store, an object that a merge
    (``summarylib compact``) deleted since the listing sends the reading back to a fresh
    listing of the run, where the merged object holds its bytes."""
    attempts = 3
    while True:
        builder = _RunBuilder(kinds, tags, purge)
        try:
            for file in files:
                builder.read_file(file, check_crc)
            return builder
        except FileNotFoundError:
            attempts -= 1
            if not attempts or not is_remote(logdir) or not is_logdir(logdir):
                raise
            files = list_runs(logdir, follow_links=follow_links).get(run, [])


class _RunBuilder:
    """Collects one run's points in parts, with their record order, then assembles them."""

    def __init__(self, kinds: set[str], tags: set[str] | None, purge: Purge) -> None:
        self.kinds = kinds
        self.tags = tags
        self.purge = purge
        self.order_base = 0
        self.plugin_of: dict[str, str] = {}
        self.file_version: float | None = None
        # tag -> [(order, step, wall_time, values)] from bulk decoding; tensors wait for the
        # tag's plugin, simple values are scalars whatever it is.
        self.bulk_tensor: dict[str, list[tuple[np.ndarray, ...]]] = {}
        self.bulk_simple: dict[str, list[tuple[np.ndarray, ...]]] = {}
        # tag -> [(order, step, wall_time, value)] from protobuf, with the kind it had.
        self.single: dict[str, list[tuple[int, int, float, Any, str]]] = {}
        # (order, step, version at the time) of SessionLog.START events.
        self.starts: list[tuple[int, int, float | None]] = []
        # For files without a version: every event's (order, step, has summary, its tags).
        self.steps: list[tuple[np.ndarray, np.ndarray, tuple[str, ...] | None]] = []
        # tag -> [(order, step, wall_time, [m, *shape] values)] of float tensor events decoded
        # in bulk; their kind waits for the tag's plugin.
        self.bulk_content: dict[str, list[tuple[np.ndarray, ...]]] = {}
        self.content_templates: dict[tuple[int, bytes], TensorTemplate | None] = {}
        # (length, key) -> (template, records, orders) set aside until there are enough.
        self.pending_content: dict[tuple[int, bytes], tuple[TensorTemplate, bytearray,
                                                             list[int]]] = {}
        self.pending_bytes = 0
        # tag -> [(order, step, wall_time, Summary.Value)]: tensors read before any metadata
        # of their tag, decoded once the run is read.
        self.unnamed: dict[str, list[tuple[int, int, float, Any]]] = {}

    # -- reading -------------------------------------------------------------
    def read_file(self, file: str, check_crc: bool) -> None:
        from summarylib.reader.records import (
            BIG_RECORD,
            _open_regular,
            check_big_record,
            file_size,
        )

        with _open_regular(file) as f:
            size = file_size(f)
            self._peek_version(f.peek(_CHUNK)[:_CHUNK])
            carry = b""
            base = 0
            want = _CHUNK
            while True:
                data = f.read(want)
                buf = carry + data if carry else data
                if not buf:
                    break
                chunk = scan_chunk(buf, file, base, check_crc=check_crc)
                self._read_chunk(buf, chunk, file, base)
                self.order_base += chunk.count
                carry = buf[chunk.end :]
                base += chunk.end
                if not data:
                    break  # EOF: what is left is a torn last record (ignored, as TensorBoard)
                # A record longer than a chunk is read whole at once (not grown chunk by
                # chunk). One that the file cannot hold is a torn tail: never read. A long
                # one has its checksum streamed first, so that memory only ever holds bytes
                # known to be a record's (a sparse file's hole can claim gigabytes).
                want = _CHUNK
                if len(carry) >= 12:
                    scan_chunk(carry[:12], file, base, check_crc=True)  # its length's CRC
                    length = int.from_bytes(carry[:8], "little")
                    if base + 16 + length > size:
                        break
                    if length > BIG_RECORD and check_crc and not check_big_record(
                        f, file, base, length
                    ):
                        break
                    want = max(_CHUNK, 16 + length - len(carry))
        self._decode_pending()  # before the next file: its version decides how steps purge

    def _peek_version(self, head: bytes) -> None:
        # The file version decides how this file's events purge (EventAccumulator's rule);
        # it is the first event of a file, read before the bulk decoding notes any step.
        from google.protobuf.message import DecodeError

        from summarylib.proto import event_pb2

        if len(head) < 12:
            return
        length = int.from_bytes(head[:8], "little")
        if 12 + length > len(head):
            return
        try:
            event = event_pb2.Event.FromString(head[12 : 12 + length])
        except DecodeError:
            return
        if event.WhichOneof("what") == "file_version":
            self.file_version = _parse_version(event.file_version)

    def _read_chunk(self, buf: bytes, chunk: Any, file: str, base: int) -> None:
        singles: list[tuple[int, int, int]] = []  # (order, start, length)
        scalars_wanted = "scalars" in self.kinds
        tensors_wanted = not self.kinds.isdisjoint(("histograms", "tensors"))
        for phase in chunk.phases:
            starts, order = phase.starts, phase.order + self.order_base
            # Records of one length may be events of different tags (a short tag at a long
            # step): each round decodes those that match the first record left.
            # A first record that is no scalar event (the file version) goes one by one.
            for _ in range(_TEMPLATE_ROUNDS):
                if len(starts) < 2 or not phase.length:
                    break
                ref = buf[int(starts[0]) : int(starts[0]) + phase.length]
                template = scalar_template(ref)
                if template is None:
                    if tensors_wanted and self._content_template(ref) is not None:
                        break  # tensor events: grouped by tag below
                    singles.append((int(order[0]), int(starts[0]), phase.length))
                    starts, order = starts[1:], order[1:]
                    continue
                rows = phase_rows(buf, starts, phase.length)
                matched, step, wall, values = decode_rows(rows, template)
                self._add_bulk(template, order[matched], step, wall, values, scalars_wanted)
                if matched.all():
                    starts, order = starts[:0], order[:0]
                    break
                starts, order = starts[~matched], order[~matched]
            if tensors_wanted and len(starts) >= 2 and phase.length:
                starts, order = self._read_tensor_phase(buf, starts, order, phase.length)
            lengths = [phase.length] * len(starts)
            singles.extend(zip(order.tolist(), starts.tolist(), lengths, strict=True))
        singles.sort()
        for order, start, length in singles:
            self._read_event(buf[start : start + length], order, file, base + start - 12)

    def _content_template(self, record: bytes) -> TensorTemplate | None:
        # One template per (length, key): a tag's events after its first share it.
        key = (len(record), _tensor_key(record, 0))
        if key not in self.content_templates:
            self.content_templates[key] = tensor_template(record)
        return self.content_templates[key]

    def _read_tensor_phase(
        self, buf: bytes, starts: np.ndarray, order: np.ndarray, length: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Set aside the float tensor events among records of one ``length`` that match
        their tag's template, to be decoded in bulk (:meth:`_decode_pending`: a tag has
        one or two events a chunk, too few to decode each chunk's alone); returns the
        starts and orders of the records left for protobuf."""
        left = np.ones(len(starts), dtype=bool)
        templates, pending = self.content_templates, self.pending_content
        for i, (start, at) in enumerate(zip(starts.tolist(), order.tolist(), strict=True)):
            key = (length, _tensor_key(buf, start))
            record = buf[start : start + length]
            if key in templates:
                template = templates[key]
            else:
                template = templates[key] = tensor_template(record)
            if template is None or not tensor_record_matches(record, template):
                continue
            left[i] = False
            group = pending.get(key)
            if group is None:
                group = pending[key] = (template, bytearray(), [])
            group[1].extend(record)
            group[2].append(at)
            self.pending_bytes += length
        if self.pending_bytes > _PENDING_BYTES:
            self._decode_pending()
        return starts[left], order[left]

    def _decode_pending(self) -> None:
        """Decode the records set aside."""
        pending, self.pending_content, self.pending_bytes = self.pending_content, {}, 0
        for template, data, orders in pending.values():
            rows = np.frombuffer(data, dtype=np.uint8).reshape(len(orders), -1)
            step, wall, values = decode_tensor_rows(rows, template)
            picked = np.array(orders, dtype=np.int64)
            self._note_steps(picked, step, (template.tag,))
            if self.tags is None or template.tag in self.tags:
                self.bulk_content.setdefault(template.tag, []).append(
                    (picked, step, wall, values))

    def _add_bulk(
        self,
        template: Any,
        order: np.ndarray,
        step: np.ndarray,
        wall: np.ndarray,
        values: np.ndarray,
        scalars_wanted: bool,
    ) -> None:
        self._note_steps(order, step, tuple(t for t, _, _ in template.values))
        if not scalars_wanted:
            return
        # Record numbers only order the parts; int32 holds them in all but enormous runs,
        # and halves what they cost while the run is read.
        compact = order.astype(np.int32) if len(order) and order[-1] < 2**31 else order
        for j, (tag, _, is_tensor) in enumerate(template.values):
            if self.tags is not None and tag not in self.tags:
                continue
            target = self.bulk_tensor if is_tensor else self.bulk_simple
            target.setdefault(tag, []).append((compact, step, wall, values[:, j]))

    def _note_steps(
        self, order: np.ndarray, step: np.ndarray, tags: tuple[str, ...] | None
    ) -> None:
        if self.file_version is None or self.file_version < 2:
            self.steps.append((order, step, tags))

    def _read_event(self, payload: bytes, order: int, file: str, offset: int) -> None:
        from google.protobuf.message import DecodeError

        from summarylib.errors import DataLossError
        from summarylib.proto import event_pb2

        try:
            event = event_pb2.Event.FromString(payload)
        except DecodeError as e:
            raise DataLossError(file, offset, f"record is not an Event ({e})") from None
        what = event.WhichOneof("what")
        if what == "file_version":
            self.file_version = _parse_version(event.file_version)
        elif what == "session_log" and event.session_log.status == _SESSION_START:
            self.starts.append((order, event.step, self.file_version))
        summary_tags = tuple(v.tag for v in event.summary.value) if what == "summary" else None
        self._note_steps(np.array([order]), np.array([event.step]), summary_tags)
        if what != "summary":
            return
        for value in event.summary.value:
            tag = value.tag
            if tag not in self.plugin_of and value.HasField("metadata"):
                self.plugin_of[tag] = value.metadata.plugin_data.plugin_name
            if self.tags is not None and tag not in self.tags:
                continue
            if tag not in self.plugin_of and value.WhichOneof("value") == "tensor":
                # Its kind is that of the first metadata of the tag, which may come later.
                self.unnamed.setdefault(tag, []).append(
                    (order, event.step, event.wall_time, value))
                continue
            decoded = _decode_value(value, self.plugin_of.get(tag))
            if decoded is not None and decoded[0] in self.kinds:
                kind, data = decoded
                self.single.setdefault(tag, []).append(
                    (order, event.step, event.wall_time, data, kind)
                )

    # -- assembling ----------------------------------------------------------
    def finish(self) -> dict[str, Columns]:
        out: dict[str, Columns] = {}
        tags = (set(self.bulk_tensor) | set(self.bulk_simple) | set(self.single)
                | set(self.bulk_content) | set(self.unnamed))
        for tag in sorted(tags):
            plugin = self.plugin_of.get(tag)
            kind_of_tag = _PLUGIN_KIND.get(plugin or "", "tensors" if plugin else None)
            # Popped, so each tag's parts are freed once its columns are built.
            parts = self.bulk_simple.pop(tag, [])
            tensor_parts = self.bulk_tensor.pop(tag, [])
            if kind_of_tag == "scalars":
                parts += tensor_parts
            del tensor_parts
            singles = [s for s in self._singles(tag, plugin) if _single_kind(s, kind_of_tag)]
            blocks = [b for b in self._content_blocks(tag, self.bulk_content.pop(tag, ()))
                      if _single_kind(b, kind_of_tag)]
            if not parts and not singles and not blocks:
                continue
            if parts:
                kind = "scalars"
            else:  # the kind of the tag's first point, as when each is read alone
                first = min([*singles[:1], *blocks], key=lambda s: int(np.min(s[0])))
                kind = first[4]
            if kind == "scalars":
                cols = self._scalar_columns(tag, parts, [s for s in singles if s[4] == "scalars"])
            else:
                cols = self._other_columns(tag, kind, [s for s in singles if s[4] == kind],
                                           [b for b in blocks if b[4] == kind])
            if len(cols.step):
                out[tag] = cols
        return out

    def _scalar_columns(
        self, tag: str, parts: list[tuple[np.ndarray, ...]], singles: list[tuple[Any, ...]]
    ) -> Columns:
        if singles:
            parts.append(
                (
                    np.array([s[0] for s in singles], dtype=np.int64),
                    np.array([s[1] for s in singles], dtype=np.int64),
                    np.array([s[2] for s in singles], dtype=np.float64),
                    np.array([s[3] for s in singles], dtype=np.float32),
                )
            )
        # Each part is in file order already; parts usually follow each other too (chunks
        # are read in order), and then no sort and no order column is needed.
        in_order = all(a[0][-1] < b[0][0] for a, b in itertools.pairwise(parts))
        order = None
        if not in_order or self._may_purge(tag):
            order = np.concatenate([p[0] for p in parts])
        sort = None if order is None or in_order else np.argsort(order, kind="stable")
        columns = []
        for i in (1, 2, 3):
            # One column at a time, each part's piece released once copied: the peak stays
            # near the size of the result.
            pieces = [p[i] for p in parts]
            for k, p in enumerate(parts):
                parts[k] = (*p[:i], None, *p[i + 1 :])  # type: ignore[arg-type]
            col = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
            del pieces
            columns.append(col[sort] if sort is not None else col)
        step, wall, value = columns
        if order is not None:
            if sort is not None:
                order = order[sort]
            keep = self._survivors(tag, order, step)
            if keep is not None:
                step, wall, value = step[keep], wall[keep], value[keep]
        elif self.purge == "preempt":
            keep = _preempted(step)
            if keep is not None:
                step, wall, value = step[keep], wall[keep], value[keep]
        return Columns(
            step.astype(np.int64, copy=False), wall.astype(np.float64, copy=False), value
        )

    def _may_purge(self, tag: str) -> bool:
        # Whether the eventaccumulator rules can drop a point of `tag` (needs record order).
        if self.purge != "eventaccumulator":
            return False
        if self._restarts():
            return True
        return bool(self._out_of_order_purges(tag))

    def _singles(self, tag: str, plugin: str | None) -> list[tuple[Any, ...]]:
        # The tag's points read one by one, in order: those decoded as read, and the tensors
        # read before the tag's first metadata, decoded now that its plugin is known.
        singles = self.single.pop(tag, [])
        unnamed = self.unnamed.pop(tag, ())
        if not unnamed:
            return singles
        for order, step, wall, value in unnamed:
            decoded = _decode_value(value, plugin)
            if decoded is not None and decoded[0] in self.kinds:
                singles.append((order, step, wall, decoded[1], decoded[0]))
        singles.sort(key=lambda s: s[0])
        return singles

    def _content_blocks(
        self, tag: str, parts: Collection[tuple[np.ndarray, ...]]
    ) -> list[tuple[Any, ...]]:
        """The tag's tensor events decoded in bulk as ``(order, step, wall_time, values,
        kind)`` blocks (arrays of points) of the tag's kind, as they would be read one by
        one: points the kind cannot hold (a table that is no histogram) are left out."""
        kind = _PLUGIN_KIND.get(self.plugin_of.get(tag) or "", "tensors")
        if not parts or kind not in self.kinds:
            return []
        blocks = []
        for order, step, wall, values in parts:
            if kind == "histograms":
                if values.ndim != 3 or values.shape[2] != 3:
                    continue
                data = values.astype(np.float64)
            elif kind == "tensors":
                data = values
            else:  # scalars of two numbers or more, strings: nothing, as one by one
                continue
            blocks.append((order, step, wall, data, kind))
        return blocks

    def _other_columns(self, tag: str, kind: str, singles: list[tuple[Any, ...]],
                       blocks: list[tuple[Any, ...]]) -> Columns:
        order = np.array([s[0] for s in singles], dtype=np.int64)
        step = np.array([s[1] for s in singles], dtype=np.int64)
        wall = np.array([s[2] for s in singles], dtype=np.float64)
        values: list[Any] = [s[3] for s in singles]
        table: np.ndarray | None = None  # the histograms as one [n, k, 3] array
        if blocks:
            order = np.concatenate([order, *(b[0] for b in blocks)])
            step = np.concatenate([step, *(b[1] for b in blocks)])
            wall = np.concatenate([wall, *(b[2] for b in blocks)])
            sort = np.argsort(order, kind="stable")
            order, step, wall = order[sort], step[sort], wall[sort]
            shapes = {v.shape for v in values} | {b[3].shape[1:] for b in blocks}
            if kind == "histograms" and len(shapes) == 1:
                pieces = [np.stack(values)] if values else []
                table = np.concatenate(pieces + [b[3] for b in blocks])[sort]
            else:
                for b in blocks:
                    values.extend(b[3])
                values = [values[i] for i in sort.tolist()]
        keep = self._survivors(tag, order, step)
        if keep is not None:
            idx = np.flatnonzero(keep)
            step, wall = step[idx], wall[idx]
            if table is not None:
                table = table[idx]
            else:
                values = [values[i] for i in idx.tolist()]
        if table is not None:
            return Columns(step, wall, table)
        value: Any = values
        if kind == "histograms" and values and len({v.shape for v in values}) == 1:
            value = np.stack(values)
        return Columns(step, wall, value)

    def _survivors(self, tag: str, order: np.ndarray, step: np.ndarray) -> np.ndarray | None:
        """A mask of the points that survive the purge mode, or None for all."""
        if self.purge == "none" or not len(step):
            return None
        if self.purge == "preempt":
            return _preempted(step)
        keep = np.ones(len(step), dtype=bool)
        for start_order, start_step in self._restarts():
            keep &= ~((order < start_order) & (step >= start_step))
        for purge_order, purge_step in self._out_of_order_purges(tag):
            keep &= ~((order < purge_order) & (step >= purge_step))
        return None if keep.all() else keep

    def _restarts(self) -> list[tuple[int, int]]:
        # (order, step) of the SessionLog.START events that purge: those read under a file
        # version of 2 or more, but the first (EventAccumulator: the session's own start,
        # no restart).
        return [(o, s) for o, s, v in self.starts if v is not None and v >= 2][1:]

    def _out_of_order_purges(self, tag: str) -> list[tuple[int, int]]:
        # EventAccumulator (as TensorBoard's server runs it) without a file version: a summary
        # event whose step is below the previous summary event's purges, for its own tags,
        # the earlier points with step >= its step. Sequential, but only events of files
        # without a version are noted, and runs whose steps never go back skip the walk.
        cache = getattr(self, "_purges", None)
        if cache is None:
            cache = self._purges = self._walk_purges()
        return cache.get(tag, [])

    def _walk_purges(self) -> dict[str, list[tuple[int, int]]]:
        if not self.steps:
            return {}
        order = np.concatenate([o for o, _, _ in self.steps])
        step = np.concatenate([s for _, s, _ in self.steps])
        sort = np.argsort(order, kind="stable")
        if not (np.diff(step[sort]) < 0).any():
            return {}
        tags_of = np.empty(len(order), dtype=object)
        i = 0
        for o, _, t in self.steps:
            tags_of[i : i + len(o)] = [t] * len(o)
            i += len(o)
        purges: dict[str, list[tuple[int, int]]] = {}
        recent = -1
        ordered = zip(
            order[sort].tolist(), step[sort].tolist(), tags_of[sort].tolist(), strict=True
        )
        for o, s, t in ordered:
            if t is None:
                continue  # only summary events purge, and only they set the recent step
            if s < recent:
                for tag in t:
                    purges.setdefault(tag, []).append((o, s))
            recent = s
        return purges


def _tensor_key(buf: bytes, start: int) -> bytes:
    """The bytes of the record at ``start`` from after its step to the end of its first
    value's tag: the summary's and the value's lengths and the tag. Records of one length
    are grouped by them, one template a group; a record that differs from its group's
    template anywhere else fails the template's byte-for-byte check and is read with
    protobuf, so this only has to be cheap, not exact."""
    try:
        pos = start + AFTER_WALL_TIME
        if buf[pos] == STEP_KEY:
            pos += 1
            while buf[pos] & 0x80:
                pos += 1
            pos += 1
        begin = pos
        for _ in range(2):  # the summary's key and length, then the value's
            pos += 1
            while buf[pos] & 0x80:
                pos += 1
            pos += 1
        if buf[pos] != 0x0A:  # Value.tag
            return buf[begin:pos]
        n = buf[pos + 1]
        if n & 0x80:
            n = (n & 0x7F) | (buf[pos + 2] << 7)
            pos += 1
        return buf[begin : pos + 2 + n]
    except IndexError:  # a record cut short: read with protobuf, which says what is wrong
        return b""


def _preempted(step: np.ndarray) -> np.ndarray | None:
    """The data server's rule: a point survives when every later point has a greater step."""
    if len(step) < 2:
        return None
    later_min = np.minimum.accumulate(step[::-1])[::-1]
    keep = np.ones(len(step), dtype=bool)
    keep[:-1] = step[:-1] < later_min[1:]
    return None if keep.all() else keep


def _single_kind(single: tuple[Any, ...], kind_of_tag: str | None) -> bool:
    kind = single[4]
    return kind_of_tag is None or kind == kind_of_tag or kind != "tensors"


def _parse_version(text: str) -> float | None:
    try:
        return float(text.rsplit("brain.Event:", 1)[-1])
    except ValueError:
        return -1.0


def _decode_value(value: Any, plugin: str | None) -> tuple[str, Any] | None:
    """``(kind, data)`` for one Summary.Value, following TensorBoard's data_compat rules."""
    which = value.WhichOneof("value")
    if which in _LEGACY_KIND:
        kind = _LEGACY_KIND[which]
        if which == "simple_value":
            return kind, float(value.simple_value)
        if which == "histo":
            return kind, _legacy_histogram(value.histo)
        if which == "image":
            return kind, [bytes(value.image.encoded_image_string)]
        return kind, [bytes(value.audio.encoded_audio_string)]
    if which != "tensor":
        return None
    kind = _PLUGIN_KIND.get(plugin or "", "tensors")
    tensor = value.tensor
    if kind == "scalars":
        arr = tensor_array(tensor)
        if tensor.dtype != 1 or arr is None or arr.size != 1:
            return None
        return kind, float(arr.reshape(()))
    if kind == "histograms":
        arr = tensor_array(tensor)
        if arr is None or arr.ndim != 2 or (arr.size and arr.shape[1] != 3):
            return None
        return kind, arr.astype(np.float64)
    if kind in ("images", "audio"):
        strings = tensor_strings(tensor)
        if strings is None:
            return None
        if kind == "images":  # [w, h, png, png, ...]
            return kind, list(strings[2:]) if isinstance(strings, list) else None
        return kind, [row[0] if isinstance(row, list) else row for row in strings]  # [k, 2]
    if kind == "text":
        strings = tensor_strings(tensor)
        return None if strings is None else (kind, _text(strings))
    arr = tensor_array(tensor)
    if arr is None:
        strings = tensor_strings(tensor)
        return None if strings is None else (kind, strings)
    return kind, arr


def _text(strings: Any) -> Any:
    # A text tensor of one element (torch writes shape [1]) is its string, as tbparse reads
    # it; larger ones keep their shape as nested lists.
    while isinstance(strings, list) and len(strings) == 1:
        strings = strings[0]
    return _decoded(strings)


def _decoded(strings: Any) -> Any:
    if isinstance(strings, list):
        return [_decoded(s) for s in strings]
    return strings.decode("utf-8", "replace")


def _legacy_histogram(histo: Any) -> np.ndarray:
    # TensorBoard's data_compat: empty buckets at both ends are dropped, then the inner
    # limits are the edges, `min` the first left edge and `max` the last right edge.
    counts = list(histo.bucket)
    nonzero = [i for i, c in enumerate(counts) if c > 0]
    if not nonzero:
        return np.zeros((0, 3))
    start, end = nonzero[0], nonzero[-1]
    inner = list(histo.bucket_limit[start:end])
    lefts = [histo.min, *inner]
    rights = [*inner, histo.max]
    table = np.array([lefts, rights, counts[start : end + 1]], dtype=np.float32)
    out: np.ndarray = table.T.astype(np.float64)
    return out
