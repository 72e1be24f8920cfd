"""Scalar summaries: one float per step, shown by TensorBoard's Scalars dashboard.

Data contract:
  * ``data`` is rank 0: a Python bool/int/float, a numpy scalar or 0-d array,
    or a 0-d framework tensor (read through ``__float__``/``item()``/
    ``__array__``; the framework is never imported).
  * It is stored as a rank-0 ``DT_FLOAT`` tensor in ``tensor_content`` (4
    little-endian bytes), the only scalar form TensorBoard's fast loader
    accepts. Values beyond float32's range become ±inf; NaN and ±inf are kept.
  * Plugin metadata (``plugin_name="scalars"``, empty content, ``data_class``
    unset, as TensorFlow writes it) goes on the first value of each tag in each
    file only: readers take the first and ignore the rest, and leaving it out
    saves 13 bytes per event.

Hot path: after the first event of a tag, the Event bytes are wall time,
step, a cached per-tag prefix and the 4 value bytes, made by one
``Struct.pack`` per event. A property test proves they equal the protobuf
encoding of ``scalar_pb``.
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from summarylib.encoding.arrays import f32_bytes, scalar_float
from summarylib.encoding.events import _STEP3_LOW, _STEP_FIELDS, step_field
from summarylib.encoding.wire import field_bytes, pack_double, pack_float, varint
from summarylib.ops._resolve import check_tag, resolve_step
from summarylib.writer.context import Step, _local, condition_holds

if TYPE_CHECKING:
    from summarylib.proto import summary_pb2
    from summarylib.writer.buffered import BufferedEventWriter

__all__ = ["PLUGIN_NAME", "create_summary_metadata", "scalar", "scalar_pb", "scalars"]

PLUGIN_NAME = "scalars"

# Value types that ``struct``'s ``f`` converts to float32 exactly as
# scalar_float() followed by f32_bytes() would (through float(), which is
# exact for them). Where those would not give 4 bytes unchanged, struct
# raises instead: OverflowError for finite values beyond float32 (stored as
# ±inf), struct.error for ints beyond float (scalar_float() raises). numpy's
# are added once numpy is loaded. Used by the fast paths of scalar() and
# scalars().
_fast_types: frozenset[type] = frozenset((float, int, bool))
_numpy_types_missing = True
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
# Summary.Value.tensor (field 8), 10 bytes long: dtype DT_FLOAT, an empty
# tensor_shape, then tensor_content of 4 bytes, which follow.
_TENSOR_FIELD = b"\x42\x0a\x08\x01\x12\x00\x22\x04"
_PLUGIN_DATA = field_bytes(1, field_bytes(1, PLUGIN_NAME.encode()))
_METADATA = _PLUGIN_DATA  # SummaryMetadata with no description
_time = time.time


def metadata_bytes(description: str | None = None) -> bytes:
    """Serialized ``SummaryMetadata`` for a scalar series."""
    if not description:
        return _METADATA
    if not isinstance(description, str):
        raise TypeError(
            f"scalar: 'description' must be a str, got {type(description).__name__}"
        )
    return _PLUGIN_DATA + field_bytes(3, description.encode("utf-8"))


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorBoard expects for scalars."""
    from summarylib.proto import summary_pb2

    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = PLUGIN_NAME
    if description:
        md.summary_description = description
    return md


def _encode_tag(tag: str, where: str) -> bytes:
    try:
        return tag.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: 'name' is not valid Unicode text: {e}") from None


