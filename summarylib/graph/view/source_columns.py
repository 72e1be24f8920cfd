"""A graph source read as columns: the first step of ``page_columns``.

:func:`read_source` turns an IR :class:`~summarylib.graph.Graph` or a ``GraphDef`` message
(without a function library) into one :class:`SourceColumns`: per node its name, op
type, device and display record (attribute text, output shapes, XLA cluster: the record
``normalize`` makes, shared by the nodes whose attributes and outputs repeat), and the
inputs of every node as TensorBoard collapses them (``normalize._collapse``: ``^x`` is a
control input, ``x:k`` selects output ``k``, an input naming the previous input's node is
dropped), flattened into one list with per-node offsets.

An IR graph is read field by field, 1,024 nodes at a time (one list per field, the
inputs flattened, only the inputs with a ``:`` or ``^`` parsed one by one, the collapse a
comparison of neighbours; each pass after a round's first finds that round's objects in
the cache), and its display records are made once per distinct (attribute names and
values, output shapes and dtypes), the nodes grouped by numpy over codes of those fields
(``equal_runs``). A node with a field of the wrong type, or
attributes or outputs that are not a mapping and ``TensorSpec`` objects, sends the whole
graph through the record-per-node reader, which raises ``build_view``'s error for it. A
serialized GraphDef is read from its wire format into the same columns: the nodes found
by a Python loop, their fields by numpy one field of every node per round, the strings
sliced from the bytes read once as Latin-1 (decoded one by one where not ASCII), its attr
map's text made once per distinct attr-map bytes, the inputs parsed and collapsed as an
IR graph's are; a field the scan does not handle (a two-byte tag, a wire type other than
length-delimited) sends it to the field-by-field loop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, count
from operator import attrgetter, eq, itemgetter
from typing import Any

import numpy as np

from summarylib.graph.elements import DType, TensorSpec
from summarylib.graph.view.equal_runs import group_runs
from summarylib.graph.view.model import Shape
from summarylib.graph.view.normalize import (
    _AttrMemo,
    _collapse,
    _Raw,
    _source_nodes,
    ir_node,
    parse_input,
)

__all__ = ["SourceColumns", "read_source"]

#: Attribute value types whose display text is a function of the value (equal values
#: of one of these types show the same text).
_BY_VALUE: frozenset[type] = frozenset({str, int, bool, DType, TensorSpec})

#: One display record: (attribute text, output shapes, XLA cluster or None).
Record = tuple[dict[str, str], list[Shape], "str | None"]


@dataclass
class SourceColumns:
    """Every node of a source, in source order (see the module docstring).

    ``records[rec[j]]`` is node ``j``'s display record; node ``j``'s collapsed inputs are
    entries ``in_start[j]:in_start[j + 1]`` of ``in_name`` (the node name), ``in_slot``
    (the output slot) and ``in_ctl`` (a control input).
    """

    names: list[str]
    ops: list[str]
    devices: list[str]
    rec: np.ndarray
    records: list[Record]
    in_start: np.ndarray
    in_name: list[str]
    in_slot: np.ndarray
    in_ctl: np.ndarray

    def inputs(self, j: int) -> list[tuple[str, int, bool]]:
        """Node ``j``'s collapsed inputs as (name, slot, control)."""
        a, b = int(self.in_start[j]), int(self.in_start[j + 1])
        if a == b:
            return []
        return list(zip(self.in_name[a:b], self.in_slot[a:b].tolist(),
                        self.in_ctl[a:b].tolist(), strict=True))


def read_source(source: Any, serialized: bytes | None = None) -> SourceColumns:
    """``source`` (an IR graph, or a ``GraphDef`` message) as columns; ValueError, as
    ``build_view`` raises it, for a node it cannot read.

    ``serialized``: the bytes a ``GraphDef`` ``source`` was parsed from, when the caller
    has them: read instead of serializing the message again. They need not be the
    message's canonical serialization (fields in any order, a field given twice: the
    last wins), as a parser reads them. ``source`` may then be None: the bytes are those
    of a ``GraphDef`` without a ``library`` that the caller checked (parsed) already."""
    from summarylib.graph.ir import Graph

    if source is None:
        if serialized is None:
            raise TypeError("read_source: a source or its serialized bytes are needed")
        return _wire_columns(serialized)
    if isinstance(source, Graph):
        got = _ir_columns(source.nodes)
        return got if got is not None else _raw_columns(_ir_raws(source))
    if source.HasField("library"):
        return _raw_columns(_source_nodes(source))
    return _wire_columns(serialized if serialized is not None
                         else source.SerializeToString())


