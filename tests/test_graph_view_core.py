"""The offline graph view's core transformations against TensorBoard's own rules and tests.

Cases marked "TB:" re-create a test of TensorBoard's ``tf_graph_common``
(``common_test.ts`` and the older ``test/graph-test.ts`` / ``test/hierarchy-test.ts``)
with the same GraphDef; the others pin rules read from ``graph.ts``, ``hierarchy.ts``,
``template.ts`` and ``render.ts``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarylib.graph import Graph, Node, TensorSpec
from summarylib.graph.view import (
    TENSORBOARD,
    GraphView,
    GroupNode,
    OpNode,
    ViewOptions,
    build_view,
    view_to_json,
)
from summarylib.graph.view.series import split_series_name

TB = TENSORBOARD


def gd(pbtxt: str) -> bytes:
    """A serialized GraphDef from text format."""
    from google.protobuf import text_format

    from summarylib.proto import graph_pb2

    return text_format.Parse(pbtxt, graph_pb2.GraphDef()).SerializeToString()


def nodes_pbtxt(*specs: tuple[str, str] | tuple[str, str, list[str]]) -> bytes:
    parts = []
    for spec in specs:
        name, op = spec[0], spec[1]
        inputs = spec[2] if len(spec) > 2 else []  # type: ignore[misc]
        body = f'name: "{name}" op: "{op}" ' + " ".join(f'input: "{i}"' for i in inputs)
        parts.append("node { " + body + " }")
    return gd("\n".join(parts))


def all_names(view: GraphView) -> list[str]:
    """Like TB's ``Object.keys(hierarchy.getNodeMap()).sort()`` (root as ``__root__``)."""
    return sorted("__root__" if n == "" else n for n in view.nodes)


def group(view: GraphView, name: str) -> GroupNode:
    node = view.nodes[name]
    assert isinstance(node, GroupNode)
    return node


def op(view: GraphView, name: str) -> OpNode:
    node = view.nodes[name]
    assert isinstance(node, OpNode)
    return node


# --- series: common_test.ts "Graph Hierarchy" ------------------------------------------


def adds(*names: str) -> bytes:
    return nodes_pbtxt(*((n, "Add") for n in names))


def test_series_without_underscores() -> None:
    # TB: 'groups numeric series of nodes without underscores'
    view = build_view(adds("foo1", "foo2", "foo3", "foo4", "foo5"), TB)
    assert all_names(view) == ["__root__", "foo1", "foo2", "foo3", "foo4", "foo5", "foo[1-5]"]
    s = group(view, "foo[1-5]")
    assert s.kind == "series" and s.series_ids == [1, 2, 3, 4, 5] and s.series_op == "Add"
    assert s.children == ["foo1", "foo2", "foo3", "foo4", "foo5"]
    assert view.root.children == ["foo[1-5]"]


def test_series_with_underscores() -> None:
    # TB: 'groups numeric series of nodes with underscores'
    view = build_view(adds("foo_1", "foo_2", "foo_3", "foo_4", "foo_5"), TB)
    assert all_names(view) == ["__root__", "foo_1", "foo_2", "foo_3", "foo_4", "foo_5",
                               "foo_[1-5]"]


def test_series_with_implicit_index_0() -> None:
    # TB: 'groups numeric series of nodes with implicit index 0'
    view = build_view(adds("foo", "foo1", "foo2", "foo3", "foo4"), TB)
    assert all_names(view) == ["__root__", "foo", "foo1", "foo2", "foo3", "foo4", "foo[0-4]"]
    assert group(view, "foo[0-4]").series_ids == [0, 1, 2, 3, 4]


def test_series_too_short() -> None:
    # TB: 'does not group a numeric series of nodes that is too short'
    view = build_view(adds("foo1", "foo2", "foo3", "foo4"), TB)
    assert all_names(view) == ["__root__", "foo1", "foo2", "foo3", "foo4"]


def test_series_ignores_nodedef_order() -> None:
    # TB: 'groups a numeric series ignoring NodeDef order in pbtxt'
    view = build_view(adds("foo2", "foo3", "foo1", "foo5", "foo4"), TB)
    assert all_names(view) == ["__root__", "foo1", "foo2", "foo3", "foo4", "foo5", "foo[1-5]"]
    assert group(view, "foo[1-5]").children == ["foo1", "foo2", "foo3", "foo4", "foo5"]


