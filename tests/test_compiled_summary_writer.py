"""``SummaryWriter.add_*`` inside ``jax.jit`` and ``torch.compile(fullgraph=True)``.

Each execution writes that execution's values to the method's own writer (not the
default writer), exactly as the eager call with the same values writes them: every
``Summary.Value`` compared byte for byte, read with TensorBoard's own event loader. Graph
breaks and graphs are counted with dynamo's counters.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import summarylib as sl
from tests.helpers import tb_events

STEPS = 3


def log_all(w: Any, x: Any, step: Any, wall: Any) -> None:
    """One call of each array-taking add_* method, on values derived from ``x`` (4 floats
    in [0, 8)); the same code runs on numpy (eagerly), JAX tracers and torch tensors."""
    w.add_scalar("loss", x.mean(), step)
    w.add_scalars("pair", {"low": x.min(), "high": x.max()}, step)
    w.add_histogram("hist", x, step)
    w.add_image("img", (x / 8).reshape(1, 2, 2), step)
    w.add_audio("snd", x / 8 - 0.5, step, sample_rate=8000)
    w.add_pr_curve("pr", x > 2, x / 8, step, num_thresholds=5)
    w.add_text("note", "hello", step)
    w.add_scalar("timed", x.sum(), step, walltime=wall)


def log_more(w: Any, x: Any, step: Any) -> None:
    """The other array-taking add_* methods, as log_all."""
    w.add_tensor("tensor", x, step)
    w.add_images("imgs", (x / 8).reshape(4, 1, 1, 1), step)
    w.add_image_with_boxes("boxed", (x / 8).reshape(1, 2, 2), x.reshape(1, 4) * 0, step)
    w.add_video("vid", (x / 8).reshape(1, 4, 1, 1, 1), step, fps=2)
    w.add_histogram_raw("raw", x.min(), x.max(), 4, x.sum(), (x * x).sum(), x, x * 0 + 1, step)
    w.add_pr_curve_raw("prr", x, x, x, x, x / 8, x / 8, step, num_thresholds=4)
    w.add_mesh("mesh", x.reshape(1, 1, 4)[:, :, :3], global_step=step)
    w.add_embedding(x.reshape(2, 2), global_step=step, tag="emb")


def _files(logdir: Path) -> dict[str, bytes]:
    # add_embedding's files (its step directories and the projector config), by path.
    return {str(f.relative_to(logdir)): f.read_bytes() for f in sorted(logdir.rglob("*"))
            if f.is_file() and "tfevents" not in f.name}


def _inputs(i: int) -> tuple[np.ndarray, float]:
    return np.float32([0.5, 1.5, 2.5, 3.5]) + np.float32(i * 0.25), 1000.0 + i


def _events(logdir: Path) -> dict[tuple[str, str], list[tuple[int, float | None, bytes]]]:
    """``{(run, tag): [(step, wall time of "timed" else None, Summary.Value bytes)]}`` of
    every run under ``logdir`` (add_scalars writes sub-runs), in file order."""
    out: dict[tuple[str, str], list[tuple[int, float | None, bytes]]] = {}
    for f in sorted(logdir.rglob("events.out.tfevents.*")):
        run = str(f.parent.relative_to(logdir))
        for e in tb_events(f):
            for v in e.summary.value:
                wall = e.wall_time if v.tag == "timed" else None
                out.setdefault((run, v.tag), []).append((e.step, wall, v.SerializeToString()))
    return out


def _eager(logdir: Path) -> dict[tuple[str, str], list[tuple[int, float | None, bytes]]]:
    with sl.SummaryWriter(str(logdir)) as w:
        for i in range(STEPS):
            x, wall = _inputs(i)
            log_all(w, x, i, wall)
    return _events(logdir)


def _assert_as_eager(tmp_path: Path, got: Path) -> None:
    want = _eager(tmp_path / "eager")
    events = _events(got)
    assert sorted(events) == sorted(want)
    assert events == want
    assert [s for s, _, _ in events[(".", "loss")]] == list(range(STEPS))
    assert [w for _, w, _ in events[(".", "timed")]] == [1000.0 + i for i in range(STEPS)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_the_other_array_methods_write_as_the_eager_calls(tmp_path: Path,
                                                          framework: str) -> None:
    lib = pytest.importorskip(framework)
    with sl.SummaryWriter(str(tmp_path / "eager")) as w:
        for i in range(2):
            log_more(w, _inputs(i)[0], i)
    w = sl.SummaryWriter(str(tmp_path / "compiled"))
    if framework == "jax":
        from summarylib.integrations.jax import jit

        fn = jit(lambda x, i: (log_more(w, x, i), x)[1])
        for i in range(2):
            fn(lib.numpy.asarray(_inputs(i)[0]), i)
    else:
        from torch._dynamo.utils import counters

        lib._dynamo.reset()
        counters.clear()
        fn = lib.compile(lambda x, i: (log_more(w, x, i), x)[1], backend="eager",
                         fullgraph=True)
        for i in range(2):
            fn(lib.from_numpy(_inputs(i)[0]), lib.tensor(i))
        assert sum(counters["graph_break"].values()) == 0
        assert counters["stats"]["unique_graphs"] == 1
    w.close()
    got, want = _events(tmp_path / "compiled"), _events(tmp_path / "eager")
    assert sorted(got) == sorted(want)
    assert got == want
    assert _files(tmp_path / "compiled") == _files(tmp_path / "eager")
    assert "00001/emb/tensors.tsv" in _files(tmp_path / "compiled")


def log_values(w: Any, x: Any, step: Any) -> None:
    w.add_scalar("first", x[0], step)
    w.add_histogram("hist", x, step)


_FLOATS = arrays(np.float32, 6, elements=st.floats(-1e6, 1e6, width=32))


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_any_values_write_as_the_eager_calls(tmp_path: Path, framework: str) -> None:
    lib = pytest.importorskip(framework)
    eager = sl.SummaryWriter(str(tmp_path / "eager"))
    w = sl.SummaryWriter(str(tmp_path / "compiled"))
    if framework == "jax":
        compiled = lib.jit(lambda x, i: (log_values(w, x, i), x)[1])  # the callback route
        convert, step_of = lib.numpy.asarray, lib.numpy.asarray
    else:
        lib._dynamo.reset()
        compiled = lib.compile(lambda x, i: (log_values(w, x, i), x)[1], backend="eager",
                               fullgraph=True)
        convert, step_of = lib.from_numpy, lib.tensor

    # One file per writer over every example (a new writer would compile the step again):
    # compared once they are all written.
    @settings(max_examples=12, deadline=None)
    @given(_FLOATS, st.integers(0, 2**31 - 1))  # JAX's default integers are 32-bit
    def run(x: np.ndarray, step: int) -> None:
        log_values(eager, x, step)
        compiled(convert(x.copy()), step_of(step))

    run()
    eager.close()
    w.close()
    got, want = _events(tmp_path / "compiled"), _events(tmp_path / "eager")
    assert len(want[(".", "hist")]) >= 2
    assert got == want


# -- JAX ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jax() -> Any:
    return pytest.importorskip("jax", reason="needs JAX (pip install jax[cpu])")


@pytest.mark.parametrize("route", ["collected", "callback", "scan"])
def test_jax_each_execution_writes_its_values_to_its_writer(
    tmp_path: Path, jax: Any, route: str
) -> None:
    from summarylib.integrations.jax import jit

    jnp = jax.numpy
    traces = []
    w = sl.SummaryWriter(str(tmp_path / "compiled"))

    def step_fn(x: Any, i: Any, wall: Any) -> Any:
        traces.append(1)
        log_all(w, x, i, wall)
        return x

    def scanned(xs: Any, steps: Any, walls: Any) -> Any:
        traces.append(1)

        def body(c: Any, row: Any) -> Any:
            log_all(w, *row)
            return c, None

        return jax.lax.scan(body, 0, (xs, steps, walls))[0]

    rows = [_inputs(i) for i in range(STEPS)]
    other = sl.create_file_writer(str(tmp_path / "default"))
    with other.as_default():  # a default writer that must receive nothing
        if route == "scan":
            jax.jit(scanned)(jnp.stack([x for x, _ in rows]), jnp.arange(STEPS),
                             jnp.float32([wall for _, wall in rows]))
        else:
            fn = jit(step_fn) if route == "collected" else jax.jit(step_fn)
            for i, (x, wall) in enumerate(rows):
                fn(jnp.asarray(x), i, jnp.float32(wall))  # traced step and walltime
    w.close()
    other.close()
    assert len(traces) == 1  # no retrace as the step advances
    assert _events(tmp_path / "default") == {}
    _assert_as_eager(tmp_path, tmp_path / "compiled")


def test_jax_without_a_default_writer_and_under_a_traced_record_if(
    tmp_path: Path, jax: Any
) -> None:
    from summarylib.integrations.jax import jit

    jnp = jax.numpy
    w = sl.SummaryWriter(str(tmp_path))

    @jit
    def fn(x: Any, i: Any) -> Any:
        with sl.record_if(i % 2 == 0):
            w.add_scalar("even", x.sum(), i)
        w.add_scalar("every", x.sum(), i)
        return x + 1.0

    x = jnp.zeros(2)
    for i in range(5):
        x = fn(x, i)
    w.close()
    events = _events(tmp_path)
    assert [s for s, _, _ in events[(".", "even")]] == [0, 2, 4]
    assert [s for s, _, _ in events[(".", "every")]] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("route", ["collected", "callback"])
def test_jax_a_dropped_writer_is_not_kept_and_its_calls_write_nothing(
    tmp_path: Path, jax: Any, route: str
) -> None:
    from summarylib.integrations.jax import jit

    jnp = jax.numpy
    holder = [sl.SummaryWriter(str(tmp_path))]

    def step_fn(x: Any, i: Any) -> Any:
        holder[0].add_scalar("v", x.sum(), i)
        return x

    fn = jit(step_fn) if route == "collected" else jax.jit(step_fn)
    fn(jnp.ones(2), 0)
    # The callback route writes a call when its callbacks have run and their replay has,
    # which can be after the call returned: flush() waits for both (a writer dropped
    # before then misses the call).
    holder[0].flush()
    ref = weakref.ref(holder[0])
    holder.clear()  # the compiled function (and JAX's caches) outlive the writer
    gc.collect()
    assert ref() is None
    out = fn(jnp.ones(2), 1)  # the cached trace runs: its writer is gone
    jax.block_until_ready(out)
    assert [s for s, _, _ in _events(tmp_path)[(".", "v")]] == [0]


def test_jax_bad_values_raise_naming_the_method(tmp_path: Path, jax: Any) -> None:
    from summarylib.integrations.jax import jit

    jnp = jax.numpy
    with sl.SummaryWriter(str(tmp_path)) as w:
        bad = jit(lambda v: (w.add_scalar("loss", v, 0), v)[1])  # a vector is no scalar
        with pytest.raises((TypeError, ValueError), match=r"add_scalar"):
            bad(jnp.ones(3))
        layout = jit(lambda v: (w.add_image("img", v, 0, dataformats="XYZ"), v)[1])
        with pytest.raises(ValueError, match=r"add_image.*dataformats"):
            layout(jnp.ones((3, 2, 2)))
        with pytest.raises(TypeError, match=r"add_histogram.*jax.vmap"):
            jax.vmap(lambda v: (w.add_histogram("h", v, 0), v)[1])(jnp.ones((2, 3)))


# -- torch.compile --------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch", reason="needs torch (pip install torch)")


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_each_run_writes_its_values_with_no_break_and_no_recompile(
    tmp_path: Path, torch: Any, backend: str
) -> None:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    w = sl.SummaryWriter(str(tmp_path / "compiled"))

    def step_fn(x: Any, i: Any, wall: Any) -> Any:
        log_all(w, x, i, wall)
        return x + 1.0

    fn = torch.compile(step_fn, backend=backend, fullgraph=True)
    other = sl.create_file_writer(str(tmp_path / "default"))
    with other.as_default():  # a default writer that must receive nothing
        for i in range(STEPS):
            x, wall = _inputs(i)
            fn(torch.from_numpy(x), torch.tensor(i), torch.tensor(wall, dtype=torch.float64))
    w.close()
    other.close()
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1  # a tensor step: no recompile
    assert _events(tmp_path / "default") == {}
    _assert_as_eager(tmp_path, tmp_path / "compiled")


def test_torch_explain_and_a_closed_writer(tmp_path: Path, torch: Any) -> None:
    torch._dynamo.reset()
    w = sl.SummaryWriter(str(tmp_path))

    def step_fn(x: Any, i: Any) -> Any:
        with sl.record_if(i % 2 == 0):  # a tensor condition: no recompile
            w.add_histogram("h", x, i)
        w.add_scalar("v", x.sum(), i)
        return x * 2.0

    explanation = torch._dynamo.explain(step_fn)(torch.ones(3), torch.tensor(0))
    assert explanation.graph_break_count == 0
    assert explanation.graph_count == 1
    fn = torch.compile(step_fn, backend="eager", fullgraph=True)
    for i in range(1, 4):
        fn(torch.ones(3), torch.tensor(i))
    w.close()
    fn(torch.ones(3), torch.tensor(4))  # its writer is closed: nothing, and no error
    events = _events(tmp_path)
    assert [s for s, _, _ in events[(".", "v")]] == [0, 1, 2, 3]  # explain's run is step 0
    assert [s for s, _, _ in events[(".", "h")]] == [0, 2]


def test_torch_compiled_code_does_not_keep_its_writer(tmp_path: Path, torch: Any) -> None:
    torch._dynamo.reset()
    holder = [sl.SummaryWriter(str(tmp_path / "a"))]

    def step_fn(x: Any, i: Any) -> Any:
        holder[0].add_scalar("v", x.sum(), i)
        return x

    fn = torch.compile(step_fn, backend="eager", fullgraph=True)
    fn(torch.ones(2), torch.tensor(0))
    ref = weakref.ref(holder[0])
    holder[0] = sl.SummaryWriter(str(tmp_path / "b"))
    gc.collect()
    assert ref() is None
    fn(torch.ones(2), torch.tensor(1))  # compiled again for the new writer
    holder[0].close()
    assert [s for s, _, _ in _events(tmp_path / "a")[(".", "v")]] == [0]
    assert [s for s, _, _ in _events(tmp_path / "b")[(".", "v")]] == [1]


def test_torch_bad_values_raise_naming_the_method(tmp_path: Path, torch: Any) -> None:
    torch._dynamo.reset()
    with sl.SummaryWriter(str(tmp_path)) as w:
        bad = torch.compile(lambda v: (w.add_scalar("loss", v, 0), v)[1], backend="eager",
                            fullgraph=True)
        with pytest.raises((TypeError, ValueError), match=r"add_scalar"):
            bad(torch.ones(3))
        layout = torch.compile(lambda v: (w.add_image("img", v, 0, dataformats="XYZ"), v)[1],
                               backend="eager", fullgraph=True)
        with pytest.raises(ValueError, match=r"add_image.*dataformats"):
            layout(torch.ones(3, 2, 2))


@pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
def test_torch_add_scalar_branches_write_as_the_eager_calls(tmp_path: Path, torch: Any) -> None:
    # add_scalar of a CPU tensor is written without replaying the method when it can be:
    # a name scope, a tensor step (a float one truncated as torch does), an int step, and
    # values it leaves to the method (float64, a writer under use_metadata) all give the
    # eager calls' events.
    def log(w: Any, x: Any, i: Any, fi: Any) -> None:
        with sl.name_scope("scope"):
            w.add_scalar("scoped", x.sum(), i)
        w.add_scalar("float_step", x.max(), fi)
        w.add_scalar("int_step", x.min(), 7)
        w.add_scalar("wide", x.double().mean(), i)

    def run(w: Any, fn: Any) -> None:
        for i in range(3):
            x = torch.arange(3, dtype=torch.float32) * (i + 0.5)
            fn(x, torch.tensor(i), torch.tensor(i + 0.75, dtype=torch.float64))
        with w.use_metadata(walltime=123.0):
            fn(torch.ones(3), torch.tensor(9), torch.tensor(9.5, dtype=torch.float64))

    def values(logdir: Path) -> list[tuple[int, str, bytes, float | None]]:
        return [(e.step, v.tag, v.SerializeToString(), e.wall_time if e.step == 9 else None)
                for f in sorted(logdir.rglob("events.out.tfevents.*")) for e in tb_events(f)
                for v in e.summary.value]

    with sl.SummaryWriter(str(tmp_path / "eager")) as w:
        run(w, lambda x, i, fi: log(w, x, i, fi))
    torch._dynamo.reset()
    w = sl.SummaryWriter(str(tmp_path / "compiled"))
    fn = torch.compile(lambda x, i, fi: log(w, x, i, fi), backend="aot_eager", fullgraph=True)
    run(w, fn)
    w.close()
    want = values(tmp_path / "eager")
    assert [(s, t) for s, t, _, _ in want][:4] == [
        (0, "scope/scoped"), (0, "float_step"), (7, "int_step"), (0, "wide")]
    assert want[5][0] == 1  # the float step 1.75 written as 1
    assert [wall for s, _, _, wall in want if s == 9] == [123.0] * 3
    assert values(tmp_path / "compiled") == want