def _take(values: Sequence[Any], idx: np.ndarray) -> list[Any]:
    """``[values[i] for i in idx]`` in C (itemgetter of one index returns no tuple)."""
    if idx.size == 0:
        return []
    if idx.size == 1:
        return [values[int(idx[0])]]
    return list(itemgetter(*idx.tolist())(values))


_FIELDS = attrgetter("name", "op", "device", "inputs", "control_inputs", "attrs", "outputs")


def _all_str(values: Sequence[Any]) -> bool:
    return not values or set(map(type, values)) == {str}


def _codes(values: list[Any]) -> np.ndarray:
    """Per value, the index of the first value equal to it (one dict lookup each)."""
    seen: dict[Any, int] = {}
    return np.fromiter(map(seen.setdefault, values, count()), np.int64, len(values))


def _attr_value_codes(values: list[Any]) -> np.ndarray:
    """Per attribute value, a code: equal where ``_by_value_key`` is. That key is made
    once per distinct object (ids sorted with numpy): a graph's values mostly repeat as
    shared objects, and hashing some of them by value runs Python code."""
    first, inv = np.unique(np.fromiter(map(id, values), np.int64, len(values)),
                           return_index=True, return_inverse=True)[1:]
    seen: dict[Any, int] = {}
    codes = np.fromiter(map(seen.setdefault, map(_by_value_key, map(
        values.__getitem__, first.tolist())), count()), np.int64, first.size)
    return codes[inv.reshape(-1)]


def _object_codes(values: list[Any], ids: np.ndarray) -> np.ndarray:
    """Per value (``ids``: the values' ids), a code equal where the values are equal:
    one dict lookup per distinct object (ids made unique with numpy)."""
    if not ids.size:
        return ids
    first, inv = np.unique(ids, return_index=True, return_inverse=True)[1:]
    return _codes(_take(values, first))[inv.reshape(-1)]


def _by_value_key(v: Any) -> tuple[type | None, Any]:
    """A value's record key: by value (with its type: 1 and True differ) where its text
    is a function of its value, else by identity (floats: 0.0 and -0.0 are equal but
    shown differently; lists; arrays). The graph keeps every value alive."""
    return (type(v), v) if type(v) in _BY_VALUE else (None, id(v))


_SHAPE = attrgetter("shape")
_DTYPE = attrgetter("dtype")


#: Nodes read per round by the IR reader (see ``_ir_columns``).
_ROUND = 1024


