"""Training statistics on the graph view: the join by path, the embedded block, the page.

A real ``watch()`` run of a tiny torch model (its graph captured and written to the same
logdir) is joined to its graph; the page colours the modules by a statistic at a step, and
its values equal what the reader's histograms give. The page's SVG export parses and holds
the nodes on screen; the PNG export is a PNG.
"""

from __future__ import annotations

import base64
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.graph import Graph, Node, TensorSpec
from summarylib.graph.view import build_view
from summarylib.graph.view.html_export import view_to_html
from summarylib.graph.view.statistics import (
    GraphStatistics,
    StatisticSeries,
    check_graphs_match,
    join_statistics,
    match_tag,
    read_statistics,
    read_summaries,
    statistics_to_json,
)
from summarylib.reader import Columns, read_columns
from tests.browser import chromium_page, wait_until

ROOT = Path(__file__).resolve().parent.parent
F = TensorSpec((2, 8), "float32")
STEPS = 4


def _train(logdir: Path, seed: int, hidden: int = 8) -> None:
    """A tiny model, its graph and watch()'s histograms at every step, one scalar per
    module path."""
    torch = pytest.importorskip("torch")
    import summarylib as sl
    import summarylib.graph as sg
    from summarylib.integrations.torch import unwatch, watch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(hidden, hidden)
            self.norm = torch.nn.LayerNorm(hidden)

        def forward(self, x: Any) -> Any:
            return self.norm(torch.relu(self.fc(x))) + x

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Linear(4, hidden)
            self.blocks = torch.nn.ModuleList([Block() for _ in range(2)])
            self.head = torch.nn.Linear(hidden, 2)

        def forward(self, x: Any) -> Any:
            x = self.emb(x)
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    torch.manual_seed(seed)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    writer = sl.create_file_writer(str(logdir))
    with writer.as_default():
        sg.write_graph(sg.capture(model, (torch.ones(2, 4),)))
        watch(model, log="all", log_freq=1, writer=writer)
        try:
            for step in range(STEPS):
                loss = model(torch.randn(16, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 2 == 0:  # a scalar on some steps only
                    sl.scalar("blocks/1/fc/update_ratio", 0.25 * (step + 1), step=step)
        finally:
            unwatch(model)
    writer.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("watched")
    _train(base / "a", seed=0)
    _train(base / "b", seed=1)
    return base / "a", base / "b"


def _view(logdir: Path) -> Any:
    from summarylib.graph.view import load_graph

    return build_view(load_graph(str(logdir)).graph_def)


def _expected(logdir: Path, kind: str, module: str) -> dict[int, float]:
    """The gradient/parameter norm of ``module`` per step, from the reader's histograms:
    every value of the module's tensors at its bucket's centre."""
    cols = read_columns(str(logdir), kinds=("histograms",))["."]
    total: dict[int, float] = {}
    for tag, col in cols.items():
        prefix = f"{kind}/{module.replace('/', '.')}."
        if tag.startswith(prefix) and "." not in tag[len(prefix):]:
            for step, h in zip(col.step.tolist(), col.value, strict=True):
                centres = (h[:, 0] + h[:, 1]) / 2
                total[step] = total.get(step, 0.0) + float((h[:, 2] * centres**2).sum())
    assert total, (kind, module)
    return {s: math.sqrt(v) for s, v in total.items()}


# --- the join ---------------------------------------------------------------------------


def _small_view_graph() -> Graph:
    return Graph([
        Node("x", "Placeholder", outputs=[F]),
        Node("blocks/0/fc", "MatMul", ["x"], outputs=[F]),
        Node("blocks/0/act", "Relu", ["blocks/0/fc"], outputs=[F]),
        Node("blocks/1/fc", "MatMul", ["blocks/0/act"], outputs=[F]),
        Node("out", "Identity", ["blocks/1/fc"], outputs=[F]),
    ])


def _small_view() -> Any:
    return build_view(_small_view_graph())


def test_tags_name_nodes_by_the_documented_rule() -> None:
    view = _small_view()
    assert match_tag(view, "gradients/blocks.0.fc.weight") == ("blocks/0/fc", "gradients")
    assert match_tag(view, "model/parameters/blocks.1.fc.bias") == ("blocks/1/fc",
                                                                    "model/parameters")
    assert match_tag(view, "blocks/0/fc/update_ratio") == ("blocks/0/fc", "update_ratio")
    assert match_tag(view, "blocks/0/stats/norm") == ("blocks/0", "stats/norm")
    assert match_tag(view, "grad_norm/blocks/1/fc") == ("blocks/1/fc", "grad_norm")
    assert match_tag(view, "grad_norm/blocks.1.fc") == ("blocks/1/fc", "grad_norm")
    assert match_tag(view, "train/grad/blocks") == ("blocks", "train/grad")
    assert match_tag(view, "loss") is None
    assert match_tag(view, "blocks/0/fc") is None  # names a node, but no statistic
    assert match_tag(view, "gradients/nowhere.weight") is None


def test_histograms_of_one_module_pool_and_scalars_keep_their_steps() -> None:
    view = _small_view()
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=64), rng.normal(size=8) + 3

    def hist(values: np.ndarray) -> np.ndarray:
        counts, edges = np.histogram(values, bins=30)
        return np.stack([edges[:-1], edges[1:], counts], axis=1)

    def col(steps: list[int], values: Any) -> Columns:
        return Columns(np.array(steps, dtype=np.int64), np.zeros(len(steps)), values)

    hists = {"gradients/blocks.0.fc.weight": col([0, 2], np.stack([hist(w), hist(2 * w)])),
             "gradients/blocks.0.fc.bias": col([0, 2], np.stack([hist(b), hist(b)]))}
    scalars = {"blocks/1/fc/lr": col([3, 1, 3], np.array([1.0, 2.0, 5.0], np.float32)),
               "loss": col([0], np.array([0.5], np.float32))}
    stats = join_statistics(view, scalars, hists)
    assert stats.unmatched == ["loss"]
    both0, both2 = np.concatenate([w, b]), np.concatenate([2 * w, b])
    centres_norm = stats.value("gradients norm", "blocks/0/fc", 0)
    assert centres_norm == pytest.approx(np.linalg.norm(both0), rel=0.02)
    assert stats.value("gradients mean", "blocks/0/fc", 1) == pytest.approx(both0.mean(), abs=0.05)
    assert stats.value("gradients std", "blocks/0/fc", 2) == pytest.approx(both2.std(), rel=0.02)
    assert stats.value("gradients min", "blocks/0/fc", 2) == both2.min()  # exact: edges
    assert stats.value("gradients absmax", "blocks/0/fc", 9) == np.abs(both2).max()
    assert stats.value("gradients norm", "blocks/0/fc", -1) is None
    # Steps sorted, a repeated step's last value wins; the last point at or before a step.
    assert stats.series["lr"]["blocks/1/fc"].steps.tolist() == [1, 3]
    assert stats.value("lr", "blocks/1/fc", 2) == 2.0
    assert stats.value("lr", "blocks/1/fc", 7) == 5.0
    assert stats.tags[("blocks/0/fc", "gradients")] == sorted(hists)


def _decode(values: Any) -> np.ndarray:
    """The page's decoding of one series (as statistics_to_json documents it)."""
    if isinstance(values, str):
        return np.frombuffer(base64.b64decode(values), dtype="<f4").astype(np.float64)
    q = np.frombuffer(base64.b64decode(values["u16"]), dtype="<u2")
    out = values["lo"] + q * (values["hi"] - values["lo"]) / 65534
    out = np.where(q == 65535, np.nan, out)
    if "inf" in values:
        out[np.frombuffer(base64.b64decode(values["inf"]), dtype="<u4")] = np.inf
    return out


def test_steps_with_no_finite_value_are_infinite() -> None:
    # Gradients that turned NaN or infinite: the histogram leaves such values out, so it
    # counts nothing; the module's statistics at that step are +inf (drawn as such), not
    # the bias's alone, nor a norm of 0. A NaN or infinite scalar is +inf too.
    view = _small_view()
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=64), rng.normal(size=8)

    def hist(values: np.ndarray) -> np.ndarray:
        counts, edges = np.histogram(values, bins=30)
        return np.stack([edges[:-1], edges[1:], counts], axis=1)

    def col(steps: list[int], values: Any) -> Columns:
        return Columns(np.array(steps, dtype=np.int64), np.zeros(len(steps)), values)

    nothing = np.zeros((30, 3))  # what histogram() writes for data with no finite value
    hists = {"gradients/blocks.0.fc.weight": col([0, 1, 2], np.stack([hist(w), nothing,
                                                                      hist(w)])),
             "gradients/blocks.0.fc.bias": col([0, 1, 2], np.stack([hist(b)] * 3)),
             "gradients/blocks.1.fc.weight": col([0, 1], np.stack([nothing, nothing]))}
    scalars = {"blocks/0/fc/gnorm": col([0, 1, 2, 3], np.array(
        [1.0, np.nan, np.inf, -np.inf], np.float32))}
    stats = join_statistics(view, scalars, hists)
    for stat in ("norm", "mean", "std", "min", "max", "absmax"):
        name = f"gradients {stat}"
        assert math.isfinite(stats.value(name, "blocks/0/fc", 0) or math.nan), stat
        assert stats.value(name, "blocks/0/fc", 1) == math.inf, stat
        assert math.isfinite(stats.value(name, "blocks/0/fc", 2) or math.nan), stat
        assert stats.value(name, "blocks/1/fc", 0) == math.inf, stat
    assert stats.value("gnorm", "blocks/0/fc", 0) == 1.0
    assert [stats.value("gnorm", "blocks/0/fc", s) for s in (1, 2, 3)] == [math.inf] * 3


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")),
                          st.just(float("inf"))),
                min_size=1, max_size=40), st.booleans())
