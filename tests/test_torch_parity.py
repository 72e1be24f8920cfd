"""Same dashboards as torch: one training script, torch's SummaryWriter vs ours, compared
over the real TensorBoard's HTTP API, plugin by plugin.

The script is written for ``torch.utils.tensorboard``; the only difference between the two
runs is the class. The documented differences allowed here:
  * hparams: torch writes the trial into a new ``<log_dir>/<time.time()>`` run with its
    metric values as placeholders there; ours writes it into the run itself and the metric
    is the run's own logged series. So hparams are compared by their values, not runs.
  * add_graph: torch traces with TorchScript, ours captures with torch.fx/export; both
    runs have an op graph (compared by presence).
  * wall times differ (time of writing).
Everything else (runs, tags, steps, values, pixels, text, PR counts, projector config and
tensors, custom scalar layout, meshes) must be equal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from tests.tbserver import TensorBoardServer

torch = pytest.importorskip("torch")
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

LAYOUT = {"losses": {"loss and acc": ["Multiline", ["loss", "accuracy"]],
                     "band": ["Margin", ["loss", "metrics", "metrics"]]}}


def training_script(SummaryWriter: Any, logdir: str) -> None:
    """A small training loop as a torch user writes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    writer = SummaryWriter(logdir)
    writer.add_custom_scalars(LAYOUT)
    writer.add_graph(model, x[:2])
    for step in range(30):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        writer.add_scalar("loss", loss.item(), step)
        writer.add_scalar("accuracy", 1.0 / (1.0 + loss.item()), step)
        writer.add_scalars("metrics", {"a": math.sin(step), "b": math.cos(step)}, step)
        if step % 10 == 0:
            writer.add_histogram("weights/0", model[0].weight, step)
            writer.add_image("input", torch.rand(3, 16, 20), step)
            writer.add_images("batch", torch.rand(5, 1, 8, 8), step)
            writer.add_text("note", f"step **{step}**", step)
            probs = torch.sigmoid(model(x)).squeeze()
            writer.add_pr_curve("pr", (y.squeeze() > 0), probs.detach(), step)
            writer.add_audio("tone", np.sin(np.arange(800) * step / 50.0), step,
                             sample_rate=8000)
    fig = plt.figure(figsize=(2, 2), dpi=50)
    plt.plot([0, 1, 2], [1, 0, 1])
    writer.add_figure("figure", fig, 0)
    writer.add_embedding(rng.random((50, 8)).astype(np.float32),
                         metadata=[f"p{i}" for i in range(50)], tag="emb")
    writer.add_mesh("mesh", vertices=np.array([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]]),
                    colors=np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]]),
                    faces=np.array([[[0, 1, 2]]]))
    writer.add_hparams({"lr": 0.05, "bs": 64, "opt": "sgd"}, {"accuracy": 0.5})
    writer.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import warnings

    root = tmp_path_factory.mktemp("parity")
    with warnings.catch_warnings():  # torch's add_graph warns that TorchScript is deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        training_script(TorchWriter, str(root / "torch"))
    training_script(sl.SummaryWriter, str(root / "ours"))
    with TensorBoardServer(root / "torch") as theirs, TensorBoardServer(root / "ours") as ours:
        for tb in (theirs, ours):  # wait until both have loaded everything
            tb.poll(lambda tb=tb: tb.get_json("/data/plugin/scalars/tags"),
                    lambda tags: "metrics_b" in tags and "loss" in tags.get(".", {}))
            tb.poll(lambda tb=tb: tb.get_json("/data/plugin/images/tags"),
                    lambda tags: "figure" in tags.get(".", {}))
        yield ours, theirs


def both(servers: Any, path: str, **params: Any) -> tuple[Any, Any]:
    ours, theirs = servers
    return ours.get_json(path, **params), theirs.get_json(path, **params)


def without_wall_times(points: list[list[Any]]) -> list[Any]:
    return [p[1:] for p in points]


def test_runs(servers: Any) -> None:
    ours, theirs = both(servers, "/data/runs")
    theirs = [r for r in theirs if not r.replace(".", "").isdigit()]  # torch's hparams run
    assert sorted(ours) == sorted(theirs)


def test_scalars(servers: Any) -> None:
    ours, theirs = both(servers, "/data/plugin/scalars/tags")
    theirs = {r: t for r, t in theirs.items() if not r.replace(".", "").isdigit()}
    assert {r: sorted(t) for r, t in ours.items()} == {r: sorted(t) for r, t in theirs.items()}
    for run, tags in ours.items():
        for tag in tags:
            a, b = both(servers, "/data/plugin/scalars/scalars", run=run, tag=tag)
            assert without_wall_times(a) == without_wall_times(b), (run, tag)


def test_histograms(servers: Any) -> None:
    ours, theirs = both(servers, "/data/plugin/histograms/tags")
    assert ours == theirs
    a, b = both(servers, "/data/plugin/histograms/histograms", run=".", tag="weights/0")
    assert without_wall_times(a) == without_wall_times(b)


def test_image_pixels(servers: Any) -> None:
    from io import BytesIO

    from PIL import Image

    ours_tb, theirs_tb = servers
    ours, theirs = both(servers, "/data/plugin/images/tags")
    assert ours == theirs
    for tag in ours["."]:
        a, b = both(servers, "/data/plugin/images/images", run=".", tag=tag, sample=0)
        assert [e["step"] for e in a] == [e["step"] for e in b]
        for ea, eb in zip(a, b, strict=True):
            pa = Image.open(BytesIO(ours_tb.get("/data/plugin/images/individualImage?"
                                                + ea["query"])))
            pb = Image.open(BytesIO(theirs_tb.get("/data/plugin/images/individualImage?"
                                                  + eb["query"])))
            np.testing.assert_array_equal(np.asarray(pa.convert("RGBA")),
                                          np.asarray(pb.convert("RGBA")), err_msg=tag)


