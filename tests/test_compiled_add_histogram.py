"""``SummaryWriter.add_histogram`` inside compiled code counts its buckets there.

With ``bins="tensorflow"`` (the default) or explicit edges, only a table (the counts
between the edges, the extremes, the sums) leaves the compiled function, and the file
holds what the eager ``add_histogram`` writes for the values of each execution: every
field of the ``HistogramProto`` compared byte for byte, on both JAX routes (a
``lax.scan`` body for the callback route) and on ``aot_eager`` and ``inductor``, except
``sum_squares``, whose eager value is BLAS's dot product (its order of additions depends
on the CPU's kernel and threads, as in torch): checked to be within a few units in the
last place of it, and exact where the squares are integers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.errors import SummaryError
from summarylib.ops.histogram_proto import tensorflow_bins
from tests.helpers import io_callbacks, summary_op_inputs, tb_events

N = 40
EDGES = [-1.0, -1e-3, 0.0, 0.5, 2.0, 100.0]
# bins, max_bins: the default, explicit edges, and edges merged by max_bins.
BINS: list[tuple[Any, Any]] = [("tensorflow", None), (EDGES, None), ("tensorflow", 7)]

_FINITE = hnp.arrays(np.float32, N, elements=st.floats(width=32, allow_nan=False,
                                                        allow_infinity=False))
# Few distinct values, zeros of both signs, subnormals, values at the edges.
_SMALL = hnp.arrays(np.float32, N, elements=st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-45, -1e-45, 1e-12, -1e-3, 1e25]))


def _as(values: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes

    if dtype == "bfloat16":
        return values.astype(ml_dtypes.bfloat16)
    if dtype == "bool":
        return values != 0
    if dtype in ("int8", "uint8", "int16", "int32"):
        info = np.iinfo(dtype)
        return np.clip(np.round(values.astype(np.float64)), info.min, info.max).astype(dtype)
    with np.errstate(over="ignore"):
        out = values.astype(dtype)
    out[~np.isfinite(out)] = 0  # float16 overflows: eagerly refused (a test of its own)
    return out


def _histos(logdir: Path) -> list[tuple[int, str, Any]]:
    out = []
    for f in sorted(logdir.glob("events.out.tfevents.*")):
        for e in tb_events(f):
            out.extend((e.step, v.tag, v.histo) for v in e.summary.value)
    return out


def _assert_as_eager(got: list[tuple[int, str, Any]], want: list[tuple[int, str, Any]],
                     exact_squares: bool) -> None:
    assert [(s, t) for s, t, _ in got] == [(s, t) for s, t, _ in want]
    for (_, tag, a), (_, _, b) in zip(got, want, strict=True):
        a2, b2 = type(a)(), type(b)()
        a2.CopyFrom(a)
        b2.CopyFrom(b)
        a2.sum_squares = b2.sum_squares = 0.0
        assert a2.SerializeToString() == b2.SerializeToString(), tag
        if exact_squares:
            assert a.sum_squares == b.sum_squares, tag
        else:  # numpy's pairwise order against BLAS's: a few rounding steps apart
            assert abs(a.sum_squares - b.sum_squares) <= 8 * N * 2.0**-52 * b.sum_squares


def _log(w: Any, x: Any, step: Any) -> None:
    for i, (bins, max_bins) in enumerate(BINS):
        w.add_histogram(f"h{i}", x, step, bins=bins, max_bins=max_bins)


def _eager(d: Path, rows: list[np.ndarray]) -> list[tuple[int, str, Any]]:
    with sl.SummaryWriter(str(d)) as w:
        for step, row in enumerate(rows):
            _log(w, row, step)
    return _histos(d)


def _has_edge_value(x: np.ndarray) -> bool:
    # Eager add_histogram refuses values none of which lies within explicit edges.
    f = x.astype(np.float64)
    return bool(((f >= EDGES[0]) & (f <= EDGES[-1])).any())


# ---------------------------------------------------------------------------- JAX

jax = pytest.importorskip("jax", reason="needs JAX (pip install jax)")
import jax.numpy as jnp  # noqa: E402

from summarylib.integrations.jax import jit  # noqa: E402


class _Compared:
    """An eager writer and a compiled one, given the same values at the same steps (one
    writer each for a whole property test: compiled code names its writer when traced)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.eager = sl.SummaryWriter(str(root / "eager"))
        self.compiled = sl.SummaryWriter(str(root / "compiled"))
        self.exact: dict[int, bool] = {}
        self.step = 0

    def add(self, rows: list[np.ndarray], exact: bool) -> int:
        first = self.step
        for row in rows:
            _log(self.eager, row, self.step)
            self.exact[self.step] = exact
            self.step += 1
        return first

    def check(self) -> None:
        self.eager.close()
        self.compiled.close()
        got, want = _histos(self.root / "compiled"), _histos(self.root / "eager")
        assert len(want) == 3 * self.step >= 6
        for g, w in zip(got, want, strict=True):
            _assert_as_eager([g], [w], self.exact[w[0]])