class _RecordKeys:
    """What a node's display record depends on, gathered round by round: per node the
    number of attributes and of outputs; per attribute a code of its name (the index of
    the first equal name) and the value itself; per output a code of its (shape, dtype).
    :meth:`groups` then groups the nodes as ``equal_runs.group_runs`` does."""

    def __init__(self) -> None:
        self.n_attr: list[np.ndarray] = []
        self.n_out: list[np.ndarray] = []
        self.name_codes: list[np.ndarray] = []
        self.shape_ids: list[np.ndarray] = []
        self.dtype_ids: list[np.ndarray] = []
        self.values: list[Any] = []
        # The objects are kept (the graph keeps them alive too): their ids stay unique.
        self.shapes: list[Any] = []
        self.dtypes: list[Any] = []
        self._names: dict[Any, int] = {}
        self._n_names = 0

    def add(self, attrs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """The nodes' ``attrs`` and ``outputs``; TypeError or AttributeError for
        attributes that are not a dict or outputs that are not TensorSpecs."""
        k = len(attrs)
        n_attr = np.fromiter(map(len, attrs), np.int64, k)
        names = list(chain.from_iterable(attrs))
        values = list(chain.from_iterable(map(dict.values, attrs)))
        m = int(n_attr.sum())
        if len(names) != m or len(values) != m:
            raise TypeError("attrs: not a dict")
        n_out = np.fromiter(map(len, outputs), np.int64, k)
        flat = list(chain.from_iterable(outputs))
        if len(flat) != int(n_out.sum()):
            raise TypeError("outputs: not a list")
        # Codes numbered by the index of the first equal entry over all rounds.
        self.name_codes.append(np.fromiter(map(self._names.setdefault, names,
                                               count(self._n_names)), np.int64, m))
        self._n_names += m
        # Each output's shape and dtype, by identity here (a graph shares most of them
        # between nodes); by value once per distinct object in ``groups``.
        shapes = list(map(_SHAPE, flat))
        dtypes = list(map(_DTYPE, flat))
        self.shape_ids.append(np.fromiter(map(id, shapes), np.int64, len(flat)))
        self.dtype_ids.append(np.fromiter(map(id, dtypes), np.int64, len(flat)))
        self.shapes.extend(shapes)
        self.dtypes.extend(dtypes)
        self.values.extend(values)
        self.n_attr.append(n_attr)
        self.n_out.append(n_out)

    def groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(each node's group, numbered in order of first occurrence; the first node of
        each group)."""
        def cat(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return group_runs([(cat(self.n_attr), [cat(self.name_codes),
                                               _attr_value_codes(self.values)]),
                           (cat(self.n_out), [_object_codes(self.shapes, cat(self.shape_ids)),
                                              _object_codes(self.dtypes, cat(self.dtype_ids))])])


def _record_groups(attrs: Sequence[Any], outputs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Nodes grouped by what their display record depends on: the attribute names, the
    attribute values (by value where the text is a function of the value, with its type,
    else by identity), the output shapes and dtypes, all in order. Returns (each node's
    group, numbered in order of first occurrence; the first node of each group).
    TypeError or AttributeError for attributes that are not a dict or outputs that are
    not TensorSpecs.

    Each field is coded over all nodes at once (a dict lookup per attribute name, shape
    and dtype, an attribute value's key once per distinct object), and nodes are grouped
    by those codes with numpy (``equal_runs``)."""
    keys = _RecordKeys()
    keys.add(attrs, outputs)
    return keys.groups()


def _ir_columns(nodes: list[Any]) -> SourceColumns | None:
    """The columns of IR nodes, or None when a node needs the per-node reader (a field
    of another type: that reader raises the view's error, or reads what it can).

    The nodes are read in rounds of ``_ROUND``: at a million nodes every visit of a
    node's objects (the node, its lists, attribute dict, values and ``TensorSpec``s,
    scattered in memory) is a cache miss, and the dozen passes over a round's fields
    after the first find them in the cache. Per round: one pass over the nodes for
    their fields, one list per field, the inputs flattened, only those with a ``:`` or
    ``^`` parsed one by one, the collapse a comparison of neighbours; the display
    records' keys coded (``_RecordKeys``), grouped once all rounds are read."""
    n = len(nodes)
    if not n:
        return None
    names: list[str] = []
    ops: list[str] = []
    devices: list[str] = []
    keys = _RecordKeys()
    counts: list[np.ndarray] = []
    pname: list[str] = []
    slots: list[np.ndarray] = []
    controls: list[np.ndarray] = []
    for a in range(0, n, _ROUND):
        part = nodes[a:a + _ROUND]
        k = len(part)
        name_t, op_t, device_t, data, ctl, attrs, outputs = zip(*map(_FIELDS, part),
                                                                 strict=True)
        if not (_all_str(name_t) and _all_str(op_t) and _all_str(device_t)):
            return None
        try:
            n_data = np.fromiter(map(len, data), np.int64, k)
            n_ctl = np.fromiter(map(len, ctl), np.int64, k)
            flat_d = list(chain.from_iterable(data))
            # Few nodes have control inputs: only their lists are visited again.
            flat_c = list(chain.from_iterable(_take(ctl, np.flatnonzero(n_ctl))))
            # Display records depend on the attributes and the outputs' shapes and dtypes.
            keys.add(attrs, outputs)
            # Which inputs need parsing; a non-string input raises TypeError here.
            parse_d = [i for i, s in enumerate(flat_d) if ":" in s or s[:1] == "^"]
            parse_c = [i for i, s in enumerate(flat_c) if ":" in s]
        except (TypeError, AttributeError, OverflowError):
            return None  # not lists of strings, a mapping and TensorSpecs
        if (parse_d or parse_c) and not (_all_str(flat_d) and _all_str(flat_c)):
            return None  # a str subclass, or bytes: the per-node reader takes those
        names += name_t
        ops += op_t
        devices += device_t
        # A node's inputs are collapsed among themselves: a round's are made alone.
        start, got, slot, control = _input_columns(n_data, n_ctl, flat_d, flat_c,
                                                   parse_d, parse_c)
        counts.append(np.diff(start))
        pname += got
        slots.append(slot)
        controls.append(control)
    rec, firsts = keys.groups()
    del keys
    # One record per group, made from its first node.
    shape_cache: dict[Any, Shape] = {}
    records: list[Record] = []
    for j in firsts.tolist():
        raw = ir_node(j, nodes[j], shape_cache)
        records.append((raw.attrs, raw.shapes, raw.xla))
    in_start = np.zeros(n + 1, np.int64)
    np.cumsum(np.concatenate(counts), out=in_start[1:])
    return SourceColumns(names, ops, devices, rec, records, in_start, pname,
                         np.concatenate(slots), np.concatenate(controls))


def _input_columns(n_data: np.ndarray, n_ctl: np.ndarray, flat_d: list[str],
                   flat_c: list[str], parse_d: list[int], parse_c: list[int]
                   ) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """The collapsed inputs of every node as (in_start, in_name, in_slot, in_ctl) (see
    :class:`SourceColumns`): node ``j``'s ``n_data[j]`` data inputs (in ``flat_d``, node
    after node), then its ``n_ctl[j]`` control inputs (``flat_c``, names without ``^``);
    ``parse_d`` and ``parse_c`` index the inputs that need parsing (a ``:``, or a data
    input starting with ``^``)."""
    n = n_data.size
    # Data inputs, then control inputs ("^" + name), parsed where they need it.
    m_d, m_c = len(flat_d), len(flat_c)
    pname = flat_d + flat_c
    slot = np.zeros(m_d + m_c, np.int64)
    control = np.zeros(m_d + m_c, bool)
    control[m_d:] = True
    # Parsed one by one, stored at once (a numpy item set costs more than the parse).
    at = parse_d + [m_d + i for i in parse_c]
    if at:
        got = list(map(parse_input, chain(map(flat_d.__getitem__, parse_d),
                                          map("^".__add__, map(flat_c.__getitem__, parse_c)))))
        deque(map(pname.__setitem__, at, map(itemgetter(0), got)), 0)
        slot[at] = list(map(itemgetter(1), got))
        control[at] = list(map(itemgetter(2), got))
    node = np.repeat(np.arange(n), n_data)
    if m_c:  # each node's control inputs after its data inputs
        node = np.concatenate([node, np.repeat(np.arange(n), n_ctl)])
        order = np.argsort(node, kind="stable")
        pname = _take(pname, order)
        node, slot, control = node[order], slot[order], control[order]
    # The collapse: an input naming the same node as the node's previous input goes.
    if node.size > 1:
        same = np.fromiter(map(eq, pname[1:], pname[:-1]), bool, node.size - 1)
        keep = np.r_[True, ~(same & (node[1:] == node[:-1]))]
        if not keep.all():
            pname = list(compress(pname, keep.tolist()))
            node, slot, control = node[keep], slot[keep], control[keep]
    in_start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(node, minlength=n), out=in_start[1:])
    return in_start, pname, slot, control


