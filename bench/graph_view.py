"""The offline graph view on 10k-, 100k- and 1M-node graphs, beside TensorBoard's graph dashboard.

Run: ``python bench/graph_view.py [--quick] [--reps 3] [--sizes 10k 100k 1M
torch-transformer-24 jax-transformer-24] [--no-tb] [--tb-timeout 120]``.
Prints one markdown table (medians over ``--reps``; ``--quick``: one repetition).

The graphs are ``tests/graph_models.py``'s synthetic TF1-style training graphs (scoped
transformer layers, variables, numbered series, ``init``/``save`` hubs). Per graph:

* ``summarylib graph`` .pb: the command line writing the page of the graph's GraphDef
  file (``graph_def_bytes``) in a new process: wall seconds from its start to its end
  (interpreter, imports, reading and checking the file, the page, writing it), and its
  peak RSS;
* graph to HTML: ``source_to_html`` of the graph (the page straight from the source,
  ``page_columns``: no view objects), wall and CPU seconds, the process's peak RSS after
  it (measured before the view is built), and whether its text is the one ``view_to_html``
  writes for the view (``same``);
* ``build_view``: the view with default options (``summarylib.graph.view.build_view``);
* HTML export: ``view_to_html`` of that view and its size (no geometry: the page lays a
  group out when it is opened), and the process's peak RSS after the export;
* our first paint: the HTML opened from ``file://`` in headless Chromium (Debian's, driven
  by playwright, ``tests/browser.py``'s flags), from navigation until the first
  ``[data-name]`` node exists and one animation frame has run (the frame that paints it),
  by the page's clock: a script playwright adds before the page's own (an init script)
  checks for the node at every animation frame. The notes give the same seen from
  playwright (its ``goto`` waits for the load event, then it waits for the node and asks
  the page for a frame), which adds the load event (the whole file parsed) and
  playwright's round trips to a page whose main thread may be busy decoding;
* expand the largest group: from ``expand(name)`` of the group with the most children
  (laid out in the page's Web Worker when it has more than 240; shown as ranges of 1,000
  children when it has more than 1,000) until it is drawn and one frame has run; then the
  same for its first child (its first range), and the page's JavaScript heap after both;
* click at first paint: in a fresh page, ``expand(name)`` of the top level's group of the
  most ops made at the first animation frame with a node drawn (what a click right after
  the first paint asks), until it is drawn and one frame has run, by the page's clock:
  the page may not have read its blobs yet (it answers from the near part);
* deep click at first paint: the same for the deepest group of the graph (deeper than
  the page's near part on the big graphs: it waits for the page's first blob, the tree,
  and the chunks of columns that hold it, its children and the groups above it; the
  groups above it stay closed, so no range of 1,000 is laid out on the way);
* first search: once the page has read everything, the search box given the deepest
  op's path (a query across scopes), until its list is shown (less the box's 120 ms
  wait for more typing);
* TensorBoard: the same graph as the only run of a logdir, the real TensorBoard 2.21
  (``tests/tbserver.py``) and the same browser (``tests/tb_graph_oracle.py``), from
  navigation to ``#graphs`` until the first node of the dashboard's scene exists plus one
  frame, as playwright sees it (fetching the GraphDef as
  text, parsing, hierarchy, layout of the top level); "n/a" when nothing is drawn within
  ``--tb-timeout`` seconds. The dashboard's own phase timings (its console lines) are
  printed below the table.

TensorBoard colours by structure only up to 10,000 nodes and edges, so its template pass
(minutes on the 100k graph) is not part of its render time here; ours is always included.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from summarylib.graph.view import build_view, source_to_html  # noqa: E402
from tests import graph_models as gm  # noqa: E402
from tests.browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    wait_until,
)
from tests.browser import missing as browser_missing  # noqa: E402
from tests.tb_graph_oracle import PAINTED_JS, TensorBoardOracle, oracle_missing  # noqa: E402


def synthetic_1m() -> Any:
    """About 1,000,000 nodes: 4 heads per layer."""
    return gm.synthetic_graph(gm._layers_for(1_000_000, 4), 4)


def torch_transformer_24() -> Any:
    """A captured model: 24 pre-norm transformer blocks (``tests/torch_models.py``'s,
    d=64, 4 heads) in torch, through ``summarylib.graph.capture`` (torch.export)."""
    import torch

    from tests.graph_models import _capture_quietly
    from tests.torch_models import TransformerBlock

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[TransformerBlock(d=64, heads=4) for _ in range(24)]).eval()
    return _capture_quietly(model, (torch.ones(2, 16, 64),))


def jax_transformer_24() -> Any:
    """A captured model: 24 flax blocks (layer norm, self-attention, MLP, residuals)
    under ``jax.jit``, through ``summarylib.graph.capture``."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    from tests.graph_models import _capture_quietly

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x: Any) -> Any:
            h = nn.LayerNorm()(x)
            x = x + nn.SelfAttention(num_heads=4, qkv_features=64)(h)
            h = nn.Dense(256)(nn.LayerNorm()(x))
            return x + nn.Dense(64)(nn.gelu(h))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x: Any) -> Any:
            for i in range(24):
                x = Block(name=f"block_{i}")(x)
            return x

    model, x = Model(), jnp.ones((2, 16, 64))
    params = model.init(jax.random.PRNGKey(0), x)
    return _capture_quietly(jax.jit(model.apply), (params, x))


