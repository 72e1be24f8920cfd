"""summarylib.integrations.clu: a Flax/JAX loop logged through clu's MetricWriter interface.

clu's own package needs TensorFlow to import; a subprocess loads its interface, AsyncWriter,
MultiWriter and TorchTensorboardWriter modules without running the package's __init__
(a stub package) to check that ours subclasses clu's ABC and composes with its writers, and
to compare with clu's torch writer (the only clu hook that runs here).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.observe import assert_same_observations, observe
from tests.tbserver import TensorBoardServer

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")


def test_flax_loop_served_by_tensorboard(tmp_path: Path) -> None:
    import flax.linen as nn
    import jax.numpy as jnp
    import optax

    from summarylib.integrations.clu import MetricWriter

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            return nn.Dense(1)(nn.relu(nn.Dense(8)(x)))

    model = MLP()
    x = jnp.linspace(-1, 1, 32).reshape(-1, 1)
    y = x**2
    params = model.init(jax.random.PRNGKey(0), x)
    tx = optax.sgd(0.1)
    opt_state = tx.init(params)

    @jax.jit
    def step_fn(params: object, opt_state: object) -> tuple[object, object, jax.Array]:
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(
            params)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    writer = MetricWriter(tmp_path / "run")
    writer.write_hparams({"optimizer": {"name": "sgd", "lr": 0.1}, "hidden": [8]})
    losses = []
    for step in range(20):
        params, opt_state, loss = step_fn(params, opt_state)
        writer.write_scalars(step, {"loss": loss})  # a JAX array, not synchronized here
        losses.append(loss)
        if step % 10 == 0:
            kernel = params["params"]["Dense_0"]["kernel"]
            writer.write_histograms(step, {"dense0/kernel": kernel})
            writer.write_images(step, {"kernel": jnp.abs(kernel)[None, :, :, None]})
    writer.close()
    expected = [float(np.float32(v)) for v in losses]
    with TensorBoardServer(tmp_path) as tb:
        points = tb.poll(lambda: tb.get_json("/data/plugin/scalars/scalars", run="run",
                                              tag="loss"), lambda p: len(p) == 20)
        assert [p[1] for p in points] == list(range(20))
        assert [p[2] for p in points] == expected
        hist = tb.get_json("/data/plugin/histograms/tags")["run"]
        assert list(hist) == ["dense0/kernel"]
        images = tb.get_json("/data/plugin/images/images", run="run", tag="kernel", sample=0)
        assert [e["step"] for e in images] == [0, 10]
        experiment = tb.post_json("/data/plugin/hparams/experiment", {"experimentName": ""})
        groups = tb.post_json("/data/plugin/hparams/session_groups", {
            "experimentName": "", "startIndex": 0, "sliceSize": 10, "colParams": [],
            "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                "STATUS_RUNNING"]})
    assert sorted(h["name"] for h in experiment["hparamInfos"]) == [
        "hidden.0", "optimizer.lr", "optimizer.name"]
    (group,) = groups["sessionGroups"]
    (metric,) = group["metricValues"]  # the run's own loss series, its last value
    assert metric["name"]["tag"] == "loss" and metric["value"] == expected[-1]
    (session,) = group["sessions"]
    assert session["status"] == "STATUS_SUCCESS"  # close() ended the trial


def test_background_errors_surface_on_the_next_call(tmp_path: Path) -> None:
    from summarylib.integrations.clu import MetricWriter

    writer = MetricWriter(tmp_path)
    writer.write_scalars(0, {"bad": "not a number"})
    with pytest.raises(TypeError, match="scalars"):
        writer.flush()
    writer.write_scalars(1, {"good": 1.0})  # the writer keeps working
    writer.close()
    assert observe(tmp_path)["."]["good"].values == [1.0]
    with pytest.raises(TypeError, match="write_scalars: expected a mapping"):
        MetricWriter(tmp_path / "x", asynchronous=False).write_scalars(0, [1.0])  # type: ignore


CLU_CHILD = textwrap.dedent('''
    import importlib.util, sys, types, json
    import numpy as np
    spec = importlib.util.find_spec("clu")
    pkg = types.ModuleType("clu.metric_writers")
    pkg.__path__ = [spec.submodule_search_locations[0] + "/metric_writers"]
    sys.modules["clu.metric_writers"] = pkg   # clu's __init__ would import TensorFlow
    from clu.metric_writers import interface, async_writer, multi_writer
    from clu.metric_writers import torch_tensorboard_writer
    from summarylib.integrations.clu import MetricWriter
    assert issubclass(MetricWriter, interface.MetricWriter)
    ours_dir, theirs_dir, multi_dir = sys.argv[1:4]
    ours = MetricWriter(ours_dir)
    theirs = torch_tensorboard_writer.TorchTensorboardWriter(theirs_dir)
    rng = np.random.default_rng(0)
    # uint8: float pixels are rounded by TensorFlow's rule (clu's own writer, and ours) but
    # truncated by torch's, one level apart.
    image = rng.integers(0, 256, (6, 5, 3)).astype(np.uint8)
    clip = (np.sin(np.arange(400) / 5.0) * 0.5).astype(np.float32)
    for w in (async_writer.AsyncWriter(ours), theirs):
        for step in range(5):
            w.write_scalars(step, {"loss": 1.0 / (step + 1), "acc": step / 10})
        w.write_images(2, {"img": image})
        w.flush()
        w.close()
    multi = multi_writer.MultiWriter([MetricWriter(multi_dir + "/a"),
                                      MetricWriter(multi_dir + "/b")])
    multi.write_scalars(3, {"x": 2.0})
    multi.write_texts(3, {"note": "hello"})
    multi.close()
    print("ok")
''')


def test_subclass_of_clus_abc_composes_and_matches_clus_torch_writer(tmp_path: Path) -> None:
    pytest.importorskip("clu")
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-c", CLU_CHILD, str(tmp_path / "ours"),
                           str(tmp_path / "theirs"), str(tmp_path / "multi")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
    assert_same_observations(observe(tmp_path / "ours"), observe(tmp_path / "theirs"))
    multi = observe(tmp_path / "multi")
    for run in ("a", "b"):
        assert multi[run]["x"].values == [2.0] and multi[run]["note"].values == [["hello"]]


def test_values_donated_after_the_call_are_written(tmp_path: Path) -> None:
    # The writer writes from its own thread, later; the loop donates its state to the next
    # step right after the call, which deletes the arrays handed to the writer.
    import jax.numpy as jnp

    from summarylib.integrations.clu import MetricWriter
    from tests.helpers import tb_events

    def step(s: dict[str, Any]) -> dict[str, Any]:
        busy = jax.lax.fori_loop(0, 100, lambda i, a: jnp.tanh(a @ a) + 0.001, s["busy"])
        return {"busy": busy, "m": s["m"] + 0.5, "w": s["w"] * 0.5}

    train = jax.jit(step, donate_argnums=0)
    w0 = np.linspace(-1, 1, 50, dtype=np.float32)
    fresh = {"busy": jnp.full((128, 128), 0.01, jnp.float32), "m": jnp.float32(0), "w": w0}
    train({k: jnp.asarray(v) + 0 for k, v in fresh.items()})  # compiled
    s = {k: jnp.asarray(v) + 0 for k, v in fresh.items()}
    device = MetricWriter(tmp_path / "device")
    host = MetricWriter(tmp_path / "host", asynchronous=False)
    for i in range(5):
        device.write_scalars(i, {"m": s["m"]})
        device.write_histograms(i, {"w": s["w"]})
        host.write_scalars(i, {"m": np.float32(0.5 * i)})
        host.write_histograms(i, {"w": w0 * np.float32(0.5**i)})
        s = train(s)
    device.close()
    host.close()

    def written(run: str) -> dict[tuple[int, str], bytes]:
        (path,) = (tmp_path / run).glob("events.out.tfevents.*")
        return {(e.step, v.tag): v.SerializeToString() for e in tb_events(path)
                for v in e.summary.value}

    got = written("device")
    assert len(got) == 10
    assert got == written("host")
