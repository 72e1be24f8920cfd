"""Predict what TensorBoard's graph dashboard will do with a graph, before writing it.

``check(g)`` returns a list of :class:`Issue`, each naming the node (or scope) and the
dashboard behaviour it predicts (graph-pipeline.md §1, §2.2, §5.2). Codes:

=====================  ========  ==========================================================
code                   severity  meaning
=====================  ========  ==========================================================
``duplicate-name``     error     two nodes share a name: the dashboard keeps only one
``dangling-input``     error     an input names no node: the edge is dropped silently
``bad-name``           error     empty, leading-``/`` or ``//`` name (empty-named groups),
                                 a ``:`` (read as an output slot) or another character
                                 TensorFlow's rule ``[A-Za-z0-9.][A-Za-z0-9_./>-]*`` forbids
``control-before-data`` error    a ``^control`` input precedes a data input (TF rejects it)
``name-is-scope``      warning   ``A`` is a node and ``A/...`` a scope: shown as ``A/(A)``
``missing-shapes``     warning   no ``_output_shapes`` on a non-``Const`` node: no edge labels
``bad-output-slot``    warning   ``src:k`` with k beyond the outputs ``src`` declares
``large-attr``         warning   an attr over 1 KB: sent to the browser in full
``wide-group``         warning   a group whose main graph (after series collapsing and
                                 side-panel extraction) has hundreds of nodes: slow layout
``nested-template``    warning   repeated groups that hold groups of their own: the
                                 dashboard's structure colouring gives each its own colour
``series``             info      numbered sibling ops shown as one stacked node
                                 (``add_[1-7]``)
``side-panel``         info      nodes the dashboard takes out of a group's main graph
                                 into its side panel (high degree, ``NoOp``)
``unknown-dtype``      warning   an output dtype TensorFlow has no ``DataType`` for
``const-lookalike``    info      op contains "Const" but is not ``Const``: drawn as an icon
``no-device``          info      empty device: "TPU compatibility" colours it red
``structure-colour``   info      > 10k nodes and > 10k edges: structure colouring off
=====================  ========  ==========================================================

``check`` accepts a :class:`~summarylib.graph.Graph`, a ``GraphDef`` message or its bytes
(a GraphDef is checked as written, so duplicate names and input order are seen too).

The dashboard's own transformations are not guessed at: ``name-is-scope``, ``series``,
``side-panel``, ``wide-group`` and ``nested-template`` come from the offline view
(:func:`summarylib.graph.view.build_view`), built once with TensorBoard's options and, for
templates, once more with templates found smallest group first: groups that share a
template only in the second are the ones the dashboard colours apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from summarylib.encoding._tensor import data_type
from summarylib.graph.builder import _FORBIDDEN, _GOOD_NAME, NAME_RULE
from summarylib.graph.ir import DType, Graph, Node, TensorSpec, split_input

__all__ = ["ATTR_LIMIT", "MAX_CHILDREN", "Issue", "attr_size", "check"]

#: TensorBoard's large-attr limit in bytes (graph.ts); the UI does not filter, so bigger
#: attrs reach the browser.
ATTR_LIMIT = 1024
#: Direct children of one group above which dagre layout gets slow (tensorboard#245, #2707).
MAX_CHILDREN = 300
_COLOUR_CUTOFF = 10_000


@dataclass(frozen=True)
class Issue:
    """One finding: ``code`` (see the table), ``severity``, the node or scope, and a message."""

    code: str
    severity: str  # "error" | "warning" | "info"
    node: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.node}: {self.message} [{self.code}]"


@dataclass
class _View:
    # The fields of a node lint needs, from either an IR Node or a NodeDef.
    name: str
    op: str
    inputs: list[str]  # raw GraphDef form: "src", "src:k", "^src"
    device: str
    n_outputs: int | None  # None: no _output_shapes
    dtypes: list[str | None]
    attr_sizes: dict[str, int]  # serialized AttrValue sizes


def _ir_view(node: Node) -> _View:
    sizes = {k: attr_size(v) for k, v in node.attrs.items()}
    return _View(
        node.name,
        node.op,
        list(node.inputs) + ["^" + c for c in node.control_inputs],
        node.device,
        len(node.outputs) if node.outputs else None,
        [s.dtype for s in node.outputs],
        sizes,
    )


# --- exact serialized sizes of IR attrs -------------------------------------------------
# Computed from the wire format (format.md §8.1) instead of building an AttrValue per attr:
# lint runs over every attr of graphs with tens of thousands of nodes. Each function
# mirrors what conversion._attr_to_proto / encoding.tensor.array_tensor_bytes write, byte for
# byte (tests/test_graph_lint.py compares them with AttrValue.ByteSize()).


def _vlen(n: int) -> int:
    """Bytes of ``n`` as a varint (negative int64 values take 10)."""
    if n < 0:
        return 10
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def _field(n: int) -> int:
    """A length-delimited field of ``n`` payload bytes (every field number here is < 16)."""
    return 1 + _vlen(n) + n


def _shape_payload(dims: Iterable[int | None] | None) -> int:
    if dims is None:
        return 2  # unknown_rank = true
    total = 0
    for d in dims:
        d = -1 if d is None else d
        total += _field(1 + _vlen(d) if d else 0)  # Dim.size 0 is not written
    return total


def _fields(payloads: Iterable[int | None]) -> int | None:
    """Size of one length-delimited field per payload size; None if any size is unknown."""
    total = 0
    for n in payloads:
        if n is None:
            return None
        total += _field(n)
    return total


def _utf8_len(value: object) -> int | None:
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, str):
        try:
            return len(value.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate: the conversion reports it
            return None
    return None


def _tensor_payload(arr: Any) -> int | None:
    """Size of the TensorProto ``array_tensor_bytes`` writes for ``arr``."""
    from summarylib.encoding._tensor import _NUMERIC

    shape = _field(_shape_payload(arr.shape))
    if arr.dtype.kind in "OSU":
        strings = _fields(_utf8_len(v) for v in arr.reshape(-1))
        return None if strings is None else 2 + shape + strings  # dtype = DT_STRING
    entry = _NUMERIC.get(arr.dtype.name)
    if entry is None:
        return None
    nbytes = int(arr.size) * arr.dtype.itemsize
    return 1 + _vlen(entry[0]) + shape + (_field(nbytes) if nbytes else 0)


def _list_payload(values: list[Any] | tuple[Any, ...]) -> int | None:
    from summarylib.graph.conversion import _list_kind, _plain

    if not values:
        return 0
    items: list[Any] = [_plain(v) for v in values]
    try:
        kinds = {_list_kind(v) for v in items}
    except TypeError:
        return None
    if kinds == {"i", "f"}:
        kinds = {"f"}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind == "s":
        return _fields(_utf8_len(v) for v in items)
    if kind == "shape":
        return _fields(_shape_payload(v.shape) for v in items)
    if kind == "tensor":
        return _fields(_tensor_payload(v) for v in items)
    # Packed scalars: one field holding every value.
    if kind == "f":
        packed = 4 * len(items)
    elif kind == "b":
        packed = len(items)
    elif kind == "type":
        packed = sum(_vlen(data_type(v.name)) for v in items)
    else:  # "i"
        if any(not -(1 << 63) <= v < (1 << 63) for v in items):
            return None
        packed = sum(_vlen(v) for v in items)
    return _field(packed)


def attr_size(value: object) -> int:
    """The serialized size of ``value`` as an ``AttrValue``, in bytes (exact).

    0 for values the conversion rejects (it raises, naming the node, when the graph is
    written), so lint does not report them twice.
    """
    if isinstance(value, (str, bytes, bytearray)):
        n = _utf8_len(value)
        return 0 if n is None else _field(n)
    if isinstance(value, bool):
        return 2
    if isinstance(value, int):
        return 1 + _vlen(value) if -(1 << 63) <= value < (1 << 63) else 0
    if isinstance(value, float):
        return 5
    if isinstance(value, DType):
        return 1 + _vlen(data_type(value.name))
    if isinstance(value, TensorSpec):
        return _field(_shape_payload(value.shape))
    if isinstance(value, (list, tuple)):
        n = _list_payload(value)
        return 0 if n is None else _field(n)
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            t = _tensor_payload(value)
            return 0 if t is None else _field(t)
        if isinstance(value, np.generic):
            return attr_size(value.item())
    return 0


def _proto_view(nd: Any) -> _View:
    n_out: int | None = None
    sizes: dict[str, int] = {}
    for key, av in nd.attr.items():
        if key == "_output_shapes":
            n_out = len(av.list.shape)
        else:
            sizes[key] = av.ByteSize()
    return _View(nd.name, nd.op, list(nd.input), nd.device, n_out, [], sizes)


def _views(g: object) -> list[_View]:
    if isinstance(g, Graph):
        return [_ir_view(n) for n in g.nodes]
    if isinstance(g, (bytes, bytearray, memoryview)):
        from summarylib.proto import graph_pb2

        msg = graph_pb2.GraphDef()
        msg.ParseFromString(bytes(g))
        g = msg
    if hasattr(g, "node"):
        return [_proto_view(nd) for nd in g.node]
    raise TypeError(f"check: expected a Graph or a GraphDef, got {type(g).__name__}")


def check(
    g: object, *, attr_limit: int = ATTR_LIMIT, max_children: int = MAX_CHILDREN
) -> list[Issue]:
    """Lint ``g``; issues come sorted by severity (errors first), then in node order."""
    views = _views(g)
    issues: list[Issue] = []
    add = issues.append
    counts = Counter(v.name for v in views)
    for name, n in counts.items():
        if n > 1:
            add(
                Issue(
                    "duplicate-name",
                    "error",
                    name,
                    f"{n} nodes share this name; "
                    "the dashboard keeps one and loses the others' edges",
                )
            )
    by_name = {v.name: v for v in views}
    scopes: set[str] = set()
    children: dict[str, set[str]] = {}
    edges = 0
    no_device: list[str] = []
    for v in views:
        _check_name(v, add)
        parts = v.name.split("/")
        for i in range(1, len(parts)):
            scope = "/".join(parts[:i])
            scopes.add(scope)
            children.setdefault("/".join(parts[: i - 1]), set()).add(scope)
        children.setdefault(v.name.rpartition("/")[0], set()).add(v.name)
        seen_control = False
        for inp in v.inputs:
            control = inp.startswith("^")
            src, slot = (inp[1:], 0) if control else split_input(inp)
            if control:
                seen_control = True
            elif seen_control:
                add(
                    Issue(
                        "control-before-data",
                        "error",
                        v.name,
                        f"data input {inp!r} comes after a control input; "
                        "TensorFlow requires control inputs last",
                    )
                )
                seen_control = False  # report once per run of misordered inputs
            edges += 1
            target = by_name.get(src)
            if target is None:
                add(
                    Issue(
                        "dangling-input",
                        "error",
                        v.name,
                        f"input {inp!r} names no node; the dashboard drops this edge",
                    )
                )
            elif not control and target.n_outputs is not None and slot >= target.n_outputs:
                add(
                    Issue(
                        "bad-output-slot",
                        "warning",
                        v.name,
                        f"input {inp!r} uses output {slot}, but {src!r} declares "
                        f"{target.n_outputs} output(s); the edge has no shape label",
                    )
                )
        if v.n_outputs is None and "Const" not in v.op and v.op != "NoOp":
            add(
                Issue(
                    "missing-shapes",
                    "warning",
                    v.name,
                    f"{v.op} node has no output shapes (_output_shapes); "
                    "its edges get no shape labels",
                )
            )
        for d in v.dtypes:
            if d is not None and not data_type(d):
                add(
                    Issue(
                        "unknown-dtype",
                        "warning",
                        v.name,
                        f"output dtype {d!r} has no TensorFlow DataType; written as DT_INVALID",
                    )
                )
                break
        for key, size in v.attr_sizes.items():
            if size > attr_limit:
                add(
                    Issue(
                        "large-attr",
                        "warning",
                        v.name,
                        f"attr {key!r} is {size} bytes (> {attr_limit}); the dashboard "
                        "sends it to the browser in full",
                    )
                )
        if "Const" in v.op and v.op != "Const":
            add(
                Issue(
                    "const-lookalike",
                    "info",
                    v.name,
                    f"op {v.op!r} contains 'Const', so the dashboard draws it as a constant "
                    "icon inside its consumer",
                )
            )
        if not v.device:
            no_device.append(v.name)
    if no_device:
        add(
            Issue(
                "no-device",
                "info",
                no_device[0],
                f"{len(no_device)} node(s) have no device, this one first; 'Color by TPU "
                "compatibility' shows non-TF ops without a device as incompatible",
            )
        )
    _check_view(g, max_children, add)
    if len(views) > _COLOUR_CUTOFF and edges > _COLOUR_CUTOFF:
        add(
            Issue(
                "structure-colour",
                "info",
                "<root>",
                f"{len(views)} nodes and {edges} edges: 'Color by structure' is off by default",
            )
        )
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(issues, key=lambda i: order[i.severity])


def _check_view(g: object, max_children: int, add: Any) -> None:
    """The issues that depend on the dashboard's hierarchy, from the offline view."""
    from summarylib.graph.view import TENSORBOARD, build_view
    from summarylib.graph.view.model import GroupNode

    try:
        tb = build_view(g, TENSORBOARD)
    except ValueError:
        return  # not a graph the view can read; the checks above said what is wrong
    for original, shown in tb.renamed.items():
        add(Issue("name-is-scope", "warning", original,
                  f"{original!r} is a node and a scope; the dashboard shows the node as "
                  f"{shown}"))
    groups = [n for n in tb.nodes.values() if isinstance(n, GroupNode)]
    for grp in groups:
        if grp.kind == "series":
            first, last = grp.children[0], grp.children[-1]
            add(Issue("series", "info", grp.name,
                      f"{len(grp.children)} {grp.series_op} ops ({first} ... {last}) are shown "
                      f"as one stacked node {grp.name.rpartition('/')[2]}"))
            continue
        extracted = grp.side_panel["in"] + grp.side_panel["out"]
        if extracted:
            shown = ", ".join(n.rpartition("/")[2] for n in extracted[:5])
            more = f" and {len(extracted) - 5} more" if len(extracted) > 5 else ""
            add(Issue("side-panel", "info", grp.name or "<root>",
                      f"{len(extracted)} node(s) drawn in the side panel, their edges as "
                      f"icons: {shown}{more}"))
        main = len(grp.children) - len(extracted)
        if main > max_children:
            add(Issue("wide-group", "warning", grp.name or "<root>",
                      f"{main} nodes in its main graph, {len(grp.children)} direct children "
                      f"(> {max_children}); layout of this group will be slow, add name "
                      "scopes"))
    _check_templates(g, tb, add)