SIZES: dict[str, Callable[[], Any]] = {"10k": gm.synthetic_10k, "100k": gm.synthetic_100k,
                                       "1M": synthetic_1m,
                                       "torch-transformer-24": torch_transformer_24,
                                       "jax-transformer-24": jax_transformer_24}
DEFAULT_SIZES = ["10k", "100k"]


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


EXPAND_JS = """name => new Promise((done) => {
    const v = window.summarylibViewer, t = performance.now();
    v.expand(name);
    const poll = () => {
      if (v.pending() === 0 && v.expanded().includes(name))
        requestAnimationFrame(() => done(performance.now() - t));
      else setTimeout(poll, 1);
    };
    poll();
})"""


def expand_largest(browser: Any, url: str, group: str, timeout_s: float
                   ) -> tuple[float, float | None, float]:
    """In a fresh page (after its first paint): seconds from ``expand(group)`` until it is
    drawn and a frame has run; the same for its first child (a range of at most 1,000
    children when the group has more; None when it is not a group); and the page's
    JavaScript heap in MB after both (``Runtime.getHeapUsage``)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(url, timeout=timeout_s * 1000)
        # A function, not a string: the page's CSP forbids eval after the first check.
        wait_until(page, "window.summarylibViewer && window.summarylibViewer.timing.frame",
                   timeout_ms=timeout_s * 1000)
        whole = float(page.evaluate(EXPAND_JS, group)) / 1000
        first = page.evaluate("name => { const i = window.summarylibViewer.nodeInfo("
                              "window.summarylibViewer.nodeInfo(name).children[0]); "
                              "return i.kind === 'op' ? null : i.id; }", group)
        part = None if first is None else float(page.evaluate(EXPAND_JS, first)) / 1000
        cdp = page.context.new_cdp_session(page)
        heap = float(cdp.send("Runtime.getHeapUsage")["usedSize"]) / 1e6
        return whole, part, heap
    finally:
        page.close()


#: Run before the page's scripts: at the first animation frame with a node drawn, asks the
#: viewer to open group ``window.__clickAt`` (as a click on it right after the first paint
#: would) and keeps the milliseconds until it is drawn and a frame has run.
CLICK_AT_PAINT_JS = """(() => {
  const tick = () => {
    const v = window.summarylibViewer;
    if (!document.querySelector("[data-name]") || !v) { requestAnimationFrame(tick); return; }
    const name = window.__clickAt, t = performance.now();
    v.expand(name);
    const poll = () => {
      if (v.pending() === 0 && v.expanded().includes(name))
        requestAnimationFrame(() => { window.__clickAnswered = performance.now() - t; });
      else setTimeout(poll, 1);
    };
    poll();
  };
  requestAnimationFrame(tick);
})();"""

#: The search box given ``q`` (an input event): milliseconds until its list is shown, less
#: the box's 120 ms wait for more typing.
SEARCH_JS = """q => new Promise((done) => {
  const box = document.getElementById("search"), t = performance.now();
  box.value = q;
  box.dispatchEvent(new Event("input"));
  const poll = () => {
    if (document.querySelector("#results.open")) done(performance.now() - t - 120);
    else setTimeout(poll, 1);
  };
  poll();
})"""


def click_at_paint(browser: Any, url: str, group: str, query: str, timeout_s: float
                   ) -> tuple[float, float]:
    """In a fresh page: seconds from a click on ``group`` (a group of the top level) made
    at the first paint until it is drawn open (:data:`CLICK_AT_PAINT_JS`), and, once the
    page has read everything, seconds of the first search for ``query``."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.add_init_script(f"window.__clickAt = {group!r};" + CLICK_AT_PAINT_JS)
        page.goto(url, timeout=timeout_s * 1000)
        answered = float(wait_until(page, "window.__clickAnswered", timeout_s * 1000)) / 1000
        wait_until(page, "window.summarylibViewer.timing.frame", timeout_ms=timeout_s * 1000)
        found = float(page.evaluate(SEARCH_JS, query)) / 1000
        return answered, found
    finally:
        page.close()


