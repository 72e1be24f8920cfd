"""The page lays groups out when they are opened: its JavaScript layout (assets/layout.js)
gives the coordinates of the Python layout (layout.layout_group), and big groups are laid
out in a Web Worker while the page stays responsive.

The big graph's page is shared by the module's tests (it takes seconds to build, write
and open on two cores).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from summarylib.graph import Graph, Node, TensorSpec
from summarylib.graph.view import GraphView, GroupNode, build_view
from summarylib.graph.view import layout as lay
from summarylib.graph.view.html_export import view_to_html
from tests import graph_models as gm
from tests.browser import chromium_page, wait_until
from tests.helpers import ancestors

# Coordinates are rounded to 0.1 px on both sides; a double that lands on the other side
# of a rounding boundary would differ by one step.
TOL = 0.1 + 1e-9


def _page(view: GraphView, path: Path) -> Iterator[Any]:
    path.write_text(view_to_html(view), encoding="utf-8")
    with chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(path.as_uri())
        wait_until(page, "window.summarylibViewer && window.summarylibViewer.timing.frame",
                   timeout_ms=120_000)
        yield page
        assert errors == []


def _same_layout(got: dict[str, Any], want: dict[str, Any], name: str) -> None:
    assert got["chunks"] == want["chunks"], name
    assert got["panel"] == want["panel"], name
    assert got["w"] == pytest.approx(want["w"], abs=TOL), name
    assert got["h"] == pytest.approx(want["h"], abs=TOL), name
    assert len(got["nodes"]) == len(want["nodes"]), name
    for a, b in zip(got["nodes"], want["nodes"], strict=True):
        assert a == pytest.approx(b, abs=TOL), name
    assert len(got["edges"]) == len(want["edges"]), name
    for a, b in zip(got["edges"], want["edges"], strict=True):
        assert (a is None) == (b is None), name
        if a is not None:
            assert a[0] == pytest.approx(b[0], abs=TOL), name
            assert a[1] == pytest.approx(b[1], abs=0.01 + 1e-9), name
            assert a[2] == b[2], name


def _groups(view: GraphView) -> list[str]:
    return [k for k, v in view.nodes.items() if isinstance(v, GroupNode)]


@pytest.mark.parametrize(("rankdir", "layers"), [("BT", 24), ("LR", 4)])
def test_page_layout_of_every_group_is_the_python_layout(rankdir: str, layers: int,
                                                         tmp_path: Path) -> None:
    view = build_view(gm.synthetic_graph(layers), rankdir=rankdir)
    names = _groups(view)
    want = lay.layout_to_json(view, lay.layout_view(view))
    for page in _page(view, tmp_path / "g.html"):
        got = page.evaluate("names => names.map(n => window.summarylibViewer.layoutOf(n))",
                            names)
    assert len(got) == len(names) > 10
    for name, g in zip(names, got, strict=True):
        _same_layout(g, want[name], name)  # type: ignore[arg-type]


def _chain_view(n: int) -> GraphView:
    # One scope of n ops in a chain (names without a numeric suffix: no series).
    spec = TensorSpec((8, 3), "float32")
    nodes = [Node(f"big/o{i}x", "Relu", [f"big/o{i - 1}x"] if i else [], outputs=[spec])
             for i in range(n)]
    return build_view(Graph(nodes))


@pytest.mark.parametrize("worker", [True, False])
def test_a_big_group_opens_with_or_without_a_worker(worker: bool, tmp_path: Path) -> None:
    """Where the page's policy forbids the worker's Blob URL, the page lays the group out
    itself: the group still opens, with the same layout."""
    view = _chain_view(300)
    html = view_to_html(view)
    if not worker:
        assert "worker-src blob:; " in html
        html = html.replace("worker-src blob:; ", "")
    path = tmp_path / "g.html"
    path.write_text(html, encoding="utf-8")
    with chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        wait_until(page, "window.summarylibViewer && window.summarylibViewer.timing.frame")
        page.evaluate("window.summarylibViewer.expand('big')")
        wait_until(page, "window.summarylibViewer.expanded().includes('big')")
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        assert errors == []
    scene = lay.compose(view, lay.layout_view(view), {"big"})
    assert set(boxes) == set(scene.boxes)
    for name, box in scene.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=TOL), name


# After every test with a page of its own: the module's page holds playwright's one
# sync session until the module ends.
@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GraphView, Any]]:
    # 260 layers (about 41,000 nodes): the series of layers has more than 240 children.
    view = build_view(gm.synthetic_graph(260))
    path = tmp_path_factory.mktemp("big") / "g.html"
    yield from ((view, page) for page in _page(view, path))


def test_big_graph_paints_its_top_level_only(big: tuple[GraphView, Any]) -> None:
    view, page = big
    assert page.evaluate("window.summarylibViewer.expanded()") == [""]
    drawn = {n for n, _ in page.evaluate("window.summarylibViewer.boxes()")}
    assert drawn == {"", *view.root.children}


def test_search_opens_the_ancestors_of_a_deep_node(big: tuple[GraphView, Any]) -> None:
    view, page = big
    # The deepest op of the last layer: its ancestors include the series of layers, a
    # group of more than 240 children (laid out in the worker: the reveal completes later).
    target = max((n for n in view.nodes if n.startswith("model/layer_")),
                 key=lambda n: (n.count("/"), n))
    chain = ancestors(view, target)
    assert any(len(view.nodes[g].children) > 240 for g in chain)  # type: ignore[union-attr]
    page.evaluate("name => window.summarylibViewer.reveal(name)", target)
    wait_until(page, "window.summarylibViewer.expanded().length > 1 && "
                     "window.summarylibViewer.pending() === 0")
    opened = set(page.evaluate("window.summarylibViewer.expanded()"))
    assert set(chain) <= opened
    boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
    assert target in boxes
    # What the page drew is Python's composition of the same open groups.
    scene = lay.compose(view, lay.layout_view(view, groups=["", *chain]), opened)
    assert set(boxes) == set(scene.boxes)
    for name, box in scene.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=TOL), name


def test_worker_layouts_of_big_groups_are_the_python_layouts(
        big: tuple[GraphView, Any]) -> None:
    view, page = big
    names = [g for g in _groups(view) if len(view.nodes[g].children) > 240]  # type: ignore[union-attr]
    want = lay.layout_to_json(view, lay.layout_view(view, groups=names))
    assert any(w["chunks"] > 1 for w in want.values())  # type: ignore[index]
    for name in names:
        page.evaluate("name => { window.summarylibViewer.collapse(name); "
                      "window.summarylibViewer.expand(name); }", name)
        wait_until(page, "window.summarylibViewer.pending() === 0 && "
                         f"window.summarylibViewer.expanded().includes({name!r})")
        got = page.evaluate("name => window.summarylibViewer.layoutOf(name)", name)
        _same_layout(got, want[name], name)  # type: ignore[arg-type]

