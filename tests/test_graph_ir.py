"""Graph IR: round trips with GraphDef, TensorBoard's protos as the reference, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import graph_pb2 as tb_graph_pb2
from tensorboard.compat.proto import types_pb2 as tb_types

from summarylib.graph import DType, Graph, Node, TensorSpec
from summarylib.graph.ir import (
    GRAPH_DEF_PRODUCER,
    dtype_enum,
    dtype_name,
    f32_shortest,
    split_input,
)

SEGMENT = st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,6}", fullmatch=True)
NAMES = st.lists(SEGMENT, min_size=1, max_size=3).map("/".join)
DTYPES = st.sampled_from(["float32", "float64", "int32", "int64", "bool", "uint8", "string"])
DIM = st.one_of(st.none(), st.integers(0, 2**40))
SHAPES = st.one_of(st.none(), st.lists(DIM, max_size=4).map(tuple))
SPECS = st.builds(TensorSpec, SHAPES, st.one_of(st.none(), DTYPES))
INT64 = st.integers(-(2**63), 2**63 - 1)
F32 = st.floats(width=32, allow_nan=False).map(f32_shortest)
NON_UTF8 = st.binary(min_size=1, max_size=20).filter(lambda b: not _utf8(b))
ARRAYS = st.sampled_from(
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array(3, dtype=np.int64),
        np.array([True, False]),
        np.zeros((0, 2), dtype=np.float64),
        np.array([1, 2, 3], dtype=np.uint8),
    ]
)
ATTR_VALUES = st.one_of(
    st.text(max_size=20),
    NON_UTF8,
    st.booleans(),
    INT64,
    F32,
    DTYPES.map(DType),
    SHAPES.map(TensorSpec),
    ARRAYS,
    st.lists(st.text(max_size=5), min_size=1, max_size=4),
    st.lists(INT64, min_size=1, max_size=4),
    st.lists(F32, min_size=1, max_size=4),
    st.lists(st.booleans(), min_size=1, max_size=4),
    st.lists(DTYPES.map(DType), min_size=1, max_size=3),
    st.lists(SHAPES.map(TensorSpec), min_size=1, max_size=3),
    st.just([]),
)
ATTR_KEYS = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True).filter(lambda k: k not in ("dtype",))


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    g = Graph()
    for name in names:
        refs = st.sampled_from(names)
        inputs = draw(
            st.lists(
                st.one_of(refs, st.tuples(refs, st.integers(1, 3)).map(lambda t: f"{t[0]}:{t[1]}")),
                max_size=3,
            )
        )
        g.add(
            Node(
                name=name,
                op=draw(st.sampled_from(["Conv2D", "Relu", "aten::add", "Const", "NoOp"])),
                inputs=inputs,
                control_inputs=draw(st.lists(refs, max_size=2)),
                attrs=draw(st.dictionaries(ATTR_KEYS, ATTR_VALUES, max_size=4)),
                outputs=draw(st.lists(SPECS, max_size=3)),
                device=draw(st.sampled_from(["", "/device:CPU:0", "/device:CUDA:1"])),
            )
        )
    return g


@settings(max_examples=150)
@given(graphs())
def test_ir_graphdef_ir_round_trip_is_identity(g: Graph) -> None:
    gd = g.to_graph_def()
    assert gd.versions.producer == GRAPH_DEF_PRODUCER
    assert Graph.from_graph_def(gd).nodes == g.nodes
    assert Graph.from_graph_def(gd.SerializeToString()).nodes == g.nodes


@settings(max_examples=100)
@given(graphs())
def test_graphdef_is_what_tensorboard_reads(g: Graph) -> None:
    tb = tb_graph_pb2.GraphDef.FromString(g.to_bytes())
    assert [n.name for n in tb.node] == [n.name for n in g]
    for nd, node in zip(tb.node, g, strict=True):
        assert nd.op == node.op and nd.device == node.device
        assert list(nd.input) == node.inputs + ["^" + c for c in node.control_inputs]
        if node.outputs:
            shapes = nd.attr["_output_shapes"].list.shape
            assert len(shapes) == len(node.outputs)
            for shp, spec in zip(shapes, node.outputs, strict=True):
                if spec.shape is None:
                    assert shp.unknown_rank and not shp.dim
                else:
                    assert [d.size for d in shp.dim] == [-1 if d is None else d for d in spec.shape]
        else:
            assert "_output_shapes" not in nd.attr


@settings(max_examples=100)
@given(graphs())
def test_graphdef_round_trip_is_stable(g: Graph) -> None:
    # GraphDef -> IR -> GraphDef gives the same message, even for attrs the IR normalises.
    gd = g.to_graph_def()
    assert Graph.from_graph_def(gd).to_graph_def() == gd


@settings(max_examples=150)
@given(graphs())
def test_to_bytes_is_the_to_graph_def_message(g: Graph) -> None:
    # to_bytes() encodes without building messages; it must parse to the same GraphDef.
    assert tb_graph_pb2.GraphDef.FromString(g.to_bytes()) == tb_graph_pb2.GraphDef.FromString(
        g.to_graph_def().SerializeToString()
    )


def test_to_bytes_edge_cases() -> None:
    f32 = TensorSpec((2,), "float32")
    nodes = [
        # Keys to_graph_def merges with the computed ones (protobuf's own merge is kept).
        Node("own_shapes", "X", attrs={"_output_shapes": [TensorSpec((9,))]}, outputs=[f32]),
        Node("own_types", "X", attrs={"_output_types": [DType("int8")]}, outputs=[f32]),
        # Cached pieces must not mix values that compare equal: -0.0/0.0, 1/True/1.0.
        Node("neg_zero", "X", attrs={"a": -0.0, "b": 0.0, "l": [-0.0], "m": [0.0]}),
        Node("one", "X", attrs={"i": 1, "b": True, "f": 1.0, "li": [1], "lb": [True]}),
        Node("declared", "X", attrs={"T": DType("float32")}, outputs=[f32]),
        Node("declared_other", "X", attrs={"dtype": DType("int32")}, outputs=[f32]),
        Node("non_dtype_declared", "X", attrs={"T": "float32"}, outputs=[f32]),
        Node("", "", inputs=[""], attrs={"": ""}, device=""),
        Node("\u00e9", "caf\u00e9", inputs=["x:1"], control_inputs=["\u00e8"],
             device="/device:CPU:0"),
        Node("arrays", "X", attrs={"t": np.arange(3, dtype=np.int16), "np": np.float32(2.5),
                                   "ls": [np.arange(2)]}),
    ]
    g = Graph(nodes)
    parsed = tb_graph_pb2.GraphDef.FromString(g.to_bytes())
    assert parsed == tb_graph_pb2.GraphDef.FromString(g.to_graph_def().SerializeToString())
    neg = parsed.node[2].attr
    assert str(neg["a"].f) == "-0.0" and str(neg["b"].f) == "0.0"
    assert str(neg["l"].list.f[0]) == "-0.0" and str(neg["m"].list.f[0]) == "0.0"
    one = parsed.node[3].attr
    assert one["i"].WhichOneof("value") == "i" and one["b"].WhichOneof("value") == "b"
    assert one["f"].WhichOneof("value") == "f"
    assert list(one["li"].list.i) == [1] and list(one["lb"].list.b) == [True]
    with pytest.raises(TypeError, match="node 'n': attr 'a': unsupported attr value type"):
        Graph([Node("n", "Op", attrs={"a": object()})]).to_bytes()


def test_output_dtypes_travel_as_T_or_output_types() -> None:
    f32 = TensorSpec((2,), "float32")
    g = Graph(
        [
            Node("uniform", "Relu", outputs=[f32, f32]),
            Node("mixed", "Unique", outputs=[f32, TensorSpec((2,), "int32")]),
            Node("partly", "X", outputs=[f32, TensorSpec((2,))]),
            Node("unknown", "X", outputs=[TensorSpec(None)]),
            Node("declared", "Const", attrs={"dtype": DType("float32")}, outputs=[f32]),
            Node("declared_other", "Cast", attrs={"T": DType("int32")}, outputs=[f32]),
        ]
    )
    gd = g.to_graph_def()
    attrs = {nd.name: nd.attr for nd in gd.node}
    assert attrs["uniform"]["T"].type == tb_types.DT_FLOAT
    assert "_output_types" not in attrs["uniform"]
    assert list(attrs["mixed"]["_output_types"].list.type) == [tb_types.DT_FLOAT, tb_types.DT_INT32]
    assert "T" not in attrs["mixed"]
    assert list(attrs["partly"]["_output_types"].list.type) == [tb_types.DT_FLOAT, 0]
    assert set(attrs["unknown"]) == {"_output_shapes"}
    assert set(attrs["declared"]) == {"dtype", "_output_shapes"}
    assert list(attrs["declared_other"]["_output_types"].list.type) == [tb_types.DT_FLOAT]
    assert Graph.from_graph_def(gd) == g


def test_reads_a_graphdef_as_tensorflow_writes_it() -> None:
    # Built with TensorBoard's protos the way TF's as_graph_def(add_shapes=True) does.
    gd = tb_graph_pb2.GraphDef()
    c = gd.node.add(name="c", op="Const")
    c.attr["dtype"].type = tb_types.DT_FLOAT
    c.attr["value"].tensor.dtype = tb_types.DT_FLOAT
    c.attr["value"].tensor.tensor_shape.dim.add(size=2)
    c.attr["value"].tensor.float_val.extend([1.5, 2.5])
    c.attr["_output_shapes"].list.shape.add().dim.add(size=2)
    a = gd.node.add(name="scope/add", op="AddV2", input=["c", "c:0", "^init"], device="/cpu:0")
    a.attr["T"].type = tb_types.DT_FLOAT
    a.attr["_output_shapes"].list.shape.add().unknown_rank = True
    gd.node.add(name="init", op="NoOp")
    gd.versions.producer = 1882

    g = Graph.from_graph_def(gd.SerializeToString())
    assert [n.name for n in g] == ["c", "scope/add", "init"]
    const = g["c"]
    assert const.outputs == [TensorSpec((2,), "float32")]
    assert const.attrs["dtype"] == DType("float32")
    value = const.attrs["value"]
    assert isinstance(value, np.ndarray)
    np.testing.assert_array_equal(value, np.array([1.5, 2.5], dtype=np.float32))
    add = g["scope/add"]
    assert add.inputs == ["c", "c:0"] and add.control_inputs == ["init"]
    assert add.outputs == [TensorSpec(None, "float32")] and "T" not in add.attrs
    assert add.device == "/cpu:0"
    assert g["init"].outputs == [] and g["init"].attrs == {}
    # Writing it back gives TensorBoard the same nodes and attrs.
    back = tb_graph_pb2.GraphDef.FromString(g.to_bytes())
    for mine, theirs in zip(back.node, gd.node, strict=True):
        assert mine.name == theirs.name and list(mine.input) == list(theirs.input)
        assert set(mine.attr) == set(theirs.attr)
        assert mine.attr["_output_shapes"] == theirs.attr["_output_shapes"]


def test_attr_value_kinds() -> None:
    arr = np.arange(4, dtype=np.int32)
    node = Node(
        "n",
        "Op",
        attrs={
            "s": "text",
            "raw": b"\xff\x00",
            "i": -5,
            "f": 0.5,
            "b": True,
            "t": DType("bfloat16"),
            "shape": TensorSpec((None, 3)),
            "tensor": arr,
            "np_scalar": np.float32(2.0),
            "ints": (1, 2),
            "mixed_numbers": [1, 2.5],
            "empty": [],
            "np_ints": [np.int64(3), np.int64(4)],
        },
    )
    nd = tb_graph_pb2.GraphDef.FromString(Graph([node]).to_bytes()).node[0]
    assert nd.attr["s"].s == b"text" and nd.attr["raw"].s == b"\xff\x00"
    assert nd.attr["i"].i == -5 and nd.attr["f"].f == 0.5 and nd.attr["b"].b is True
    assert nd.attr["t"].type == tb_types.DT_BFLOAT16
    assert [d.size for d in nd.attr["shape"].shape.dim] == [-1, 3]
    assert nd.attr["tensor"].tensor.dtype == tb_types.DT_INT32
    assert nd.attr["np_scalar"].f == 2.0
    assert list(nd.attr["ints"].list.i) == [1, 2]
    assert list(nd.attr["mixed_numbers"].list.f) == [1.0, 2.5]
    assert nd.attr["empty"].WhichOneof("value") == "list"
    assert list(nd.attr["np_ints"].list.i) == [3, 4]
    back = Graph.from_graph_def(Graph([node]).to_graph_def())["n"].attrs
    assert back["raw"] == b"\xff\x00" and back["s"] == "text" and back["ints"] == [1, 2]
    assert back["empty"] == []


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (object(), TypeError, "node 'n': attr 'a': unsupported attr value type object"),
        (None, TypeError, "unsupported attr value type NoneType"),
        (2**63, ValueError, "outside the int64 range"),
        (["a", 1], TypeError, "one kind"),
        ({"k": 1}, TypeError, "unsupported attr value type dict"),
        ([object()], TypeError, "unsupported list attr element type object"),
    ],
)
def test_bad_attr_values_raise_naming_node_and_attr(
    value: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Graph([Node("n", "Op", attrs={"a": value})]).to_graph_def()


def test_graph_container() -> None:
    g = Graph()
    a = g.add(Node("a", "X"))
    g.add(Node("b", "Y", ["a"]))
    assert len(g) == 2 and [n.name for n in g] == ["a", "b"] and g["a"] is a
    assert "a" in g and "zz" not in g and 3 not in g
    with pytest.raises(KeyError):
        g["zz"]
    with pytest.raises(ValueError, match=r"Graph\.add: a node named 'a' is already in the graph"):
        g.add(Node("a", "Z"))
    with pytest.raises(TypeError, match="expected a Node"):
        g.add("c")  # type: ignore[arg-type]
    # Direct edits of the public list are seen; renames after reindex().
    g.nodes.append(Node("c", "Z"))
    assert g["c"].op == "Z"
    a.name = "renamed"
    assert g["renamed"] is a and "a" not in g
    g.reindex()
    assert "renamed" in g
    assert g == Graph([Node("renamed", "X"), Node("b", "Y", ["a"]), Node("c", "Z")])
    assert g != Graph()
    assert repr(g) == "Graph(3 nodes)"
    assert Node("x", "Y").output() == "x" and Node("x", "Y").output(2) == "x:2"


@given(st.floats(width=32))
def test_f32_shortest_is_the_same_float32(x: float) -> None:
    y = f32_shortest(x)
    assert np.float32(y).tobytes() == np.float32(x).tobytes()
    assert len(repr(y)) <= len(repr(x))


def test_float_attrs_read_back_as_written() -> None:
    g = Graph([Node("n", "X", attrs={"eps": 1e-5, "p": [0.1, 0.3]})])
    assert Graph.from_graph_def(g.to_graph_def()) == g


def test_tensor_spec_normalises_dims() -> None:
    spec = TensorSpec([np.int64(2), None, 3])  # type: ignore[arg-type]
    assert spec.shape == (2, None, 3) and type(spec.shape[0]) is int
    assert hash(spec) == hash(TensorSpec((2, None, 3)))


def test_dtype_names_match_tensorflow_enums() -> None:
    for name in ("float32", "float64", "int32", "int64", "bool", "string", "bfloat16", "uint64"):
        enum = dtype_enum(name)
        assert tb_types.DataType.Name(enum) == "DT_" + {
            "float32": "FLOAT",
            "float64": "DOUBLE",
        }.get(name, name.upper())
        assert dtype_name(enum) == name
    assert dtype_enum("half") == tb_types.DT_HALF and dtype_enum("str") == tb_types.DT_STRING
    assert dtype_enum("no_such") == 0 and dtype_enum(None) == 0 and dtype_name(0) is None
    assert split_input("a/b:2") == ("a/b", 2) and split_input("a/b") == ("a/b", 0)
    assert split_input("a:b") == ("a:b", 0)


def test_one_dtype_registry_shared_with_tensor_encoding() -> None:
    from summarylib.encoding import _tensor as tensor
    from summarylib.graph import conversion, ir

    # The graph's lookups are the tensor encoder's, over one table.
    assert ir.dtype_enum is tensor.data_type and ir.dtype_name is tensor.data_type_name
    tf_names = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF",
                "float8_e5m2": "FLOAT8_E5M2", "float8_e4m3fn": "FLOAT8_E4M3FN"}
    for name, enum in tensor.DATA_TYPES.items():
        assert tb_types.DataType.Value("DT_" + tf_names.get(name, name.upper())) == enum
        assert tensor.data_type(name) == enum and tensor.data_type_name(enum) == name
    for name in ("float32", "float64", "float16", "int8", "uint16", "int64", "bool",
                 "complex64", "complex128", "uint64"):
        assert tensor.dtype_enum(np.dtype(name)) == tensor.data_type(name)
    assert tensor.dtype_enum(np.dtype("U3")) == tensor.data_type("string")
    # The conversion module is what Graph's methods use.
    g = Graph([Node("a", "Const", attrs={"dtype": DType("half")},
                    outputs=[TensorSpec((2,), "float16")])])
    assert conversion.graph_def_bytes(g.nodes) == g.to_bytes()
    assert conversion.graph_def_message(g.nodes) == g.to_graph_def()
    assert g.to_graph_def().node[0].attr["dtype"].type == tb_types.DT_HALF
    assert Graph(conversion.nodes_from_graph_def(g.to_bytes())) == Graph.from_graph_def(
        g.to_graph_def())
    assert ir.GRAPH_DEF_PRODUCER == conversion.GRAPH_DEF_PRODUCER == 22
    assert ir.f32_shortest is conversion.f32_shortest


def test_import_stays_light() -> None:
    code = (
        "import sys, summarylib.graph as g\n"
        "g.Graph([g.Node('a', 'X')]); b = g.GraphBuilder(); b.op('Relu')\n"
        "heavy = [m for m in ('numpy', 'google.protobuf') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
