"""The projector's embeddings: files as torch lays them out, served by TensorBoard."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.ops.embedding import tsv_bytes
from summarylib.proto import projector_config_pb2
from tests.tbserver import TensorBoardServer


def config(logdir: Path) -> projector_config_pb2.ProjectorConfig:
    return text_format.Parse((logdir / "projector_config.pbtxt").read_text(),
                             projector_config_pb2.ProjectorConfig())


@settings(max_examples=80, deadline=None)
@given(mat=hnp.arrays(np.float32, st.tuples(st.integers(1, 9), st.integers(1, 7)),
                      elements=st.floats(width=32, allow_nan=False, allow_infinity=False)))
def test_tsv_reads_back_to_the_same_float32(mat: np.ndarray) -> None:
    # Parsed as TensorBoard's projector parses it: float() per field, then float32.
    text = tsv_bytes(mat).decode()
    back = np.array([list(map(float, line.split("\t"))) for line in text.splitlines()],
                    dtype="float32")
    np.testing.assert_array_equal(back, mat)
    assert text.endswith("\n") and text.count("\n") == mat.shape[0]


def test_layout_is_torchs_and_the_projector_serves_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(20, 4)).astype(np.float32)
    b = rng.normal(size=(6, 3)).astype(np.float32)
    thumbs = rng.random((6, 1, 4, 5)).astype(np.float32)
    with sl.SummaryWriter(tmp_path) as w:
        w.add_embedding(a, metadata=[f"p{i}" for i in range(20)], tag="words")
        w.add_embedding(b, metadata=[(i, "even" if i % 2 == 0 else "odd") for i in range(6)],
                        metadata_header=["index", "parity"], label_img=thumbs,
                        global_step=3, tag="a/b")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.tsv")) == [
        "00000/words/metadata.tsv", "00000/words/tensors.tsv",
        "00003/a%2fb/metadata.tsv", "00003/a%2fb/tensors.tsv"]
    cfg = config(tmp_path)
    assert [e.tensor_name for e in cfg.embeddings] == ["words:00000", "a/b:00003"]
    assert list(cfg.embeddings[1].sprite.single_image_dim) == [5, 4]
    with TensorBoardServer(tmp_path) as tb:
        runs = tb.poll(lambda: tb.get_json("/data/plugin/projector/runs"), lambda r: r)
        assert runs == ["."]
        info = tb.get_json("/data/plugin/projector/info", run=".")
        assert [(e["tensorName"], e["tensorShape"]) for e in info["embeddings"]] == [
            ("words:00000", [20, 4]), ("a/b:00003", [6, 3])]
        for name, mat in (("words:00000", a), ("a/b:00003", b)):
            served = tb.get("/data/plugin/projector/tensor", run=".", name=name)
            np.testing.assert_array_equal(np.frombuffer(served, np.float32).reshape(mat.shape),
                                          mat)
        meta = tb.get("/data/plugin/projector/metadata", run=".", name="a/b:00003").decode()
        assert meta.splitlines() == ["index\tparity"] + [
            f"{i}\t{'even' if i % 2 == 0 else 'odd'}" for i in range(6)]
        sprite = tb.get("/data/plugin/projector/sprite_image", run=".", name="a/b:00003")
    from io import BytesIO

    from PIL import Image

    sheet = np.asarray(Image.open(BytesIO(sprite)))
    assert sheet.shape == (15, 15, 3)  # 3 per row, squared to the wider side
    np.testing.assert_array_equal(sheet[:4, :5, 0], (thumbs[0, 0] * 255).astype(np.uint8))


def test_same_tag_and_step_replaces_and_other_writers_accumulate(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        w.add_embedding(np.zeros((2, 2)), tag="x")
        w.add_embedding(np.ones((3, 2)), tag="x")  # same tag and step: replaced
    with sl.SummaryWriter(tmp_path) as w:  # a restart keeps the first writer's entries
        w.add_embedding(np.ones((2, 2)), tag="y", global_step=1)
    cfg = config(tmp_path)
    assert [e.tensor_name for e in cfg.embeddings] == ["x:00000", "y:00001"]
    assert (tmp_path / "00000/x/tensors.tsv").read_text().count("\n") == 3


@pytest.mark.parametrize("tag", ["../escape", "/abs/path", "a\x00b", "..", ".", "CON",
                                 "a\\b", "x/../../y", "nul.txt"])
def test_tags_never_leave_the_logdir(tmp_path: Path, tag: str) -> None:
    logdir = tmp_path / "logs"
    with sl.SummaryWriter(logdir) as w:
        w.add_embedding(np.zeros((2, 2)), metadata=["a", "b"], tag=tag)
    root = logdir.resolve()
    created = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(root in p.resolve().parents for p in created), created
    step_dir = logdir / "00000"
    (tag_dir,) = list(step_dir.iterdir())  # one component under the step
    assert (tag_dir / "tensors.tsv").is_file()
    assert config(logdir).embeddings[0].tensor_name == f"{tag}:00000"


def test_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        with sl.SummaryWriter(tmp_path / "u") as w:
            w.add_embedding(np.zeros((2, 2)), metadata=["a", "b"],
                            label_img=np.zeros((2, 3, 2, 2)))
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "u").rglob("*") if p.is_file()]
    assert len(files) >= 5
    for p in files:
        assert p.stat().st_mode & 0o777 == 0o640, (p, oct(p.stat().st_mode))


@pytest.mark.parametrize("kwargs,exc,msg", [
    ({"mat": np.zeros(3)}, ValueError, "'mat' must have shape [N, D]"),
    ({"mat": np.array([[np.nan, 1.0]])}, ValueError, "'mat' must be finite"),
    ({"mat": np.zeros((2, 2)), "metadata": ["a"]}, ValueError, "1 entries for 2 points"),
    ({"mat": np.zeros((2, 2)), "metadata": [("a", 1), ("b",)], "metadata_header": ["x", "y"]},
     ValueError, "row 1 must have 2 columns"),
    ({"mat": np.zeros((2, 2)), "label_img": np.zeros((2, 2, 4, 4))}, ValueError,
     "'label_img' must have shape [2, C, H, W]"),
    ({"mat": np.zeros((2, 2)), "tag": ""}, ValueError, "'tag' must be a non-empty name"),
])
def test_bad_input_writes_nothing(tmp_path: Path, kwargs: dict, exc: type, msg: str) -> None:
    with sl.SummaryWriter(tmp_path) as w, pytest.raises(
        exc, match=msg.replace("[", r"\[").replace("]", r"\]")
    ):
        w.add_embedding(**kwargs)
    assert not (tmp_path / "projector_config.pbtxt").exists()
    assert not (tmp_path / "00000").exists()


def test_op_uses_the_default_writer(tmp_path: Path) -> None:
    assert sl.embedding(np.zeros((2, 2))) is False  # no default writer
    with sl.create_file_writer(tmp_path).as_default(step=7):
        assert sl.embedding(np.zeros((2, 2)), tag="t")
    assert config(tmp_path).embeddings[0].tensor_name == "t:00007"
    out = sl.MemoryOutput()
    with sl.create_writer(out).as_default(step=0):
        assert sl.embedding(np.zeros((2, 2))) is False  # no directory to write into
