"""The projector's embeddings: files as torch lays them out, served by TensorBoard."""

from __future__ import annotations

import io
import os
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

import summarylib as sl
from summarylib.ops.embedding import embedding, metadata_tsv, tsv_bytes
from summarylib.proto import projector_config_pb2
from tests.tbserver import TensorBoardServer

F32 = np.finfo(np.float32)
# The float32 edge cases: smallest subnormal, smallest normal, largest, signed zeros.
EXTREMES = np.array([[F32.smallest_subnormal, -F32.smallest_subnormal, F32.tiny, -F32.tiny],
                     [F32.max, -F32.max, 0.0, -0.0],
                     [1.0, F32.eps, 1 - F32.epsneg, np.float32(np.pi)]], dtype=np.float32)


def config(logdir: Path) -> projector_config_pb2.ProjectorConfig:
    return text_format.Parse((logdir / "projector_config.pbtxt").read_text(),
                             projector_config_pb2.ProjectorConfig())


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def served_png(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


# -- the TSV encoder ---------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(mat=hnp.arrays(np.float32, st.tuples(st.integers(1, 9), st.integers(1, 7)),
                      elements=st.floats(width=32, allow_nan=False, allow_infinity=False)))
@example(mat=EXTREMES)
@example(mat=np.array([[1e-40, 3e38, -1e-45, 1.17549435e-38]], dtype=np.float32))
def test_tsv_reads_back_to_the_same_float32(mat: np.ndarray) -> None:
    data = tsv_bytes(mat)
    text = data.decode("ascii")
    assert text.endswith("\n") and text.count("\n") == mat.shape[0]
    assert all(line.count("\t") == mat.shape[1] - 1 for line in text.splitlines())
    # numpy's parser straight to float32, and TensorBoard's way: float() per field, then
    # a float32 array.
    by_numpy = np.loadtxt(io.StringIO(text), dtype=np.float32, delimiter="\t", ndmin=2)
    by_tensorboard = np.array([list(map(float, line.split("\t")))
                               for line in text.splitlines()], dtype="float32")
    for back in (by_numpy, by_tensorboard):
        assert back.dtype == np.float32 and back.shape == mat.shape
        # Bit for bit (also the sign of zero): the same float32 values.
        assert back.tobytes() == mat.tobytes()


# -- the projector serves what we wrote --------------------------------------------------

def test_two_embeddings_in_one_run_served_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.normal(size=(17, 4)).astype(np.float32), EXTREMES])  # 20 x 4
    b = (rng.normal(size=(6, 3)) * 1e30).astype(np.float32)
    thumbs = rng.random((6, 1, 4, 4)).astype(np.float32)
    words = [f"p{i}" for i in range(20)]
    rows = [(i, "even" if i % 2 == 0 else "odd") for i in range(6)]
    with sl.SummaryWriter(tmp_path) as w:
        w.add_embedding(a, metadata=words, tag="words")
        w.add_embedding(b, metadata=rows, metadata_header=["index", "parity"],
                        label_img=thumbs, global_step=3, tag="a/b")
    assert files_under(tmp_path) == sorted([
        "00000/words/metadata.tsv", "00000/words/tensors.tsv",
        "00003/a%2fb/metadata.tsv", "00003/a%2fb/tensors.tsv", "00003/a%2fb/sprite.png",
        "projector_config.pbtxt",
        *[p for p in files_under(tmp_path) if p.startswith("events.out.tfevents.")]])
    cfg = config(tmp_path)
    assert [(e.tensor_name, e.tensor_path, e.metadata_path) for e in cfg.embeddings] == [
        ("words:00000", "00000/words/tensors.tsv", "00000/words/metadata.tsv"),
        ("a/b:00003", "00003/a%2fb/tensors.tsv", "00003/a%2fb/metadata.tsv")]
    assert cfg.embeddings[1].sprite.image_path == "00003/a%2fb/sprite.png"
    assert list(cfg.embeddings[1].sprite.single_image_dim) == [4, 4]
    with TensorBoardServer(tmp_path) as tb:
        runs = tb.poll(lambda: tb.get_json("/data/plugin/projector/runs"), lambda r: r)
        assert runs == ["."]  # the log directory's own config is run "."
        info = tb.get_json("/data/plugin/projector/info", run=".")
        assert [(e["tensorName"], e["tensorShape"]) for e in info["embeddings"]] == [
            ("words:00000", [20, 4]), ("a/b:00003", [6, 3])]
        for name, mat in (("words:00000", a), ("a/b:00003", b)):
            served = tb.get("/data/plugin/projector/tensor", run=".", name=name)
            assert served == mat.astype("<f4").tobytes()
        single = tb.get("/data/plugin/projector/metadata", run=".", name="words:00000")
        multi = tb.get("/data/plugin/projector/metadata", run=".", name="a/b:00003")
        sprite = tb.get("/data/plugin/projector/sprite_image", run=".", name="a/b:00003")
    assert single.decode().splitlines() == words  # one column: no header line
    assert multi.decode().splitlines() == ["index\tparity"] + [f"{i}\t{p}" for i, p in rows]
    expected = np.zeros((12, 12, 3), np.uint8)  # 3 x 3 thumbnails, the last row empty
    for i in range(6):
        y, x = divmod(i, 3)
        expected[4 * y:4 * y + 4, 4 * x:4 * x + 4] = (thumbs[i, 0] * 255).astype(np.uint8)[
            ..., None]
    np.testing.assert_array_equal(served_png(sprite), expected)


