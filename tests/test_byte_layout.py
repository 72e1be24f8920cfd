"""One definition of each piece of the byte layout, proved against its independent source.

``summarylib.encoding`` owns the wire keys, the step field, the masked CRC and the CRC
tables; the ops, the writer and the readers take them from there. Each test here drives
one definition through the two paths that use it (or checks it against protobuf or
crc32c, which know nothing of ours).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import crc32c as crc32c_lib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.encoding import _compact as compact
from summarylib.encoding import _events as events
from summarylib.encoding._template_framing import MAX_TABLE_POSITIONS, TemplateFramer
from summarylib.encoding._tfrecord import crc_tables, frame_many, mask
from summarylib.proto import event_pb2, summary_pb2
from summarylib.reader.records import iter_records
from summarylib.reader.templates import scalar_template

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def test_field_keys_are_protobuf_field_numbers_and_wire_types() -> None:
    # (field number << 3) | wire type, from the generated descriptors.
    length_delimited, varint, fixed64 = 2, 0, 1
    event = event_pb2.Event.DESCRIPTOR.fields_by_name
    value = summary_pb2.Summary.Value.DESCRIPTOR.fields_by_name
    summary = summary_pb2.Summary.DESCRIPTOR.fields_by_name
    ours_and_protobufs = [
        (events.WALL_TIME_KEY, event["wall_time"].number << 3 | fixed64),
        (events.STEP_KEY, event["step"].number << 3 | varint),
        (events.SUMMARY_KEY, event["summary"].number << 3 | length_delimited),
        (events.VALUE_KEY, summary["value"].number << 3 | length_delimited),
        (events.TAG_KEY, value["tag"].number << 3 | length_delimited),
        (events.TENSOR_KEY, value["tensor"].number << 3 | length_delimited),
        (events.METADATA_KEY, value["metadata"].number << 3 | length_delimited),
    ]
    for ours, protobufs in ours_and_protobufs:
        assert ours == protobufs


@given(value=st.floats(width=32))
def test_scalar_tensor_head_is_protobufs(value: float) -> None:
    from summarylib.proto import types_pb2

    v = summary_pb2.Summary.Value()
    v.tensor.dtype = types_pb2.DT_FLOAT
    v.tensor.tensor_shape.SetInParent()
    v.tensor.tensor_content = np.float32(value).tobytes()
    assert v.SerializeToString() == events.SCALAR_TENSOR_HEAD + v.tensor.tensor_content


@given(steps=st.lists(INT64, min_size=1, max_size=30))
def test_step_field_and_its_vectorized_form_agree(steps: list[int]) -> None:
    # The per-event path (step_field) and the run framer's columns (step_varint_*) are
    # both the protobuf encoding of Event.step.
    arr = np.array(steps, dtype=np.int64).view(np.uint64)
    lengths = events.step_varint_lengths(arr)
    for step, k in zip(steps, lengths.tolist(), strict=True):
        expected = event_pb2.Event(step=step).SerializeToString()
        assert events.step_field(step) == expected
        assert len(expected) == (1 + k if k else 0)
        if k:
            got = events.step_varint_bytes(np.array([step], dtype=np.int64).view(np.uint64), k)
            assert bytes([events.STEP_KEY]) + got.tobytes() == expected


@settings(max_examples=60, deadline=None)
@given(
    tags=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=6, unique=True),
    step=INT64,
    time=st.floats(min_value=1, max_value=4e9),
)
def test_the_reader_finds_the_fields_where_the_writer_put_them(
    tags: list[str], step: int, time: float
) -> None:
    # The writer's scalar Event (keys from events) read back by the bulk reader's
    # template, which looks for the same keys.
    values = [events.value_bytes(t, events.SCALAR_TENSOR_HEAD[2:] + bytes(4)) for t in tags]
    event = events.summary_event(time, step, events.summary_bytes(values))
    template = scalar_template(event)
    assert template is not None
    assert [tag for tag, _, _ in template.values] == tags
    if step:
        field = events.step_field(step)
        assert event[template.step_at - 1 : template.step_at + template.step_len] == field


@settings(max_examples=200, deadline=None)
@given(
    message=st.binary(min_size=1, max_size=200),
    data=st.data(),
)
def test_crc_tables_are_what_a_byte_adds_to_the_crc(message: bytes, data: st.DataObject) -> None:
    # The one table function of the writer's bulk framer and the reader's bulk check,
    # against crc32c itself: crc(m) ^ crc(m with a zero at i) is the table entry.
    i = data.draw(st.integers(0, len(message) - 1))
    zeroed = bytearray(message)
    zeroed[i] = 0
    table = crc_tables([len(message) - 1 - i])
    assert table.shape == (1, 256)
    want = crc32c_lib.crc32c(message) ^ crc32c_lib.crc32c(bytes(zeroed))
    assert int(table[0, message[i]]) == want


@given(crcs=st.lists(st.integers(0, 2**32 - 1), max_size=20))
def test_mask_of_an_array_is_the_mask_of_each(crcs: list[int]) -> None:
    got = mask(np.array(crcs, dtype=np.uint32))
    assert got.dtype == np.uint32
    assert got.tolist() == [mask(c) for c in crcs]
    assert [mask(c) for c in crcs] == [masked_crc32c_of(c) for c in crcs]


def masked_crc32c_of(crc: int) -> int:
    # TFRecord's mask as format.md states it: rotate right by 15, add 0xA282EAD8.
    return ((crc >> 15 | crc << 17) + 0xA282EAD8) % 2**32


@given(number=st.integers(0, compact.MAX_FORMATS - 1))
def test_compact_marker_round_trip(number: int) -> None:
    m = compact.marker(number)
    assert len(m) == compact.MARKER_SIZE and m[0] == compact.MARK
    assert compact.format_number(m + b"data") == number


def test_compact_marker_refuses_numbers_it_cannot_hold() -> None:
    with pytest.raises(ValueError, match="marker"):
        compact.marker(compact.MAX_FORMATS)


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(1, 400),
    n=st.integers(0, 200),
    m=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    limit=st.sampled_from([0, 10, MAX_TABLE_POSITIONS, 10**6]),
)
def test_framer_bytes_do_not_depend_on_how_the_crc_is_made(
    size: int, n: int, m: int, seed: int, limit: int
) -> None:
    rng = np.random.default_rng(seed)
    template = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    positions = rng.permutation(size)[: min(n, size)].tolist()
    rows = rng.integers(0, 256, (m, len(positions)), dtype=np.uint8)
    framer = TemplateFramer(template, positions, max_table_positions=limit)
    payloads = []
    for row in rows:
        p = bytearray(template)
        for at, v in zip(positions, row.tolist(), strict=True):
            p[at] = v
        payloads.append(bytes(p))
    assert framer.frame(rows) == frame_many(payloads)
    if len(positions) > limit:
        assert framer.table_bytes == 0
    else:
        assert framer.table_bytes == 1024 * len(positions)


def test_a_large_template_keeps_no_crc_tables() -> None:
    # Thousands of positions (a scalars() call of thousands of tags): 1 KiB of tables a
    # position would be tens of megabytes for the life of the file.
    framer = TemplateFramer(bytes(100_000), range(0, 100_000, 5))
    assert framer.table_bytes == 0
    small = TemplateFramer(bytes(1000), range(MAX_TABLE_POSITIONS))
    assert small.table_bytes == MAX_TABLE_POSITIONS * 1024


def test_scalars_of_thousands_of_tags_stay_small_and_write_the_plain_bytes(
    tmp_path: Path,
) -> None:
    # Memory does not grow with the square of the tag count, and the file holds exactly
    # the events one scalar() call per tag would make (one Event per step here).
    names = [f"metric/{i}" for i in range(3000)]
    steps = range(30)
    w = sl.create_file_writer(tmp_path, max_queue=10**6, flush_millis=10**9)
    tracemalloc.start()
    try:
        with w.as_default():
            for step in steps:
                sl.scalars({n: step + i / 8 for i, n in enumerate(names)}, step=step)
        w.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The events are ~84 KB each (2.5 MB in all); tables for this layout took ~40 MB.
    assert peak < 16 * 2**20
    from summarylib.proto import types_pb2

    (path,) = tmp_path.glob("*tfevents*")
    payloads = [r.payload for r in iter_records(str(path))][1:]
    assert len(payloads) == len(steps)
    for step, payload in zip(steps, payloads, strict=True):
        expected = event_pb2.Event(step=step)
        expected.wall_time = event_pb2.Event.FromString(payload).wall_time
        for i, name in enumerate(names):
            v = expected.summary.value.add(tag=name)
            v.tensor.dtype = types_pb2.DT_FLOAT
            v.tensor.tensor_shape.SetInParent()
            v.tensor.tensor_content = np.float32(step + i / 8).tobytes()
            if step == 0:  # metadata on the first value of each tag only
                v.metadata.plugin_data.plugin_name = "scalars"
        assert payload == expected.SerializeToString()
