"""Captured graphs (torch.export, torch.fx and JAX) through the real TensorBoard's graphs plugin.

The test models of test_graph_torch.py and test_graph_jax.py are traced in a
``trace_on``/``trace_export`` window, one tag each, plus a conceptual graph of the
ResNet's module tree; two of them (the transformer through torch.fx, the JAX MLP) also
with ``trace_on(profiler=True)``, and one captured graph with a control input added
(a ``NoOp`` the output waits for). TensorBoard (both loaders) must list every tag with
the right flags, serve each graph with the captured node names, ops, inputs (the control
input included, as ``^init``), devices and shapes, and serve each profile
(``/run_metadata``) with the recorded node names, times and output bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from tensorboard.compat.proto import config_pb2  # noqa: E402
from tensorboard.plugins.graph import keras_util  # noqa: E402

import summarylib as sl  # noqa: E402
import summarylib.graph as sg  # noqa: E402
import summarylib.graph.tracing as trace_mod  # noqa: E402
from summarylib.graph import GraphBuilder  # noqa: E402
from summarylib.graph.capturing import capture, module_tree, trace, untrace  # noqa: E402
from summarylib.proto import step_stats_pb2  # noqa: E402
from tests import test_graph_jax as jax_models  # noqa: E402
from tests import torch_models  # noqa: E402
from tests.tbserver import TensorBoardServer  # noqa: E402
from tests.test_graph_server import assert_same_graph, parse_graph  # noqa: E402


def _with_control_input(g: sg.Graph) -> sg.Graph:
    """``g`` plus a NoOp ``init`` that a new output node waits for (a control edge)."""
    b = GraphBuilder(g, device="/device:CPU:0")
    init = b.no_op("init")
    src = g["output/logits"]
    b.op("Identity", [src], name="logits_after_init", outputs=src.outputs,
         control_inputs=[init])
    return g


def _captured_run(logdir: Path) -> tuple[dict[str, sg.Graph], dict[str, Any]]:
    """Trace each model once; return the graph each tag must show, and the profile (a
    StepStats) each profiled tag must serve."""
    torch.manual_seed(0)
    resnet, image = torch_models.ResNet(), torch.randn(2, 3, 8, 8)
    block, tokens = torch_models.TransformerBlock().eval(), torch.randn(2, 5, 16)
    dict_model = torch_models.DictModel()
    batch = {"a": torch.randn(2, 4), "b": torch.randn(2, 6)}
    params, x = jax_models.make_params(), jnp.ones((2, 3))
    expected = {
        "resnet": capture(resnet, (image,)),
        "transformer": capture(block, (tokens,)),
        "dict_outputs": capture(dict_model, (batch, 3), {"mode": "eval", "extra": None}),
        "jax_mlp": capture(jax_models.mlp, (params, x), params_argnums=0),
    }
    calls: dict[str, Any] = {
        "resnet": lambda m: m(image),
        "transformer": lambda m: m(tokens),
        "dict_outputs": lambda m: m(batch, 3, mode="eval", extra=None),
    }
    with sl.create_file_writer(logdir).as_default(step=1):
        models = {"resnet": resnet, "transformer": block, "dict_outputs": dict_model}
        for tag, model in models.items():
            traced = trace(model)
            try:
                sg.trace_on()
                with torch.no_grad():
                    calls[tag](traced)
                assert sg.trace_export(tag)
            finally:
                untrace(model)
        sg.trace_on()
        sg.trace(jax_models.mlp, framework="jax", params_argnums=0)(params, x)
        assert sg.trace_export("jax_mlp")
        assert sg.write_conceptual_graph(module_tree(resnet), name="resnet_modules")
        # A captured graph with a control input, recorded as an adapter would.
        sg.trace_on()
        with_control = _with_control_input(capture(dict_model, (batch, 3), {"mode": "eval"}))
        assert sg.record_graph(with_control)
        assert sg.trace_export("control_input")
        expected["control_input"] = with_control
        # Profiled captures: the tag holds graph and StepStats (plugin graph_run_metadata).
        profiles: dict[str, Any] = {}
        for tag, call in {
            "transformer_fx_profiled": lambda: trace(block, method="fx")(tokens),
            "jax_mlp_profiled": lambda: sg.trace(jax_models.mlp, framework="jax",
                                                 params_argnums=0)(params, x),
        }.items():
            sg.trace_on(profiler=True)
            try:
                with torch.no_grad():
                    call()
                (graph_bytes, stats_bytes), = trace_mod._records_for_tests()
                assert sg.trace_export(tag)
            finally:
                untrace(block)
            expected[tag] = sg.Graph.from_graph_def(graph_bytes)
            profiles[tag] = step_stats_pb2.StepStats.FromString(stats_bytes)
            assert len(profiles[tag].dev_stats[0].node_stats) > 5
    return expected, profiles


def _resnet_tree() -> Any:
    torch.manual_seed(0)
    return module_tree(torch_models.ResNet())


@pytest.mark.parametrize("load_fast", [True, False], ids=["rust", "python"])
def test_tensorboard_serves_captured_graphs(tmp_path: Path, load_fast: bool) -> None:
    expected, profiles = _captured_run(tmp_path / "run")
    for g in expected.values():
        assert [i for i in sg.check(g) if i.severity == "error"] == []
    with TensorBoardServer(tmp_path, load_fast=load_fast) as tb:
        info = tb.poll(
            lambda: tb.get_json("/data/plugin/graphs/info"),
            lambda r: "run" in r and len(r["run"]["tags"]) == len(expected) + 1,
        )["run"]
        assert {t for t, v in info["tags"].items() if v["op_graph"]} == set(expected)
        assert {t for t, v in info["tags"].items() if v["profile"]} == set(profiles)
        assert info["tags"]["resnet_modules"]["conceptual_graph"] is True
        for tag, g in expected.items():
            served = parse_graph(tb.get("/data/plugin/graphs/graph", run="run", tag=tag))
            assert_same_graph(served, g)
            # Every input names a node TensorBoard was given: no edge is dropped.
            names = {n.name for n in served.node}
            for nd in served.node:
                for inp in nd.input:
                    assert inp.lstrip("^").split(":")[0] in names, (tag, nd.name, inp)
            if tag == "control_input":
                after = next(n for n in served.node if n.name == "logits_after_init")
                assert list(after.input) == ["output/logits", "^init"]
                assert next(n for n in served.node if n.name == "init").op == "NoOp"
        for tag, stats in profiles.items():
            rm = text_format.Parse(
                tb.get("/data/plugin/graphs/run_metadata", run="run", tag=tag).decode(),
                config_pb2.RunMetadata(),
            )
            served_stats = [
                (ns.node_name, ns.all_start_micros, ns.all_end_rel_micros,
                 ns.memory[0].total_bytes)
                for d in rm.step_stats.dev_stats for ns in d.node_stats
            ]
            assert served_stats == [
                (ns.node_name, ns.all_start_micros, ns.all_end_rel_micros,
                 ns.memory[0].total_bytes)
                for d in stats.dev_stats for ns in d.node_stats
            ]
            # Every profiled node is a node of the graph served under the same tag.
            graph_names = {n.name for n in expected[tag]}
            assert {name for name, *_ in served_stats} <= graph_names
            assert rm.step_stats.dev_stats[0].device == "/device:CPU:0"
        tree = _resnet_tree()
        conceptual = parse_graph(
            tb.get("/data/plugin/graphs/graph", run="run", tag="resnet_modules",
                   conceptual="true")
        )
        # TensorBoard's own Keras converter turned our module tree into this graph: the same
        # nodes as converting it locally with that code.
        local = keras_util.keras_model_to_graph_def(json.loads(sg.keras_json(tree)))
        assert [n.name for n in conceptual.node] == [n.name for n in local.node]
        assert "ResNet/layer1/0/conv1" in {n.name for n in conceptual.node}