def _raw_columns(raws: Iterable[_Raw]) -> SourceColumns:
    """Columns of per-node records (records sharing their attrs dict share one record)."""
    names: list[str] = []
    ops: list[str] = []
    devices: list[str] = []
    rec_l: list[int] = []
    records: list[Record] = []
    by_id: dict[tuple[int, int], int] = {}
    counts: list[int] = []
    in_name: list[str] = []
    in_slot: list[int] = []
    in_ctl: list[bool] = []
    for raw in raws:
        names.append(raw.name)
        ops.append(raw.op)
        devices.append(raw.device)
        key = (id(raw.attrs), id(raw.shapes))
        r = by_id.get(key)
        if r is None or records[r][2] != raw.xla:
            r = len(records)
            # records keeps the shared objects alive, so their ids stay unique
            records.append((raw.attrs, raw.shapes, raw.xla))
            by_id[key] = r
        rec_l.append(r)
        counts.append(len(raw.inputs))
        for name, slot, ctl in raw.inputs:
            in_name.append(name)
            in_slot.append(slot)
            in_ctl.append(ctl)
    in_start = np.zeros(len(names) + 1, np.int64)
    np.cumsum(np.array(counts, np.int64), out=in_start[1:])
    return SourceColumns(names, ops, devices, np.array(rec_l, np.int64), records, in_start,
                         in_name, np.array(in_slot, np.int64), np.array(in_ctl, bool))


