"""The page's compact data (page_data.py): what the HTML carries and what the page decodes.

The page gets the view as compressed columns, not one JSON object per node: every node
the page decodes (opened or not, hostile names included) must be what ``view_to_json``
says, the file must stay small per node, and search must reach nodes in groups that were
never opened. A page of a million nodes is checked with ``SUMMARYLIB_SLOW=1`` (building
its view takes minutes on two cores); the 100k-node page always is.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from summarylib.graph import Graph, Node, TensorSpec
from summarylib.graph.view import GraphView, OpNode, build_view, page_data
from summarylib.graph.view import layout as lay
from summarylib.graph.view.html_export import view_to_html
from summarylib.graph.view.page_data import view_to_page_data
from tests import graph_models as gm
from tests.browser import chromium_page, wait_until
from tests.helpers import ancestors
from tests.page_data_reader import (
    blob_columns,
    html_page_data,
    json_records,
    read_head,
    read_page_data,
)

SLOW = bool(os.environ.get("SUMMARYLIB_SLOW"))
F = TensorSpec((8, 3), "float32")
EVIL = "</script><img src=x onerror=window.__pwned=1>"


def _open(page: Any, html: str, path: Path, timeout_ms: float = 60_000) -> list[str]:
    """Loads ``html`` from ``path`` in ``page`` until its first frame; the list collects
    page errors and console errors."""
    path.write_text(html, encoding="utf-8")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri(), timeout=timeout_ms)
    wait_until(page, "window.summarylibViewer && window.summarylibViewer.timing.frame",
               timeout_ms=timeout_ms)
    return errors


def _odd_graph() -> GraphView:
    """Every kind of record: series of ops and of groups, embedded constants and
    summaries, a renamed op (``A`` beside ``A/b``), a name under the empty scope, hostile
    and non-ASCII names, attributes, devices, control edges, compute times, XLA clusters."""
    nodes = [
        Node("x", "Placeholder", outputs=[F], device="/device:CPU:0"),
        Node("A", "Relu", ["x"], outputs=[F]),
        Node("A/b", "Relu", ["A"], outputs=[F], attrs={"T": "float32", EVIL: EVIL}),
        Node("/lead", "Neg", ["A/b"], outputs=[F]),
        Node(f"s/{EVIL}/__proto__", "Relu", ["x"], outputs=[F], device=EVIL),
        Node("s/constructor/\u00e9\u6f22", "Relu", [f"s/{EVIL}/__proto__"], outputs=[F]),
        Node("c/Const", "Const", outputs=[TensorSpec((3,), "float32")]),
        Node("c/mul", "Mul", ["x", "c/Const"], outputs=[F]),
        Node("c/summary", "ScalarSummary", ["c/mul"], outputs=[TensorSpec((), "string")]),
        Node("tail", "NoOp", control_inputs=["c/mul", "A/b"]),
    ]
    for i in range(6):  # a series of ops
        nodes.append(Node(f"r/add_{i}", "AddV2", ["x", f"r/add_{i - 1}" if i else "x"],
                          outputs=[F]))
    for i in range(4):  # a series of groups
        nodes += [Node(f"blocks/layer_{i}/mm", "MatMul", ["x", "x"], outputs=[F]),
                  Node(f"blocks/layer_{i}/act", "Tanh", [f"blocks/layer_{i}/mm"], outputs=[F])]
    view = build_view(Graph(nodes))
    for k, op in enumerate(n for n in view.nodes.values() if isinstance(n, OpNode)):
        op.compute_time_us = 0.1 * k if k % 3 else None
        op.xla_cluster = f"cluster_{k % 2}" if k % 4 == 1 else None
    return view


def test_page_decodes_every_node_as_view_to_json(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of five rows: the page fills its columns from many chunks.
    monkeypatch.setattr(page_data, "CHUNK_ROWS", 5)
    for view in (_odd_graph(), build_view(gm.synthetic_graph(3, 2))):
        want = json_records(view)
        kinds = {r["kind"] for r in want.values()}
        assert kinds == {"op", "meta", "series"}
        with chromium_page() as page:
            errors = _open(page, view_to_html(view), tmp_path / "odd.html")
            # Without opening anything: each node is resolved by its name.
            got = page.evaluate(
                "names => names.map(n => window.summarylibViewer.nodeData(n))", list(want))
            assert page.evaluate("window.summarylibViewer.expanded()") == [""]
            assert page.evaluate("window.summarylibViewer.nodeData('no/such/node')") is None
            assert errors == []
        for rec, (name, expected) in zip(got, want.items(), strict=True):
            assert rec == expected, name


_PARTS = st.sampled_from(["a", "b", "add_1", "add_2", "add_3", "x_7", "__proto__", "\u00e9",
                          "Const", "s", EVIL, ""])


@st.composite
def _graphs(draw: st.DrawFn) -> Graph:
    names = draw(st.lists(st.lists(_PARTS, min_size=1, max_size=3).map("/".join),
                          min_size=1, max_size=24, unique=True))
    nodes = []
    for k, name in enumerate(names):
        earlier = names[:k]
        ins = draw(st.lists(st.sampled_from(earlier), max_size=3)) if earlier else []
        ctl = draw(st.lists(st.sampled_from(earlier), max_size=1)) if earlier else []
        op = draw(st.sampled_from(["Relu", "Const", "MatMul", "NoOp", "ScalarSummary"]))
        dims = draw(st.lists(st.integers(-1, 9), max_size=2))
        nodes.append(Node(name, op, ins, ctl, outputs=[TensorSpec(tuple(dims), "float32")],
                          device=draw(st.sampled_from(["", "/device:CPU:0", EVIL])),
                          attrs=draw(st.dictionaries(st.sampled_from(["T", EVIL]),
                                                     st.sampled_from(["1", EVIL]),
                                                     max_size=2))))
    return Graph(nodes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_graphs(), st.booleans(), st.sampled_from([1, 3, page_data.CHUNK_ROWS]))
def test_page_data_round_trips_every_record(graph: Graph, timed: bool, rows: int) -> None:
    view = build_view(graph)
    if timed:
        for k, op in enumerate(n for n in view.nodes.values() if isinstance(n, OpNode)):
            op.compute_time_us = float(k) if k % 2 else None
            op.xla_cluster = "c" if k % 3 == 0 else None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(page_data, "CHUNK_ROWS", rows)
        data = view_to_page_data(view)
    assert len(data["chunk_index"]) == -(-data["nodes"] // rows)
    assert read_page_data(data) == json_records(view)


def test_page_data_is_a_few_bytes_per_node() -> None:
    # One JSON object per op made about 480 bytes a node; the columns take a tenth.
    view = build_view(gm.synthetic_10k())
    html = view_to_html(view)
    block = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', html,
                      re.S)
    assert block is not None
    data = json.loads(block.group(1))
    assert "view" not in data and data["graph"]["nodes"] == len(view.nodes)
    blobs = html_page_data(html)
    size = len(block.group(1)) + sum(len(blobs[k]) for k in ("blob", "chunks", "later"))
    assert size / len(view.nodes) < 50
    # The head, all the page reads before it draws, is the top level's few hundred bytes.
    assert len(json.dumps(data["graph"]["head"])) < 3000


def _check_head(data: dict[str, Any]) -> None:
    """The head is the top level's rows of the blob's columns, and every table entry they
    point to, with the blob's indices (page_data's docstring)."""
    head = read_head(data)
    tables, columns = blob_columns(data)
    rows, cols = head["rows"], head["columns"]
    assert rows == 1 + columns["nchild"][0]
    edges = columns["nme"][0]
    for name, values in cols.items():
        want = columns[name][:edges] if name.startswith("me_") else columns[name][:rows]
        assert values == want, name
    assert set(cols) >= {"kind", "nchild", "label", "card", "template", "nme", "me_v", "me_w"}
    for table, keys in (("strings", ("label", "type", "device")),
                        ("shapes", ("shapes", "me_shapes")), ("attrs", ("attrs",))):
        wanted = {k for key in keys for k in cols[key] if k >= 0}
        assert set(head[table]) == wanted, table
        assert all(tables[table][k] == v for k, v in head[table].items()), table
    for table in ("names", "panels", "series", "xla"):
        assert head[table] == [r for r in tables[table] if r[0] < rows], table


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_graphs())
def test_the_head_is_the_top_levels_rows(graph: Graph) -> None:
    _check_head(view_to_page_data(build_view(graph)))


def test_the_head_of_the_test_graphs() -> None:
    for view in (_odd_graph(), build_view(gm.synthetic_graph(3, 2))):
        _check_head(view_to_page_data(view))


@pytest.mark.parametrize("near", [True, False])
def test_a_top_level_too_big_for_a_head_is_drawn_from_the_near_part_or_the_blob(
        near: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    view = build_view(gm.synthetic_graph(3, 2))
    monkeypatch.setattr(page_data, "HEAD_ROWS", len(view.root.children))  # one row short
    if not near:
        monkeypatch.setattr(page_data, "NEAR_ROWS", 0)
    html = view_to_html(view)
    data = view_to_page_data(view)
    assert data["head"] is None and (data["near_index"] is None) is not near
    want = lay.compose(view, lay.layout_view(view, groups=[""]), ())
    with chromium_page() as page:
        errors = _open(page, html, tmp_path / "g.html")
        timing = page.evaluate("window.summarylibViewer.timing")
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        assert errors == []
    assert timing["head"] is None
    assert (timing["near"] if near else timing["parsed"]) <= timing["rendered"]
    assert set(boxes) == set(want.boxes)
    for name, box in want.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=0.1 + 1e-9), name


def test_the_top_level_is_drawn_before_the_blobs_are_read(tmp_path: Path) -> None:
    """The page draws the top level from the head as its script runs, before it has read
    the blobs, and it is the drawing Python's layout gives; what needs more waits for
    them. Without the blobs (their blocks removed) the top level is still drawn."""
    view = build_view(gm.synthetic_graph(3, 2))
    want = lay.compose(view, lay.layout_view(view, groups=[""]), ())
    html = view_to_html(view)
    with chromium_page() as page:
        errors = _open(page, html, tmp_path / "g.html")
        timing = page.evaluate("window.summarylibViewer.timing")
        assert timing["head"] <= timing["rendered"] < timing["inflated"] <= timing["parsed"]
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        assert errors == []
    assert set(boxes) == set(want.boxes)
    for name, box in want.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=0.1 + 1e-9), name
    cut = re.sub(r'<script type="application/octet-stream" id="graph-(near|blob|chunks|later)">'
                 r"[^<]*</script>", "", html)
    assert "application/octet-stream" not in cut
    (tmp_path / "cut.html").write_text(cut, encoding="utf-8")
    with chromium_page() as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "cut.html").as_uri())
        wait_until(page, "window.summarylibViewer.timing.rendered")
        page.wait_for_selector("#failed")  # it says it could not read the rest
        top = dict(page.evaluate("window.summarylibViewer.boxes()"))
        # A group clicked waits for the whole graph: nothing opens, nothing breaks.
        page.click(f"[data-name='{view.root.children[2]}'] .shape")
        assert page.evaluate("window.summarylibViewer.expanded()") == [""]
        assert page.evaluate("window.summarylibViewer.nodeData('model')") is None
    assert top == boxes
    assert len(errors) == 1  # the missing blob's


def _cut_blobs(html: str) -> str:
    """``html`` without its blobs' and chunks' blocks: only the head and the near part are read."""
    cut = re.sub(r'<script type="application/octet-stream" id="graph-(blob|chunks|later)">'
                 r"[^<]*</script>", "", html)
    assert 'id="graph-blob"' not in cut and 'id="graph-near"' in cut
    return cut


def test_groups_of_the_first_levels_open_before_the_blobs_are_read(tmp_path: Path) -> None:
    """The near part (the first levels of the tree) answers clicks on the groups of the
    top level and of the level below, before the first blob is decoded (here it never
    is: its block is removed), with the drawing Python's layout gives; a group below the
    near part's levels waits for the blob."""
    view = build_view(gm.synthetic_graph(3, 2))
    data = view_to_page_data(view)
    near = data["near_index"]
    assert near is not None and near["rows"] < data["nodes"]
    # The near part's groups: the first ``groups`` nodes of the breadth-first order.
    order = [""]
    for name in order:
        node = view.nodes[name]
        order.extend(getattr(node, "children", []))
    outside = next(n for n in order[near["groups"]:] if not isinstance(view.nodes[n], OpNode))
    layer = next(c for c in view.nodes["model"].children  # type: ignore[union-attr]
                 if not isinstance(view.nodes[c], OpNode))
    assert order.index(layer) < near["groups"]
    (tmp_path / "near.html").write_text(_cut_blobs(view_to_html(view)), encoding="utf-8")
    with chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "near.html").as_uri())
        wait_until(page, "window.summarylibViewer.timing.near")
        page.wait_for_selector("#failed")  # the first blob is missing: it never comes
        # A click on a group of the top level opens it, and one on its child group too.
        page.click("[data-name='model'] .shape")
        wait_until(page, "window.summarylibViewer.expanded().includes('model')")
        page.click(f"[data-name='{layer}'] .shape")
        wait_until(page, f"window.summarylibViewer.expanded().includes({layer!r})")
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        # Deeper than the near part: it waits (for a blob that never comes).
        page.evaluate(f"window.summarylibViewer.expand({outside!r})")
        page.wait_for_timeout(200)
        opened = page.evaluate("window.summarylibViewer.expanded()")
        assert page.evaluate("window.summarylibViewer.nodeData('model')") is None
    assert sorted(opened) == sorted(["", "model", layer])
    assert len(errors) == 1  # the missing blob's
    scene = lay.compose(view, lay.layout_view(view, groups=["", "model", layer]),
                        {"", "model", layer})
    assert set(boxes) == set(scene.boxes)
    for name, box in scene.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=0.1 + 1e-9), name


