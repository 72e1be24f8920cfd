"""A framework-neutral dataflow graph, convertible to and from TensorFlow's ``GraphDef``.

Data contract (what TensorBoard's graph dashboard reads, graph-pipeline.md §2.2):

* ``Node.name`` is the full ``/``-scoped path (``layer1/0/conv1/Conv2D``) and is unique in
  its :class:`Graph` (``Graph.add`` raises on a duplicate). Scopes become the dashboard's
  nested groups.
* ``Node.inputs`` are data inputs ``"src"`` (output 0) or ``"src:k"`` (output k);
  ``Node.control_inputs`` are plain node names. In the GraphDef the control inputs become
  ``"^src"`` and are listed after the data inputs, as TensorFlow requires.
* ``Node.outputs`` holds one :class:`TensorSpec` per output slot, in slot order. It becomes
  the ``_output_shapes`` attr (edge labels and thickness). Output dtypes travel as attr
  ``T`` when every output has the same known dtype and the node has neither ``T`` nor
  ``dtype`` attrs, and as ``_output_types`` (a list of ``DataType``) when they differ.
  Reading a GraphDef reverses this (``T``, or a ``dtype`` attr, fills the dtypes).
* ``Node.attrs`` maps names to plain Python values: ``str``/``bytes`` (``s``), ``bool``
  (``b``), ``int`` (``i``, int64 range), ``float`` (``f``, stored as float32 and read back
  as the shortest decimal of that float32, so ``1e-5`` stays ``1e-05``),
  :class:`DType` (``type``), :class:`TensorSpec` (``shape``; its dtype is not stored), a
  small numpy array
  (``tensor``), or a homogeneous ``list``/``tuple`` of one of those. Reading back, ``s``
  comes back as ``str`` when it is valid UTF-8 and as ``bytes`` otherwise; lists come back
  as lists.
* Dtypes are numpy-style names (``"float32"``, ``"int64"``, ``"bool"``, ``"string"``...);
  an unknown name is written as ``DT_INVALID`` and reported by :func:`summarylib.graph.lint.check`.

``GraphDef.library`` (function definitions) is not represented. Protobuf and numpy are
imported only by the conversion functions.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from summarylib.proto import attr_value_pb2, graph_pb2, tensor_shape_pb2

__all__ = [
    "GRAPH_DEF_PRODUCER",
    "DType",
    "Graph",
    "Node",
    "TensorSpec",
    "dtype_enum",
    "dtype_name",
    "split_input",
]

# VersionDef.producer written into every GraphDef. TensorBoard only compares
# producers when it merges several graphs of one tag (they must be equal); no
# reader checks the value. 22 is what torch.utils.tensorboard writes, so graphs
# from both libraries can share a tag.
GRAPH_DEF_PRODUCER = 22

# numpy-style dtype name <-> TensorFlow DataType (types.proto).
_DTYPES: dict[str, int] = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "string": 7,
    "complex64": 8,
    "int64": 9,
    "bool": 10,
    "qint8": 11,
    "quint8": 12,
    "qint32": 13,
    "bfloat16": 14,
    "qint16": 15,
    "quint16": 16,
    "uint16": 17,
    "complex128": 18,
    "float16": 19,
    "resource": 20,
    "variant": 21,
    "uint32": 22,
    "uint64": 23,
    "float8_e5m2": 24,
    "float8_e4m3fn": 25,
    "int4": 29,
    "uint4": 30,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_ALIASES = {"str": "string", "bytes": "string", "object": "string", "half": "float16"}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_F32 = struct.Struct("<f")


def dtype_enum(name: str | None) -> int:
    """The TF ``DataType`` number for a numpy-style dtype name; 0 (``DT_INVALID``) if unknown."""
    if name is None:
        return 0
    return _DTYPES.get(_ALIASES.get(name, name), 0)


def dtype_name(enum: int) -> str | None:
    """The numpy-style name of a TF ``DataType`` number, None for DT_INVALID/unknown."""
    return _DTYPE_NAMES.get(enum)


def f32_shortest(value: float) -> float:
    """The shortest decimal that is the same float32 as ``value`` (1e-05, not 9.99999974e-06).

    Float attrs are stored as float32; reading them back this way returns what the user
    wrote whenever it had at most 9 significant digits.
    """
    if value != value or value in (float("inf"), float("-inf")):
        return value
    want = _F32.pack(value)
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        try:
            if _F32.pack(short) == want:
                return short
        except OverflowError:  # rounded past float32's largest value
            continue
    return value


def split_input(inp: str) -> tuple[str, int]:
    """``"a/b:2"`` -> ``("a/b", 2)``; ``"a/b"`` -> ``("a/b", 0)``; a leading ``^`` is kept."""
    name, sep, slot = inp.rpartition(":")
    if sep and slot.isdigit():
        return name, int(slot)
    return inp, 0


@dataclass(frozen=True)
class TensorSpec:
    """Static shape and dtype of one tensor.

    ``shape`` None means unknown rank; a None dimension means unknown size (written as -1).
    ``()`` is a scalar. ``dtype`` is a numpy-style name or None (unknown).
    """

    shape: tuple[int | None, ...] | None
    dtype: str | None = None

    def __post_init__(self) -> None:
        # Accept lists (and numpy ints) from adapters, but store a hashable tuple.
        if self.shape is not None and not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(self.shape))
        if self.shape is not None and any(d is not None and type(d) is not int for d in self.shape):
            dims = tuple(None if d is None else int(d) for d in self.shape)
            object.__setattr__(self, "shape", dims)


@dataclass(frozen=True)
class DType:
    """An attr value that is a dtype (GraphDef ``AttrValue.type``), e.g. ``DType("float32")``."""

    name: str


@dataclass(eq=False)
class Node:
    """One op of the graph; see the module docstring for the meaning of each field.

    Nodes compare equal when every field is equal (numpy attrs by dtype and content).
    """

    name: str
    op: str
    inputs: list[str] = field(default_factory=list)
    control_inputs: list[str] = field(default_factory=list)
    attrs: dict[str, object] = field(default_factory=dict)
    outputs: list[TensorSpec] = field(default_factory=list)
    device: str = ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and _node_equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def output(self, k: int = 0) -> str:
        """The input string that refers to output ``k`` of this node (``name`` or ``name:k``)."""
        return self.name if k == 0 else f"{self.name}:{k}"


class Graph:
    """An ordered collection of uniquely named :class:`Node` objects.

    ``nodes`` is the list in insertion order (the GraphDef order). Use :meth:`add` to
    insert: it rejects duplicate names. ``g["a/b"]`` looks a node up by name. Appending to or
    deleting from ``nodes`` directly is noticed; after renaming nodes in place call
    :meth:`reindex` (``in`` and :meth:`add` use the index as it stands).
    """

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self.nodes: list[Node] = []
        self._index: dict[str, Node] = {}
        for node in nodes:
            self.add(node)

    def add(self, node: Node) -> Node:
        """Append ``node``; ValueError if a node of that name is already in the graph."""
        if not isinstance(node, Node):
            raise TypeError(f"Graph.add: expected a Node, got {type(node).__name__}")
        if node.name in self:
            raise ValueError(f"Graph.add: a node named {node.name!r} is already in the graph")
        self.nodes.append(node)
        self._index[node.name] = node
        return node

    def reindex(self) -> None:
        """Rebuild the name index after editing ``nodes`` or node names directly."""
        self._index = {}
        for node in self.nodes:
            self._index.setdefault(node.name, node)

    def _lookup(self) -> dict[str, Node]:
        # ``nodes`` is a public list: appends and deletions made directly are noticed here.
        if len(self._index) != len(self.nodes):
            self.reindex()
        return self._index

    def __contains__(self, name: object) -> bool:
        node = self._lookup().get(name) if isinstance(name, str) else None
        return node is not None and node.name == name

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, name: str) -> Node:
        node = self._lookup().get(name)
        if node is None or node.name != name:  # maybe renamed in place: look again
            self.reindex()
            node = self._index.get(name)
        if node is None:
            raise KeyError(name)
        return node

    def __repr__(self) -> str:
        return f"Graph({len(self.nodes)} nodes)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and _nodes_equal(self.nodes, other.nodes)

    __hash__ = None  # type: ignore[assignment]

    def to_graph_def(self) -> graph_pb2.GraphDef:
        """This graph as a ``GraphDef`` message (``versions.producer`` = GRAPH_DEF_PRODUCER)."""
        from summarylib.proto import graph_pb2

        gd = graph_pb2.GraphDef()
        gd.versions.producer = GRAPH_DEF_PRODUCER
        for node in self.nodes:
            _node_to_proto(node, gd.node.add())
        return gd

    def to_bytes(self) -> bytes:
        """The serialized ``GraphDef``: the message :meth:`to_graph_def` builds, encoded
        without building it (see :func:`_graph_def_bytes`)."""
        return _graph_def_bytes(self.nodes)

    @classmethod
    def from_graph_def(cls, gd: Any) -> Graph:
        """Read a ``GraphDef`` message (ours or TensorBoard's/TensorFlow's) or its bytes.

        Duplicate node names raise ValueError (use ``lint.check`` on the GraphDef to list
        them instead).
        """
        if isinstance(gd, (bytes, bytearray, memoryview)):
            from summarylib.proto import graph_pb2

            msg = graph_pb2.GraphDef()
            msg.ParseFromString(bytes(gd))
            gd = msg
        return cls(_node_from_proto(nd) for nd in gd.node)


def _nodes_equal(a: list[Node], b: list[Node]) -> bool:
    if len(a) != len(b):
        return False
    return all(_node_equal(x, y) for x, y in zip(a, b, strict=True))


def _node_equal(x: Node, y: Node) -> bool:
    if (x.name, x.op, x.inputs, x.control_inputs, x.outputs, x.device) != (
        y.name,
        y.op,
        y.inputs,
        y.control_inputs,
        y.outputs,
        y.device,
    ):
        return False
    if x.attrs.keys() != y.attrs.keys():
        return False
    return all(_attr_equal(x.attrs[k], y.attrs[k]) for k in x.attrs)


def _attr_equal(a: object, b: object) -> bool:
    # numpy arrays do not compare with ==; compare dtype, shape and content.
    if type(a).__module__ == "numpy" or type(b).__module__ == "numpy":
        import numpy as np

        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return (
                isinstance(a, np.ndarray)
                and isinstance(b, np.ndarray)
                and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
            )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_attr_equal(p, q) for p, q in zip(a, b, strict=True))
    return a == b


# --- IR -> protobuf ---------------------------------------------------------------------


def _shape_to_proto(spec: TensorSpec, msg: tensor_shape_pb2.TensorShapeProto) -> None:
    if spec.shape is None:
        msg.unknown_rank = True
        return
    for d in spec.shape:
        msg.dim.add().size = -1 if d is None else d


def _node_to_proto(node: Node, nd: Any) -> None:
    nd.name = node.name
    nd.op = node.op
    inputs = list(node.inputs)
    inputs.extend("^" + c for c in node.control_inputs)
    nd.input.extend(inputs)
    if node.device:
        nd.device = node.device
    attr = nd.attr
    for key, value in node.attrs.items():
        try:
            _attr_to_proto(value, attr[key])
        except (TypeError, ValueError) as e:
            raise type(e)(f"node {node.name!r}: attr {key!r}: {e}") from None
    if node.outputs:
        _outputs_to_proto(node.outputs, node.attrs.get("T", node.attrs.get("dtype")), attr)


def _outputs_to_proto(outputs: list[TensorSpec], declared: object, attr: Any) -> None:
    """``_output_shapes`` and the output dtypes (``T`` or ``_output_types``) into ``attr``.

    ``declared`` is the node's own ``T`` (else ``dtype``) attr, or None.
    """
    shapes = attr["_output_shapes"].list.shape
    for spec in outputs:
        _shape_to_proto(spec, shapes.add())
    dtypes = [spec.dtype for spec in outputs]
    if any(d is not None for d in dtypes):
        first = dtypes[0]
        uniform = first is not None and all(d == first for d in dtypes)
        if uniform and declared is None:
            attr["T"].type = dtype_enum(first)
        elif not (uniform and isinstance(declared, DType) and declared.name == first):
            attr["_output_types"].list.type.extend(dtype_enum(d) for d in dtypes)


# --- IR -> serialized GraphDef, without messages -----------------------------------------
# to_bytes() writes every graph the library records or writes. Building a NodeDef message
# per node and serializing it costs about 10 us per node; most of a node's bytes repeat
# across nodes (the device, the _output_shapes/T entries of a given output signature, a
# dtype or small int attr). Here each distinct piece is encoded once per call, with
# protobuf itself (so the bytes are what protobuf writes), and nodes are concatenated
# from the pieces; tests/test_graph_ir.py checks that the result parses to exactly the
# message to_graph_def() builds.

# Attr value types whose AttrValue bytes are cached by (type, value). float is left out:
# -0.0 == 0.0 would share an entry.
_CACHED_ATTR_TYPES = (str, bytes, bool, int, DType, TensorSpec)


def _graph_def_bytes(nodes: list[Node]) -> bytes:
    from summarylib.encoding.wire import varint
    from summarylib.proto import attr_value_pb2, graph_pb2, node_def_pb2

    new_attr = attr_value_pb2.AttrValue
    cache: dict[Any, bytes] = {}

    def _len_prefixed(tag: bytes, payload: bytes) -> bytes:
        return tag + varint(len(payload)) + payload

    def attr_bytes(value: object) -> bytes:
        t = type(value)
        # The commonest kinds directly (AttrValue: s = 2, i = 3, b = 5, type = 6): unique
        # strings (parameter targets) would gain nothing from a cache.
        if t is str:
            return _len_prefixed(b"\x12", value.encode("utf-8"))  # type: ignore[attr-defined]
        if t is bool:
            return b"\x28\x01" if value else b"\x28\x00"
        if t is int and _INT64_MIN <= value <= _INT64_MAX:  # type: ignore[operator]
            return b"\x18" + varint(value)  # type: ignore[arg-type]
        if t is DType:
            return b"\x30" + varint(dtype_enum(value.name))  # type: ignore[attr-defined]
        if t in _CACHED_ATTR_TYPES:
            ckey: Any = (t, value)
        elif t in (list, tuple) and all(
            type(v) in _CACHED_ATTR_TYPES for v in value  # type: ignore[attr-defined]
        ):
            ckey = ("list", tuple((type(v), v) for v in value))  # type: ignore[attr-defined]
        else:
            ckey = None
        if ckey is not None:
            b = cache.get(ckey)
            if b is not None:
                return b
        av = new_attr()
        _attr_to_proto(value, av)
        b = av.SerializeToString()
        if ckey is not None:
            cache[ckey] = b
        return b

    def outputs_bytes(outputs: list[TensorSpec], declared: object) -> bytes:
        kind = declared.name if isinstance(declared, DType) else declared is not None
        okey = ("outputs", tuple(outputs), kind)
        b = cache.get(okey)
        if b is None:
            nd = node_def_pb2.NodeDef()  # holding only these attrs: just their entries
            _outputs_to_proto(outputs, declared, nd.attr)
            b = cache[okey] = nd.SerializeToString()
        return b

    parts: list[bytes] = []
    for node in nodes:
        attrs = node.attrs
        if node.outputs and ("_output_shapes" in attrs or "_output_types" in attrs):
            # Those keys would be merged with the computed ones: let protobuf do it.
            nd = node_def_pb2.NodeDef()
            _node_to_proto(node, nd)
            parts.append(_len_prefixed(b"\x0a", nd.SerializeToString()))
            continue
        # NodeDef: name = 1, op = 2, input = 3, device = 4, attr = 5 (map entries).
        out = [_len_prefixed(b"\x0a", node.name.encode("utf-8"))] if node.name else []
        if node.op:
            out.append(_len_prefixed(b"\x12", node.op.encode("utf-8")))
        out.extend(_len_prefixed(b"\x1a", i.encode("utf-8")) for i in node.inputs)
        out.extend(_len_prefixed(b"\x1a", b"^" + c.encode("utf-8"))
                   for c in node.control_inputs)
        if node.device:
            dkey = ("device", node.device)
            d = cache.get(dkey)
            if d is None:
                d = cache[dkey] = _len_prefixed(b"\x22", node.device.encode("utf-8"))
            out.append(d)
        for key, value in attrs.items():
            try:
                vb = attr_bytes(value)
            except (TypeError, ValueError) as e:
                raise type(e)(f"node {node.name!r}: attr {key!r}: {e}") from None
            # Map entry: key = 1, value = 2.
            entry = _len_prefixed(b"\x0a", key.encode("utf-8")) + _len_prefixed(b"\x12", vb)
            out.append(_len_prefixed(b"\x2a", entry))
        if node.outputs:
            out.append(outputs_bytes(node.outputs, attrs.get("T", attrs.get("dtype"))))
        body = b"".join(out)
        parts.append(b"\x0a" + varint(len(body)) + body)
    versions = graph_pb2.GraphDef()
    versions.versions.producer = GRAPH_DEF_PRODUCER
    parts.append(versions.SerializeToString())  # GraphDef.versions = 4, after the nodes
    return b"".join(parts)


# ``av`` is an AttrValue; typed Any because the stubs type enum fields as DataType, not int.
def _attr_to_proto(value: object, av: Any) -> None:
    if isinstance(value, str):
        av.s = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray)):
        av.s = bytes(value)
    elif isinstance(value, bool):
        av.b = value
    elif isinstance(value, int):
        av.i = _check_int(value)
    elif isinstance(value, float):
        av.f = value
    elif isinstance(value, DType):
        av.type = dtype_enum(value.name)
    elif isinstance(value, TensorSpec):
        av.shape.SetInParent()  # a scalar shape has no fields but must still be set
        _shape_to_proto(value, av.shape)
    elif isinstance(value, (list, tuple)):
        _list_to_proto(value, av)
    elif type(value).__module__ == "numpy":
        _numpy_to_proto(value, av)
    else:
        raise TypeError(f"unsupported attr value type {type(value).__name__}")


def _check_int(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"int {value} is outside the int64 range")
    return value


def _numpy_to_proto(value: Any, av: attr_value_pb2.AttrValue) -> None:
    import numpy as np

    from summarylib.encoding.tensor import array_tensor_bytes

    if isinstance(value, np.ndarray):
        av.tensor.ParseFromString(array_tensor_bytes(value, "to_graph_def", "attr"))
    elif isinstance(value, np.generic):
        _attr_to_proto(value.item(), av)
    else:
        raise TypeError(f"unsupported attr value type {type(value).__name__}")


def _list_to_proto(values: list[Any] | tuple[Any, ...], av: Any) -> None:
    lv = av.list
    av.list.SetInParent()  # an empty list is still a list
    if not values:
        return
    items: list[Any] = [_plain(v) for v in values]
    kinds = {_list_kind(v) for v in items}
    if kinds == {"i", "f"}:
        kinds = {"f"}
    if len(kinds) != 1:
        names = sorted({type(v).__name__ for v in values})
        raise TypeError(f"a list attr must hold values of one kind, got {', '.join(names)}")
    kind = kinds.pop()
    if kind == "s":
        lv.s.extend(v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in items)
    elif kind == "b":
        lv.b.extend(items)
    elif kind == "i":
        lv.i.extend(_check_int(v) for v in items)
    elif kind == "f":
        lv.f.extend(float(v) for v in items)
    elif kind == "type":
        lv.type.extend(dtype_enum(v.name) for v in items)
    elif kind == "shape":
        for v in items:
            _shape_to_proto(v, lv.shape.add())
    else:  # tensor
        from summarylib.encoding.tensor import array_tensor_bytes

        for v in items:
            lv.tensor.add().ParseFromString(array_tensor_bytes(v, "to_graph_def", "attr"))


def _plain(v: object) -> object:
    """numpy scalars -> Python scalars; everything else unchanged."""
    if type(v).__module__ == "numpy":
        import numpy as np

        if isinstance(v, np.generic):
            return v.item()
    return v


def _list_kind(v: object) -> str:
    if isinstance(v, (str, bytes, bytearray)):
        return "s"
    if isinstance(v, bool):
        return "b"
    if isinstance(v, int):
        return "i"
    if isinstance(v, float):
        return "f"
    if isinstance(v, DType):
        return "type"
    if isinstance(v, TensorSpec):
        return "shape"
    if type(v).__module__ == "numpy" and hasattr(v, "shape"):
        return "tensor"
    raise TypeError(f"unsupported list attr element type {type(v).__name__}")


# --- protobuf -> IR ---------------------------------------------------------------------


def _shape_from_proto(msg: Any) -> TensorSpec:
    if msg.unknown_rank:
        return TensorSpec(None)
    return TensorSpec(tuple(None if d.size < 0 else d.size for d in msg.dim))


def _bytes_value(b: bytes) -> str | bytes:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _attr_from_proto(av: Any) -> object:
    kind = av.WhichOneof("value")
    if kind == "s":
        return _bytes_value(av.s)
    if kind == "f":
        return f32_shortest(av.f)
    if kind in ("i", "b"):
        return getattr(av, kind)
    if kind == "type":
        return DType(dtype_name(av.type) or f"DT_{av.type}")
    if kind == "shape":
        return _shape_from_proto(av.shape)
    if kind == "tensor":
        from summarylib.encoding.tensor import make_ndarray

        return make_ndarray(av.tensor)
    if kind == "placeholder":
        return av.placeholder
    if kind == "func":
        return av.func.name
    if kind is None:
        return []
    lv = av.list
    if lv.s:
        return [_bytes_value(s) for s in lv.s]
    if lv.i:
        return list(lv.i)
    if lv.f:
        return [f32_shortest(f) for f in lv.f]
    if lv.b:
        return list(lv.b)
    if lv.type:
        return [DType(dtype_name(t) or f"DT_{t}") for t in lv.type]
    if lv.shape:
        return [_shape_from_proto(s) for s in lv.shape]
    if lv.tensor:
        from summarylib.encoding.tensor import make_ndarray

        return [make_ndarray(t) for t in lv.tensor]
    if lv.func:
        return [f.name for f in lv.func]
    return []


def _node_from_proto(nd: Any) -> Node:
    data: list[str] = []
    control: list[str] = []
    for inp in nd.input:
        if inp.startswith("^"):
            control.append(inp[1:])
        else:
            data.append(inp)
    attrs: dict[str, object] = {}
    shapes: list[TensorSpec] | None = None
    types: list[int] | None = None
    for key, av in nd.attr.items():
        if key == "_output_shapes" and av.WhichOneof("value") == "list":
            shapes = [_shape_from_proto(s) for s in av.list.shape]
        elif key == "_output_types" and av.WhichOneof("value") == "list":
            types = list(av.list.type)
        else:
            attrs[key] = _attr_from_proto(av)
    outputs: list[TensorSpec] = []
    if shapes is not None:
        if types is not None and len(types) == len(shapes):
            outputs = [
                TensorSpec(s.shape, dtype_name(t)) for s, t in zip(shapes, types, strict=True)
            ]
        else:
            if types is not None:  # inconsistent: keep it visible rather than drop it
                attrs["_output_types"] = [DType(dtype_name(t) or f"DT_{t}") for t in types]
            t_attr = attrs.get("T")
            declared = t_attr if isinstance(t_attr, DType) else attrs.get("dtype")
            name = declared.name if isinstance(declared, DType) else None
            if name is not None and dtype_enum(name) == 0:
                name = None
            if name is not None and isinstance(t_attr, DType):
                del attrs["T"]  # to_graph_def writes it again from the output dtypes
            outputs = [TensorSpec(s.shape, name) for s in shapes]
    elif types is not None:
        attrs["_output_types"] = [DType(dtype_name(t) or f"DT_{t}") for t in types]
    # Keep attrs in sorted order: protobuf maps have no order of their own.
    return Node(
        name=nd.name,
        op=nd.op,
        inputs=data,
        control_inputs=control,
        attrs=dict(sorted(attrs.items())),
        outputs=outputs,
        device=nd.device,
    )
