"""lint.check: one test per rule, on IR graphs and on GraphDefs as written."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2 as tb_graph_pb2

from summarylib.graph import DType, Graph, GraphBuilder, Issue, Node, TensorSpec, check
from summarylib.graph.lint import errors

S = [TensorSpec((2,), "float32")]
DEV = "/device:CPU:0"


def node(name: str, op: str = "Relu", inputs: list[str] | None = None, **kw: object) -> Node:
    kw.setdefault("outputs", S)
    kw.setdefault("device", DEV)
    return Node(name, op, inputs or [], **kw)  # type: ignore[arg-type]


def codes(g: object, **kw: int) -> list[tuple[str, str]]:
    return [(i.code, i.node) for i in check(g, **kw)]


def problems(g: object) -> list[Issue]:
    """The errors and warnings: what a clean graph has none of (infos are predictions)."""
    return [i for i in check(g) if i.severity != "info"]


def test_clean_graph_has_no_issues() -> None:
    b = GraphBuilder(device=DEV)
    x = b.placeholder((None, 2), name="x")
    with b.name_scope("layer"):
        w = b.const(np.ones((2, 2), np.float32), name="w")
        init = b.no_op("init")
        with b.control_dependencies([init]):
            y = b.op("MatMul", [x, w], outputs=S)
    b.op("Split", [y], outputs=S * 2)
    b.op("Add", ["Split", "Split:1"], outputs=S)
    for form in (b.graph, b.graph.to_graph_def(), b.graph.to_bytes()):
        assert problems(form) == []
        # What the dashboard does with it: in `layer`, the NoOp goes to the side panel, and
        # MatMul, left with icons on its input side only, follows it.
        (info,) = check(form)
        assert (info.code, info.node) == ("side-panel", "layer")
        assert info.message.endswith("init, MatMul")


def test_dangling_inputs_data_and_control() -> None:
    g = Graph([node("a"), node("b", inputs=["a", "ghost:1"], control_inputs=["phantom"])])
    issues = check(g)
    assert [(i.code, i.severity, i.node) for i in issues] == [
        ("dangling-input", "error", "b"),
        ("dangling-input", "error", "b"),
    ]
    assert "'ghost:1' names no node; the dashboard drops this edge" in issues[0].message
    assert "'^phantom'" in issues[1].message
    assert errors(issues) == issues


def test_duplicate_names_in_a_graphdef() -> None:
    gd = tb_graph_pb2.GraphDef()
    gd.node.add(name="a", op="X", device=DEV)
    gd.node.add(name="a", op="Y", device=DEV)
    assert codes(gd) == [("duplicate-name", "a"), ("missing-shapes", "a"), ("missing-shapes", "a")]
    # Also when the IR's node list was edited directly.
    g = Graph([node("a")])
    g.nodes.append(node("a"))
    assert codes(g) == [("duplicate-name", "a")]


def test_name_that_is_also_a_scope() -> None:
    g = Graph([node("enc"), node("enc/conv"), node("enc/conv/relu")])
    issues = check(g)
    assert [(i.code, i.node) for i in issues] == [
        ("name-is-scope", "enc"),
        ("name-is-scope", "enc/conv"),
    ]
    assert "shows the node as enc/conv/(conv)" in issues[1].message


def test_missing_shapes_except_const_and_noop() -> None:
    g = Graph(
        [
            node("c", "Const", outputs=[]),
            node("lookalike", "prim::Constant", outputs=[]),
            node("n", "NoOp", outputs=[]),
            node("r", "Relu", ["c"], outputs=[]),
        ]
    )
    assert codes(g) == [
        ("missing-shapes", "r"),
        ("const-lookalike", "lookalike"),
        ("side-panel", "<root>"),  # the NoOp, and r with only its constant's icon
    ]


def test_output_slot_beyond_declared_outputs() -> None:
    g = Graph([node("split", outputs=S * 2), node("use", inputs=["split:1", "split:2"])])
    assert codes(g) == [("bad-output-slot", "use")]


def test_large_attrs() -> None:
    g = Graph(
        [
            node("small", attrs={"s": "x" * 1000, "v": np.zeros(100, np.float64)}),
            node("text", attrs={"s": "x" * 2000}),
            node("array", attrs={"value": np.zeros(300, np.float32)}),
            node("list", attrs={"l": list(range(1000))}),
            node("short_list", attrs={"l": list(range(200))}),  # packed varints: ~270 bytes
        ]
    )
    assert codes(g) == [("large-attr", "text"), ("large-attr", "array"), ("large-attr", "list")]
    assert codes(g, attr_limit=100_000) == []
    gd = g.to_graph_def()
    assert codes(gd) == [("large-attr", "text"), ("large-attr", "array"), ("large-attr", "list")]


# Values whose serialized AttrValue is just over 1 KB: each was missed on the IR (the old
# estimate counted characters, not UTF-8 bytes, and left out tags, lengths and headers)
# while the same graph's GraphDef was flagged.
OVER_LIMIT = {
    "non_ascii_str": "\u00e9" * 600,  # 1203 bytes
    "f32_array": np.zeros(255, np.float32),  # 1035 bytes
    "object_str_array": np.array(["\u00e9" * 100] * 5, dtype=object),
    "shape_399_dims": TensorSpec(tuple(range(1, 400))),
    "non_ascii_str_list": ["\u00e9\u00e8" * 50] * 6,
}

SIZE_CASES = {
    **OVER_LIMIT,
    "empty_str": "",
    "ascii_str": "x" * 127,
    "bytes": b"\xff" * 200,
    "zero": 0,
    "int": 300,
    "negative": -1,
    "int64_max": 2**63 - 1,
    "float": 1.5,
    "false": False,
    "dtype": DType("float32"),
    "unknown_dtype": DType("float128"),
    "scalar_shape": TensorSpec(()),
    "unknown_rank": TensorSpec(None),
    "shape_unknown_and_zero_dims": TensorSpec((None, 0, 3, 1 << 40)),
    "empty_list": [],
    "int_list": [0, 1, -5, 2**40],
    "mixed_number_list": [1, 2.5],
    "bool_list": [True, False, True],
    "dtype_list": [DType("int64"), DType("bfloat16")],
    "shape_list": [TensorSpec((2, None)), TensorSpec(None), TensorSpec(())],
    "tensor_list": [np.ones(3, np.int64), np.array(["a", "\u00e9"])],
    "numpy_scalars": [np.float32(1.0), np.float64(2.0)],
    "numpy_int": np.int64(-7),
    "numpy_bool": np.bool_(True),
    "bytes_array": np.array([b"ab", b"c"]),
    "unicode_array": np.array([["\u00e9", "x"], ["yz", ""]]),
    "zero_dim_array": np.array(3.0),
    "empty_array": np.zeros((0, 4), np.float32),
    "bool_array": np.ones((2, 3), bool),
    "complex_array": np.ones(2, np.complex128),
}


@pytest.mark.parametrize("key", sorted(SIZE_CASES))
def test_attr_size_is_the_serialized_size(key: str) -> None:
    from summarylib.graph.conversion import _attr_to_proto
    from summarylib.graph.lint import attr_size
    from summarylib.proto import attr_value_pb2

    value = SIZE_CASES[key]
    av = attr_value_pb2.AttrValue()
    _attr_to_proto(value, av)
    assert attr_size(value) == av.ByteSize()


@pytest.mark.parametrize("key", sorted(OVER_LIMIT))
def test_large_attrs_flagged_on_the_ir_like_on_the_graphdef(key: str) -> None:
    g = Graph([node("n", attrs={"a": OVER_LIMIT[key]})])
    size = g.to_graph_def().node[0].attr["a"].ByteSize()
    assert 1024 < size < 2000  # near the limit, where an estimate decides
    assert codes(g.to_graph_def()) == [("large-attr", "n")]
    assert codes(g) == [("large-attr", "n")]
    (issue,) = check(g)
    assert f"is {size} bytes" in issue.message
    assert codes(g, attr_limit=size) == []  # the limit is exclusive, as TensorBoard's


def test_attr_size_of_values_the_conversion_rejects_is_zero() -> None:
    from summarylib.graph.lint import attr_size

    for bad in (object(), [1, "a"], 2**64, [2**64], "\ud800", np.array([1, "a"], dtype=object)):
        assert attr_size(bad) == 0


def test_wide_groups() -> None:
    # Names that form no series (the number is not at the end): 302 nodes to lay out.
    g = Graph([node(f"flat/op{i}x") for i in range(301)] + [node("flat/sub/x")])
    issues = check(g)
    assert [(i.code, i.node) for i in issues] == [("wide-group", "flat")]
    assert "302 direct children" in issues[0].message
    assert codes(Graph([node(f"op{i}x") for i in range(12)]), max_children=10) == [
        ("wide-group", "<root>")
    ]


def test_a_series_is_not_a_wide_group() -> None:
    # op0 ... op300 of one type: the dashboard stacks them into one node op[0-300].
    g = Graph([node(f"flat/op{i}") for i in range(301)] + [node("flat/sub/x")])
    issues = check(g)
    assert [(i.code, i.node) for i in issues] == [("series", "flat/op[0-300]")]
    assert "301 Relu ops (flat/op0 ... flat/op300)" in issues[0].message


def test_control_inputs_before_data_inputs() -> None:
    gd = tb_graph_pb2.GraphDef()
    for name in ("a", "b"):
        n = gd.node.add(name=name, op="X", device=DEV)
        n.attr["_output_shapes"].list.shape.add()
    gd.node.add(name="c", op="X", input=["^a", "b", "a"], device=DEV)
    gd.node[2].attr["_output_shapes"].list.shape.add()
    assert codes(gd) == [("control-before-data", "c")]


def test_names_devices_dtypes_and_size() -> None:
    g = Graph(
        [
            node("/lead"),
            node("a//b"),
            node("x", device=""),
            node("y", device=""),
            node("weird", outputs=[TensorSpec((1,), "float128")]),
        ]
    )
    issues = check(g)
    assert [(i.code, i.node) for i in issues] == [
        ("bad-name", "/lead"),
        ("bad-name", "a//b"),
        ("unknown-dtype", "weird"),
        ("no-device", "x"),
    ]
    assert "2 node(s) have no device" in issues[-1].message
    assert str(issues[0]).startswith("error: /lead: ")


def test_names_tensorflow_rejects() -> None:
    # Graphs from other sources (GraphDefs, other writers) can hold such names.
    g = Graph(
        [
            node("a"),
            node("a:1"),
            node("use", inputs=["a:1"]),
            node("conv[0]/w"),
            node("_lead"),
            node("s/_ok"),
            node("ok.v>2-x"),
        ]
    )
    issues = check(g)
    assert [(i.code, i.node) for i in issues] == [
        ("bad-name", "a:1"),
        ("bad-name", "conv[0]/w"),
        ("bad-name", "_lead"),
        # The edge meant for node 'a:1' reads as output 1 of 'a'.
        ("bad-output-slot", "use"),
    ]
    assert "the dashboard reads 'a:1' as output '1' of 'a'" in issues[0].message
    assert "holds '[', ']'" in issues[1].message
    assert "starts with '_'" in issues[2].message
    assert [(i.code, i.node) for i in check(g.to_graph_def())] == [
        (i.code, i.node) for i in issues
    ]


def test_structure_colour_cutoff() -> None:
    nodes = [node("n0")] + [node(f"g{i // 100}/n{i}", inputs=["n0"]) for i in range(1, 10_002)]
    assert ("structure-colour", "<root>") in codes(Graph(nodes))


def test_bad_argument() -> None:
    with pytest.raises(TypeError, match="check: expected a Graph or a GraphDef, got int"):
        check(3)
    assert Issue("c", "info", "n", "m") == Issue("c", "info", "n", "m")