def scalar(
    name: str,
    data: Any,
    step: Step | None = None,
    description: str | None = None,
) -> bool:
    """Write a scalar summary to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current
        :func:`~summarylib.name_scope`. A non-empty str.
      data: a real number of rank 0 (see the module docstring), or a
        zero-argument callable returning one, called only when recording.
      step: an int64 step; defaults to the thread's default step.
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if the summary was written, False if nothing is recording (no
      default writer, a no-op writer, or a false ``record_if``).

    Raises:
      TypeError, ValueError: bad ``name``, ``data`` or ``step`` (nothing written).
      ValueError: a writer is set but no step is known.
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    st = _local.state
    writer = st.writer
    if writer is None:
        return False
    cond = st.condition
    if cond is not True and not condition_holds(cond):
        return False
    if step is None:
        step = st.step
    if type(step) is not int or step < _INT64_MIN or step > _INT64_MAX:
        step = resolve_step(step, None, "scalar")
    if type(name) is not str or not name:
        name = check_tag(name, "scalar")
    if description is not None and type(description) is not str:
        metadata_bytes(description)  # raises TypeError naming the argument
    scope = st.scope
    tag = scope + name if scope else name
    t = type(data)
    if t is not float and t not in _fast_types:
        # Checked and converted here; the types in the set go to struct's
        # "f" as they are (see _fast_types).
        if _numpy_types_missing:
            _add_numpy_types()
        data = scalar_float(data, "scalar")
    res: BufferedEventWriter = writer._resource  # type: ignore[assignment]
    prefix = res.scalar_prefixes.get(tag)
    if prefix is None:
        return _write_first(res, tag, data, step, description)
    # The whole Event in one Struct.pack: the wall-time key (9) and time, the
    # step field, the cached prefix, the value as float32 (see _event_packs).
    packs = _EVENT_PACKS.get(len(prefix)) or _event_packs(len(prefix))
    try:
        if 0 <= step < 16384:
            sf = _STEP_FIELDS[step]
            event = packs[len(sf)](9, _time(), sf, prefix, data)
        elif 16384 <= step < 2097152:
            # A 3-byte step: key and low 14 bits from the table, then the
            # high 7 bits as a byte. IndexError while the table is unbuilt.
            event = packs[-1](9, _time(), _STEP3_LOW[step & 0x3FFF], step >> 14, prefix, data)
        else:
            sf = step_field(step)
            event = packs[len(sf)](9, _time(), sf, prefix, data)
    except (OverflowError, struct.error, IndexError):
        # Finite beyond float32 (stored as ±inf), an int beyond float
        # (scalar_float raises the usual ValueError), or the 3-byte step
        # table not built yet (step_field builds it).
        event = (
            b"\x09"
            + pack_double(_time())
            + step_field(step)
            + prefix
            + f32_bytes(scalar_float(data, "scalar"))
        )
    return res.append(event)  # False only after an exit hook closed the writer


# len(prefix) -> the Struct packers of scalar()'s events with that prefix
# length: [k] for a step field of k bytes (0 to 11), [-1] for a 3-byte step
# given as its first 3 bytes and its last byte. Fields: the wall-time key,
# the time (d), the step field, the prefix, the value (f). Bounded: prefix
# lengths are few, and past the bound entries are only rebuilt.
_EVENT_PACKS: dict[int, list[Callable[..., bytes]]] = {}
_MAX_EVENT_PACKS = 256


def _event_packs(prefix_len: int) -> list[Callable[..., bytes]]:
    packs = [struct.Struct(f"<Bd{k}s{prefix_len}sf").pack for k in range(12)]
    packs.append(struct.Struct(f"<Bd3sB{prefix_len}sf").pack)
    if len(_EVENT_PACKS) >= _MAX_EVENT_PACKS:
        _EVENT_PACKS.clear()
    _EVENT_PACKS[prefix_len] = packs
    return packs


def _write_first(
    res: BufferedEventWriter, tag: str, data: Any, step: int, description: str | None
) -> bool:
    # First value of `tag` in this file: with metadata. Also caches the
    # prefix that every later event of the tag shares.
    value = f32_bytes(scalar_float(data, "scalar"))
    tag_field = field_bytes(1, _encode_tag(tag, "scalar"))
    v = tag_field + _TENSOR_FIELD + value + field_bytes(9, metadata_bytes(description))
    summary = field_bytes(1, v)
    if not res.append(b"\x09" + pack_double(_time()) + step_field(step) + field_bytes(5, summary)):
        return False
    _remember(res, tag, tag_field)
    return True


def _remember(res: BufferedEventWriter, tag: str, tag_field: bytes) -> None:
    # Cache the bytes every later event of `tag` in this file starts with:
    # Event.summary key and length, Value key and length, the tag, the tensor
    # header. Only the 4 value bytes follow.
    value_len = len(tag_field) + len(_TENSOR_FIELD) + 4
    value_head = b"\x0a" + varint(value_len)
    res.scalar_prefixes[tag] = (
        b"\x2a" + varint(len(value_head) + value_len) + value_head + tag_field + _TENSOR_FIELD
    )
    res.tags_with_metadata.add(tag)


def scalars(
    values: Mapping[str, Any],
    step: Step | None = None,
    description: Mapping[str, str | None] | None = None,
) -> bool:
    """Write several scalars at one step as a single event.

    TensorBoard reads the result exactly like one :func:`scalar` call per
    entry (each key is a tag, inside the current name scope), at a fraction of
    the cost per metric.

    Args:
      values: tag name -> rank-0 real number (or a callable returning one).
      step: the step of every value; defaults to the thread's default step.
      description: optional mapping of name (a key of ``values``) -> Markdown
        str, or None. As for :func:`scalar`, it is stored with the first
        value of a tag in each file and ignored after that; names that are
        not in ``values`` are ignored.

    Returns:
      True if written; False if nothing is recording or ``values`` is empty
      (then nothing is written).

    Raises:
      TypeError, ValueError: a bad key, value, step or description; nothing
        is written.
    """
    st = _local.state
    writer = st.writer
    if writer is None:
        return False
    cond = st.condition
    if cond is not True and not condition_holds(cond):
        return False
    if type(values) is not dict and not isinstance(values, Mapping):
        raise TypeError(f"scalars: 'values' must be a mapping, got {type(values).__name__}")
    if step is None:
        step = st.step
    if type(step) is not int or step < _INT64_MIN or step > _INT64_MAX:
        step = resolve_step(step, None, "scalars")
    if description is not None:
        _check_descriptions(description)
    scope = st.scope
    res: BufferedEventWriter = writer._resource  # type: ignore[assignment]
    if type(values) is dict:
        event = _batch_event(values, scope, res.scalar_prefixes, step)
        if event is not None:
            return res.append(event)
    get = res.scalar_prefixes.get
    parts: list[bytes] = []
    append = parts.append
    firsts = []
    # The per-metric work is inlined (no helper calls on the common path):
    # at ~20 metrics per call, each saved call is a measurable share.
    for name, data in values.items():
        if type(name) is not str or not name:
            name = check_tag(name, "scalars", "values key")
        tag = scope + name if scope else name
        if type(data) is float:
            try:
                value = pack_float(data)
            except OverflowError:
                value = f32_bytes(data)
        else:
            value = f32_bytes(scalar_float(data, f"scalars: values[{name!r}]"))
        prefix = get(tag)
        if prefix is not None:
            # The cached prefix minus its Event.summary key and length is the
            # Value's own key, length, tag and tensor header. The length is
            # one byte unless the tag is longer than about 100 bytes.
            if prefix[1] < 0x80:
                append(prefix[2:] + value)
            else:
                append(prefix[_summary_header_len(prefix) :] + value)
        else:
            desc = description.get(name) if description else None
            tag_field = field_bytes(1, _encode_tag(tag, "scalars"))
            firsts.append((tag, tag_field))
            v = tag_field + _TENSOR_FIELD + value + field_bytes(9, metadata_bytes(desc))
            append(field_bytes(1, v))
    if not parts:
        return False  # empty mapping: nothing to write
    summary = b"".join(parts)
    if not res.append(b"\x09" + pack_double(_time()) + step_field(step) + field_bytes(5, summary)):
        return False
    for tag, tag_field in firsts:
        _remember(res, tag, tag_field)
    return True


def _check_descriptions(description: Any) -> None:
    # Up front, before any fast path: a description is only looked at for a
    # tag's first value in a file, and a bad one must not pass unnoticed
    # because its tag happens to be known already.
    if type(description) is not dict and not isinstance(description, Mapping):
        raise TypeError(
            "scalars: 'description' must be a mapping of name -> str, got "
            f"{type(description).__name__}"
        )
    for name, text in description.items():
        if not isinstance(name, str):
            raise TypeError(
                f"scalars: 'description' keys must be str, got {type(name).__name__} {name!r}"
            )
        if text is not None and not isinstance(text, str):
            raise TypeError(
                f"scalars: 'description'[{name!r}] must be a str, got {type(text).__name__}"
            )


class _Batch:
    """The Event layout of one set of tags, for :func:`scalars`' fast path.

    ``packs[k](*args)`` gives the whole Event for a step field of ``k`` bytes: the
    wall-time key and time (``B``, ``d``), the step field (``ks``), then the
    ``Event.summary`` field: its key and length (fixed: every value is 4 bytes), then
    per Value its cached bytes (key, length, tag, tensor header) as an ``Ns`` field and
    the value as ``f``. ``args`` holds those fields with ``args[1]`` (time), ``args[2]``
    (step field) and ``args[5::2]`` (the values) to fill in. ``tags`` are the scoped
    tags: the layout is only valid in a file where all of them have their metadata.
    """

    __slots__ = ("args", "body", "checked_for", "packs", "tags", "types")

    def __init__(self, value_heads: list[bytes], tags: frozenset[str]) -> None:
        size = sum(len(h) + 4 for h in value_heads)
        head = b"\x2a" + varint(size)
        self.body = f"{len(head)}s" + "".join(f"{len(h)}sf" for h in value_heads)
        self.packs: list[Callable[..., bytes] | None] = [None] * 12  # step fields: 0-11 B
        self.args: list[Any] = [9, 0.0, b"", head] + [None] * (2 * len(value_heads))
        self.args[4::2] = value_heads
        self.tags = tags
        # Memos of the last successful checks (each is set only after its check
        # passed, so a race between threads can only repeat a check):
        # the per-file tag dict known to hold every tag (it only ever grows),
        # and the tuple of value types known to be packable.
        self.checked_for: dict[str, bytes] | None = None
        self.types: tuple[type, ...] = ()

    def pack_for(self, k: int) -> Callable[..., bytes]:
        """The packer for a step field of ``k`` bytes (made on first use)."""
        pack = self.packs[k] = struct.Struct(f"<Bd{k}s" + self.body).pack
        return pack


# (scope, keys of the dict in order) -> _Batch. The layout depends only on the
# tags, not on the file, so it is shared by all writers; each call checks that
# the tags have their metadata in its own file. Bounded: a program that makes
# ever new key sets only rebuilds entries.
_batches: dict[tuple[str, tuple[str, ...]], _Batch] = {}
_MAX_BATCHES = 256


def _batch_event(values: dict[str, Any], scope: str, prefixes: dict[str, bytes],
                 step: int) -> bytes | None:
    """The whole Event for ``values`` at ``step`` if every tag is known in this file.

    None when a tag is new in this file (it needs metadata) and for values
    that need checking or conversion (callables, arrays, out-of-range
    numbers): the per-metric path then handles them, with its error messages.
    """
    key = (scope, tuple(values))
    batch = _batches.get(key)
    if batch is None:
        batch = _new_batch(key, prefixes)
        if batch is None:
            return None
    if batch.checked_for is not prefixes:
        if not prefixes.keys() >= batch.tags:
            return None
        batch.checked_for = prefixes
    vals = list(values.values())
    types = tuple(map(type, vals))
    if types != batch.types:
        if not _fast_types.issuperset(types):
            return None
        batch.types = types
    sf = _STEP_FIELDS[step] if 0 <= step < 16384 else step_field(step)
    pack = batch.packs[len(sf)] or batch.pack_for(len(sf))
    args = batch.args.copy()
    args[1] = _time()
    args[2] = sf
    args[5::2] = vals
    try:
        return pack(*args)
    except (OverflowError, struct.error):
        # Finite beyond float32 (f32_bytes makes it ±inf), or an int beyond
        # float (scalar_float raises a clear error): the checked path decides.
        return None


def _add_numpy_types() -> None:
    global _fast_types, _numpy_types_missing
    np = sys.modules.get("numpy")
    if np is not None and np.float32 not in _fast_types:
        _fast_types = _fast_types | {np.float16, np.float32, np.float64, np.int32, np.int64}
        _numpy_types_missing = False


def _new_batch(key: tuple[str, tuple[str, ...]], prefixes: dict[str, bytes]) -> _Batch | None:
    scope, names = key
    heads = []
    for name in names:
        if type(name) is not str or not name:
            return None
        prefix = prefixes.get(scope + name if scope else name)
        if prefix is None:
            return None  # built once every tag has been written in this file
        heads.append(prefix[_summary_header_len(prefix) :])
    if not heads:
        return None
    _add_numpy_types()
    if len(_batches) >= _MAX_BATCHES:
        _batches.clear()
    batch = _batches[key] = _Batch(heads, frozenset(scope + n if scope else n for n in names))
    return batch


def _summary_header_len(prefix: bytes) -> int:
    # b"\x2a" then a varint length, which ends at the first byte below 0x80.
    i = 1
    while prefix[i] & 0x80:
        i += 1
    return i + 1


def scalar_pb(tag: str, data: Any, description: str | None = None) -> summary_pb2.Summary:
    """A ``Summary`` holding one scalar value, with metadata; no writer needed.

    Same data contract as :func:`scalar`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "scalar_pb", "tag")
    value = f32_bytes(scalar_float(data, "scalar_pb"))
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_FLOAT
    v.tensor.tensor_shape.SetInParent()
    v.tensor.tensor_content = value
    v.metadata.CopyFrom(create_summary_metadata(description))
    return summary
