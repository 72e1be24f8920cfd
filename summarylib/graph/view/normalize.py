"""Step 1 of the view: a graph source -> op nodes and base edges, with TensorBoard's rules.

Input: an IR :class:`~summarylib.graph.ir.Graph`, a ``GraphDef`` message (ours,
TensorFlow's or TensorBoard's: any message type named ``GraphDef``) or its serialized
bytes. Output: a :class:`Normalized` holding

* ``ops``: normalised name -> :class:`OpNode`, in the order TensorBoard iterates its
  ``SlimGraph.nodes`` object (insertion order, except that names which are canonical array
  indices, ``"0"``, ``"17"``, come first in numeric order: JavaScript object key order);
  a duplicate name keeps its first position and its last NodeDef;
* ``edges``: :class:`BaseEdge` list in TensorBoard's order (NodeDef order, then input
  order; duplicates' inputs included), only edges whose both ends are ops;
* ``renamed``: original -> shown name for ``A`` -> ``A/(A)``.

Rules (graph.ts ``build``, ``normalizeInputs``, ``addEdgeToGraph``,
``mapStrictHierarchy``, ``extractOutputShapes``):

* ``^x`` is a control input; ``x:k`` and ``x:fn:k`` (``^([^:]+):((\\w+:|)\\d+)$``) select
  output ``k``; an input whose node name equals the previous input's is dropped
  (``x*x`` draws one edge), whatever its slot or kind;
* an op whose type matches ``embed_in`` (``Const``) is an in-embedding of each consumer;
  its own inputs become edges into the consumer (at the consumer's input index). An op
  matching ``embed_out`` (``*Summary``) is an out-embedding of each op it reads; an op
  reading a summary gets edges from the summary's inputs instead;
* self loops are dropped; inputs naming no op are dropped;
* a reference edge is input ``i`` of an op whose ``"op i"`` is in :data:`REF_EDGES`
  (``i`` counts the inputs left after the duplicate collapse);
* an op ``A`` that is also a scope (some op ``A/...``) becomes ``A/(A)``; so does an
  embedded node whose name is a scope. As in TensorBoard the check scans the sorted names,
  and the scopes of the alphabetically last name are not seen by the embedding check;
* ``_output_shapes``: ``unknown_rank`` -> None; no dims, or one dim of size 0 (proto3
  omits a zero size) -> scalar ``()``; ``-1`` -> None; it is removed from ``attrs``;
* ``_XlaCluster``'s string is ``xla_cluster``;
* ``GraphDef.library`` functions become ops under ``__function_library__<name>``, with
  ``input_arg`` ops for their arguments, as TensorBoard adds them.

Attribute values become short strings for display (tensor contents are not copied).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from summarylib.encoding._tensor import data_type_name
from summarylib.graph.conversion import f32_shortest
from summarylib.graph.ir import DType, Graph, TensorSpec
from summarylib.graph.view.model import BaseEdge, Embedding, OpNode, Shape
from summarylib.graph.view.options import ViewOptions

__all__ = [
    "FUNCTION_LIBRARY_PREFIX",
    "REF_EDGES",
    "Normalized",
    "ir_node",
    "js_key_order",
    "normalize",
    "parse_input",
    "strict_name",
]

FUNCTION_LIBRARY_PREFIX = "__function_library__"
#: (op type, input index) pairs drawn as reference edges (graph.ts DefaultBuildParams).
REF_EDGES = frozenset({
    ("Assign", 0), ("AssignAdd", 0), ("AssignSub", 0), ("assign", 0), ("assign_add", 0),
    ("assign_sub", 0), ("count_up_to", 0), ("ScatterAdd", 0), ("ScatterSub", 0),
    ("ScatterUpdate", 0), ("scatter_add", 0), ("scatter_sub", 0), ("scatter_update", 0),
})
# JavaScript's \w and \d are ASCII-only.
_INPUT_RE = re.compile(r"^([^:]+):(([A-Za-z0-9_]+:|)[0-9]+)$")
_ARRAY_INDEX_RE = re.compile(r"^(0|[1-9][0-9]*)$")
_MAX_ATTR_CHARS = 200
#: What an op named "" is called (hierarchy.EMPTY; "" names the root).
EMPTY_NAME = "\u2205"


@dataclass
class Normalized:
    """The result of :func:`normalize` (see the module docstring)."""

    ops: dict[str, OpNode]
    edges: list[BaseEdge]
    renamed: dict[str, str] = field(default_factory=dict)
    #: Number of ops removed by ``hidden_ops``.
    hidden: int = 0


@dataclass(slots=True)
class _Raw:
    # One NodeDef as TensorBoard's OpNodeImpl sees it.
    name: str
    op: str
    inputs: list[tuple[str, int, bool]]  # (name, slot, control), collapsed
    device: str
    attrs: dict[str, str]
    shapes: list[Shape]
    xla: str | None
    embeddings: list[Embedding] = field(default_factory=list)
    outs: list[_Raw] = field(default_factory=list)


def js_key_order(keys: Iterable[str]) -> list[str]:
    """Keys in JavaScript object order: canonical array indices first (ascending), then
    the others in insertion order (``keys`` is taken to be in insertion order)."""
    keys = list(keys)
    idx = [k for k in keys if k[:1].isdigit() and _ARRAY_INDEX_RE.match(k)
           and int(k) < 4294967295]
    if not idx:
        return keys
    taken = set(idx)
    idx.sort(key=int)
    return idx + [k for k in keys if k not in taken]


def strict_name(name: str) -> str:
    """``a/b`` -> ``a/b/(b)``: the name TensorBoard gives an op that is also a scope."""
    return f"{name}/({name.rsplit('/', 1)[-1]})"


def parse_input(raw: str) -> tuple[str, int, bool, str]:
    """``"^a"``, ``"a:1"``, ``"a:fn:1"`` -> (name, slot, control, output key)."""
    control = raw.startswith("^")
    if control:
        raw = raw[1:]
    if ":" in raw:
        m = _INPUT_RE.match(raw)
        if m:
            key = m.group(2)
            return m.group(1), int(key.rsplit(":", 1)[-1]), control, key
    return raw, 0, control, "0"


def _collapse(inputs: Iterable[str]) -> list[tuple[str, int, bool]]:
    out: list[tuple[str, int, bool]] = []
    last: str | None = None
    for raw in inputs:
        if ":" in raw or raw[:1] == "^":
            name, slot, control, _ = parse_input(raw)
        else:
            name, slot, control = raw, 0, False
        if name != last:
            last = name
            out.append((name, slot, control))
    return out


# --- reading sources ------------------------------------------------------------------


def _source_nodes(source: Any) -> Iterator[_Raw]:
    """NodeDefs (then library functions) of ``source`` as :class:`_Raw` records."""
    if isinstance(source, Graph):
        yield from _ir_nodes(source)
        return
    gd = _graph_def(source)
    memo = _AttrMemo()
    for nd in gd.node:
        yield memo.node(nd)
    if gd.HasField("library"):
        yield from _library_nodes(gd.library, memo)


def _graph_def(source: Any) -> Any:
    if isinstance(source, (bytes, bytearray, memoryview)):
        from google.protobuf.message import DecodeError

        from summarylib.proto import graph_pb2

        gd = graph_pb2.GraphDef()
        try:
            gd.ParseFromString(bytes(source))
        except (DecodeError, ValueError, RuntimeError) as e:
            raise ValueError(
                f"build_view: the source ({len(source)} bytes) is not a serialized GraphDef: {e}"
            ) from None
        return gd
    desc = getattr(source, "DESCRIPTOR", None)
    full_name = getattr(desc, "full_name", None)
    if isinstance(full_name, str) and (full_name == "GraphDef" or full_name.endswith(".GraphDef")):
        return source  # ours (summarylib.GraphDef), TensorFlow's or TensorBoard's copy
    if full_name is not None:
        raise ValueError(f"build_view: expected a GraphDef message, got a {full_name} message")
    raise ValueError(
        "build_view: the source must be a summarylib.graph.Graph, a GraphDef message or its "
        f"serialized bytes (or a path), got {type(source).__name__}")


class _AttrMemo:
    """Display text and parsed shapes per serialized AttrValue: most values repeat (the
    same dtype, the same output shapes), and parsing them in Python is the slow part."""

    def __init__(self) -> None:
        self.text: dict[bytes, str] = {}
        self.shapes: dict[bytes, list[Shape]] = {}

    def node(self, nd: Any) -> _Raw:
        attrs: dict[str, str] = {}
        shapes: list[Shape] = []
        xla: str | None = None
        for key, av in sorted(nd.attr.items()):
            raw = av.SerializeToString()
            if key == "_output_shapes":
                got = self.shapes.get(raw)
                if got is None:
                    got = self.shapes[raw] = _proto_shapes(av)
                shapes = list(got)
                continue
            if key == "_XlaCluster":
                xla = av.s.decode("utf-8", "replace") or None
            text = self.text.get(raw)
            if text is None:
                text = _attr_text(av)
                if len(raw) < 256:
                    self.text[raw] = text
            attrs[key] = text
        return _Raw(nd.name, nd.op, _collapse(nd.input), nd.device, attrs, shapes, xla)


def _proto_shapes(av: Any) -> list[Shape]:
    if av.WhichOneof("value") != "list":
        return []
    out: list[Shape] = []
    for sh in av.list.shape:
        if sh.unknown_rank:
            out.append(None)
            continue
        dims = [d.size for d in sh.dim]
        out.append(_tb_shape(dims))
    return out


def _tb_shape(dims: Sequence[int | None]) -> Shape:
    # TensorBoard reads the pbtxt: a size of 0 is not written, so one zero dim is a scalar.
    if not dims or (len(dims) == 1 and dims[0] == 0):
        return ()
    return tuple(None if d is None or d == -1 else d for d in dims)


def _library_nodes(library: Any, memo: _AttrMemo) -> Iterator[_Raw]:
    # graph.ts processFunction: one op for the function, input_arg ops, prefixed node_defs.
    for func in library.function:
        fname = FUNCTION_LIBRARY_PREFIX + func.signature.name
        yield _Raw(fname, "", [], "", {}, [], None)
        for arg in func.signature.input_arg:
            yield _Raw(f"{fname}/{arg.name}", "input_arg", [], "",
                       {"T": _dtype_text(arg.type)}, [], None)
        for nd in func.node_def:
            raw = memo.node(nd)
            raw.name = f"{fname}/{raw.name}"
            raw.inputs = [(f"{fname}/{n}", s, c) for n, s, c in raw.inputs]
            yield raw


def _ir_nodes(graph: Any) -> Iterator[_Raw]:
    shape_cache: dict[Any, Shape] = {}
    for i, node in enumerate(graph.nodes):
        yield ir_node(i, node, shape_cache)


def ir_node(i: int, node: Any, shape_cache: dict[Any, Shape]) -> _Raw:
    """Node ``i`` of an IR graph as TensorBoard would read its NodeDef (``shape_cache``:
    parsed output shapes, shared between calls)."""
    name, op, device = node.name, node.op, node.device
    if (type(name) is not str or type(op) is not str or type(device) is not str) and not (
            isinstance(name, str) and isinstance(op, str) and isinstance(device, str)):
        raise ValueError(
            f"build_view: node #{i} of the Graph has a non-string name, op or device "
            f"({name!r}, {op!r}, {device!r})")
    try:
        inputs = list(node.inputs)
        if node.control_inputs:
            inputs += ["^" + c for c in node.control_inputs]
        collapsed = _collapse(inputs)
    except TypeError:
        raise ValueError(f"build_view: node {name!r}: inputs must be strings") from None
    attrs: dict[str, str] = {}
    xla: str | None = None
    for key, value in node.attrs.items():
        if key == "_output_shapes":
            continue
        if key == "_XlaCluster" and isinstance(value, (str, bytes)):
            xla = (value.decode("utf-8", "replace") if isinstance(value, bytes)
                   else value) or None
        attrs[str(key)] = value if type(value) is str and len(value) <= _MAX_ATTR_CHARS \
            else _value_text(value)
    shapes: list[Shape] = []
    if node.outputs:
        for spec in node.outputs:
            dims = spec.shape
            shape = shape_cache.get(dims, _MISSING)
            if shape is _MISSING:
                shape = shape_cache[dims] = None if dims is None else _tb_shape(
                    [-1 if d is None else d for d in dims])
            shapes.append(shape)
        _output_dtypes(node, attrs)
    return _Raw(name, op, collapsed, device, attrs, shapes, xla)


_MISSING: Any = object()


_DTYPE_ATTRS: dict[Any, tuple[str, str] | None] = {}


def _output_dtypes(node: Any, attrs: dict[str, str]) -> None:
    # The attrs Graph.to_graph_def writes for the output dtypes, so that an IR graph
    # shows what its GraphDef would.
    declared = node.attrs.get("T", node.attrs.get("dtype"))
    try:
        key: Any = (tuple([spec.dtype for spec in node.outputs]), declared)
        extra = _DTYPE_ATTRS.get(key, _MISSING)
    except TypeError:  # an unhashable attr value
        key, extra = None, _MISSING
    if extra is _MISSING:
        extra = None
        dtypes = [spec.dtype for spec in node.outputs]
        if any(d is not None for d in dtypes):
            first = dtypes[0]
            uniform = first is not None and all(d == first for d in dtypes)
            if uniform and declared is None:
                extra = ("T", str(first))
            elif not (uniform and getattr(declared, "name", None) == first):
                extra = ("_output_types", "[" + ", ".join(str(d) for d in dtypes) + "]")
        if key is not None and len(_DTYPE_ATTRS) < 4096:
            _DTYPE_ATTRS[key] = extra
    if extra is not None:
        attrs[extra[0]] = extra[1]


# --- attribute display ------------------------------------------------------------------


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ATTR_CHARS else text[:_MAX_ATTR_CHARS - 1] + "…"


def _dtype_text(enum: int) -> str:
    return data_type_name(enum) or f"DT_{enum}"


def _shape_text(sh: Any) -> str:
    if sh.unknown_rank:
        return "<unknown>"
    return "[" + ",".join("?" if d.size == -1 else str(d.size) for d in sh.dim) + "]"


def _attr_text(av: Any) -> str:
    kind = av.WhichOneof("value")
    if kind == "s":
        return _short(av.s.decode("utf-8", "replace"))
    if kind in ("i", "b"):
        return str(getattr(av, kind))
    if kind == "f":
        return _float_text(av.f)
    if kind == "type":
        return _dtype_text(av.type)
    if kind == "shape":
        return _shape_text(av.shape)
    if kind == "tensor":
        t = av.tensor
        return f"tensor<{_dtype_text(t.dtype)}>{_shape_text(t.tensor_shape)}"
    if kind == "func":
        return str(av.func.name)
    if kind == "placeholder":
        return "$" + str(av.placeholder)
    if kind is None:
        return ""
    lv = av.list
    items: list[str]
    if lv.s:
        items = [s.decode("utf-8", "replace") for s in lv.s]
    elif lv.i:
        items = [str(v) for v in lv.i]
    elif lv.f:
        items = [_float_text(v) for v in lv.f]
    elif lv.b:
        items = [str(v) for v in lv.b]
    elif lv.type:
        items = [_dtype_text(v) for v in lv.type]
    elif lv.shape:
        items = [_shape_text(v) for v in lv.shape]
    elif lv.tensor:
        items = [f"tensor<{_dtype_text(t.dtype)}>" for t in lv.tensor]
    elif lv.func:
        items = [f.name for f in lv.func]
    else:
        items = []
    return _short("[" + ", ".join(items) + "]")


def _float_text(v: float) -> str:
    if math.isfinite(v):
        return repr(f32_shortest(v))
    return repr(v)


def _value_text(value: object) -> str:
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, DType):
        return value.name
    if isinstance(value, (bytes, bytearray)):
        return _short(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, (bool, int)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, TensorSpec):
        if value.shape is None:
            return "<unknown>"
        return "[" + ",".join("?" if d is None else str(d) for d in value.shape) + "]"
    if isinstance(value, (list, tuple)):
        return _short("[" + ", ".join(_value_text(v) for v in value) + "]")
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"tensor<{dtype}>[{','.join(str(d) for d in shape)}]"
    return _short(str(value))


# --- normalisation ----------------------------------------------------------------------


class _Matcher:
    """``re.search`` (or ``fullmatch``) of any of ``patterns``, memoized per op type."""

    def __init__(self, patterns: Sequence[str], full: bool = False) -> None:
        joined = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
        self._test = None if joined is None else (joined.fullmatch if full else joined.search)
        self._memo: dict[str, bool] = {}

    def __call__(self, op: str) -> bool:
        if self._test is None:
            return False
        hit = self._memo.get(op)
        if hit is None:
            hit = self._memo[op] = self._test(op) is not None
        return hit


def _rename_map(names: list[str], embedded: list[str]) -> tuple[dict[str, str], list[str]]:
    # graph.ts mapStrictHierarchy, including its quirks (see the module docstring).
    renamed: dict[str, str] = {}
    ordered = sorted(names)
    n = len(ordered)
    for i, (a, b) in enumerate(pairwise(ordered)):
        if not b.startswith(a):
            continue
        la = len(a)
        for j in range(i + 1, n):
            b = ordered[j]
            if not b.startswith(a):
                break
            if len(b) > la and b[la] == "/":
                renamed[a] = strict_name(a)
                break
    # An embedded name is renamed when it is a scope of one of the names but the
    # alphabetically last (TensorBoard collects scopes for all the others only).
    for e in embedded:
        prefix = e + "/"
        k = bisect_left(ordered, prefix)
        if k < n - 1 and ordered[k].startswith(prefix):
            renamed[e] = strict_name(e)
    return renamed, ordered


def _may_clash(renamed: dict[str, str], ordered: list[str]) -> bool:
    # Whether a new name is also an original name or a scope of one (``ordered``: the
    # sorted original names).
    n = len(ordered)
    for shown in renamed.values():
        k = bisect_left(ordered, shown)
        if k < n and (ordered[k] == shown or ordered[k].startswith(shown + "/")):
            return True
        k = bisect_left(ordered, shown + "/")
        if k < n and ordered[k].startswith(shown + "/"):
            return True
    return False


def normalize(source: Any, options: ViewOptions | None = None) -> Normalized:
    """Apply TensorBoard's parsing rules to ``source`` (see the module docstring)."""
    options = options or ViewOptions()
    is_in = _Matcher(options.embed_patterns("in"))
    is_out = _Matcher(options.embed_patterns("out"))
    is_hidden = _Matcher(options.hidden_ops, full=True)
    regular: list[_Raw] = []
    in_emb: dict[str, _Raw] = {}
    out_emb: dict[str, _Raw] = {}
    outs_of: dict[str, list[_Raw]] = {}
    embedded_names: list[str] = []
    hidden = 0
    # What each op type is (0 regular, 1 hidden, 2 embedded in, 3 embedded out): one
    # dict lookup per node instead of up to three pattern tests.
    kind_of: dict[str, int] = {}
    add_regular = regular.append
    for raw in _source_nodes(source):
        op = raw.op
        kind = kind_of.get(op)
        if kind is None:
            kind = kind_of[op] = (1 if is_hidden(op) else 2 if is_in(op)
                                  else 3 if is_out(op) else 0)
        if kind == 0:
            add_regular(raw)
        elif kind == 1:
            hidden += 1
        elif kind == 2:
            embedded_names.append(raw.name)
            in_emb[raw.name] = raw
        else:
            embedded_names.append(raw.name)
            out_emb[raw.name] = raw
            for name, _, _ in raw.inputs:
                outs_of.setdefault(name, []).append(raw)
    renamed, ordered = _rename_map([r.name for r in regular], embedded_names)
    if any(not r.name for r in regular) and "" not in renamed:
        renamed[""] = EMPTY_NAME  # "" is the root's name here
    rn = renamed.get

    ops: dict[str, OpNode] = {}
    op_of_raw: list[OpNode] = []
    for raw in regular:
        name = rn(raw.name, raw.name)
        node = OpNode(name=name, op=raw.op, device=raw.device, attrs=raw.attrs,
                      shapes=raw.shapes, xla_cluster=raw.xla)
        summaries = outs_of.get(raw.name)
        if summaries:
            node.out_embeddings = [_embedding(s, rn) for s in summaries]
        ops[name] = node
        op_of_raw.append(node)
    if renamed and _may_clash(renamed, ordered):
        ops = _resolve_conflicts(ops, op_of_raw, renamed)
    order = js_key_order(ops)
    if _has_index_key(order):
        ops = {k: ops[k] for k in order}

    edges: list[BaseEdge] = []
    add = edges.append
    ref_ops = {op for op, _ in REF_EDGES}
    embedded = in_emb.keys() | out_emb.keys()
    for raw, node in zip(regular, op_of_raw, strict=True):
        dst = node.name
        op = node.op
        has_ref = op in ref_ops
        for i, (name, slot, control) in enumerate(raw.inputs):
            ref = has_ref and (op, i) in REF_EDGES
            if name not in embedded:  # the common case: one set test, no renaming
                src = rn(name, name) if renamed else name
                if src != dst and src in ops:
                    add(BaseEdge(src, dst, slot, control, ref))
                continue
            emb = in_emb.get(name)
            if emb is not None:
                node.in_embeddings.append(_embedding(emb, rn))
                for ename, eslot, econtrol in emb.inputs:
                    src = rn(ename, ename)
                    if src != dst and src in ops:
                        add(BaseEdge(src, dst, eslot, econtrol, ref))
                continue
            summary = out_emb.get(name)
            if summary is not None:
                for ename, _, _ in summary.inputs:
                    src = rn(ename, ename)
                    if src != dst and src in ops:
                        add(BaseEdge(src, dst, slot, control, ref))
                continue
            src = rn(name, name)
            if src != dst and src in ops:
                add(BaseEdge(src, dst, slot, control, ref))
    return Normalized(ops, edges, renamed, hidden)


