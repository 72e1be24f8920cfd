"""Every hand-encoded fast path writes the bytes of the straightforward protobuf encoding.

The reference is built with the generated protobuf classes only: an Event
with a Summary whose Values hold a rank-0 DT_FLOAT tensor (numpy's float32
cast of the value) and, on the first value of a tag in a file, the scalars
metadata. The fast paths under test: ``scalar()``'s cached per-tag prefix,
``scalars()``' per-metric loop, and ``scalars()``' cached ``struct`` layout
per tag set (used from the second call with the same keys).
"""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.encoding._events import event_bytes, step_field, summary_event
from summarylib.encoding._tfrecord import frame_many
from summarylib.ops import scalar as scalar_mod
from summarylib.writer._context import _local
from tests.helpers import record_payloads

WALL_TIME = 1712345678.25
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# The step tables: one- and two-byte varints, then three-byte ones.
SMALL_STEPS = st.integers(min_value=0, max_value=20_000) | st.integers(
    min_value=16_000, max_value=2**21 + 100
)
# Short tags, and tags long enough that a Value's length takes two bytes.
TAGS = st.one_of(st.text(min_size=1, max_size=12), st.text(min_size=60, max_size=90))
SCOPES = st.sampled_from(["", "train/", "a/very/" * 12])
# A strategy for every value type the fast paths pack directly (scalar()'s
# and the scalars() layout's type set: test_every_fast_type_is_generated),
# including values they must hand on to the checked path: finite beyond
# float32 (stored as ±inf) and ints beyond float (a ValueError, tested
# separately, so generated ints stay below 2**1000).
FAST_TYPE_VALUES: dict[type, st.SearchStrategy[Any]] = {
    float: st.floats(allow_nan=True, allow_infinity=True) | st.floats(width=32),
    int: st.integers(min_value=-(2**64), max_value=2**64)
    | st.integers(min_value=2**127, max_value=2**1000).map(lambda i: i * (-1) ** (i & 1)),
    bool: st.booleans(),
    np.float16: st.floats(width=16).map(np.float16),
    np.float32: st.floats(width=32).map(np.float32),
    np.float64: st.floats().map(np.float64),
    np.int32: st.integers(min_value=-(2**31), max_value=2**31 - 1).map(np.int32),
    np.int64: st.integers(min_value=-(2**63), max_value=2**63 - 1).map(np.int64),
}
# Values of other types take the checked path (scalar_float); in a call
# mixed with fast ones their bytes must not change either.
OTHER_VALUES = st.one_of(
    st.booleans().map(np.bool_),
    st.integers(min_value=0, max_value=255).map(np.uint8),
    st.integers(min_value=-(2**15), max_value=2**15 - 1).map(np.int16),
    st.integers(min_value=0, max_value=2**64 - 1).map(np.uint64),
    st.floats(width=32).map(lambda x: np.array(x, dtype=np.float32)),  # 0-d array
)
VALUES = st.one_of(*FAST_TYPE_VALUES.values(), OTHER_VALUES)


def expected_f32(value: Any) -> bytes:
    """numpy's float32 cast (as TensorFlow's): out-of-range values become ±inf."""
    with np.errstate(over="ignore"):
        return np.array(float(value), dtype=np.float64).astype("<f4").tobytes()


def reference_event(step: int, items: list[tuple[str, Any]], with_metadata: set[str]) -> bytes:
    from summarylib.proto import event_pb2, summary_pb2, types_pb2

    summary = summary_pb2.Summary()
    for tag, value in items:
        v = summary.value.add()
        v.tag = tag
        v.tensor.dtype = types_pb2.DT_FLOAT
        v.tensor.tensor_shape.SetInParent()
        v.tensor.tensor_content = expected_f32(value)
        if tag in with_metadata:
            v.metadata.plugin_data.plugin_name = "scalars"
    return event_pb2.Event(wall_time=WALL_TIME, step=step, summary=summary).SerializeToString()


def payloads(data: bytes) -> list[bytes]:
    return record_payloads(data)[1:]  # without the file-version event


def write(calls: Any) -> list[bytes]:
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: WALL_TIME)
    with w.as_default():
        calls()
    w.close()
    return payloads(out.getvalue())


