"""Histograms inside compiled code are bucketed there: only the bucket table leaves the
compiled function, and the file holds exactly the host path's edges and counts for the
values of each execution (bytes compared), on both JAX routes and on torch.compile.

The values compared are the ones the compiled function histogrammed (its own inputs,
untouched: XLA's CPU arithmetic flushes subnormal results to zero, so a value computed
inside the function may differ from the same formula on the host).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.reader import iter_summary_values
from tests.helpers import io_callbacks, summary_op_inputs

N = 48  # one shape: one compile per (route, dtype, buckets)
BUCKETS = [1, 30]

_FLOATS = hnp.arrays(np.float32, N, elements=st.floats(width=32, allow_nan=True,
                                                        allow_infinity=True))
# Few distinct values, zeros of both signs, subnormals: ties at bucket edges.
_SMALL = hnp.arrays(np.float32, N, elements=st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-45, -1e-45, 2e-38, np.inf, np.nan]))


def _as(values: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes

    if dtype == "bfloat16":
        return values.astype(ml_dtypes.bfloat16)
    if dtype in ("int8", "int32", "uint8", "bool"):
        finite = np.nan_to_num(values, nan=0.0, posinf=1e9, neginf=-1e9)
        info = np.iinfo(dtype) if dtype != "bool" else None
        if info is None:
            return finite != 0
        return np.clip(np.round(finite.astype(np.float64)), info.min, info.max).astype(dtype)
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def _contents(logdir: Path, tag: str) -> list[tuple[int, bytes]]:
    return [(e.step, v.tensor.tensor_content) for e, v in iter_summary_values(logdir)
            if v.tag == tag]


def _host_bytes(values: np.ndarray, k: int) -> bytes:
    return bytes(sl.histogram_pb("h", values, buckets=k).value[0].tensor.tensor_content)


# ---------------------------------------------------------------------------- JAX

jax = pytest.importorskip("jax", reason="needs JAX (pip install jax)")
import jax.numpy as jnp  # noqa: E402

from summarylib.integrations.jax import jit  # noqa: E402

_JAX_FNS: dict[Any, Any] = {}


def _jax_fn(route: str, k: int) -> Any:
    """A compiled function histogramming its input (rows of a scan for the callback
    route: one event per iteration, the iteration's step)."""
    key = (route, k)
    if key not in _JAX_FNS:
        if route == "collected":
            @jit
            def fn(x: Any) -> Any:
                sl.histogram("h", x, step=0, buckets=k)
                return x
        else:
            @jax.jit
            def fn(x: Any) -> Any:
                def body(i: Any, row: Any) -> Any:
                    sl.histogram("h", row, step=i, buckets=k)
                    return i + 1, None

                return jax.lax.scan(body, 0, x)[0]
        _JAX_FNS[key] = fn
    return _JAX_FNS[key]


@settings(max_examples=30, deadline=None)
@given(values=st.one_of(_FLOATS, _SMALL),
       dtype=st.sampled_from(["float32", "float16", "bfloat16", "int8", "int32", "bool"]),
       k=st.sampled_from(BUCKETS), route=st.sampled_from(["collected", "callback"]))
def test_jax_in_graph_histogram_equals_the_host_path(
    tmp_path_factory: Any, values: np.ndarray, dtype: str, k: int, route: str
) -> None:
    d = tmp_path_factory.mktemp("h")
    data = _as(values, dtype)
    rows = np.stack([data, data[::-1]]) if route == "callback" else data
    with sl.create_file_writer(str(d)) as w, w.as_default():
        _jax_fn(route, k)(jnp.asarray(rows))
    want = ([(0, _host_bytes(data, k)), (1, _host_bytes(data[::-1], k))]
            if route == "callback" else [(0, _host_bytes(data, k))])
    assert _contents(d, "h") == want


def test_jax_only_the_bucket_table_leaves_the_compiled_function(tmp_path: Path) -> None:
    x = jnp.zeros((2, 4096), jnp.float32)
    with sl.create_file_writer(str(tmp_path)).as_default():  # ops record only with one
        calls = io_callbacks(jax.make_jaxpr(_jax_fn("callback", 30))(x).jaxpr)
    assert len(calls) == 1
    shapes = [(tuple(v.aval.shape), str(v.aval.dtype)) for v in calls[0].invars]
    assert ((30 + 3,), "int32") in shapes
    assert all(int(np.prod(s)) <= 33 for s, _ in shapes), shapes  # not the 4096 values


def test_jax_in_graph_histogram_under_a_traced_condition(tmp_path: Path) -> None:
    @jit
    def fn(x: Any, step: Any) -> Any:
        with sl.record_if(step % 2 == 0):
            sl.histogram("h", x, step=step, buckets=5)
        return x

    rng = np.random.default_rng(0)
    runs = [rng.standard_normal(N).astype(np.float32) for _ in range(5)]
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i, x in enumerate(runs):
            fn(jnp.asarray(x), jnp.asarray(i))
    assert _contents(tmp_path, "h") == [(i, _host_bytes(runs[i], 5)) for i in (0, 2, 4)]


# -------------------------------------------------------------------------- torch

def _torch() -> Any:
    return pytest.importorskip("torch", reason="needs torch (pip install torch)")


_TORCH_FNS: dict[Any, Any] = {}


def _torch_fn(backend: str, dtype: str) -> Any:
    # One compiled function per dtype (a new dtype is a new graph for dynamo).
    torch = _torch()
    if (backend, dtype) not in _TORCH_FNS:
        def fn(x: Any, step: Any) -> Any:
            sl.histogram("h", x, step=step, buckets=7)
            return step + 1

        _TORCH_FNS[backend, dtype] = torch.compile(fn, backend=backend, fullgraph=True)
    return _TORCH_FNS[backend, dtype]


def _tensor(values: np.ndarray, dtype: str) -> Any:
    torch = _torch()
    if dtype == "bfloat16":
        return torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(_as(values, dtype))


# Every dtype on aot_eager (cheap to compile); inductor (seconds a compile) on two.
_TORCH_CASES = [("aot_eager", d) for d in ("float32", "float64", "float16", "bfloat16",
                                            "int32", "bool")]
_TORCH_CASES += [("inductor", "float32"), ("inductor", "bfloat16")]


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
@pytest.mark.parametrize(("backend", "dtype"), _TORCH_CASES)
@settings(max_examples=10, deadline=None)
@given(values=st.one_of(_FLOATS, _SMALL))
def test_torch_in_graph_histogram_equals_the_host_path(
    tmp_path_factory: Any, backend: str, dtype: str, values: np.ndarray
) -> None:
    torch = _torch()
    from torch._dynamo.utils import counters

    d = tmp_path_factory.mktemp("h")
    data = _tensor(values, dtype)
    breaks = sum(counters["graph_break"].values())
    with sl.create_file_writer(str(d)) as w, w.as_default():
        _torch_fn(backend, dtype)(data, torch.tensor(3))
    assert sum(counters["graph_break"].values()) == breaks
    host = data.float().numpy() if dtype == "bfloat16" else data.numpy()
    assert _contents(d, "h") == [(3, _host_bytes(host, 7))]


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
def test_torch_only_the_bucket_table_enters_the_summary_op(tmp_path: Path) -> None:
    torch = _torch()
    backend, seen = summary_op_inputs()

    def fn(x: Any, step: Any) -> Any:
        sl.histogram("h", x * 2, step=step, buckets=7)
        return x

    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    x = torch.linspace(-1, 1, 4096)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        compiled(x, torch.tensor(0))
    assert seen == [[(7 + 3,), ()]]  # the table and the step, not the 4096 values
    assert _contents(tmp_path, "h") == [(0, _host_bytes((x * 2).numpy(), 7))]


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
def test_torch_under_a_cpu_record_if_the_data_enters_the_op_whole(tmp_path: Path) -> None:
    # The bucket table would be computed in every run, the condition false in most: on
    # the CPU the op takes the data itself and buckets it only when the condition holds.
    torch = _torch()
    backend, seen = summary_op_inputs()

    def fn(x: Any, step: Any) -> Any:
        with sl.record_if(step % 2 == 0):
            sl.histogram("h", x * 2, step=step, buckets=7)
        return x

    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    x = torch.linspace(-1, 1, 4096)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(3):
            compiled(x + i, torch.tensor(i))
    assert seen == [[(4096,), (), ()]]  # the data, the step and the condition
    assert _contents(tmp_path, "h") == [(i, _host_bytes(((x + i) * 2).numpy(), 7))
                                        for i in (0, 2)]
