"""JAX capture: ``make_jaxpr`` graphs ready for TensorBoard's graph dashboard.

A jitted MLP with a parameter pytree and ``jax.named_scope`` becomes a graph whose scopes
are the jit function and the named scopes, whose parameters are ``Const`` nodes named by
pytree path, with no dangling inputs, shapes on every non-``Const`` node and a clean lint.
Control flow (cond, scan, while) keeps its bodies in groups; ``trace()`` records once per
trace and never raises for capture problems.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

import summarylib.graph as sg  # noqa: E402
import summarylib.graph.tracing as trace_mod  # noqa: E402
from summarylib.graph import Graph, check  # noqa: E402
from summarylib.graph.adapters import GraphCaptureWarning  # noqa: E402
from summarylib.graph.capturing import capture, trace  # noqa: E402


def dense(p: dict[str, Any], x: Any) -> Any:
    return x @ p["w"] + p["b"]


@jax.jit
def mlp(params: list[dict[str, Any]], x: Any) -> Any:
    with jax.named_scope("encoder"):
        h = jax.nn.relu(dense(params[0], x))
    with jax.named_scope("head"):
        logits = dense(params[1], h)
    return {"logits": logits, "probs": jax.nn.softmax(logits)}


def make_params() -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    return [
        {"w": rng.normal(size=(3, 8)).astype(np.float32), "b": np.zeros(8, np.float32)},
        {"w": rng.normal(size=(8, 4)).astype(np.float32), "b": np.zeros(4, np.float32)},
    ]


@pytest.fixture(scope="module")
def mlp_graph() -> Graph:
    return capture(mlp, (make_params(), jnp.ones((2, 3))), params_argnums=0)


@pytest.fixture(autouse=True)
def no_trace_left() -> Iterator[None]:
    sg.trace_off()
    yield
    sg.trace_off()


def assert_dashboard_ready(g: Graph) -> None:
    names = {n.name for n in g}
    for node in g:
        for inp in node.inputs:
            src, _, slot = inp.rpartition(":")
            assert (src if slot.isdigit() else inp) in names, (node.name, inp)
        assert node.device == "/device:CPU:0"
    for nd in g.to_graph_def().node:
        if nd.op != "Const":
            assert "_output_shapes" in nd.attr, nd.name
    assert [i for i in check(g) if i.severity != "info"] == []
    assert Graph.from_graph_def(g.to_bytes()) == g


def test_mlp_scopes_params_and_shapes(mlp_graph: Graph) -> None:
    g = mlp_graph
    assert_dashboard_ready(g)
    params = [n for n in g if n.op == "Const" and n.attrs.get("kind") == "parameter"]
    assert sorted(n.name for n in params) == ["params/0/b", "params/0/w", "params/1/b",
                                               "params/1/w"]
    assert g["params/0/w"].outputs[0].shape == (3, 8)
    assert "value" not in g["params/0/w"].attrs
    assert g["x"].op == "Placeholder" and g["x"].outputs[0].shape == (2, 3)
    # jit function -> scope, named scopes inside it, relu's custom_jvp -> its own scope.
    dot = g["mlp/encoder/dot_general"]
    assert dot.inputs == ["x", "params/0/w"]
    assert dot.outputs[0].shape == (2, 8) and dot.outputs[0].dtype == "float32"
    assert g["mlp/encoder/relu"].op == "max"
    assert g["mlp/head/dot_general"].inputs[1] == "params/1/w"
    # The literal 0.0 of relu is an embedded Const holding its value.
    zero = g[g["mlp/encoder/relu"].inputs[1]]
    assert zero.op == "Const" and float(zero.attrs["value"]) == 0.0
    # Outputs named by the result's pytree path.
    assert g["output/logits"].op == "Identity"
    assert g["output/probs"].outputs[0].shape == (2, 4)
    assert dot.attrs["preferred_element_type"] == sg.DType("float32")


def test_control_flow_bodies_are_scoped() -> None:
    def f(x: Any, n: Any) -> Any:
        y = jax.lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)

        def body(c: Any, xs: Any) -> tuple[Any, Any]:
            return c + xs, c * 2.0

        c, ys = jax.lax.scan(body, jnp.zeros(3), y)
        w = jax.lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 1.5), (0, c))
        return w[1], ys

    g = capture(f, (jnp.ones((4, 3)), 5), framework="jax")
    assert_dashboard_ready(g)
    names = {n.name for n in g}
    assert {"cond/cond", "scan/scan", "while/while"} <= names
    assert g["cond/branch_0/sub"].inputs[0] == g["cond/cond"].inputs[1]
    assert "cond/branch_1/mul" in g["cond/cond"].inputs  # bodies feed their node
    assert len(g["scan/scan"].outputs) == 2
    assert g["output/1"].inputs == ["scan/scan:1"]
    assert any(name.startswith("while/body/") for name in names)
    assert any(name.startswith("while/cond/") for name in names)


def test_closed_over_constants_and_static_arguments() -> None:
    table = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(x: Any, mode: str) -> Any:
        return jnp.tanh(x) * table if mode == "a" else x

    g = capture(f, (jnp.ones((2, 3)), "a"), framework="jax")
    assert_dashboard_ready(g)
    consts = [n for n in g if n.op == "Const"]
    assert any(np.array_equal(n.attrs.get("value"), table) for n in consts)
    assert "mode" not in {n.name for n in g}  # a static argument is no graph input
    assert [n.op for n in g if n.op != "Const"] == ["Placeholder", "tanh", "mul", "Identity"]


def test_multi_output_and_kwargs() -> None:
    def f(x: Any, *, scale: Any) -> Any:
        top, idx = jax.lax.top_k(x * scale, 2)
        return idx, top

    g = capture(f, (jnp.ones((3, 5)),), {"scale": jnp.float32(2.0)}, framework="jax")
    assert_dashboard_ready(g)
    assert g["scale"].op == "Placeholder" and g["scale"].outputs[0].shape == ()
    topk = g["top_k"]
    assert [s.dtype for s in topk.outputs] == ["float32", "int32"]
    assert g["output/0"].inputs == ["top_k:1"] and g["output/1"].inputs == ["top_k"]


def test_root_names_follow_tensorflows_rule() -> None:
    # An argument named "_" and a pytree key of punctuation would give root-level names
    # starting with "_", which TensorFlow's node-name rule (and lint) reject.
    def f(_: Any, x: Any) -> Any:
        return x["?"] * _

    g = capture(f, (jnp.ones(3), {"?": jnp.ones(3)}), framework="jax")
    assert_dashboard_ready(g)
    assert g["n_"].op == "Placeholder"
    assert g["x/_"].op == "Placeholder"  # inside a scope a leading "_" is allowed
    assert g["mul"].inputs == ["x/_", "n_"]


def _spec_bytes(node: Any) -> int:
    return sum(int(np.prod(s.shape)) * np.dtype(s.dtype).itemsize for s in node.outputs)


def test_trace_with_profiler_times_every_equation_node() -> None:
    from summarylib.proto import step_stats_pb2

    def f(x: Any, n: Any) -> Any:
        y = jax.lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
        w = jax.lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 1.5), (0, y))
        return mlp(make_params(), w[1][:2])

    traced = trace(f)
    sg.trace_on(profiler=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "profile is empty" warning any more
        out = traced(jnp.ones((4, 3)), 5)
        (gbytes, sbytes), = trace_mod._records_for_tests()
    assert out["probs"].shape == (2, 4)
    g = Graph.from_graph_def(gbytes)
    stats = step_stats_pb2.StepStats.FromString(sbytes)
    (dev,) = stats.dev_stats
    assert dev.device == "/device:CPU:0"
    by_name = {ns.node_name: ns for ns in dev.node_stats}
    assert len(by_name) == len(dev.node_stats)  # one entry per node
    # Every equation node is timed, inlined jit/custom_jvp bodies op by op; the bodies of
    # cond/while are timed as their node.
    bodies = ("cond/branch_", "while/cond/", "while/body/")
    timed = {n.name for n in g if n.op not in ("Const", "Placeholder", "Identity")
             and not n.name.startswith(bodies)}
    assert set(by_name) == timed
    assert {"cond/cond", "while/while", "mlp/encoder/relu", "mlp/head/dot_general"} <= timed
    for name, ns in by_name.items():
        assert ns.memory[0].total_bytes == _spec_bytes(g[name]), name
        assert ns.all_start_micros > 1_600_000_000_000_000
    assert by_name["while/while"].memory[0].total_bytes == 4 + 4 * 3 * 4  # (int32, f32[4,3])
    starts = [ns.all_start_micros for ns in dev.node_stats]
    assert starts == sorted(starts)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="'params_argnums' entry 3"):
        capture(mlp, (make_params(), jnp.ones((2, 3))), params_argnums=3)
    with pytest.raises(TypeError, match="'example_kwargs' must be a dict"):
        capture(mlp, (make_params(), jnp.ones((2, 3))), [1], framework="jax")


def test_trace_records_once_per_trace_and_returns_results() -> None:
    params, x = make_params(), jnp.ones((2, 3))
    traced = trace(mlp, params_argnums=0)
    expected = mlp(params, x)
    sg.trace_on()
    out = traced(params, x)
    traced(params, x)
    records = list(trace_mod._records_for_tests())
    sg.trace_off()
    assert np.array_equal(out["logits"], expected["logits"])
    assert len(records) == 1
    g = Graph.from_graph_def(records[0][0])
    assert g["params/0/w"].op == "Const"
    sg.trace_on()
    traced(params, x)
    assert len(list(trace_mod._records_for_tests())) == 1


def test_trace_failure_only_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    import summarylib.graph.adapters.jax as jax_adapter

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("jaxpr changed")

    monkeypatch.setattr(jax_adapter, "capture_jax", boom)
    traced = trace(mlp)
    params, x = make_params(), jnp.ones((2, 3))
    sg.trace_on()
    with pytest.warns(GraphCaptureWarning, match="was not recorded: RuntimeError: jaxpr changed"):
        out = traced(params, x)
    assert out["probs"].shape == (2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced(params, x)


def test_public_trace_of_a_plain_function_decides_at_the_first_call() -> None:
    torch = pytest.importorskip("torch")
    assert "torch" in __import__("sys").modules and "jax" in __import__("sys").modules

    def step(x: Any) -> Any:  # nothing in its type says torch or jax
        return (x * 2.0).sum()

    traced = sg.trace(step)  # used to raise TypeError with both frameworks imported
    assert traced.__wrapped__ is step
    sg.trace_on()
    assert float(traced(jnp.ones(3))) == 6.0
    (jax_graph, _), = trace_mod._records_for_tests()
    sg.trace_off()
    assert [n.op for n in Graph.from_graph_def(jax_graph)] == [
        "Placeholder", "Const", "mul", "reduce_sum", "Identity"]
    other = sg.trace(step)
    sg.trace_on()
    assert float(other(torch.ones(3))) == 6.0
    (torch_graph, _), = trace_mod._records_for_tests()
    sg.trace_off()
    assert [n.op for n in Graph.from_graph_def(torch_graph)] == [
        "Placeholder", "aten::mul", "aten::sum", "Identity"]
    # Arguments that tell nothing: the call still returns, with a warning, nothing recorded.
    sg.trace_on()
    with pytest.warns(GraphCaptureWarning, match="cannot tell which framework"):
        assert sg.trace(lambda v: v * 2.0)(1.5) == 3.0
    assert list(trace_mod._records_for_tests()) == []


def test_registered_tracer_and_framework_detection() -> None:
    g = capture(mlp, (make_params(), jnp.ones((2, 3))))  # jitted: detected as jax
    assert g["x"].op == "Placeholder"
    wrapped = sg.trace(mlp, framework="jax")
    sg.trace_on()
    wrapped(make_params(), jnp.ones((2, 3)))
    assert len(list(trace_mod._records_for_tests())) == 1
