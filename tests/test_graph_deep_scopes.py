"""Names thousands of scopes deep: every graph view export, the diff, the CLI and lint.

Scopes come from untrusted names, so their nesting is unbounded; each walk over them must
loop, not recurse (Python's default recursion limit is 1000 frames).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarylib.graph import Graph, GraphBuilder, Node, TensorSpec, check
from summarylib.graph.view import (
    GraphView,
    build_view,
    diff_to_html,
    diff_to_json,
    diff_to_text,
    diff_views,
    view_to_dot,
    view_to_html,
    view_to_json,
    view_to_svg,
)
from summarylib.graph.view.layout import layout_view
from tests.page_data_reader import html_page_data, json_records, read_page_data

ROOT = Path(__file__).resolve().parent.parent
DEPTHS = [500, 3000]
ALL_OPEN = 10**6  # a DOT/SVG depth that opens every group


def deep_scope(depth: int) -> str:
    return "/".join(f"s{i}" for i in range(depth))


def deep_graph(depth: int, extra: bool = False) -> Graph:
    """x -> <depth scopes>/relu -> <depth scopes>/relu_1 -> out (plus relu_2 if extra)."""
    scope = deep_scope(depth)
    spec = TensorSpec((2, 3), "float32")
    nodes = [
        Node("x", "Placeholder", outputs=[spec]),
        Node(f"{scope}/relu", "Relu", inputs=["x"], outputs=[spec]),
        Node(f"{scope}/relu_1", "Relu", inputs=[f"{scope}/relu"], outputs=[spec]),
        Node("out", "Identity", inputs=[f"{scope}/relu_1"], outputs=[spec]),
    ]
    if extra:
        nodes.append(Node(f"{scope}/relu_2", "Relu", inputs=[f"{scope}/relu"], outputs=[spec]))
    return Graph(nodes)


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Only for reading the result back with ``json.loads``, which itself recurses."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


def loads_deep(text: str) -> Any:
    with recursion_limit(50_000):
        return json.loads(text)


def chain(group: dict[str, Any]) -> list[dict[str, Any]]:
    """The groups from ``group`` down the only nested group child, in order."""
    out = [group]
    while True:
        kids = [c for c in out[-1]["children"] if c["kind"] != "op"]
        if not kids:
            return out
        assert len(kids) == 1
        out.append(kids[0])


@pytest.fixture(scope="module", params=DEPTHS)
def deep(request: pytest.FixtureRequest) -> tuple[int, Graph, GraphView]:
    depth = request.param
    g = deep_graph(depth)
    return depth, g, build_view(g)


def test_view_hierarchy(deep: tuple[int, Graph, GraphView]) -> None:
    depth, _, view = deep
    scope = deep_scope(depth)
    assert view.nodes[f"{scope}/relu"].parent == scope
    assert view.nodes["s0"].depth == depth  # its height: 1 for the group holding the ops


def test_json(deep: tuple[int, Graph, GraphView]) -> None:
    depth, _, view = deep
    from summarylib.graph.view.json_export import json_text

    data = view_to_json(view)
    groups = chain(data["root"])
    assert [g["name"] for g in groups[1:]] == [
        "/".join(f"s{i}" for i in range(k + 1)) for k in range(depth)]
    leaf_ops = [c["name"] for c in groups[-1]["children"]]
    assert leaf_ops == [f"{deep_scope(depth)}/relu", f"{deep_scope(depth)}/relu_1"]
    text = json_text(data)
    with recursion_limit(50_000):  # == on nested dicts recurses too
        assert json.loads(text) == data
        assert text == json.dumps(data, ensure_ascii=True, allow_nan=False,
                                  separators=(",", ":"))


def test_html(deep: tuple[int, Graph, GraphView]) -> None:
    depth, _, view = deep
    page = view_to_html(view)
    block = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page,
                      re.S)
    assert block is not None
    payload = json.loads(block.group(1))  # flat: the view is compressed columns
    # Every node as view_to_json writes it, read back from the page's columns.
    records = read_page_data(html_page_data(page))
    assert records == json_records(view)
    assert records[deep_scope(depth)]["children"] == [
        f"{deep_scope(depth)}/relu", f"{deep_scope(depth)}/relu_1"]
    # No geometry in the page (it lays groups out when they open); the deepest scope
    # lays out like any other.
    assert "layout" not in payload
    assert deep_scope(depth) in layout_view(view, groups=[deep_scope(depth)])


def test_dot(deep: tuple[int, Graph, GraphView]) -> None:
    depth, _, view = deep
    dot = view_to_dot(view, depth=ALL_OPEN)
    lines = dot.splitlines()
    opened = [i for i, line in enumerate(lines) if line.lstrip().startswith("subgraph")]
    assert len(opened) == depth  # one cluster per scope, each inside the one before
    indents = [len(lines[i]) - len(lines[i].lstrip()) for i in opened]
    assert indents == [2 + 2 * k for k in range(depth)]
    assert dot.count("{") == dot.count("}")
    leaf = f'{" " * (2 + 2 * depth)}"{deep_scope(depth)}/relu" ['
    assert any(line.startswith(leaf) for line in lines)
    assert f'"{deep_scope(depth)}/relu" -> "{deep_scope(depth)}/relu_1"' in dot
    # The default depth draws the outermost scope closed.
    assert "subgraph" not in view_to_dot(view)


def test_svg(deep: tuple[int, Graph, GraphView]) -> None:
    depth, _, view = deep
    root = ET.fromstring(view_to_svg(view, depth=ALL_OPEN))
    svg = "{http://www.w3.org/2000/svg}"
    frames = [g for g in root.iter(f"{svg}g") if g.get("class") == "group open"]
    assert len(frames) == depth
    ops = [g for g in root.iter(f"{svg}g") if g.find(f"{svg}ellipse") is not None]
    titles = {g.findtext(f"{svg}title", "").split("\n")[0] for g in ops}
    assert any(t.startswith(f"{deep_scope(depth)}/relu") for t in titles)


def test_lint(deep: tuple[int, Graph, GraphView]) -> None:
    _, g, _ = deep
    # Only the note that no node has a device: the depth itself is no problem.
    assert [i.code for i in check(g)] == ["no-device"]
    assert check(g.to_graph_def()) == check(g)


def test_diff(deep: tuple[int, Graph, GraphView]) -> None:
    depth, _, view = deep
    d = diff_views(view, build_view(deep_graph(depth, extra=True)))
    added = f"{deep_scope(depth)}/relu_2"
    assert f"+ op {added} (Relu)" in diff_to_text(d)
    assert added in diff_to_html(d)
    data = diff_to_json(d)
    scopes = [data["root"]]
    while scopes[-1]["children"]:
        scopes.append(scopes[-1]["children"][0])
    assert [op["name"] for op in scopes[-1]["added_ops"]] == [added]


def test_builder_reenters_a_deep_scope() -> None:
    scope = deep_scope(3000)
    b = GraphBuilder()
    x = b.placeholder((2,), "float32", name="x")
    with b.name_scope(scope + "/"):
        y = b.op("Relu", [x])
    assert y.name == f"{scope}/Relu"
    assert Graph.from_graph_def(b.graph.to_bytes()) == b.graph


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "summarylib", *args], capture_output=True,
                          text=True, env=env, timeout=400, check=False)


def test_cli_json_and_diff(tmp_path: Path) -> None:
    depth = 3000
    a, b = tmp_path / "a.pb", tmp_path / "b.pb"
    a.write_bytes(deep_graph(depth).to_bytes())
    b.write_bytes(deep_graph(depth, extra=True).to_bytes())
    r = run_cli("graph", str(a), "--format", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    data = loads_deep(r.stdout)
    assert data["stats"] == {"ops": 4, "edges": 3, "groups": depth}
    # The diff's fuzzy matching compares every scope's subtree: quadratic in the depth.
    depth = 1500
    a.write_bytes(deep_graph(depth).to_bytes())
    b.write_bytes(deep_graph(depth, extra=True).to_bytes())
    r = run_cli("graph-diff", str(a), str(b), "--format", "json")
    assert r.returncode == 1, r.stderr[-2000:]  # 1: the graphs differ
    assert f"{deep_scope(depth)}/relu_2" in r.stdout
    assert loads_deep(r.stdout)["stats"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(JSON_VALUES, st.sampled_from([(",", ":"), (", ", ": "), (",", ": ")]),
       st.sampled_from([None, 0, 2]))
def test_json_text_matches_json_dumps_past_the_recursion_limit(
    value: Any, separators: tuple[str, str], indent: int | None
) -> None:
    from summarylib.graph.view.json_export import json_text

    nested = value
    for i in range(1100):  # deeper than the default limit: json.dumps itself would fail
        nested = [nested, i] if i % 2 else {"k": nested}
    with recursion_limit(50_000):
        want = json.dumps(nested, ensure_ascii=True, allow_nan=False, separators=separators,
                          indent=indent)
    assert json_text(nested, separators, indent=indent) == want


def test_json_text_non_finite_numbers() -> None:
    from summarylib.graph.view.json_export import json_text

    nested: Any = [float("nan"), float("inf"), 1.5]
    for _ in range(1200):
        nested = {"a": nested}
    text = json_text(nested, nan="null")
    assert text.endswith('[null,null,1.5]' + "}" * 1200)
    with pytest.raises(ValueError):
        json_text(nested)
