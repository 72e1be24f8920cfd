"""add_onnx_graph: an ONNX model's graph for the graph dashboard, without the onnx package,
read back with TensorBoard's own loader and protos; torch's add_onnx_graph as the oracle
where the onnx package is installed."""

from __future__ import annotations

import contextlib
import io
import struct
import warnings
from pathlib import Path
from typing import Any

import pytest

import summarylib as sl
from summarylib.encoding._wire import field_bytes, field_varint, key
from tests.helpers import only_file, tb_events


def graph_of(logdir: Path) -> Any:
    """The run's GraphDef, parsed with TensorBoard's proto."""
    from tensorboard.compat.proto import graph_pb2

    (event,) = [e for e in tb_events(only_file(logdir)) if e.graph_def]
    return graph_pb2.GraphDef.FromString(event.graph_def)


def nodes_of(graph: Any) -> dict[str, tuple[str, list[str]]]:
    return {n.name: (n.op, list(n.input)) for n in graph.node}


# A ModelProto encoded by hand from onnx.proto's field numbers (independent of the parser).
def text(field: int, value: str) -> bytes:
    return field_bytes(field, value.encode())


def value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(field_bytes(1, field_varint(1, d) if isinstance(d, int) else text(2, d))
                     for d in dims)
    tensor_type = field_varint(1, elem_type) + field_bytes(2, shape)
    return text(1, name) + field_bytes(2, field_bytes(1, tensor_type))


def node(op: str, inputs: list[str], outputs: list[str], attrs: list[bytes]) -> bytes:
    return (b"".join(text(1, i) for i in inputs) + b"".join(text(2, o) for o in outputs)
            + text(4, op) + b"".join(field_bytes(5, a) for a in attrs))


def hand_made_model() -> bytes:
    axis = text(1, "axis") + field_varint(3, 1) + field_varint(20, 2)
    split = text(1, "split") + field_varint(8, 2) + field_varint(8, 2) + field_varint(20, 7)
    alpha = text(1, "alpha") + key(2, 5) + struct.pack("<f", 0.5) + field_varint(20, 1)
    mode = text(1, "mode") + field_bytes(4, b"constant") + field_varint(20, 3)
    graph = (field_bytes(1, node("Split", ["x"], ["a0", "a1"], [axis, split]))
             + field_bytes(1, node("Add", ["a1", "", "w"], ["y"], [alpha, mode]))
             + text(2, "g")
             + field_bytes(5, text(8, "w") + field_varint(1, 2))  # an initializer: skipped
             + field_bytes(11, value_info("x", 7, ["batch", 4]))
             + field_bytes(12, value_info("y", 1, ["batch", 2])))
    return field_varint(1, 9) + text(2, "hand") + field_bytes(7, graph)


def test_a_hand_made_model_without_the_onnx_package(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(hand_made_model())
    with sl.SummaryWriter(tmp_path / "run") as w:
        assert w.add_onnx_graph(str(model))
    graph = graph_of(tmp_path / "run")
    assert nodes_of(graph) == {
        "x": ("Variable", []),
        "a0": ("Split", ["x"]),
        "y": ("Add", ["a0:1", "w"]),  # the Split's 2nd output; the empty input left out
    }
    by_name = {n.name: n for n in graph.node}
    x = by_name["x"]
    assert x.attr["dtype"].type == 9  # DT_INT64: ONNX's INT64 (7) is TensorFlow's 9
    assert [d.size for d in x.attr["shape"].shape.dim] == [-1, 4]  # "batch" is unknown
    assert by_name["a0"].attr["parameters"].s == b"axis = 1, split = [2, 2]"
    assert by_name["y"].attr["parameters"].s == b"alpha = 0.5, mode = 'constant'"
    assert graph.versions.producer == 22


def test_bad_models_raise_naming_the_method_and_write_nothing(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\xff\xff")
    with sl.SummaryWriter(tmp_path / "run") as w:
        with pytest.raises(ValueError, match=r"^add_onnx_graph: cannot read"):
            w.add_onnx_graph(str(tmp_path / "missing.onnx"))
        with pytest.raises(ValueError, match=r"^add_onnx_graph: not an ONNX model"):
            w.add_onnx_graph(garbage)
        with pytest.raises(ValueError, match=r"^add_onnx_graph: not an ONNX model with a graph"):
            w.add_onnx_graph(b"")
        with pytest.raises(TypeError, match=r"^add_onnx_graph: 'prototxt' must be"):
            w.add_onnx_graph(42)
    assert not [e for e in tb_events(only_file(tmp_path / "run")) if e.graph_def]
    assert sl.SummaryWriter(tmp_path / "off", write_to_disk=False).add_onnx_graph(
        hand_made_model()) is False


def test_same_graph_as_torchs_add_onnx_graph(tmp_path: Path) -> None:
    """torch's own add_onnx_graph (which needs the onnx package) on a model torch exported:
    the same nodes, ops, edges, dtypes and shapes, but for the documented differences (no
    second node for a graph output a node produces)."""
    torch = pytest.importorskip("torch")
    onnx = pytest.importorskip("onnx", reason="torch's add_onnx_graph needs onnx")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(1, 3, 8, 8),), str(path), dynamo=False)
    with sl.SummaryWriter(tmp_path / "ours") as w:
        assert w.add_onnx_graph(str(path))
    with sl.SummaryWriter(tmp_path / "proto") as w:
        assert w.add_onnx_graph(onnx.load(str(path)))
    theirs_writer = TorchWriter(str(tmp_path / "theirs"))
    with contextlib.redirect_stdout(io.StringIO()):  # torch prints every node's name
        theirs_writer.add_onnx_graph(str(path))
    theirs_writer.close()
    ours, theirs = graph_of(tmp_path / "ours"), graph_of(tmp_path / "theirs")
    assert ours == graph_of(tmp_path / "proto")
    their_nodes = [(n.name, n.op, list(n.input)) for n in theirs.node]
    our_nodes = [(n.name, n.op, list(n.input)) for n in ours.node]
    produced = {n.name for n in theirs.node if n.op != "Variable"}
    assert our_nodes == [t for t in their_nodes if not (t[1] == "Variable" and t[0] in produced)]
    assert len(our_nodes) == 5
    for a, b in zip(ours.node, theirs.node, strict=False):
        if a.op == "Variable":
            assert a.attr["dtype"].type == b.attr["dtype"].type == 1  # float: the same code
            assert a.attr["shape"] == b.attr["shape"]
