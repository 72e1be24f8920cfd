"""Graph writers: run graph, trace_on/trace_export/trace_off, profiles, conceptual graph.

Events are read back with TensorBoard's own loader and protos; the conceptual JSON is fed to
TensorBoard's Keras converter.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import config_pb2, graph_pb2, step_stats_pb2
from tensorboard.plugins.graph import keras_util
from tensorboard.util import tensor_util

import summarylib as sl
import summarylib.graph as sg
import summarylib.graph.tracing as trace_mod
from summarylib.graph import GraphBuilder, Module, NodeStats, TensorSpec
from summarylib.graph.writers import step_stats_bytes
from tests.helpers import only_file, tb_events


@pytest.fixture(autouse=True)
def no_trace_left() -> Iterator[None]:
    sg.trace_off()
    yield
    sg.trace_off()


def small_graph(prefix: str = "") -> sg.Graph:
    b = GraphBuilder(device="/device:CPU:0")
    with b.name_scope(prefix or None):
        x = b.placeholder((None, 3), "float32", name="x")
        w = b.const(TensorSpec((3, 4), "float32"), name="w")
        init = b.no_op("init")
        with b.control_dependencies([init]):
            b.op("MatMul", [x, w], outputs=TensorSpec((None, 4), "float32"))
    return b.graph


def raw_events(path: Path) -> list[Any]:
    """Events as written (TensorBoard's EventFileLoader would migrate them to rank 1)."""
    from tensorboard.backend.event_processing import event_file_loader

    return list(event_file_loader.LegacyEventFileLoader(str(path)).Load())


def graph_values(logdir: Path) -> list[tuple[int, str, str, bytes, Any]]:
    """(step, tag, plugin, content, RunMetadata) of every graph summary in the run."""
    out = []
    for ev in raw_events(only_file(logdir)):
        for v in ev.summary.value:
            arr = tensor_util.make_ndarray(v.tensor)
            assert arr.shape == () and v.tensor.dtype == 7  # rank-0 DT_STRING
            rm = config_pb2.RunMetadata.FromString(arr.item())
            pd = v.metadata.plugin_data
            out.append((ev.step, v.tag, pd.plugin_name, pd.content, rm))
    return out


def test_write_graph_accepts_graph_graphdef_and_bytes(logdir: Path) -> None:
    g = small_graph()
    with sl.create_file_writer(logdir).as_default():
        assert sg.write_graph(g)
        assert sg.write_graph(g.to_graph_def(), step=5)
        assert sl.write_graph(g.to_bytes())  # the top-level name
        with pytest.raises(TypeError, match="write_graph: 'graph' must be a summarylib"):
            sg.write_graph("not a graph")
    events = [e for e in tb_events(only_file(logdir)) if e.HasField("graph_def")]
    assert [e.step for e in events] == [0, 5, 0]
    for e in events:
        gd = graph_pb2.GraphDef.FromString(e.graph_def)
        assert [n.name for n in gd.node] == ["x", "w", "init", "MatMul"]
        assert list(gd.node[3].input) == ["x", "w", "^init"]


def test_write_graph_records_nothing_without_writer_or_condition(logdir: Path) -> None:
    assert sg.write_graph(small_graph()) is False
    with sl.create_file_writer(logdir).as_default(), sl.record_if(False):
        assert sg.write_graph(small_graph()) is False
    assert not [e for e in tb_events(only_file(logdir)) if e.HasField("graph_def")]


def test_trace_export_writes_one_function_graph_per_tag(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=7):
        sg.trace_on()
        assert sg.is_tracing() and not sg.profiler_enabled()
        assert sg.record_graph(small_graph("first"))
        assert sg.record_graph(small_graph("second"))
        assert sg.record_graph(small_graph("third"), [NodeStats("third/MatMul", 1, 2)])
        with sl.name_scope("model"):
            assert sg.trace_export("fwd") is True
    assert not sg.is_tracing()
    values = graph_values(logdir)
    assert [(s, t, p, c) for s, t, p, c, _ in values] == [
        (7, "model/fwd", "graph_run_metadata_graph", b"1"),
        (7, "model/fwd_1", "graph_run_metadata_graph", b"1"),
        (7, "model/fwd_2", "graph_run_metadata_graph", b"1"),
    ]
    for (*_, rm), prefix in zip(values, ["first", "second", "third"], strict=True):
        assert not rm.HasField("step_stats")  # graph only: no profile even if given
        assert len(rm.function_graphs) == 1 and not rm.partition_graphs
        gd = rm.function_graphs[0].pre_optimization_graph
        assert [n.name for n in gd.node][-1] == f"{prefix}/MatMul"
        assert list(gd.node[-1].input) == [f"{prefix}/x", f"{prefix}/w", f"^{prefix}/init"]


def test_trace_export_with_profiler_writes_step_stats(logdir: Path) -> None:
    g = small_graph()
    stats = [
        NodeStats("MatMul", 1_700_000_000_000_000, 120, output_bytes=64),
        NodeStats(
            "x",
            1_700_000_000_000_100,
            5,
            device="/device:CUDA:0",
            outputs=[TensorSpec((2, 3), "float32")],
        ),
    ]
    with sl.create_file_writer(logdir).as_default():
        sg.trace_on(graph=True, profiler=True)
        assert sg.profiler_enabled()
        assert sg.record_graph(g, stats)
        assert sg.trace_export("prof", step=3)
    [(step, tag, plugin, content, rm)] = graph_values(logdir)
    assert (step, tag, plugin, content) == (3, "prof", "graph_run_metadata", b"1")
    assert len(rm.function_graphs) == 1
    devs = {d.device: list(d.node_stats) for d in rm.step_stats.dev_stats}
    [mm] = devs["/device:CPU:0"]
    assert (mm.node_name, mm.all_start_micros, mm.all_end_rel_micros) == (
        "MatMul",
        1_700_000_000_000_000,
        120,
    )
    assert mm.memory[0].total_bytes == 64
    assert [d.size for d in mm.output[0].tensor_description.shape.dim] == [-1, 4]
    [x] = devs["/device:CUDA:0"]
    assert [d.size for d in x.output[0].tensor_description.shape.dim] == [2, 3]
    assert x.output[0].tensor_description.allocation_description.requested_bytes == 24


def test_profiler_without_graph_and_without_stats(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=1):
        sg.trace_on(graph=False, profiler=True)
        sg.record_graph(small_graph())
        with pytest.warns(RuntimeWarning, match="without node stats"):
            assert sg.trace_export("p")
    [(*_, plugin, _content, rm)] = graph_values(logdir)
    assert plugin == "graph_run_metadata"
    assert not rm.function_graphs and rm.HasField("step_stats")


def test_trace_semantics_follow_tf_summary(logdir: Path) -> None:
    with pytest.raises(ValueError, match="trace_export: no trace is on; call trace_on"):
        sg.trace_export("x", step=0)
    assert sg.record_graph(small_graph()) is False  # nothing to record into
    sg.trace_on(graph=True, profiler=False)
    with pytest.warns(RuntimeWarning, match="a trace is already on"):
        sg.trace_on(profiler=True)
    assert not sg.profiler_enabled()  # the second call changed nothing
    sg.record_graph(small_graph())
    with sl.create_file_writer(logdir).as_default():
        with pytest.raises(ValueError, match="trace_export: no step"):
            sg.trace_export("x")
        assert sg.is_tracing()  # an export that raised keeps the trace and its graphs
        with pytest.raises(TypeError, match="trace_export: 'name' must be a str"):
            sg.trace_export(3)  # type: ignore[arg-type]
        assert sg.trace_export("x", step=2)
    assert [t for _, t, *_ in graph_values(logdir)] == ["x"]
    sg.trace_off()
    sg.trace_off()  # harmless when off


def test_trace_export_without_writer_ends_the_trace(logdir: Path) -> None:
    sg.trace_on()
    sg.record_graph(small_graph())
    assert sg.trace_export("x") is False  # no default writer: no step needed either
    assert not sg.is_tracing()
    with sl.create_file_writer(logdir).as_default(step=0), sl.record_if(False):
        sg.trace_on()
        sg.record_graph(small_graph())
        assert sg.trace_export("x") is False
    assert not sg.is_tracing()


def test_trace_export_with_no_graph_warns(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0):
        sg.trace_on()
        with pytest.warns(RuntimeWarning, match="no graph was captured"):
            assert sg.trace_export("empty") is False
    assert graph_values(logdir) == []


def test_trace_off_drops_recorded_graphs(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0):
        sg.trace_on()
        sg.record_graph(small_graph("old"))
        sg.trace_off()
        sg.trace_on()
        sg.record_graph(small_graph("new"))
        sg.trace_export("t")
    [(*_, rm)] = graph_values(logdir)
    assert rm.function_graphs[0].pre_optimization_graph.node[0].name == "new/x"


def test_record_graph_snapshots_and_validates() -> None:
    sg.trace_on()
    g = small_graph()
    sg.record_graph(g)
    g.add(sg.Node("late", "X"))  # not seen: the graph was converted when recorded
    [(data, _)] = trace_mod._records_for_tests()
    assert "late" not in [n.name for n in graph_pb2.GraphDef.FromString(data).node]
    with pytest.raises(TypeError, match="record_graph: 'graph' must be a Graph"):
        sg.record_graph(cast(Any, g.to_graph_def()))
    bad = sg.Graph([sg.Node("n", "X", attrs={"a": object()})])
    with pytest.raises(TypeError, match="node 'n': attr 'a'"):
        sg.record_graph(bad)
    assert len(list(trace_mod._records_for_tests())) == 1


def test_trace_argument_checks() -> None:
    with pytest.raises(TypeError, match="trace_on: 'graph' must be a bool"):
        sg.trace_on(graph=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="trace_on: 'profiler' must be a bool"):
        sg.trace_on(profiler="yes")  # type: ignore[arg-type]
    assert not sg.is_tracing()
    with pytest.warns(UserWarning, match="'profiler_outdir' is not used"):
        sg.trace_on(profiler=True, profiler_outdir="/tmp/x")


@pytest.mark.parametrize(
    ("stats", "match"),
    [
        ([NodeStats("", 0, 0)], "node_name must be a non-empty str"),
        ([NodeStats("a", -1, 0)], "start_micros of 'a' must be an int >= 0"),
        ([NodeStats("a", 0, 1.5)], "duration_micros"),  # type: ignore[arg-type]
        (["a"], "expected NodeStats records, got str"),
    ],
)
def test_bad_node_stats_raise(stats: list[Any], match: str) -> None:
    sg.trace_on(profiler=True)
    with pytest.raises((TypeError, ValueError), match=match):
        sg.record_graph(small_graph(), stats)
    assert list(trace_mod._records_for_tests()) == []


@settings(max_examples=60)
@given(
    st.lists(
        st.builds(
            NodeStats,
            st.sampled_from(["a", "b/c", "x"]),
            st.integers(0, 2**62),
            st.integers(0, 2**40),
            st.integers(0, 2**40),
            st.one_of(
                st.none(),
                st.lists(
                    st.builds(
                        TensorSpec,
                        st.one_of(
                            st.none(),
                            st.lists(st.one_of(st.none(), st.integers(0, 99)), max_size=3).map(
                                tuple
                            ),
                        ),
                        st.sampled_from([None, "float32", "int8", "bool"]),
                    ),
                    max_size=2,
                ),
            ),
            st.sampled_from([None, "/device:CPU:0", "/device:CUDA:0"]),
        ),
        max_size=6,
    )
)
def test_step_stats_bytes_equal_protobuf(stats: list[NodeStats]) -> None:
    # Built independently with TensorBoard's protos, field by field.
    ref = step_stats_pb2.StepStats()
    devs: dict[str, Any] = {}
    sizes = {"float32": 4, "int8": 1, "bool": 1}
    enums = {"float32": 1, "int8": 6, "bool": 10}
    for s in stats:
        dev = s.device or "/device:CPU:0"
        if dev not in devs:
            devs[dev] = ref.dev_stats.add(device=dev)
        ns = devs[dev].node_stats.add(node_name=s.node_name, all_start_micros=s.start_micros)
        ns.op_end_rel_micros = ns.all_end_rel_micros = s.duration_micros
        if s.output_bytes:
            ns.memory.add(
                allocator_name="cpu", total_bytes=s.output_bytes, peak_bytes=s.output_bytes
            )
        for slot, spec in enumerate(s.outputs or []):
            out = ns.output.add(slot=slot)
            td = out.tensor_description
            td.dtype = enums.get(spec.dtype or "", 0)
            td.shape.SetInParent()
            if spec.shape is None:
                td.shape.unknown_rank = True
            else:
                for d in spec.shape:
                    td.shape.dim.add(size=-1 if d is None else d)
                if spec.dtype and None not in spec.shape:
                    n = sizes[spec.dtype]
                    for d in spec.shape:
                        n *= d  # type: ignore[operator]
                    if n:
                        td.allocation_description.requested_bytes = n
                        td.allocation_description.allocated_bytes = n
    assert step_stats_bytes(stats) == ref.SerializeToString()


def test_write_run_metadata_is_tagged_run_metadata(logdir: Path) -> None:
    g = small_graph()
    with sl.create_file_writer(logdir).as_default(step=4), sl.name_scope("ignored"):
        assert sg.write_graph(g)
        assert sg.write_run_metadata("step4", [NodeStats("MatMul", 10, 5)], graph=g)
    assert sg.write_run_metadata("x", []) is False
    [ev] = [e for e in raw_events(only_file(logdir)) if e.HasField("tagged_run_metadata")]
    assert ev.step == 4 and ev.tagged_run_metadata.tag == "step4"
    rm = config_pb2.RunMetadata.FromString(ev.tagged_run_metadata.run_metadata)
    [ns] = rm.step_stats.dev_stats[0].node_stats
    assert ns.node_name == "MatMul" and len(ns.output) == 1


# --- conceptual graph -------------------------------------------------------------------


def served(tree: Any) -> list[tuple[str, list[str], str]]:
    """What TensorBoard's server makes of our JSON: (name, inputs, keras_class)."""
    gd = keras_util.keras_model_to_graph_def(json.loads(sg.keras_json(tree)))
    return [(n.name, list(n.input), n.attr["keras_class"].s.decode()) for n in gd.node]


def test_conceptual_sequential_tree() -> None:
    tree = Module(
        "Net",
        "Net",
        [
            Module("conv", "Conv2d"),
            Module("block", "Sequential", [Module("0", "Linear"), Module("1", "ReLU")]),
            Module("head", "Linear"),
        ],
    )
    assert served(tree) == [
        ("Net/conv", [], "Conv2d"),
        ("Net/block/0", ["Net/conv"], "Linear"),
        ("Net/block/1", ["Net/block/0"], "ReLU"),
        ("Net/head", ["Net/block/1"], "Linear"),
    ]


def test_conceptual_functional_tree_with_branches_and_nesting() -> None:
    tree = {
        "name": "ResNet",
        "class_name": "ResNet",
        "children": [
            {"name": "stem", "class_name": "Conv2d"},
            {
                "name": "block",
                "class_name": "BasicBlock",
                "inputs": ["stem"],
                "children": [
                    {"name": "conv1", "class_name": "Conv2d"},
                    {"name": "conv2", "class_name": "Conv2d"},
                    {"name": "add", "class_name": "Add", "inputs": ["conv2", sg.PARENT_INPUT]},
                ],
            },
            {
                "name": "split",
                "class_name": "Split",
                "outputs": ["a", "b"],
                "inputs": ["block"],
                "children": [
                    {"name": "a", "class_name": "Identity", "inputs": [sg.PARENT_INPUT]},
                    {"name": "b", "class_name": "Identity", "inputs": [sg.PARENT_INPUT]},
                ],
            },
            {
                "name": "cat",
                "class_name": "Cat",
                "inputs": ["split:1", "split:0", "stem"],
                "dtype": "bfloat16",
            },
        ],
    }
    assert served(tree) == [
        ("ResNet/input", [], "InputLayer"),
        ("ResNet/stem", ["ResNet/input"], "Conv2d"),
        ("ResNet/block/input", ["ResNet/stem"], "InputLayer"),
        ("ResNet/block/conv1", ["ResNet/block/input"], "Conv2d"),
        ("ResNet/block/conv2", ["ResNet/block/conv1"], "Conv2d"),
        ("ResNet/block/add", ["ResNet/block/conv2", "ResNet/block/input"], "Add"),
        ("ResNet/split/input", ["ResNet/block/add"], "InputLayer"),
        ("ResNet/split/a", ["ResNet/split/input"], "Identity"),
        ("ResNet/split/b", ["ResNet/split/input"], "Identity"),
        ("ResNet/cat", ["ResNet/split/b", "ResNet/split/a", "ResNet/stem"], "Cat"),
    ]
    gd = keras_util.keras_model_to_graph_def(json.loads(sg.keras_json(tree)))
    assert gd.node[-1].attr["dtype"].type == 14  # DT_BFLOAT16


def test_conceptual_single_layer_and_writer(logdir: Path) -> None:
    assert served(Module("fc", "Linear")) == [("fc/fc", [], "Linear")]
    with sl.create_file_writer(logdir).as_default():
        assert sg.write_conceptual_graph(Module("fc", "Linear"))
        assert sg.write_conceptual_graph(Module("fc", "Linear"), name="model", step=3)
    vals = [
        (
            e.step,
            v.tag,
            v.metadata.plugin_data.plugin_name,
            v.metadata.plugin_data.content,
            tensor_util.make_ndarray(v.tensor).item(),
        )
        for e in raw_events(only_file(logdir))
        for v in e.summary.value
    ]
    assert [v[:4] for v in vals] == [
        (0, "keras", "graph_keras_model", b"1"),
        (3, "model", "graph_keras_model", b"1"),
    ]
    assert json.loads(vals[0][4])["config"]["layers"][0]["class_name"] == "Linear"
    assert sg.write_conceptual_graph(Module("fc", "Linear")) is False  # no writer now


@pytest.mark.parametrize(
    ("tree", "error", "match"),
    [
        (3, TypeError, "expected a Module or a mapping, got int"),
        ({"name": "a"}, ValueError, "lacks key 'class_name'"),
        ({"name": "a", "class_name": "A", "kids": []}, ValueError, "unknown keys \\['kids'\\]"),
        (Module("a/b", "A"), ValueError, "without '/'"),
        (Module("a", ""), ValueError, "non-empty class_name"),
        (Module("a", "A", dtype="float99"), ValueError, "unknown dtype 'float99'"),
        (Module("a", "A", [Module("x", "X"), Module("x", "Y")]), ValueError, "duplicate names"),
        (Module("a", "A", [Module("x", "X", inputs=["nope"])]), ValueError, "not a sibling"),
        (Module("a", "A", [Module("input", "X", inputs=[])]), ValueError, "InputLayer"),
        (Module("a", "A", [Module("x", "X", inputs=[])], outputs=["y"]), ValueError, "not a child"),
    ],
)
def test_bad_module_trees_raise(tree: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        sg.write_conceptual_graph(tree) if False else sg.keras_json(tree)


# --- capture adapter registry -----------------------------------------------------------


class FakeModel:
    pass


def test_trace_dispatches_to_registered_adapter(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy: adapters register once, when first imported (earlier tests may have).
    monkeypatch.setattr(trace_mod, "_tracers", dict(trace_mod._tracers))
    monkeypatch.setattr(FakeModel, "__module__", "fakefw.nn")
    calls: list[tuple[object, dict[str, Any]]] = []

    def tracer(obj: object, **options: Any) -> Any:
        calls.append((obj, options))

        def wrapped(*args: Any) -> str:
            if sg.is_tracing():
                sg.record_graph(small_graph("captured"))
            return "out"

        return wrapped

    sg.register_tracer("fakefw", tracer)
    model = FakeModel()
    wrapped = sg.trace(model, level="module")  # the module itself is callable
    assert calls == [(model, {"level": "module"})]
    with sl.create_file_writer(logdir).as_default(step=0):
        sg.trace_on()
        assert wrapped(1) == "out"
        sg.trace_export("model")
    assert graph_values(logdir)[0][1] == "model"
    assert sg.trace(lambda: 0, framework="fakefw") is not None
    # Whichever frameworks are imported: an object of no framework's type that is not
    # callable cannot be traced.
    for loaded in ({}, {"torch": object()}, {"torch": object(), "jax": object()}):
        with monkeypatch.context() as m:
            for name in ("torch", "jax"):
                m.delitem(sys.modules, name, raising=False)
            for name, module in loaded.items():
                m.setitem(sys.modules, name, module)
            with pytest.raises(TypeError, match="cannot tell which framework"):
                sg.trace(object())
    with pytest.raises(ValueError, match="no capture adapter for framework 'nope'"):
        sg.trace(model, framework="nope")
    with pytest.raises(TypeError, match="'tracer' must be callable"):
        sg.register_tracer("x", 3)  # type: ignore[arg-type]


def test_no_warnings_on_the_quiet_path(logdir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with sl.create_file_writer(logdir).as_default(step=0):
            sg.trace_on()
            sg.record_graph(small_graph())
            sg.trace_export("quiet")


def test_gc_paused_restores_the_collector_and_nests() -> None:
    import gc

    from summarylib.graph._gc import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still on
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("conversion failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # was off before: stays off
    finally:
        gc.enable()
