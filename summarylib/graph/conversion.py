"""IR <-> ``GraphDef``: the encoders and the decoder.

How the IR maps to ``GraphDef`` (what TensorBoard's graph dashboard reads) is the data
contract in :mod:`summarylib.graph.ir`'s docstring. :func:`graph_def_message` builds the
message node by node with protobuf; :func:`graph_def_bytes` writes the same message's bytes
from cached pieces (several times faster; every piece is encoded by protobuf, through the
message encoder's own per-node and per-attr builders). :func:`nodes_from_graph_def` reads
a ``GraphDef`` (ours or TensorFlow's) back. Dtype numbers come from
:data:`summarylib.encoding._tensor.DATA_TYPES`. Protobuf and numpy are imported on first use.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from summarylib.encoding._tensor import data_type, data_type_name
from summarylib.graph.elements import DType, Node, TensorSpec

if TYPE_CHECKING:
    from summarylib.proto import attr_value_pb2, graph_pb2, tensor_shape_pb2

__all__ = [
    "GRAPH_DEF_PRODUCER",
    "f32_shortest",
    "graph_def_bytes",
    "graph_def_message",
    "nodes_from_graph_def",
]

# VersionDef.producer written into every GraphDef. TensorBoard only compares
# producers when it merges several graphs of one tag (they must be equal); no
# reader checks the value. 22 is what torch.utils.tensorboard writes, so graphs
# from both libraries can share a tag.
GRAPH_DEF_PRODUCER = 22

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_F32 = struct.Struct("<f")


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


def graph_def_message(nodes: Iterable[Node]) -> graph_pb2.GraphDef:
    """The ``GraphDef`` message of ``nodes``, built node by node with protobuf.

    The reference encoder: :func:`graph_def_bytes` (the fast one, which every writer uses)
    must serialize to exactly this message, and falls back to its per-node builder.
    """
    from summarylib.proto import graph_pb2

    gd = graph_pb2.GraphDef()
    gd.versions.producer = GRAPH_DEF_PRODUCER
    for node in nodes:
        _node_to_proto(node, gd.node.add())
    return gd


def nodes_from_graph_def(gd: Any) -> Iterator[Node]:
    """The nodes of a ``GraphDef`` message (ours or TensorBoard's/TensorFlow's) or its
    bytes, in order."""
    if isinstance(gd, (bytes, bytearray, memoryview)):
        from summarylib.proto import graph_pb2

        msg = graph_pb2.GraphDef()
        msg.ParseFromString(bytes(gd))
        gd = msg
    return (_node_from_proto(nd) for nd in gd.node)


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
            attr["T"].type = data_type(first)
        elif not (uniform and isinstance(declared, DType) and declared.name == first):
            attr["_output_types"].list.type.extend(data_type(d) for d in dtypes)


# --- IR -> serialized GraphDef, without messages -----------------------------------------
# graph_def_bytes writes every graph the library records or writes. Building a NodeDef message
# per node and serializing it costs about 10 us per node; most of a node's bytes repeat
# across nodes (the device, the _output_shapes/T entries of a given output signature, a
# dtype or small int attr). Here each distinct piece is encoded once per call, with
# protobuf itself (so the bytes are what protobuf writes), and nodes are concatenated
# from the pieces; tests/test_graph_ir.py checks that the result parses to exactly the
# message graph_def_message builds.

# Attr value types whose AttrValue bytes are cached by (type, value). float is left out:
# -0.0 == 0.0 would share an entry.
_CACHED_ATTR_TYPES = (str, bytes, bool, int, DType, TensorSpec)


def graph_def_bytes(nodes: Iterable[Node]) -> bytes:
    """The serialized ``GraphDef`` of ``nodes`` (``versions.producer`` =
    :data:`GRAPH_DEF_PRODUCER`); TypeError/ValueError naming the node and attr for an attr
    value the contract does not allow."""
    from summarylib.encoding._wire import varint
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
            return b"\x30" + varint(data_type(value.name))  # type: ignore[attr-defined]
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
        av.type = data_type(value.name)
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

    from summarylib.encoding._tensor import array_tensor_bytes

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
        lv.type.extend(data_type(v.name) for v in items)
    elif kind == "shape":
        for v in items:
            _shape_to_proto(v, lv.shape.add())
    else:  # tensor
        from summarylib.encoding._tensor import array_tensor_bytes

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
        return DType(data_type_name(av.type) or f"DT_{av.type}")
    if kind == "shape":
        return _shape_from_proto(av.shape)
    if kind == "tensor":
        from summarylib.encoding._tensor import make_ndarray

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
        return [DType(data_type_name(t) or f"DT_{t}") for t in lv.type]
    if lv.shape:
        return [_shape_from_proto(s) for s in lv.shape]
    if lv.tensor:
        from summarylib.encoding._tensor import make_ndarray

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
                TensorSpec(s.shape, data_type_name(t)) for s, t in zip(shapes, types, strict=True)
            ]
        else:
            if types is not None:  # inconsistent: keep it visible rather than drop it
                attrs["_output_types"] = [DType(data_type_name(t) or f"DT_{t}") for t in types]
            t_attr = attrs.get("T")
            declared = t_attr if isinstance(t_attr, DType) else attrs.get("dtype")
            name = declared.name if isinstance(declared, DType) else None
            if name is not None and data_type(name) == 0:
                name = None
            if name is not None and isinstance(t_attr, DType):
                del attrs["T"]  # to_graph_def writes it again from the output dtypes
            outputs = [TensorSpec(s.shape, name) for s in shapes]
    elif types is not None:
        attrs["_output_types"] = [DType(data_type_name(t) or f"DT_{t}") for t in types]
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