def test_text(servers: Any) -> None:
    ours, theirs = both(servers, "/data/plugin/text/tags")
    assert ours == theirs
    a, b = both(servers, "/data/plugin/text/text", run=".", tag="note/text_summary")
    assert [(e["step"], e["text"]) for e in a] == [(e["step"], e["text"]) for e in b]


def test_pr_curves(servers: Any) -> None:
    ours, theirs = both(servers, "/data/plugin/pr_curves/tags")
    assert ours == theirs
    a, b = both(servers, "/data/plugin/pr_curves/pr_curves", run=".", tag="pr")
    strip = [{k: v for k, v in e.items() if k != "wall_time"} for e in a["."]]
    assert strip == [{k: v for k, v in e.items() if k != "wall_time"} for e in b["."]]


def test_audio(servers: Any) -> None:
    ours_tb, theirs_tb = servers
    a, b = both(servers, "/data/plugin/audio/audio", run=".", tag="tone", sample=0)
    assert [e["step"] for e in a] == [e["step"] for e in b] == [0, 10, 20]
    import io
    import wave

    for ea, eb in zip(a, b, strict=True):
        ours_wav = ours_tb.get("/data/plugin/audio/individualAudio?" + ea["query"])
        theirs_wav = theirs_tb.get("/data/plugin/audio/individualAudio?" + eb["query"])
        with wave.open(io.BytesIO(ours_wav)) as wa, wave.open(io.BytesIO(theirs_wav)) as wb:
            assert wa.getframerate() == wb.getframerate() == 8000
            assert wa.readframes(10**6) == wb.readframes(10**6)


def test_custom_scalars_layout(servers: Any) -> None:
    ours, theirs = both(servers, "/data/plugin/custom_scalars/layout")
    assert ours == theirs and ours["category"][0]["title"] == "losses"


def test_projector(servers: Any) -> None:
    ours_tb, theirs_tb = servers
    ours, theirs = both(servers, "/data/plugin/projector/runs")
    assert ours == theirs
    run = ours[0]
    a, b = both(servers, "/data/plugin/projector/info", run=run)
    assert a["embeddings"] == b["embeddings"]
    name = a["embeddings"][0]["tensorName"]
    ta = ours_tb.get("/data/plugin/projector/tensor", run=run, name=name)
    tb = theirs_tb.get("/data/plugin/projector/tensor", run=run, name=name)
    assert ta == tb and len(ta) == 50 * 8 * 4
    ma = ours_tb.get("/data/plugin/projector/metadata", run=run, name=name)
    assert ma == theirs_tb.get("/data/plugin/projector/metadata", run=run, name=name)


def test_mesh(servers: Any) -> None:
    ours_tb, theirs_tb = servers
    ours, theirs = both(servers, "/data/plugin/mesh/tags")
    assert ours == theirs
    a, b = both(servers, "/data/plugin/mesh/meshes", run=".", tag="mesh")
    # Listed in the data server's order of the component tags: compare as sets.
    strip = lambda ms: sorted(  # noqa: E731
        ({k: v for k, v in m.items() if k != "wall_time"} for m in ms),
        key=lambda m: m["content_type"])
    assert strip(a) == strip(b) and len(a) == 3
    for content_type in ("VERTEX", "FACE", "COLOR"):
        params = dict(run=".", tag="mesh", sample=0, content_type=content_type, step=0)
        assert ours_tb.get("/data/plugin/mesh/data", **params) == \
            theirs_tb.get("/data/plugin/mesh/data", **params)


def test_graphs_present(servers: Any) -> None:
    ours, theirs = both(servers, "/data/plugin/graphs/info")
    assert ours["."]["run_graph"] and theirs["."]["run_graph"]


def test_hparams_in_the_run_itself(servers: Any) -> None:
    ours_tb, theirs_tb = servers
    body = {"experimentName": ""}
    exp_ours = ours_tb.post_json("/data/plugin/hparams/experiment", body)
    exp_theirs = theirs_tb.post_json("/data/plugin/hparams/experiment", body)
    hp = lambda e: sorted(h["name"] for h in e["hparamInfos"])  # noqa: E731
    assert hp(exp_ours) == hp(exp_theirs) == ["bs", "lr", "opt"]
    assert [m["name"]["tag"] for m in exp_ours["metricInfos"]] == ["accuracy"]
    request = {"experimentName": "", "startIndex": 0, "sliceSize": 10,
               "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                   "STATUS_RUNNING"],
               "colParams": [{"hparam": "lr"}, {"metric": {"tag": "accuracy", "group": ""}}]}
    groups = ours_tb.post_json("/data/plugin/hparams/session_groups", request)
    (group,) = groups["sessionGroups"]
    (session,) = group["sessions"]
    assert session["name"] == "."  # the run holding the curves, not a timestamp run
    assert group["hparams"] == {"lr": 0.05, "bs": 64, "opt": "sgd"}
    (metric,) = group["metricValues"]
    curve = ours_tb.get_json("/data/plugin/scalars/scalars", run=".", tag="accuracy")
    assert metric["value"] == pytest.approx(curve[-1][2])  # the run's last value
    assert metric["trainingStep"] == 29
    theirs = theirs_tb.post_json("/data/plugin/hparams/session_groups", request)
    assert theirs["sessionGroups"][0]["hparams"] == group["hparams"]