@settings(max_examples=150, deadline=None)
@given(
    scope=SCOPES,
    values=st.dictionaries(TAGS, VALUES, min_size=1, max_size=6),
    steps=st.lists(SMALL_STEPS | INT64, min_size=3, max_size=3),
)
def test_scalars_every_path_equals_protobuf(
    scope: str, values: dict[str, Any], steps: list[int]
) -> None:
    expanded: list[bytes] = []

    def calls() -> None:
        with sl.name_scope(scope.rstrip("/")) if scope else contextlib.nullcontext():
            sl.scalars(values, step=steps[0])
            # The first call made the layout: count what its records become.
            res = _local.state.writer._resource  # type: ignore[union-attr]
            formats = res.codecs
            assert len(formats) == 1
            expand, frame_run = formats[0]
            formats[0] = (lambda record: expanded.append(expand(record)) or expanded[-1],
                          frame_run)
            for step in steps[1:]:
                sl.scalars(values, step=step)

    got = write(calls)
    items = [(scope + k, v) for k, v in values.items()]
    tags = {t for t, _ in items}
    assert got[0] == reference_event(steps[0], items, tags)
    assert got[1] == reference_event(steps[1], items, set())
    assert got[2] == reference_event(steps[2], items, set())
    # The layout path really ran for the calls whose values it takes as they are
    # (the rest, e.g. finite beyond float32, took the checked path: same bytes).
    assert set(expanded) <= {got[1], got[2]}
    if all(type(v) in (float, bool) and np.isfinite(float(v)) and abs(float(v)) < 3e38
           for v in values.values()):
        assert expanded == got[1:3]


@settings(max_examples=150, deadline=None)
@given(
    scope=SCOPES,
    values=st.dictionaries(TAGS, st.one_of(*FAST_TYPE_VALUES.values()), min_size=1,
                           max_size=6),
    step=SMALL_STEPS | INT64,
)
def test_scalars_layout_makes_the_event_itself(scope: str, values: dict[str, Any],
                                               step: int) -> None:
    # The layout path and the per-metric path give the same bytes, so the test above
    # cannot always tell which one ran: here the layout's own record, expanded as the
    # writer thread does, is compared (struct refuses only the values the checked path
    # must see: beyond float32, ints beyond float).
    scoped = {scope + k: v for k, v in values.items()}
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: WALL_TIME)
    with w.as_default():
        sl.scalars(scoped, step=0)  # metadata first; the layout is made
        res = w._resource
        assert res is not None
        layout = res.tags.layout_of(tuple(scoped))
    w.close()
    items = list(scoped.items())
    assert scalar_mod._accepts(layout, scoped.values())  # every fast type is taken as it is

    def needs_checked_path(v: Any) -> bool:
        # Finite beyond float32 (stored as ±inf) or an int beyond float.
        if type(v) is int and abs(v) >= 2**1024:
            return True
        x = float(v)
        return np.isfinite(x) and abs(x) > float(np.finfo(np.float32).max)

    try:
        record = layout.pack(layout.marker, WALL_TIME, step, *scoped.values())
    except (OverflowError, struct.error):
        assert any(needs_checked_path(v) for _, v in items), items
    else:
        assert record[:4] == layout.marker and record[0] == 0
        assert layout.expand(record) == reference_event(step, items, set())


# Steps of every varint length class (none for 0, 1 to 9 bytes, 10 for negatives), in
# runs and mixed, so that a run of records is cut wherever the step field's length changes.
RUN_STEPS = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 127, 128, 16383, 16384, 2**21, 2**35, 2**62, -1, -(2**63)])
        | INT64,
        st.integers(1, 24),
    ),
    min_size=1, max_size=6,
).map(lambda blocks: [min(base + i, 2**63 - 1) for base, n in blocks for i in range(n)])


@settings(max_examples=150, deadline=None)
@given(
    values=st.dictionaries(TAGS, st.floats(width=32) | st.booleans(), min_size=1, max_size=12),
    steps=RUN_STEPS,
    times=st.floats(min_value=1, max_value=4e9),  # 0 is left out by protobuf, never by us
)
def test_scalars_record_runs_frame_as_one_by_one(
    values: dict[str, Any], steps: list[int], times: float
) -> None:
    # A run of records framed at once (numpy, the CRC from tables) equals each record
    # expanded and framed on its own, which equals the protobuf encoding.
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: WALL_TIME)
    with w.as_default():
        sl.scalars(values, step=0)  # metadata first; the layout is made
    w.close()
    res = w._resource
    assert res is not None
    layout = res.tags.layout_of(tuple(values))
    records = [layout.pack(layout.marker, times + i, step, *values.values())
               for i, step in enumerate(steps)]
    events = [layout.expand(r) for r in records]
    assert layout.frame_run(records) == frame_many(events)
    items = list(values.items())
    for i, (event, step) in enumerate(zip(events, steps, strict=True)):
        from summarylib.proto import event_pb2

        expected = event_pb2.Event.FromString(reference_event(step, items, set()))
        expected.wall_time = times + i
        assert event == expected.SerializeToString()