def test_embedded_values_round_trip(values: list[float], quantize: bool) -> None:
    view = _small_view()
    arr = np.array(values, dtype=np.float64)
    stats = GraphStatistics(series={"s": {"blocks/0/fc": StatisticSeries(
        np.arange(len(arr), dtype=np.int64), arr)}}, kinds={"s": "scalar"})
    block = statistics_to_json(view, [stats], quantize_above=0 if quantize else 10**9)
    assert block["nodes"] == ["blocks/0/fc"] and block["groups"] == [["blocks", [0]],
                                                                     ["blocks/0", [0]]]
    [[run, node, steps, enc]] = block["statistics"][0]["series"]
    assert (run, node, block["steps"][steps]) == (0, 0, list(range(len(arr))))
    back = _decode(enc)
    assert np.array_equal(np.isnan(back), np.isnan(arr))
    assert np.array_equal(np.isposinf(back), np.isposinf(arr))  # no finite value: kept
    finite = np.isfinite(arr)
    span = np.ptp(arr[finite]) if finite.any() else 0.0
    tol = span / 65534 / 2 + 1e-9 if quantize else 0.0
    want = arr[finite] if quantize else arr[finite].astype(np.float32)
    assert np.allclose(back[finite], want, rtol=1e-7 if not quantize else 0, atol=tol)