@pytest.mark.parametrize("route", ["collected", "callback"])
def test_jax_counted_add_histogram_equals_the_eager_call(tmp_path: Path, route: str) -> None:
    both = _Compared(tmp_path)
    w = both.compiled
    if route == "collected":
        @jit
        def fn(x: Any, step: Any) -> Any:
            _log(w, x, step)
            return x
    else:
        @jax.jit
        def fn(x: Any, step: Any) -> Any:
            def body(i: Any, row: Any) -> Any:
                _log(w, row, i)
                return i + 1, None

            return jax.lax.scan(body, step, x)[0]

    @settings(max_examples=12, deadline=None)
    @given(values=st.one_of(_FINITE, _SMALL),
           dtype=st.sampled_from(["float32", "float16", "uint8", "bool"]))
    def run(values: np.ndarray, dtype: str) -> None:
        data = _as(values, dtype)
        if not _has_edge_value(data):
            data[0] = 0  # one value within the explicit edges
        rows = [data, data[::-1].copy()] if route == "callback" else [data]
        step = both.add(rows, exact=dtype not in ("float32", "float16"))
        fn(jnp.asarray(np.stack(rows) if route == "callback" else data), step)

    run()
    both.check()


def test_jax_only_the_table_leaves_the_compiled_function(tmp_path: Path) -> None:
    x = jnp.zeros((2, 8192), jnp.float32)
    with sl.SummaryWriter(str(tmp_path)) as w:
        def step(x: Any) -> Any:
            def body(c: Any, row: Any) -> Any:
                w.add_histogram("h", row, 0)
                return c, None

            return jax.lax.scan(body, 0, x)[0]

        calls = io_callbacks(jax.make_jaxpr(step)(x).jaxpr)
    assert len(calls) == 1
    sizes = [int(np.prod(v.aval.shape)) for v in calls[0].invars]
    edges = len(tensorflow_bins())
    assert max(sizes) == edges - 1 + 7  # the counts and 7 words, not the 8192 values