def test_a_batch_of_scalars_goes_to_the_run_framer_and_reads_back() -> None:
    # End to end: 1,000 calls queued, then written in one batch; the writer hands the
    # runs to the layout's framer, and the file holds exactly the expected events.
    out = sl.MemoryOutput()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9, clock=lambda: WALL_TIME)
    res = w._resource
    assert res is not None
    runs: list[int] = []
    names = [f"metric_{i}" for i in range(10)]
    with w.as_default():
        sl.scalars(dict.fromkeys(names, 0.0), step=0)
        expand, frame_run = res.codecs[0]
        res.codecs[0] = (expand, lambda records: runs.append(len(records))
                                  or frame_run(records))
        for step in range(1, 1001):
            sl.scalars({n: step * (i + 1) / 7 for i, n in enumerate(names)}, step=step)
            if step % 300 == 0:
                sl.scalar("other", 1.0, step=step)  # cuts the run
    w.close()
    assert sum(runs) >= 990 and all(r <= 384 for r in runs)
    got = payloads(out.getvalue())
    scalars_events = [p for p in got if b"other" not in p]
    assert len(scalars_events) == 1001
    for step, payload in enumerate(scalars_events[1:], start=1):
        items = [(n, step * (i + 1) / 7) for i, n in enumerate(names)]
        assert payload == reference_event(step, items, set())


@settings(max_examples=100, deadline=None)
@given(
    scope=SCOPES,
    tag=TAGS,
    values=st.lists(VALUES, min_size=2, max_size=4),
    step=SMALL_STEPS | INT64,
)
def test_scalar_hot_path_equals_protobuf(
    scope: str, tag: str, values: list[Any], step: int
) -> None:
    def calls() -> None:
        with sl.name_scope(scope.rstrip("/")) if scope else contextlib.nullcontext():
            for v in values:
                sl.scalar(tag, v, step=step)

    from summarylib.proto import event_pb2

    got = write(calls)
    for i, (payload, v) in enumerate(zip(got, values, strict=True)):
        meta = {scope + tag} if i == 0 else set()
        assert payload == reference_event(step, [(scope + tag, v)], meta)
        # ... which is also scalar_pb's Summary in an Event (metadata on the first).
        pb = sl.scalar_pb(scope + tag, v)
        if i:
            pb.value[0].ClearField("metadata")
        event = event_pb2.Event(wall_time=WALL_TIME, step=step, summary=pb)
        assert payload == event.SerializeToString()


def test_every_fast_type_is_generated() -> None:
    # numpy's types join the set once numpy is loaded (it is, here).
    scalar_mod._add_numpy_types()
    assert scalar_mod._fast_types <= FAST_TYPE_VALUES.keys()


def test_layout_is_per_file_new_writer_writes_metadata_again() -> None:
    values = {"loss": 0.5, "acc": 0.25}
    for _ in range(2):  # the second writer finds the layout cached already
        got = write(lambda: [sl.scalars(values, step=s) for s in range(3)])
        assert got[0] == reference_event(0, list(values.items()), set(values))
        assert got[2] == reference_event(2, list(values.items()), set())


class OneElementTensor:
    """A framework-like tensor of shape (1,) that converts with float()."""

    shape = (1,)

    def __float__(self) -> float:
        return 1.0