def test_series_non_sequential() -> None:
    # TB: 'does not group a non-sequential numeric series'
    view = build_view(adds("foo1", "foo3", "foo5", "foo7", "foo9"), TB)
    assert all_names(view) == ["__root__", "foo1", "foo3", "foo5", "foo7", "foo9"]


def test_series_mixed_underscores() -> None:
    # TB: 'does not treat a mixed format of underscores as a numeric series'
    view = build_view(adds("foo_1", "foo2", "foo_3", "foo4", "foo_5"), TB)
    assert all_names(view) == ["__root__", "foo2", "foo4", "foo_1", "foo_3", "foo_5"]


def test_series_number_not_suffix() -> None:
    # TB: 'does not group a numeric series whose numbers are not the suffix'
    view = build_view(adds("foo1a", "foo2a", "foo3a", "foo4a", "foo5a"), TB)
    assert all_names(view) == ["__root__", "foo1a", "foo2a", "foo3a", "foo4a", "foo5a"]


def test_series_prefixes_differ() -> None:
    # TB: 'does not group a numeric series whose prefixes do not match'
    view = build_view(adds("foo1", "bar2", "foo3", "bar4", "foo5"), TB)
    assert all_names(view) == ["__root__", "bar2", "bar4", "foo1", "foo3", "foo5"]


def test_series_rules_from_hierarchy_ts() -> None:
    # clusterNodes: one cluster per op type; only op children; TF's bare "add" is id 0 of
    # prefix "add", not of "add_".
    view = build_view(nodes_pbtxt(("add", "Add"), *((f"add_{i}", "Add") for i in range(1, 7)),
                                  *((f"m{i}", "Mul" if i % 2 else "Add") for i in range(1, 6))),
                      TB)
    assert "add_[1-6]" in view.nodes and "add" in view.root.children
    assert not any(n.startswith("m[") for n in view.nodes)
    # Digits inside the prefix: no series (conv2d_3 has prefix "conv2d_"? no: \D* fails).
    assert split_series_name("conv2d_3") == ("conv2d_3", 0, "")
    assert split_series_name("add_12") == ("add_", 12, "")
    # Two runs of one prefix make two series; a series is appended after the others.
    names = [f"x{i}" for i in (*range(1, 6), *range(10, 16))]
    view = build_view(adds("first", *names), TB)
    assert view.root.children == ["first", "x[1-5]", "x[10-15]"]


def test_series_of_groups_are_not_tensorboards() -> None:
    # TB only collapses ops: scopes layer_0..layer_5 stay, even when identical.
    specs = []
    for i in range(6):
        specs += [(f"layer_{i}/a", "Relu"), (f"layer_{i}/b", "Tanh", [f"layer_{i}/a"])]
    g = nodes_pbtxt(*specs)
    assert "layer_[0-5]" not in build_view(g, TB).nodes
    view = build_view(g)  # our extension, on by default
    s = group(view, "layer_[0-5]")
    assert s.kind == "series" and s.series_op == "group" and s.series_ids == list(range(6))
    assert s.children == [f"layer_{i}" for i in range(6)]
    assert view.root.children == ["layer_[0-5]"]
    assert build_view(g, series=False).root.children == [f"layer_{i}" for i in range(6)]


def test_series_vertical_when_members_connect() -> None:
    chain = nodes_pbtxt(("x", "Placeholder"), ("a_1", "Add", ["x"]),
                        *((f"a_{i}", "Add", [f"a_{i-1}"]) for i in range(2, 6)))
    assert group(build_view(chain, TB), "a_[1-5]").series_vertical
    flat = nodes_pbtxt(("x", "Placeholder"), *((f"a_{i}", "Add", ["x"]) for i in range(1, 6)))
    s = group(build_view(flat, TB), "a_[1-5]")
    assert not s.series_vertical and s.metaedges == []
    assert [(m.v, m.w, m.regular) for m in build_view(flat, TB).root.metaedges] == [
        ("x", "a_[1-5]", 5)]


# --- normalisation: graph.ts ----------------------------------------------------------


def test_simple_graph_construction() -> None:
    # TB: graph-test.ts 'simple graph contruction' (input "Q:2" selects output 2).
    view = build_view(gd('''
      node { name: "Q" op: "Input" }
      node { name: "W" op: "Input" }
      node { name: "X" op: "MatMul" input: "Q:2" input: "W" }'''), TB)
    assert {n for n in view.nodes if n} == {"Q", "W", "X"}
    assert [(e.src, e.dst, e.slot, e.control) for e in view.edges] == [
        ("Q", "X", 2, False), ("W", "X", 0, False)]
    assert view_to_json(view)["root"]["children"][2]["inputs"] == [
        {"name": "Q", "slot": 2, "control": False}, {"name": "W", "slot": 0, "control": False}]


