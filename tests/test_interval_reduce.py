"""``scalar(..., reduce=...)`` and ``scalar(..., check_finite=True)``: interval reductions
and the non-finite check, computed where the values live, inside compiled code too.

Each written value is compared with numpy's reduction over the interval of calls since
the previous write (the writing call included), on JAX's two routes (our ``jit``'s
collected outputs, plain ``jax.jit``'s callbacks), ``torch.compile`` on three backends
(dynamo's counters: no graph break, one graph) and eager values; the files are read
with summarylib's reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from summarylib.reader import read_scalars

REDUCERS = {"mean": np.mean, "max": np.max, "min": np.min, "sum": np.sum,
            "last": lambda a: a[-1]}
EVERY = 4
STEPS = 11


def _series(logdir: Path, tag: str) -> list[tuple[int, float]]:
    return [(s, v) for s, _, v in read_scalars(logdir).get(".", {}).get(tag, [])]


def _losses() -> np.ndarray:
    # Distinct values whose max, min and last differ in every interval.
    return np.float32(np.sin(np.arange(STEPS) * 1.7) * 3.0 + np.arange(STEPS) * 0.1)


def _expected(losses: np.ndarray, reduce: str) -> list[tuple[int, float]]:
    # Written at the steps where step % EVERY == 0, over the calls since the last write.
    out, start = [], 0
    for i in range(len(losses)):
        if i % EVERY == 0:
            out.append((i, float(np.float32(REDUCERS[reduce](losses[start:i + 1].astype(
                np.float64))))))
            start = i + 1
    return out


def _check(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [s for s, _ in got] == [s for s, _ in want]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-6)


# -- JAX ----------------------------------------------------------------------------------

@pytest.mark.parametrize("route", ["collected", "callback"])
@pytest.mark.parametrize("reduce", list(REDUCERS))
def test_jax_interval_reduction_equals_numpy(tmp_path: Path, route: str, reduce: str) -> None:
    jax = pytest.importorskip("jax", reason="needs JAX")
    jnp = jax.numpy
    from summarylib.integrations.jax import jit

    traces = []

    def step_fn(loss: Any, i: Any) -> Any:
        traces.append(1)
        with sl.record_if(i % EVERY == 0):  # a traced condition
            sl.scalar("loss", loss * 1.0, step=i, reduce=reduce)
        return loss

    fn = jit(step_fn) if route == "collected" else jax.jit(step_fn)
    losses = _losses()
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(STEPS):
            fn(jnp.asarray(losses[i]), i)
    # No retrace as the step and the interval advance. Our jit traces once more on its
    # first call that finds a reduced tag: from then on its accumulator is an argument.
    assert len(traces) == (2 if route == "collected" else 1)
    _check(_series(tmp_path, "loss"), _expected(losses, reduce))


def test_jax_accumulators_are_carried_through_the_compiled_step(tmp_path: Path) -> None:
    # After the first call, the compiled step takes each reduced tag's accumulator and
    # returns it updated (no update dispatched per tag after the call); eager calls of
    # the tag share it; the written values are the interval's.
    jax = pytest.importorskip("jax", reason="needs JAX")
    jnp = jax.numpy
    from summarylib.integrations.jax import jit

    traces = []

    @jit
    def fn(loss: Any, i: Any) -> Any:
        traces.append(1)
        with sl.record_if(i % EVERY == 0):
            sl.scalar("loss", loss, step=i, reduce="mean")
            sl.scalar("peak", loss, step=i, reduce="max")
        return loss + 1.0

    losses = _losses()
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        x = jnp.asarray(losses[0])
        for i in range(STEPS):
            if i == STEPS // 2:  # an eager call in the middle of an interval counts too
                with sl.record_if(False):  # (and does not end it)
                    sl.scalar("loss", jnp.asarray(losses[i]), step=i, reduce="mean")
            fn(jnp.asarray(losses[i]), i)
        after = jax.tree_util.tree_leaves(fn.lower(x, STEPS).out_info)
    assert len(traces) == 2
    # The step's own output, one buffer of the written values (the reduced ones, steps,
    # condition), and two accumulators of three scalars each (total, count, non-finite
    # count), which stay on the device.
    assert [(o.shape, str(o.dtype)) for o in after[2:]] == [
        ((), "float32"), ((), "float32"), ((), "int32")] * 2
    assert len(after) == 8 and str(after[1].dtype) == "uint8"
    expected = _expected(losses, "mean")
    k = STEPS // 2
    # The eager value joins the interval that holds step k (written at its end).
    at = next(j for j, (s, _) in enumerate(expected) if s >= k)
    lo = expected[at - 1][0] + 1 if at else 0
    window = [*losses[lo:k], losses[k], *losses[k:expected[at][0] + 1]]
    expected[at] = (expected[at][0], float(np.float32(np.mean(np.float32(window)))))
    _check(_series(tmp_path, "loss"), expected)
    _check(_series(tmp_path, "peak"), _expected(losses, "max"))


def test_jax_reduction_without_condition_writes_each_value(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax", reason="needs JAX")
    from summarylib.integrations.jax import jit

    @jit
    def fn(loss: Any, i: Any) -> Any:
        sl.scalar("loss", loss, step=i, reduce="mean")
        return loss

    losses = _losses()
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(5):
            fn(jax.numpy.asarray(losses[i]), i)
    _check(_series(tmp_path, "loss"), [(i, float(losses[i])) for i in range(5)])


@pytest.mark.parametrize("route", ["collected", "callback"])
def test_jax_check_finite_raises_naming_tag_and_step(tmp_path: Path, route: str) -> None:
    jax = pytest.importorskip("jax", reason="needs JAX")
    jnp = jax.numpy
    from summarylib.integrations.jax import jit

    def step_fn(loss: Any, i: Any) -> Any:
        with sl.record_if(i % EVERY == 0):
            sl.scalar("loss", loss, step=i, reduce="last", check_finite=True)
        return loss

    fn = jit(step_fn) if route == "collected" else jax.jit(step_fn)
    values = [1.0, 2.0, 3.0, 4.0, 5.0, float("nan"), 7.0, 8.0, 9.0]
    w = sl.create_file_writer(str(tmp_path))
    with w.as_default():
        for i, v in enumerate(values):
            fn(jnp.float32(v), i)  # no error at the call: nothing is read here
        with pytest.raises(sl.NonFiniteError, match=r"'loss'.*step 8") as info:
            w.flush()
    assert (info.value.tag, info.value.step) == ("loss", 8)
    w.close()
    # The NaN at step 5 was not the written value ("last"), yet the check saw it; the
    # finite values are written.
    assert _series(tmp_path, "loss") == [(0, 1.0), (4, 5.0), (8, 9.0)]


# -- torch.compile ------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_compiled_interval_mean_no_break_no_recompile(tmp_path: Path,
                                                            backend: str) -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()

    def step_fn(x: Any, step: Any) -> Any:
        y = x * 1.0
        with sl.record_if(step % EVERY == 0):  # a tensor condition
            sl.scalar("loss", y.sum(), step=step, reduce="mean")
            sl.scalar("peak", y.sum(), step=step, reduce="max", check_finite=True)
        return y

    fn = torch.compile(step_fn, backend=backend, fullgraph=True)
    losses = _losses()
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(STEPS):
            fn(torch.tensor([losses[i]]), torch.tensor(i))
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1
    _check(_series(tmp_path, "loss"), _expected(losses, "mean"))
    _check(_series(tmp_path, "peak"), _expected(losses, "max"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
def test_torch_compiled_check_finite_raises_on_flush(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()

    def step_fn(x: Any, step: Any) -> Any:
        sl.scalar("loss", x.sum(), step=step, check_finite=True)
        return x

    fn = torch.compile(step_fn, backend="aot_eager", fullgraph=True)
    w = sl.create_file_writer(str(tmp_path))
    with w.as_default():
        fn(torch.tensor([1.0]), torch.tensor(0))
        fn(torch.tensor([float("inf")]), torch.tensor(1))
        with pytest.raises(sl.NonFiniteError, match=r"'loss'.*step 1"):
            w.flush()
    w.close()
    assert sum(counters["graph_break"].values()) == 0
    assert _series(tmp_path, "loss") == [(0, 1.0), (1, float("inf"))]


# -- eager values -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["host", "jax", "torch"])
def test_eager_interval_reduction_under_host_condition(tmp_path: Path, kind: str) -> None:
    losses = _losses()
    if kind == "jax":
        jnp = pytest.importorskip("jax", reason="needs JAX").numpy
        values: list[Any] = [jnp.asarray(v) for v in losses]
    elif kind == "torch":
        torch = pytest.importorskip("torch", reason="needs torch")
        values = [torch.tensor(float(v), requires_grad=True) * 1.0 for v in losses]
    else:
        values = [float(v) for v in losses]
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i, v in enumerate(values):
            with sl.record_if(i % EVERY == 0):
                sl.scalar("loss", v, step=i, reduce="mean")
                sl.scalar("low", v, step=i, reduce="min")
    _check(_series(tmp_path, "loss"), _expected(losses, "mean"))
    _check(_series(tmp_path, "low"), _expected(losses, "min"))


def test_bad_reduce_and_check_finite_raise_naming_the_argument(tmp_path: Path) -> None:
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        with pytest.raises(ValueError, match=r"'reduce'.*'median'"):
            sl.scalar("loss", 1.0, step=0, reduce="median")
        with pytest.raises(TypeError, match=r"'check_finite'"):
            sl.scalar("loss", 1.0, step=0, check_finite="yes")  # type: ignore[arg-type]
    # Also without a writer: a bad argument is a bug wherever the code runs.
    with pytest.raises(ValueError, match=r"'reduce'"):
        sl.scalar("loss", 1.0, step=0, reduce="avg")


# -- CPU tensors: the accumulator without torch operations -----------------------------------

def test_cpu_tensor_values_are_accumulated_without_a_torch_operation(tmp_path: Path) -> None:
    # A rank-0 CPU tensor under a host condition (an eager call, or a run of compiled code
    # under a CPU condition) is read once; the interval's float32 arithmetic runs on
    # Python floats, so no torch kernel runs per call (each cost microseconds).
    torch = pytest.importorskip("torch", reason="needs torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    values = [torch.tensor(float(v)) for v in _losses()]
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default(), Ops() as ops:
        for i, v in enumerate(values):
            with sl.record_if(i % EVERY == 0):
                sl.scalar("loss", v, step=i, reduce="mean")
                sl.scalar("peak", v, step=i, reduce="max", check_finite=True)
    assert set(ops.seen) == {"aten._local_scalar_dense.default"}  # item(), nothing else
    _check(_series(tmp_path, "loss"), _expected(_losses(), "mean"))
    _check(_series(tmp_path, "peak"), _expected(_losses(), "max"))


_TORCH_FNS: dict[str, Any] = {}


def _interval_fn(torch: Any, dtype: Any) -> Any:
    # One compiled region (aot_eager) per dtype for every example: a tensor value, step
    # and condition, each reduction of the value under the condition.
    key = str(dtype)
    if key not in _TORCH_FNS:
        def step_fn(x: Any, step: Any, gate: Any) -> Any:
            with sl.record_if(gate):
                for r in REDUCERS:
                    sl.scalar(r, x * 1, step=step, reduce=r)
            return x

        _TORCH_FNS[key] = torch.compile(step_fn, backend="aot_eager", fullgraph=True)
    return _TORCH_FNS[key]


def _tensor_oracle(torch: Any, values: list[Any], gates: list[bool],
                   reduce: str) -> list[tuple[int, bytes]]:
    # The interval's value as float32 tensors compute it: torch's own add, division,
    # maximum and minimum on 0-d tensors (NaN payloads and signed zeros as torch's).
    import struct

    start = {"mean": 0.0, "sum": 0.0, "max": float("-inf"), "min": float("inf"),
             "last": 0.0}[reduce]
    total = torch.tensor(start)
    count = torch.tensor(0.0)
    out_rows = []
    for i, (v, g) in enumerate(zip(values, gates, strict=True)):
        v = v.to(torch.float32)
        if reduce in ("mean", "sum"):
            total = total + v
        elif reduce == "max":
            total = torch.maximum(total, v)
        elif reduce == "min":
            total = torch.minimum(total, v)
        else:
            total = v
        count = count + 1
        out = total / count if reduce == "mean" else total
        if g:
            out_rows.append((i, struct.pack("<f", out.item())))
            total, count = torch.tensor(start), torch.tensor(0.0)
    return out_rows


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None


if given is not None:
    _specials = st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), float("nan"),
                                 -float("nan"), 3.4e38, -3.4e38, 1e-45, 1e-40])

    @pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
    @pytest.mark.parametrize("dtype_name", ["float32", "float64"])
    @settings(max_examples=30, deadline=None)
    @given(rows=st.lists(st.tuples(st.one_of(st.floats(width=32), _specials), st.booleans()),
                         min_size=1, max_size=8))
    def test_torch_compiled_cpu_interval_is_the_tensors_float32_arithmetic(
        tmp_path_factory: Any, dtype_name: str, rows: list[tuple[float, bool]]
    ) -> None:
        import struct

        torch = pytest.importorskip("torch", reason="needs torch")
        dtype = getattr(torch, dtype_name)
        fn = _interval_fn(torch, dtype)
        logdir = tmp_path_factory.mktemp("interval")
        values = [torch.tensor(v, dtype=dtype) for v, _ in rows]
        gates = [g for _, g in rows]
        with sl.create_file_writer(str(logdir)) as w, w.as_default():
            for i, (v, g) in enumerate(zip(values, gates, strict=True)):
                fn(v, torch.tensor(i), torch.tensor(g))
        for r in REDUCERS:
            got = [(s, struct.pack("<f", v)) for s, v in _series(logdir, r)]
            assert got == _tensor_oracle(torch, values, gates, r), r
