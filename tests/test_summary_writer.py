"""The one writer class: torch's constructor, the shared rules of ``add_*``, safety of names.

What each kind writes is checked against torch in tests/test_torch_parity.py and the peer
suites; this file covers the class itself.
"""

from __future__ import annotations

import os
import pickle
import re
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import summarylib as sl
from summarylib.writer._path_safety import safe_component
from tests.helpers import only_file, tb_events, tb_scalar_points, wait_until


def scalar_events(path: Path) -> list[tuple[str, int, float, float]]:
    return [(tag, step, wall, value) for tag, pts in tb_scalar_points(path).items()
            for step, wall, value in pts]


def test_one_class_for_both_habits(tmp_path: Path) -> None:
    w = sl.create_file_writer(tmp_path / "a")
    assert type(w) is sl.SummaryWriter
    with w.as_default(step=1):
        sl.scalar("tf_style", 1.0)
    w.add_scalar("torch_style", 2.0, 2)
    w.close()
    pts = scalar_events(only_file(tmp_path / "a"))
    assert [(t, s, v) for t, s, _, v in pts] == [("tf_style", 1, 1.0), ("torch_style", 2, 2.0)]
    assert isinstance(sl.SummaryWriter(tmp_path / "b"), sl.SummaryWriter)


def test_default_log_dir_is_torchs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with sl.SummaryWriter(comment="_lr0.1") as w:
        logdir = w.get_logdir()
    assert logdir is not None
    assert re.fullmatch(r"runs/\w{3}\d\d_\d\d-\d\d-\d\d_" + re.escape(socket.gethostname())
                        + r"_lr0\.1", logdir)
    assert only_file(tmp_path / logdir).stat().st_size > 0


def test_log_dir_aliases_and_comment(tmp_path: Path) -> None:
    with sl.SummaryWriter(logdir=str(tmp_path / "x"), comment="ignored") as w:
        assert w.get_logdir() == str(tmp_path / "x") == w.logdir
    with pytest.raises(TypeError, match="SummaryWriter: pass 'log_dir' or 'logdir'"):
        sl.SummaryWriter(tmp_path / "y", logdir=tmp_path / "z")
    assert not (tmp_path / "y").exists()


def test_filename_suffix_is_verbatim_as_torch(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path / "a", filename_suffix="_rank0") as w:
        pass
    assert w.path is not None and w.path.endswith("_rank0")
    assert re.search(r"\.\d+$", only_file(tmp_path / "a").name) is None
    with sl.SummaryWriter(tmp_path / "b") as w:
        pass
    assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\..+\.\d+\.(\d|[a-z]\d{2,})",
                        only_file(tmp_path / "b").name)
    with pytest.raises(ValueError, match="'filename_suffix'"):
        sl.SummaryWriter(tmp_path / "c", filename_suffix="/x")