def deep_click_at_paint(browser: Any, url: str, group: str, timeout_s: float) -> float:
    """In a fresh page: seconds from ``expand(group)`` made at the first paint until the
    group is laid out and open (:data:`CLICK_AT_PAINT_JS`)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.add_init_script(f"window.__clickAt = {group!r};" + CLICK_AT_PAINT_JS)
        page.goto(url, timeout=timeout_s * 1000)
        return float(wait_until(page, "window.__clickAnswered", timeout_s * 1000)) / 1000
    finally:
        page.close()


def html_export() -> Callable[..., str] | None:
    """``view_to_html``, or None when this checkout has no HTML export."""
    import summarylib.graph.view as gv

    try:
        fn: Any = gv.view_to_html
    except (ImportError, AttributeError):
        return None
    return fn  # type: ignore[no-any-return]


#: Run before the page's scripts: the time of the first animation frame at which a node is
#: drawn (the frame that paints it), by the page's clock.
FIRST_FRAME_JS = """(() => {
  const tick = () => {
    if (document.querySelector("[data-name]")) { window.__firstPaint = performance.now(); return; }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();"""


def first_paint(browser: Any, url: str, selector: str, timeout_s: float
                ) -> tuple[float, float]:
    """Seconds from navigation to ``selector`` present and painted, in a fresh page: by
    the page's clock (:data:`FIRST_FRAME_JS`), and as playwright sees it (after the load
    event, then a round trip for the node and one for a frame)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.add_init_script(FIRST_FRAME_JS)
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_selector(selector, state="attached", timeout=timeout_s * 1000)
        outside = float(page.evaluate(PAINTED_JS)) / 1000
        inside = float(wait_until(page, "window.__firstPaint", timeout_s * 1000)) / 1000
        return inside, outside
    finally:
        page.close()


def tensorboard_render(graph: Any, browser: Any, reps: int, timeout_s: float
                       ) -> tuple[list[float], str, list[str]]:
    """TensorBoard's render times in ``browser`` (fewer than ``reps`` and why, when it
    failed) and its phase timings, the graph being the only run of a logdir."""
    why = oracle_missing()
    if why is not None:
        return [], why, []
    times: list[float] = []
    lines: list[str] = []
    with TensorBoardOracle({"graph": graph}, browser=browser) as tb:
        for _ in range(reps):
            try:
                seconds, lines = tb.render_time("graph", timeout_s)
            except Exception as e:  # playwright's TimeoutError: report it, go on
                return times, f"nothing drawn within {timeout_s:.0f} s ({type(e).__name__})", []
            times.append(seconds)
    return times, "", lines


#: The command line in a fresh interpreter, reporting its own peak RSS (kB) last on stderr.
_CLI = ("import resource, sys\n"
        "from summarylib.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(status)\n")


def cli_write(graph_file: Path, out: Path) -> tuple[float, float]:
    """``summarylib graph GRAPH.pb -o OUT.html`` in a new process: (wall seconds, from
    the start of the process to its end, interpreter start and imports included; its
    peak RSS in MB)."""
    import subprocess

    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _CLI, "graph", str(graph_file), "-o", str(out)],
                       capture_output=True, text=True, cwd=HERE.parent)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"summarylib graph failed: {r.stderr[-2000:]}")
    return wall, int(r.stderr.split()[-1]) / 1024


