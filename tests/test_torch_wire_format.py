"""torch's wire format: the same ``add_*`` calls through torch's ``SummaryWriter`` and ours,
read back with TensorBoard's ``EventAccumulator`` and with tbparse, give the same answers
tag by tag; where torch's bytes are deterministic, the ``Summary.Value`` bytes are equal.

torch writes no video without moviepy (an empty value), so ours is checked on its own.
"""

from __future__ import annotations

import io
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from tests.helpers import tb_events

torch = pytest.importorskip("torch")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

KINDS = ("images", "audio", "histograms", "scalars", "tensors")


def calls(SummaryWriter: Any, logdir: Path) -> None:
    """Every add_* method that writes summaries, as a torch user calls it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    w = SummaryWriter(str(logdir))
    for step in range(3):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("np", np.float32(step) * 0.5, step)
        w.add_scalars("m", {"a": math.sin(step), "b": math.cos(step)}, step)
    w.add_scalar("big_step", 2.5, 1 << 40)
    w.add_tensor("tensor", torch.tensor([[1.0, 2.0], [3.0, 4.5]]), 2)
    w.add_scalar("new", torch.tensor(0.25), 1, new_style=True)
    w.add_scalar("new64", 0.1, 2, new_style=True, double_precision=True)
    w.add_histogram("hist", rng.normal(size=200), 1)
    w.add_histogram("hist_bins", rng.random(50), 2, bins=5)
    w.add_histogram_raw("hist_raw", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 2, 1], 3)
    w.add_image("img_chw", torch.rand(3, 6, 5, generator=torch.Generator().manual_seed(1)), 1)
    w.add_image("img_hwc", rng.integers(0, 256, (4, 7, 3), dtype=np.uint8), 1,
                dataformats="HWC")
    w.add_image("img_gray", rng.random((1, 5, 5)), 2)
    w.add_image("img_rgba", rng.random((4, 3, 3)), 2)
    w.add_images("grid", rng.random((5, 3, 4, 4)), 1)
    w.add_image_with_boxes("boxes", rng.random((3, 12, 12)), np.array([[1, 1, 8, 8]]), 1)
    fig = plt.figure(figsize=(1, 1), dpi=20)
    plt.plot([0, 1], [1, 0])
    w.add_figure("fig", fig, 1)
    w.add_audio("tone", np.sin(np.arange(400) / 7.0), 1, sample_rate=8000)
    w.add_text("note", "**hi**", 1)
    labels, preds = rng.integers(0, 2, 40), rng.random(40)
    w.add_pr_curve("pr", labels, preds, 1, num_thresholds=9)
    w.add_pr_curve_raw("pr_raw", [3, 2, 1], [2, 1, 0], [0, 1, 2], [0, 1, 2], [0.6, 0.66, 1.0],
                       [1.0, 0.66, 0.33], 1)
    w.add_mesh("mesh", np.array([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]]),
               colors=np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]]),
               faces=np.array([[[0, 1, 2]]]), global_step=1)
    w.add_custom_scalars({"c": {"chart": ["Multiline", ["loss", "np"]]}})
    w.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wire")
    out = {"torch": root / "torch", "ours": root / "ours"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls(TorchWriter, out["torch"])
        calls(sl.SummaryWriter, out["ours"])
    return out


def accumulators(logdir: Path) -> dict[str, EventAccumulator]:
    """One loaded EventAccumulator per run (the log directory and its sub-runs)."""
    found = {}
    for d in sorted({p.parent for p in logdir.rglob("events.out.tfevents.*")}):
        ea = EventAccumulator(str(d), size_guidance={k: 0 for k in KINDS})
        ea.Reload()
        found[str(d.relative_to(logdir))] = ea
    return found


@pytest.fixture(scope="module")
def loaded(runs: dict[str, Path]) -> dict[str, dict[str, EventAccumulator]]:
    return {who: accumulators(path) for who, path in runs.items()}


def test_runs_and_tags_are_torchs(loaded: dict[str, dict[str, EventAccumulator]]) -> None:
    torch_runs, ours = loaded["torch"], loaded["ours"]
    assert sorted(ours) == sorted(torch_runs)
    for run, ea in torch_runs.items():
        want = {k: sorted(v) for k, v in ea.Tags().items() if isinstance(v, list)}
        got = {k: sorted(v) for k, v in ours[run].Tags().items() if isinstance(v, list)}
        assert got == want, run


def _pixels(encoded: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(encoded)))


def _tensor(event: Any) -> tuple[Any, Any]:
    from tensorboard.util import tensor_util

    arr = tensor_util.make_ndarray(event.tensor_proto)
    return arr.dtype, arr.tolist()


# What each accessor of EventAccumulator answers, made comparable (wall times left out).
ANSWERS = {
    "scalars": lambda ea, tag: [(e.step, e.value) for e in ea.Scalars(tag)],
    "histograms": lambda ea, tag: [(e.step, e.histogram_value) for e in ea.Histograms(tag)],
    "images": lambda ea, tag: [(e.step, e.width, e.height,
                                _pixels(e.encoded_image_string).tolist())
                               for e in ea.Images(tag)],
    "audio": lambda ea, tag: [(e.step, e.encoded_audio_string, e.content_type, e.sample_rate,
                               e.length_frames) for e in ea.Audio(tag)],
    "tensors": lambda ea, tag: [(e.step, _tensor(e),
                                 ea.SummaryMetadata(tag).plugin_data.plugin_name,
                                 ea.SummaryMetadata(tag).plugin_data.content)
                                for e in ea.Tensors(tag)],
}


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_every_tag_reads_as_torchs(loaded: dict[str, dict[str, EventAccumulator]],
                                   kind: str) -> None:
    answer = ANSWERS[kind]
    seen = 0
    for run, ea in loaded["torch"].items():
        ours = loaded["ours"][run]
        for tag in ea.Tags()[kind]:
            assert answer(ours, tag) == answer(ea, tag), (run, tag)
            seen += 1
    assert seen


def _values(path: Path) -> dict[str, list[tuple[int, bytes]]]:
    # Each tag's Summary.Value bytes as written (no reader migrations).
    out: dict[str, list[tuple[int, bytes]]] = {}
    for f in sorted(path.glob("events.out.tfevents.*")):
        for e in tb_events(f):
            for v in e.summary.value:
                out.setdefault(v.tag, []).append((e.step, v.SerializeToString()))
    return out


def test_value_bytes_are_torchs(runs: dict[str, Path]) -> None:
    torch_values, ours = _values(runs["torch"]), _values(runs["ours"])
    # Deterministic encodings: scalars of both forms, histograms, audio, text, PR data.
    # (PNG bytes depend on the encoder: images are compared by pixels above. Metadata
    # torch repeats on every value is written with a tag's first value only.)
    for tag in ("loss", "np", "big_step", "new", "new64", "hist", "hist_bins", "hist_raw",
                "tone", "note/text_summary", "pr", "pr_raw"):
        assert ours[tag][0] == torch_values[tag][0], tag
        assert len(ours[tag]) == len(torch_values[tag]), tag
    assert ours["loss"] == torch_values["loss"]


def test_tbparse_reads_ours_as_torchs(runs: dict[str, Path]) -> None:
    tbparse = pytest.importorskip("tbparse")

    def frames(path: Path) -> dict[str, Any]:
        with warnings.catch_warnings():  # pandas' deprecations inside tbparse
            warnings.simplefilter("ignore")
            reader = tbparse.SummaryReader(str(path), extra_columns={"dir_name"})
            return {"scalars": reader.scalars, "histograms": reader.histograms,
                    "tensors": reader.tensors, "text": reader.text}

    theirs, ours = frames(runs["torch"]), frames(runs["ours"])
    for kind, want in theirs.items():
        got = ours[kind]
        assert len(want), kind
        key = [c for c in ("dir_name", "tag", "step") if c in want.columns]
        want = want.sort_values(key).reset_index(drop=True)
        got = got.sort_values(key).reset_index(drop=True)
        assert list(got.columns) == list(want.columns), kind
        for column in want.columns:
            assert str(list(got[column])) == str(list(want[column])), (kind, column)


def test_video_is_a_gif_in_an_image_value(tmp_path: Path) -> None:
    from PIL import Image

    with sl.SummaryWriter(tmp_path) as w:
        w.add_video("v", np.random.default_rng(0).random((1, 3, 3, 8, 6)), 4, fps=5)
    ea = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    ea.Reload()
    assert ea.Tags()["images"] == ["v"] and ea.Tags()["tensors"] == []
    (event,) = ea.Images("v")
    assert (event.step, event.width, event.height) == (4, 6, 8)
    gif = Image.open(io.BytesIO(event.encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 3


def test_our_reader_reads_torchs_forms(runs: dict[str, Path]) -> None:
    from summarylib.reader import read_columns

    series = read_columns(str(runs["ours"]), purge="none")["."]
    assert [float(v) for v in series["loss"].value] == [1.0, 0.5, np.float32(1 / 3)]
    assert list(series["new"].step) == [1]


def test_torch_file_writer_surface(tmp_path: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    w = sl.SummaryWriter(tmp_path)
    fw = w.file_writer
    assert fw is not None and fw.get_logdir() == str(tmp_path)
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="x", simple_value=2.0)])
    fw.add_summary(summary, 5, walltime=10.0)
    fw.add_event(event_pb2.Event(summary=summary), step=6)
    with pytest.raises(ValueError, match=r"file_writer\.add_summary: 'summary'"):
        fw.add_summary(b"\xff\xff", 7)
    w.add_graph(torch.nn.Linear(2, 2), torch.zeros(1, 2))
    assert w.add_image("", np.zeros((3, 2, 2)), 1)  # an empty tag, as torch takes it
    fw.flush()
    fw.close()
    assert w.file_writer is None and w.all_writers is None
    ea = EventAccumulator(str(tmp_path))
    ea.Reload()
    assert [(e.step, e.value) for e in ea.Scalars("x")] == [(5, 2.0), (6, 2.0)]
    assert ea.Scalars("x")[0].wall_time == 10.0
    assert ea.Tags()["graph"] and ea.Tags()["run_metadata"] == ["step1"]  # torch's pair
    assert ea.RunMetadata("step1").step_stats.dev_stats[0].device == "/device:CPU:0"
    assert ea.Tags()["images"] == [""]


def test_one_threshold_pr_curve_is_tensorboardxs(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    labels, preds = np.array([1, 0, 1, 1, 0]), np.array([0.9, 0.2, 0.4, 0.6, 0.7])
    got = {}
    for name, cls in (("tbx", tbx.SummaryWriter), ("ours", sl.SummaryWriter)):
        with cls(str(tmp_path / name)) as w:
            w.add_pr_curve("pr", labels, preds, 1, num_thresholds=1)
        ea = EventAccumulator(str(tmp_path / name), size_guidance={"tensors": 0})
        ea.Reload()
        got[name] = ANSWERS["tensors"](ea, "pr")
    assert got["ours"] == got["tbx"]
    assert np.asarray(got["ours"][0][1][1]).shape == (6, 1)


@pytest.mark.parametrize(("method", "shape", "hint"), [
    ("add_image", (8, 8, 3), "dataformats='HWC'"),
    ("add_images", (2, 8, 8, 3), "dataformats='NHWC'"),
])
def test_layout_errors_name_dataformats(tmp_path: Path, method: str, shape: tuple[int, ...],
                                        hint: str) -> None:
    with sl.SummaryWriter(tmp_path) as w, pytest.raises(
        ValueError, match=rf"C axis of dataformats=.*pass {hint} if that is its layout"
    ):
        getattr(w, method)("x", np.zeros(shape), 0)