def _breadth_first(view: GraphView) -> list[str]:
    """The names in the page's order: breadth-first from the root, children in order."""
    order = [""]
    for name in order:
        order.extend(getattr(view.nodes[name], "children", []))
    return order


def _damage_chunks(html: str, keep: set[int]) -> str:
    """``html`` with every chunk but those in ``keep`` made unreadable (its base64 text
    replaced by as much of another text that inflates to nothing)."""
    data = html_page_data(html)
    text = data["chunks"]
    for k, (_, _, start, length) in enumerate(data["chunk_index"]):
        if k not in keep:
            text = text[:start] + "A" * length + text[start + length:]
    return html.replace(f'id="graph-chunks">{data["chunks"]}<', f'id="graph-chunks">{text}<')


def test_a_deep_group_opens_from_its_own_chunks(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A click on a group deeper than the near part waits for the chunks that hold the
    groups above it, it and its children only (here every other chunk is unreadable, so
    the whole graph never comes), and is drawn as Python lays it out; a search needs the
    first blob (the tree) only."""
    monkeypatch.setattr(page_data, "CHUNK_ROWS", 4)
    view = build_view(gm.synthetic_graph(3, 2))
    data = view_to_page_data(view)
    near = data["near_index"]
    order = _breadth_first(view)
    index = {name: i for i, name in enumerate(order)}
    # The deepest group, below the near part's groups, and the groups above it.
    deep = max((n for n in order[near["groups"]:] if not isinstance(view.nodes[n], OpNode)),
               key=lambda n: (n.count("/"), n))
    path = ["", *reversed(ancestors(view, deep)), deep]
    assert path[0] == "" and len(path) >= 4 and index[path[-2]] >= near["groups"]
    # What opening them needs: each one's row (its metaedges) and its children's rows.
    rows = {index[c] for g in path for c in [g, *view.nodes[g].children]}  # type: ignore[union-attr]
    keep = {r // 4 for r in rows}
    assert len(keep) < len(data["chunk_index"]) // 2
    (tmp_path / "deep.html").write_text(_damage_chunks(view_to_html(view), keep),
                                        encoding="utf-8")
    with chromium_page() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "deep.html").as_uri())
        wait_until(page, "window.summarylibViewer.timing.rendered")
        for name in path[1:]:
            page.evaluate(f"window.summarylibViewer.expand({name!r})")
        wait_until(page, f"window.summarylibViewer.expanded().includes({deep!r})")
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        page.wait_for_selector("#failed")  # the damaged chunks: the rest never comes
        assert page.evaluate(f"window.summarylibViewer.nodeData({deep!r})") is None
        # A search runs over every name: the tree is all it needs.
        page.fill("#search", deep)
        page.wait_for_selector(f"#results.open button[data-target={json.dumps(deep)}]")
    assert len(errors) == 1  # the first damaged chunk's
    scene = lay.compose(view, lay.layout_view(view, groups=path), set(path))
    assert set(boxes) == set(scene.boxes)
    for name, box in scene.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=0.1 + 1e-9), name


def _preorder(view: GraphView) -> list[str]:
    """Every name but the root's, in pre-order (children in the view's order)."""
    out: list[str] = []
    stack = list(reversed(view.root.children))
    while stack:
        name = stack.pop()
        out.append(name)
        stack.extend(reversed(getattr(view.nodes[name], "children", [])))
    return out


def test_search_lists_the_names_that_contain_the_text(tmp_path: Path) -> None:
    """The search box lists the first 50 names, in pre-order, that contain the text
    (case-insensitive), within one part of a name or across scopes, names given whole
    (a renamed op, the empty scope, hostile and non-ASCII parts) included."""
    view = _odd_graph()
    names = _preorder(view)
    queries = ["a", "A/b", "/", "//", "s/", "/lead", "r/add_", "add_1", "/add_1", "blocks/layer_",
               "ks/layer_1/m", "layer_2/", "/mm", "__proto__", "s/</", "<img", "é漢",
               "constructor/é", "c/c", "x", "no/such", "/a/b", "summary"]
    with chromium_page() as page:
        errors = _open(page, view_to_html(view), tmp_path / "odd.html")
        got = {}
        for q in queries:
            page.press("#search", "Escape")  # closes the list: wait for the new one
            page.fill("#search", q)
            page.wait_for_selector("#results.open")
            got[q] = page.eval_on_selector_all(
                "#results button", "bs => bs.map(b => b.getAttribute('data-target'))")
        assert errors == []
    for q in queries:
        assert got[q] == [n for n in names if q.lower() in n.lower()][:50], q
    assert got["A/b"] and got["/lead"] and got["s/</"] and got["ks/layer_1/m"]


def _deep_op(view: GraphView) -> tuple[str, list[str]]:
    """The last op of the view's deepest path and its ancestors, innermost first."""
    target = max((n for n, v in view.nodes.items() if isinstance(v, OpNode)),
                 key=lambda n: (n.count("/"), n))
    return target, ancestors(view, target)


