"""ONNX models for TensorBoard's graph dashboard, read without the ``onnx`` package.

:func:`onnx_graph_def` turns an ONNX ``ModelProto`` (a ``.onnx`` file, its bytes, or an
``onnx.ModelProto``) into the ``GraphDef`` that torch's ``add_onnx_graph`` writes: one
``Variable`` node per graph input and output (attributes ``dtype`` and ``shape``) and one
node per ONNX node, named after its first output, with the ONNX op type as its op, its
inputs as edges and its attributes as one ``parameters`` string.

The model is parsed with protobuf alone, through a message schema holding only the fields
read here (field numbers as in ``onnx.proto``); every other field is skipped unread, so
weights stored in the file cost parsing time but no objects. ``onnx`` itself is never
imported.

Where torch's output is wrong, this differs on purpose:
  * ``dtype`` is TensorFlow's code for the ONNX element type (torch writes ONNX's code as
    if it were TensorFlow's, so int64 shows as a string);
  * a symbolic dimension (``batch``) is -1, unknown, not 0;
  * a node's second and later outputs are ``name:k`` edges, as TensorFlow names them,
    so nodes that consume them are connected;
  * a graph output that a node produces is that node (torch adds a second node of the
    same name), and empty (omitted optional) inputs are left out;
  * ``parameters`` reads ``name = value`` per attribute (torch prints every set field,
    type codes included).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["onnx_graph_def"]

# ONNX TensorProto.DataType -> TensorFlow DataType, for the element types both have.
_TF_DTYPES = {1: 1, 2: 4, 3: 6, 4: 17, 5: 5, 6: 3, 7: 9, 8: 7, 9: 10, 10: 19, 11: 2,
              12: 22, 13: 23, 14: 8, 15: 18, 16: 14}
# The subset of onnx.proto read here: (message, [(field, number, type, label, message)]).
# Types: 3 int64, 5 int32, 9 string, 12 bytes, 2 float, 11 message; labels 1 optional,
# 3 repeated.
_SCHEMA: list[tuple[str, list[tuple[str, int, int, int, str | None]]]] = [
    ("ModelProto", [("graph", 7, 11, 1, "GraphProto")]),
    ("GraphProto", [("node", 1, 11, 3, "NodeProto"), ("name", 2, 9, 1, None),
                    ("input", 11, 11, 3, "ValueInfoProto"),
                    ("output", 12, 11, 3, "ValueInfoProto")]),
    ("NodeProto", [("input", 1, 9, 3, None), ("output", 2, 9, 3, None),
                   ("name", 3, 9, 1, None), ("op_type", 4, 9, 1, None),
                   ("attribute", 5, 11, 3, "AttributeProto")]),
    ("AttributeProto", [("name", 1, 9, 1, None), ("f", 2, 2, 1, None), ("i", 3, 3, 1, None),
                        ("s", 4, 12, 1, None), ("t", 5, 11, 1, "TensorProto"),
                        ("g", 6, 11, 1, "GraphProto"), ("floats", 7, 2, 3, None),
                        ("ints", 8, 3, 3, None), ("strings", 9, 12, 3, None),
                        ("tensors", 10, 11, 3, "TensorProto"),
                        ("graphs", 11, 11, 3, "GraphProto"), ("type", 20, 5, 1, None)]),
    ("TensorProto", [("dims", 1, 3, 3, None), ("data_type", 2, 5, 1, None)]),
    ("ValueInfoProto", [("name", 1, 9, 1, None), ("type", 2, 11, 1, "TypeProto")]),
    ("TypeProto", [("tensor_type", 1, 11, 1, "TensorType")]),
    ("TensorType", [("elem_type", 1, 5, 1, None), ("shape", 2, 11, 1, "TensorShapeProto")]),
    ("TensorShapeProto", [("dim", 1, 11, 3, "Dimension")]),
    ("Dimension", [("dim_value", 1, 3, 1, None), ("dim_param", 2, 9, 1, None)]),
]
_model_class: Any = None


def _model_proto() -> Any:
    """The ModelProto class of the subset schema, built once."""
    global _model_class
    if _model_class is None:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        package = "summarylib_onnx_subset"
        fd = descriptor_pb2.FileDescriptorProto(name=package + ".proto", package=package,
                                                syntax="proto2")
        for name, fields in _SCHEMA:
            msg = fd.message_type.add(name=name)
            for field, number, ftype, label, type_name in fields:
                f = msg.field.add(name=field, number=number, type=ftype, label=label)
                if type_name is not None:
                    f.type_name = f".{package}.{type_name}"
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fd)
        _model_class = message_factory.GetMessageClass(
            pool.FindMessageTypeByName(package + ".ModelProto"))
    return _model_class


def _model_bytes(model: Any, where: str, arg: str) -> bytes:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise ValueError(f"{where}: cannot read the ONNX model {path!r}: {e}") from e
    serialize = getattr(model, "SerializeToString", None)
    if type(model).__name__ == "ModelProto" and callable(serialize):
        return bytes(serialize())
    raise TypeError(f"{where}: {arg!r} must be the path of an .onnx file, its bytes or an "
                    f"onnx.ModelProto, got {type(model).__name__}")


def _attribute_text(attr: Any) -> str:
    def number(x: float) -> str:
        return f"{x:g}"

    def tensor(t: Any) -> str:
        return f"tensor<{_dtype_name(t.data_type)}>{list(t.dims)}"

    kind = attr.type
    if kind == 1 or (kind == 0 and attr.HasField("f")):
        value = number(attr.f)
    elif kind == 2 or (kind == 0 and attr.HasField("i")):
        value = str(attr.i)
    elif kind == 3 or (kind == 0 and attr.HasField("s")):
        value = repr(attr.s.decode("utf-8", "replace"))
    elif kind == 4:
        value = tensor(attr.t)
    elif kind == 5:
        value = f"graph {attr.g.name!r}"
    elif kind == 6 or (kind == 0 and attr.floats):
        value = "[" + ", ".join(number(x) for x in attr.floats) + "]"
    elif kind == 7 or (kind == 0 and attr.ints):
        value = str(list(attr.ints))
    elif kind == 8 or (kind == 0 and attr.strings):
        value = str([s.decode("utf-8", "replace") for s in attr.strings])
    elif kind == 9:
        value = "[" + ", ".join(tensor(t) for t in attr.tensors) + "]"
    elif kind == 10:
        value = "[" + ", ".join(f"graph {g.name!r}" for g in attr.graphs) + "]"
    else:
        value = "?"  # sparse tensors, type protos: not shown
    return f"{attr.name} = {value}"


def _dtype_name(onnx_type: int) -> str:
    from summarylib.proto import types_pb2

    code = _TF_DTYPES.get(onnx_type, 0)
    return types_pb2.DataType.Name(code)[3:].lower() if code else f"onnx:{onnx_type}"


def onnx_graph_def(model: Any, where: str = "onnx_graph_def", arg: str = "model") -> bytes:
    """The serialized ``GraphDef`` of an ONNX model's main graph (see the module docstring).

    Args:
      model: the path of an ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
      where, arg: the function and argument that errors name.

    Raises:
      TypeError: ``model`` is none of those.
      ValueError: the file cannot be read, or is not an ONNX model with a graph.
    """
    from google.protobuf.message import DecodeError

    from summarylib.proto import attr_value_pb2, graph_pb2, tensor_shape_pb2

    data = _model_bytes(model, where, arg)
    try:
        parsed = _model_proto().FromString(data)
    except DecodeError as e:
        raise ValueError(f"{where}: not an ONNX model (protobuf parse failed: {e})") from e
    if not parsed.HasField("graph"):
        raise ValueError(f"{where}: not an ONNX model with a graph (no ModelProto.graph)")
    graph = parsed.graph
    out = graph_pb2.GraphDef()
    out.versions.producer = 22  # what torch's add_onnx_graph writes
    # Each value's edge: the producing node's name, ":k" for its k-th output (k >= 1).
    edge: dict[str, str] = {}
    names: list[str] = []
    for i, node in enumerate(graph.node):
        name = node.output[0] if node.output and node.output[0] else (
            node.name or f"{node.op_type}_{i}")
        names.append(name)
        for k, value in enumerate(node.output):
            if value:
                edge[value] = name if k == 0 else f"{name}:{k}"
    seen = set(names)
    for info in (*graph.input, *graph.output):
        if info.name in seen:
            continue  # an output some node produces is that node
        seen.add(info.name)
        tensor_type = info.type.tensor_type
        node = out.node.add(name=info.name, op="Variable")
        node.attr["dtype"].type = _TF_DTYPES.get(tensor_type.elem_type, 0)  # type: ignore[assignment]
        shape = tensor_shape_pb2.TensorShapeProto()
        for d in tensor_type.shape.dim:
            shape.dim.add(size=d.dim_value if d.HasField("dim_value") else -1)
        node.attr["shape"].shape.CopyFrom(shape)
    for name, node in zip(names, graph.node, strict=True):
        params = ", ".join(_attribute_text(a) for a in node.attribute)
        out.node.add(name=name, op=node.op_type,
                     input=[edge.get(v, v) for v in node.input if v],
                     attr={"parameters": attr_value_pb2.AttrValue(s=params.encode())})
    return out.SerializeToString()
