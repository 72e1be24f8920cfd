"""The real TensorBoard serves our graphs through its graphs plugin, intact.

A builder-made ResNet-like graph (scopes, constants, a NoOp with control edges, a
two-output op) is written as the run graph, as traced graphs (graph only and with a
profile), as a tagged profile and as a conceptual graph; the served text protos are parsed
and compared node by node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import config_pb2, graph_pb2

import summarylib as sl
import summarylib.graph as sg
from summarylib.graph import GraphBuilder, Module, NodeStats, TensorSpec
from tests.tbserver import TensorBoardServer

T0 = 1_700_000_000_000_000


def resnet_like(blocks: int = 3) -> sg.Graph:
    b = GraphBuilder(device="/device:CPU:0")
    f32 = "float32"
    x = b.placeholder((None, 3, 32, 32), f32, name="input")
    with b.name_scope("stem"):
        w = b.const(TensorSpec((16, 3, 3, 3), f32), name="weight")
        h = b.op(
            "aten::conv2d",
            [x, w],
            outputs=TensorSpec((None, 16, 32, 32), f32),
            attrs={"stride": [1, 1], "padding": [1, 1]},
        )
    init = b.no_op("init")
    for i in range(blocks):
        with b.name_scope(f"layer{i}"):
            skip = h
            for j in (1, 2):
                w = b.const(TensorSpec((16, 16, 3, 3), f32), name=f"conv{j}/weight")
                h = b.op(
                    "aten::conv2d",
                    [h, w],
                    name=f"conv{j}/conv2d",
                    outputs=TensorSpec((None, 16, 32, 32), f32),
                )
                h = b.op(
                    "aten::batch_norm",
                    [h],
                    name=f"bn{j}/batch_norm",
                    outputs=TensorSpec((None, 16, 32, 32), f32),
                )
            with b.control_dependencies([init]):
                h = b.op("aten::add", [h, skip], outputs=TensorSpec((None, 16, 32, 32), f32))
            h = b.op("aten::relu", [h], outputs=TensorSpec((None, 16, 32, 32), f32))
    with b.name_scope("head"):
        parts = b.op("aten::split", [h], outputs=[TensorSpec((None, 8, 32, 32), f32)] * 2)
        m = b.op("aten::mean", [parts.output(1)], outputs=TensorSpec((None, 8), f32))
        k = b.const(np.arange(4, dtype=np.int64), name="perm")
        b.op("aten::linear", [m, k], outputs=TensorSpec((None, 10), f32))
    return b.graph


def parse_graph(text: bytes) -> Any:
    return text_format.Parse(text.decode("utf-8"), graph_pb2.GraphDef())


def assert_same_graph(served: Any, g: sg.Graph) -> None:
    assert [n.name for n in served.node] == [n.name for n in g]
    for nd, node in zip(served.node, g, strict=True):
        assert nd.op == node.op and nd.device == node.device
        assert list(nd.input) == node.inputs + ["^" + c for c in node.control_inputs]
        shapes = [tuple(d.size for d in s.dim) for s in nd.attr["_output_shapes"].list.shape]
        assert shapes == [
            tuple(-1 if d is None else d for d in o.shape or ()) for o in node.outputs
        ]


@pytest.mark.parametrize("load_fast", [True, False], ids=["rust", "python"])
def test_tensorboard_serves_our_graphs(tmp_path: Path, load_fast: bool) -> None:
    g = resnet_like()
    # The blocks hold groups (conv1/, bn1/, ...): check() predicts one colour each.
    found = [i for i in sg.check(g) if i.severity != "info"]
    assert [i.code for i in found] == ["nested-template"]
    stats = [
        NodeStats(n.name, T0 + 10 * i, 7 + i, output_bytes=4096)
        for i, n in enumerate(g)
        if n.op not in ("Const", "NoOp")
    ]
    tree = Module(
        "ResNet",
        "ResNet",
        [
            Module("stem", "Conv2d"),
            *[
                Module(
                    f"layer{i}",
                    "BasicBlock",
                    [Module("conv1", "Conv2d"), Module("conv2", "Conv2d")],
                )
                for i in range(3)
            ],
            Module("head", "Linear"),
        ],
    )
    with sl.create_file_writer(tmp_path / "run").as_default(step=5):
        assert sg.write_graph(g)
        sg.trace_on()
        sg.record_graph(g)
        sg.record_graph(resnet_like(1))
        assert sg.trace_export("traced")
        sg.trace_on(profiler=True)
        sg.record_graph(g, stats)
        assert sg.trace_export("profiled")
        assert sg.write_run_metadata("session_step5", stats, graph=g)
        assert sg.write_conceptual_graph(tree)

    with TensorBoardServer(tmp_path, load_fast=load_fast) as tb:
        info = tb.poll(
            lambda: tb.get_json("/data/plugin/graphs/info"),
            lambda r: "run" in r and len(r["run"]["tags"]) == 5,
        )["run"]
        assert info["run_graph"] is True
        assert info["tags"] == {
            "traced": {
                "tag": "traced",
                "conceptual_graph": False,
                "op_graph": True,
                "profile": False,
            },
            "traced_1": {
                "tag": "traced_1",
                "conceptual_graph": False,
                "op_graph": True,
                "profile": False,
            },
            "profiled": {
                "tag": "profiled",
                "conceptual_graph": False,
                "op_graph": True,
                "profile": True,
            },
            "session_step5": {
                "tag": "session_step5",
                "conceptual_graph": False,
                "op_graph": False,
                "profile": True,
            },
            "keras": {
                "tag": "keras",
                "conceptual_graph": True,
                "op_graph": False,
                "profile": False,
            },
        }
        plugins = tb.get_json("/data/plugins_listing")
        assert plugins["graphs"]["enabled"] is True

        assert_same_graph(parse_graph(tb.get("/data/plugin/graphs/graph", run="run")), g)
        for tag, expected in [("traced", g), ("traced_1", resnet_like(1)), ("profiled", g)]:
            served = parse_graph(tb.get("/data/plugin/graphs/graph", run="run", tag=tag))
            assert_same_graph(served, expected)
            add = next(n for n in served.node if n.name == "layer0/add")
            assert list(add.input) == ["layer0/bn2/batch_norm", "stem/conv2d", "^init"]

        for tag in ("profiled", "session_step5"):
            rm = text_format.Parse(
                tb.get("/data/plugin/graphs/run_metadata", run="run", tag=tag).decode(),
                config_pb2.RunMetadata(),
            )
            got = [
                (s.node_name, s.all_start_micros, s.all_end_rel_micros, s.memory[0].total_bytes)
                for d in rm.step_stats.dev_stats
                for s in d.node_stats
            ]
            assert got == [(s.node_name, s.start_micros, s.duration_micros, 4096) for s in stats]

        conceptual = parse_graph(
            tb.get("/data/plugin/graphs/graph", run="run", tag="keras", conceptual="true")
        )
        assert [(n.name, list(n.input), n.attr["keras_class"].s) for n in conceptual.node][:4] == [
            ("ResNet/stem", [], b"Conv2d"),
            ("ResNet/layer0/conv1", ["ResNet/stem"], b"Conv2d"),
            ("ResNet/layer0/conv2", ["ResNet/layer0/conv1"], b"Conv2d"),
            ("ResNet/layer1/conv1", ["ResNet/layer0/conv2"], b"Conv2d"),
        ]