def test_labels_that_would_break_the_tsv_are_escaped(tmp_path: Path) -> None:
    labels = ["tab\there", "line\nbreak", "cr\rlf", "", " ", "\u3000", "\ufeff", "ok",
              np.float32(33.0), np.int64(-2)]
    n = len(labels)
    embedding(np.zeros((n, 2)), labels, tag="tokens", logdir=str(tmp_path))
    embedding(np.zeros((2, 2)), [("", " "), ("a\tb", "")], metadata_header=["x\ty", "z"],
              tag="cols", logdir=str(tmp_path))
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(lambda: tb.get_json("/data/plugin/projector/runs"), lambda r: r)
        single = tb.get("/data/plugin/projector/metadata", run=".",
                        name="tokens:00000").decode()
        multi = tb.get("/data/plugin/projector/metadata", run=".", name="cols:00000").decode()
    # One line per point (the projector drops blank lines: those get a visible repr), and
    # no tab (which would make the first line a header).
    assert single.split("\n")[:-1] == [
        "tab\\there", "line\\nbreak", "cr\\rlf", "''", "' '", "'\\u3000'", "'\\ufeff'",
        "ok", "33.0", "-2"]
    assert multi.split("\n")[:-1] == ["x\\ty\tz", "''\t ", "a\\tb\t"]


