"""scalar / scalars / scalar_pb: bytes, round trips, bad input."""

from __future__ import annotations

import math
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import summarylib as sl
from summarylib.encoding._arrays import scalar_float
from summarylib.encoding._events import summary_event
from summarylib.reader import iter_records, read_scalars
from tests.helpers import (
    only_file,
    record_payloads,
    tb_events,
    tb_scalar_points,
    torch_warns_always,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TAGS = st.text(min_size=1, max_size=40)
FLOAT32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


def memory_writer(**kw: object) -> tuple[sl.SummaryWriter, sl.MemoryOutput]:
    out = sl.MemoryOutput()
    return sl.create_writer(out, **kw), out  # type: ignore[arg-type]


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)


def test_scalar_record_matches_tensorflow_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # format.md §1.2: wall_time 1700000001.5, step 3, tag "loss", 0.5, scalars metadata.
    w, out = memory_writer(clock=lambda: 1700000001.5)
    with w.as_default():
        sl.scalar("loss", 0.5, step=3)
    w.close()
    data = out.getvalue()
    (first_len,) = struct.unpack_from("<Q", data)
    record = data[first_len + 16 :]  # after the file-version record
    assert record.hex() == (
        "2e00000000000000c5cb57fa0900006040fc54d94110032a210a1f0a046c6f7373420a0801120022"
        "040000003f4a0b0a090a077363616c617273bfbbad28"
    )


@given(tag=TAGS, step=INT64, values=st.lists(FLOAT32, min_size=1, max_size=4),
       description=st.one_of(st.none(), st.text(max_size=20)))
def test_hot_path_bytes_equal_protobuf_encoding(
    tag: str, step: int, values: list[float], description: str | None
) -> None:
    # Two encoders, one truth: the hand-encoded events equal scalar_pb's
    # protobuf serialization (first with metadata, then without).
    fixed = 1712345678.25
    w, out = memory_writer(clock=lambda: fixed)
    with w.as_default(step=step):
        for v in values:
            sl.scalar(tag, v, description=description)
    w.close()
    got = payloads(out.getvalue())[1:]
    for i, v in enumerate(values):
        pb = sl.scalar_pb(tag, v, description=description)
        if i:
            pb.value[0].ClearField("metadata")
        assert got[i] == summary_event(fixed, step, pb.SerializeToString())


def _bits(v: float) -> bytes:
    return struct.pack("<f", v)


@given(tag=TAGS, step=INT64, value=FLOAT32)
def test_round_trip_any_tag_step_and_float32(tmp_path_factory: pytest.TempPathFactory,
                                              tag: str, step: int, value: float) -> None:
    d = tmp_path_factory.mktemp("rt")
    with sl.create_file_writer(d).as_default() as w:
        sl.scalar(tag, value, step=step)
        sl.scalar(tag, value, step=step)
    w.close()
    path = only_file(d)
    ours = read_scalars(d)["."][tag]
    theirs = tb_scalar_points(path)[tag]
    # NaN != NaN, so compare the float32 bit patterns alongside steps and wall times.
    assert [(s, w, _bits(v)) for s, w, v in ours] == [(s, w, _bits(v)) for s, w, v in theirs]
    assert len(ours) == 2
    for s, wall, v in ours:
        assert s == step
        assert wall > 1e9
        if math.isnan(value):
            assert math.isnan(v)
        else:
            assert v == value


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (1, 1.0),
        (True, 1.0),
        (np.float64(0.25), 0.25),
        (np.float16(0.5), 0.5),
        (np.int32(-7), -7.0),
        (np.array(3.5), 3.5),
        (np.uint8(200), 200.0),
        (1e39, math.inf),  # beyond float32: inf, as a float32 cast gives
        (-1e39, -math.inf),
        (float("nan"), math.nan),
        (lambda: 2.0, 2.0),
    ],
)
def test_accepted_scalar_inputs(logdir: Path, data: object, expected: float) -> None:
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        assert sl.scalar("x", data)
    w.close()
    (point,) = read_scalars(logdir)["."]["x"]
    if math.isnan(expected):
        assert math.isnan(point[2])
    else:
        assert point[2] == expected