def _resolve_conflicts(ops: dict[str, OpNode], nodes: list[OpNode],
                       renamed: dict[str, str]) -> dict[str, OpNode]:
    """Rename again until no op name is a scope of another.

    Renaming ``A`` to ``A/(A)`` can collide with a node really named ``A/(A)`` (or make
    a new op-and-scope name); TensorBoard then mixes an op and a group under one name
    and breaks. Here the op moves on to ``A/(A)/((A))`` and so on, so that the hierarchy
    stays a tree.
    """
    for _ in range(8):
        clash, _ = _rename_map(list(ops), [])
        if not clash:
            break
        taken = set(ops)
        moved: dict[str, str] = {}
        for old in clash:
            new = strict_name(old)
            k = 1
            while new in taken:
                k += 1
                new = f"{old}/({old.rsplit('/', 1)[-1]}~{k})"
            taken.add(new)
            moved[old] = new
        for node in nodes:
            node.name = moved.get(node.name, node.name)
        for orig, shown in list(renamed.items()):
            renamed[orig] = moved.get(shown, shown)
        for old, new in moved.items():
            renamed.setdefault(old, new)
        ops = {node.name: node for node in nodes}
    return ops


def _has_index_key(keys: list[str]) -> bool:
    return bool(keys) and keys[0][:1].isdigit() and bool(_ARRAY_INDEX_RE.match(keys[0]))


def _embedding(raw: _Raw, rn: Any) -> Embedding:
    return Embedding(rn(raw.name, raw.name), raw.op, list(raw.shapes))