def _check_templates(g: object, tb: Any, add: Any) -> None:
    # TensorBoard gives groups of one structure one colour, but it checks a group before
    # the groups inside it have a template, so repeated groups that hold groups never
    # match (graph-pipeline.md §1.7). The view finds templates both ways; a template of
    # ours whose members the dashboard splits is what users see as "not repeated".
    from summarylib.graph.view import TENSORBOARD, build_view

    if not any(len(m) > 1 for m in _repeated_candidates(tb)):
        return
    ours = build_view(g, TENSORBOARD.with_overrides(template_order="height"))
    for members in ours.templates.values():
        theirs = {tb.nodes[m].template for m in members if m in tb.nodes}
        if len(theirs) == 1 and None not in theirs:
            continue  # the dashboard colours them alike too
        members = sorted(members)
        first = ours.nodes[members[0]]
        nested = [c.rpartition("/")[2] for c in first.children  # type: ignore[union-attr]
                  if getattr(ours.nodes.get(c), "kind", "op") != "op"]
        shown = ", ".join(members[:4]) + (" ..." if len(members) > 4 else "")
        add(Issue("nested-template", "warning", members[0],
                  f"{len(members)} groups have one structure ({shown}) but hold groups of "
                  f"their own ({', '.join(nested[:3])}): the dashboard colours each "
                  "differently; groups of plain ops share one colour"))


