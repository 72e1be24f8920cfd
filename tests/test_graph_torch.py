"""torch capture: models built here -> GraphDefs ready for TensorBoard's graph dashboard.

For a ResNet-style CNN with nested blocks, a transformer block, a model with dict inputs
and outputs, and a model with data-dependent control flow (jit fallback): the module
hierarchy is the scope hierarchy, every parameter is a ``Const`` named by its qualified
name, no input dangles, every non-``Const`` node has ``_output_shapes``, no bookkeeping
nodes remain, and lint finds nothing. Then ``trace()``: records on the first call of each
trace, returns the real result, and turns every capture failure into a warning.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from tensorboard.compat.proto import config_pb2  # noqa: E402
from tensorboard.plugins.graph import keras_util  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

import summarylib as sl  # noqa: E402
import summarylib.graph as sg  # noqa: E402
import summarylib.graph.tracing as trace_mod  # noqa: E402
from summarylib.graph import Graph, check  # noqa: E402
from summarylib.graph.adapters import GraphCaptureWarning  # noqa: E402
from summarylib.graph.capturing import capture, module_tree, trace, untrace  # noqa: E402
from tests.helpers import only_file, tb_events  # noqa: E402
from tests.torch_models import (  # noqa: E402
    Branchy,
    BranchyDict,
    DictModel,
    ResNet,
    TransformerBlock,
)

BOOKKEEPING = {
    "prim::GetAttr",
    "prim::Constant",
    "prim::ListConstruct",
    "prim::TupleConstruct",
    "prim::ListUnpack",
    "prim::TupleUnpack",
    "operator.getitem",
    "getitem",
}


# --- models: tests/torch_models.py (shared with bench/graph_compare.py) -------------------


# --- fixtures (torch.export takes a while: one capture per model per module) ---------


@pytest.fixture(scope="module")
def resnet() -> tuple[Any, Any, Graph]:
    torch.manual_seed(0)
    model, x = ResNet(), torch.randn(2, 3, 8, 8)
    return model, x, capture(model, (x,))


@pytest.fixture(scope="module")
def transformer() -> tuple[Any, Any, Graph]:
    torch.manual_seed(0)
    model, x = TransformerBlock().eval(), torch.randn(2, 5, 16)
    return model, x, capture(model, (x,))


@pytest.fixture(scope="module")
def dict_model() -> tuple[Any, Any, Graph]:
    torch.manual_seed(0)
    model = DictModel()
    batch = {"a": torch.randn(2, 4), "b": torch.randn(2, 6)}
    g = capture(model, (batch, 3), {"mode": "eval", "extra": None})
    return model, batch, g


@pytest.fixture(autouse=True)
def no_trace_left() -> Iterator[None]:
    sg.trace_off()
    yield
    sg.trace_off()


def assert_dashboard_ready(g: Graph, model: Any) -> None:
    """The contract every captured graph meets."""
    names = {n.name for n in g}
    for node in g:
        for inp in node.inputs + node.control_inputs:
            src, _, slot = inp.rpartition(":")
            assert (src if slot.isdigit() else inp) in names, (node.name, inp)
        assert node.op not in BOOKKEEPING, node
        assert node.device == "/device:CPU:0", node
        assert not node.name.startswith("/") and "//" not in node.name
    gd = g.to_graph_def()
    for nd in gd.node:
        if nd.op != "Const":
            assert "_output_shapes" in nd.attr, nd.name
    params = {
        n.attrs["target"]: n for n in g if n.op == "Const" and n.attrs.get("kind") == "parameter"
    }
    expected = dict(model.named_parameters())
    assert set(params) == set(expected)
    for qual, p in expected.items():
        node = params[qual]
        # A parameter of a single-op leaf module stands beside the module's op node
        # (layer1/conv1.weight); one of a module with several ops inside its scope.
        module, _, leaf = qual.rpartition(".")
        beside = f"{module.replace('.', '/')}.{leaf}" if module else leaf
        assert node.name in (qual.replace(".", "/"), beside), node.name
        if node.name == beside and module:
            assert module.replace(".", "/") in names  # the module's op node
        assert node.outputs[0].shape == tuple(p.shape)
        assert node.outputs[0].dtype == "float32"
        assert "value" not in node.attrs  # parameters are never shipped to the browser
    # Blocks holding multi-op modules (BatchNorm in training mode also counts its batches)
    # are nested groups: check() rightly predicts they get different colours.
    assert [i for i in check(g)
            if i.severity != "info" and i.code != "nested-template"] == []
    assert Graph.from_graph_def(gd) == g


# --- torch.export (op level) -------------------------------------------------------


def test_resnet_scopes_params_shapes(resnet: tuple[Any, Any, Graph]) -> None:
    model, _, g = resnet
    assert_dashboard_ready(g, model)
    by_name = {n.name: n for n in g}
    conv = by_name["layer1/0/conv1"]
    assert conv.op == "aten::conv2d"
    assert conv.inputs == ["relu", "layer1/0/conv1.weight"]
    assert conv.attrs["stride"] == [1, 1] and conv.attrs["padding"] == [1, 1]
    assert conv.outputs[0].shape == (2, 8, 8, 8)
    # The residual add lives in the block's own scope, fed by the block input. The block's
    # own torch.relu is relu_1: "relu" is the scope of its nn.ReLU module.
    assert by_name["layer1/1/add"].inputs == ["layer1/1/bn2/batch_norm", "layer1/0/relu_1"]
    assert by_name["layer1/0/relu"].op == "aten::relu"
    # The downsample path is its own nested scope.
    assert by_name["layer2/0/down/0"].attrs["stride"] == [2, 2]
    assert by_name["layer2/0/down/1/batch_norm"].outputs[0].shape == (2, 16, 4, 4)
    # Module hierarchy -> scope hierarchy; at the root only inputs, glue, the output and
    # the head (a single-op module: one op node, its parameters beside it).
    roots = sorted(n.name for n in g if "/" not in n.name)
    assert roots == ["fc", "fc.bias", "fc.weight", "mean", "output", "relu", "x"]
    assert by_name["x"].op == "Placeholder"
    assert by_name["x"].outputs[0].shape == (2, 3, 8, 8)
    assert by_name["output"].op == "Identity"
    assert by_name["output"].inputs == ["fc"]
    assert by_name["output"].outputs[0].shape == (2, 10)
    # Buffers are Consts too (running statistics), named by qualified name.
    rm = by_name["layer1/0/bn1/running_mean"]
    assert rm.op == "Const" and rm.attrs["kind"] == "buffer"


def test_capture_leaves_the_model_untouched() -> None:
    torch.manual_seed(0)
    model = ResNet().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    capture(model, (torch.randn(2, 3, 8, 8),))
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert model.training


def test_transformer_block(transformer: tuple[Any, Any, Graph]) -> None:
    model, _, g = transformer
    assert_dashboard_ready(g, model)
    ops = {n.op for n in g}
    assert "aten::layer_norm" in ops and "aten::gelu" in ops
    scopes = {n.name.rpartition("/")[0] for n in g}
    assert {"attn", "mlp"} <= scopes
    # Single-op modules are op nodes named after the module, parameters beside them.
    assert g["ln1"].op == "aten::layer_norm" and g["mlp/1"].op == "aten::gelu"
    assert g["ln1.weight"].op == "Const" and g["mlp/0"].inputs[1:] == ["mlp/0.weight",
                                                                        "mlp/0.bias"]
    # MultiheadAttention's packed projection is a parameter of the attn scope.
    assert g["attn/in_proj_weight"].outputs[0].shape == (48, 16)
    # The attention output is the first of two outputs: consumers read slot 0.
    out = g["output"]
    assert out.outputs[0].shape == (2, 5, 16)


def test_dict_inputs_outputs_and_non_tensor_args(dict_model: tuple[Any, Any, Graph]) -> None:
    model, _, g = dict_model
    assert_dashboard_ready(g, model)
    names = [n.name for n in g]
    assert {"batch/a", "batch/b"} <= set(names)
    assert g["batch/a"].op == "Placeholder" and g["batch/a"].outputs[0].shape == (2, 4)
    # Non-tensor inputs the trace was specialised on are Consts holding their value.
    assert g["n"].op == "Const" and int(g["n"].attrs["value"]) == 3
    assert g["mode"].attrs["value"] == "eval"
    assert "extra" not in names  # None inputs are left out
    # Outputs named by their pytree path; None is left out; ints are Consts.
    assert g["output/logits"].inputs == ["head"]
    assert g["output/aux/0"].inputs == ["max"]
    assert g["output/best"].inputs == ["max:1"]  # getitem became an output slot
    assert g["output/best"].outputs[0].dtype == "int64"
    assert "output/aux/1" not in names
    assert g["output/n"].op == "Const"
    assert len(g["max"].outputs) == 2
    # The buffer feeds the multiplication, the literal 3 is an attr of its op.
    muls = [n for n in g if n.op == "aten::mul"]
    assert any("scale" in n.inputs for n in muls)
    assert any(n.attrs.get("other") == 3 for n in muls)


def test_export_node_metadata_survives_graphdef(resnet: tuple[Any, Any, Graph]) -> None:
    _, _, g = resnet
    gd = g.to_graph_def()
    nd = next(n for n in gd.node if n.name == "layer1/0/conv1")
    assert nd.attr["T"].type == 1  # DT_FLOAT from the output dtype
    assert [d.size for d in nd.attr["_output_shapes"].list.shape[0].dim] == [2, 8, 8, 8]
    w = next(n for n in gd.node if n.name == "layer1/0/conv1.weight")
    assert w.attr["target"].s == b"layer1.0.conv1.weight"


# --- fx (module level) and jit fallback ------------------------------------------------


def test_fx_module_level(resnet: tuple[Any, Any, Graph]) -> None:
    model, x, _ = resnet
    g = capture(model, (x,), method="fx")
    assert_dashboard_ready(g, model)
    conv = g["layer1/0/conv1"]
    assert conv.op == "Conv2d"
    assert conv.inputs[1:] == ["layer1/0/conv1.weight"]
    assert conv.outputs[0].shape == (2, 8, 8, 8)
    assert "kernel_size=(3, 3)" in str(conv.attrs["config"])
    assert g["layer1/0/add"].op == "operator.add"
    assert g["mean"].op == "Tensor.mean"


@pytest.mark.parametrize("which", ["resnet", "transformer", "defaults_and_varargs"])
def test_fx_shapes_from_our_run_match_shapeprop(
    which: str, resnet: tuple[Any, Any, Graph], transformer: tuple[Any, Any, Graph]
) -> None:
    # from_fx runs the graph itself (not fx.Interpreter + ShapeProp, a third of the time
    # on a 10k-node model); the graph must be the one ShapeProp's metadata gives.
    from torch.fx.passes.shape_prop import ShapeProp

    from summarylib.graph.adapters.torch_fx import from_fx

    class Defaults(nn.Module):
        def forward(self, x: Any, scale: float = 2.0, *rest: Any) -> Any:
            y = x.view(2, -1) * scale
            return torch.max(y, dim=1), rest, y.size(0)

    if which == "defaults_and_varargs":
        model: Any = Defaults()
        args: tuple[Any, ...] = (torch.ones(2, 3),)
    else:
        model, x, _ = resnet if which == "resnet" else transformer
        # A copy: ShapeProp updates BatchNorm statistics of the shared fixture's model.
        model, args = copy.deepcopy(model), (x,)
    ours = from_fx(torch.fx.symbolic_trace(model), args, root=model)
    gm = torch.fx.symbolic_trace(model)
    with torch.no_grad():
        ShapeProp(gm).propagate(*args)
    assert ours == from_fx(gm, (), root=model)
    assert all(n.outputs for n in ours if n.op != "Const")


def test_data_dependent_model_falls_back_to_jit_with_warnings() -> None:
    torch.manual_seed(0)
    model = Branchy()
    x = torch.ones(2, 4)
    with pytest.warns(GraphCaptureWarning) as rec:
        g = capture(model, (x,))
    texts = [str(w.message) for w in rec]
    assert any("torch.export could not trace Branchy" in t for t in texts)
    assert any("capture(torch.jit)" in t and "torch_models.py" in t for t in texts)
    assert_dashboard_ready(g, model)
    assert g["fc"].op == "aten::linear"
    assert g["fc"].inputs == ["x", "fc.weight", "fc.bias"]
    branch = g["output"].inputs[0]
    assert g[branch].op in ("aten::mul", "aten::sub")


def test_jit_fallback_with_int_argument_and_dict_result_holding_none() -> None:
    # torch.jit.trace alone fails on both: "Type 'Tuple[Tensor, int]' cannot be traced" and
    # "only outputs matching dict[...] can be a dictionary output". The adapter binds the
    # int, flattens the result to its tensors and names the outputs from the dict keys.
    torch.manual_seed(0)
    model = BranchyDict()
    x = torch.ones(2, 4)
    expected = model(x, 3)
    traced = trace(model)
    try:
        sg.trace_on()
        with pytest.warns(GraphCaptureWarning) as rec:
            out = traced(x, 3)
        (gbytes, _), = trace_mod._records_for_tests()
    finally:
        untrace(model)
        sg.trace_off()
    assert torch.equal(out["y"], expected["y"]) and out["aux"] is None and out["n"] == 3
    texts = [str(w.message) for w in rec]
    assert any("torch.export could not trace BranchyDict" in t for t in texts)
    assert any("capture(torch.jit)" in t and "torch_models.py" in t for t in texts)
    assert not any("not recorded" in t for t in texts)
    g = Graph.from_graph_def(gbytes)
    assert_dashboard_ready(g, model)  # lint clean, no dangling input, shapes, params
    with pytest.warns(GraphCaptureWarning, match="capture\\(torch.jit\\)"):
        assert g == capture(model, (x, 3), method="jit")
    names = [n.name for n in g]
    assert g["x"].op == "Placeholder" and g["x"].outputs[0].shape == (2, 4)
    assert g["n"].op == "Const" and g["n"].attrs["value"] == 3  # the bound argument
    branch = g[g["output/y"].inputs[0]]
    assert branch.op in ("aten::mul", "aten::sub") and branch.attrs["other"] == 3
    assert branch.inputs == ["fc"]
    assert g["output/pair/0"].inputs == ["relu"] and g["output/pair/1"].inputs == ["sum"]
    assert g["output/pair/1"].outputs[0].shape == ()
    assert g["output/n"].op == "Const" and g["output/n"].attrs["value"] == 3
    assert not any(name.startswith("output/aux") for name in names)  # None is left out


def test_jit_fallback_names_inputs_and_outputs_by_key_path() -> None:
    def f(batch: dict[str, Any], cfg: dict[str, Any]) -> Any:
        return {"out.v": {"y": batch["a.b"]["x"] * cfg["n"]}, "tag": cfg["tag"]}

    g = capture(f, ({"a.b": {"x": torch.ones(2)}}, {"n": 3, "tag": "x"}), method="jit",
                framework="torch")
    assert [(n.name, n.op) for n in g] == [
        ("batch/a.b/x", "Placeholder"),  # a key with a '.' stays one segment
        ("cfg/n", "Const"),
        ("cfg/tag", "Const"),
        ("mul", "aten::mul"),
        ("output/out.v/y", "Identity"),
        ("output/tag", "Const"),
    ]
    assert g["cfg/tag"].attrs["value"] == "x"
    assert [i for i in check(g) if i.severity != "info"] == []


def test_jit_method_on_cnn_matches_export_structure(resnet: tuple[Any, Any, Graph]) -> None:
    model, x, g_export = resnet
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphCaptureWarning)  # a clean model: no warnings
        g = capture(model, (x,), method="jit")
    assert_dashboard_ready(g, model)
    scopes = lambda graph: {n.name.rpartition("/")[0] for n in graph}  # noqa: E731
    assert scopes(g) == scopes(g_export)
    assert g["layer2/0/down/0"].attrs["stride"] == [2, 2]


# --- capture() argument handling ---------------------------------------------------------


def test_capture_plain_function_and_bad_arguments() -> None:
    def f(x: Any, y: Any) -> Any:
        return torch.tanh(x) @ y

    g = capture(f, (torch.ones(2, 3), torch.ones(3, 4)))
    assert [n.op for n in g] == ["Placeholder", "Placeholder", "aten::tanh", "aten::matmul",
                                 "Identity"]
    assert g["output"].outputs[0].shape == (2, 4)
    with pytest.raises(ValueError, match="'method' must be one of"):
        capture(ResNet(), (torch.ones(1, 3, 8, 8),), method="onnx")
    with pytest.raises(TypeError, match="'example_kwargs' must be a dict"):
        capture(ResNet(), (torch.ones(1, 3, 8, 8),), [1], framework="torch")
    with pytest.raises(ValueError, match="'framework' must be one of"):
        capture(f, (), framework="mxnet")


def test_name_never_equals_a_scope() -> None:
    class Clash(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.relu = nn.Sequential(nn.Linear(3, 3), nn.ReLU())

        def forward(self, x: Any) -> Any:
            return torch.relu(self.relu(x))  # an op "relu" next to a module "relu"

    g = capture(Clash(), (torch.ones(1, 3),))
    assert [i for i in check(g) if i.severity != "info"] == []
    assert "relu" not in {n.name for n in g}
    assert g["relu/1"].op == "aten::relu"


# --- trace() -------------------------------------------------------------------------


def test_trace_records_on_first_call_of_each_trace(resnet: tuple[Any, Any, Graph]) -> None:
    model, x, g = resnet
    traced = trace(model)
    try:
        assert traced is model
        with torch.no_grad():
            expected = model(x)  # no trace on: nothing recorded, no cost
            sg.trace_on()
            out = traced(x)
            traced(x)
            records = list(trace_mod._records_for_tests())
            sg.trace_off()
        assert torch.equal(out, expected)
        assert len(records) == 1
        assert Graph.from_graph_def(records[0][0]) == g
        sg.trace_on()
        with torch.no_grad():
            traced(x)
        assert len(list(trace_mod._records_for_tests())) == 1  # once per trace
    finally:
        untrace(model)
    sg.trace_off()
    sg.trace_on()
    with torch.no_grad():
        model(x)
    assert list(trace_mod._records_for_tests()) == []  # hook removed


def test_trace_export_writes_traced_graph(logdir: Path, resnet: tuple[Any, Any, Graph]) -> None:
    model, x, g = resnet
    traced = sg.trace(model)
    try:
        with sl.create_file_writer(logdir).as_default():
            sg.trace_on()
            with torch.no_grad():
                traced(x)
            assert sg.trace_export("resnet", step=3)
    finally:
        untrace(model)
    values = [(e.step, v) for e in tb_events(only_file(logdir)) for v in e.summary.value]
    assert len(values) == 1
    step, value = values[0]
    assert step == 3 and value.tag == "resnet"
    assert value.metadata.plugin_data.plugin_name == "graph_run_metadata_graph"
    rm = config_pb2.RunMetadata.FromString(tensor_util.make_ndarray(value.tensor).item())
    gd = rm.function_graphs[0].pre_optimization_graph
    assert [n.name for n in gd.node] == [n.name for n in g]


def test_trace_with_profiler_times_every_op() -> None:
    torch.manual_seed(0)
    model = trace(TransformerBlock().eval())
    x = torch.randn(2, 5, 16)
    try:
        sg.trace_on(profiler=True)
        with torch.no_grad():
            model(x)
        records = list(trace_mod._records_for_tests())
    finally:
        untrace(model)
        sg.trace_off()
    assert len(records) == 1
    graph_bytes, stats_bytes = records[0]
    assert stats_bytes
    g = Graph.from_graph_def(graph_bytes)
    from summarylib.proto import step_stats_pb2

    stats = step_stats_pb2.StepStats.FromString(stats_bytes)
    timed = {ns.node_name for d in stats.dev_stats for ns in d.node_stats}
    ops = {n.name for n in g if n.op.startswith("aten::")}
    assert timed == ops
    starts = [ns.all_start_micros for d in stats.dev_stats for ns in d.node_stats]
    assert starts == sorted(starts) and starts[0] > 1_600_000_000_000_000
    mlp = next(ns for d in stats.dev_stats for ns in d.node_stats if ns.node_name == "mlp/0")
    assert mlp.memory[0].total_bytes == 2 * 5 * 64 * 4


def _profiled(model: Any, *args: Any, **options: Any) -> tuple[Graph, Any]:
    """Graph and StepStats recorded by trace(model, **options) under trace_on(profiler=True)."""
    from summarylib.proto import step_stats_pb2

    traced = trace(model, **options)
    try:
        sg.trace_on(profiler=True)
        with torch.no_grad():
            traced(*args)
        (gbytes, sbytes), = trace_mod._records_for_tests()
    finally:
        untrace(model)
        sg.trace_off()
    return Graph.from_graph_def(gbytes), step_stats_pb2.StepStats.FromString(sbytes or b"")


def test_fx_profile_times_every_module_function_and_method_node() -> None:
    import numpy as np

    torch.manual_seed(0)
    model = TransformerBlock().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "profile is empty" warning any more
        g, stats = _profiled(model, torch.randn(2, 5, 16), method="fx")
    assert g["mlp/0"].op == "Linear"  # the module-level graph
    (dev,) = stats.dev_stats
    by_name = {ns.node_name: ns for ns in dev.node_stats}
    assert len(by_name) == len(dev.node_stats)  # one entry per node
    timed = {n.name for n in g if n.op not in ("Const", "Placeholder", "Identity")}
    assert set(by_name) == timed
    assert {"ln1", "attn/MultiheadAttention", "add", "mlp/1"} <= timed
    for name, ns in by_name.items():
        expected = sum(int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize
                       for s in g[name].outputs if s.shape is not None and s.dtype)
        assert ns.memory[0].total_bytes == expected, name
    assert by_name["mlp/0"].memory[0].total_bytes == 2 * 5 * 64 * 4
    starts = [ns.all_start_micros for ns in dev.node_stats]
    assert starts == sorted(starts) and starts[0] > 1_600_000_000_000_000


def test_jit_fallback_profile_is_empty_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    import summarylib.graph.adapters.torch_dispatch as torch_dispatch

    monkeypatch.setattr(torch_dispatch, "_warned_jit_profile", False)
    torch.manual_seed(0)
    model, x = Branchy(), torch.ones(2, 4)
    with pytest.warns(GraphCaptureWarning) as rec:
        g, stats = _profiled(model, x)
    texts = [str(w.message) for w in rec]
    assert [t for t in texts if "profile" in t] == [
        "capture: no per-node profile for graphs from the torch.jit fallback (models "
        "torch.export cannot trace): the jit graph cannot be run node by node, so its "
        "profile is empty; method='fx' gives a module-level graph with a profile "
        "(warned once per process)"]
    assert g["fc"].op == "aten::linear" and list(stats.dev_stats) == []
    with pytest.warns(GraphCaptureWarning) as rec:  # the fallback's own warnings only
        _profiled(model, x)
    assert not [w for w in rec if "profile" in str(w.message)]


def test_trace_failure_warns_and_returns_the_real_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import summarylib.graph.adapters.torch_dispatch as torch_dispatch

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer exploded")

    monkeypatch.setattr(torch_dispatch, "_capture", boom)
    torch.manual_seed(0)
    model = Branchy()
    x = torch.ones(1, 4)
    expected = model(x)
    traced = trace(model)
    try:
        sg.trace_on()
        with pytest.warns(GraphCaptureWarning, match="Branchy was not recorded: RuntimeError: "
                                                     "tracer exploded"):
            out = traced(x)
        assert torch.equal(out, expected)
        assert list(trace_mod._records_for_tests()) == []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            traced(x)  # one attempt per trace: no second warning
    finally:
        untrace(model)


def test_trace_function_wrapper() -> None:
    def step(x: Any, w: Any) -> Any:
        return (x @ w).relu().sum()

    traced = trace(step)
    assert traced.__name__ == "step" and traced.__wrapped__ is step
    x, w = torch.ones(2, 3), torch.ones(3, 4)
    sg.trace_on()
    assert traced(x, w).item() == 24.0
    (gbytes, _), = trace_mod._records_for_tests()
    g = Graph.from_graph_def(gbytes)
    assert [n.op for n in g][-1] == "Identity" and g["output"].outputs[0].shape == ()


def test_trace_rejects_non_callables() -> None:
    with pytest.raises(TypeError, match="expected a model or function"):
        trace(3)


# --- conceptual graph ------------------------------------------------------------------


def test_module_tree_through_tensorboards_converter(resnet: tuple[Any, Any, Graph]) -> None:
    model, _, g = resnet
    tree = module_tree(model, g)
    gd = keras_util.keras_model_to_graph_def(json.loads(sg.keras_json(tree)))
    nodes = {n.name: (list(n.input), n.attr["keras_class"].s.decode()) for n in gd.node}
    assert nodes["ResNet/stem/0"][1] == "Conv2d"
    # A block whose modules form a chain is a Sequential (its residual add is not a module).
    assert nodes["ResNet/layer1/0/conv1"] == (["ResNet/stem/1"], "Conv2d")
    assert nodes["ResNet/layer1/0/bn2"] == (["ResNet/layer1/0/conv2"], "BatchNorm2d")
    assert "ResNet/layer1/0/input" not in nodes
    # A block with a downsample branch is Functional: both branches start at its input.
    assert nodes["ResNet/layer2/0/conv1"][0] == ["ResNet/layer2/0/input"]
    assert nodes["ResNet/layer2/0/down/0"][0] == ["ResNet/layer2/0/input"]
    assert nodes["ResNet/fc"][1] == "Linear"
    # Without a graph: registration order, chained.
    plain = module_tree(model)
    assert [c.name for c in plain.children] == ["stem", "layer1", "layer2", "fc"]
    assert all(c.inputs is None for c in plain.children)
    with pytest.raises(TypeError, match=r"must be a torch\.nn\.Module"):
        module_tree(lambda x: x)


def test_module_tree_keeps_the_residual_from_the_model_input(
    transformer: tuple[Any, Any, Graph],
) -> None:
    # ln2 reads x + attn(ln1(x)): the block's input (a root Placeholder) and attn.
    model, _, g = transformer
    tree = module_tree(model, g)
    inputs = {c.name: c.inputs for c in tree.children}
    assert inputs == {
        "ln1": [sg.PARENT_INPUT],
        "attn": ["ln1"],
        "ln2": [sg.PARENT_INPUT, "attn"],
        "mlp": ["ln2"],
    }
    gd = keras_util.keras_model_to_graph_def(json.loads(sg.keras_json(tree)))
    nodes = {n.name: list(n.input) for n in gd.node}
    assert sorted(nodes["TransformerBlock/ln2"]) == [
        "TransformerBlock/attn", "TransformerBlock/input"]


def test_graph_trace_finds_the_torch_adapter_in_a_fresh_process(logdir: Path) -> None:
    # Nothing imported the adapter yet: summarylib.graph.trace must import it by itself.
    code = (
        "import sys, torch, summarylib as sl, summarylib.graph as sg\n"
        "assert 'summarylib.graph.adapters.torch_dispatch' not in sys.modules\n"
        "m = sg.trace(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()))\n"
        f"with sl.create_file_writer({str(logdir)!r}).as_default():\n"
        "    sg.trace_on()\n"
        "    m(torch.ones(1, 3))\n"
        "    assert sg.trace_export('mlp', step=0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    (value,) = [v for e in tb_events(only_file(logdir)) for v in e.summary.value]
    assert value.metadata.plugin_data.plugin_name == "graph_run_metadata_graph"
    rm = config_pb2.RunMetadata.FromString(tensor_util.make_ndarray(value.tensor).item())
    ops = [n.op for n in rm.function_graphs[0].pre_optimization_graph.node]
    assert any("linear" in op.lower() or "matmul" in op.lower() for op in ops), ops


@pytest.mark.parametrize("method", ["export", "fx"])
def test_profile_runs_leave_rng_and_buffers_as_they_were(method: str) -> None:
    # Export and fx graphs are timed by the same run: no_grad, the RNG state and every
    # buffer restored afterwards, one NodeStats per timed graph node.
    from summarylib.graph.adapters.torch_fx import profile_torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5),
                                torch.nn.BatchNorm1d(4))
    model.train()
    x = torch.randn(3, 4)
    torch.manual_seed(1)
    rng = torch.get_rng_state()
    stats_before = [b.clone() for b in model[2].buffers()]
    g, stats = profile_torch(model, (x,), method=method)
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(a, b) for a, b in zip(model[2].buffers(), stats_before, strict=True))
    assert stats and {s.node_name for s in stats} <= {n.name for n in g}
    for s in stats:
        assert s.duration_micros >= 0 and s.start_micros > 1_600_000_000_000_000
    by_name = {s.node_name: s for s in stats}
    linear = next(n for n in g if n.op in ("aten::linear", "Linear"))
    assert by_name[linear.name].output_bytes == 3 * 4 * 4


def test_module_tree_looks_through_a_long_chain_of_the_parents_own_ops() -> None:
    # b reads a's output through 3,000 ops of the parent's forward (and the model input
    # through a residual at the end of the chain): far deeper than Python's recursion limit.
    from summarylib.graph import GraphBuilder

    model = torch.nn.Sequential()
    model.add_module("a", torch.nn.Linear(2, 2))
    model.add_module("b", torch.nn.Linear(2, 2))
    gb = GraphBuilder()
    x = gb.placeholder((1, 2), name="x")
    y = gb.op("Linear", [x], name="a/Linear")
    for _ in range(3000):
        y = gb.op("Mul", [y], name="mul")
    y = gb.op("Add", [y, x], name="add")
    gb.op("Linear", [y], name="b/Linear")
    tree = module_tree(model, gb.graph)
    assert {c.name: c.inputs for c in tree.children} == {
        "a": [sg.PARENT_INPUT], "b": ["a", sg.PARENT_INPUT]}
