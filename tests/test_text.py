"""text / text_pb: byte-equal to TensorBoard's text_pb, shapes kept, what TensorBoard renders."""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import summarylib as sl
from summarylib.encoding import _plugins as plugins
from summarylib.encoding._events import summary_event
from summarylib.ops import text as text_mod
from tests.helpers import only_file, record_payloads
from tests.tbserver import TensorBoardServer

TEXT = st.text(max_size=12)  # any Unicode scalar values, no lone surrogates
BYTES = st.binary(max_size=12)


def tb_text_pb(tag: str, data: Any, description: str | None = None) -> bytes:
    from tensorboard.plugins.text import summary_v2

    return summary_v2.text_pb(tag, data, description).SerializeToString()  # type: ignore[no-any-return]


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def raw_values(logdir: Path) -> list[tuple[int, Any]]:
    from tensorboard.compat.proto import event_pb2

    out: list[tuple[int, Any]] = []
    for p in payloads(only_file(logdir).read_bytes())[1:]:
        ev = event_pb2.Event.FromString(p)
        out.extend((ev.step, v) for v in ev.summary.value)
    return out


def decoded(value: Any) -> np.ndarray:
    from tensorboard.util import tensor_util

    assert value.tensor.dtype == 7  # DT_STRING
    assert not value.tensor.tensor_content
    return tensor_util.make_ndarray(value.tensor)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------
# Inputs TensorBoard's own text_pb accepts, in every form
# ---------------------------------------------------------------------------
@st.composite
def text_data(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["str", "bytes", "list", "unicode", "bytes_array", "object"]))
    if kind == "str":
        return draw(TEXT)
    if kind == "bytes":
        return draw(BYTES)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    n = int(np.prod(shape))
    if kind == "list":
        flat = draw(st.lists(TEXT, min_size=n, max_size=n))
        return np.array(flat, dtype=object).reshape(shape).tolist() if shape else flat[0:1]
    if kind == "unicode":
        # numpy's own strategy draws lone surrogates, which no UTF-8 text can hold (TensorBoard's
        # text_pb fails on them too; test_bad_inputs covers our error); NULs would be stripped.
        chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
        return draw(hnp.arrays(np.dtype("U8"), shape, elements=st.text(chars, max_size=8)))
    if kind == "bytes_array":
        return draw(hnp.arrays(np.dtype("S8"), shape))
    mixed = draw(st.lists(st.one_of(TEXT, BYTES), min_size=n, max_size=n))
    arr = np.empty(n, dtype=object)
    arr[:] = mixed
    return arr.reshape(shape)


@settings(max_examples=150)
@given(data=text_data(), tag=st.text(min_size=1, max_size=10), description=st.none() | TEXT)
def test_text_pb_bytes_equal_tensorboards_text_pb(
    data: Any, tag: str, description: str | None
) -> None:
    assert sl.text_pb(tag, data, description).SerializeToString() == tb_text_pb(
        tag, data, description
    )


@settings(max_examples=50)
@given(data=text_data(), step=st.integers(0, 2**63 - 1))
def test_op_bytes_equal_text_pb_serialization(data: Any, step: int) -> None:
    fixed = 1712345679.5
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: fixed)
    with w.as_default(step=step):
        assert sl.text("notes", data)
        assert sl.text("notes", data)
    w.close()
    first, second = payloads(out.getvalue())[1:]
    pb = sl.text_pb("notes", data)
    assert first == summary_event(fixed, step, pb.SerializeToString())
    pb.value[0].ClearField("metadata")
    assert second == summary_event(fixed, step, pb.SerializeToString())


def test_metadata_bytes_equal_protobuf_and_tensorboard() -> None:
    from tensorboard.plugins.text import metadata

    for desc in (None, "", "*why*"):
        ours = plugins.TEXT.metadata_bytes(desc, "text")
        assert ours == text_mod.create_summary_metadata(desc).SerializeToString()
        theirs = metadata.create_summary_metadata(display_name=None, description=desc)
        assert ours == theirs.SerializeToString()


# ---------------------------------------------------------------------------
# Shapes and values kept
# ---------------------------------------------------------------------------
def test_shapes_and_values_survive_the_file(logdir: Path) -> None:
    cases: dict[str, tuple[Any, np.ndarray]] = {
        "scalar": ("héllo **world** ✓", np.array(["héllo **world** ✓".encode()], object)),
        "bytes": (b"\xff\x00raw", np.array([b"\xff\x00raw"], object)),
        "empty_str": ("", np.array([b""], object)),
        "row": (["a", "b", "c"], np.array([b"a", b"b", b"c"], object)),
        "empty_list": ([], np.array([], object)),
        "grid": (np.array([["1", "2"], ["3", "4"]]), np.array([[b"1", b"2"], [b"3", b"4"]])),
        "cube": (np.full((2, 1, 3), "x"), np.full((2, 1, 3), b"x", object)),
        "zero_size": (np.zeros((2, 0), "U1"), np.zeros((2, 0), object)),
        "mixed": (np.array(["s", b"b"], object), np.array([b"s", b"b"], object)),
        "tuple": (("t", "u"), np.array([b"t", b"u"], object)),
    }
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        for tag, (data, _) in cases.items():
            assert sl.text(tag, data)
        assert sl.text("lazy", lambda: "computed")
    w.close()
    got = {v.tag: v for _, v in raw_values(logdir)}
    for tag, (_, expected) in cases.items():
        arr = decoded(got[tag])
        shape = () if tag in ("scalar", "bytes", "empty_str") else expected.shape
        assert arr.shape == shape, tag
        assert arr.reshape(-1).tolist() == expected.reshape(-1).tolist(), tag
    assert decoded(got["lazy"]).item() == b"computed"


