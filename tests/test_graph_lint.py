"""lint.check: one test per rule, on IR graphs and on GraphDefs as written."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2 as tb_graph_pb2

from summarylib.graph import Graph, GraphBuilder, Issue, Node, TensorSpec, check
from summarylib.graph.lint import errors

S = [TensorSpec((2,), "float32")]
DEV = "/device:CPU:0"


def node(name: str, op: str = "Relu", inputs: list[str] | None = None, **kw: object) -> Node:
    kw.setdefault("outputs", S)
    kw.setdefault("device", DEV)
    return Node(name, op, inputs or [], **kw)  # type: ignore[arg-type]


def codes(g: object, **kw: int) -> list[tuple[str, str]]:
    return [(i.code, i.node) for i in check(g, **kw)]


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
    assert check(b.graph) == []
    assert check(b.graph.to_graph_def()) == []
    assert check(b.graph.to_bytes()) == []


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
    assert codes(g) == [("missing-shapes", "r"), ("const-lookalike", "lookalike")]


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


def test_wide_groups() -> None:
    g = Graph([node(f"flat/op{i}") for i in range(301)] + [node("flat/sub/x")])
    issues = check(g)
    assert [(i.code, i.node) for i in issues] == [("wide-group", "flat")]
    assert "302 direct children" in issues[0].message
    assert codes(Graph([node(f"op{i}") for i in range(12)]), max_children=10) == [
        ("wide-group", "<root>")
    ]


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


def test_structure_colour_cutoff() -> None:
    nodes = [node("n0")] + [node(f"g{i // 100}/n{i}", inputs=["n0"]) for i in range(1, 10_002)]
    assert ("structure-colour", "<root>") in codes(Graph(nodes))


def test_bad_argument() -> None:
    with pytest.raises(TypeError, match="check: expected a Graph or a GraphDef, got int"):
        check(3)
    assert Issue("c", "info", "n", "m") == Issue("c", "info", "n", "m")