def _search_and_open(view: GraphView, tmp_path: Path, timeout_ms: float) -> dict[str, Any]:
    target, chain = _deep_op(view)
    with chromium_page() as page:
        errors = _open(page, view_to_html(view), tmp_path / "big.html", timeout_ms)
        top = {n for n, _ in page.evaluate("window.summarylibViewer.boxes()")}
        assert top == {"", *view.root.children}
        # The search box lists the deep op (never decoded into an object before) and
        # picking it opens every group above it.
        page.fill("#search", target)
        page.wait_for_selector("#results.open button", timeout=timeout_ms)
        listed = page.eval_on_selector_all("#results button",
                                           "bs => bs.map(b => b.getAttribute('data-target'))")
        assert target in listed
        page.press("#search", "Enter")
        wait_until(page, "window.summarylibViewer.pending() === 0 && "
                         f"window.summarylibViewer.boxes().some(b => b[0] === {target!r})",
                   timeout_ms=timeout_ms)
        opened = set(page.evaluate("window.summarylibViewer.expanded()"))
        boxes = dict(page.evaluate("window.summarylibViewer.boxes()"))
        assert errors == []
    assert set(chain) <= opened
    big = [g for g in chain if len(view.nodes[g].children) > 1000]  # type: ignore[union-attr]
    # Groups of more than 1,000 children are drawn as ranges: the one holding the
    # target's ancestor is open.
    assert all(any(o.startswith(g + "/children ") for o in opened) for g in big)
    # The expanded groups (and ranges) are drawn as the Python layout composes them.
    scene = lay.compose(view, lay.layout_view(view, groups=sorted(opened)), opened)
    assert set(boxes) == set(scene.boxes)
    for name, box in scene.boxes.items():
        assert boxes[name] == pytest.approx(list(box), abs=0.1 + 1e-9), name
    return boxes