def _big_group_graph() -> Graph:
    """Nested scopes, a numbered series of 1,500 ops (drawn as two ranges of children)
    and a scope of 1,200 distinct ops (drawn as two ranges too)."""
    nodes = [Node("x", "Placeholder", outputs=[F])]
    nodes += [Node(f"big/relu_{i}", "Relu", ["x"], outputs=[F]) for i in range(1500)]
    nodes += [Node(f"wide/{chr(97 + i % 26)}{i}/op", "Tanh", ["x"], outputs=[F])
              for i in range(1200)]
    nodes += [Node("head/fc/MatMul", "MatMul", ["big/relu_7", "wide/a0/op"], outputs=[F]),
              Node("head/out", "Identity", ["head/fc/MatMul"], outputs=[F])]
    return Graph(nodes)


def test_the_page_tree_names_and_draws_nodes_as_the_view_does() -> None:
    from summarylib.graph.view.page_columns import source_to_page_and_tree, source_to_page_data
    from summarylib.graph.view.ranges import with_ranges

    counted = []
    for graph in (_big_group_graph(), _small_view_graph()):
        got = source_to_page_and_tree(graph)
        assert got is not None
        page, tree = got
        assert page == source_to_page_data(graph)
        view = build_view(graph)
        assert set(tree.nodes) == set(view.nodes) - {""}
        drawn = with_ranges(view)
        ranges = sorted(set(drawn.nodes) - set(view.nodes))
        counted.append(len(ranges))
        # A range asked before any of its children, then every node.
        for name in [*ranges, *drawn.nodes]:
            if name:
                assert tree.drawn_parent(name) == drawn.nodes[name].parent, name
    assert counted == [4, 0]  # the series' two ranges, the wide scope's two
    # The trees compare as the views do (a tree with a view too).
    big = source_to_page_and_tree(_big_group_graph())
    assert big is not None
    check_graphs_match(big[1], build_view(_big_group_graph()))
    with pytest.raises(ValueError, match=r"do not match.*only in the first"):
        check_graphs_match(big[1], tree)
    with pytest.raises(KeyError):
        tree.drawn_parent("nowhere/children 0\u2013999")