def test_empty_output_shapes_attr() -> None:
    # TB: 'handles node with empty _output_shapes attr' and '... only single shape'.
    for value in ("value { }", "value { shape { } }"):
        view = build_view(gd(f'node {{ name: "foo1" op: "Add" attr {{ key: "_output_shapes" '
                             f'{value} }} }}'), TB)
        assert op(view, "foo1").shapes == []
        assert "_output_shapes" not in op(view, "foo1").attrs


def test_input_parsing_rules() -> None:
    view = build_view(gd('''
      node { name: "a" op: "P" }
      node { name: "b" op: "P" }
      node { name: "f" op: "F" input: "a:out:3" input: "^b" input: "a" input: "zzz"
             input: "f" }
      node { name: "sq" op: "Mul" input: "a" input: "a:1" input: "^a" input: "b"
             input: "a" }'''), TB)
    got = [(e.src, e.dst, e.slot, e.control) for e in view.edges]
    # "a:out:3" -> a slot 3; "^b" control; unknown "zzz" and the self loop dropped;
    # consecutive inputs from one node collapse whatever their slot or kind.
    assert got == [("a", "f", 3, False), ("b", "f", 0, True), ("a", "f", 0, False),
                   ("a", "sq", 0, False), ("b", "sq", 0, False), ("a", "sq", 0, False)]
    assert [(m.v, m.w, m.regular, m.control) for m in view.root.metaedges] == [
        ("a", "f", 2, 0), ("b", "f", 0, 1), ("a", "sq", 2, 0), ("b", "sq", 1, 0)]


def test_reference_edges() -> None:
    view = build_view(gd('''
      node { name: "v" op: "VariableV2" }
      node { name: "x" op: "P" }
      node { name: "assign" op: "Assign" input: "v" input: "x" }'''), TB)
    assert [(e.src, e.ref) for e in view.edges] == [("v", True), ("x", False)]
    assert [m.ref for m in view.root.metaedges] == [1, 0]


def test_strict_renaming() -> None:
    # mapStrictHierarchy: an op that is also a scope becomes A/(A); embedded nodes too.
    view = build_view(gd('''
      node { name: "A" op: "Relu" input: "x" }
      node { name: "A/B" op: "Relu" input: "A" }
      node { name: "x" op: "P" }
      node { name: "x/c" op: "Const" }
      node { name: "y" op: "Const" }
      node { name: "y/z" op: "Add" input: "y" input: "x/c" }
      node { name: "zz" op: "P" }'''), TB)
    assert view.renamed == {"A": "A/(A)", "y": "y/(y)"}
    assert group(view, "A").children == ["A/(A)", "A/B"]
    assert [(e.src, e.dst) for e in view.edges] == [("x", "A/(A)"), ("A/(A)", "A/B")]
    assert [e.name for e in op(view, "y/z").in_embeddings] == ["y/(y)", "x/c"]
    assert "x" in view.nodes and isinstance(view.nodes["x"], OpNode)
    # TB's quirk: the scopes of the alphabetically last op name are not seen by the
    # embedded-node check, so here the constant "y" keeps its name.
    quirk = build_view(gd('''
      node { name: "y" op: "Const" }
      node { name: "y/z" op: "Add" input: "y" }'''), TB)
    assert quirk.renamed == {} and [e.name for e in op(quirk, "y/z").in_embeddings] == ["y"]


def test_embeddings() -> None:
    view = build_view(gd('''
      node { name: "init" op: "NoOp" }
      node { name: "c" op: "Const" input: "^init" }
      node { name: "x" op: "P" }
      node { name: "m" op: "Mul" input: "x" input: "c" }
      node { name: "s" op: "ScalarSummary" input: "m" }
      node { name: "after" op: "Identity" input: "s" }
      node { name: "pc" op: "prim::Constant" }'''), TB)
    assert "c" not in view.nodes and "s" not in view.nodes and "pc" not in view.nodes
    m = op(view, "m")
    assert [e.name for e in m.in_embeddings] == ["c"]
    assert [e.name for e in m.out_embeddings] == ["s"]
    # The constant's control input moves onto its consumer (at the consumer's input
    # index); a reader of the summary reads the summary's inputs instead.
    assert [(e.src, e.dst, e.control) for e in view.edges] == [
        ("x", "m", False), ("init", "m", True), ("m", "after", False)]
    custom = build_view(gd('node { name: "k" op: "Param" } node { name: "u" op: "Relu" '
                           'input: "k" }'), embed_in="^Param$")
    assert [e.name for e in op(custom, "u").in_embeddings] == ["k"]