def _repeated_candidates(tb: Any) -> list[list[str]]:
    # Groups of depth >= 2 with the same (depth, children, op histogram): the only ones
    # whose template the dashboard can miss. Saves the second build for most graphs.
    from summarylib.graph.view.model import GroupNode

    buckets: dict[tuple[object, ...], list[str]] = {}
    for n in tb.nodes.values():
        if isinstance(n, GroupNode) and n.kind == "meta" and n.name and n.depth >= 2:
            key = (n.depth, len(n.children), tuple(sorted(n.op_histogram.items())))
            buckets.setdefault(key, []).append(n.name)
    return list(buckets.values())


def _check_name(v: _View, add: Any) -> None:
    name = v.name
    if _GOOD_NAME.match(name):  # the common case, in one regex match
        return
    if not name or name.startswith("/") or "//" in name or name.endswith("/"):
        why = "empty, leading '/', trailing '/' or '//' in a name makes an empty-named group"
    elif ":" in name:
        why = (f"':' in a name: the dashboard reads {name!r} as output "
               f"{name.rpartition(':')[2]!r} of {name.rpartition(':')[0]!r}, so edges to "
               "this node break")
    elif not NAME_RULE.match(name):
        bad = sorted(set(_FORBIDDEN.findall(name)))
        what = f"holds {', '.join(repr(c) for c in bad)}" if bad else f"starts with {name[0]!r}"
        why = (f"the name {what}, which TensorFlow's node-name rule "
               "[A-Za-z0-9.][A-Za-z0-9_./>-]* forbids; TensorFlow rejects the GraphDef")
    else:
        return
    add(Issue("bad-name", "error", name or "<empty>", why))


def errors(issues: Iterable[Issue]) -> list[Issue]:
    """The issues of severity ``error``."""
    return [i for i in issues if i.severity == "error"]
