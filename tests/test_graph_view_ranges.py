"""Groups of more than 1,000 children are drawn as ranges of 1,000, everywhere: the page,
the Python layout and composition, DOT and SVG, and the statistics overlay, by one rule
(``summarylib.graph.view.ranges``). The page's ranges are read back from Chromium and
compared with Python's; a range's statistic is checked against the reader's values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.graph import Graph, Node, TensorSpec
from summarylib.graph.view import GraphView, GroupNode, Metaedge, build_view
from summarylib.graph.view import layout as lay
from summarylib.graph.view.dot_export import view_to_dot, view_to_svg
from summarylib.graph.view.html_export import view_to_html
from summarylib.graph.view.ranges import RANGE, range_names, with_ranges
from summarylib.graph.view.statistics import read_statistics, statistics_to_json
from summarylib.reader import read_columns
from tests.browser import chromium_page, wait_until

F = TensorSpec((8, 3), "float32")
TOL = 0.1 + 1e-9
RANGES = ["big/children 0\u2013999", "big/children 1000\u20131999",
          "big/children 2000\u20132499"]


def _chain(n: int = 2500) -> list[Node]:
    # n ops in a chain in one scope (no numeric suffix: no series), and an op after it.
    ops = [Node(f"big/o{i}x", "Relu", [f"big/o{i - 1}x"] if i else [], outputs=[F])
           for i in range(n)]
    return [*ops, Node("out", "Neg", [ops[-1].name], outputs=[F])]


def _open(page: Any, html: str, path: Path) -> list[str]:
    path.write_text(html, encoding="utf-8")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    wait_until(page, "window.summarylibViewer && window.summarylibViewer.timing.frame")
    return errors


def _expand(page: Any, name: str) -> None:
    page.evaluate("name => window.summarylibViewer.expand(name)", name)
    wait_until(page, "window.summarylibViewer.pending() === 0 && "
                     f"window.summarylibViewer.expanded().includes({name!r})")


def test_python_lays_out_and_composes_the_pages_ranges(tmp_path: Path) -> None:
    view = build_view(Graph(_chain()))
    drawn = with_ranges(view)
    big = drawn.nodes["big"]
    assert isinstance(big, GroupNode) and big.children == RANGES
    assert set(lay.layout_view(view, groups=["big"])["big"].nodes) == set(RANGES)
    opened = {"big", RANGES[1]}
    scene = lay.compose(view, lay.layout_view(view, groups=["", *opened]), opened)
    want_layout = lay.layout_to_json(view, lay.layout_view(view, groups=[RANGES[1]]))
    with chromium_page() as page:
        errors = _open(page, view_to_html(view), tmp_path / "ranges.html")
        _expand(page, "big")
        _expand(page, RANGES[1])
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        records = page.evaluate("names => names.map(n => window.summarylibViewer.nodeData(n))",
                                RANGES)
        got_layout = page.evaluate("n => window.summarylibViewer.layoutOf(n)", RANGES[1])
        assert errors == []
    # The page's drawing is Python's composition of the same open groups and ranges.
    assert set(boxes) == set(scene.boxes)
    assert len(boxes) == 1 + 2 + 3 + 1000
    for name, box in scene.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=TOL), name
    want_nodes = want_layout[RANGES[1]]["nodes"]  # type: ignore[index]
    assert len(got_layout["nodes"]) == len(want_nodes) == 1000
    for a, b in zip(got_layout["nodes"], want_nodes, strict=True):
        assert a == pytest.approx(b, abs=TOL)
    # Each range holds the same children, counts and metaedges on both sides.
    for rec, name in zip(records, RANGES, strict=True):
        node = drawn.nodes[name]
        assert isinstance(node, GroupNode)
        assert rec["children"] == node.children
        assert (rec["cardinality"], rec["depth"]) == (node.cardinality, node.depth)
        assert [(m["v"], m["w"], m["regular"]) for m in rec["metaedges"]] == [
            (m.v, m.w, m.regular) for m in node.metaedges]
    # The chain's two links between ranges are two metaedges of the group.
    assert [(m.v, m.w, m.regular) for m in big.metaedges] == [
        (RANGES[0], RANGES[1], 1), (RANGES[1], RANGES[2], 1)]


def test_a_range_is_named_apart_from_a_child_as_in_the_page() -> None:
    # The page's own test (test_graph_view_page_data) gives it the same name.
    clash = "big/children 0\u2013999"
    ops = [Node(clash, "Relu", outputs=[F])]
    ops += [Node(f"big/o{i}x", "Relu", [ops[-1].name], outputs=[F]) for i in range(1200)]
    big = build_view(Graph(ops)).nodes["big"]
    assert isinstance(big, GroupNode)
    assert range_names(big) == [clash + "\u2009", "big/children 1000\u20131200"]


def test_dot_and_svg_draw_the_ranges() -> None:
    view = build_view(Graph(_chain()))
    dot = view_to_dot(view, depth=2)
    for name in RANGES:
        assert f'"{name}" [label="children' in dot
    assert "big/o5x" not in dot  # the ops are inside the closed ranges
    assert f'"{RANGES[0]}" -> "{RANGES[1]}"' in dot
    assert f'"{RANGES[2]}" -> "out"' in dot
    deeper = view_to_dot(view, depth=3)
    assert '"big/o5x"' in deeper and f'"{RANGES[0]}" [' not in deeper
    svg = view_to_svg(view, depth=2)
    assert all(f"<title>{name} (meta, " in svg for name in RANGES)
    assert "1000 ops" in svg and "500 ops" in svg


@st.composite
def _groups(draw: st.DrawFn) -> GroupNode:
    n = draw(st.integers(RANGE + 1, 3 * RANGE + 7))
    kids = [f"g/c{i}" for i in range(n)]
    ends = st.integers(0, n - 1)
    mes = [Metaedge(kids[v], kids[w], regular=r, control=c, size=r * 3,
                    shapes=[(r,)] if r else [])
           for v, w, r, c in draw(st.lists(st.tuples(ends, ends, st.integers(0, 3),
                                                     st.integers(0, 2)), max_size=60))]
    return GroupNode("g", children=kids, metaedges=mes, cardinality=n)


@settings(max_examples=50, deadline=None)
@given(_groups())
def test_ranges_partition_the_children_and_their_metaedges(group: GroupNode) -> None:
    from summarylib.graph.view.model import OpNode

    nodes: dict[str, Any] = {"": GroupNode("", children=["g"]), "g": group}
    nodes.update({c: OpNode(c, "Relu", parent="g") for c in group.children})
    view = GraphView(nodes, [], {})
    drawn = with_ranges(view)
    g = drawn.nodes["g"]
    assert isinstance(g, GroupNode)
    ranges = [drawn.nodes[r] for r in g.children]
    assert [c for r in ranges for c in r.children] == group.children  # type: ignore[union-attr]
    assert all(len(r.children) == RANGE for r in ranges[:-1])  # type: ignore[union-attr]
    for r in ranges:
        assert isinstance(r, GroupNode)
        assert all(drawn.nodes[c].parent == r.name for c in r.children)
        assert all(m.v in r.children and m.w in r.children for m in r.metaedges)
    # Every metaedge is in one range, or summed into one between two ranges.
    for key in ("regular", "control", "size"):
        total = sum(getattr(m, key) for m in group.metaedges)
        assert sum(getattr(m, key) for r in [g, *ranges]
                   for m in r.metaedges) == total  # type: ignore[union-attr]
    assert view.nodes["g"] is group and group.children[0] in view.nodes  # left as it was
    assert with_ranges(drawn) is drawn


def test_a_range_shows_the_aggregate_of_its_members(tmp_path: Path) -> None:
    """A statistic of ops in two ranges of one group: each range shows the max (mean,
    min) of its members' values at the step, as a group does, and the group the same over
    all; the values are the reader's."""
    import summarylib as sl
    import summarylib.graph as sg

    logged = {5: 0, 700: 0, 1500: 1, 2400: 2}  # op index -> its range
    writer = sl.create_file_writer(str(tmp_path / "run"))
    with writer.as_default():
        sg.write_graph(Graph(_chain()))
        for step in range(3):
            for i in logged:
                if i != 700 or step != 1:  # o700x skips a step: it keeps its last value
                    sl.scalar(f"big/o{i}x/grad_norm", float(i % 97 + step * i % 13), step=step)
    writer.close()
    from summarylib.graph.view import load_graph

    view = build_view(load_graph(str(tmp_path / "run")).graph_def)
    stats = read_statistics(tmp_path / "run", view)
    block = statistics_to_json(view, [stats])
    groups = dict(block["groups"])
    nodes = block["nodes"]
    for k, name in enumerate(RANGES):
        assert sorted(nodes[i] for i in groups[name]) == sorted(
            f"big/o{i}x" for i, r in logged.items() if r == k)
    # The reader's values: each op's last value at or before the step.
    cols = read_columns(str(tmp_path / "run"), kinds=("scalars",))["."]
    series = {tag[:-len("/grad_norm")]: dict(zip(c.step.tolist(), c.value.tolist(),
                                                 strict=True))
              for tag, c in cols.items()}

    def at(op: str, step: int) -> float:
        return series[op][max(s for s in series[op] if s <= step)]

    with chromium_page() as page:
        errors = _open(page, view_to_html(view, statistics=stats), tmp_path / "stats.html")
        wait_until(page, "window.summarylibStats")
        page.evaluate("window.summarylibStats.select('grad_norm')")
        _expand(page, "big")
        for agg, fn in (("max", max), ("min", min), ("mean", lambda v: sum(v) / len(v))):
            page.evaluate("a => window.summarylibStats.setAggregate(a)", agg)
            for step in range(3):
                page.evaluate("s => window.summarylibStats.setStep(s)", step)
                for k, name in enumerate(RANGES):
                    want = fn([at(f"big/o{i}x", step) for i, r in logged.items() if r == k])
                    got = page.evaluate("n => window.summarylibStats.value(n)", name)
                    assert got == pytest.approx(want, rel=1e-6), (agg, step, name)
                everything = fn([at(f"big/o{i}x", step) for i in logged])
                assert page.evaluate("window.summarylibStats.value('big')") == pytest.approx(
                    everything, rel=1e-6)
        # The drawn range boxes are coloured by their value.
        fill = page.locator(f"[data-name='{RANGES[0]}'] > .shape").get_attribute("fill")
        assert fill == page.evaluate("n => window.summarylibStats.colour(n)", RANGES[0])
        assert errors == []