def test_statistics_on_the_page_straight_from_the_source_are_the_views() -> None:
    # The same HTML, byte for byte: statistics joined to the page's tree and to the view,
    # on nodes inside ranges of a big series and of a big scope, and on groups.
    from summarylib.graph.view.html_export import page_to_html
    from summarylib.graph.view.page_columns import source_to_page_and_tree

    graph = _big_group_graph()

    def col(steps: list[int], values: list[float]) -> Columns:
        return Columns(np.array(steps, np.int64), np.zeros(len(steps)),
                       np.array(values, np.float32))

    scalars = {"big/relu_1200/norm": col([0, 1], [1.0, 2.0]),
               "big/relu_3/norm": col([0, 1], [0.5, float("nan")]),
               "norm/wide/z1195/op": col([1], [4.0]),
               "head/fc/lr": col([0, 2], [0.1, 0.2]), "loss": col([0], [3.0])}
    got = source_to_page_and_tree(graph)
    assert got is not None
    page, tree = got
    view = build_view(graph)
    from_tree = join_statistics(tree, scalars, run="r")
    from_view = join_statistics(view, scalars, run="r")
    assert from_tree.unmatched == from_view.unmatched == ["loss"]
    assert set(from_tree.series["norm"]) == {"big/relu_1200", "big/relu_3", "wide/z1195/op"}
    assert statistics_to_json(tree, [from_tree]) == statistics_to_json(view, [from_view])
    groups = dict(statistics_to_json(tree, [from_tree])["groups"])
    assert any(g.startswith("big/relu_[") and "/children 1000" in g for g in groups)
    assert page_to_html(page, "t", statistics=from_tree, tree=tree) == view_to_html(
        view, "t", statistics=from_view)
    with pytest.raises(ValueError, match="need its tree"):
        page_to_html(page, statistics=from_tree)


def test_graphs_that_differ_cannot_be_compared() -> None:
    check_graphs_match(_small_view(), _small_view())
    other = build_view(Graph([Node("x", "Placeholder", outputs=[F]),
                              Node("blocks/0/fc", "Conv2D", ["x"], outputs=[F])]))
    with pytest.raises(ValueError, match=r"do not match.*only in the first.*another kind"):
        check_graphs_match(_small_view(), other)


# --- a real watch() run: reader, CLI, page ------------------------------------------------


def test_watch_run_joins_to_its_modules(runs: tuple[Path, Path]) -> None:
    a, _ = runs
    view = _view(a)
    stats = read_statistics(a, view)
    assert stats.unmatched == [] and stats.run == "."
    modules = {"emb", "blocks/0/fc", "blocks/0/norm", "blocks/1/fc", "blocks/1/norm", "head"}
    assert set(stats.series["gradients norm"]) == modules
    assert set(stats.series["update_ratio"]) == {"blocks/1/fc"}
    for module in ("blocks/1/fc", "head"):
        want = _expected(a, "gradients", module)
        got = stats.series["gradients norm"][module]
        assert got.steps.tolist() == sorted(want)
        assert got.values.tolist() == pytest.approx([want[s] for s in sorted(want)], rel=1e-12)
    with pytest.raises(ValueError, match="no run 'nope'"):
        read_statistics(a, view, run="nope")
    # What is joined, read without a view: the run's scalars and histograms apart.
    run, scalars, histograms = read_summaries(a)
    assert run == "." and "blocks/1/fc/update_ratio" in scalars
    assert "gradients/blocks.1.fc.weight" in histograms and not set(scalars) & set(histograms)
    joined = join_statistics(view, scalars, histograms, run=run)
    assert joined.series.keys() == stats.series.keys() and joined.tags == stats.tags
    with pytest.raises(ValueError, match="no run 'nope'"):
        read_summaries(a, run="nope")


