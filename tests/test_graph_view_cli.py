"""``python -m summarylib graph ...`` end to end, and the graph sources it reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from summarylib.encoding._wire import field_bytes, field_varint
from summarylib.graph import (
    Graph,
    NodeStats,
    record_graph,
    trace_export,
    trace_on,
    write_graph,
    write_run_metadata,
)
from summarylib.graph.view.sources import (
    GraphSourceError,
    list_graphs,
    load_graph,
    load_graph_source,
)
from summarylib.graph.writers import run_metadata_bytes
from tests.test_graph_view_diff import mlp

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "summarylib", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=240, check=False)


def ops_of(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack = [data["root"]]
    while stack:
        node = stack.pop()
        if node["kind"] == "op":
            yield node
        else:
            stack.extend(node["children"])


def groups_of(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack = [data["root"]]
    while stack:
        node = stack.pop()
        if node["kind"] != "op":
            yield node
            stack.extend(node["children"])


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """runs 'small' (mlp 4-8-2) and 'big' (one layer more), plus scalars in 'small'."""
    with sl.create_file_writer(tmp_path / "logs" / "small"):
        write_graph(mlp([4, 8, 2]))
        sl.scalar("loss", 0.5, step=1)
    with sl.create_file_writer(tmp_path / "logs" / "big"):
        write_graph(mlp([4, 8, 2, 2]))
    return tmp_path / "logs"


# --- viewing ---------------------------------------------------------------------------------


def test_html_json_dot_svg(two_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.html"
    r = run("graph", str(two_runs), "--run", "small", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "16 ops" in r.stdout
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html") and "dense" in page
    # Default html output: graph.html in the working directory.
    r = run("graph", str(two_runs), "--run", "small", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "graph.html").read_text() == page

    r = run("graph", str(two_runs), "--run", "big", "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["format"] == "summarylib.graph.view" and data["stats"]["ops"] == 23
    assert {g["name"] for g in groups_of(data)} >= {"", "dense", "dense_1", "dense_2"}

    r = run("graph", str(two_runs), "--run", "big", "--format", "dot", "--depth", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("digraph G {")
    from tests.test_graph_view_dot import DOT, graphviz_json

    if DOT is not None:
        nodes = {o["name"] for o in graphviz_json(r.stdout)["objects"] if "nodes" not in o}
        assert {"x", "output", "dense/MatMul", "dense_2/Relu"} <= nodes

    svg = tmp_path / "pic.svg"  # the format follows the suffix
    r = run("graph", str(two_runs), "--run", "small", "-o", str(svg))
    assert r.returncode == 0, r.stderr
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_graphdef_files(tmp_path: Path) -> None:
    from google.protobuf import text_format

    g = mlp([4, 8, 2])
    pb = tmp_path / "model.pb"
    pb.write_bytes(g.to_bytes())
    txt = tmp_path / "model.pbtxt"
    txt.write_text(text_format.MessageToString(g.to_graph_def()))
    for path in (pb, txt):
        r = run("graph", str(path), "--format", "json")
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)
        assert data["stats"]["ops"] == 16
    assert _graph_def(load_graph_source(txt)) == _graph_def(load_graph_source(pb))


def test_view_options(tmp_path: Path) -> None:
    pb = tmp_path / "m.pb"
    pb.write_bytes(mlp([4, 8, 2]).to_bytes())
    r = run("graph", str(pb), "--format", "json", "--hide-op", "Relu", "--hide-op", "Bias.*",
            "--side-panel", "output", "--rankdir", "LR", "--no-series")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert not {op["op"] for op in ops_of(data)} & {"Relu", "BiasAdd"}
    assert data["options"]["rankdir"] == "LR" and data["options"]["series"] is False
    assert "output" in data["root"]["side_panel"]["in"] + data["root"]["side_panel"]["out"]
    r = run("graph", str(pb), "--format", "json", "--tensorboard", "--no-extract")
    data = json.loads(r.stdout)
    assert data["options"]["group_series"] is False
    assert data["options"]["template_order"] == "tensorboard"
    assert data["options"]["auto_extract"] is False


def test_tagged_graph_with_profile(tmp_path: Path) -> None:
    g = mlp([4, 8, 2])
    with sl.create_file_writer(tmp_path / "run"):
        trace_on(profiler=True)
        record_graph(g, [NodeStats("dense/MatMul", 1_000, 30), NodeStats("x", 1_000, 2),
                         NodeStats("dense/MatMul", 1_020, 30)])
        trace_export("model", step=3)
    loaded = load_graph(tmp_path)
    assert loaded.tag == "model" and loaded.run == "run"
    assert loaded.compute_times == {"dense/MatMul": 50.0, "x": 2.0}
    r = run("graph", str(tmp_path), "--format", "json")
    assert r.returncode == 0, r.stderr
    times = {op["name"]: op["compute_time_us"] for op in ops_of(json.loads(r.stdout))}
    assert times["dense/MatMul"] == 50.0 and times["x"] == 2.0
    assert times["output"] is None


def test_session_run_profile_of_the_run_graph(tmp_path: Path) -> None:
    g = mlp([4, 8, 2])
    with sl.create_file_writer(tmp_path):
        write_graph(g)
        # 'dense/kernel' is shown as 'dense/kernel/(kernel)': joined as TensorBoard does.
        write_run_metadata("step_5", [NodeStats("dense/kernel", 10, 7)], step=5, graph=g)
    assert load_graph(tmp_path).compute_times == {}  # no profile unless asked for
    loaded = load_graph(tmp_path, tag="step_5")
    assert loaded.compute_times == {"dense/kernel": 7.0} and loaded.tag == "step_5"
    r = run("graph", str(tmp_path), "--tag", "step_5", "--format", "json")
    assert r.returncode == 0, r.stderr
    times = {op["name"]: op["compute_time_us"] for op in ops_of(json.loads(r.stdout))}
    assert times["dense/kernel/(kernel)"] == 7.0
    assert load_graph(tmp_path, tag="Default").compute_times == {}


def test_list(two_runs: Path) -> None:
    r = run("graph", "--list", str(two_runs))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "--run 'big' --tag Default (the run-level graph, step 0)",
        "--run 'small' --tag Default (the run-level graph, step 0)",
    ]
    assert [ref.run for ref in list_graphs(two_runs)] == ["big", "small"]


# --- errors ----------------------------------------------------------------------------------


def test_ambiguous_lists_the_graphs(two_runs: Path) -> None:
    r = run("graph", str(two_runs))
    assert r.returncode == 2 and r.stdout == ""
    assert "2 graphs found; choose one with --run/--tag" in r.stderr
    assert "--run 'big' --tag Default" in r.stderr and "--run 'small'" in r.stderr
    with pytest.raises(GraphSourceError) as e:
        load_graph(two_runs)
    assert e.value.reason == "ambiguous" and len(e.value.candidates) == 2


def test_no_graph_lists_runs_and_tags(tmp_path: Path) -> None:
    with sl.create_file_writer(tmp_path / "train"):
        sl.scalar("loss", 1.0, step=0)
        sl.text("notes", "hi", step=0)
    r = run("graph", str(tmp_path))
    assert r.returncode == 2
    assert "no graph in this logdir" in r.stderr
    assert "run 'train': no graph; other tags: 'loss' (scalars), 'notes' (text)" in r.stderr
    r = run("graph", str(tmp_path), "--run", "eval")
    assert r.returncode == 2 and "no run 'eval'; runs: 'train'" in r.stderr
    r = run("graph", str(tmp_path), "--tag", "model")
    assert r.returncode == 2 and "no graph with tag 'model'" in r.stderr


def test_missing_malformed_and_corrupt_inputs(tmp_path: Path) -> None:
    r = run("graph", str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such file or directory" in r.stderr
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\xff\xff\xff garbage")
    r = run("graph", str(bad))
    assert r.returncode == 2 and "bad.pb: not a binary GraphDef" in r.stderr
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"")
    r = run("graph", str(empty))
    assert r.returncode == 2 and "not a GraphDef with nodes" in r.stderr
    txt = tmp_path / "bad.pbtxt"
    txt.write_text('node { name: "a" op: "Relu" \n oops }')
    r = run("graph", str(txt))
    assert r.returncode == 2 and "bad.pbtxt: not a text GraphDef: 2:" in r.stderr
    # A corrupt event file: the error names the file.
    with sl.create_file_writer(tmp_path / "logs"):
        write_graph(mlp([4, 2]))
    (event,) = (tmp_path / "logs").iterdir()
    data = bytearray(event.read_bytes())
    data[-20] ^= 0xFF
    event.write_bytes(bytes(data))
    r = run("graph", str(tmp_path / "logs"))
    assert r.returncode == 2 and f"cannot read {event}" in r.stderr
    r = run("graph", str(event))  # the event file itself
    assert r.returncode == 2 and "corrupted record" in r.stderr
    r = run("graph", str(tmp_path / "logs"), "--depth", "0")
    assert r.returncode == 2 and "--depth must be >= 1" in r.stderr


def test_a_graph_file_is_told_by_its_first_and_last_nodes_names(tmp_path: Path) -> None:
    # Loading sniffs the file's type by the names of its first and last nodes; a
    # GraphDef with a nameless node between them is a GraphDef, and the view takes it.
    from summarylib.graph.view.html_export import source_page_data
    from summarylib.proto import graph_pb2

    def graph_file(names: list[str], file: str) -> Path:
        gd = graph_pb2.GraphDef()
        for name in names:
            gd.node.add(name=name, op="Relu")
        path = tmp_path / file
        path.write_bytes(gd.SerializeToString())
        return path

    middle = graph_file(["a", "", "c"], "middle.pb")
    loaded = load_graph(middle)
    assert loaded.graph_def == middle.read_bytes()
    assert source_page_data(loaded.graph_def)["stats"]["ops"] == 3
    for names in (["", "b", "c"], ["a", "b", ""], [""]):
        with pytest.raises(GraphSourceError, match="a node has no name"):
            load_graph(graph_file(names, "bad.pb"))


def test_unwritable_output(tmp_path: Path) -> None:
    pb = tmp_path / "m.pb"
    pb.write_bytes(mlp([4, 2]).to_bytes())
    r = run("graph", str(pb), "-o", str(tmp_path / "no" / "such" / "dir.html"))
    assert r.returncode == 2 and "cannot write" in r.stderr


# --- diff ------------------------------------------------------------------------------------


def test_diff_end_to_end(two_runs: Path, tmp_path: Path) -> None:
    pb = tmp_path / "small.pb"
    pb.write_bytes(mlp([4, 8, 2]).to_bytes())
    # Same graph: exit 0.
    r = run("graph", "diff", str(pb), str(two_runs), "--run-b", "small")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "graph diff: no differences"
    # A layer more: exit 1 and the change named.
    r = run("graph", "diff", str(pb), str(two_runs), "--run-b", "big")
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith(f"--- {pb}: GraphDef\n+++ {two_runs}: run 'big'")
    assert "+ dense_2/  (added scope, 7 ops" in r.stdout
    assert "- edge dense_1/Relu -> output" in r.stdout
    # The graph-diff spelling, json and html.
    r = run("graph-diff", str(pb), str(two_runs), "--run-b", "big", "--format", "json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["stats"]["scopes_added"] == 1 and data["a"].endswith("GraphDef")
    r = run("graph", "diff", str(pb), str(two_runs), "--run-b", "big", "--format", "html",
            cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "wrote graph-diff.html (html): the graphs differ" in r.stdout
    page = (tmp_path / "graph-diff.html").read_text()
    assert "dense_2" in page and 'class="add"' in page
    # --run applies to both sides; an error on either side exits 2.
    r = run("graph", "diff", str(two_runs), str(two_runs), "--run", "small")
    assert r.returncode == 0, r.stderr
    r = run("graph", "diff", str(two_runs), str(pb))
    assert r.returncode == 2 and "2 graphs found" in r.stderr


def test_a_path_named_diff(tmp_path: Path) -> None:
    (tmp_path / "diff").mkdir()
    with sl.create_file_writer(tmp_path / "diff"):
        write_graph(mlp([4, 2]))
    r = run("graph", "./diff", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["stats"]["ops"] == 9
    r = run("graph", "diff", cwd=tmp_path)  # 'graph diff' always means the comparison
    assert r.returncode == 2 and "the following arguments are required: A, B" in r.stderr


# --- sources in process --------------------------------------------------------------------


def test_several_function_graphs_are_merged(tmp_path: Path) -> None:
    # TensorBoard merges the function graphs of one RunMetadata under graph_<i>/ scopes.
    g1, g2 = mlp([4, 2]), mlp([2, 2])
    rm = run_metadata_bytes(g1.to_bytes()) + run_metadata_bytes(g2.to_bytes())
    from summarylib.graph.writers import PLUGIN_GRAPH, graph_metadata_bytes

    with sl.create_file_writer(tmp_path):
        # A rank-0 string tensor holding the RunMetadata, as trace_export writes it.
        assert sl.write("merged", np.array(rm, dtype=object), 0,
                        metadata=graph_metadata_bytes(PLUGIN_GRAPH))
    gd = Graph.from_graph_def(_graph_def(load_graph_source(tmp_path)))
    names = [n.name for n in gd]
    assert len(names) == len(g1) + len(g2)
    assert names[0] == "graph_1/x" and "graph_2/dense/MatMul" in names
    assert gd["graph_2/dense/MatMul"].inputs == ["graph_2/x", "graph_2/dense/kernel/read"]


def _graph_def(data: bytes) -> Any:
    from summarylib.proto import graph_pb2

    return graph_pb2.GraphDef.FromString(data)


def test_meta_graph_and_saved_model(tmp_path: Path) -> None:
    gd = mlp([4, 2]).to_bytes()
    meta_info = field_bytes(1, b"v1") + field_bytes(4, b"serve")
    meta = field_bytes(1, meta_info) + field_bytes(2, gd)
    (tmp_path / "model.meta").write_bytes(meta)
    assert load_graph_source(tmp_path / "model.meta") == gd
    saved = field_varint(1, 1) + field_bytes(2, meta)
    (tmp_path / "saved_model.pb").write_bytes(saved)
    loaded = load_graph(tmp_path / "saved_model.pb")
    assert loaded.graph_def == gd and loaded.tag == "serve"
    meta2 = field_bytes(1, field_bytes(4, b"train")) + field_bytes(2, mlp([4, 8, 2]).to_bytes())
    (tmp_path / "saved_model.pb").write_bytes(saved + field_bytes(2, meta2))
    with pytest.raises(GraphSourceError, match=r"2 meta graphs .* 'serve', 'train'") as e:
        load_graph(tmp_path / "saved_model.pb")
    assert e.value.reason == "ambiguous"
    assert load_graph(tmp_path / "saved_model.pb", tag="train").graph_def == \
        mlp([4, 8, 2]).to_bytes()
    # The SavedModel's directory (no event files in it) works too.
    assert load_graph(tmp_path, tag="serve").graph_def == gd


def test_event_file_named_without_tfevents(tmp_path: Path) -> None:
    # An event file is recognised by its records, whatever its name.
    with sl.create_file_writer(tmp_path / "logs"):
        write_graph(mlp([4, 2]))
    (event,) = (tmp_path / "logs").iterdir()
    renamed = tmp_path / "events.bin"
    renamed.write_bytes(event.read_bytes())
    assert load_graph_source(renamed) == mlp([4, 2]).to_bytes()
    assert load_graph(event).description.endswith("run '.', run-level graph")


def test_last_graph_of_a_run_wins(tmp_path: Path) -> None:
    with sl.create_file_writer(tmp_path):
        write_graph(mlp([4, 2]))
        write_graph(mlp([4, 8, 2]), step=1)
    assert load_graph_source(tmp_path) == mlp([4, 8, 2]).to_bytes()


def test_remote_logdir(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    url = "memory://graph-view-cli/logs"
    with sl.create_file_writer(url):
        write_graph(mlp([4, 2]))
    try:
        assert load_graph_source(url) == mlp([4, 2]).to_bytes()
    finally:
        import fsspec

        fsspec.filesystem("memory").rm("/graph-view-cli", recursive=True)