def test_100k_page_opens_and_search_reaches_a_deep_node(tmp_path: Path) -> None:
    view = build_view(gm.synthetic_100k())
    assert len(view.nodes) > 90_000
    _search_and_open(view, tmp_path, 120_000)


@pytest.mark.skipif(not SLOW, reason="building the 1M-node view takes minutes on two cores; "
                                     "set SUMMARYLIB_SLOW=1")
@pytest.mark.timeout(1800)  # the graph, its view and its page: minutes on two loaded cores
def test_1m_page_opens_and_search_reaches_a_deep_node(tmp_path: Path) -> None:
    view = build_view(gm.synthetic_graph(gm._layers_for(1_000_000, 4), 4))
    assert len(view.nodes) > 900_000
    assert len(view_to_html(view)) < 50e6
    _search_and_open(view, tmp_path, 300_000)


@pytest.mark.timeout(1200)  # the graph and its page: a minute or two on two loaded cores
def test_1m_page_written_from_the_source_opens_and_search_opens_a_deep_op(
    tmp_path: Path,
) -> None:
    # The million-node page as the command line writes it (straight from the source, no
    # view): it paints its top level, and the search box finds its deepest op
    # and opens every scope above it. (The test above, with SUMMARYLIB_SLOW=1, also
    # compares the drawing with Python's layout of the same view.)
    from summarylib.graph.view import source_to_html

    graph = gm.synthetic_graph(gm._layers_for(1_000_000, 4), 4)
    assert len(graph) > 900_000
    # The deepest op that is not a constant (constants are drawn inside their consumer).
    target = max((n.name for n in graph if n.op != "Const"),
                 key=lambda name: (name.count("/"), name))
    scopes = {target.rsplit("/", k)[0] for k in range(1, target.count("/") + 1)}
    html = source_to_html(graph)
    del graph
    assert len(html) < 50e6
    timeout_ms = 300_000
    with chromium_page() as page:
        errors = _open(page, html, tmp_path / "1m.html", timeout_ms)
        del html
        assert page.evaluate("window.summarylibViewer.boxes()")  # the top level is drawn
        page.fill("#search", target)
        page.wait_for_selector("#results.open button", timeout=timeout_ms)
        page.press("#search", "Enter")
        wait_until(page, "window.summarylibViewer.pending() === 0 && "
                         f"window.summarylibViewer.boxes().some(b => b[0] === {target!r})",
                   timeout_ms=timeout_ms)
        opened = set(page.evaluate("window.summarylibViewer.expanded()"))
        assert errors == []
    assert scopes <= opened, scopes - opened


