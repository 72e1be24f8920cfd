"""The page straight from the source (page_columns.py): equal to the page of the view.

``source_to_page_data`` recomputes, on integer ids and numpy columns, everything
``build_view`` and ``view_to_page_data`` compute with objects. Its output must be the
same dict, column for column and table for table, on the captured models, the synthetic
training graphs, random graphs that hit every rule (series of ops and of groups, renames,
embeddings, side panels, reference and control edges), and with every option it accepts;
for what it declines it says so (None) and the HTML is still the view's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from summarylib.graph import DType, Graph, Node, TensorSpec
from summarylib.graph.view import ViewOptions, build_view, source_to_html
from summarylib.graph.view.html_export import view_to_html
from summarylib.graph.view.page_columns import source_to_page_data
from summarylib.graph.view.page_data import view_to_page_data
from tests import graph_models as gm

SLOW = bool(os.environ.get("SUMMARYLIB_SLOW"))
OPTIONS = [ViewOptions(), ViewOptions(series=False), ViewOptions(group_series=False),
           ViewOptions(auto_extract=False), ViewOptions(series_min_size=2),
           ViewOptions(hidden_ops=("Identity",)), ViewOptions(rankdir="LR")]


def _same(source: object, opts: ViewOptions = OPTIONS[0]) -> None:
    page = source_to_page_data(source, opts)
    assert page is not None, "the graph was declined"
    assert page == view_to_page_data(build_view(source, opts))


@pytest.mark.parametrize("name", ["resnet", "transformer", "jax_mlp"])
def test_captured_models(name: str) -> None:
    if gm.missing(name):
        pytest.skip(str(gm.missing(name)))
    g = gm.model_graph(name)
    _same(g)
    _same(g.to_bytes())  # the GraphDef the CLI reads


@pytest.mark.parametrize("opts", [
    ViewOptions(), ViewOptions(series=False, hidden_ops=("Identity",)),
    ViewOptions(group_series=False, auto_extract=False, series_min_size=2)],
    ids=["default", "no-series-hidden", "no-group-series-no-extract-min2"])
def test_synthetic_10k_with_the_options_it_accepts(opts: ViewOptions) -> None:
    _same(gm.synthetic_10k(), opts)


def test_synthetic_10k_graph_def_and_html() -> None:
    g = gm.synthetic_10k()
    _same(g.to_graph_def())
    assert source_to_html(g.to_bytes(), title="t") == view_to_html(build_view(g), title="t")


_F = TensorSpec((2, 3), "float32")
_SHAPES = [[_F], [TensorSpec(None)], [TensorSpec((4, None), "int32"), _F], [],
           [TensorSpec((0,))]]
# Values equal across types (1, True, 1.0) or with different text (0.0, -0.0), and
# values made afresh per node (DType, TensorSpec): records are shared only where the
# text is the same.
_ATTRS = [{}, {"T": "float32"}, {"k": 3, "T": "int32"}, {"k": 1}, {"k": True}, {"k": 1.0},
          {"f": 0.0}, {"f": -0.0}, {"T": DType("float32")}, {"T": DType("int32")},
          {"s": TensorSpec((2, None))}, {"s": TensorSpec((2, None))}, {"l": [1, 2]}]
_OPS = ["Add", "Relu", "Const", "NoOp", "ScalarSummary", "MatMul", "Assign", "Identity"]
_LEAVES = ["add", "add_1", "add_2", "add_3", "add_4", "add_5", "x1", "x2", "x3", "x4",
           "x5", "x", "w", "(w)", "init", "save"]


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    """Numbered blocks with the same inside (group series, templates), numbered ops
    (op series), ops that are also scopes (renames), constants, summaries, NoOps, Assign
    (reference edges), control inputs, output slots, devices and odd shapes."""
    g = Graph()
    names: list[str] = []

    def add(name: str, op: str) -> None:
        if name in g:
            return
        inputs: list[str] = []
        control: list[str] = []
        for _ in range(draw(st.integers(0, 3)) if names else 0):
            src = draw(st.sampled_from(names))
            # "^:1": a control input with a slot; "^x" among the data inputs is a control
            # input too; "twice": the same node read again (collapsed to one input).
            how = draw(st.sampled_from(["", "^", ":1", ":0", "^:1", "^x", "twice"]))
            if how in ("^", "^:1"):
                control.append(src + how[1:])
            elif how == "^x":
                inputs.append("^" + src)
            else:
                inputs.extend([src, src + ":1"] if how == "twice" else [src + how])
        g.add(Node(name, op, inputs, control, outputs=list(draw(st.sampled_from(_SHAPES))),
                   device=draw(st.sampled_from(["", "/cpu:0", "/gpu:0"])),
                   attrs=dict(draw(st.sampled_from(_ATTRS)))))
        names.append(name)

    blocks = draw(st.integers(0, 7))
    inner = draw(st.lists(st.sampled_from(_OPS[:2] + _OPS[5:]), min_size=1, max_size=3))
    top = draw(st.sampled_from(["", "m/"]))
    for b in range(blocks):
        for k, op in enumerate(inner):
            add(f"{top}layer_{b}/op{chr(97 + k)}", op)
    for _ in range(draw(st.integers(1, 30))):
        depth = draw(st.integers(1, 3))
        scope = draw(st.lists(st.sampled_from(["a", "b", "layer_1", "m", "w"]),
                              min_size=depth - 1, max_size=depth - 1))
        add("/".join([*scope, draw(st.sampled_from(_LEAVES))]), draw(st.sampled_from(_OPS)))
    return g


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.sampled_from(OPTIONS), st.booleans())
def test_random_graphs_give_the_views_page_or_are_declined(g: Graph, opts: ViewOptions,
                                                            wire: bool) -> None:
    # wire: the serialized GraphDef (read from its wire format), else the IR graph.
    source: object = g.to_bytes() if wire else g
    page = source_to_page_data(source, opts)
    if page is not None:
        assert page == view_to_page_data(build_view(source, opts))
    assert source_to_html(source, opts) == view_to_html(build_view(source, opts))


_RUN = st.tuples(st.sampled_from(["a", "a1b", "x_", "", "k*", "\u0661"]), st.integers(0, 7),
                 st.integers(1, 6), st.sampled_from(["", "0", "\n", "*", "\u0662"]),
                 st.booleans())


@settings(max_examples=80, deadline=None)
@given(st.lists(_RUN, min_size=1, max_size=6), st.integers(2, 5))
@example([("k*", 1, 3, "", True)], 2)  # k* is (k, 0, *): not in the run k*[1-3]
@example([("a1b", 0, 5, "", False), ("a", 2, 4, "\n", True)], 2)
def test_numbered_leaves_make_the_views_series(runs: list[tuple[str, int, int, str, bool]],
                                               min_size: int) -> None:
    # Runs of numbered leaves: digits inside the stem, leading zeros ("0"), "*", a final
    # newline (which the series rule's "$" lets through), non-ASCII digits, digits only,
    # and the stem alone next to its run (bare).
    names: dict[str, None] = {}
    for stem, start, size, tail, bare in runs:
        if bare and stem:
            names[f"s/{stem}"] = None
        for i in range(start, start + size):
            names[f"s/{stem}0{i}" if tail == "0" else f"s/{stem}{i}{tail}"] = None
    _same(Graph([Node(name, "Add") for name in names]), ViewOptions(series_min_size=min_size))


def test_what_is_declined_still_gets_the_views_page() -> None:
    g = gm.model_graph("synthetic_10k")
    opts = ViewOptions(template_order="tensorboard")
    assert source_to_page_data(g, opts) is None
    assert source_to_html(g, opts) == view_to_html(build_view(g, opts))
    # An op named like a JavaScript array index reorders the root: declined.
    odd = Graph([Node("0", "Relu"), Node("a", "Relu", ["0"])])
    assert source_to_page_data(odd) is None
    assert source_to_html(odd) == view_to_html(build_view(odd))


def test_nodes_the_column_reader_cannot_take_are_read_one_by_one() -> None:
    # Attributes in a read-only mapping and inputs in tuples are not what the column
    # reader takes: the graph is read node by node, and the page is still the view's.
    g = Graph([Node("a/x1", "Relu", attrs={"T": DType("float32")}),
               Node("a/x2", "Relu", ["a/x1"], attrs={"T": DType("float32")}),
               Node("b/y", "Add", ["a/x1:0", "a/x2"], ["a/x1"])])
    g.nodes[2].attrs = MappingProxyType({"k": 1})  # type: ignore[assignment]
    g.nodes[1].inputs = ("a/x1", "a/x1:1")  # type: ignore[assignment]
    _same(g)
    # A node whose name is not a string: build_view's error.
    bad = Graph([Node("a", "Relu"), Node("b", "Relu", ["a"])])
    bad.nodes[1].name = 7  # type: ignore[assignment]
    with pytest.raises(ValueError, match="node #1 of the Graph has a non-string name"):
        source_to_page_data(bad)
    bad.nodes[1].name = "b"
    bad.nodes[1].inputs = ["a", 3]  # type: ignore[list-item]
    with pytest.raises(ValueError, match="inputs must be strings"):
        source_to_page_data(bad)


def test_bad_sources_and_options_are_named() -> None:
    with pytest.raises(ValueError, match="not a serialized GraphDef"):
        source_to_page_data(b"\xff\xff\xff")
    with pytest.raises(ValueError, match="level"):
        source_to_page_data(Graph([Node("a", "Relu")]), level=0)
    with pytest.raises(TypeError, match="options"):
        source_to_page_data(Graph([Node("a", "Relu")]), options=3)  # type: ignore[arg-type]


def test_cli_writes_the_views_page(tmp_path: Path) -> None:
    g = gm.synthetic_10k()
    pb = tmp_path / "g.pb"
    pb.write_bytes(g.to_bytes())
    out = tmp_path / "g.html"
    done = subprocess.run([sys.executable, "-m", "summarylib", "graph", str(pb), "-o", str(out),
                           "--title", "T"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "ops) from" in done.stdout
    assert out.read_text(encoding="utf-8") == view_to_html(build_view(g.to_bytes()), title="T")


@pytest.mark.skipif(not SLOW, reason="building the 1M-node view takes minutes on two cores; "
                                     "set SUMMARYLIB_SLOW=1")
@pytest.mark.timeout(3600)
def test_1m_page_is_the_views() -> None:
    g = gm.synthetic_graph(gm._layers_for(1_000_000, 4), 4)
    _same(g)


# Names that repeat, scopes that are names, the empty name, a leading "/", JavaScript
# array indices at the root and below, and a renamed op's shown name.
_DUP_NAMES = ["c", "c", "a", "a/b", "a/c", "s", "0", "7\n", "", "/x", "/x/y", "a/(a)", "b/1", "b"]
_DUP_OPS = ["Const", "Const", "ScalarSummary", "Relu", "Identity", "NoOp"]


@st.composite
def graph_defs(draw: st.DrawFn) -> bytes:
    """A GraphDef (not an IR graph: only these can repeat a name) whose embedded nodes,
    hidden ops and ops may share names, with inputs naming any of them or nothing."""
    from summarylib.proto import graph_pb2

    gd = graph_pb2.GraphDef()
    for _ in range(draw(st.integers(1, 12))):
        node = gd.node.add()
        node.name = draw(st.sampled_from(_DUP_NAMES))
        node.op = draw(st.sampled_from(_DUP_OPS))
        node.device = draw(st.sampled_from(["", "/cpu:0", "/gpu:0"]))
        for _ in range(draw(st.integers(0, 3))):
            node.input.append(draw(st.sampled_from(["^", ""])) + draw(st.sampled_from(
                [*_DUP_NAMES, "nowhere", "c/(c)", "a:1"])))
    return gd.SerializeToString()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_defs(), st.sampled_from([OPTIONS[0], OPTIONS[5]]))
@example(b"", OPTIONS[0])
def test_graph_defs_with_repeated_names_give_the_views_page_or_are_declined(
        source: bytes, opts: ViewOptions) -> None:
    page = source_to_page_data(source, opts)
    if page is not None:
        assert page == view_to_page_data(build_view(source, opts))


def test_embedded_nodes_sharing_a_name_are_not_declined() -> None:
    from summarylib.proto import graph_pb2

    gd = graph_pb2.GraphDef()
    # Constants named alike (the last one is embedded where "c" is read), a constant
    # and a summary named alike (the constant wins), a hidden op named like an op.
    for name, op, inputs in [("c", "Const", []), ("c", "Const", ["x"]), ("x", "Relu", []),
                             ("y", "Relu", ["c", "k"]), ("k", "Const", []),
                             ("k", "ScalarSummary", ["y"]), ("y", "Identity", ["x"]),
                             ("z", "Relu", ["y", "k", "c"])]:
        node = gd.node.add()
        node.name, node.op = name, op
        node.input.extend(inputs)
    source = gd.SerializeToString()
    opts = ViewOptions(hidden_ops=("Identity",))
    page = source_to_page_data(source, opts)
    assert page is not None
    assert page == view_to_page_data(build_view(source, opts))


def test_inputs_that_are_the_names_own_strings_or_equal_copies_give_one_page() -> None:
    # The names are found by their sorted hashes, and inputs that are the nodes' own name
    # strings (as a graph built in Python has them) by identity when most are: a copy
    # whose inputs are equal strings but other objects takes the other way, and both
    # give the view's page.
    g = gm.synthetic_graph(3, 4)

    def fresh(s: str) -> str:
        return "".join(list(s))  # equal, another object (one character: the same)

    copy = Graph([Node(n.name, n.op, [fresh(i) for i in n.inputs],
                       [fresh(c) for c in n.control_inputs], n.attrs, n.outputs, n.device)
                  for n in g.nodes])
    assert sum(i is not j for a, b in zip(g.nodes, copy.nodes, strict=True)
               for i, j in zip(a.inputs, b.inputs, strict=True)) > 100
    page = source_to_page_data(g)
    assert page is not None
    assert page == source_to_page_data(copy) == view_to_page_data(build_view(g))