def test_cli_embeds_the_statistics_and_refuses_other_graphs(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import summarylib as sl
    import summarylib.graph as sg
    from summarylib.cli import main

    a, b = runs
    out = tmp_path / "g.html"
    # One run: the page straight from the source, its statistics joined to its tree,
    # the text the view's route writes.
    assert main(["graph", str(a), "--title", "watched", "-o", str(out)]) == 0
    assert "13 statistics on 6 nodes) from" in capsys.readouterr().out
    view = _view(a)
    assert out.read_text() == view_to_html(view, title="watched",
                                           statistics=read_statistics(a, view))
    assert main(["graph", str(a), "--compare", str(b), "--title", "watched",
                 "-o", str(out)]) == 0
    assert "13 statistics on 6 nodes, compared" in capsys.readouterr().out
    first, second = read_statistics(a, view), read_statistics(b, view)
    first.run, second.run = str(a), str(b)  # the command line names the runs by their paths
    assert out.read_text() == view_to_html(view, title="watched", statistics=first,
                                           compare=second)
    assert 'id="graph-statistics"' in out.read_text()
    assert main(["graph", str(a), "--no-statistics", "-o", str(out)]) == 0
    assert "(html, 12 ops) from" in capsys.readouterr().out
    assert 'id="graph-statistics"' not in out.read_text()
    other = tmp_path / "other"
    writer = sl.create_file_writer(str(other))
    with writer.as_default():
        sg.write_graph(_small_view_graph())
    writer.close()
    assert main(["graph", str(a), "--compare", str(other), "-o", str(out)]) == 2
    assert "graphs do not match" in capsys.readouterr().err
    assert main(["graph", str(a), "--compare", str(b), "--no-statistics"]) == 2
    assert "exclude each other" in capsys.readouterr().err


@pytest.fixture(scope="module")
def page(runs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    a, b = runs
    view = _view(a)
    html = view_to_html(view, title="watched", statistics=read_statistics(a, view),
                        compare=read_statistics(b, view))
    path = tmp_path_factory.mktemp("page") / "watched.html"
    path.write_text(html, encoding="utf-8")
    with chromium_page(width=1200, height=800) as p:
        problems: list[str] = []
        p.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
        p.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        p.goto(path.as_uri())
        wait_until(p, "window.summarylibStats && window.summarylibViewer.timing.frame")
        yield p
        assert problems == []


VIRIDIS = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]


def _ramp(t: float) -> list[float]:
    x = min(max(t, 0.0), 1.0) * (len(VIRIDIS) - 1)
    k = min(len(VIRIDIS) - 2, int(x))
    return [a + (b - a) * (x - k) for a, b in zip(VIRIDIS[k], VIRIDIS[k + 1], strict=True)]


def _dom_fill(page: Any, name: str) -> str | None:
    return page.evaluate(
        """name => {
            const g = Array.from(document.querySelectorAll('[data-name]'))
                .find(e => e.getAttribute('data-name') === name);
            const shape = g && g.querySelector(':scope > .shape, :scope > .frame');
            return shape ? shape.getAttribute('fill') : null;
        }""", name)


def test_page_colours_the_modules_by_a_statistic_at_a_step(page: Any,
                                                          runs: tuple[Path, Path]) -> None:
    a, b = runs
    page.evaluate("""() => { const v = window.summarylibViewer;
        v.expand('blocks'); v.expand('blocks/1');
        window.summarylibStats.select('gradients norm');
        window.summarylibStats.setScale('linear'); }""")
    modules = ["emb", "blocks/0/fc", "blocks/1/fc", "blocks/1/norm", "head"]
    want = {m: _expected(a, "gradients", m) for m in modules}
    steps = page.evaluate("window.summarylibStats.steps()")
    assert steps == sorted(want["head"]) == list(range(STEPS))
    # The scale spans every module's values at every step, in both runs.
    every = [v for run in (a, b) for m in [*modules, "blocks/0/norm"]
             for v in _expected(run, "gradients", m).values()]
    lo, hi = min(every), max(every)
    seen = set()
    for step in steps:
        page.evaluate("s => window.summarylibStats.setStep(s)", step)
        for m in modules:
            got = page.evaluate("m => window.summarylibStats.value(m)", m)
            assert got == pytest.approx(want[m][step], rel=1e-6), (m, step)
            colour = page.evaluate("m => window.summarylibStats.colour(m)", m)
            seen.add(colour)
            if m != "blocks/0/fc":  # blocks/0 is closed: its ops are not drawn
                assert _dom_fill(page, m) == colour, (m, step)
            # Where the value lies on the scale (the documented 5-stop viridis ramp).
            rgb = [int(c) for c in colour[4:-1].split(",")]
            assert rgb == pytest.approx(_ramp((want[m][step] - lo) / (hi - lo)), abs=1.01)
        # A group shows the max of the modules beneath it (closed or open).
        b1 = page.evaluate("window.summarylibStats.value('blocks/1')")
        assert b1 == pytest.approx(max(want["blocks/1/fc"][step], want["blocks/1/norm"][step]),
                                   rel=1e-6)
        assert _dom_fill(page, "blocks/0") == page.evaluate(
            "window.summarylibStats.colour('blocks/0')")
    assert len(seen) > 4  # the colours follow the steps
    assert _dom_fill(page, "blocks/1/relu") == "#f0f0f0"  # no statistic
    # A scalar written on some steps: at an odd step, the last one before it.
    page.evaluate("() => { window.summarylibStats.select('update_ratio'); "
                  "window.summarylibStats.setStep(3); }")
    assert page.evaluate("window.summarylibStats.value('blocks/1/fc')") == 0.75
    # The second run, and the difference.
    page.evaluate("() => { window.summarylibStats.select('gradients norm'); "
                  "window.summarylibStats.setMode('diff'); window.summarylibStats.setStep(2); }")
    diff = _expected(b, "gradients", "head")[2] - want["head"][2]
    assert page.evaluate("window.summarylibStats.value('head')") == pytest.approx(diff, rel=1e-5)
    page.evaluate("() => window.summarylibStats.setMode('a')")


def test_exported_svg_parses_and_holds_the_visible_nodes(page: Any, tmp_path: Path) -> None:
    page.evaluate("window.summarylibViewer.expand('blocks')")
    page.click("#fit")
    with page.expect_download() as download:
        page.click("#export-svg")
    path = tmp_path / "view.svg"
    download.value.save_as(path)
    assert download.value.suggested_filename == "watched.svg"
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    drawn = {e.get("data-name") for e in root.iter() if e.get("data-name") is not None}
    visible = set(page.eval_on_selector_all(
        "#canvas [data-name]", "els => els.map(e => e.getAttribute('data-name'))"))
    assert drawn == visible and {"blocks/1", "head", "emb"} <= drawn
    # Styles are inlined: a node's fill and the edges' stroke without the style sheet.
    ns = "{http://www.w3.org/2000/svg}"
    head = next(e for e in root.iter(f"{ns}g") if e.get("data-name") == "head")
    fill = str(head.find(f"{ns}ellipse").get("fill")).replace(" ", "")
    assert fill == page.evaluate("window.summarylibStats.colour('head')")
    edge = next(e for e in root.iter(f"{ns}path") if "edge" in (e.get("class") or ""))
    assert edge.get("stroke") == "rgb(153, 153, 153)" and edge.get("fill") == "none"
    png = page.evaluate("""() => window.summarylibExport.pngBlob().then(async b =>
        Array.from(new Uint8Array(await b.arrayBuffer()).slice(0, 8)))""")
    assert bytes(png) == b"\x89PNG\r\n\x1a\n"


def test_quantized_values_decode_in_the_page(page: Any, runs: tuple[Path, Path], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the size limit the block holds 16-bit codes: the page decodes them to within
    half a code of the reader's values."""
    from summarylib.graph.view import statistics

    a, _ = runs
    view = _view(a)
    stats = read_statistics(a, view)
    monkeypatch.setattr(statistics, "QUANTIZE_ABOVE", 0)
    path = tmp_path / "quantized.html"
    path.write_text(view_to_html(view, statistics=stats), encoding="utf-8")
    assert '"u16"' in path.read_text()
    page.goto(path.as_uri())
    wait_until(page, "window.summarylibStats && window.summarylibViewer.timing.frame")
    page.evaluate("window.summarylibStats.select('gradients norm')")
    want = _expected(a, "gradients", "head")
    span = np.ptp(stats.series["gradients norm"]["head"].values)
    for step in want:
        page.evaluate("s => window.summarylibStats.setStep(s)", step)
        got = page.evaluate("window.summarylibStats.value('head')")
        assert got == pytest.approx(want[step], abs=span / 65534 / 2 * 1.01 + 1e-6)


@pytest.mark.parametrize("quantize", [False, True])
def test_page_draws_steps_with_no_finite_value_apart(page: Any, tmp_path: Path, quantize: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A module whose gradient norm is +inf at step 1 (its gradients turned NaN): magenta,
    # shown through its closed group (max), and the scale of the other modules spans the
    # finite values only (an infinite value used to stretch it to one colour).
    view = _small_view()

    def col(steps: list[int], values: Any) -> Columns:
        return Columns(np.array(steps, dtype=np.int64), np.zeros(len(steps)), values)

    scalars = {"blocks/0/fc/gnorm": col([0, 1, 2], np.array([1.0, np.nan, 3.0], np.float32)),
               "blocks/1/fc/gnorm": col([0, 1, 2], np.array([2.0, 4.0, 5.0], np.float32))}
    stats = join_statistics(view, scalars, {})
    if quantize:  # 16-bit codes, as past the size limit
        from summarylib.graph.view import statistics

        monkeypatch.setattr(statistics, "QUANTIZE_ABOVE", 0)
    html = view_to_html(view, title="nonfinite", statistics=stats)
    assert ('"u16"' in html) == quantize
    path = tmp_path / "nonfinite.html"
    path.write_text(html, encoding="utf-8")
    # On the module's browser page (one Chromium per module), which goes back to the
    # watched run's page afterwards; its fixture reports page errors.
    watched = page.url
    page.goto(path.as_uri())
    try:
        wait_until(page, "window.summarylibStats && window.summarylibViewer.timing.frame")
        page.evaluate("""() => { window.summarylibViewer.expand('blocks');
            window.summarylibViewer.expand('blocks/1');
            window.summarylibStats.select('gnorm');
            window.summarylibStats.setScale('linear');
            window.summarylibStats.setStep(1); }""")
        assert page.evaluate("window.summarylibStats.value('blocks/0/fc')") == math.inf
        assert page.evaluate("window.summarylibStats.colour('blocks/0/fc')") == "#e6007e"
        # blocks/0 is closed: it shows its op's value (max beneath), in magenta.
        assert page.evaluate("window.summarylibStats.value('blocks/0')") == math.inf
        assert _dom_fill(page, "blocks/0") == "#e6007e"
        # blocks/1/fc at 4.0 on the finite scale [1, 5].
        colour = page.evaluate("window.summarylibStats.colour('blocks/1/fc')")
        assert _dom_fill(page, "blocks/1/fc") == colour
        rgb = [int(c) for c in colour[4:-1].split(",")]
        assert rgb == pytest.approx(_ramp((4.0 - 1.0) / (5.0 - 1.0)), abs=1.01)
        assert "no finite value" in page.inner_text("#stats-panel")
        page.evaluate("window.summarylibStats.setStep(2)")
        assert page.evaluate("window.summarylibStats.value('blocks/0/fc')") == \
            pytest.approx(3.0)
    finally:
        page.goto(watched)
        wait_until(page, "window.summarylibStats && window.summarylibViewer.timing.frame")
