"""The self-contained HTML view: the layout in Python, then the page in headless Chromium.

The page must open from disk with no console message or page error, show the top level
collapsed, open and close groups on click (placed where ``layout.compose`` says), colour
identical blocks alike, keep hostile names as text, and paint a 10k-node graph quickly.
Screenshots go to ``$SUMMARYLIB_ARTIFACTS/graph_view_html`` (else the test's tmp_path);
with ``SUMMARYLIB_DOCS_IMAGES=1`` the ResNet ones are also written to ``docs/images``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from summarylib.graph import Graph, Node, TensorSpec
from summarylib.graph.view import GraphView, GroupNode, OpNode, build_view
from summarylib.graph.view import layout as lay
from summarylib.graph.view.html_export import (
    BLOB_KEYS,
    PLUGIN_SCRIPTS,
    embed_json,
    view_to_html,
)
from summarylib.graph.view.ranges import with_ranges
from tests import graph_models as gm
from tests.browser import chromium_page, wait_until

ROOT = Path(__file__).resolve().parent.parent
F = TensorSpec((8, 3), "float32")
EVIL_IMG = "<img src=x onerror=window.__pwned=1>"
EVIL_SCRIPT = "</script><script>window.__pwned=1</script>"


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    env = os.environ.get("SUMMARYLIB_ARTIFACTS")
    out = Path(env) / "graph_view_html" if env else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


def _graph(*nodes: Node) -> Graph:
    return Graph(list(nodes))


def _blocks_graph() -> Graph:
    """Input, three identical blocks, one different block, an output."""
    nodes = [Node("x", "Placeholder", outputs=[F], device="/device:CPU:0")]
    prev = "x"
    for b in ("blk_a", "blk_b", "blk_c"):
        nodes += [
            Node(f"{b}/conv", "Conv2D", [prev], outputs=[F], device="/device:GPU:0"),
            Node(f"{b}/bn", "FusedBatchNorm", [f"{b}/conv"], outputs=[F], device="/device:GPU:0"),
            Node(f"{b}/relu", "Relu", [f"{b}/bn"], outputs=[F], device="/device:GPU:0"),
            Node(f"{b}/add", "AddV2", [f"{b}/relu", prev], outputs=[F], device="/device:GPU:0"),
        ]
        prev = f"{b}/add"
    nodes += [
        Node("odd/mean", "Mean", [prev], outputs=[TensorSpec((8,), "float32")]),
        Node("odd/softmax", "Softmax", ["odd/mean"], outputs=[TensorSpec((8,), "float32")]),
        Node("out", "Identity", ["odd/softmax"], outputs=[TensorSpec((), "float32")]),
    ]
    return _graph(*nodes)


def _resnet_view() -> GraphView:
    why = gm.missing("resnet")
    if why:
        pytest.skip(why)
    return build_view(gm.resnet_graph())


# --- layout in Python --------------------------------------------------------------------


def test_edge_labels_and_widths_follow_tensorboard() -> None:
    assert lay.edge_label([(8, 3)]) == "8\u00d73"
    assert lay.edge_label([(None, 3)]) == "?\u00d73"
    assert lay.edge_label([()]) == "scalar"
    assert lay.edge_label([None]) == "?"
    assert lay.edge_label([(1,), (2,), (3,)]) == "3 tensors"
    assert lay.edge_label([]) == ""
    assert lay.edge_width(0) == lay.edge_width(1) == pytest.approx(0.75)
    assert lay.edge_width(5_000_000) == lay.edge_width(10**9) == pytest.approx(12.0)
    mid = lay.edge_width(5000)
    assert 0.75 < mid < 12.0
    # TensorBoard's power scale (exponent 0.3) over [1, 5e6].
    assert mid == pytest.approx(0.75 + 11.25 * (5000**0.3 - 1) / (5e6**0.3 - 1))


def _disjoint(boxes: list[lay.Box]) -> bool:
    """No two boxes overlap (a sweep over x keeps it near-linear for chains)."""
    order = sorted(boxes, key=lambda b: b.x - b.w / 2)
    active: list[lay.Box] = []
    for b in order:
        left = b.x - b.w / 2
        active = [a for a in active if a.x + a.w / 2 > left + 1e-6]
        for a in active:
            if abs(a.y - b.y) < (a.h + b.h) / 2 - 1e-6:
                return False
        active.append(b)
    return True


@pytest.mark.parametrize("rankdir", ["BT", "TB", "LR", "RL"])
def test_layout_flows_in_rankdir_without_overlaps(rankdir: str) -> None:
    g = _graph(
        Node("a", "Placeholder", outputs=[F]),
        Node("b", "Relu", ["a"], outputs=[F]),
        Node("c", "Tanh", ["a"], outputs=[F]),
        Node("d", "AddV2", ["b", "c"], outputs=[F]),
        Node("e", "Identity", ["d", "a"], outputs=[F]),
    )
    view = build_view(g, rankdir=rankdir)
    layout = lay.layout_view(view)[""]
    boxes = layout.nodes
    assert _disjoint(list(boxes.values()))
    axis = {"BT": (1, -1), "TB": (1, 1), "LR": (0, 1), "RL": (0, -1)}[rankdir]
    for src, dst in [("a", "b"), ("b", "d"), ("c", "d"), ("d", "e"), ("a", "e")]:
        delta = boxes[dst][axis[0]] - boxes[src][axis[0]]
        assert delta * axis[1] > 0, (src, dst, boxes[src], boxes[dst])
    for b in boxes.values():
        assert b.w / 2 - 0.1 <= b.x <= layout.width - b.w / 2 + 0.1
        assert b.h / 2 - 0.1 <= b.y <= layout.height - b.h / 2 + 0.1
    # The long edge a -> e bends around the layer of b and c.
    i = next(k for k, me in enumerate(view.root.metaedges) if (me.v, me.w) == ("a", "e"))
    route = layout.edges[i]
    assert route is not None and len(route.points) == 2


def test_big_groups_are_laid_out_in_chunks() -> None:
    # 700 ops of varied types (no series), a chain plus some skips.
    types = ["Relu", "Tanh", "Sigmoid", "Exp", "Log", "Abs", "Neg"]
    nodes = [Node("big/start", "Placeholder", outputs=[F])]
    for i in range(700):
        ins = [nodes[-1].name] + ([nodes[-5].name] if i % 7 == 0 and i >= 5 else [])
        nodes.append(Node(f"big/{types[i % 7]}_op_x{i}y", types[i % 7], ins, outputs=[F]))
    view = build_view(_graph(*nodes), series=False, auto_extract=False)
    group = view.nodes["big"]
    assert isinstance(group, GroupNode) and len(group.children) == 701
    layout = lay.layout_group(view, group)
    assert layout.chunks == math.ceil(701 / lay.CHUNK)
    assert _disjoint(list(layout.nodes.values()))


def test_compose_makes_room_for_open_groups() -> None:
    view = build_view(gm.synthetic_graph(2, 2))
    layouts = lay.layout_view(view)
    opened = {"model", "model/layer_0", "model/layer_0/attn", "model/layer_1"}
    scene = lay.compose(view, layouts, opened)
    for name in ["", *opened]:
        group = view.nodes[name]
        assert isinstance(group, GroupNode)
        kids = [scene.boxes[c] for c in group.children]
        assert _disjoint(kids), name
        frame = scene.boxes[name]
        for b in kids:  # every child inside its parent's frame
            assert frame.x - frame.w / 2 <= b.x - b.w / 2 + 1e-6
            assert b.x + b.w / 2 <= frame.x + frame.w / 2 + 1e-6
            assert frame.y - frame.h / 2 <= b.y - b.h / 2 + 1e-6
            assert b.y + b.h / 2 <= frame.y + frame.h / 2 + 1e-6
    # A closed group keeps its collapsed size; nothing under it is drawn.
    closed = view.nodes["model/layer_0/mlp"]
    assert isinstance(closed, GroupNode)
    assert (scene.boxes[closed.name].w, scene.boxes[closed.name].h) == (
        layouts["model/layer_0"].nodes[closed.name].w,
        layouts["model/layer_0"].nodes[closed.name].h,
    )
    assert not any(c in scene.boxes for c in closed.children)
    # Opening a group moves nothing past anything else: a sibling wholly left of (or
    # above) another stays so (stable expansion).
    before = lay.compose(view, layouts, {"model"})
    after = lay.compose(view, layouts, {"model", "model/layer_0"})
    sibs = view.nodes["model"].children  # type: ignore[union-attr]

    def ends(b: lay.Box, axis: int) -> tuple[float, float]:
        half = (b.w if axis == 0 else b.h) / 2
        return b[axis] - half, b[axis] + half

    for axis in (0, 1):
        for a in sibs:
            for b in sibs:
                if ends(before.boxes[a], axis)[1] <= ends(before.boxes[b], axis)[0]:
                    assert ends(after.boxes[a], axis)[1] <= ends(after.boxes[b], axis)[0] + 1e-6


def test_every_group_of_the_10k_and_100k_graphs_is_laid_out() -> None:
    # How long this takes is bench/graph_view.py's business, not a test's.
    for build in (gm.synthetic_10k, gm.synthetic_100k):
        view = build_view(build())
        layouts = lay.layout_view(view)
        # Every group, and the ranges of those of more than 1,000 children.
        drawn = with_ranges(view)
        assert set(layouts) == {k for k, v in drawn.nodes.items() if isinstance(v, GroupNode)}
        assert set(layouts) >= {k for k, v in view.nodes.items() if isinstance(v, GroupNode)}
        for name, layout in layouts.items():
            assert _disjoint(list(layout.nodes.values())), name


# --- the HTML text --------------------------------------------------------------------------


def test_embedded_json_cannot_leave_its_script_block() -> None:
    payload = {"a": EVIL_SCRIPT, "b": "<!-- x --> & \u2028\u2029 \udcff", "c": float("nan"),
               "d": [float("inf"), 1.5]}
    text = embed_json(payload)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert text.isascii()
    back = json.loads(text)
    assert back["a"] == EVIL_SCRIPT and back["b"] == payload["b"]
    assert back["c"] is None and back["d"] == [None, 1.5]


def test_html_is_one_self_contained_file() -> None:
    page = view_to_html(build_view(_blocks_graph()), title=EVIL_IMG)
    # Nothing is fetched: no src/href attributes, no URL but the SVG namespace.
    assert not re.search(r"(?i)\b(src|href|srcset|action)\s*=\s*[\"']", page)
    urls = set(re.findall(r"[a-z]+://[^\s\"')]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert "@import" not in page and "@font-face" not in page
    # Only our inline scripts (the data block, the layout, the viewer and its plugins); the
    # CSP pins each one that runs.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    # (The near part's block is empty when it has none.)
    blobs = ["near", "blob", "chunks", "later"]
    assert [a for a, _ in scripts] == [' type="application/json" id="graph-data"',
                                       ' id="graph-layout"', "", "", "",
                                       *[f' type="application/octet-stream" id="graph-{b}"'
                                         for b in blobs]]
    # The blobs are base64: nothing in them can end their block or open markup.
    assert all(re.fullmatch(r"[A-Za-z0-9+/=]*", body) for _, body in scripts[-len(blobs):])
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp and "default-src 'none'" in csp.group(1)
    for _, body in scripts[1:-len(blobs)]:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp.group(1)
    assert "<title>&lt;img src=x onerror=window.__pwned=1&gt;</title>" in page
    with pytest.raises(ValueError, match="colour"):
        view_to_html(build_view(_blocks_graph()), colour="rainbow")


def test_viewer_assets_are_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["summarylib"]
    assets = ROOT / "summarylib" / "graph" / "view" / "assets"
    files = sorted(p.relative_to(ROOT / "summarylib").as_posix() for p in assets.iterdir())
    assert {"graph/view/assets/viewer.js", "graph/view/assets/viewer.css"} <= set(files)
    for f in files:
        assert any(fnmatch(f, p) for p in patterns), f


# --- the page in Chromium ---------------------------------------------------------------------


@contextmanager
def _opened(html: str, path: Path) -> Iterator[Any]:
    """The page of ``html`` written to ``path``, loaded from file://; on exit, asserts
    that no console message, page error or request other than the file (and the layout
    worker's Blob URL) happened."""
    path.write_text(html, encoding="utf-8")
    with chromium_page() as page:
        problems: list[str] = []
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        # The file, and the layout worker's Blob URL (made in the page from its own
        # script): nothing else.
        page.on("request", lambda r: None if r.url == path.as_uri() or r.url.startswith(
            "blob:") else problems.append(f"request: {r.url}"))
        page.goto(path.as_uri())
        wait_until(page, "window.summarylibViewer && window.summarylibViewer.timing.frame")
        yield page
        assert problems == []


def _top_names(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "#graph-root > .nodes > [data-name]", "els => els.map(e => e.getAttribute('data-name'))")


def _inside(page: Any, name: str) -> list[str]:
    return page.evaluate(
        """name => {
            const g = Array.from(document.querySelectorAll('[data-name]'))
                .find(e => e.getAttribute('data-name') === name);
            return g ? Array.from(g.querySelectorAll(':scope > .nodes > [data-name]'))
                .map(e => e.getAttribute('data-name')) : null;
        }""",
        name,
    )


def _fill(page: Any, name: str) -> str:
    return page.evaluate(
        """name => Array.from(document.querySelectorAll('[data-name]'))
            .find(e => e.getAttribute('data-name') === name)
            .querySelector(':scope > .shape, :scope > .frame').getAttribute('fill')""",
        name,
    )


def _classes(page: Any, name: str) -> list[str]:
    return str(page.get_attribute(f"[data-name='{name}']", "class")).split()


def _check_against_compose(page: Any, view: GraphView) -> None:
    """The viewer's boxes are layout.compose's for the groups the page has open."""
    opened = set(page.evaluate("window.summarylibViewer.expanded()"))
    scene = lay.compose(view, lay.layout_view(view), opened)
    got = dict(page.evaluate("window.summarylibViewer.boxes()"))
    assert set(got) == set(scene.boxes)
    for name, box in scene.boxes.items():
        assert got[name] == pytest.approx(list(box), abs=1e-6), name


def test_waits_outlast_the_first_check_under_the_pages_csp(tmp_path: Path) -> None:
    """A condition that turns true only after the wait's first check (a slow machine drawing
    a large graph) is still waited for: the page's CSP forbids eval at later polls."""
    with _opened(view_to_html(build_view(_blocks_graph())), tmp_path / "late.html") as page:
        page.evaluate("setTimeout(() => { window.lateFlag = 'set' }, 300)")
        assert page.evaluate("window.lateFlag === undefined")
        assert wait_until(page, "window.lateFlag") == "set"


def test_page_opens_collapsed_and_groups_open_and_close_on_click(
    tmp_path: Path, artifacts: Path
) -> None:
    view = _resnet_view()
    with _opened(view_to_html(view, title="ResNet"), tmp_path / "resnet.html") as page:
        assert _top_names(page) == view.root.children
        assert page.locator("[data-name='layer1/conv1']").count() == 0
        _check_against_compose(page, view)
        page.screenshot(path=str(artifacts / "graph-view-top.png"))
        page.locator("[data-name='layer1'] > .shape").click()
        inner = _inside(page, "layer1")
        assert inner == view.nodes["layer1"].children  # type: ignore[union-attr]
        assert "expanded" in _classes(page, "layer1")
        _check_against_compose(page, view)
        page.locator("[data-name='layer1/se'] > .shape").click()
        assert "layer1/se/fc1" in _inside(page, "layer1/se")
        _check_against_compose(page, view)
        # Edges into the open group go on to the ops inside (bridges), e.g. the skip.
        assert page.locator("[data-name='layer1'] > .edges > .bridge").count() >= 2
        page.screenshot(path=str(artifacts / "graph-view-expanded.png"))
        # Clicking an op shows its card, built from the data.
        page.locator("[data-name='layer1/conv1'] > .shape").dispatch_event("click")
        card = page.inner_text("#card")
        assert "aten::conv2d" in card and "layer1/conv1" in card
        # The header band closes the group again.
        page.locator("[data-name='layer1'] > .header").click()
        assert "expanded" not in _classes(page, "layer1")
        assert page.locator("[data-name='layer1/conv1']").count() == 0
        assert _top_names(page) == view.root.children
        _check_against_compose(page, view)


@pytest.mark.parametrize("name", list(gm.MODELS))
def test_every_test_model_opens_collapsed_and_expands(name: str, tmp_path: Path,
                                                      artifacts: Path) -> None:
    why = gm.missing(name)
    if why:
        pytest.skip(f"{name}: {why}")
    view = build_view(gm.model_graph(name))
    with _opened(view_to_html(view, title=name), tmp_path / f"{name}.html") as page:
        # The top level only, collapsed: the model's modules (groups) and loose ops.
        assert _top_names(page) == view.root.children
        groups = [c for c in view.root.children if isinstance(view.nodes[c], GroupNode)]
        assert groups, "every test model has modules"
        assert page.locator("[data-name]").count() == len(view.root.children)
        page.screenshot(path=str(artifacts / f"{name}-top.png"))
        target = max(groups, key=lambda g: len(view.nodes[g].children))  # type: ignore[union-attr]
        page.locator(f"[data-name='{target}'] > .shape").click()
        assert "expanded" in _classes(page, target)
        assert _inside(page, target) == view.nodes[target].children  # type: ignore[union-attr]
        page.screenshot(path=str(artifacts / f"{name}-expanded.png"))
        if name == "resnet":
            # Identical blocks that hold a nested module (se) share one colour, which
            # the dashboard's own template pass cannot give them.
            assert all(isinstance(view.nodes[f"layer{i}/se"], GroupNode) for i in (1, 2, 3))
            fills = {b: _fill(page, b) for b in ("layer1", "layer2", "layer3", "stem")}
            assert fills["layer1"] == fills["layer2"] == fills["layer3"] != fills["stem"]


def test_structure_device_and_compute_time_colours(tmp_path: Path, artifacts: Path) -> None:
    view = build_view(_blocks_graph())
    blocks = ["blk_a", "blk_b", "blk_c"]
    assert sorted(next(iter(view.templates.values()))) == blocks
    for name, t in zip(["x", "out"], [3.0, 12.0], strict=True):
        op = view.nodes[name]
        assert isinstance(op, OpNode)
        op.compute_time_us = t
    with _opened(view_to_html(view), tmp_path / "blocks.html") as page:
        fills = {n: _fill(page, n) for n in [*blocks, "odd"]}
        assert fills["blk_a"] == fills["blk_b"] == fills["blk_c"] != fills["odd"]
        assert fills["odd"] == "#d9d9d9"  # unique: grey
        page.screenshot(path=str(artifacts / "colour-structure.png"))
        page.select_option("#colour", "device")
        assert _fill(page, "x") != _fill(page, "out") == "#ffffff"  # CPU vs no device
        assert _fill(page, "blk_a") == _fill(page, "blk_b")  # all GPU
        page.select_option("#colour", "compute_time")
        assert _fill(page, "out") != _fill(page, "x") != "#ffffff"
        page.screenshot(path=str(artifacts / "colour-compute-time.png"))
        page.select_option("#colour", "none")
        assert _fill(page, "blk_a") == _fill(page, "odd")
    # Without any compute time the mode cannot be picked.
    with _opened(view_to_html(build_view(_blocks_graph()), colour="device"),
                 tmp_path / "plain.html") as page:
        assert page.eval_on_selector("#colour", "s => s.value") == "device"
        assert page.eval_on_selector("option[value=compute_time]", "o => o.disabled")


def test_hostile_names_and_attrs_stay_text(tmp_path: Path, artifacts: Path) -> None:
    g = _graph(
        Node(EVIL_IMG, EVIL_SCRIPT, attrs={"note": EVIL_IMG, "s": EVIL_SCRIPT}, outputs=[F],
             device=EVIL_IMG),
        Node("scope/__proto__", "Relu", [EVIL_IMG], outputs=[F]),
        Node("scope/constructor", EVIL_IMG, ["scope/__proto__"], outputs=[F]),
        # Groups named like Object.prototype's members (the viewer keys Maps, not objects).
        Node("__proto__/toString", "Relu", ["scope/constructor"], outputs=[F]),
        Node("hasOwnProperty/x", "Relu", ["__proto__/toString"], outputs=[F]),
    )
    view = build_view(g)
    html = view_to_html(view, title=EVIL_SCRIPT)
    # The data block's, the layout's, the viewer's, its plugins' and the blobs' end tags.
    assert html.count("</script>") == 3 + len(PLUGIN_SCRIPTS) + len(BLOB_KEYS)
    with _opened(html, tmp_path / "hostile.html") as page:
        assert EVIL_IMG in _top_names(page)
        page.evaluate("window.summarylibViewer.expand('scope')")
        assert _inside(page, "scope") == ["scope/__proto__", "scope/constructor"]
        page.evaluate("window.summarylibViewer.expand('__proto__')")
        page.evaluate("window.summarylibViewer.expand('hasOwnProperty')")
        assert _inside(page, "__proto__") == ["__proto__/toString"]
        assert _inside(page, "hasOwnProperty") == ["hasOwnProperty/x"]
        _check_against_compose(page, view)
        page.evaluate(
            """name => Array.from(document.querySelectorAll('[data-name]'))
                .find(e => e.getAttribute('data-name') === name)
                .dispatchEvent(new MouseEvent('click', {bubbles: true}))""",
            EVIL_IMG,
        )
        card = page.inner_text("#card")
        assert EVIL_IMG in card and EVIL_SCRIPT in card
        page.fill("#search", "onerror")
        page.wait_for_selector("#results.open button")
        found = page.eval_on_selector_all("#results button", "bs => bs.map(b => b.textContent)")
        assert EVIL_IMG in found
        page.select_option("#colour", "device")
        page.screenshot(path=str(artifacts / "hostile.png"))
        assert page.evaluate("document.title") == EVIL_SCRIPT
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("img").count() == 0
        scripts = page.evaluate("document.querySelectorAll('script').length")
        assert scripts == 3 + len(PLUGIN_SCRIPTS)


def test_search_opens_the_groups_down_to_the_match(tmp_path: Path) -> None:
    view = build_view(gm.synthetic_graph(2, 2))
    target = next(n for n, v in view.nodes.items()
                  if isinstance(v, OpNode) and n.count("/") >= 4)
    with _opened(view_to_html(view), tmp_path / "search.html") as page:
        page.fill("#search", target)
        page.press("#search", "Enter")
        opened = set(page.evaluate("window.summarylibViewer.expanded()"))
        parent = view.nodes[target].parent
        while parent:
            assert parent in opened
            parent = view.nodes[parent].parent  # type: ignore[assignment]
        cls = page.evaluate(
            """name => Array.from(document.querySelectorAll('[data-name]'))
                .find(e => e.getAttribute('data-name') === name).getAttribute('class')""",
            target,
        )
        assert "highlight" in cls
        assert target in page.inner_text("#card")
        _check_against_compose(page, view)


def test_10k_graph_paints_only_its_top_level(tmp_path: Path, artifacts: Path) -> None:
    view = build_view(gm.synthetic_10k())
    html = view_to_html(view, title="synthetic 10k")
    assert len(view.nodes) > 9000
    with _opened(html, tmp_path / "10k.html") as page:
        timing = page.evaluate("window.summarylibViewer.timing")
        paint = page.evaluate("Object.fromEntries(performance.getEntriesByType('paint')"
                              ".map(e => [e.name, e.startTime]))")
        drawn = page.locator("[data-name]").count()
        page.screenshot(path=str(artifacts / "synthetic-10k.png"))
    print(f"10k: {len(html) / 1e6:.1f} MB; page {timing}; paint {paint}")
    assert drawn == len(view.root.children)
    assert timing["rendered"] > 0  # the viewer drew (how fast: bench/graph_view.py)


def test_a_huge_flat_graph_draws_only_what_is_in_view(tmp_path: Path, artifacts: Path) -> None:
    # 3000 ops without scopes: the top level itself is big (chunked), so the page draws
    # the part near the view, without text when zoomed out.
    types = ["Relu", "Tanh", "MatMul", "AddV2", "Mul", "Sigmoid", "Exp"]
    nodes = [Node("in", "Placeholder", outputs=[F])]
    for i in range(3000):
        ins = [nodes[-1].name] + ([nodes[-7].name] if i % 3 == 0 and i >= 7 else [])
        nodes.append(Node(f"op{chr(97 + i % 26)}x{i}y", types[i % 7], ins, outputs=[F]))
    view = build_view(_graph(*nodes), auto_extract=False)
    assert lay.layout_view(view)[""].chunks > 1
    with _opened(view_to_html(view), tmp_path / "flat.html") as page:
        drawn = page.locator("[data-name]").count()
        assert 0 < drawn < len(view.root.children) / 4
        assert page.locator("[data-name='in']").count() == 1  # opens at the first node
        page.screenshot(path=str(artifacts / "flat-3000.png"))
        page.click("#fit")
        wait_until(
            page, f"document.querySelectorAll('[data-name]').length === {len(view.root.children)}")
        assert page.locator("#viewport text").count() == 0  # too small to read: no labels
        last = view.root.children[-1]
        page.evaluate(f"window.summarylibViewer.reveal('{last}')")
        assert "highlight" in _classes(page, last)
        assert page.locator("#viewport text").count() > 0
        _check_against_compose(page, view)


def test_docs_screenshots_of_a_resnet(tmp_path: Path, artifacts: Path) -> None:
    """The two images in docs/images (rewritten with SUMMARYLIB_DOCS_IMAGES=1)."""
    view = _resnet_view()
    outs = [artifacts]
    if os.environ.get("SUMMARYLIB_DOCS_IMAGES") == "1":
        outs.append(ROOT / "docs" / "images")
    with _opened(view_to_html(view, title="ResNet (summarylib.graph.capture)"),
                 tmp_path / "docs.html") as page:
        page.set_viewport_size({"width": 1100, "height": 760})
        page.click("#fit")
        for out in outs:
            out.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out / "graph-view-top.png"))
        page.evaluate("window.summarylibViewer.expand('layer2')")
        page.evaluate("window.summarylibViewer.expand('layer2/se')")
        page.evaluate("window.summarylibViewer.zoomTo('layer2')")
        page.locator("[data-name='layer2/conv2'] > .shape").dispatch_event("click")
        for out in outs:
            page.screenshot(path=str(out / "graph-view-expanded.png"))