def _varint(b: bytes, i: int) -> tuple[int, int]:
    x = b[i]
    i += 1
    if x < 128:
        return x, i
    x &= 127
    shift = 7
    while True:
        c = b[i]
        i += 1
        x |= (c & 127) << shift
        if c < 128:
            return x, i
        shift += 7


def _skip(b: bytes, i: int, wire: int) -> int:
    """The offset after a field's value of wire type ``wire`` starting at ``i``."""
    if wire == 0:
        return _varint(b, i)[1]
    if wire == 1:
        return i + 8
    if wire == 2:
        n, i = _varint(b, i)
        return i + n
    if wire == 5:
        return i + 4
    raise ValueError(f"build_view: a NodeDef has a field of wire type {wire}")


def _wire_loop_columns(data: bytes) -> SourceColumns:
    """:func:`_wire_columns` field by field in Python, for what its numpy scan leaves out
    (a field that is not length-delimited, a tag of two bytes, a repeated name, op or
    device): name, op, inputs and device decoded here (keys and lengths under 128
    read inline), one display record per distinct attr-map bytes (made through a parsed
    NodeDef holding only the attr map, so the text is ``_AttrMemo``'s), the inputs
    parsed and collapsed over all nodes at once."""
    from summarylib.proto import node_def_pb2

    memo = _AttrMemo()
    node_def = node_def_pb2.NodeDef
    by_bytes: dict[bytes, int] = {}
    records: list[Record] = []
    no_attrs = -1
    names: list[str] = []
    ops: list[str] = []
    devices: list[str] = []
    rec_l: list[int] = []
    counts: list[int] = []
    flat: list[str] = []
    add_input = flat.append
    end = len(data)
    i = 0
    while i < end:
        key = data[i]
        i += 1
        if key > 127:
            key, i = _varint(data, i - 1)
        if key != 10:  # not field 1 (node), length-delimited
            i = _skip(data, i, key & 7)
            continue
        size = data[i]
        i += 1
        if size > 127:
            size, i = _varint(data, i - 1)
        j, stop = i, i + size
        i = stop
        name = op = device = ""
        before = len(flat)
        # The attr map's entries: [a0, a1) when they lie together (they do as written).
        a0 = a1 = -1
        parts: list[bytes] = []
        while j < stop:
            at = j
            key = data[j]
            j += 1
            if key > 127:
                key, j = _varint(data, j - 1)
            if key & 7 != 2:
                j = _skip(data, j, key & 7)
                continue
            n = data[j]
            j += 1
            if n > 127:
                n, j = _varint(data, j - 1)
            field = key >> 3
            if field == 3:
                add_input(data[j:j + n].decode("utf-8"))
            elif field == 5:
                if at != a1:
                    if a0 >= 0:
                        parts.append(data[a0:a1])
                    a0 = at
                a1 = j + n
            elif field == 1:
                name = data[j:j + n].decode("utf-8")
            elif field == 2:
                op = data[j:j + n].decode("utf-8")
            elif field == 4:
                device = data[j:j + n].decode("utf-8")
            j += n
        names.append(name)
        ops.append(op)
        devices.append(device)
        counts.append(len(flat) - before)
        if a0 < 0:
            if no_attrs < 0:
                no_attrs = len(records)
                records.append(({}, [], None))
            rec_l.append(no_attrs)
            continue
        raw_attrs = b"".join([*parts, data[a0:a1]]) if parts else data[a0:a1]
        r = by_bytes.get(raw_attrs)
        if r is None:
            nd = node_def()
            nd.ParseFromString(raw_attrs)
            got = memo.node(nd)
            r = len(records)
            records.append((got.attrs, got.shapes, got.xla))
            if len(raw_attrs) < 4096:  # not every constant's tensor content
                by_bytes[raw_attrs] = r
        rec_l.append(r)
    parse = [k for k, s in enumerate(flat) if ":" in s or s[:1] == "^"]
    n_nodes = len(names)
    in_start, pname, slot, control = _input_columns(
        np.array(counts, np.int64), np.zeros(n_nodes, np.int64), flat, [], parse, [])
    return SourceColumns(names, ops, devices, np.array(rec_l, np.int64), records, in_start,
                         pname, slot, control)