def test_sprite_pixels_equal_torchs(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard._embedding import make_sprite

    rng = np.random.default_rng(1)
    for n, c in ((5, 3), (7, 1), (1, 3)):
        imgs = rng.random((n, c, 6, 6)).astype(np.float32)
        imgs[0, 0, 0, :3] = [1.0, 1.5, -0.5]  # clipped as torch clips
        (tmp_path / "torch").mkdir(exist_ok=True)
        make_sprite(torch.from_numpy(imgs), str(tmp_path / "torch"))
        embedding(np.zeros((n, 2)), label_img=imgs, tag=f"s{n}", logdir=str(tmp_path))
        ours = served_png((tmp_path / f"00000/s{n}/sprite.png").read_bytes())
        theirs = served_png((tmp_path / "torch/sprite.png").read_bytes())
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


def test_sprite_of_uint8_and_non_square_thumbnails(tmp_path: Path) -> None:
    # The projector's shader takes a thumbnail's row as index // (height / H) and its
    # column as index % (width / W): the sprite must hold 3 x 3 thumbnails of 2 x 5 px.
    imgs = np.arange(7 * 3 * 2 * 5, dtype=np.uint8).reshape(7, 3, 2, 5)
    embedding(np.zeros((7, 2)), label_img=imgs, tag="wide", logdir=str(tmp_path))
    (info,) = config(tmp_path).embeddings
    assert list(info.sprite.single_image_dim) == [5, 2]
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(lambda: tb.get_json("/data/plugin/projector/runs"), lambda r: r)
        sheet = served_png(tb.get("/data/plugin/projector/sprite_image", run=".",
                                  name="wide:00000"))
    assert sheet.shape == (3 * 2, 3 * 5, 3)
    for i in range(9):
        y, x = divmod(i, 3)
        tile = sheet[2 * y:2 * y + 2, 5 * x:5 * x + 5]
        want = imgs[i].transpose(1, 2, 0) if i < 7 else np.zeros((2, 5, 3), np.uint8)
        np.testing.assert_array_equal(tile, want)  # uint8 is taken as is


# -- config: accumulate, replace, atomic ---------------------------------------------------

def test_same_tag_and_step_replaces_and_other_writers_accumulate(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        w.add_embedding(np.zeros((2, 2)), tag="x")
        w.add_embedding(np.ones((3, 2)), tag="x")  # same tag and step: replaced
    with sl.SummaryWriter(tmp_path) as w:  # a restart keeps the first writer's entries
        w.add_embedding(np.ones((2, 2)), tag="y", global_step=1)
        w.add_embedding(np.ones((2, 2)), tag="x", global_step=1)  # another step: kept
    cfg = config(tmp_path)
    assert [e.tensor_name for e in cfg.embeddings] == ["x:00000", "y:00001", "x:00001"]
    assert (tmp_path / "00000/x/tensors.tsv").read_text() == "1\t1\n" * 3
    assert not [p for p in files_under(tmp_path) if ".tmp" in p]  # no temporary left


def test_threads_writing_one_config_lose_no_entry(tmp_path: Path) -> None:
    def work(k: int) -> None:
        for step in range(5):
            embedding(np.full((2, 2), k), tag=f"t{k}", step=step, logdir=str(tmp_path))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = sorted(e.tensor_name for e in config(tmp_path).embeddings)
    assert names == sorted(f"t{k}:{s:05d}" for k in range(4) for s in range(5))



_EMBEDDING_WORKER = """
import sys, threading
import numpy as np
from summarylib.ops.embedding import embedding
logdir, k = sys.argv[1], int(sys.argv[2])
def work(t):
    for step in range(10):
        embedding(np.full((2, 2), k), tag=f"p{k}t{t}", step=step, logdir=logdir)
threads = [threading.Thread(target=work, args=(t,)) for t in range(5)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_processes_and_threads_writing_one_config_lose_no_entry(tmp_path: Path) -> None:
    # 4 processes of 5 threads, 10 embeddings each, all at once: every one of the 200
    # calls returned, so every one is in the config (and the config parses).
    import subprocess
    import sys

    procs = [
        subprocess.Popen([sys.executable, "-c", _EMBEDDING_WORKER, str(tmp_path), str(k)],
                         cwd=Path(__file__).resolve().parent.parent, stderr=subprocess.PIPE)
        for k in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    names = sorted(e.tensor_name for e in config(tmp_path).embeddings)
    assert names == sorted(
        f"p{k}t{t}:{s:05d}" for k in range(4) for t in range(5) for s in range(10)
    )
    assert not [p for p in files_under(tmp_path) if ".tmp" in p]


def test_a_file_url_logdir_gets_the_files_beside_its_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative "file:" directory would appear here
    with sl.SummaryWriter(f"file://{tmp_path}/run") as w:
        w.add_embedding(np.ones((2, 2)), tag="x")
    assert sorted(os.listdir(tmp_path)) == ["run"]
    assert [e.tensor_name for e in config(tmp_path / "run").embeddings] == ["x:00000"]
    assert (tmp_path / "run/00000/x/tensors.tsv").read_text() == "1\t1\n" * 2

# -- names never leave the log directory ---------------------------------------------------

@pytest.mark.parametrize("tag,component", [
    ("../escape", "..%2fescape"), ("/abs/path", "%2fabs%2fpath"), ("a\x00b", "a%00b"),
    ("..", "%2e%2e"), (".", "%2e"), ("x/../../y", "x%2f..%2f..%2fy"), ("a\\b", "a%5cb"),
    ("C:\\Windows", "C%3a%5cWindows"), ("CON", "%43ON"), ("nul.txt", "%6eul.txt"),
    ("com1", "%63om1"), ("LPT9.log", "%4cPT9.log"), ("trailing.", "trailing%2e"),
    (".hidden", ".hidden"), ("50%", "50%25"), ("a%2fb", "a%252fb"), ("ok_name", "ok_name"),
])
def test_tags_never_leave_the_logdir(tmp_path: Path, tag: str, component: str) -> None:
    logdir = tmp_path / "logs"
    with sl.SummaryWriter(logdir) as w:
        w.add_embedding(np.zeros((2, 2)), metadata=["a", "b"],
                        label_img=np.zeros((2, 1, 2, 2)), tag=tag)
    root = logdir.resolve()
    created = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(root in p.resolve().parents for p in created), created
    # One component under the step, whatever the tag: percent-encoded, never a path.
    assert [p.name for p in (logdir / "00000").iterdir()] == [component]
    assert sorted(p.name for p in (logdir / "00000" / component).iterdir()) == [
        "metadata.tsv", "sprite.png", "tensors.tsv"]
    (info,) = config(logdir).embeddings
    assert info.tensor_name == f"{tag}:00000"  # the name itself is kept
    assert info.tensor_path == f"00000/{component}/tensors.tsv"


def test_encoded_tags_stay_distinct_and_are_served(tmp_path: Path) -> None:
    tags = ["a/b", "a%2fb", "..", "%2e%2e", "CON", "%43ON"]
    for k, tag in enumerate(tags):
        embedding(np.full((2, 2), k, np.float32), tag=tag, logdir=str(tmp_path))
    assert len(list((tmp_path / "00000").iterdir())) == len(tags)
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(lambda: tb.get_json("/data/plugin/projector/runs"), lambda r: r)
        for k, tag in enumerate(tags):
            served = tb.get("/data/plugin/projector/tensor", run=".", name=f"{tag}:00000")
            assert served == np.full((2, 2), k, "<f4").tobytes(), tag


@pytest.mark.parametrize("tag,exc,msg", [
    ("", ValueError, "'tag' must be a non-empty name"),
    ("x" * 300, ValueError, "'tag' is too long"),
    ("\ud800", ValueError, "'tag' is not valid Unicode"),
    (b"bytes", TypeError, "'tag' must be a str"),
    (None, TypeError, "'tag' must be a str"),
])
def test_tags_that_cannot_be_a_name_are_refused(tmp_path: Path, tag: Any, exc: type,
                                                msg: str) -> None:
    with pytest.raises(exc, match=f"^add_embedding: {msg}"):
        embedding(np.zeros((2, 2)), tag=tag, logdir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        with sl.SummaryWriter(tmp_path / "u") as w:
            w.add_embedding(np.zeros((2, 2)), metadata=["a", "b"],
                            label_img=np.zeros((2, 3, 2, 2)))
            w.add_embedding(np.zeros((2, 2)), tag="second")  # the config rewritten
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "u").rglob("*") if p.is_file()]
    assert len(files) >= 6
    for p in files:
        assert p.stat().st_mode & 0o777 == 0o640, (p, oct(p.stat().st_mode))
    for d in (tmp_path / "u" / "00000").rglob("*"):
        if d.is_dir():
            assert d.stat().st_mode & 0o777 == 0o750, (d, oct(d.stat().st_mode))


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,exc,msg", [
    ({"mat": np.zeros(3)}, ValueError, "'mat' must have shape [N, D]"),
    ({"mat": np.zeros((0, 3))}, ValueError, "'mat' must have shape [N, D]"),
    ({"mat": np.array([["a", "b"]])}, TypeError, "'mat' must hold real numbers"),
    ({"mat": np.array([[np.nan, 1.0]])}, ValueError, "'mat' must be finite"),
    ({"mat": np.array([[1e300, 1.0]])}, ValueError, "'mat' must be finite (as float32)"),
    ({"mat": np.zeros((2, 2)), "metadata": ["a"]}, ValueError,
     "'metadata' has 1 entries for 2 points"),
    ({"mat": np.zeros((2, 2)), "metadata": "ab"}, TypeError, "'metadata' must be a list"),
    ({"mat": np.zeros((2, 2)), "metadata": [("a", 1), ("b",)], "metadata_header": ["x", "y"]},
     ValueError, "'metadata' row 1 must have 2 columns"),
    ({"mat": np.zeros((2, 2)), "metadata": ["a", "b"], "metadata_header": ["x", "y"]},
     ValueError, "'metadata' row 0 must have 2 columns"),
    ({"mat": np.zeros((2, 2)), "metadata": [("a",), ("b",)], "metadata_header": ["x"]},
     ValueError, "'metadata_header' must name at least 2 columns"),
    ({"mat": np.zeros((2, 2)), "metadata": [("a", 1), ("b", 2)], "metadata_header": "xy"},
     TypeError, "'metadata_header' must be a list of column names"),
    ({"mat": np.zeros((2, 2)), "label_img": np.zeros((2, 2, 4, 4))}, ValueError,
     "'label_img' must have shape [2, C, H, W]"),
    ({"mat": np.zeros((2, 2)), "label_img": np.zeros((3, 3, 4, 4))}, ValueError,
     "'label_img' must have shape [2, C, H, W]"),
    ({"mat": np.zeros((2, 2)), "label_img": np.zeros((2, 3, 0, 4))}, ValueError,
     "'label_img' must be non-empty real numbers"),
    ({"mat": np.zeros((5, 2)), "label_img": np.zeros((5, 1, 8, 4097), np.uint8)},
     ValueError, "'label_img' would make a 12291x24 px sprite"),
    ({"mat": np.zeros((2, 2)), "global_step": -1}, ValueError, "'step' must be >= 0"),
    ({"mat": np.zeros((2, 2)), "global_step": 1.5}, TypeError, "'step' must be an integer"),
])
def test_bad_input_writes_nothing(tmp_path: Path, kwargs: dict[str, Any], exc: type,
                                  msg: str) -> None:
    with sl.SummaryWriter(tmp_path) as w, pytest.raises(
        exc, match="^add_embedding: " + re.escape(msg)):
        w.add_embedding(**kwargs)
    assert [p for p in files_under(tmp_path) if not p.startswith("events.")] == []
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == []


def test_metadata_tsv_matches_torchs_for_plain_labels() -> None:
    # torch: str() per label, one per line; rows joined by tabs after the header.
    assert metadata_tsv(["a", 1, 2.5], None, 3) == b"a\n1\n2.5\n"
    assert metadata_tsv([["a", 1], ("b", 2)], ["name", "n"], 2) == b"name\tn\na\t1\nb\t2\n"
    assert metadata_tsv(np.array([3, 4]), None, 2) == b"3\n4\n"
    assert metadata_tsv(np.array([[1, 2], [3, 4]]), ("p", "q"), 2) == b"p\tq\n1\t2\n3\t4\n"


# -- the default writer --------------------------------------------------------------------

def test_op_uses_the_default_writer(tmp_path: Path) -> None:
    assert sl.embedding(np.zeros((2, 2))) is False  # no default writer
    with sl.create_file_writer(tmp_path).as_default(step=7):
        assert sl.embedding(np.zeros((2, 2)), tag="t")
        with sl.record_if(False):
            assert sl.embedding(np.zeros((2, 2)), tag="off") is False
        with pytest.raises(ValueError, match=r"^embedding: 'mat' must have shape"):
            sl.embedding(np.zeros(2))
    assert [e.tensor_name for e in config(tmp_path).embeddings] == ["t:00007"]
    with sl.create_file_writer(tmp_path).as_default():
        assert sl.embedding(np.zeros((2, 2)), tag="t")  # no default step: 0
    assert [e.tensor_name for e in config(tmp_path).embeddings] == ["t:00007", "t:00000"]
    out = sl.MemoryOutput()
    with sl.create_writer(out).as_default(step=0):
        assert sl.embedding(np.zeros((2, 2))) is False  # no directory to write into