def test_groups_are_columns_not_objects_in_the_html() -> None:
    # A scope of many ops writes no per-op record: its names appear only in the
    # compressed tables.
    ops = [Node(f"big/op{i}x", "Relu", [f"big/op{i - 1}x"] if i else [], outputs=[F])
           for i in range(2000)]
    html = view_to_html(build_view(Graph(ops)))
    assert "big/op1999x" not in html and '"kind":"op"' not in html


def test_a_group_of_more_than_1000_children_opens_as_ranges(tmp_path: Path) -> None:
    # 2,500 ops in a chain in one scope: the group shows three ranges, each opened on its
    # own; the chain's links between ranges are drawn between the ranges.
    ops = [Node(f"big/o{i}x", "Relu", [f"big/o{i - 1}x"] if i else [], outputs=[F])
           for i in range(2500)]
    view = build_view(Graph(ops))
    ranges = ["big/children 0\u2013999", "big/children 1000\u20131999",
              "big/children 2000\u20132499"]
    with chromium_page() as page:
        errors = _open(page, view_to_html(view), tmp_path / "ranges.html")
        page.evaluate("window.summarylibViewer.expand('big')")
        wait_until(page, "window.summarylibViewer.pending() === 0 && "
                         "window.summarylibViewer.expanded().includes('big')")
        drawn = dict(page.evaluate("window.summarylibViewer.boxes()"))
        assert set(drawn) == {"", "big", *ranges}
        info = page.evaluate("window.summarylibViewer.nodeInfo('big/children 1000\u20131999')")
        assert info["children"] == [f"big/o{i}x" for i in range(1000, 2000)]
        edges = page.evaluate("window.summarylibViewer.layoutOf('big/children 0\u2013999')")
        assert len(edges["nodes"]) == 1000
        # The data of the group itself is still every child.
        assert page.evaluate("window.summarylibViewer.nodeData('big')")["children"] == [
            f"big/o{i}x" for i in range(2500)]
        # Search reaches an op in a range never opened, and opens the range.
        page.fill("#search", "big/o2400x")
        page.press("#search", "Enter")
        wait_until(page, "window.summarylibViewer.pending() === 0 && "
                         "window.summarylibViewer.boxes().some(b => b[0] === 'big/o2400x')")
        opened = set(page.evaluate("window.summarylibViewer.expanded()"))
        assert {"big", ranges[2]} <= opened and ranges[0] not in opened
        drawn = dict(page.evaluate("window.summarylibViewer.boxes()"))
        assert set(drawn) == {"", "big", *ranges, *(f"big/o{i}x" for i in range(2000, 2500))}
        # Two metaedges link the ranges (one chain link each); the edge into the open
        # range goes on to the op inside (a bridge).
        paths = page.evaluate("Array.from(document.querySelectorAll("
                              "'[data-name=\"big\"] > .edges > path.edge')).length")
        assert paths == 2
        assert page.locator(f"[data-name='{ranges[2]}'] > .edges > .bridge").count() == 1
        assert errors == []


def test_a_range_never_takes_the_name_of_a_node(tmp_path: Path) -> None:
    # A child named like the first range: the range's name gets a thin space more, and
    # both resolve to themselves.
    clash = "big/children 0\u2013999"
    ops = [Node(clash, "Relu", outputs=[F])]
    ops += [Node(f"big/o{i}x", "Relu", [ops[-1].name], outputs=[F]) for i in range(1200)]
    view = build_view(Graph(ops))
    with chromium_page() as page:
        errors = _open(page, view_to_html(view), tmp_path / "clash.html")
        ranges = page.evaluate("window.summarylibViewer.expand('big'), "
                               "window.summarylibViewer.nodeInfo('big').children")
        assert ranges == [clash + "\u2009", "big/children 1000\u20131200"]
        assert page.evaluate(f"window.summarylibViewer.nodeInfo({clash!r}).kind") == "op"
        assert page.evaluate("n => window.summarylibViewer.nodeInfo(n).children.length",
                             ranges[0]) == 1000
        assert errors == []