#: Attr maps of at least this many bytes (a constant's tensor) are not keyed by their
#: bytes: each such node makes its own record.
_BIG_ATTRS = 4096

#: The field scan goes on field by field in Python once this few nodes have fields left.
_FEW = 32


def _wire_columns(data: bytes) -> SourceColumns:
    """The columns of a serialized GraphDef (without a function library), read from the
    wire format. A Python loop finds the nodes (one step each); their fields are found
    with numpy, one field of every node per round (a field's offset follows from the
    previous field's length), and the strings are decoded by ``map`` over slices. Nodes
    share a display record when their attr map entries have the same bytes (made once
    per distinct bytes through a parsed NodeDef holding only the attr map, so the text
    is ``_AttrMemo``'s); the inputs are parsed and collapsed as an IR graph's are.
    A field the scan does not handle sends the graph to :func:`_wire_loop_columns`."""
    starts, stops = _node_spans(data)
    got = _node_fields(data, starts, stops)
    if got is None:
        return _wire_loop_columns(data)
    node, field, tag_at, v0, v1 = got
    n = starts.size
    text = _slices_text(data)
    # Name, op and device: at most one each per node (else the loop reads them).
    single: list[list[str]] = []
    for f in (1, 2, 4):
        sel = np.flatnonzero(field == f)
        at = node[sel]
        if np.bincount(at, minlength=n).max(initial=0) > 1:
            return _wire_loop_columns(data)
        a = np.zeros(n, np.int64)
        b = np.zeros(n, np.int64)
        a[at], b[at] = v0[sel], v1[sel]
        single.append(text(a, b))
    names, ops, devices = single
    # Inputs in file order (the scan finds them round by round).
    sel = np.flatnonzero(field == 3)
    sel = sel[np.argsort(tag_at[sel], kind="stable")]
    counts = np.bincount(node[sel], minlength=n)
    i0, i1 = v0[sel], v1[sel]
    flat = text(i0, i1)
    parse = _wire_parse_index(data, i0, i1).tolist()
    got_records = _wire_records(data, n, node, field, tag_at, v1)
    if got_records is None:
        return _wire_loop_columns(data)
    rec, records = got_records
    in_start, pname, slot, control = _input_columns(
        counts, np.zeros(n, np.int64), flat, [], parse, [])
    return SourceColumns(names, ops, devices, rec, records, in_start, pname, slot, control)