def test_jax_under_a_traced_condition_and_with_bad_values(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    runs = [rng.standard_normal(N).astype(np.float32) for _ in range(4)]
    with sl.SummaryWriter(str(tmp_path / "compiled")) as w:
        @jit
        def fn(x: Any, step: Any) -> Any:
            with sl.record_if(step % 2 == 0):
                w.add_histogram("h", x, step)
            return x

        for i, x in enumerate(runs):
            fn(jnp.asarray(x), i)
    with sl.SummaryWriter(str(tmp_path / "eager")) as w:
        for i in (0, 2):
            w.add_histogram("h", runs[i], i)
    _assert_as_eager(_histos(tmp_path / "compiled"), _histos(tmp_path / "eager"), False)
    # NaN or infinity: the eager call's error, raised by close(); no value within the
    # edges: the same.
    for bad, bins, message in ((np.float32([1.0, np.nan]), "tensorflow", "must be finite"),
                               (np.float32([5.0, 6.0]), [0.0, 1.0], "within the bin edges")):
        with pytest.raises(ValueError, match=f"add_histogram: .*{message}"):
            sl.SummaryWriter(str(tmp_path / "eager_bad")).add_histogram("b", bad, 0, bins=bins)
        w = sl.SummaryWriter(str(tmp_path / "bad"))
        jit(lambda x, w=w, bins=bins: (w.add_histogram("b", x, 0, bins=bins), x)[1])(
            jnp.asarray(bad))
        with pytest.raises(SummaryError, match=f"add_histogram: 'values' .*{message}|"
                                               f"add_histogram: no value .*{message}"):
            w.close()


def test_a_zero_extreme_does_not_depend_on_the_order() -> None:
    # numpy's min and max pick 0.0 or -0.0 by position; add_histogram takes -0.0 as the
    # smallest when one is among the values, +0.0 as the largest when one is.
    for values in ([-0.0, 0.0, 1.0], [0.0, -0.0, 1.0], [-1.0, 0.0, -0.0], [-1.0, -0.0, 0.0]):
        histo = sl.histogram_bins_pb("h", np.float32(values)).value[0].histo
        low = min(values)
        if low == 0:
            assert np.signbit(histo.min), values
        else:
            assert not np.signbit(histo.max), values


# -------------------------------------------------------------------------- torch

def _torch() -> Any:
    return pytest.importorskip("torch", reason="needs torch (pip install torch)")


def _tensor(values: np.ndarray, dtype: str) -> Any:
    torch = _torch()
    if dtype == "bfloat16":
        # float32 values past bfloat16's largest would round to infinity, which
        # add_histogram refuses: kept at the largest (the test is of finite data).
        big = torch.finfo(torch.bfloat16).max
        return torch.from_numpy(np.clip(values.astype(np.float32), -big, big)).to(
            torch.bfloat16)
    return torch.from_numpy(_as(values, dtype))


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_counted_add_histogram_equals_the_eager_call(tmp_path: Path,
                                                          backend: str) -> None:
    torch = _torch()
    from torch._dynamo.utils import counters

    both = _Compared(tmp_path)
    w = both.compiled
    fn = torch.compile(lambda x, step: (_log(w, x, step), step)[1], backend=backend,
                       fullgraph=True, dynamic=False)
    # Three dtypes on aot_eager (cheap to compile); inductor (seconds a compile) on one.
    dtypes = ["float64", "bfloat16", "int32"] if backend == "aot_eager" else ["float32"]
    breaks = sum(counters["graph_break"].values())

    # A float32 value that bfloat16 rounds past its largest finite value.
    huge = np.zeros(N, np.float32)
    huge[0] = 3.3961775e38

    @settings(max_examples=10 if backend == "aot_eager" else 5, deadline=None)
    @given(values=st.one_of(_FINITE, _SMALL), dtype=st.sampled_from(dtypes))
    @example(values=huge, dtype=dtypes[min(1, len(dtypes) - 1)])
    def run(values: np.ndarray, dtype: str) -> None:
        data = _tensor(values, dtype)
        if not _has_edge_value(data.float().numpy()):
            data[0] = 0
        host = data.float().numpy() if dtype == "bfloat16" else data.numpy()
        step = both.add([host], exact=dtype in ("int32", "bool"))
        fn(data, torch.tensor(step))

    run()
    assert sum(counters["graph_break"].values()) == breaks
    both.check()


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
def test_torch_only_the_table_enters_the_summary_op(tmp_path: Path) -> None:
    torch = _torch()
    backend, seen = summary_op_inputs()

    with sl.SummaryWriter(str(tmp_path)) as w:
        fn = torch.compile(lambda x, step: (w.add_histogram("h", x * 2, step), x)[1],
                           backend=backend, fullgraph=True)
        fn(torch.linspace(-1, 1, 8192), torch.tensor(0))
    edges = len(tensorflow_bins())
    assert seen == [[(edges - 1 + 6,), ()]]  # the table and the step, not the values


def test_torch_under_a_cpu_record_if_the_values_enter_the_op_whole(tmp_path: Path) -> None:
    # As histogram(): the table would be counted in every run and the condition is false
    # in most, so on the CPU the op takes the values and counts them only when it holds.
    torch = _torch()
    backend, seen = summary_op_inputs()

    x = torch.linspace(-1, 1, 8192)
    with sl.SummaryWriter(str(tmp_path / "compiled")) as w:
        def step_fn(x: Any, step: Any) -> Any:
            with sl.record_if(step % 2 == 0):
                w.add_histogram("h", x * 2, step)
            return x

        fn = torch.compile(step_fn, backend=backend, fullgraph=True)
        for i in range(3):
            fn(x + i, torch.tensor(i))
    assert seen == [[(8192,), (), ()]]  # the values, the step and the condition
    with sl.SummaryWriter(str(tmp_path / "eager")) as w:
        for i in (0, 2):
            w.add_histogram("h", ((x + i) * 2).numpy(), i)
    _assert_as_eager(_histos(tmp_path / "compiled"), _histos(tmp_path / "eager"), True)