def test_output_shapes_quirks_and_size() -> None:
    # TB: hierarchy-test.ts 'builds hierarchy with metagraph' (totalSize 100*200).
    def shape(*dims: int) -> str:
        return "shape { " + " ".join(f"dim {{ size: {d} }}" for d in dims) + " }"

    def shapes(*items: str) -> str:
        return 'attr { key: "_output_shapes" value { list { ' + " ".join(items) + " } } }"

    view = build_view(gd(f'''
      node {{ name: "Q" op: "VariableV2" {shapes(shape(100, 200))} }}
      node {{ name: "W" op: "VariableV2" {shapes(shape(200, 100))} }}
      node {{ name: "Y" op: "MatMul" input: "Q" input: "W" }}'''), TB)
    me = {(m.v, m.w): m for m in view.root.metaedges}
    assert set(me) == {("Q", "Y"), ("W", "Y")}
    assert me[("Q", "Y")].size == 20000 and me[("Q", "Y")].shapes == [(100, 200)]
    # unknown rank -> None; no dims -> scalar; one dim of 0 -> scalar; -1 -> None (size 1);
    # all outputs count in the size, whatever the slot.
    view = build_view(gd(f'''
      node {{ name: "s" op: "Split" {shapes("shape { unknown_rank: true }", "shape { }",
                                            shape(0), shape(-1, 3), shape(0, 4))} }}
      node {{ name: "t" op: "Relu" input: "s:3" }}'''), TB)
    assert op(view, "s").shapes == [None, (), (), (None, 3), (0, 4)]
    m = view.root.metaedges[0]
    assert m.size == 1 + 1 + 1 + 3 + 0 and m.shapes == [(None, 3)]


def test_xla_cluster_device_and_attrs() -> None:
    view = build_view(gd('''
      node { name: "a/x" op: "Relu" device: "/device:GPU:0"
             attr { key: "_XlaCluster" value { s: "cluster_1" } }
             attr { key: "T" value { type: DT_FLOAT } } }
      node { name: "a/y" op: "Relu" input: "a/x" }'''), TB)
    x = op(view, "a/x")
    assert x.xla_cluster == "cluster_1" and x.device == "/device:GPU:0"
    assert x.attrs == {"T": "float32", "_XlaCluster": "cluster_1"}
    a = group(view, "a")
    assert a.device_histogram == {"/device:GPU:0": 1} and a.op_histogram == {"Relu": 2}


def test_library_functions() -> None:
    view = build_view(gd('''
      node { name: "call" op: "f" input: "x" }
      node { name: "x" op: "P" }
      library { function {
        signature { name: "f" input_arg { name: "a" type: DT_FLOAT }
                    output_arg { name: "out" type: DT_FLOAT } }
        node_def { name: "r" op: "Relu" input: "a" }
        node_def { name: "n" op: "Neg" input: "r:y:0" } } }'''), TB)
    lib = group(view, "__function_library__f")
    assert lib.children == ["__function_library__f/(__function_library__f)",
                            "__function_library__f/a", "__function_library__f/r",
                            "__function_library__f/n"]
    assert [(m.v, m.w) for m in lib.metaedges] == [
        ("__function_library__f/a", "__function_library__f/r"),
        ("__function_library__f/r", "__function_library__f/n")]