def _node_spans(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """[start, stop) of every node's bytes (GraphDef field 1), in file order; other
    top-level fields are skipped. The loop keeps only where each node's tag is; numpy
    reads the lengths again from there."""
    tags: list[int] = []
    add = tags.append
    end = len(data)
    i = 0
    while i < end:
        key = data[i]
        if key == 10:  # field 1 (node), length-delimited
            add(i)
            size = data[i + 1]
            i += 2
            if size > 127:
                b = data[i]
                if b < 128:  # two bytes: the common size of a node
                    size = (size & 127) | b << 7
                    i += 1
                else:
                    size, i = _varint(data, i - 1)
            i += size
            continue
        i += 1
        if key > 127:
            key, i = _varint(data, i - 1)
        i = _skip(data, i, key & 7)
    if i != end:
        raise ValueError("build_view: the GraphDef's last field runs past its end")
    heads = _field_heads(np.frombuffer(data, np.uint8), np.array(tags, np.int64))
    assert heads is not None  # every tag is 10: field 1, length-delimited
    return heads[1], heads[2]


def _node_fields(data: bytes, starts: np.ndarray, stops: np.ndarray
                 ) -> tuple[np.ndarray, ...] | None:
    """Every field of every node as arrays (node, field number, offset of its tag,
    [start, stop) of its value), found one field of every node per round; None when a
    field is not length-delimited or its tag takes more than one byte."""
    buf = np.frombuffer(data, np.uint8)
    act = np.flatnonzero(starts < stops)
    cur = starts[act]
    parts: list[tuple[np.ndarray, ...]] = []
    while act.size > _FEW:
        heads = _field_heads(buf, cur)
        if heads is None:
            return None
        field, v0, v1 = heads
        stop = stops[act]
        if (v1 > stop).any():
            raise ValueError("build_view: a NodeDef's field runs past the node's end")
        parts.append((act, field, cur, v0, v1))
        go = v1 < stop
        act, cur = act[go], v1[go]
    if act.size:  # the long tail (a node with thousands of inputs)
        got = _tail_tags(data, cur.tolist(), stops[act].tolist())
        if got is None:
            return None
        tags, counts = got
        heads = _field_heads(buf, tags)
        if heads is None:
            return None
        parts.append((np.repeat(act, counts), heads[0], tags, heads[1], heads[2]))
    if not parts:
        return tuple(np.zeros(0, np.int64) for _ in range(5))
    return tuple(np.concatenate(c) for c in zip(*parts, strict=True))


def _field_heads(buf: np.ndarray, tags: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Of the fields whose tags are at ``tags``: (field number, [start, stop) of the
    value); None when one is not length-delimited or its tag takes more than a byte."""
    tag = buf[tags]
    if ((tag & 7) != 2).any() or (tag > 127).any():
        return None
    # The value's length: a varint of up to 10 bytes after the tag.
    last = buf.size - 1
    size = np.zeros(tags.size, np.int64)
    used = np.zeros(tags.size, np.int64)
    more = np.ones(tags.size, bool)
    for k in range(10):
        byte = buf[np.minimum(tags + 1 + k, last)].astype(np.int64)
        size |= np.where(more, (byte & 127) << (7 * k), 0)
        used += more
        more &= byte > 127
        if not more.any():
            break
    else:
        return None
    v0 = tags + 1 + used
    return (tag >> 3).astype(np.int64), v0, v0 + size


def _tail_tags(data: bytes, cur: list[int], stops: list[int]
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """The offsets of the tags of the fields in ``[cur[k], stops[k])`` for each k, and
    how many each range has: a Python step per field (a length under 128 read inline).
    None where :func:`_field_heads` would say None."""
    tags: list[int] = []
    add = tags.append
    counts: list[int] = []
    for i, stop in zip(cur, stops, strict=True):
        before = len(tags)
        while i < stop:
            key = data[i]
            if key > 127 or key & 7 != 2:
                return None
            add(i)
            size = data[i + 1]
            if size < 128:
                i += 2 + size
            else:
                size, i = _varint(data, i + 1)
                i += size
        if i != stop:
            raise ValueError("build_view: a NodeDef's field runs past the node's end")
        counts.append(len(tags) - before)
    return np.array(tags, np.int64), np.array(counts, np.int64)


def _slices_text(data: bytes) -> Any:
    """A function of two offset arrays: the UTF-8 text of ``data[a:b]`` for each pair.
    The bytes are read once as Latin-1 (one character a byte) and sliced; where the
    slices are not all ASCII (the only text both encodings agree on) they are decoded
    one by one."""
    latin = data.decode("latin-1")

    def text(a: np.ndarray, b: np.ndarray) -> list[str]:
        lo, hi = a.tolist(), b.tolist()
        got = list(map(latin.__getitem__, map(slice, lo, hi)))
        if "".join(got).isascii():
            return got
        return list(map(bytes.decode, map(data.__getitem__, map(slice, lo, hi))))
    return text


def _wire_parse_index(data: bytes, i0: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """Which inputs (values ``data[i0[k]:i1[k]]``, in file order) need parsing: a ``:``
    among their bytes, or a first byte ``^`` (UTF-8 never uses these bytes inside a
    multi-byte character)."""
    if not i0.size:
        return np.zeros(0, np.int64)
    buf = np.frombuffer(data, np.uint8)
    need = np.zeros(i0.size, bool)
    nonempty = i1 > i0
    need[nonempty] = buf[i0[nonempty]] == ord("^")
    colons = np.flatnonzero(buf[i0[0]:i1[-1]] == ord(":")) + i0[0]
    k = np.searchsorted(i0, colons, "right") - 1
    need[k[colons < i1[k]]] = True
    return np.flatnonzero(need)


def _wire_records(data: bytes, n: int, node: np.ndarray, field: np.ndarray,
                  tag_at: np.ndarray, v1: np.ndarray
                  ) -> tuple[np.ndarray, list[Record]] | None:
    """Each node's display record (numbered in order of first use) and the records: one
    per distinct bytes of a node's attr map entries, one per node whose entries take
    ``_BIG_ATTRS`` bytes or more. None when a node's entries do not lie together."""
    from summarylib.proto import node_def_pb2

    sel = np.flatnonzero(field == 5)
    sel = sel[np.argsort(tag_at[sel], kind="stable")]
    at, e0, e1 = node[sel], tag_at[sel], v1[sel]
    a0 = np.zeros(n, np.int64)
    a1 = np.zeros(n, np.int64)
    total = np.bincount(at, e1 - e0, minlength=n).astype(np.int64)
    if at.size:
        first = np.r_[True, at[1:] != at[:-1]]
        lastm = np.r_[at[1:] != at[:-1], True]
        a0[at[first]] = e0[first]
        a1[at[lastm]] = e1[lastm]
    if (a1 - a0 != total).any():
        return None  # entries not side by side: the loop joins them
    big = total >= _BIG_ATTRS
    small = np.flatnonzero(~big)
    keys = list(map(data.__getitem__, map(slice, a0[small].tolist(), a1[small].tolist())))
    # Per small node, the index (among the small nodes) of the first with its bytes.
    seen: dict[bytes, int] = {}
    first_of = np.fromiter(map(seen.setdefault, keys, count()), np.int64, small.size)
    del keys, seen
    is_first = first_of == np.arange(small.size)
    big_idx = np.flatnonzero(big)
    code = np.empty(n, np.int64)
    code[small] = (np.cumsum(is_first) - 1)[first_of]
    code[big_idx] = int(is_first.sum()) + np.arange(big_idx.size)
    firsts = np.concatenate([small[is_first], big_idx])
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    memo = _AttrMemo()
    node_def = node_def_pb2.NodeDef
    records: list[Record] = []
    for j in firsts[order].tolist():
        nd = node_def()
        nd.ParseFromString(data[a0[j]:a1[j]])
        got = memo.node(nd)
        records.append((got.attrs, got.shapes, got.xla))
    return rank[code], records


def _ir_raws(graph: Any) -> Any:
    """IR nodes as records; nodes whose attrs values are the same objects (or equal
    strings) and whose outputs have the same (shape, dtype) share one record's attrs
    and shapes (the graph keeps every value alive, so an identity names one value)."""
    shape_cache: dict[Any, Shape] = {}
    memo: dict[Any, tuple[dict[str, str], list[Shape], str | None]] = {}
    for i, node in enumerate(graph.nodes):
        name, op, device = node.name, node.op, node.device
        try:
            key = (tuple([(k, v if type(v) is str else id(v)) for k, v in node.attrs.items()]),
                   tuple([(o.shape, o.dtype) for o in node.outputs]))
            hit = memo.get(key)
        except (TypeError, AttributeError):  # not a mapping, not TensorSpecs: no memo
            key, hit = None, None
        if hit is None or type(name) is not str or type(op) is not str \
                or type(device) is not str:
            raw = ir_node(i, node, shape_cache)
            if key is not None:
                memo[key] = (raw.attrs, raw.shapes, raw.xla)
            yield raw
            continue
        try:
            ctl = node.control_inputs
            inputs = list(node.inputs)
            if ctl:
                inputs += ["^" + c for c in ctl]
            collapsed = _collapse(inputs)
        except TypeError:
            yield ir_node(i, node, shape_cache)  # raises the view's error
            continue
        yield _Raw(name, op, collapsed, device, hit[0], hit[1], hit[2])