def fmt(values: list[float], unit: str = "s") -> str:
    return f"{statistics.median(values):.2f} {unit}" if values else "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", nargs="+", choices=list(SIZES), default=DEFAULT_SIZES)
    ap.add_argument("--no-tb", action="store_true", help="skip TensorBoard")
    ap.add_argument("--tb-timeout", type=float, default=120.0)
    ap.add_argument("--no-view", action="store_true",
                    help="only source_to_html: no build_view, view_to_html or expand")
    args = ap.parse_args()
    reps = 1 if args.quick else args.reps
    why = browser_missing()
    to_html = html_export()
    rows = []
    notes: list[str] = []
    medians: dict[str, dict[str, float | None]] = {}
    with contextlib.ExitStack() as stack:
        browser = None
        if why is None:
            from playwright.sync_api import sync_playwright

            pw = stack.enter_context(sync_playwright())
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            stack.callback(browser.close)
        for size in args.sizes:
            graph = SIZES[size]()
            edges = sum(len(n.inputs) + len(n.control_inputs) for n in graph)
            builds, exports, paints, expands, parts, heaps = [], [], [], [], [], []
            clicks: list[float] = []
            deep_clicks: list[float] = []
            searches: list[float] = []
            fasts: list[float] = []
            fast_cpu: list[float] = []
            fast_rss = 0.0
            same: list[bool] = []
            cli_walls: list[float] = []
            cli_rss = 0.0
            outside: list[float] = []
            rss = 0.0
            page_bytes = 0
            with tempfile.TemporaryDirectory(prefix="bench-view-") as tmp:
                path = Path(tmp) / "view.html"
                pb = Path(tmp) / "graph.pb"
                from summarylib.graph.conversion import graph_def_bytes

                pb.write_bytes(graph_def_bytes(graph.nodes))
                for _ in range(reps):
                    wall, mb = cli_write(pb, Path(tmp) / "cli.html")
                    cli_walls.append(wall)
                    cli_rss = max(cli_rss, mb)
                for _ in range(reps):
                    t, cpu = time.perf_counter(), time.process_time()
                    fast_text = source_to_html(graph)
                    fasts.append(time.perf_counter() - t)
                    fast_cpu.append(time.process_time() - cpu)
                    fast_rss = fast_rss or peak_rss_mb()
                    if args.no_view:
                        page_bytes = len(fast_text.encode())
                        if browser is not None:
                            path.write_text(fast_text, encoding="utf-8")
                            paints.append(first_paint(browser, path.as_uri(), "[data-name]",
                                                      args.tb_timeout)[0])
                        continue
                    t = time.perf_counter()
                    view = build_view(graph)
                    builds.append(time.perf_counter() - t)
                    if to_html is None:
                        continue
                    t = time.perf_counter()
                    text = to_html(view)
                    exports.append(time.perf_counter() - t)
                    same.append(text == fast_text)
                    page_bytes = len(text.encode())
                    rss = peak_rss_mb()
                    from summarylib.graph.view import GroupNode

                    largest = max((n for n in view.nodes.values() if isinstance(n, GroupNode)
                                   and n.name), key=lambda g: len(g.children)).name
                    # The top level's group of the most ops (a click right after the
                    # first paint), and a search across scopes: the deepest op's path.
                    biggest = max((view.nodes[c] for c in view.root.children
                                   if isinstance(view.nodes[c], GroupNode)),
                                  key=lambda g: g.cardinality).name  # type: ignore[union-attr]
                    deepest = max(view.nodes, key=lambda n: (n.count("/"), n))
                    deep_group = max((n for n in view.nodes.values()
                                      if isinstance(n, GroupNode) and n.name),
                                     key=lambda g: (g.name.count("/"), g.name)).name
                    path.write_text(text, encoding="utf-8")
                    if browser is None:
                        continue
                    try:
                        inside, seen = first_paint(browser, path.as_uri(), "[data-name]",
                                                   args.tb_timeout)
                        paints.append(inside)
                        outside.append(seen)
                        whole, part, heap = expand_largest(browser, path.as_uri(), largest,
                                                           args.tb_timeout)
                        expands.append(whole)
                        heaps.append(heap)
                        if part is not None:
                            parts.append(part)
                        click, found = click_at_paint(browser, path.as_uri(), biggest, deepest,
                                                      args.tb_timeout)
                        clicks.append(click)
                        searches.append(found)
                        deep_clicks.append(deep_click_at_paint(browser, path.as_uri(),
                                                               deep_group, args.tb_timeout))
                    except Exception as e:  # playwright's TimeoutError: report it, go on
                        notes.append(f"{size}: our page: nothing drawn within "
                                     f"{args.tb_timeout:.0f} s ({type(e).__name__})")
            no_tb: tuple[list[float], str, list[str]] = ([], "", [])
            skip_tb = browser is None or args.no_tb
            tb_times, tb_why, lines = no_tb if skip_tb else tensorboard_render(
                graph, browser, reps, args.tb_timeout)
            if outside:
                notes.append(f"{size}: our first paint as playwright sees it (load event, "
                             f"round trips): {fmt(outside)}")
            if tb_why:
                notes.append(f"{size}: TensorBoard: {tb_why}")
            if lines:
                notes.append(f"{size}: TensorBoard's phases: " + "; ".join(lines))
            rows.append((size, len(graph), edges, fmt(cli_walls), f"{cli_rss:.0f} MB",
                         fmt(fasts), fmt(fast_cpu), f"{fast_rss:.0f} MB",
                         ("yes" if all(same) else "NO") if same else "n/a",
                         fmt(builds), fmt(exports),
                         f"{page_bytes / 1e6:.1f} MB" if page_bytes else "n/a",
                         f"{rss:.0f} MB", fmt(paints), fmt(clicks), fmt(deep_clicks),
                         fmt(expands), fmt(parts),
                         fmt(searches), fmt(heaps, "MB"), fmt(tb_times)))
            medians[size] = {
                "html": statistics.median(fasts) if fasts else None,
                "cli": statistics.median(cli_walls) if cli_walls else None,
                "paint": statistics.median(paints) if paints else None,
                "expand": max(statistics.median(x)
                              for x in (expands, parts, clicks, deep_clicks) if x)
                if expands else None,
            }
    if to_html is None:
        notes.append("view_to_html is not available: no HTML export or first paint")
    if why:
        notes.append(f"no browser: {why}")
    print(f"graph view, median of {reps} (machine: {os.cpu_count()} CPUs)\n")
    print("| graph | nodes | edges | `summarylib graph` .pb | its peak RSS "
          "| source_to_html | its CPU | its peak RSS | same "
          "| build_view | view_to_html | HTML size | peak RSS "
          "| our first paint | click at first paint | deep click at first paint "
          "| expand largest group "
          "| expand its first range | first search | page heap | TensorBoard render |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
          "---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:,} | {r[2]:,} | " + " | ".join(r[3:]) + " |")
    for n in notes:
        print(f"\n* {n}")
    print("\ntargets (graph to HTML: source_to_html; first paint in Chromium):\n")
    for size, what, limit in (("10k", "html", 1.0), ("10k", "paint", 1.0),
                              ("100k", "html", 10.0), ("100k", "paint", 0.5),
                              ("1M", "html", 10.0), ("1M", "cli", 10.0), ("1M", "paint", 1.0),
                              ("1M", "expand", 1.0)):
        value = medians.get(size, {}).get(what)
        shown = "n/a" if value is None else f"{value:.2f} s"
        verdict = "" if value is None or args.quick else (
            " (met)" if value <= limit else " (NOT met)")
        label = {"html": "graph to HTML", "cli": "`summarylib graph` of its .pb",
                 "paint": "first paint",
                 "expand": "expand (slowest median)"}[what]
        print(f"* {size} {label} <= {limit:g} s: {shown}{verdict}")


if __name__ == "__main__":
    main()