def test_layout_hands_unusual_values_to_the_checked_path() -> None:
    def calls() -> None:
        sl.scalars({"a": 1.0, "b": 2.0}, step=0)
        sl.scalars({"a": 1.0, "b": 2.0}, step=1)  # layout built and used
        sl.scalars({"a": 1e300, "b": lambda: 3.0}, step=2)  # ±inf, lazy value
        sl.scalars({"a": np.array(4.0), "b": 5}, step=3)
        with pytest.raises(ValueError, match=r"values\['b'\]"):
            sl.scalars({"a": 1.0, "b": np.zeros(2)}, step=4)
        with pytest.raises(ValueError, match="too large"):
            sl.scalars({"a": 1.0, "b": 2**2000}, step=5)
        # One element but not rank 0: struct would take it through __float__.
        with pytest.raises(ValueError, match=r"rank 0\), got shape \(1,\)"):
            sl.scalars({"a": 1.0, "b": OneElementTensor()}, step=6)
        with pytest.raises(ValueError, match=r"rank 0\), got shape \(1,\)"):
            sl.scalars({"a": 1.0, "b": np.ones(1)}, step=7)

    got = write(calls)
    assert len(got) == 4  # nothing written for the calls that raised
    assert got[2] == reference_event(2, [("a", float("inf")), ("b", 3.0)], set())
    assert got[3] == reference_event(3, [("a", 4.0), ("b", 5)], set())


def test_new_tag_in_a_known_key_order_gets_metadata() -> None:
    def calls() -> None:
        sl.scalars({"a": 1.0}, step=0)
        sl.scalars({"a": 1.0}, step=1)
        sl.scalars({"a": 1.0, "b": 2.0}, step=2)  # b is new: metadata
        sl.scalars({"a": 1.0, "b": 2.0}, step=3)

    got = write(calls)
    assert got[2] == reference_event(2, [("a", 1.0), ("b", 2.0)], {"b"})
    assert got[3] == reference_event(3, [("a", 1.0), ("b", 2.0)], set())


@given(step=INT64 | SMALL_STEPS)
def test_step_field_equals_protobuf(step: int) -> None:
    from summarylib.proto import event_pb2

    expected = event_pb2.Event(wall_time=WALL_TIME, step=step).SerializeToString()
    assert event_bytes(WALL_TIME, step, b"") == expected
    assert step_field(step) == expected[9:]
    assert summary_event(WALL_TIME, step, b"") == expected + b"\x2a\x00"


# scalar()'s event Struct per step-field length: 0 (step 0), 2, 3, the
# 3-byte steps given as 3 bytes and 1, then 5 to 10 bytes and 11 (negative).
@pytest.mark.parametrize(
    "step",
    [0, 1, 127, 128, 16383, 16384, 16385, 2**21 - 1, 2**21, 2**28, 2**35, 2**62, -1, -(2**63)],
)
def test_step_table_edges(step: int) -> None:
    test_step_field_equals_protobuf.hypothesis.inner_test(step)  # type: ignore[attr-defined]
    got = write(lambda: [sl.scalar("s", 1.0, step=step) for _ in range(2)])
    assert got[1] == reference_event(step, [("s", 1.0)], set())


def test_scalar_hot_path_before_the_step_table_is_built() -> None:
    # The 3-byte step table is built on first use; until then scalar() takes
    # its fallback (step_field builds it), then the table.
    from summarylib.encoding import _events as events

    def calls() -> None:
        sl.scalar("s", 1.0, step=0)  # the first event (step_field would build the table)
        events.STEP3_LOW.clear()
        sl.scalar("s", 2.0, step=20_000)  # the fallback, which builds it
        assert len(events.STEP3_LOW) == 1 << 14
        sl.scalar("s", 3.0, step=20_001)

    got = write(calls)
    assert got[1] == reference_event(20_000, [("s", 2.0)], set())
    assert got[2] == reference_event(20_001, [("s", 3.0)], set())


@pytest.mark.parametrize("length", range(96, 136))
def test_per_metric_path_around_the_two_byte_value_length(length: int) -> None:
    # A Value's length needs a second byte from a tag of ~110 bytes on. The
    # lazy value keeps every call off the layout path, on the per-metric one.
    tag = "t" * length

    def calls() -> None:
        for step in range(3):
            sl.scalars({tag: 1.5, "x": lambda: 2.0}, step=step)
            sl.scalar(tag, 0.25, step=step)

    got = write(calls)
    items = [(tag, 1.5), ("x", 2.0)]
    assert got[0] == reference_event(0, items, {tag, "x"})
    assert got[1] == reference_event(0, [(tag, 0.25)], set())
    assert got[4] == reference_event(2, items, set())
    assert got[5] == reference_event(2, [(tag, 0.25)], set())