def test_framework_like_tensor_without_importing_framework(logdir: Path) -> None:
    class FakeTensor:  # like torch.Tensor: 0-d, __array__ and item(), no __float__
        shape = ()

        def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
            return np.array(1.25, dtype=np.float32)

    with sl.create_file_writer(logdir).as_default(step=0) as w:
        sl.scalar("x", FakeTensor())
    w.close()
    assert read_scalars(logdir)["."]["x"][0][2] == 1.25


def test_scalars_mapping_is_read_like_repeated_scalar(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w, sl.name_scope("train"):
        for step in range(3):
            assert sl.scalars({"loss": 1.0 / (step + 1), "acc": step * 0.25}, step=step)
        sl.scalars({"loss": 0.1, "new": 5}, step=3, description={"new": "fresh"})
    w.close()
    got = read_scalars(logdir)["."]
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    assert [(s, v) for s, _, v in got["train/loss"]] == [
        (0, 1.0), (1, 0.5), (2, f32(1 / 3)), (3, f32(0.1))
    ]
    assert [(s, v) for s, _, v in got["train/acc"]] == [(0, 0.0), (1, 0.25), (2, 0.5)]
    assert [(s, v) for s, _, v in got["train/new"]] == [(3, 5.0)]
    events = [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]
    assert len(events) == 4  # one event per call
    metas = [v.tag for e in events for v in e.summary.value if v.HasField("metadata")]
    assert metas == ["train/loss", "train/acc", "train/new"]  # first value per tag only
    assert tb_scalar_points(only_file(logdir))["train/new"][0][2] == 5.0


@given(step=INT64, values=st.dictionaries(TAGS, FLOAT32, min_size=1, max_size=5))
def test_scalars_bytes_equal_protobuf_encoding(step: int, values: dict[str, float]) -> None:
    from summarylib.proto import summary_pb2

    fixed = 1712345678.5
    w, out = memory_writer(clock=lambda: fixed)
    with w.as_default(step=step):
        sl.scalars(values)
        sl.scalars(values)
    w.close()
    first, second = payloads(out.getvalue())[1:]
    expected = summary_pb2.Summary()
    for tag, v in values.items():
        expected.value.append(sl.scalar_pb(tag, v).value[0])
    assert first == summary_event(fixed, step, expected.SerializeToString())
    for v in expected.value:
        v.ClearField("metadata")
    assert second == summary_event(fixed, step, expected.SerializeToString())


def test_metadata_only_on_first_value_of_each_tag_per_file(tmp_path: Path) -> None:
    for i in range(2):  # two files in one run: each starts with metadata
        with sl.create_file_writer(tmp_path).as_default(step=i) as w:
            sl.scalar("a", 1.0, description="the a")
            sl.scalar("b", 1.0)
            sl.scalar("a", 2.0)
        w.close()
    for path in sorted(tmp_path.iterdir()):
        values = [v for e in tb_events(path) if e.HasField("summary") for v in e.summary.value]
        assert [v.HasField("metadata") for v in values] == [True, True, False]
        md = values[0].metadata
        assert md.plugin_data.plugin_name == "scalars"
        assert md.plugin_data.content == b""
        assert md.summary_description == "the a"
        assert md.data_class == 0  # unset, as TensorFlow writes it
        assert values[0].tensor.dtype == 1 and len(values[0].tensor.tensor_shape.dim) == 0
    # later events are 13 bytes smaller than the first (no metadata)
    sizes = [len(r.payload) for r in iter_records(sorted(tmp_path.iterdir())[0])][1:]
    assert sizes[0] - sizes[2] == 13 + len("the a") + 2


def test_scalar_pb_without_writer() -> None:
    from tensorboard.compat.proto import summary_pb2 as tb_summary
    from tensorboard.util import tensor_util

    pb = sl.scalar_pb("loss", np.float64(0.75), description="d")
    theirs = tb_summary.Summary.FromString(pb.SerializeToString())
    assert theirs.value[0].tag == "loss"
    assert tensor_util.make_ndarray(theirs.value[0].tensor).item() == 0.75
    assert theirs.value[0].metadata.plugin_data.plugin_name == "scalars"


BAD_INPUTS = [
    ({"name": 3}, TypeError, "'name'"),
    ({"name": None}, TypeError, "'name'"),
    ({"name": ""}, ValueError, "'name'"),
    ({"name": "\ud800"}, ValueError, "'name'"),
    ({"step": 1.5}, TypeError, "'step'"),
    ({"step": "3"}, TypeError, "'step'"),
    ({"step": True}, TypeError, "'step'"),
    ({"step": 2**63}, ValueError, "int64"),
    ({"step": -(2**63) - 1}, ValueError, "int64"),
    ({"data": np.zeros(3)}, ValueError, r"rank 0.*\(3,\)"),
    ({"data": np.zeros((1,))}, ValueError, r"rank 0.*\(1,\)"),
    ({"data": [1.0]}, ValueError, "'data'"),
    ({"data": "1.0"}, TypeError, "'data'"),
    ({"data": b"1"}, TypeError, "'data'"),
    ({"data": 1 + 2j}, TypeError, "'data'"),
    ({"data": np.complex64(1)}, TypeError, "'data'"),
    ({"data": None}, TypeError, "'data'"),
    ({"data": object()}, TypeError, "'data'"),
    ({"data": 10**400}, ValueError, "'data'"),
    ({"description": 5}, TypeError, "'description'"),
]


@pytest.mark.parametrize(("override", "exc", "fragment"), BAD_INPUTS)
def test_bad_input_raises_and_writes_nothing(
    logdir: Path, override: dict[str, object], exc: type[Exception], fragment: str
) -> None:
    args: dict[str, object] = {"name": "x", "data": 1.0, "step": 1, **override}
    with sl.create_file_writer(logdir).as_default() as w:
        sl.scalar("before", 1.0, step=0)
        sl.scalar("x", 0.5, step=0)
        with pytest.raises(exc, match=fragment):
            sl.scalar(**args)  # type: ignore[arg-type]
        sl.scalar("after", 2.0, step=2)
    w.close()
    got = read_scalars(logdir)["."]
    assert got.keys() == {"before", "x", "after"}
    assert [p[2] for p in got["x"]] == [0.5]  # nothing written for the bad call


def test_scalars_bad_input_writes_nothing(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        with pytest.raises(TypeError, match="values"):
            sl.scalars({"ok": 1.0, 3: 2.0})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match=r"values\['bad'\]"):
            sl.scalars({"ok": 1.0, "bad": np.zeros(2)})
        with pytest.raises(TypeError, match="mapping"):
            sl.scalars([("a", 1.0)])  # type: ignore[arg-type]
    w.close()
    assert read_scalars(logdir) == {}


# ---------------------------------------------------------------------------
# scalar_float: item(), and torch's requires_grad warning
# ---------------------------------------------------------------------------
class ItemOnly:
    """A 0-d array type with item() but neither __float__ nor __array__."""

    shape = ()

    def __init__(self, value: object) -> None:
        self.value = value

    def item(self) -> object:
        return self.value


def test_scalar_accepts_rank0_objects_with_only_item(logdir: Path) -> None:
    assert scalar_float(ItemOnly(2.5), "scalar") == 2.5
    assert scalar_float(ItemOnly(3), "scalar") == 3.0
    assert scalar_float(ItemOnly(np.float32(0.1)), "scalar") == float(np.float32(0.1))
    with sl.create_file_writer(logdir).as_default(step=4) as w:
        assert sl.scalar("item", ItemOnly(1.5))
        assert sl.scalars({"a": ItemOnly(2.5)})
    w.close()
    values = [v for e in tb_events(only_file(logdir)) for v in e.summary.value]
    got = [np.frombuffer(v.tensor.tensor_content, "<f4")[0] for v in values]
    assert got == [1.5, 2.5]


def test_scalar_refuses_item_that_is_not_a_real_number(logdir: Path) -> None:
    with pytest.raises(TypeError, match=r"^scalar_pb: 'data' must be a real number, got "
                       r"ItemOnly whose item\(\) is str"):
        sl.scalar_pb("x", ItemOnly("1.5"))  # float("1.5") would have "worked"
    w = sl.create_file_writer(logdir)
    with w.as_default(step=0), pytest.raises(TypeError, match=r"^scalar: 'data' must be a real"):
        sl.scalar("x", ItemOnly(1j))
    w.close()
    assert len(tb_events(only_file(logdir))) == 1  # the file header only


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_scalar_of_a_tensor_that_requires_grad_does_not_warn(dtype: str, logdir: Path) -> None:
    torch = pytest.importorskip("torch")
    leaf = torch.tensor(0.75, dtype=getattr(torch, dtype), requires_grad=True)
    loss = leaf * 2  # 1.5, exact in every dtype above
    with torch_warns_always():
        with pytest.warns(UserWarning, match="requires_grad"):
            float(loss)  # what scalar_float used to call: torch warns
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert scalar_float(loss, "scalar") == 1.5
            assert scalar_float(leaf, "scalar") == 0.75
            with sl.create_file_writer(logdir).as_default(step=0) as w:
                assert sl.scalar("loss", loss)
                assert sl.scalars({"leaf": leaf})
            w.close()
    values = [v for e in tb_events(only_file(logdir)) for v in e.summary.value]
    assert [np.frombuffer(v.tensor.tensor_content, "<f4")[0] for v in values] == [1.5, 0.75]



BAD_DESCRIPTIONS = [
    ({"a": 5}, r"scalars: 'description'\['a'\] must be a str, got int"),
    ({"other": b"x"}, r"scalars: 'description'\['other'\] must be a str, got bytes"),
    ({3: "x"}, r"scalars: 'description' keys must be str, got int"),
    ("the a", r"scalars: 'description' must be a mapping .* got str"),
    (5, r"scalars: 'description' must be a mapping .* got int"),
    ([("a", "x")], r"scalars: 'description' must be a mapping .* got list"),
]


@pytest.mark.parametrize(("description", "fragment"), BAD_DESCRIPTIONS)
@pytest.mark.parametrize("tags_known", [False, True])
def test_scalars_bad_description_raises_on_every_path(
    logdir: Path, description: object, fragment: str, tags_known: bool
) -> None:
    # Known tags take the cached-layout fast path, which never reads the
    # description: it must still be checked, before anything is written.
    values = {"a": 1.0, "b": 2.0}
    with sl.create_file_writer(logdir).as_default() as w:
        if tags_known:
            for step in range(2):  # the second call builds the layout
                sl.scalars(values, step=step)
        with pytest.raises(TypeError, match=fragment):
            sl.scalars(values, step=5, description=description)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=fragment):  # the per-metric path too
            sl.scalars({"a": lambda: 1.0}, step=5, description=description)  # type: ignore[arg-type]
    w.close()
    got = read_scalars(logdir).get(".", {})
    assert all(step != 5 for points in got.values() for step, _, _ in points)
    assert len(got.get("a", [])) == (2 if tags_known else 0)


