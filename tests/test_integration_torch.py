"""summarylib.integrations.torch.watch: weight and gradient histograms every N steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import summarylib as sl
from tests.helpers import only_file, tb_events
from tests.observe import observe

torch = pytest.importorskip("torch")
from summarylib.integrations.torch import unwatch, watch  # noqa: E402


def train(model: torch.nn.Module, steps: int) -> list[dict[str, np.ndarray]]:
    """SGD steps; returns each step's gradients (copied after backward)."""
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    grads = []
    for _ in range(steps):
        x = torch.randn(8, 4)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        grads.append({n: p.grad.detach().numpy().copy() for n, p in model.named_parameters()})
        opt.step()
    return grads


def test_watch_all_every_n_steps(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    writer = sl.create_file_writer(tmp_path)
    watch(model, log="all", log_freq=5, writer=writer)
    grads = train(model, 12)
    model.eval()
    model(torch.randn(2, 4))  # evaluation: not a step
    unwatch(model)
    train(model, 3)  # after unwatch: nothing more
    writer.close()
    obs = observe(tmp_path)["."]
    names = [n for n, _ in model.named_parameters()]
    assert sorted(obs) == sorted([f"parameters/{n}" for n in names]
                                 + [f"gradients/{n}" for n in names])
    for tag, series in obs.items():
        assert series.plugin == "histograms" and series.steps == [0, 5, 10], tag
    # The gradient histogram of step 5 is the gradient of the 6th backward pass.
    hist = obs["gradients/0.weight"].values[1]
    assert hist[:, 2].sum() == grads[5]["0.weight"].size
    g = grads[5]["0.weight"]
    assert hist[0, 0] == pytest.approx(g.min(), rel=1e-6) and hist[-1, 1] == pytest.approx(
        g.max(), rel=1e-6)


def test_default_writer_step_and_errors(tmp_path: Path) -> None:
    model = torch.nn.Linear(2, 1)
    with pytest.raises(ValueError, match="watch: no writer"):
        watch(model)
    with pytest.raises(ValueError, match="watch: 'log' must be one of"):
        watch(model, log="weights", writer=sl.create_noop_writer())
    with pytest.raises(ValueError, match="watch: 'log_freq'"):
        watch(model, log_freq=0, writer=sl.create_noop_writer())
    with pytest.raises(TypeError, match="watch: 'model'"):
        watch("model", writer=sl.create_noop_writer())
    writer = sl.create_file_writer(tmp_path)
    with writer.as_default(step=100):
        handle = watch(model, log="parameters", log_freq=1)
        with pytest.raises(ValueError, match="already watched"):
            watch(model)
        model(torch.zeros(1, 2))
    handle.remove()
    unwatch(model)
    writer.close()
    assert observe(tmp_path)["."]["parameters/weight"].steps == [100]


def test_tensorboard_serves_the_histograms(tmp_path: Path) -> None:
    from tests.tbserver import TensorBoardServer

    model = torch.nn.Linear(4, 2)
    writer = sl.create_file_writer(tmp_path)
    watch(model, log="all", log_freq=3, writer=writer)
    train(model, 7)
    unwatch(model)
    writer.close()
    with TensorBoardServer(tmp_path) as tb:
        tags = tb.poll(lambda: tb.get_json("/data/plugin/histograms/tags"),
                       lambda t: len(t.get(".", {})) == 4)
        data = tb.get_json("/data/plugin/histograms/histograms", run=".",
                           tag="gradients/weight")
    assert sorted(tags["."]) == ["gradients/bias", "gradients/weight", "parameters/bias",
                                 "parameters/weight"]
    assert [d[1] for d in data] == [0, 3, 6]


def test_steps_in_between_read_no_tensor(tmp_path: Path) -> None:
    """Between logging steps the hooks only count: histograms only on logging steps."""
    model = torch.nn.Linear(4, 2)
    writer = sl.create_file_writer(tmp_path)
    watch(model, log="gradients", log_freq=50, writer=writer)
    train(model, 120)
    unwatch()
    writer.close()
    assert observe(tmp_path)["."]["gradients/weight"].steps == [0, 50, 100]


def test_logging_steps_do_not_flush_the_writer(tmp_path: Path) -> None:
    """A logging step queues its histograms; nothing waits for the writer (or a device)."""
    model = torch.nn.Linear(4, 2)
    writer = sl.create_file_writer(tmp_path, max_queue=1000)
    watch(model, log="all", log_freq=1, writer=writer)
    train(model, 2)
    unwatch()
    assert [e for e in tb_events(only_file(tmp_path)) if e.summary.value] == []
    writer.flush()
    assert len([e for e in tb_events(only_file(tmp_path)) if e.summary.value]) == 8
    writer.close()
