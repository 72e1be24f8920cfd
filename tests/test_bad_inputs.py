"""Bad input, catalogued: every op and writer API, one table.

Each row calls something with one bad argument and names the exception type
and a message fragment (the argument's name, or what was wrong). Around each
row the same file gets a good event before and after: the bad call must write
nothing, leave the earlier bytes untouched, and leave the writer usable
(unless the row is about a closed writer); the file must then read back with
summarylib's reader and TensorBoard's loader.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from summarylib.reader import RecordReader, iter_events
from tests.helpers import only_file, tb_events


@dataclass
class Ctx:
    writer: sl.SummaryWriter
    tmp: Path


@dataclass
class Row:
    id: str
    call: Callable[[Ctx], Any]
    exc: type[BaseException]
    fragment: str
    needs: str = "summarylib"  # module that must exist (ops land at different times)
    closes: bool = False  # the row closes the writer on purpose
    xfail: str | None = None


IMG = np.zeros((1, 4, 4, 3), dtype=np.uint8)
CLIP = np.zeros((1, 100), dtype=np.float32)
# 2**31 + 4096 characters of text that take no memory (every row is one string): more
# than an event can hold, refused before any of it is copied.
HUGE_TEXT = np.broadcast_to(np.array("x" * 4096), (2**19 + 1,))


def _torch(kind: str) -> Any:
    """A torch tensor that holds no values numpy can take: "meta" (rank 0) or "nested"."""
    import warnings

    import torch

    if kind == "meta":
        return torch.zeros((), device="meta")
    with warnings.catch_warnings():  # nested tensors are a prototype and say so
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])

ROWS = [
    # -- scalar: tags, data, steps, description
    Row("scalar-name-int", lambda c: sl.scalar(3, 1.0), TypeError, "scalar: 'name'"),
    Row("scalar-name-empty", lambda c: sl.scalar("", 1.0), ValueError, "scalar: 'name'"),
    Row("scalar-name-surrogate", lambda c: sl.scalar("\ud800", 1.0), ValueError, "'name'"),
    Row("scalar-data-str", lambda c: sl.scalar("x", "abc"), TypeError, "scalar: 'data'"),
    Row("scalar-data-none", lambda c: sl.scalar("x", None), TypeError, "'data'"),
    Row("scalar-data-list", lambda c: sl.scalar("x", [1.0, 2.0]), ValueError, "'data'"),
    Row("scalar-data-matrix", lambda c: sl.scalar("x", np.ones((2, 2))), ValueError, "'data'"),
    Row("scalar-data-complex", lambda c: sl.scalar("x", 1 + 2j), TypeError, "'data'"),
    Row("scalar-data-huge-int", lambda c: sl.scalar("x", 10**400), ValueError, "'data'"),
    Row("scalar-lazy-data-str", lambda c: sl.scalar("x", lambda: "s"), TypeError, "'data'"),
    Row("scalar-step-float", lambda c: sl.scalar("x", 1.0, step=1.5), TypeError, "'step'"),
    Row("scalar-step-nan", lambda c: sl.scalar("x", 1.0, step=math.nan), TypeError, "'step'"),
    Row("scalar-step-bool", lambda c: sl.scalar("x", 1.0, step=True), TypeError, "'step'"),
    Row("scalar-step-2**63", lambda c: sl.scalar("x", 1.0, step=2**63), ValueError, "'step'"),
    Row("scalar-step-below-int64", lambda c: sl.scalar("x", 1.0, step=-(2**63) - 1),
        ValueError, "'step'"),
    Row("scalar-no-step", lambda c: (sl.set_step(None), sl.scalar("x", 1.0)), ValueError,
        "no step"),
    Row("scalar-description-int", lambda c: sl.scalar("x", 1.0, description=3), TypeError,
        "'description'"),
    # -- scalars: the mapping, its keys and values; all-or-nothing
    Row("scalars-not-mapping", lambda c: sl.scalars([1.0]), TypeError, "'values'"),
    Row("scalars-key-int", lambda c: sl.scalars({3: 1.0}), TypeError, "'values key'"),
    Row("scalars-value-str", lambda c: sl.scalars({"a": "x"}), TypeError, "values['a']"),
    Row("scalars-second-value-bad", lambda c: sl.scalars({"a": 1.0, "b": [1, 2]}), ValueError,
        "values['b']"),
    Row("scalars-step-str", lambda c: sl.scalars({"a": 1.0}, step="1"), TypeError, "'step'"),
    # -- write / write_raw_pb
    Row("write-tag-int", lambda c: sl.write(3, 1.0), TypeError, "write: 'tag'"),
    Row("write-tensor-object", lambda c: sl.write("t", object()), TypeError, "'tensor'"),
    Row("write-tensor-ragged", lambda c: sl.write("t", [[1, 2], [3]]), TypeError, "'tensor'"),
    Row("write-metadata-int", lambda c: sl.write("t", 1.0, metadata=3), TypeError, "'metadata'"),
    Row("write-metadata-garbage", lambda c: sl.write("t", 1.0, metadata=b"\xff\xff"),
        ValueError, "write: 'metadata' is not a serialized SummaryMetadata"),
    Row("write_raw_pb-int", lambda c: sl.write_raw_pb(3), TypeError, "write_raw_pb: 'tensor'"),
    Row("write_raw_pb-garbage", lambda c: sl.write_raw_pb(b"\xff\xff"), ValueError, "'tensor'"),
    # -- histogram
    Row("histogram-name-int", lambda c: sl.histogram(5, [1.0]), TypeError, "'name'",
        "summarylib.ops.histogram"),
    Row("histogram-data-str", lambda c: sl.histogram("h", "abc"), TypeError, "'data'",
        "summarylib.ops.histogram"),
    Row("histogram-data-complex", lambda c: sl.histogram("h", [1j]), TypeError, "'data'",
        "summarylib.ops.histogram"),
    Row("histogram-buckets-negative", lambda c: sl.histogram("h", [1.0], buckets=-1), ValueError,
        "'buckets'", "summarylib.ops.histogram"),
    Row("histogram-buckets-nan", lambda c: sl.histogram("h", [1.0], buckets=math.nan),
        TypeError, "'buckets'", "summarylib.ops.histogram"),
    Row("histogram-description-int", lambda c: sl.histogram("h", [1.0], description=3),
        TypeError, "'description'", "summarylib.ops.histogram"),
    # -- image
    Row("image-rank-2", lambda c: sl.image("i", np.zeros((3, 32))), ValueError, "'data'",
        "summarylib.ops.image"),
    Row("image-5-channels", lambda c: sl.image("i", np.zeros((1, 4, 4, 5))), ValueError,
        "'data'", "summarylib.ops.image"),
    Row("image-dtype-str", lambda c: sl.image("i", np.array([[["a"]]])), TypeError,
        "'data'", "summarylib.ops.image"),
    Row("image-dtype-complex", lambda c: sl.image("i", IMG.astype(complex)), TypeError,
        "'data'", "summarylib.ops.image"),
    Row("image-dataformats", lambda c: sl.image("i", IMG, dataformats="XYZ"), ValueError,
        "'dataformats'", "summarylib.ops.image"),
    Row("image-max_outputs-negative", lambda c: sl.image("i", IMG, max_outputs=-1),
        ValueError, "'max_outputs'", "summarylib.ops.image"),
    Row("image-max_outputs-nan", lambda c: sl.image("i", IMG, max_outputs=math.nan),
        TypeError, "'max_outputs'", "summarylib.ops.image"),
    Row("image-name-empty", lambda c: sl.image("", IMG), ValueError, "'name'",
        "summarylib.ops.image"),
    Row("image-name-none", lambda c: sl.image(None, IMG), TypeError, "image: 'name'",
        "summarylib.ops.image"),
    Row("audio-name-none", lambda c: sl.audio(None, CLIP, 8000), TypeError, "audio: 'name'",
        "summarylib.ops.audio"),
    Row("text-name-none", lambda c: sl.text(None, "hi"), TypeError, "text: 'name'",
        "summarylib.ops.text"),
    # -- audio
    Row("audio-sample_rate-0", lambda c: sl.audio("a", CLIP, sample_rate=0), ValueError,
        "'sample_rate'", "summarylib.ops.audio"),
    Row("audio-sample_rate-nan", lambda c: sl.audio("a", CLIP, sample_rate=math.nan),
        ValueError, "'sample_rate'", "summarylib.ops.audio"),
    Row("audio-sample_rate-str", lambda c: sl.audio("a", CLIP, sample_rate="x"), TypeError,
        "'sample_rate'", "summarylib.ops.audio"),
    Row("audio-rank-4", lambda c: sl.audio("a", np.zeros((1, 10, 2, 2)), 16000), ValueError,
        "'data'", "summarylib.ops.audio"),
    Row("audio-encoding", lambda c: sl.audio("a", CLIP, 16000, encoding="mp3"), ValueError,
        "'encoding'", "summarylib.ops.audio"),
    # -- text
    Row("text-int", lambda c: sl.text("t", 3), TypeError, "'data'", "summarylib.ops.text"),
    Row("text-list-of-ints", lambda c: sl.text("t", [1, 2]), TypeError, "'data'",
        "summarylib.ops.text"),
    Row("text-float-array", lambda c: sl.text("t", np.array([1.5])), TypeError, "'data'",
        "summarylib.ops.text"),
    Row("text-surrogate", lambda c: sl.text("t", "\ud800"), ValueError, "'data'",
        "summarylib.ops.text"),
    # -- pr_curve / pr_curve_raw
    Row("pr_curve-labels-2", lambda c: sl.pr_curve("p", [2], [0.5]), ValueError, "'labels'",
        "summarylib.ops.pr_curve"),
    Row("pr_curve-labels-nan", lambda c: sl.pr_curve("p", [math.nan], [0.5]), ValueError,
        "'labels'", "summarylib.ops.pr_curve"),
    Row("pr_curve-shapes-differ", lambda c: sl.pr_curve("p", [True], [0.5, 0.2]), ValueError,
        "'predictions'", "summarylib.ops.pr_curve"),
    Row("pr_curve-num_thresholds-1", lambda c: sl.pr_curve("p", [True], [0.5],
        num_thresholds=1), ValueError, "'num_thresholds'", "summarylib.ops.pr_curve"),
    Row("pr_curve_raw-lengths-differ", lambda c: sl.pr_curve_raw("p", *([[1, 2]] * 5), [1]),
        ValueError, "same length", "summarylib.ops.pr_curve"),
    # -- graphs
    Row("write_graph-int", lambda c: sl.write_graph(3), TypeError, "'graph'",
        "summarylib.graph"),
    Row("trace_export-without-trace_on", lambda c: sl.trace_export("x", step=0), ValueError,
        "trace_on", "summarylib.graph"),
    # -- writer APIs and the context
    Row("create_file_writer-logdir-none", lambda c: sl.create_file_writer(None), ValueError,
        "'logdir'"),
    Row("create_file_writer-logdir-int", lambda c: sl.create_file_writer(3), TypeError,
        "'logdir'"),
    Row("create_file_writer-url-without-path", lambda c: sl.create_file_writer("s3://"),
        ValueError, "not a usable URL"),
    Row("create_file_writer-url-unknown-protocol",
        lambda c: sl.create_file_writer("nosuchproto://bucket/x"), ValueError,
        "unknown URL protocol"),
    Row("create_file_writer-max_queue", lambda c: sl.create_file_writer(c.tmp, max_queue=-1),
        ValueError, "'max_queue'"),
    Row("create_file_writer-flush_millis", lambda c: sl.create_file_writer(c.tmp,
        flush_millis=1.5), TypeError, "'flush_millis'"),
    Row("create_file_writer-on_error", lambda c: sl.create_file_writer(c.tmp,
        on_error="ignore"), ValueError, "'on_error'"),
    Row("create_file_writer-max_buffer_bytes", lambda c: sl.create_file_writer(c.tmp,
        max_buffer_bytes=0), ValueError, "'max_buffer_bytes'"),
    Row("create_file_writer-suffix", lambda c: sl.create_file_writer(c.tmp,
        filename_suffix="a/b"), ValueError, "'filename_suffix'"),
    Row("create_writer-output", lambda c: sl.create_writer("x"), TypeError, "'output'"),
    Row("as_default-step", lambda c: c.writer.as_default(step="x").__enter__(), TypeError,
        "as_default: 'step'"),
    Row("set_as_default-step", lambda c: c.writer.set_as_default(step=2**64), ValueError,
        "set_as_default: 'step'"),
    Row("set_step-str", lambda c: sl.set_step("1"), TypeError, "set_step: 'step'"),
    Row("name_scope-int", lambda c: sl.name_scope(3).__enter__(), TypeError,
        "name_scope: 'name'"),
    Row("flush-timeout-str", lambda c: c.writer.flush(timeout="1"), TypeError,
        "flush: 'timeout'"),
    Row("flush-timeout-negative", lambda c: c.writer.flush(timeout=-1), ValueError,
        "flush: 'timeout'"),
    Row("close-timeout-nan", lambda c: c.writer.close(timeout=math.nan), ValueError,
        "close: 'timeout'"),
    Row("module-flush-writer-int", lambda c: sl.flush(3), TypeError, "flush: 'writer'"),
    Row("flush_on_signals-signal-str",
        lambda c: importlib.import_module("summarylib.writer._signals").flush_on_signals(["TERM"]),
        TypeError, "'signals'"),
    # -- refused at the call, not later on the writer thread or by a reader
    Row("histogram-name-surrogate", lambda c: sl.histogram("h\ud800", [1.0]), ValueError,
        "histogram: 'name' is not valid Unicode", "summarylib.ops.histogram"),
    Row("image-name-surrogate", lambda c: sl.image("i\ud800", IMG), ValueError,
        "image: 'name' is not valid Unicode", "summarylib.ops.image"),
    Row("histogram-buckets-2**31-1", lambda c: sl.histogram("h", [1.0], buckets=2**31 - 1),
        ValueError, "'buckets' must be in [0, 2**24]", "summarylib.ops.histogram"),
    Row("pr_curve-num_thresholds-2**31-1", lambda c: sl.pr_curve("p", [True], [0.5],
        num_thresholds=2**31 - 1), ValueError, "'num_thresholds' must be in [2, 2**24]"),
    Row("text-more-than-an-event-holds", lambda c: sl.text("t", HUGE_TEXT), ValueError,
        "text: 'data' holds at least 2148012033 bytes of text; an event can hold at most "
        "2147483647"),
    Row("text_pb-more-than-an-event-holds", lambda c: sl.text_pb("t", HUGE_TEXT), ValueError,
        "text_pb: 'data' holds at least"),
    Row("scalar-data-meta-tensor", lambda c: sl.scalar("x", _torch("meta")), TypeError,
        "scalar: 'data' is a tensor on the meta device", "torch"),
    Row("scalar-data-nested-tensor", lambda c: sl.scalar("x", _torch("nested")), TypeError,
        "scalar: 'data' is a nested (jagged) tensor", "torch"),
    Row("histogram-data-nested-tensor", lambda c: sl.histogram("h", _torch("nested")),
        TypeError, "histogram: 'data' is a nested (jagged) tensor", "torch"),
    Row("image-data-nested-tensor", lambda c: sl.image("i", _torch("nested")), TypeError,
        "image: 'data' is a nested (jagged) tensor", "torch"),
    Row("add_scalar-nested-tensor", lambda c: c.writer.add_scalar("x", _torch("nested")),
        TypeError, "add_scalar: 'scalar_value' is a nested (jagged) tensor", "torch"),
    Row("add_histogram-meta-tensor", lambda c: c.writer.add_histogram("h", _torch("meta")),
        TypeError, "add_histogram: 'values' is a tensor on the meta device", "torch"),
    Row("add_histogram-bins-2**31-1", lambda c: c.writer.add_histogram("h", [1.0], bins=2**31 - 1),
        ValueError, "add_histogram: 'bins' must be in [1, 2**24]"),
    Row("add_text-tag-surrogate", lambda c: c.writer.add_text("t\ud800", "x"), ValueError,
        "add_text: 'tag' is not valid Unicode"),
    Row("add_histogram-tag-surrogate", lambda c: c.writer.add_histogram("h\ud800", [1.0]),
        ValueError, "add_histogram: 'tag' is not valid Unicode"),
    Row("create_file_writer-suffix-surrogate", lambda c: sl.create_file_writer(c.tmp,
        filename_suffix="x\ud800"), ValueError, "create_file_writer: 'filename_suffix'"),
    Row("SummaryWriter-suffix-surrogate", lambda c: sl.SummaryWriter(c.tmp,
        filename_suffix="x\ud800"), ValueError, "SummaryWriter: 'filename_suffix'"),
    # -- closed writers
    Row("closed-writer-scalar", lambda c: (c.writer.close(), c.writer.add_scalar("x", 1.0)),
        sl.WriterClosedError, "closed", closes=True),
    Row("closed-writer-as_default", lambda c: (c.writer.close(), c.writer.as_default().__enter__()),
        sl.WriterClosedError, "as_default", closes=True),
    Row("closed-writer-text", lambda c: (c.writer.close(), c.writer.add_text("t", "hi")),
        sl.WriterClosedError, "closed", "summarylib.ops.text", closes=True),
]


def test_the_table_covers_every_op_and_writer_api() -> None:
    assert len(ROWS) >= 40
    assert len({r.id for r in ROWS}) == len(ROWS)
    covered = {r.id.split("-")[0] for r in ROWS}
    for api in ("scalar", "scalars", "write", "write_raw_pb", "histogram", "image", "audio",
                "text", "pr_curve", "pr_curve_raw", "write_graph", "create_file_writer",
                "create_writer", "as_default", "set_as_default", "set_step", "name_scope",
                "flush", "close", "closed"):
        assert api in covered, api


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(row: Row, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip(row.needs)
    if row.xfail:
        request.applymarker(pytest.mark.xfail(reason=row.xfail, strict=True))
    logdir = tmp_path / "logs"
    w = sl.create_file_writer(logdir)
    path = only_file(logdir)
    w.set_as_default(step=1)
    assert sl.scalar("before", 1.0, step=0)
    w.flush()
    before = path.read_bytes()

    with pytest.raises(row.exc, match=re.escape(row.fragment)):
        row.call(Ctx(w, tmp_path / "other"))

    if not row.closes:
        w.flush()
    # Nothing was written for the failed call; earlier bytes are untouched.
    assert path.read_bytes() == before
    expected = [("before", 0)]
    if not row.closes:
        w.set_as_default(step=1)  # the row may have changed the context
        assert sl.scalar("after", 2.0, step=1)  # the writer still works
        expected.append(("after", 1))
    w.close()
    reader = RecordReader(path)
    assert len(list(reader)) == 1 + len(expected) and reader.truncated_at is None
    assert [(v.tag, e.step) for e in iter_events(path) for v in e.summary.value] == expected
    assert [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value] == expected
    assert list(logdir.iterdir()) == [path]  # no stray files


# Where TensorFlow raises ValueError and we raised TypeError: the error is both, so that
# `except ValueError` (code written for tf.summary) and `except TypeError` both catch it.
BOTH = {
    "scalar-data-str": lambda c: sl.scalar("x", "abc", step=0),
    "scalar-data-bytes": lambda c: sl.scalar("x", b"abc", step=0),
    "scalar-data-str-array": lambda c: sl.scalar("x", np.array("abc"), step=0),
    "scalars-value-str": lambda c: sl.scalars({"x": "abc"}, step=0),
    "add_scalar-str": lambda c: c.writer.add_scalar("x", "abc", 0),
    "module-flush-writer-int": lambda c: sl.flush(writer=3),
    "module-flush-writer-str": lambda c: sl.flush(writer="logs"),
    "write_graph-str": lambda c: sl.write_graph("hello"),
    "name_scope-int": lambda c: sl.name_scope(3).__enter__(),
}


@pytest.mark.parametrize("call", list(BOTH.values()), ids=list(BOTH))
def test_tensorflow_value_errors_are_value_errors_too(call: Callable[[Ctx], Any],
                                                      tmp_path: Path) -> None:
    writer = sl.create_file_writer(tmp_path)
    with writer.as_default(step=0):
        with pytest.raises(ValueError) as info:
            call(Ctx(writer, tmp_path))
        assert isinstance(info.value, TypeError)
        assert isinstance(info.value, sl.ArgumentError)
        assert isinstance(info.value, sl.SummaryError)
    writer.close()


@pytest.mark.parametrize("data", [b"hello", b"\x00\x01garbage", "hello"])
def test_write_raw_pb_names_the_data_that_is_not_a_summary(data: Any, tmp_path: Path) -> None:
    writer = sl.create_file_writer(tmp_path)
    with writer.as_default(step=0):
        shown = re.escape(repr(data.encode() if isinstance(data, str) else data))
        with pytest.raises(ValueError, match=f"write_raw_pb: 'tensor' .*{shown}"):
            sl.write_raw_pb(data)
    writer.close()
    assert [e for e in tb_events(only_file(tmp_path)) if e.HasField("summary")] == []


def test_write_graph_rejects_bytes_that_are_not_a_graph_def(tmp_path: Path) -> None:
    writer = sl.create_file_writer(tmp_path)
    with writer.as_default(step=0), pytest.raises(
        ValueError, match=r"write_graph: 'graph' .*b'\\xff\\xff'"
    ):
        sl.write_graph(b"\xff\xff")
    writer.close()
    assert [e for e in tb_events(only_file(tmp_path)) if e.HasField("graph_def")] == []