# The encoders every op's events go through (wire.py, events.py), against the
# protobuf classes, with payload lengths around the one-, two- and
# three-byte varint boundaries (127/128, 16383/16384).
PAYLOADS = st.binary(max_size=300) | st.sampled_from(
    [127, 128, 129, 16383, 16384, 16385, 20000]
).map(lambda n: bytes(range(256)) * (n // 256) + b"\x07" * (n % 256))


@given(value=INT64)
def test_varint_equals_protobuf(value: int) -> None:
    from summarylib.encoding._wire import varint
    from summarylib.proto import event_pb2

    expected = event_pb2.Event(step=value).SerializeToString()
    assert b"\x10" + varint(value) == (expected or b"\x10\x00")


@pytest.mark.parametrize("value", [0, 1, 127, 128, 129, 255, 256, 16383, 16384, 2**21 - 1, 2**21])
def test_varint_boundaries(value: int) -> None:
    test_varint_equals_protobuf.hypothesis.inner_test(value)  # type: ignore[attr-defined]


@given(payload=PAYLOADS)
def test_field_bytes_equals_protobuf(payload: bytes) -> None:
    from summarylib.encoding._wire import field_bytes
    from summarylib.proto import tensor_pb2

    expected = tensor_pb2.TensorProto(tensor_content=payload).SerializeToString()
    assert field_bytes(4, payload) == (expected or b"\x22\x00")


@given(
    tag=st.text(min_size=1, max_size=200),
    content=PAYLOADS,
    metadata=st.none() | st.binary(max_size=200),
    wall_time=st.floats(min_value=1.0, max_value=2e10),  # never 0 (proto3 would skip it)
    step=INT64,
)
def test_value_bytes_and_summary_event_equal_protobuf(
    tag: str, content: bytes, metadata: bytes | None, wall_time: float, step: int
) -> None:
    from summarylib.encoding._events import value_bytes
    from summarylib.proto import event_pb2, summary_pb2, tensor_pb2

    tensor = tensor_pb2.TensorProto(dtype=1, tensor_content=content)
    md = None
    if metadata is not None:  # a SummaryMetadata with plugin content of that length
        md = summary_pb2.SummaryMetadata()
        md.plugin_data.plugin_name = "p"
        md.plugin_data.content = metadata
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=md)
    md_bytes = None if md is None else md.SerializeToString()
    got = value_bytes(tag, tensor.SerializeToString(), md_bytes)
    assert got == value.SerializeToString()
    summary = summary_pb2.Summary(value=[value, value])
    expected = event_pb2.Event(wall_time=wall_time, step=step, summary=summary)
    assert summary_event(wall_time, step, summary.SerializeToString()) == (
        expected.SerializeToString()
    )


def test_past_the_layout_bounds_the_checked_path_writes_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A program that logs ever new sets of tags: past the per-writer bounds (layouts,
    # record formats) new sets take the checked path, with the same bytes.
    from summarylib.writer import _batch as batch

    monkeypatch.setattr(scalar_mod, "_MAX_LAYOUTS", 3)
    monkeypatch.setattr(batch, "_MAX_RECORD_FORMATS", 2)
    sets = [{f"k{j}_{i}": float(i + j) for i in range(3)} for j in range(5)]
    out = sl.MemoryOutput()
    w = sl.create_writer(out, clock=lambda: WALL_TIME)
    with w.as_default():
        for step in range(3):
            for values in sets:
                assert sl.scalars(values, step=step)
    res = w._resource
    assert res is not None
    assert res.tags.layout_count() == 2 and len(res.codecs) == 2
    w.close()
    got = payloads(out.getvalue())
    expected = [reference_event(step, list(values.items()), set(values) if step == 0 else set())
                for step in range(3) for values in sets]
    assert got == expected


@pytest.mark.parametrize("scope", ["", "100%/"])
def test_records_of_tags_with_percent_signs_and_long_tags(scope: str) -> None:
    # The record's Event template is filled with bytes %-formatting: a "%" in a tag or
    # scope is escaped there. Tags past ~110 bytes take two-byte Value lengths.
    values = {"a%s": 1.0, "%": 2.0, "%%d": 3.0, "t" * 150: 4.0, "%" * 130: 5.0}

    def calls() -> None:
        with sl.name_scope(scope.rstrip("/")) if scope else contextlib.nullcontext():
            for step in range(30):  # one checked event, then 29 records in a run
                sl.scalars(values, step=step)

    got = write(calls)
    items = [(scope + k, v) for k, v in values.items()]
    assert got[0] == reference_event(0, items, {t for t, _ in items})
    assert got[1:] == [reference_event(step, items, set()) for step in range(1, 30)]