def test_metadata_and_description_on_first_event_only(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w, sl.name_scope("log"):
        for step in range(3):
            sl.text("notes", f"step {step}", step=step, description="free text")
    w.close()
    values = raw_values(logdir)
    assert [(s, v.tag) for s, v in values] == [(0, "log/notes"), (1, "log/notes"), (2, "log/notes")]
    assert [v.HasField("metadata") for _, v in values] == [True, False, False]
    md = values[0][1].metadata
    assert md.plugin_data.plugin_name == "text"
    assert md.plugin_data.content == b""
    assert md.summary_description == "free text"
    assert md.data_class == 0


# ---------------------------------------------------------------------------
# Nothing recorded, nothing computed
# ---------------------------------------------------------------------------
def test_no_work_without_writer_or_when_not_recording(logdir: Path) -> None:
    def lazy() -> str:
        raise AssertionError("evaluated although nothing records")

    assert sl.text("x", lazy, step=0) is False
    assert sl.text("x", 5, step=0) is False  # not even validated
    with sl.create_file_writer(logdir).as_default(step=0) as w, sl.record_if(False):
        assert sl.text("x", lazy) is False
    w.close()
    assert raw_values(logdir) == []


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
BAD_INPUTS = [
    ({"data": 5}, TypeError, r"'data' must be str, bytes or an array of them, got int 5"),
    ({"data": 1.5}, TypeError, r"got float 1.5"),
    ({"data": None}, TypeError, r"'data'"),
    ({"data": np.zeros(3)}, TypeError, r"got an array of dtype float64"),
    ({"data": np.array([True])}, TypeError, r"dtype bool"),
    ({"data": ["a", 1]}, TypeError, r"'data' must hold only str or bytes, found int"),
    ({"data": [["a"], ["b", "c"]]}, TypeError, r"found list"),  # ragged
    ({"data": np.array([None], object)}, TypeError, r"found NoneType"),
    ({"data": "\ud800"}, ValueError, r"'data' is not valid Unicode text"),
    ({"data": ["ok", "\udfff"]}, ValueError, r"'data' is not valid Unicode text"),
    ({"description": 1}, TypeError, r"'description' must be a str"),
    ({"name": ""}, ValueError, r"'name'"),
    ({"step": None}, ValueError, r"no step"),
]


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS)
def test_bad_input_raises_writes_nothing_and_keeps_earlier_data(
    logdir: Path, override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"name": "x", "data": "fine", "step": 2, **override}
    with sl.create_file_writer(logdir).as_default() as w:
        assert sl.text("x", "earlier", step=1)
        with pytest.raises(exc, match=pattern) as info:
            sl.text(**args)
        assert str(info.value).startswith("text: ")
    w.close()
    values = raw_values(logdir)
    assert [(s, decoded(v).item()) for s, v in values] == [(1, b"earlier")]


@pytest.mark.parametrize(("override", "exc", "pattern"), BAD_INPUTS[:-2])
def test_text_pb_rejects_the_same_input(
    override: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    args: dict[str, Any] = {"data": "fine", **override}
    with pytest.raises(exc, match=pattern) as info:
        sl.text_pb("x", **args)
    assert str(info.value).startswith("text_pb: ")


# ---------------------------------------------------------------------------
# The real TensorBoard renders it
# ---------------------------------------------------------------------------
def test_tensorboard_serves_the_text(tmp_path: Path) -> None:
    cube = np.array([[[f"c{i}{j}{k}" for k in range(3)] for j in range(2)] for i in range(2)])
    with sl.create_file_writer(tmp_path / "run").as_default() as w:
        sl.text("note", "first <b>plain</b> note", step=0)
        sl.text("note", "second note", step=1)
        sl.text("table", [["r0c0", "r0c1"], ["r1c0", "r1c1"]], step=0)
        sl.text("bytes", "caf\u00e9 <i>as bytes</i>".encode(), step=0)
        sl.text("byte_rows", np.array([b"row one", b"row two"]), step=0)  # dtype S
        sl.text("cube", cube, step=0)
    w.close()
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(
            lambda: tb.get_json("/data/plugin/text/tags"),
            lambda t: set(t.get("run", [])) == {"note", "table", "bytes", "byte_rows", "cube"},
        )
        notes = tb.poll(
            lambda: tb.get_json("/data/plugin/text/text", run="run", tag="note", markdown="false"),
            lambda e: len(e) == 2,
        )
        assert [n["step"] for n in notes] == [0, 1]
        assert html.escape("first <b>plain</b> note") in notes[0]["text"]
        assert "second note" in notes[1]["text"]
        (table,) = tb.get_json("/data/plugin/text/text", run="run", tag="table", markdown="false")
        cells = ["r0c0", "r0c1", "r1c0", "r1c1"]
        positions = [table["text"].index(f"<td>{c}</td>") for c in cells]
        assert positions == sorted(positions)  # row-major, shape [2, 2] kept

        def one(tag: str) -> str:
            (entry,) = tb.get_json("/data/plugin/text/text", run="run", tag=tag, markdown="false")
            return entry["text"]  # type: ignore[no-any-return]

        # bytes are stored as given and read back as UTF-8 text
        assert html.escape("caf\u00e9 <i>as bytes</i>") in one("bytes")
        rows = one("byte_rows")
        assert rows.index("<td>row one</td>") < rows.index("<td>row two</td>")
        # rank 3: TensorBoard warns and shows the first 2-D slice, cube[0], row-major
        shown = one("cube")
        assert "dimensionality 3" in shown
        positions = [shown.index(f"<td>{c}</td>") for c in cube[0].reshape(-1)]
        assert positions == sorted(positions)
        assert not any(c in shown for c in cube[1].reshape(-1))