def test_scalars_description_on_first_value_only(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default() as w:
        desc = {"a": "the a", "b": None, "unused": "not a key of values"}
        assert sl.scalars({"a": 1.0, "b": 2.0}, step=0, description=desc)
        assert sl.scalars({"a": 1.0, "b": 2.0}, step=1, description={"a": "later"})
        assert sl.scalars({"a": 1.0, "b": 2.0}, step=2, description={"a": "later"})
    w.close()
    values = [v for e in tb_events(only_file(logdir)) if e.HasField("summary")
              for v in e.summary.value]
    assert [(v.tag, v.HasField("metadata")) for v in values] == [
        ("a", True), ("b", True), ("a", False), ("b", False), ("a", False), ("b", False)
    ]
    assert values[0].metadata.summary_description == "the a"
    assert values[1].metadata.summary_description == ""


def test_scalars_empty_mapping_writes_nothing_and_returns_false(logdir: Path) -> None:
    with sl.create_file_writer(logdir).as_default(step=0) as w:
        assert sl.scalars({}) is False
        assert sl.scalars({}, step=3, description={"a": "x"}) is False
        sl.scalars({"a": 1.0}, step=1)
        sl.scalars({"a": 1.0}, step=2)  # tags known: an empty call still writes nothing
        assert sl.scalars({}) is False
        with pytest.raises(TypeError, match="'step'"):
            sl.scalars({}, step="1")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="'description'"):
            sl.scalars({}, description="x")  # type: ignore[arg-type]
    w.close()
    events = [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]
    assert [e.step for e in events] == [1, 2]