def test_global_step_none_uses_default_step_else_zero(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        w.add_scalar("a", 1.0)
        sl.set_step(7)
        try:
            w.add_scalar("b", 2.0)
            w.add_scalar("c", 3.0, 2)
        finally:
            sl.set_step(None)  # type: ignore[arg-type]
    steps = {t: s for t, s, _, _ in scalar_events(only_file(tmp_path))}
    assert steps == {"a": 0, "b": 7, "c": 2}


def test_walltime_is_written(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        w.add_scalar("a", 1.5, 3, walltime=1234.5)
        w.add_text("t", "hello", 4, walltime=99.0)
        w.add_histogram("h", np.arange(10.0), 5, walltime=77.0)
    events = {v.tag: (e.wall_time, e.step) for e in tb_events(only_file(tmp_path))
              for v in e.summary.value}
    assert events == {"a": (1234.5, 3), "t/text_summary": (99.0, 4), "h": (77.0, 5)}
    with pytest.raises(TypeError, match="add_scalar: 'walltime'"):
        sl.SummaryWriter(tmp_path / "b").add_scalar("a", 1.0, 1, walltime="now")  # type: ignore


def test_add_methods_target_their_writer_not_the_default(tmp_path: Path) -> None:
    default = sl.create_file_writer(tmp_path / "default")
    mine = sl.SummaryWriter(tmp_path / "mine")
    with default.as_default(step=0):
        mine.add_scalar("x", 1.0, 1)
        sl.scalar("y", 2.0)
    mine.close()
    default.close()
    assert [e[0] for e in scalar_events(only_file(tmp_path / "mine"))] == ["x"]
    assert [e[0] for e in scalar_events(only_file(tmp_path / "default"))] == ["y"]


def test_name_scope_and_record_if_apply(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        with sl.name_scope("train"):
            w.add_scalar("loss", 1.0, 1)
        with sl.record_if(False):
            assert w.add_scalar("skipped", 1.0, 1) is False
            assert w.add_text("skipped", "x", 1) is False
    assert [e[0] for e in scalar_events(only_file(tmp_path))] == ["train/loss"]


def test_write_to_disk_false_writes_nothing(tmp_path: Path) -> None:
    w = sl.SummaryWriter(tmp_path / "off", write_to_disk=False)
    assert w.add_scalar("a", 1.0, 1) is False
    assert w.add_scalars("m", {"a": 1.0}, 1) is False
    assert w.add_image("i", np.zeros((3, 2, 2)), 1) is False
    assert w.add_hparams({"lr": 0.1}, {"loss": 1.0}) is False
    w.flush()
    w.close()
    assert not (tmp_path / "off").exists() or not any((tmp_path / "off").rglob("*tfevents*"))
    noop = sl.create_noop_writer()
    assert noop.add_scalar("a", 1.0, 1) is False


def test_purge_step_makes_tensorboard_drop_later_steps(tmp_path: Path) -> None:
    """The Rust data server purges at SessionLog.START (the Python loader does so only for
    legacy simple values, torch's files included)."""
    from tests.tbserver import TensorBoardServer

    with sl.SummaryWriter(tmp_path) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    # A restart comes at least a second later: file names order by their seconds first
    # (within one second, by a per-process counter that is not zero-padded).
    time.sleep(1.05)
    with sl.SummaryWriter(tmp_path, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 100.0 + step, step)
    expected = [(s, float(s)) for s in range(5)] + [(s, 100.0 + s) for s in range(5, 8)]
    with TensorBoardServer(tmp_path) as tb:
        def points() -> list[tuple[int, float]]:
            try:
                data = tb.get_json("/data/plugin/scalars/scalars?run=.&tag=loss")
            except Exception:
                return []
            return [(p[1], p[2]) for p in data]

        assert wait_until(lambda: points() == expected, 30), points()


def test_add_scalars_layout_is_torchs(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": float(step), "val": 2.0 * step}, step)
    for sub, factor in (("run_loss_train", 1.0), ("run_loss_val", 2.0)):
        pts = scalar_events(only_file(tmp_path / sub))
        assert [(t, s, v) for t, s, _, v in pts] == [
            ("run/loss", s, factor * s) for s in range(3)]
    assert w.closed and all(c.closed for c in w._children.values())


@pytest.mark.parametrize("key", ["../escape", "/abs/path", "a\x00b", "..", "CON", "a\\b",
                                 "x/../../y", "trailing.", "c:d"])
def test_add_scalars_keys_stay_inside_the_logdir(tmp_path: Path, key: str) -> None:
    logdir = tmp_path / "logs"
    with sl.SummaryWriter(logdir) as w:
        w.add_scalars("m", {key: 1.0}, 0)
    root = logdir.resolve()
    created = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert created and all(root in p.resolve().parents for p in created), created
    subdirs = [p for p in logdir.iterdir() if p.is_dir()]
    assert len(subdirs) == 1  # one component, never nested


@pytest.mark.parametrize("name", ["../escape", "/abs/path", "a\x00b", "..", "CON",
                                  "x/../../y"])
def test_names_from_hparams_and_meshes_stay_inside_the_logdir(tmp_path: Path,
                                                             name: str) -> None:
    logdir = tmp_path / "logs"
    with sl.SummaryWriter(logdir) as w:
        w.add_hparams({name: 1.0}, {"m": 1.0}, run_name=name)  # hparam name, run name
        w.add_mesh(name, np.zeros((1, 3, 3)))                    # a tag, never a path
        w.add_embedding(np.zeros((2, 2)), tag=name)
    root = logdir.resolve()
    created = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(root in p.resolve().parents for p in created), created
    trial_dirs = [p for p in logdir.iterdir() if p.is_dir() and p.name != "00000"]
    assert len(trial_dirs) == 1 and any(f.name.startswith("events") for f in
                                         trial_dirs[0].iterdir())


@pytest.mark.parametrize("name,expected", [
    ("plain", "plain"), ("a/b", "a%2fb"), ("..", "%2e%2e"), (".", "%2e"), ("con", "%63on"),
    ("LPT1.txt", "%4cPT1.txt"), ("100%", "100%25"), ("x.", "x%2e"), ("a\nb", "a%0ab"),
])
def test_safe_component_encodes(name: str, expected: str) -> None:
    assert safe_component(name, "t", "tag") == expected


def test_safe_component_refuses() -> None:
    with pytest.raises(ValueError, match="t: 'tag' must be a non-empty name"):
        safe_component("", "t", "tag")
    with pytest.raises(ValueError, match="too long"):
        safe_component("x" * 300, "t", "tag")
    with pytest.raises(TypeError, match="'tag' must be a str"):
        safe_component(3, "t", "tag")


def test_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        with sl.SummaryWriter(tmp_path / "u") as w:
            w.add_scalars("m", {"a": 1.0}, 0)
    finally:
        os.umask(old)
    for p in (tmp_path / "u").rglob("*"):
        assert p.stat().st_mode & 0o027 == 0, oct(p.stat().st_mode)


def test_pickle_round_trip_keeps_the_class(tmp_path: Path) -> None:
    w = sl.SummaryWriter(tmp_path)
    clone = pickle.loads(pickle.dumps(w))
    assert type(clone) is sl.SummaryWriter and clone.path != w.path
    clone.add_scalar("a", 1.0, 1)
    clone.close()
    w.close()
    assert type(pickle.loads(pickle.dumps(sl.create_noop_writer()))) is sl.SummaryWriter


def test_closed_writer_raises(tmp_path: Path) -> None:
    w = sl.SummaryWriter(tmp_path)
    w.close()
    with pytest.raises(sl.WriterClosedError):
        w.add_scalar("a", 1.0, 1)
    w.close()  # a second close does nothing


BAD_CALLS = [
    ("add_scalar", ("a", "x", 1), TypeError, "'scalar_value'"),
    ("add_scalar", ("\ud800", 1.0, 1), ValueError, "'tag'"),
    ("add_scalars", ("m", [1, 2], 1), TypeError, "'tag_scalar_dict'"),
    ("add_histogram", ("h", [], 1), ValueError, "'values' is empty"),
    ("add_histogram", ("h", [1.0, float("nan")], 1), ValueError, "'values' must be finite"),
    ("add_histogram", ("h", [1.0], 1, "bogus"), ValueError, "'bins'"),
    ("add_histogram", ("h", [-11.0, 4.0], 1, [-10.0, 0.0, 3.0]), ValueError,
     "no value of 'values' lies within the bin edges"),
    ("add_histogram_raw", ("h", 0, 1, 2, 1, 1, [1, 2], [1]), ValueError, "same length"),
    ("add_image", ("i", np.zeros((2, 4, 4)), 1), ValueError, "channels"),
    ("add_image", ("i", np.zeros((3, 4, 4)), 1, None, "XYZ"), ValueError, "'dataformats'"),
    ("add_images", ("i", np.zeros((3, 4, 4)), 1), ValueError, "dimensions"),
    ("add_image_with_boxes", ("b", np.zeros((3, 4, 4)), np.zeros((2, 3)), 1), ValueError,
     "'box_tensor'"),
    ("add_audio", ("a", np.zeros((2, 3)), 1), ValueError, "'snd_tensor'"),
    ("add_text", ("t", 3, 1), TypeError, "'text_string'"),
    ("add_pr_curve", ("p", [1, 0], [0.5, 2.0], 1), ValueError, "'predictions'"),
    ("add_pr_curve", ("p", [1, 0], [0.5], 1), ValueError, "same shape"),
    ("add_pr_curve", ("p", [1], [0.5], 1, 0), ValueError, "'num_thresholds'"),
    ("add_custom_scalars_marginchart", (["a", "b"],), ValueError, "'tags'"),
    ("add_hparams", ({"lr": None}, {"m": 1.0}), TypeError, "lr"),
    ("add_hparams", ({"lr": [1, 2]}, {"m": 1.0}), TypeError, "lr"),
    ("add_video", ("v", np.zeros((2, 3, 4)), 1), ValueError, "'vid_tensor'"),
    ("add_video", ("v", np.zeros((1, 2, 3, 4, 4)), 1, 0), ValueError, "'fps'"),
    ("add_mesh", ("m", np.zeros((3, 3))), ValueError, "'vertices'"),
    ("add_mesh", ("m", np.zeros((1, 3, 3)), np.full((1, 3, 3), 300)), ValueError, "'colors'"),
    ("add_embedding", (np.zeros(3),), ValueError, "'mat'"),
    ("add_embedding", (np.zeros((2, 2)), ["a"]), ValueError, "'metadata'"),
    ("add_custom_scalars", ({"c": {"t": ["Pie", ["a"]]}},), ValueError, "'Multiline'"),
    ("add_figure", ("f", "not a figure", 1), TypeError, "'figure'"),
    ("add_histogram_raw", ("h", 0, 1, -2, 1, 1, [1], [1]), ValueError, "'num'"),
    ("add_tensor", ("t", object(), 1), TypeError, "'tensor'"),
]


@pytest.mark.parametrize("method,args,exc,msg", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_names_the_argument_and_writes_nothing(
    tmp_path: Path, method: str, args: tuple, exc: type, msg: str
) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        w.add_scalar("before", 1.0, 0)
        with pytest.raises(exc, match=re.escape(msg)) as e:
            getattr(w, method)(*args)
        w.add_scalar("after", 2.0, 1)
    assert str(e.value).startswith(method + ": ")
    tags = [v.tag for ev in tb_events(only_file(tmp_path)) for v in ev.summary.value]
    assert tags == ["before", "after"]
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []


def float_step_calls(w: object, step: object) -> None:
    """add_* calls that take a global_step, as a torch script makes them."""
    w.add_scalar("s", 1.0, step)  # type: ignore[attr-defined]
    w.add_scalar("s_wall", 1.0, step, walltime=5.0)  # type: ignore[attr-defined]
    w.add_histogram("h", np.arange(10.0), step)  # type: ignore[attr-defined]
    w.add_text("t", "hello", step)  # type: ignore[attr-defined]
    w.add_image("i", np.zeros((3, 4, 4), np.uint8), step)  # type: ignore[attr-defined]
    w.add_audio("a", np.zeros(100), step)  # type: ignore[attr-defined]


def steps_by_tag(logdir: Path) -> dict[str, int]:
    return {v.tag: e.step for e in tb_events(only_file(logdir)) if e.HasField("summary")
            for v in e.summary.value}


@pytest.mark.parametrize("step", [2.5, -1.5, 7.0, np.float64(3.9), np.float32(1.5)])
def test_a_float_global_step_is_written_as_torch_writes_it(tmp_path: Path,
                                                           step: object) -> None:
    """torch writes int(global_step): 2.5 is step 2, -1.5 step -1 (its own writer is the
    oracle)."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    with sl.SummaryWriter(tmp_path / "ours") as w:
        float_step_calls(w, step)
        with w.use_metadata(global_step=step):  # type: ignore[arg-type]
            w.add_scalar("meta", 1.0)
    theirs = torch_tb.SummaryWriter(str(tmp_path / "torch"))
    float_step_calls(theirs, step)
    theirs.add_scalar("meta", 1.0, step)
    theirs.close()
    ours = steps_by_tag(tmp_path / "ours")
    assert ours == steps_by_tag(tmp_path / "torch")
    assert set(ours.values()) == {int(step)}  # type: ignore[call-overload]


def test_a_float_tensor_step_and_bad_steps(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    with sl.SummaryWriter(tmp_path) as w:
        assert w.add_scalar("x", 1.0, torch.tensor(4.7))
        assert w.add_scalars("m", {"a": 1.0}, 6.5)
        for bad in (float("nan"), float("inf")):
            with pytest.raises(ValueError, match="add_scalar: 'global_step' must be a finite"):
                w.add_scalar("x", 1.0, bad)
            with pytest.raises(ValueError, match="add_text: 'global_step' must be a finite"):
                w.add_text("t", "x", bad)
        with pytest.raises(TypeError, match="add_scalar: 'step' must be an integer"):
            w.add_scalar("x", 1.0, "3")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="add_scalar"):
            w.add_scalar("x", "not a number", 2.5)
    assert steps_by_tag(tmp_path)["x"] == 4
    assert steps_by_tag(tmp_path / "m_a")["m"] == 6
