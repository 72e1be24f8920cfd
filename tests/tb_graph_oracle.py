"""What TensorBoard's graph dashboard builds from a graph, read out of the dashboard itself.

The oracle writes each graph as the run-level graph of its own run in one logdir, starts
the real TensorBoard (``tests/tbserver.py``) once, opens ``#graphs&run=NAME`` in headless
Chromium (``tests/browser.py``'s browser and flags), waits until the scene has drawn the
top level, and reads the dashboard's own objects from page JavaScript (TensorBoard
2.21's graph plugin; playwright's CSS selectors pierce the open shadow roots):

* ``tf-graph`` element (inside ``tf-graph-dashboard`` > ``tf-graph-board``):
  ``.graphHierarchy`` is the hierarchy (``hierarchy.ts``'s ``Hierarchy``): ``.root``
  (the metanode ``__root__``), every group's ``.metagraph`` (graphlib: ``nodes()``,
  ``node(name)``, ``edges()``, ``edge(e)``), ``.depth``, ``.cardinality``,
  ``.opHistogram``, ``.deviceHistogram``, ``.templateId``; a series node has ``.ids``,
  ``.prefix``, ``.suffix``, ``.hasNonControlEdges`` (drawn as a vertical stack when true:
  ``layout.ts``; ``.hasLoop`` is never set); an op node has ``.op``, ``.inEmbeddings``,
  ``.outEmbeddings``. ``.templates`` is ``{templateId: {level, nodes}}``, computed
  lazily: the board calls ``graphHierarchy.updateTemplates()`` when the colour mode is
  "structure" (its default, switched to "none" for graphs with more than 10,000 nodes and
  edges); the oracle calls it the same way when it has not run.
* ``tf-graph``'s ``.renderHierarchy`` (``render.ts``'s ``RenderGraphInfo``): the root is
  built and expanded on load; ``renderHierarchy.buildSubhierarchy(name)`` is what a click
  on a group's expand button runs (``tf-graph``'s ``_nodeToggleExpand``) before the scene
  lays the group out; afterwards ``getRenderNodeByName(name)`` has
  ``.isolatedInExtract`` / ``.isolatedOutExtract``, the render nodes drawn in the group's
  side panel (``extractHighDegrees``' output).

The result (:class:`TBGraph`) uses the names of ``view_to_json``: the root is ``""``,
kinds are ``"meta"``, ``"series"``, ``"op"``; :func:`view_json_groups` reshapes a
``view_to_json`` dict the same way for comparison.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.browser import CHROMIUM, CHROMIUM_ARGS, missing
from tests.tbserver import TensorBoardServer

__all__ = [
    "PAINTED_JS",
    "TBGraph",
    "TensorBoardOracle",
    "dump",
    "oracle_missing",
    "view_json_groups",
    "view_json_ops",
    "write_runs",
]

#: Reads the hierarchy; ``opts``: ``{templates: bool, expand: "all" | [names],
#: maxExpand: int, ops: bool}``. Groups are expanded parents first (a group's render info
#: needs its parent's).
_EXTRACT_JS = r"""
(el, opts) => {
  const h = el.graphHierarchy, rh = el.renderHierarchy;
  if (!h || !rh || rh.hierarchy !== h) throw new Error("the dashboard is still building");
  const ROOT = h.root.name, META = h.root.type;
  const nm = n => (n === ROOT ? "" : n);
  const kindOf = n => (!n.isGroupNode ? "op" : (n.type === META ? "meta" : "series"));
  const t0 = performance.now();
  if (opts.templates && !h.templates) h.updateTemplates();
  const templateMs = performance.now() - t0;
  const groups = {}, ops = {}, order = [];
  const queue = [h.root];
  while (queue.length) {
    const g = queue.shift();
    const mg = g.metagraph;
    const kids = mg.nodes().map(c => mg.node(c));
    const rec = {
      kind: kindOf(g), children: kids.map(c => [c.name, kindOf(c)]),
      depth: g.depth, cardinality: g.cardinality,
      op_histogram: Object.assign({}, g.opHistogram),
      device_histogram: Object.assign({}, g.deviceHistogram),
      template: g.templateId || null, series: null,
      metaedges: mg.edges().map(e => {
        const m = mg.edge(e);
        return {v: e.v, w: e.w, regular: m.numRegularEdges, control: m.numControlEdges,
                ref: m.numRefEdges, size: m.totalSize};
      }),
    };
    if (rec.kind === "series") {
      rec.series = {prefix: g.prefix, suffix: g.suffix, ids: Array.from(g.ids),
                    vertical: !!g.hasNonControlEdges, parent: g.parent};
    }
    groups[nm(g.name)] = rec;
    order.push(g.name);
    for (const c of kids) {
      if (c.isGroupNode) queue.push(c);
      else if (opts.ops) ops[c.name] = {
        op: c.op, parent: nm(g.name), device: c.device || "",
        in_embeddings: (c.inEmbeddings || []).map(e => e.name),
        out_embeddings: (c.outEmbeddings || []).map(e => e.name)};
    }
  }
  const t1 = performance.now();
  const want = opts.expand === "all" ? order : opts.expand.map(n => (n === "" ? ROOT : n));
  const wantSet = new Set(want);
  const expanded = [];
  for (const name of order) {           // parents before children
    if (!wantSet.has(name) || expanded.length >= opts.maxExpand) continue;
    const parent = name === ROOT ? null : h.node(name).parentNode;
    if (parent && !rh.getRenderNodeByName(parent.name)) continue;
    if (parent && !(parent.name in rh.hasSubhierarchy)) continue;
    rh.buildSubhierarchy(name);
    expanded.push(name);
  }
  const sidePanel = {};
  for (const name of expanded) {
    const r = rh.getRenderNodeByName(name);
    sidePanel[nm(name)] = {in: r.isolatedInExtract.map(n => n.node.name),
                           out: r.isolatedOutExtract.map(n => n.node.name)};
  }
  const templates = {};
  for (const [id, t] of Object.entries(h.templates || {})) templates[id] = t.nodes.slice();
  // One string: playwright's structured transfer of a large object takes minutes.
  return JSON.stringify({groups, ops, templates, side_panel: sidePanel,
          timings: {templates_ms: templateMs, walk_ms: t1 - t0 - templateMs,
                    expand_ms: performance.now() - t1},
          color_by: el.colorBy || null});
}
"""

#: After an element exists: wait for the frame that paints it, then read the clock
#: (milliseconds since the navigation started).
PAINTED_JS = "() => new Promise(r => requestAnimationFrame(() => r(performance.now())))"

#: The side panels the scene drew for group ``name`` (``""``: the root): the names in
#: its extract boxes (``g.in-extract`` / ``g.out-extract`` beside the group's ``g.core``;
#: the root's in ``#root > g.scene``, an expanded group's in its ``g.subscene``).
_DRAWN_PANEL_JS = r"""
(scene, name) => {
  const top = scene.shadowRoot.querySelector("#root");
  const box = name === "" ? top.querySelector(":scope > g.scene")
      : top.querySelector(`g.node[data-name="${CSS.escape(name)}"] > g.subscene`);
  if (!box) return null;
  const names = cls => Array.from(box.querySelectorAll(
      ":scope > g." + cls + " > g.nodes > g.node")).map(n => n.getAttribute("data-name"));
  return {in: names("in-extract"), out: names("out-extract")};
}
"""


def oracle_missing() -> str | None:
    """Why the oracle cannot run here (no tensorboard, playwright or Chromium), or None."""
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        return "tensorboard is not installed"
    return missing()


@dataclass
class TBGraph:
    """What the dashboard built for one run.

    ``groups``: full name (root ``""``) -> ``{"kind": "meta"|"series", "children":
    [[name, kind], ...] (the metagraph's node order), "depth", "cardinality",
    "op_histogram", "device_histogram", "template": TB's templateId or None, "series":
    {"prefix", "suffix", "ids", "vertical", "parent"} or None, "metaedges": [{"v", "w",
    "regular", "control", "ref", "size"}]}``.
    ``ops``: op name -> ``{"op", "parent", "device", "in_embeddings", "out_embeddings"}``
    (empty unless asked for). ``templates``: templateId -> member names, only templates
    with two or more members. ``side_panel``: for each expanded group, ``{"in": [...],
    "out": [...]}`` (``isolatedInExtract`` / ``isolatedOutExtract``). ``drawn_panels``:
    the same as read from the SVG, for the root and the groups expanded by clicking.
    ``render_s``: seconds to the first painted node (see :meth:`TensorBoardOracle.page`);
    ``console``: TensorBoard's own timing lines.
    """

    run: str
    groups: dict[str, dict[str, Any]]
    ops: dict[str, dict[str, Any]]
    templates: dict[str, list[str]]
    side_panel: dict[str, dict[str, list[str]]]
    drawn_panels: dict[str, dict[str, list[str]]]
    render_s: float
    color_by: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    console: list[str] = field(default_factory=list)

    def children(self, name: str) -> list[tuple[str, str]]:
        return [(c, k) for c, k in self.groups[name]["children"]]

    def template_sets(self) -> set[frozenset[str]]:
        return {frozenset(m) for m in self.templates.values()}


def write_runs(logdir: str | os.PathLike[str], graphs: Mapping[str, Any]) -> None:
    """Write each graph as the run-level graph of run ``name`` under ``logdir``."""
    import summarylib as sl

    for name, graph in graphs.items():
        writer = sl.create_file_writer(os.path.join(os.fspath(logdir), name))
        with writer.as_default():
            sl.write_graph(graph)
        writer.close()


class TensorBoardOracle:
    """One TensorBoard over one logdir (a run per graph) and one headless Chromium.

    ``with TensorBoardOracle({"resnet": graph, ...}) as tb: tb.extract("resnet")``.
    ``logdir`` None makes a temporary one (removed on exit). ``browser``: a playwright
    Chromium browser to use (its owner closes it) instead of launching one.
    """

    def __init__(self, graphs: Mapping[str, Any], logdir: str | os.PathLike[str] | None = None,
                 width: int = 1400, height: int = 900, browser: Any = None) -> None:
        self.graphs = dict(graphs)
        self._own_browser = browser is None
        self._tmp = None if logdir is not None else tempfile.mkdtemp(prefix="tb-oracle-")
        self.logdir = Path(logdir if logdir is not None else self._tmp or "")
        self.viewport = {"width": width, "height": height}
        self.server: TensorBoardServer | None = None
        self._pw: Any = None
        self.browser: Any = browser

    def __enter__(self) -> TensorBoardOracle:
        from playwright.sync_api import sync_playwright

        write_runs(self.logdir, self.graphs)
        try:
            self.server = TensorBoardServer(self.logdir).__enter__()
            if self._own_browser:
                self._pw = sync_playwright().start()
                self.browser = self._pw.chromium.launch(executable_path=CHROMIUM,
                                                        args=CHROMIUM_ARGS)
            self.server.poll(lambda: self.server.get_json("/data/plugin/graphs/info")
                             if self.server else None,
                             lambda info: set(self.graphs) <= set(info or {}), timeout=120)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.browser is not None and self._own_browser:
            self.browser.close()
        self.browser = None
        if self._pw is not None:
            self._pw.stop()
            self._pw = None
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    @contextmanager
    def page(self, run: str, timeout_s: float = 120.0) -> Iterator[tuple[Any, float, list[str]]]:
        """A fresh page showing run ``run``'s graph once its top level is drawn; yields
        ``(page, seconds, console lines)``. Seconds: from navigation until the first node
        of the scene exists and a frame has painted it, when ``run`` is the dashboard's
        first run; else from choosing the run in the run selector to the same point.
        TimeoutError (playwright's) when nothing is drawn within ``timeout_s``.

        TensorBoard 2.21's dashboard reads ``&run=`` from the URL but its controls never
        look at it (``tf-graph-dashboard`` does not bind its ``_selectedDataset`` to
        ``tf-graph-controls``): it always loads the first run (natural sort order). The
        oracle then selects the run as the run drop-down does, by setting
        ``tf-graph-controls._selectedRunIndex``.
        """
        assert self.server is not None and self.browser is not None, "use inside `with`"
        page = self.browser.new_page(viewport=self.viewport)
        lines: list[str] = []
        page.on("console", lambda m: lines.append(m.text))
        try:
            page.goto(f"http://127.0.0.1:{self.server.port}/#graphs&run={run}")
            page.wait_for_selector("tf-graph-scene g.node", state="attached",
                                   timeout=timeout_s * 1000)
            seconds = float(page.evaluate(PAINTED_JS)) / 1000
            loader = page.locator("tf-graph-dashboard-loader").element_handle()
            shown = loader.evaluate("l => l._graphRunTag && l._graphRunTag.run")
            if shown != run:
                lines.clear()
                start = float(page.evaluate("performance.now()"))
                found = page.locator("tf-graph-controls").evaluate(
                    "(c, run) => { const i = c.datasets.findIndex(d => d.name === run);"
                    " if (i >= 0) c.set('_selectedRunIndex', i); return i; }", run)
                if found < 0:
                    raise LookupError(f"TensorBoard has no run {run!r}")
                page.wait_for_function(
                    "([l, run]) => !!l._graphRunTag && l._graphRunTag.run === run",
                    arg=[loader, run], polling=50, timeout=timeout_s * 1000)
                page.wait_for_selector("tf-graph-scene g.node", state="attached")
                seconds = (float(page.evaluate(PAINTED_JS)) - start) / 1000
            yield page, seconds, lines
        finally:
            page.close()

    def render_time(self, run: str, timeout_s: float = 120.0) -> tuple[float, list[str]]:
        """Seconds to the first painted node of run ``run`` in a fresh page (see
        :meth:`page`), and TensorBoard's own phase timings (its console lines)."""
        with self.page(run, timeout_s) as (_page, seconds, lines):
            return seconds, [ln for ln in lines if " ms" in ln]

    def extract(self, run: str, *, expand: str | list[str] = "all", max_expand: int = 100_000,
                templates: bool = True, ops: bool = True, click: tuple[str, ...] = (),
                timeout_s: float = 120.0) -> TBGraph:
        """The dashboard's hierarchy for run ``run`` (see :class:`TBGraph`).

        ``expand``: ``"all"`` or the group names whose render info to build (the root is
        always built); at most ``max_expand`` groups, parents first. ``templates``: run
        the dashboard's template detection when it has not run (large graphs).
        ``click``: groups then expanded in the scene, in order (each one's parent must be
        drawn expanded by then), whose drawn side panels are read.
        """
        with self.page(run, timeout_s) as (page, render_s, lines):
            # Page JavaScript runs on one thread: the board's own template pass (colour
            # by structure) has either run already or will find ours done.
            data = json.loads(page.locator("tf-graph").evaluate(_EXTRACT_JS, {
                "templates": templates, "expand": expand, "maxExpand": max_expand,
                "ops": ops}))
            scene = page.locator("tf-graph-scene")
            drawn = {"": scene.evaluate(_DRAWN_PANEL_JS, "")}
            for name in click:
                # What a double click on the group does (tf-graph's node-toggle-expand
                # handler); the scene lays the group out 75 ms later.
                page.locator("tf-graph").evaluate(
                    "(g, name) => g._nodeToggleExpand({detail: {name}})", name)
                page.wait_for_function(
                    "([s, name]) => !!s.shadowRoot.querySelector("
                    "`g.node[data-name=\"${CSS.escape(name)}\"] > g.subscene`)",
                    arg=[scene.element_handle(), name], polling=50, timeout=timeout_s * 1000)
                drawn[name] = scene.evaluate(_DRAWN_PANEL_JS, name)
        templates_2 = {k: v for k, v in data["templates"].items() if len(v) >= 2}
        return TBGraph(
            run=run, groups=data["groups"], ops=data["ops"], templates=templates_2,
            side_panel=data["side_panel"], drawn_panels=drawn, render_s=render_s,
            color_by=data["color_by"], timings=data["timings"],
            console=[ln for ln in lines if " ms" in ln])


# --- our side, in the same shape ---------------------------------------------------------


def view_json_groups(view_json: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``view_to_json(view)`` reshaped like :attr:`TBGraph.groups` (plus ``side_panel``
    and ``series`` as our JSON has them): group name -> record, children as
    ``[name, kind]`` pairs in our order."""
    out: dict[str, dict[str, Any]] = {}
    stack = [view_json["root"]]
    while stack:
        g = stack.pop()
        kids = g["children"]
        out[g["name"]] = {
            "kind": g["kind"],
            "children": [[c["name"], c["kind"]] for c in kids],
            "depth": g["depth"], "cardinality": g["cardinality"],
            "op_histogram": dict(g["op_histogram"]),
            "device_histogram": dict(g["device_histogram"]),
            "template": g["template"], "series": g["series"],
            "side_panel": g["side_panel"], "metaedges": g["metaedges"],
        }
        stack.extend(c for c in kids if c["kind"] != "op")
    return out


def view_json_ops(view_json: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Op name -> ``{"op", "parent", "device", "in_embeddings", "out_embeddings"}`` from a
    ``view_to_json`` dict (embedding names only), like :attr:`TBGraph.ops`."""
    out: dict[str, dict[str, Any]] = {}
    stack = [view_json["root"]]
    while stack:
        g = stack.pop()
        for c in g["children"]:
            if c["kind"] == "op":
                out[c["name"]] = {
                    "op": c["op"], "parent": g["name"], "device": c["device"],
                    "in_embeddings": [e["name"] for e in c["in_embeddings"]],
                    "out_embeddings": [e["name"] for e in c["out_embeddings"]]}
            else:
                stack.append(c)
    return out


def dump(tb: TBGraph, path: str | os.PathLike[str]) -> None:
    """Save an extraction as JSON (for looking at a failing comparison by hand)."""
    with open(path, "w") as fh:
        json.dump(tb.__dict__, fh, indent=1, sort_keys=True)