def test_op_type_rules_take_precedence_in_order() -> None:
    # An op type matching several rules: hidden first, then embedded-in, then
    # embedded-out; every node of a type gets the same rule (the first one decides).
    g = nodes_pbtxt(("x", "P"), ("k1", "Konst"), ("k2", "Konst"), ("s1", "Summ", ["y"]),
                    ("y", "Relu", ["x", "k1"]), ("z", "Relu", ["y", "k2", "s1"]))
    both = build_view(g, embed_in="^Konst$", embed_out="^(Konst|Summ)$")
    assert [e.name for e in op(both, "y").in_embeddings] == ["k1"]
    assert [e.name for e in op(both, "z").in_embeddings] == ["k2"]
    assert [e.name for e in op(both, "y").out_embeddings] == ["s1"]
    assert [(e.src, e.dst) for e in both.edges] == [("x", "y"), ("y", "z"), ("y", "z")]
    hidden = build_view(g, embed_in="^Konst$", embed_out="^Summ$", hidden_ops=("Konst",))
    assert "k1" not in hidden.nodes and "k2" not in hidden.nodes
    assert op(hidden, "y").in_embeddings == [] and op(hidden, "z").in_embeddings == []
    assert hidden.options["hidden_count"] == 2


def test_hidden_ops_and_malformed_input() -> None:
    g = nodes_pbtxt(("x", "P"), ("i", "Identity", ["x"]), ("y", "Relu", ["i"]))
    view = build_view(g, hidden_ops=("Identity",))
    assert "i" not in view.nodes and view.edges == [] and view.options["hidden_count"] == 1
    with pytest.raises(ValueError, match="not a serialized GraphDef"):
        build_view(b"\xff\xff\xff garbage")
    with pytest.raises(ValueError, match="expected a GraphDef message"):
        from summarylib.proto import event_pb2

        build_view(event_pb2.Event())
    with pytest.raises(ValueError, match=r"must be a summarylib\.graph\.Graph"):
        build_view(12345)
    bad = Graph()
    bad.nodes.append(Node(name=3, op="Relu"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="node #0"):
        build_view(bad)
    with pytest.raises(TypeError, match="unknown view option"):
        build_view(g, colour="red")
    with pytest.raises(ValueError, match="template_order"):
        ViewOptions(template_order="random")
    with pytest.raises(ValueError, match="bad regex"):
        ViewOptions(embed_in="(")


def test_sources_and_options_round_trip(tmp_path: Path) -> None:
    g = nodes_pbtxt(("x", "P"), ("y", "Relu", ["x"]), ("k", "Const"), ("z", "Relu", ["k"]))
    path = tmp_path / "g.pb"
    path.write_bytes(g)
    by_path = build_view(str(path), TB)
    assert view_to_json(by_path) == view_to_json(build_view(g, TB))
    view = build_view(g, hidden_ops=["Identity"], side_panel=["x"], group_series=False)
    again = build_view(g, view_to_json(view)["options"])
    assert again.options == view.options and view_to_json(again) == view_to_json(view)
    with pytest.raises(TypeError, match="options must be a ViewOptions"):
        build_view(g, 3)  # type: ignore[arg-type]


def test_ir_and_bytes_agree() -> None:
    g = Graph()
    g.add(Node("x", "Placeholder", outputs=[TensorSpec((8, 3), "float32")], device="/cpu:0"))
    g.add(Node("w", "Const", outputs=[TensorSpec((3, 4), "float32")]))
    g.add(Node("l/mm", "MatMul", ["x", "w"], outputs=[TensorSpec((8, 4), "float32")]))
    g.add(Node("l/z", "Relu", ["l/mm"], control_inputs=["x"], outputs=[TensorSpec((0,))]))
    a, b = view_to_json(build_view(g)), view_to_json(build_view(g.to_bytes()))
    assert a["root"]["children"] == b["root"]["children"]
    assert op(build_view(g), "l/z").shapes == [()]  # what TB reads from a (0,) shape


# --- hierarchy ------------------------------------------------------------------------


def test_leading_slash_names_make_an_empty_named_scope() -> None:
    # ONNX-style "/embed/Gather": TensorBoard makes a top group named "" (its root is
    # "__root__"); "" is our root, so that group is keyed EMPTY. Series keep TB's names.
    from summarylib.graph.view.hierarchy import EMPTY

    g = nodes_pbtxt(("/embed/Gather", "Gather"), ("/embed/a", "Relu", ["/embed/Gather"]),
                    *((f"/x{i}", "Add", ["/embed/a"]) for i in range(1, 6)), ("y", "Relu", ["/x1"]))
    view = build_view(g, TB)
    assert view.root.children == [EMPTY, "y"]
    assert group(view, EMPTY).children == ["/embed", "x[1-5]"]
    assert group(view, "x[1-5]").parent == EMPTY
    assert [(m.v, m.w) for m in view.root.metaedges] == [(EMPTY, "y")]
    _check_view(view)
    lone = build_view(nodes_pbtxt(("", "Relu"), ("a", "Relu", [""])), TB)
    assert lone.renamed == {"": EMPTY} and lone.root.children == [EMPTY, "a"]



def test_hierarchy_depth_cardinality_histograms() -> None:
    view = build_view(nodes_pbtxt(("a/b/c", "Relu"), ("a/d", "Tanh", ["a/b/c"]), ("e", "Relu"),
                                  ("a/b/f", "Relu", ["e"])), TB)
    root, a, ab = view.root, group(view, "a"), group(view, "a/b")
    assert (root.depth, a.depth, ab.depth) == (3, 2, 1)
    assert (root.cardinality, a.cardinality, ab.cardinality) == (4, 3, 2)
    assert list(a.op_histogram.items()) == [("Relu", 2), ("Tanh", 1)]
    assert root.children == ["a", "e"] and a.children == ["a/b", "a/d"]
    assert [(m.v, m.w) for m in a.metaedges] == [("a/b", "a/d")]
    assert [(m.v, m.w) for m in root.metaedges] == [("e", "a")]
    assert op(view, "a/b/c").parent == "a/b" and a.parent == ""


def test_javascript_key_order_at_the_root() -> None:
    # Object keys that are array indices come first in JavaScript; the dashboard's
    # metagraph keeps that order.
    view = build_view(nodes_pbtxt(("b", "Relu"), ("10", "Relu"), ("a", "Relu"), ("2", "Relu")),
                      TB)
    assert view.root.children == ["2", "10", "b", "a"]


# --- templates: template.ts ------------------------------------------------------------


def blocks(n: int, nested: bool) -> bytes:
    specs: list[tuple[str, str] | tuple[str, str, list[str]]] = [("x", "Placeholder")]
    prev = "x"
    for i in range(n):
        s = f"block{chr(97 + i)}"
        if nested:
            specs += [(f"{s}/conv/w", "VariableV2"),
                      (f"{s}/conv/c", "Conv2D", [prev, f"{s}/conv/w"]),
                      (f"{s}/bn/m", "Mul", [f"{s}/conv/c"]),
                      (f"{s}/bn/a", "Add", [f"{s}/bn/m"])]
            prev = f"{s}/bn/a"
        else:
            specs += [(f"{s}/c", "Conv2D", [prev]), (f"{s}/r", "Relu", [f"{s}/c"])]
            prev = f"{s}/r"
    return nodes_pbtxt(*specs)


def test_flat_identical_blocks_share_a_template_in_both_orders() -> None:
    for opts in (TB, ViewOptions()):
        view = build_view(blocks(4, nested=False), opts)
        tids = {group(view, f"block{c}").template for c in "abcd"}
        assert len(tids) == 1 and None not in tids
        assert list(view.templates.values()) == [[f"block{c}" for c in "abcd"]]


def test_nested_identical_blocks_share_a_template_only_in_height_order() -> None:
    # graph-pipeline.md 1.7: TB handles parents before children, so nested copies differ.
    nested = blocks(4, nested=True)
    view = build_view(nested)
    assert len({group(view, f"block{c}").template for c in "abcd"}) == 1
    assert group(view, "blocka").template is not None
    assert len({group(view, f"block{c}/conv").template for c in "abcd"}) == 1
    tb = build_view(nested, TB)
    assert all(group(tb, f"block{c}").template is None for c in "abcd")
    assert len({group(tb, f"block{c}/conv").template for c in "abcd"}) == 1
    assert group(tb, "blocka/conv").template.startswith("depth=1 |V|=2 |E|=1 [ops] ")


def test_template_ids_are_tensorboards_signature() -> None:
    view = build_view(blocks(2, nested=False), TB)
    assert view.templates == {
        "depth=1 |V|=2 |E|=1 [ops] Conv2D=1,Relu=1[0]": ["blocka", "blockb"]}
    # Histogram order is insertion order in TB mode: differently ordered blocks differ.
    swapped = nodes_pbtxt(("p/c", "Conv2D"), ("p/r", "Relu", ["p/c"]),
                          ("q/r", "Relu"), ("q/c", "Conv2D", ["q/r"]))
    assert build_view(swapped, TB).templates == {}
    assert build_view(swapped).templates == {}  # structure differs too (edge direction)


def test_template_similarity_checks_structure() -> None:
    # Same signature, different wiring: TB's DFS and our hashing both tell them apart.
    g = nodes_pbtxt(("p/a", "Relu"), ("p/b", "Relu", ["p/a"]), ("p/c", "Tanh", ["p/b"]),
                    ("q/a", "Relu"), ("q/b", "Relu"), ("q/c", "Tanh", ["q/a"]),
                    ("r/a", "Relu"), ("r/b", "Relu", ["r/a"]), ("r/c", "Tanh", ["r/b"]))
    for opts in (TB, ViewOptions()):
        view = build_view(g, opts)
        assert group(view, "p").template == group(view, "r").template is not None
        assert group(view, "q").template is None


# --- extraction: render.ts ---------------------------------------------------------------


def test_noop_goes_to_the_side_panel() -> None:
    view = build_view(nodes_pbtxt(("x", "P"), ("y", "Relu", ["x"]), ("init", "NoOp", ["^y"]),
                                  ("train/(train)", "Relu"), ("train", "NoOp"),
                                  ("train/a", "Relu", ["^x"])), TB)
    # "train" is renamed train/(train), a NoOp: the group "train" is a sink too.
    assert view.root.side_panel == {"in": [], "out": ["init", "train"]}


def test_high_degree_extraction() -> None:
    # A hub feeding 20 consumers: out-degree 20 > Q3 + 4 * IQR.
    specs: list[tuple[str, str] | tuple[str, str, list[str]]] = [("hub", "Var")]
    for i in range(20):
        specs += [(f"n{chr(97 + i)}", "Relu", ["hub", f"x{chr(97 + i)}"]),
                  (f"x{chr(97 + i)}", "P")]
    view = build_view(nodes_pbtxt(*specs), TB)
    assert view.root.side_panel == {"in": [], "out": ["hub"]}
    # Fewer than 15 nodes: nothing is extracted for degree.
    small = build_view(nodes_pbtxt(("hub", "Var"), *((f"n{chr(97 + i)}", "Relu", ["hub"])
                                                     for i in range(6))), TB)
    assert small.root.side_panel == {"in": [], "out": []}
    assert build_view(nodes_pbtxt(*specs), auto_extract=False).root.side_panel["out"] == []


def test_in_degree_and_control_thinning_and_orphans() -> None:
    specs: list[tuple[str, str] | tuple[str, str, list[str]]] = []
    for i in range(16):
        specs.append((f"s{chr(97 + i)}", "P"))
    specs.append(("sink", "AddN", [f"s{chr(97 + i)}" for i in range(16)]))
    specs += [("ctl", "Relu", [f"^s{chr(97 + i)}" for i in range(5)])]
    specs += [("k", "Const"), ("lonely", "Relu", ["k"])]
    view = build_view(nodes_pbtxt(*specs), TB)
    # 19 nodes; in-degrees: sink 16, ctl 5 (control only, so its control degree), others
    # 0: Q1 = Q3 = 0, bound max(0, 4): sink then ctl are extracted (highest first). The
    # sources are then orphans with icons on their out side only -> in list; "lonely"
    # has only a constant icon (in side) -> out list.
    assert view.root.side_panel == {
        "in": ["sink", "ctl", *(f"s{chr(97 + i)}" for i in range(16))], "out": ["lonely"]}
    # Control thinning in a small group: > 4 control edges become icons, the node stays.
    # (Letters, not numbers: c0..c4 would be one series node with one metaedge.)
    small = build_view(nodes_pbtxt(*((f"c{x}", "P") for x in "abcde"),
                                   ("ctl", "Relu", [f"^c{x}" for x in "abcde"]),
                                   ("y", "Relu", ["ctl"])), TB)
    assert small.root.side_panel == {"in": [f"c{x}" for x in "abcde"], "out": []}
    four = build_view(nodes_pbtxt(*((f"c{x}", "P") for x in "abcd"),
                                  ("ctl", "Relu", [f"^c{x}" for x in "abcd"]),
                                  ("y", "Relu", ["ctl"])), TB)
    assert four.root.side_panel == {"in": [], "out": []}


def test_forced_side_panel() -> None:
    g = nodes_pbtxt(("x", "P"), ("y", "Relu", ["x"]), ("z", "Relu", ["y"]), ("z/q", "Relu"))
    view = build_view(g, TB.with_overrides(side_panel=("y", "z", "z/(z)")))
    # Forced nodes go first (in list unless more out- than in-edges); "x" is then an
    # orphan with a shortcut icon on its out side -> in list too.
    assert view.root.side_panel == {"in": ["y", "z", "x"], "out": []}
    assert group(view, "z").side_panel == {"in": ["z/(z)"], "out": []}
    view = build_view(g, TB.with_overrides(side_panel=("x",)))
    assert view.root.side_panel == {"in": [], "out": ["x"]}


# --- properties ---------------------------------------------------------------------------

_SEG = st.sampled_from(["a", "b", "c", "add", "add_1", "add_2", "x1", "x2", "x3", "x4", "x5",
                        "0", "1", "(a)"])
_OPS = st.sampled_from(["Add", "Relu", "Const", "NoOp", "ScalarSummary", "MatMul"])


@st.composite
def random_graphs(draw: st.DrawFn) -> Graph:
    n = draw(st.integers(1, 40))
    g = Graph()
    names: list[str] = []
    for _ in range(n):
        depth = draw(st.integers(1, 3))
        name = "/".join(draw(st.lists(_SEG, min_size=depth, max_size=depth)))
        if name in g:
            continue
        inputs = []
        if names:
            for _ in range(draw(st.integers(0, 3))):
                src = draw(st.sampled_from(names))
                kind = draw(st.sampled_from(["", "^", ":1"]))
                inputs.append("^" + src if kind == "^" else src + (kind if kind == ":1" else ""))
        data = [i for i in inputs if not i.startswith("^")]
        control = [i[1:] for i in inputs if i.startswith("^")]
        g.add(Node(name, draw(_OPS), data, control, outputs=[TensorSpec((2, 3))]))
        names.append(name)
    return g


def _check_view(view: GraphView) -> None:
    ops = [n for n, v in view.nodes.items() if isinstance(v, OpNode)]
    seen: list[str] = []
    for g in view.nodes.values():
        if isinstance(g, GroupNode):
            for c in g.children:
                assert view.nodes[c].parent == g.name
                if isinstance(view.nodes[c], OpNode):
                    seen.append(c)
            side = g.side_panel["in"] + g.side_panel["out"]
            assert len(side) == len(set(side)) and set(side) <= set(g.children)
            for m in g.metaedges:
                assert m.v in g.children and m.w in g.children and m.v != m.w
    assert sorted(seen) == sorted(ops)  # every op exactly once
    total = sum(m.regular + m.control for g in view.nodes.values()
                if isinstance(g, GroupNode) for m in g.metaedges)
    assert total == len(view.edges)
    assert sum(m.regular for g in view.nodes.values() if isinstance(g, GroupNode)
               for m in g.metaedges) == sum(not e.control for e in view.edges)
    assert view.root.cardinality == len(ops)
    data = view_to_json(view)
    assert json.loads(json.dumps(data)) == data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.sampled_from([TB, ViewOptions(), ViewOptions(series=False)]))
