"""Summary ops inside compiled JAX code: written each time the code executes.

Checked with summarylib's reader and TensorBoard's EventAccumulator: values equal each
execution's, steps and order, loop bodies (one event per executed iteration), a traced
``record_if`` without retracing, the writer in effect at the call, and the histogram of
a compiled call equal to the host path's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.reader import iter_summary_values, read_scalars

jax = pytest.importorskip("jax", reason="needs JAX (pip install jax[cpu])")
jnp = jax.numpy
from summarylib.integrations.jax import jit  # noqa: E402


def _series(logdir: Path, tag: str) -> list[tuple[int, float]]:
    runs = read_scalars(logdir)
    return [(s, v) for s, _, v in runs.get(".", {}).get(tag, [])]


def _histograms(logdir: Path, tag: str) -> list[tuple[int, np.ndarray]]:
    from tensorboard.util import tensor_util

    out = []
    for event, value in iter_summary_values(logdir):
        if value.tag == tag:
            out.append((event.step, tensor_util.make_ndarray(value.tensor)))
    return out


@pytest.mark.parametrize("route", ["collected", "callback"])
def test_values_steps_and_order_of_each_execution(tmp_path: Path, route: str) -> None:
    traces = []

    def step_fn(x: Any, i: Any) -> Any:
        traces.append(1)
        y = x * 2.0
        sl.scalar("loss", jnp.mean(y), step=i)
        with sl.name_scope("train"):
            sl.scalar("max", jnp.max(y), step=i)
        return y

    fn = jit(step_fn) if route == "collected" else jax.jit(step_fn)
    x = jnp.arange(4, dtype=jnp.float32)
    expected_loss, expected_max = [], []
    writer = sl.create_file_writer(str(tmp_path))
    with writer.as_default():
        for i in range(6):
            y = np.asarray(x) * 2.0
            expected_loss.append((i, float(np.float32(y.mean()))))
            expected_max.append((i, float(y.max())))
            x = fn(x, i)  # a Python int argument is traced: no retrace as i advances
    writer.close()
    assert len(traces) == 1
    assert _series(tmp_path, "loss") == expected_loss
    assert _series(tmp_path, "train/max") == expected_max
    # TensorBoard's own loader sees the same series.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert [e.step for e in acc.Tensors("loss")] == list(range(6))


def test_loop_bodies_write_one_event_per_executed_iteration(tmp_path: Path) -> None:
    @jax.jit
    def run(x: Any, base: Any) -> Any:
        def scan_body(c: Any, j: Any) -> Any:
            sl.scalar("scan", c, step=base * 10 + j)
            return c + 1.0, None

        c, _ = jax.lax.scan(scan_body, x, jnp.arange(3))

        def fori_body(j: Any, c: Any) -> Any:
            sl.scalar("fori", c * 2.0, step=base * 10 + j)
            return c + 1.0

        c = jax.lax.fori_loop(0, 2, fori_body, c)
        jax.lax.cond(base % 2 == 0, lambda v: sl.scalar("even", v, step=base) and None,
                     lambda v: None, c)
        return c

    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        run(jnp.float32(0.0), 1)
        run(jnp.float32(100.0), 2)
    assert _series(tmp_path, "scan") == [(10, 0.0), (11, 1.0), (12, 2.0),
                                         (20, 100.0), (21, 101.0), (22, 102.0)]
    assert _series(tmp_path, "fori") == [(10, 6.0), (11, 8.0), (20, 206.0), (21, 208.0)]
    assert _series(tmp_path, "even") == [(2, 105.0)]


def test_the_writer_is_the_default_when_called_not_when_traced(tmp_path: Path) -> None:
    traced = []

    @jit
    def fn(x: Any, i: Any) -> Any:
        traced.append(1)
        sl.scalar("v", x, step=i)
        return x + 1.0

    x = jnp.float32(1.0)
    x = fn(x, 0)  # traced and called with no default writer: nothing written
    a, b = tmp_path / "a", tmp_path / "b"
    wa = sl.create_file_writer(str(a))
    wb = sl.create_file_writer(str(b))
    with wa.as_default():
        x = fn(x, 1)
    with wb.as_default():
        x = fn(x, 2)
    x = fn(x, 3)  # no writer again: nothing
    wa.close()
    wb.close()
    assert _series(a, "v") == [(1, 2.0)]
    assert _series(b, "v") == [(2, 3.0)]
    assert len(traced) == 2  # one variant without summaries, one with: no retrace per writer


def test_default_step_is_the_one_at_the_call(tmp_path: Path) -> None:
    @jit
    def fn(x: Any) -> Any:
        sl.scalar("v", x)
        return x + 1.0

    x = jnp.float32(0.0)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in (5, 7, 9):
            sl.set_step(i)
            x = fn(x)
    assert _series(tmp_path, "v") == [(5, 0.0), (7, 1.0), (9, 2.0)]


@pytest.mark.parametrize("route", ["collected", "callback"])
def test_traced_record_if_gates_without_retrace(tmp_path: Path, route: str) -> None:
    traces = []

    def step_fn(x: Any, i: Any) -> Any:
        traces.append(1)
        sl.scalar("every_step", x, step=i)
        with sl.record_if(i % 3 == 0):
            sl.scalar("every_3", x * 10.0, step=i)
            sl.histogram("h", jnp.full((8,), x), step=i)
        return x + 1.0

    fn = jit(step_fn) if route == "collected" else jax.jit(step_fn)
    x = jnp.float32(0.0)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(8):
            x = fn(x, i)
    assert len(traces) == 1
    assert [s for s, _ in _series(tmp_path, "every_step")] == list(range(8))
    assert _series(tmp_path, "every_3") == [(0, 0.0), (3, 30.0), (6, 60.0)]
    assert [s for s, _ in _histograms(tmp_path, "h")] == [0, 3, 6]
    # A later event of the tag still carries its metadata only once (the gated-off ones
    # never marked it written): TensorBoard files it as a histogram.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert "h" in acc.Tags()["tensors"]
    assert acc.summary_metadata["h"].plugin_data.plugin_name == "histograms"


def test_no_default_writer_computes_nothing_for_summaries(tmp_path: Path) -> None:
    @jit
    def fn(x: Any) -> Any:
        sl.histogram("h", jnp.sort(x), step=0)
        return x + 1.0

    with sl.create_file_writer(str(tmp_path / "w")) as w, w.as_default():
        assert "sort" in fn.lower(jnp.ones(16)).as_text()  # the variant with summaries
    assert "sort" not in fn.lower(jnp.ones(16)).as_text()  # the one a call without runs
    (tmp_path / "w").rename(tmp_path.parent / (tmp_path.name + "-w"))
    out = fn(jnp.ones(16))  # no writer: runs the variant without them
    assert np.allclose(np.asarray(out), 2.0)
    assert not list(tmp_path.iterdir())


def test_transformations_and_bad_values_raise_naming_the_op(tmp_path: Path) -> None:
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        with pytest.raises(TypeError, match=r"histogram: .*'w'.*jax.vmap"):
            jax.vmap(lambda v: sl.histogram("w", v, step=0) and v)(jnp.ones((2, 3)))
        with pytest.raises(TypeError, match=r"scalar: .*jax.vmap"):
            jax.vmap(jax.grad(lambda v: (sl.scalar("g", v, step=0), v * v)[1]))(jnp.ones(2))
        bad = jit(lambda v: sl.scalar("loss", v, step=0) and v)
        with pytest.raises((TypeError, ValueError), match=r"scalar"):
            bad(jnp.ones(3))


@settings(max_examples=15)
@given(
    data=st.lists(
        st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=64, max_size=64
    ),
    buckets=st.integers(1, 40),
)
# 0.5 lies on an edge only in the host's arithmetic: (hi - lo) / 10, not (hi - lo) * 0.1.
@example(data=[0.0, 1e6, 0.5, -999999.0] + [0.0] * 60, buckets=10)
def test_compiled_histogram_equals_the_host_path(tmp_path_factory: Any, data: list[float],
                                                  buckets: int) -> None:
    d = tmp_path_factory.mktemp("h")
    arr = np.asarray(data, dtype=np.float32)
    fn = _histogram_fn(buckets)
    with sl.create_file_writer(str(d / "compiled")) as w, w.as_default():
        fn(jnp.asarray(arr))
    with sl.create_file_writer(str(d / "host")) as w, w.as_default():
        sl.histogram("h", arr, step=0, buckets=buckets)
    (step_c, compiled), = _histograms(d / "compiled", "h")
    (_, host), = _histograms(d / "host", "h")
    assert step_c == 0
    np.testing.assert_array_equal(compiled, host)


_HIST_FNS: dict[int, Any] = {}


def _histogram_fn(buckets: int) -> Any:
    if buckets not in _HIST_FNS:
        @jit
        def fn(x: Any) -> Any:
            sl.histogram("h", x, step=0, buckets=buckets)
            return x

        _HIST_FNS[buckets] = fn
    return _HIST_FNS[buckets]



def test_values_that_are_arguments_are_written_as_given(tmp_path: Path) -> None:
    # A step or value logged as it was passed in: a host number at the call is written
    # as that number (no device value), a device array as its value, positional or by
    # keyword, and the values computed in the function still come from the execution.
    @jit
    def fn(x: Any, step: Any, lr: Any = 0.0) -> Any:
        sl.scalar("lr", lr, step=step)
        sl.scalar("mean", jnp.mean(x), step=step)
        return x + 1

    x = jnp.zeros(3)
    calls = [(0, 0.5), (np.int64(1), np.float32(0.25)), (jnp.asarray(2), jnp.asarray(0.125)),
             (3, 0.0625)]
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i, (step, lr) in enumerate(calls):
            x = fn(x, step, lr=lr) if i % 2 else fn(x, step, lr)
    assert _series(tmp_path, "lr") == [(0, 0.5), (1, 0.25), (2, 0.125), (3, 0.0625)]
    assert _series(tmp_path, "mean") == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0)]


def test_callbacks_write_subnormal_values_as_the_eager_call(tmp_path: Path) -> None:
    # A callback runs where XLA's CPU arithmetic flushes subnormal floats to zero: the
    # values are converted on an ordinary thread, so 1e-40 is written as 1e-40.
    @jax.jit
    def fn(x: Any, step: Any) -> Any:
        sl.scalar("tiny", x[0], step=step)
        sl.scalar("reduced", x[0], step=step, reduce="max")
        return x

    values = np.array([1e-40, 1.0], np.float32)
    with sl.create_file_writer(str(tmp_path / "compiled")) as w, w.as_default():
        fn(jnp.asarray(values), 1)
    with sl.create_file_writer(str(tmp_path / "eager")) as w, w.as_default():
        sl.scalar("tiny", values[0], step=1)
        sl.scalar("reduced", values[0], step=1)
    for tag in ("tiny", "reduced"):
        got, want = _series(tmp_path / "compiled", tag), _series(tmp_path / "eager", tag)
        assert got == want and got[0][1] != 0.0, (tag, got, want)


def _video_and_mesh(v: Any, m: Any, i: Any) -> Any:
    sl.video("clip", v, step=i, fps=3)
    sl.mesh("shape", m, faces=jnp.zeros((1, 2, 3), jnp.int32) + i % 2,
            colors=(m * 255).astype(jnp.uint8), step=i, config_dict={"a": 1})
    return v


def _value_bytes(logdir: Path) -> list[tuple[int, str, bytes]]:
    return [(e.step, v.tag, v.SerializeToString()) for e, v in iter_summary_values(logdir)]


@pytest.mark.parametrize("route", ["collected", "callback"])
def test_video_and_mesh_write_each_execution_as_the_eager_calls(tmp_path: Path,
                                                               route: str) -> None:
    rng = np.random.default_rng(0)
    runs = [(rng.random((2, 3, 4, 5, 3), np.float32), rng.random((1, 6, 3), np.float32))
            for _ in range(3)]
    with sl.create_file_writer(str(tmp_path / "eager")) as w, w.as_default():
        for i, (v, m) in enumerate(runs):
            _video_and_mesh(v, m, i)
    fn = jit(_video_and_mesh) if route == "collected" else jax.jit(_video_and_mesh)
    with sl.create_file_writer(str(tmp_path / "compiled")) as w, w.as_default():
        for i, (v, m) in enumerate(runs):
            fn(jnp.asarray(v), jnp.asarray(m), i)
    want = _value_bytes(tmp_path / "eager")
    assert [(s, t) for s, t, _ in want] == [
        (i, t) for i in range(3) for t in ("clip", "shape_VERTEX", "shape_FACE", "shape_COLOR")]
    assert _value_bytes(tmp_path / "compiled") == want


def test_leaving_as_default_includes_the_callbacks_of_the_block(tmp_path: Path) -> None:
    # TensorFlow's rule: the block's events are in the file when the block is left. On
    # the callback route the ops run on summarylib's thread after the callbacks handed
    # them over (a histogram of millions of values takes a while there); the exit waits
    # for them as flush() does.
    @jax.jit
    def run(x: Any, base: Any) -> Any:
        def body(j: Any, c: Any) -> Any:
            sl.histogram("big", jnp.sin(jnp.arange(2_000_000.0) * c), step=base + j)
            sl.scalar("loop", c, step=base + j)
            sl.scalar("default_step", c)  # the step of the block
            return c + 1.0
        return jax.lax.fori_loop(0, 2, body, x)

    for k in range(2):
        logdir = tmp_path / str(k)
        writer = sl.create_file_writer(str(logdir))
        with writer.as_default(step=100 + k):
            run(jnp.float32(1.0), 10 * k)
        # Read while the writer is still open: only the block's exit has written.
        assert _series(logdir, "loop") == [(10 * k, 1.0), (10 * k + 1, 2.0)]
        assert [s for s, _ in _histograms(logdir, "big")] == [10 * k, 10 * k + 1]
        assert _series(logdir, "default_step") == [(100 + k, 1.0), (100 + k, 2.0)]
        writer.close()


def test_a_function_of_ours_called_inside_traced_code_is_traced_into_it(
        tmp_path: Path) -> None:
    @jit
    def inner(x: Any, s: Any) -> Any:
        sl.scalar("inner", jnp.sum(x), step=s)
        return x + 1.0

    @jax.jit
    def outer_plain(x: Any, s: Any) -> Any:  # the callback route inside
        return inner(x, s) * 2.0

    @jit
    def outer_ours(x: Any, s: Any) -> Any:  # the fast route inside
        sl.scalar("outer", jnp.max(x), step=s)
        return inner(x, s + 100) * 2.0

    with sl.create_file_writer(str(tmp_path)) as writer, writer.as_default():
        x = jnp.ones(3, jnp.float32)
        expected_inner, expected_outer = [], []
        for i in range(3):
            expected_inner.append((i, float(np.sum(np.asarray(x)))))
            x = outer_plain(x, i)
        for i in range(3):
            expected_outer.append((i, float(np.max(np.asarray(x)))))
            expected_inner.append((i + 100, float(np.sum(np.asarray(x)))))
            x = outer_ours(x, i)
        # Traced but never executed: nothing is written, nothing raises.
        assert jax.eval_shape(inner, x, 7).shape == (3,)
    assert _series(tmp_path, "inner") == expected_inner
    assert _series(tmp_path, "outer") == expected_outer


def test_transformations_of_a_function_of_ours(tmp_path: Path) -> None:
    @jit
    def loss(x: Any, s: Any) -> Any:
        y = jnp.sum(x * x)
        sl.scalar("loss", y, step=s)
        return y

    with sl.create_file_writer(str(tmp_path)) as writer, writer.as_default():
        # Differentiated at the top level the values are concrete: written per call.
        assert np.asarray(jax.grad(loss)(jnp.ones(3), 1)).tolist() == [2.0, 2.0, 2.0]
        value, _ = jax.value_and_grad(loss)(jnp.full(3, 2.0), 2)
        assert float(value) == 12.0
        # Batched: the op's own error, at the call (not a failure of the writer thread
        # later); differentiated inside compiled code: the forward values.
        with pytest.raises(TypeError, match=r"scalar: .*'loss'.*BatchTracer"):
            jax.vmap(loss, in_axes=(0, None))(jnp.ones((2, 3)), 3)
        jax.jit(jax.grad(loss))(jnp.full(3, 3.0), 4)
    assert _series(tmp_path, "loss") == [(1, 3.0), (2, 12.0), (4, 27.0)]


def test_ops_under_differentiation_write_the_forward_values(tmp_path: Path) -> None:
    # As a summary inside tf.GradientTape: logged from the function being differentiated
    # (a loss function's parts), once per evaluation, the gradient unchanged.
    def loss(w: Any, s: Any) -> Any:
        y = jnp.sum(w ** 2)
        sl.scalar("loss", y, step=s)
        sl.histogram("w", w, step=s, buckets=4)
        with sl.record_if(y > 10.0):  # a condition on a differentiated value
            sl.scalar("big", y, step=s)
        return y

    @jit
    def train_step(w: Any, s: Any) -> Any:  # the fast route: values leave as outputs
        _, g = jax.value_and_grad(loss)(w, s)
        return w - 0.1 * g

    ws = {1: np.ones(3), 2: np.full(3, 2.0), 3: np.arange(3.0), 4: np.full(3, 0.5)}
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        g1 = jax.grad(loss)(jnp.asarray(ws[1], jnp.float32), 1)  # at the top level
        g2 = jax.jit(jax.grad(loss))(jnp.asarray(ws[2], jnp.float32), 2)  # callbacks
        after = train_step(jnp.asarray(ws[3], jnp.float32), 3)
        h = jax.hessian(loss)(jnp.asarray(ws[4], jnp.float32), 4)  # one evaluation
    np.testing.assert_allclose(np.asarray(g1), 2 * ws[1])
    np.testing.assert_allclose(np.asarray(g2), 2 * ws[2])
    np.testing.assert_allclose(np.asarray(after), ws[3] - 0.2 * ws[3], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(h), 2 * np.eye(3))
    assert _series(tmp_path, "loss") == [(s, float(np.sum(v ** 2))) for s, v in ws.items()]
    assert _series(tmp_path, "big") == [(2, 12.0)]
    got = _histograms(tmp_path, "w")
    assert [s for s, _ in got] == list(ws)
    host = tmp_path / "host"
    with sl.create_file_writer(str(host)) as w, w.as_default():
        for s, v in ws.items():
            sl.histogram("w", v.astype(np.float32), step=s, buckets=4)
    for (_, table), (_, want) in zip(got, _histograms(host, "w"), strict=True):
        np.testing.assert_array_equal(table, want)


def test_two_threads_tracing_at_once_each_take_the_fast_route(tmp_path: Path) -> None:
    # Each thread records its ops into the function it is tracing: thread A's op comes
    # while thread B is inside its own trace, and B's after A's trace has ended. An op
    # recorded elsewhere would fall back to a host callback (slower: JAX's own callback
    # in the lowered code).
    import threading
    import time

    import jax.numpy as jnp

    a_in, b_in, a_recorded = threading.Event(), threading.Event(), threading.Event()

    @jit
    def a(x: Any) -> Any:
        a_in.set()
        assert b_in.wait(10)
        sl.scalar("a", x.sum(), step=0)
        a_recorded.set()
        return x * 2

    @jit
    def b(x: Any) -> Any:
        b_in.set()
        assert a_recorded.wait(10)
        time.sleep(0.2)  # A leaves its trace meanwhile
        sl.scalar("b", x.sum(), step=0)
        return x * 3

    writer = sl.create_file_writer(tmp_path)
    lowered: dict[str, str] = {}

    def lower(name: str, fn: Any) -> None:
        with writer.as_default():
            lowered[name] = fn.lower(jnp.ones(3)).as_text()

    ta = threading.Thread(target=lower, args=("a", a))
    tb = threading.Thread(target=lower, args=("b", b))
    ta.start()
    assert a_in.wait(10)
    tb.start()
    ta.join(30)
    tb.join(30)
    writer.close()
    assert sorted(lowered) == ["a", "b"]
    assert ["callback" in lowered[n] for n in "ab"] == [False, False]
