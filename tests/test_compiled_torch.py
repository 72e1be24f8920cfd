"""Summary ops inside ``torch.compile(fullgraph=True)``: no graph break, no recompile,
written each time the compiled code runs, with that run's values.

Graph breaks and graphs are counted with dynamo's own counters; the files are read with
summarylib's reader and TensorBoard's EventAccumulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from summarylib.reader import iter_summary_values, read_scalars

torch = pytest.importorskip("torch", reason="needs torch (pip install torch)")
from torch._dynamo.utils import counters  # noqa: E402

# Inductor's own import of torch.jit warns (the suite turns warnings into errors).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")


def _series(logdir: Path, tag: str) -> list[tuple[int, float]]:
    return [(s, v) for s, _, v in read_scalars(logdir).get(".", {}).get(tag, [])]


def _histograms(logdir: Path, tag: str) -> list[tuple[int, np.ndarray]]:
    from tensorboard.util import tensor_util

    return [(e.step, tensor_util.make_ndarray(v.tensor))
            for e, v in iter_summary_values(logdir) if v.tag == tag]


def step_fn(x: Any, step: Any) -> Any:
    y = x * 2.0
    sl.scalar("loss", y.mean(), step=step)
    with sl.name_scope("train"):
        sl.histogram("y", y, step=step)
    with sl.record_if(step % 3 == 0):
        sl.scalar("every_3", y.sum(), step=step)
    return y


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_each_run_writes_its_values_with_no_break_and_no_recompile(
    tmp_path: Path, backend: str
) -> None:
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(step_fn, backend=backend, fullgraph=True)
    x = torch.arange(4, dtype=torch.float32)
    expected_loss, expected_3, expected_hist = [], [], []
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(7):
            y = x.numpy() * 2.0
            expected_loss.append((i, float(np.float32(y.mean()))))
            if i % 3 == 0:
                expected_3.append((i, float(y.sum())))
            expected_hist.append(y.copy())
            x = fn(x, torch.tensor(i))  # a tensor step: no recompile as it advances
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1
    assert _series(tmp_path, "loss") == expected_loss
    assert _series(tmp_path, "every_3") == expected_3
    hists = _histograms(tmp_path, "train/y")
    assert [s for s, _ in hists] == list(range(7))
    # Equal to what the host path writes for the same values.
    host = tmp_path / "host"
    with sl.create_file_writer(str(host)) as w, w.as_default():
        for i, y in enumerate(expected_hist):
            sl.histogram("train/y", y, step=i)
    for (_, got), (_, want) in zip(hists, _histograms(host, "train/y"), strict=True):
        np.testing.assert_array_equal(got, want)


def test_writer_and_default_step_are_those_at_the_call(tmp_path: Path) -> None:
    torch._dynamo.reset()
    counters.clear()

    def fn(x: Any) -> Any:
        sl.scalar("v", x.sum())
        return x + 1.0

    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    a, b = tmp_path / "a", tmp_path / "b"
    wa, wb = sl.create_file_writer(str(a)), sl.create_file_writer(str(b))
    x = torch.zeros(2)
    with wa.as_default(step=5):
        x = compiled(x)  # traced here, with wa
    with wb.as_default(step=7):
        x = compiled(x)  # the same graph writes to wb, at wb's step
    x = compiled(x)  # no default writer: nothing written
    wa.close()
    wb.close()
    assert _series(a, "v") == [(5, 0.0)]
    assert _series(b, "v") == [(7, 2.0)]
    assert sum(counters["graph_break"].values()) == 0


def test_explain_reports_no_graph_break(tmp_path: Path) -> None:
    torch._dynamo.reset()
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        explanation = torch._dynamo.explain(step_fn)(torch.ones(3), torch.tensor(0))
    assert explanation.graph_break_count == 0
    assert explanation.graph_count == 1


def test_bad_values_raise_naming_the_op(tmp_path: Path) -> None:
    torch._dynamo.reset()

    def fn(x: Any) -> Any:
        sl.scalar("loss", x, step=0)  # a vector is no scalar
        return x

    compiled = torch.compile(fn, backend="eager", fullgraph=True)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default(), pytest.raises(
        (TypeError, ValueError), match=r"scalar"
    ):
        compiled(torch.ones(3))


def test_scalars_of_a_dict_of_tensors(tmp_path: Path) -> None:
    torch._dynamo.reset()
    counters.clear()

    def fn(x: Any, step: Any) -> Any:
        sl.scalars({"sum": x.sum(), "max": x.max(), "fixed": 0.5}, step=step)
        return x + 1.0

    compiled = torch.compile(fn, backend="eager", fullgraph=True)
    x = torch.arange(3, dtype=torch.float32)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(3):
            x = compiled(x, torch.tensor(i))
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1
    assert _series(tmp_path, "sum") == [(0, 3.0), (1, 6.0), (2, 9.0)]
    assert _series(tmp_path, "max") == [(0, 2.0), (1, 3.0), (2, 4.0)]
    assert _series(tmp_path, "fixed") == [(0, 0.5), (1, 0.5), (2, 0.5)]


def test_the_summary_op_is_never_recorded_into_a_cuda_graph(tmp_path: Path) -> None:
    # A CUDA graph replays recorded kernels only: an op that runs Python there would
    # write once, at recording. Tagged unsafe, inductor partitions the region around it.
    import summarylib.ops._compiled_torch  # noqa: F401  (defines the op)

    assert torch.Tag.cudagraph_unsafe in torch.ops.summarylib.summary.default.tags

    def f(x: Any, step: Any) -> Any:
        y = torch.tanh(x) * 2
        sl.scalar("m", y.mean(), step=step)
        return y

    torch._dynamo.reset()
    fn = torch.compile(f, mode="reduce-overhead", fullgraph=True)  # CUDA graphs on a GPU
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(4):
            fn(torch.full((4,), float(i)), torch.tensor(i))
    want = [float(np.float32(np.tanh(np.float32(i)) * 2)) for i in range(4)]
    assert _series(tmp_path, "m") == list(enumerate(want))


def _video_and_mesh(v: Any, m: Any, i: Any) -> Any:
    sl.video("clip", v, step=i, fps=3)
    sl.mesh("shape", m, faces=torch.zeros((1, 2, 3), dtype=torch.int32) + i % 2,
            colors=(m * 255).to(torch.uint8), step=i, config_dict={"a": 1})
    return v


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_video_and_mesh_write_each_run_as_the_eager_calls(tmp_path: Path,
                                                          backend: str) -> None:
    def value_bytes(logdir: Path) -> list[tuple[int, str, bytes]]:
        return [(e.step, v.tag, v.SerializeToString()) for e, v in iter_summary_values(logdir)]

    rng = np.random.default_rng(0)
    runs = [(torch.from_numpy(rng.random((2, 3, 4, 5, 3), np.float32)),
             torch.from_numpy(rng.random((1, 6, 3), np.float32))) for _ in range(3)]
    with sl.create_file_writer(str(tmp_path / "eager")) as w, w.as_default():
        for i, (v, m) in enumerate(runs):
            _video_and_mesh(v, m, torch.tensor(i))
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(_video_and_mesh, backend=backend, fullgraph=True)
    with sl.create_file_writer(str(tmp_path / "compiled")) as w, w.as_default():
        for i, (v, m) in enumerate(runs):
            fn(v, m, torch.tensor(i))
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1
    want = value_bytes(tmp_path / "eager")
    assert [(s, t) for s, t, _ in want] == [
        (i, t) for i in range(3) for t in ("clip", "shape_VERTEX", "shape_FACE", "shape_COLOR")]
    assert value_bytes(tmp_path / "compiled") == want


def _values_in_order(logdir: Path) -> list[tuple[int, bytes]]:
    # Every Summary.Value of the run, in file order, with its step (not its wall time).
    return [(e.step, v.SerializeToString()) for e, v in iter_summary_values(logdir)]


def logged_fn(x: Any, step: Any) -> Any:
    y = x * 2.0
    sl.scalar("loss", y.mean(), step=step, description="the mean")
    sl.scalar("fixed_step", y.sum(), step=5)  # a constant of the graph
    sl.scalar("default_step", y.max())  # the default step when the code runs
    with sl.name_scope("train"):
        sl.scalar("scoped", y.min(), step=step)
    with sl.record_if(step % 3 == 0):  # false in most runs: those write nothing
        sl.scalar("gated", y.sum(), step=step)
        sl.histogram("h", y, step=step)
    sl.scalar("after", y[0], step=step)
    return y


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_runs_write_the_bytes_of_the_eager_calls_in_their_order(
    tmp_path: Path, backend: str
) -> None:
    # The compiled calls (scalars written without replaying scalar(), a false CPU
    # condition ending its ops first) against the same calls made eagerly.
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(logged_fn, backend=backend, fullgraph=True)
    compiled, eager = tmp_path / "compiled", tmp_path / "eager"
    x = torch.arange(4, dtype=torch.float32)  # sums and means stay exact
    # The eager calls first: a process's first host scalar() of a tensor extends the value
    # types scalar() checks, which a region traced before it guards on (one recompile).
    with sl.create_file_writer(str(eager)) as w, w.as_default(step=100):
        for i in range(8):
            y = (x + i) * 2.0
            sl.scalar("loss", y.mean(), step=i, description="the mean")
            sl.scalar("fixed_step", y.sum(), step=5)
            sl.scalar("default_step", y.max())
            with sl.name_scope("train"):
                sl.scalar("scoped", y.min(), step=i)
            if i % 3 == 0:
                sl.scalar("gated", y.sum(), step=i)
                sl.histogram("h", y.numpy(), step=i)
            sl.scalar("after", y[0], step=i)
    with sl.create_file_writer(str(compiled)) as w, w.as_default(step=100):
        for i in range(8):
            fn(x + i, torch.tensor(i))
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1
    got = _values_in_order(compiled)
    assert len(got) == 8 * 5 + 3 * 2
    assert got == _values_in_order(eager)


def test_the_op_is_called_by_the_dispatcher_without_python_layers(tmp_path: Path) -> None:
    # Each run calls the summary op once per op in the region; torch.library.custom_op's
    # Python autograd and in-place layers around it cost several times the write itself.
    # The op's error surfaces from its implementation with no torch/_library frame.
    torch._dynamo.reset()

    def fn(x: Any) -> Any:
        sl.scalar("loss", x, step=0)  # a vector is no scalar: raises when it runs
        return x

    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default(), pytest.raises(
        (TypeError, ValueError), match=r"scalar"
    ) as raised:
        compiled(torch.ones(3))
    frames = [str(entry.path) for entry in raised.traceback]
    assert any(f.endswith("_compiled_torch.py") for f in frames)
    assert not [f for f in frames if "torch/_library" in f.replace("\\", "/")]


def test_the_default_step_set_between_runs_needs_no_recompile(tmp_path: Path) -> None:
    # scalar() with no step inside the region: the step is the default when the code
    # runs. Reading it while tracing made dynamo guard on its value, so every set_step()
    # compiled the region again (and fullgraph=True failed at the recompile limit).
    with sl.create_file_writer(str(tmp_path / "warm")) as w, w.as_default():
        sl.scalar("warm", torch.tensor(1.0), step=0)  # a host tensor scalar() first
    torch._dynamo.reset()
    counters.clear()

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step_fn(x: Any) -> Any:
        sl.scalar("loss", x.mean())
        return x + 1

    with sl.create_file_writer(str(tmp_path / "run")) as w, w.as_default():
        for i in range(12):
            sl.set_step(i)
            step_fn(torch.full((3,), float(i)))
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1
    assert _series(tmp_path / "run", "loss") == [(i, float(i)) for i in range(12)]


def test_the_bench_counts_the_graph_break_of_item_before_a_write(tmp_path: Path) -> None:
    # torch's add_scalar(loss.item()) inside a region breaks the graph at item(), and
    # dynamo skips torch's add_scalar after it (a second break); no tensor work follows,
    # so explain finds one graph and its graph_break_count (graphs less one) reads 0. The
    # bench reports the breaks dynamo records.
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from compiled_torch import graph_breaks
    from torch.utils.tensorboard import SummaryWriter

    tb = SummaryWriter(str(tmp_path / "torch"))

    def torch_inside(x: Any, step: Any) -> Any:
        loss = (x * 2.0).mean()
        tb.add_scalar("loss", loss.item(), int(step))
        return loss

    torch._dynamo.reset()
    assert graph_breaks(torch_inside, torch.ones(3), torch.tensor(0)) == (2, 1)
    with sl.create_file_writer(str(tmp_path / "ours")) as w, w.as_default():
        assert graph_breaks(step_fn, torch.ones(3), torch.tensor(0)) == (0, 1)
    tb.close()


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x: Any, step: Any) -> Any:
        y = self.lin(x)
        sl.scalar("act_mean", y.mean(), step=step)
        with sl.record_if(step % 2 == 0):  # with a dynamic int step: a symbolic bool
            sl.histogram("act", y, step=step)
        return y


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_module_logging_in_forward_with_an_int_step_trains(tmp_path: Path,
                                                              backend: str) -> None:
    # The usual loop: model(x, i) with i a Python int, the loss backpropagated through
    # the region. Dynamo makes an int argument that changes dynamic (one recompile, its
    # own rule); the step then is a symbolic int, which entered the call's constants and
    # failed ("assume_constant_result argument conversion failed") at the second call,
    # and `step % 2 == 0` a symbolic bool, which record_if called as a function.
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    net = _Net()
    compiled = torch.compile(net, backend=backend, fullgraph=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.linspace(-1.0, 1.0, 8).reshape(2, 4)
    expected = []
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        for i in range(5):
            with torch.no_grad():
                expected.append(float(net.lin(x).mean()))
            y = compiled(x, i)
            (y ** 2).mean().backward()
            opt.step()
            opt.zero_grad()
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 2  # the int specialized, then dynamic
    got = _series(tmp_path, "act_mean")
    assert [s for s, _ in got] == list(range(5))
    assert [v for _, v in got] == pytest.approx(expected, rel=1e-5)
    assert len(set(expected)) == 5  # the weights moved: each run wrote its own values
    assert [s for s, _ in _histograms(tmp_path, "act")] == [0, 2, 4]


def test_ops_under_vmap_raise_naming_the_op(tmp_path: Path) -> None:
    with sl.create_file_writer(str(tmp_path)) as w, w.as_default():
        with pytest.raises(TypeError, match=r"scalar: 'data' is a tensor of torch.func.vmap"):
            torch.func.vmap(lambda v: (sl.scalar("v", v.sum(), step=0), v)[1])(
                torch.ones(2, 3))
        with pytest.raises(TypeError, match=r"histogram: 'data' is a tensor of torch.func"):
            torch.func.vmap(torch.func.grad(
                lambda v: (sl.histogram("h", v, step=0), v.sum())[1]))(torch.ones(2, 3))
        sl.scalar("after", 1.0, step=0)  # the writer is unharmed
    assert _series(tmp_path, "after") == [(0, 1.0)]
    assert _series(tmp_path, "v") == []