def test_view_invariants(g: Graph, opts: ViewOptions) -> None:
    _check_view(build_view(g, opts))


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_nodedef_order_does_not_change_series(g: Graph) -> None:
    # The series found (names and members) do not depend on NodeDef order.
    rev = Graph(reversed(g.nodes))

    def series(v: GraphView) -> dict[str, list[str]]:
        return {n: sorted(x.children) for n, x in v.nodes.items()
                if isinstance(x, GroupNode) and x.kind == "series"}

    assert series(build_view(g, TB)) == series(build_view(rev, TB))


# --- shared models and performance ---------------------------------------------------------


def _models() -> object:
    sys.path.insert(0, str(Path(__file__).parent))
    import graph_models

    return graph_models


def test_synthetic_10k_view() -> None:
    graph_models = _models()
    g = graph_models.synthetic_10k()  # type: ignore[attr-defined]
    view = build_view(g)
    _check_view(view)
    tb = build_view(g, TB)
    _check_view(tb)
    assert any(x.kind == "series" and x.series_op == "group" for x in view.nodes.values()
               if isinstance(x, GroupNode))
    assert not any(re.search(r"layer_\[", n) for n in tb.nodes)
    assert view.root.side_panel["out"]  # init / save hubs


def test_synthetic_100k_builds_whole() -> None:
    # Its speed is measured by bench/graph_view.py, not asserted here.
    graph_models = _models()
    g = graph_models.synthetic_100k()  # type: ignore[attr-defined]
    view = build_view(g)
    assert len(view.edges) > 100_000
    _check_view(view)
