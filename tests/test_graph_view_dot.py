"""view_to_dot checked by a real DOT parser (Graphviz, else pydot); view_to_svg by XML."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import warnings
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from summarylib.graph import Graph, GraphBuilder, Node, TensorSpec
from summarylib.graph.view import GraphView, build_view
from summarylib.graph.view.dot_export import dot_quote, open_groups, view_to_dot, view_to_svg
from summarylib.graph.view.model import GroupNode, OpNode

DOT = shutil.which("dot")
HAVE_PYDOT = importlib.util.find_spec("pydot") is not None
SVG = "{http://www.w3.org/2000/svg}"


def _need(what: str, ok: bool) -> None:
    if not ok:
        if os.environ.get("SUMMARYLIB_CI"):
            pytest.fail(f"CI needs {what}")
        pytest.skip(f"{what} is not installed")


def graphviz_json(text: str) -> dict[str, Any]:
    """The DOT text parsed (and laid out) by Graphviz: its ``-Tjson0`` output."""
    # No PyPI package ships Graphviz's own `dot`, so the README's pip command cannot bring it.
    _need("Graphviz's dot (apt-get install graphviz; pip cannot install it)", DOT is not None)
    assert DOT is not None
    r = subprocess.run([DOT, "-Tjson0"], input=text.encode(), capture_output=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr.decode()
    assert not r.stderr.strip(), r.stderr.decode()  # no syntax warnings either
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def nodes_and_clusters(data: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[Any]]:
    objects = data.get("objects", [])
    nodes = {o["name"]: o for o in objects if "nodes" not in o and "edges" not in o}
    clusters = [o for o in objects if o["name"].startswith("cluster_")]
    return nodes, clusters


def dot_id(name: str) -> str:
    """The node id Graphviz reads back for ``name``: inside quoted strings it only turns
    ``\\"`` into ``"`` (other escapes belong to labels)."""
    return dot_quote(name)[1:-1].replace('\\"', '"')


def model() -> GraphView:
    """input, a scope with 3 ops, a series add_[1-5], a control edge, an init hub."""
    b = GraphBuilder()
    x = b.placeholder((None, 4), "float32", name="x")
    with b.name_scope("block"):
        m = b.op("MatMul", [x, x], outputs=TensorSpec((None, 4), "float32"))
        r = b.op("Relu", [m], outputs=TensorSpec((None, 4), "float32"))
        t = b.op("Tanh", [r], outputs=TensorSpec((None, 4), "float32"))
    h = t
    for _ in range(6):  # add, add_1 ... add_5: TensorBoard stacks add_[1-5]
        h = b.op("Add", [h, x], name="add", outputs=TensorSpec((None, 4), "float32"))
    b.op("Identity", [h], name="out", control_inputs=[m],
         outputs=TensorSpec((None, 4), "float32"))
    b.no_op("init", control_inputs=[m, r, t])
    return build_view(b.graph, side_panel=("init",))


HOSTILE = [
    'q"uote',
    "back\\slash\\",
    "new\nline",
    "bell\x07",
    'a"];\n"pwn" [label="pwned',
    "\\N\\G\\l\\",
    "snow \u2603 \u00fcml",
    "<script>alert(1)</script>",
    'sc"ope/op1',
    'sc"ope/op2',
]


def hostile_view() -> GraphView:
    nodes = [Node(HOSTILE[0], "Placeholder", attrs={"note": '"];}'})]
    for i, name in enumerate(HOSTILE[1:], 1):
        nodes.append(Node(name, "Relu<b>", inputs=[HOSTILE[i - 1].split("/")[0]
                                                   if "/" not in HOSTILE[i - 1]
                                                   else HOSTILE[i - 1]],
                          control_inputs=[HOSTILE[0]] if i == 3 else []))
    return build_view(Graph(nodes), auto_extract=False)


# --- DOT ---------------------------------------------------------------------------------


def test_depth_one_is_collapsed() -> None:
    v = model()
    data = graphviz_json(view_to_dot(v, depth=1))
    nodes, clusters = nodes_and_clusters(data)
    assert set(nodes) == {"x", "block", "add", "add_[1-5]", "out", "init"}
    assert nodes["block"]["shape"] == "box"
    assert nodes["block"]["label"] == "block\\n3 ops\\n→ init"  # an edge into the panel
    assert nodes["add_[1-5]"]["shape"] == "box3d"
    assert nodes["add_[1-5]"]["label"] == "add_[1-5]\\n5 \u00d7 Add"
    assert nodes["x"]["shape"] == "ellipse"
    # The root's side panel is a cluster of its own; init's edges became its label.
    assert [c["label"] for c in clusters] == ["root: side panel"]
    assert "init" in {nodes_by_id(data, i) for i in clusters[0]["nodes"]}
    assert nodes["init"]["label"] == "init\\n← block"
    names = [o["name"] for o in data["objects"]]
    ends = {(names[e["tail"]], names[e["head"]], e.get("style")) for e in data["edges"]}
    assert not any("init" in (t, h) for t, h, _ in ends)
    assert ("block", "out", "dashed") in ends  # the control edge block/MatMul -> out
    assert ("x", "block", None) in ends
    assert ("add_[1-5]", "out", None) in ends
    labels = {(names[e["tail"]], names[e["head"]]): e.get("label") for e in data["edges"]}
    assert labels[("x", "block")] == "?\u00d74"


def nodes_by_id(data: dict[str, Any], i: int) -> str:
    name: str = data["objects"][i]["name"]
    return name


def test_depth_two_opens_groups() -> None:
    v = model()
    assert open_groups(v, 2) == {"", "block", "add_[1-5]"}
    data = graphviz_json(view_to_dot(v, depth=2))
    nodes, clusters = nodes_and_clusters(data)
    assert {"block/MatMul", "block/Relu", "block/Tanh", "add_1", "add_5"} <= set(nodes)
    assert "block" not in nodes and "add_[1-5]" not in nodes
    assert {c["label"] for c in clusters} == {"block", "add_[1-5]", "root: side panel"}
    names = [o["name"] for o in data["objects"]]
    ends = {(names[e["tail"]], names[e["head"]]) for e in data["edges"]}
    assert ("block/MatMul", "block/Relu") in ends and ("x", "block/MatMul") in ends
    assert ("add_4", "add_5") in ends


def test_bad_depth_and_rankdir() -> None:
    v = model()
    for depth in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="depth"):
            view_to_dot(v, depth=depth)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rankdir"):
        view_to_dot(v, rankdir="XX")
    assert "rankdir=LR" in view_to_dot(v, rankdir="LR")
    assert "rankdir=BT" in view_to_dot(v)


def test_hostile_names_with_graphviz() -> None:
    v = hostile_view()
    text = view_to_dot(v, depth=3)
    data = graphviz_json(text)
    nodes, clusters = nodes_and_clusters(data)
    expected = {dot_id(n) for n, node in v.nodes.items() if isinstance(node, OpNode)}
    assert set(nodes) == expected  # one node per op, nothing injected
    assert "pwn" not in nodes and not any(n.startswith("pwn") for n in nodes)
    assert {c["label"] for c in clusters} >= {'sc"ope'}
    # Labels are the last segment, escaped so Graphviz shows them literally.
    assert nodes[dot_id("\\N\\G\\l\\")]["label"] == "\\\\N\\\\G\\\\l\\\\"
    assert nodes[dot_id("new\nline")]["label"] == "new\\nline"
    assert nodes[dot_id("bell\x07")]["label"] == "bell\\\\x07"
    # Rendering works too (labels with escapes are valid escString).
    assert DOT is not None
    r = subprocess.run([DOT, "-Tsvg"], input=text.encode(), capture_output=True, timeout=120,
                       check=False)
    assert r.returncode == 0 and b"pwned" in r.stdout and b"<script>" not in r.stdout


def test_hostile_names_with_pydot() -> None:
    _need("pydot", HAVE_PYDOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyparsing's deprecation warnings in pydot
        import pydot

        v = hostile_view()
        graphs = pydot.graph_from_dot_data(view_to_dot(v, depth=3))
    assert graphs is not None and len(graphs) == 1
    found: set[str] = set()
    stack = [graphs[0]]
    while stack:
        g = stack.pop()
        found.update(n.get_name() for n in g.get_nodes() if n.get_name() not in
                     ("node", "edge", "graph"))
        stack.extend(g.get_subgraphs())
    expected = {dot_quote(n) for n, node in v.nodes.items() if isinstance(node, OpNode)}
    assert found == expected


def test_dot_of_real_models() -> None:
    from tests.graph_models import synthetic_graph

    v = build_view(synthetic_graph(2, 2))
    for depth in (1, 2, 3, 50):
        data = graphviz_json(view_to_dot(v, depth=depth))
        nodes, _ = nodes_and_clusters(data)
        # Every op is drawn exactly once when everything is open.
        if depth == 50:
            ops = {dot_id(n) for n, node in v.nodes.items() if isinstance(node, OpNode)}
            assert set(nodes) == ops


def test_dot_is_deterministic() -> None:
    assert view_to_dot(model(), depth=2) == view_to_dot(model(), depth=2)


# --- SVG ---------------------------------------------------------------------------------


def svg_tree(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == SVG + "svg"
    return root


def test_svg_well_formed_and_complete() -> None:
    v = model()
    root = svg_tree(view_to_svg(v, depth=1))
    titles = [t.text for t in root.iter(SVG + "title")]
    assert "block (meta, 3 ops)" in titles and "add_[1-5] (series, 5 ops)" in titles
    texts = [t.text for t in root.iter(SVG + "text")]
    assert {"x", "block", "3 ops", "add_[1-5]", "5 \u00d7 Add", "init", "← block"} <= set(texts)
    assert root.findall(f".//{SVG}polyline")  # edges
    dashed = [p for p in root.iter(SVG + "polyline") if p.get("stroke-dasharray")]
    assert dashed  # the control edge
    w, h = float(root.get("width", "0")), float(root.get("height", "0"))
    assert w > 100 and h > 50
    # Opening a level draws the open groups as frames and their ops.
    root2 = svg_tree(view_to_svg(v, depth=2))
    opened = [g for g in root2.iter(SVG + "g") if g.get("class") == "group open"]
    assert len(opened) == 2
    texts2 = {t.text for t in root2.iter(SVG + "text")}
    assert {"MatMul", "Relu", "Tanh", "add_1", "add_5"} <= texts2


def test_svg_escapes_hostile_names() -> None:
    v = hostile_view()
    text = view_to_svg(v, depth=3)
    root = svg_tree(text)
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    titles = {t.text for t in root.iter(SVG + "title")}
    for name, node in v.nodes.items():
        if isinstance(node, OpNode):
            want = f"{name} ({node.op})".replace("\x07", "\ufffd")
            assert want in titles
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_svg_of_real_models() -> None:
    from tests.graph_models import synthetic_graph

    v = build_view(synthetic_graph(2, 2))
    for depth in (1, 2, 4):
        root = svg_tree(view_to_svg(v, depth=depth))
        shown = {t.text for t in root.iter(SVG + "title")}
        visible = [n for n in v.nodes if n and all(
            p in open_groups(v, depth) for p in _ancestors(v, n))]
        assert len(shown) >= len(visible) - len(open_groups(v, depth))


def _ancestors(v: GraphView, name: str) -> list[str]:
    out = []
    node = v.nodes[name]
    while node.parent is not None:
        out.append(node.parent)
        parent = v.nodes[node.parent]
        assert isinstance(parent, GroupNode)
        node = parent
    return out
