"""Decode the common events of a chunk in bulk, without a protobuf message per event.

A scalar event is a few fixed fields: ``wall_time`` (field 1, 8 bytes), ``step`` (field 2, a
varint), then a ``Summary`` whose values are a tag and one float32 (a DT_FLOAT tensor or a
legacy ``simple_value``). Every event of the same tags written by the same writer has the
same bytes apart from the time, the step and the floats. One event of a group of records of
equal length is parsed with protobuf (the *template*); every other record is checked against
it byte for byte outside those columns, and the columns are decoded with numpy. A record that
does not match is left to the protobuf path.

A tensor event is the same with one value whose numbers are a float tensor's
``tensor_content`` of a fixed shape (a histogram's ``[k, 3]`` table, a PR curve's
``[6, k]``): the content is one more varying column, read as ``[m, *shape]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from summarylib.encoding._events import (
    AFTER_WALL_TIME,
    STEP_KEY,
    SUMMARY_KEY,
    VALUE_KEY,
    WALL_TIME_AT,
    WALL_TIME_KEY,
)

__all__ = [
    "ScalarTemplate",
    "TensorTemplate",
    "decode_rows",
    "decode_tensor_rows",
    "scalar_template",
    "tensor_record_matches",
    "tensor_template",
]


@dataclass(frozen=True)
class ScalarTemplate:
    """Where the varying fields of a scalar event are, and what its values are."""

    step_at: int  # first byte of the step varint; 0 when the event has no step (step 0)
    step_len: int
    values: tuple[tuple[str, int, bool], ...]  # (tag, offset of the float32, is_tensor)
    const: np.ndarray  # bool mask over the record's bytes: must equal the template's


@dataclass(frozen=True)
class TensorTemplate:
    """Where the varying fields of an event of one float tensor value are.

    The value has no metadata (the first event of a tag, which carries it, is read with
    protobuf), so what kind of data it is waits for the tag's plugin.
    """

    step_at: int  # as ScalarTemplate's
    step_len: int
    tag: str
    content_at: int  # first byte of tensor_content
    dtype: str  # "<f4" or "<f8"
    shape: tuple[int, ...]
    raw: bytes  # the template's own record: the others must equal it outside the columns


# DataType -> the numpy dtype of its tensor_content, for the float tensors read in bulk.
_CONTENT_DTYPES = {1: "<f4", 2: "<f8"}
_TENSOR_FIELDS = {"dtype", "tensor_shape", "version_number", "tensor_content"}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[pos]
        result |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return result, pos
        shift += 7


def _summary_header(ref: bytes) -> tuple[int, int, int] | None:
    # An event of exactly wall_time, an optional step and a summary, in that order:
    # (first byte of the step varint or 0, its length, first byte of the summary's values).
    # Raises ValueError on a bad varint.
    if len(ref) < 11 or ref[0] != WALL_TIME_KEY:
        return None
    pos = AFTER_WALL_TIME
    step_at = step_len = 0
    if ref[pos] == STEP_KEY:
        _, end = _varint(ref, pos + 1)
        step_at, step_len, pos = pos + 1, end - pos - 1, end
    if pos >= len(ref) or ref[pos] != SUMMARY_KEY:
        return None
    length, pos = _varint(ref, pos + 1)
    if pos + length != len(ref):
        return None
    return step_at, step_len, pos


def scalar_template(ref: bytes) -> ScalarTemplate | None:
    """The template of ``ref`` (one serialized Event), or None if it is not a plain scalar event.

    Plain means: fields in TensorFlow's order (wall_time, step, summary) and nothing else;
    every value a tag plus one float32 with no metadata, serialized canonically (so the float
    is the value's last four bytes).
    """
    from google.protobuf.message import DecodeError

    from summarylib.proto import summary_pb2

    try:
        header = _summary_header(ref)
        if header is None:
            return None
        step_at, step_len, pos = header
        values = []
        while pos < len(ref):
            if ref[pos] != VALUE_KEY:
                return None
            vlen, start = _varint(ref, pos + 1)
            end = start + vlen
            if end > len(ref):
                return None
            raw = ref[start:end]
            value = summary_pb2.Summary.Value.FromString(raw)
            if value.SerializeToString() != raw:
                return None  # not canonical: the float may not be last
            fields = {f.name for f, _ in value.ListFields()}
            if fields == {"tag", "simple_value"}:
                values.append((value.tag, end - 4, False))
            elif fields == {"tag", "tensor"} and _is_float_scalar(value.tensor):
                values.append((value.tag, end - 4, True))
            else:
                return None
            pos = end
    except (ValueError, DecodeError):
        return None
    if not values:
        return None
    const = np.ones(len(ref), dtype=bool)
    const[WALL_TIME_AT:AFTER_WALL_TIME] = False
    if step_len:
        const[step_at : step_at + step_len] = False
    for _, at, _ in values:
        const[at : at + 4] = False
    return ScalarTemplate(step_at, step_len, tuple(values), const)


def tensor_template(ref: bytes) -> TensorTemplate | None:
    """The template of ``ref`` (one serialized Event), or None if it is not an event of one
    value, a tag and a float tensor of two or more numbers in ``tensor_content`` (fields in
    TensorFlow's order, serialized canonically, no metadata)."""
    from google.protobuf.message import DecodeError

    from summarylib.proto import summary_pb2

    try:
        header = _summary_header(ref)
        if header is None:
            return None
        step_at, step_len, pos = header
        if pos >= len(ref) or ref[pos] != VALUE_KEY:
            return None
        vlen, start = _varint(ref, pos + 1)
        if start + vlen != len(ref):
            return None  # more than one value
        raw = ref[start:]
        value = summary_pb2.Summary.Value.FromString(raw)
        if value.SerializeToString() != raw:
            return None
        if {f.name for f, _ in value.ListFields()} != {"tag", "tensor"}:
            return None
        tensor = value.tensor
        fields = {f.name for f, _ in tensor.ListFields()}
        dtype = _CONTENT_DTYPES.get(tensor.dtype)
        if dtype is None or "tensor_content" not in fields or not fields <= _TENSOR_FIELDS:
            return None
        shape = tuple(d.size for d in tensor.tensor_shape.dim)
        content = tensor.tensor_content
        n = 1
        for d in shape:
            n *= d
        if min(shape, default=0) < 1 or n < 2 or n * np.dtype(dtype).itemsize != len(content):
            return None
    except (ValueError, DecodeError):
        return None
    # Canonical: the tensor is the value's last field and its content the tensor's last.
    content_at = len(ref) - len(content)
    if ref[content_at:] != content:
        return None
    return TensorTemplate(step_at, step_len, value.tag, content_at, dtype, shape, bytes(ref))


def _is_float_scalar(tensor: object) -> bool:
    fields = {f.name for f, _ in tensor.ListFields()}  # type: ignore[attr-defined]
    if tensor.dtype != 1 or len(tensor.tensor_shape.dim):  # type: ignore[attr-defined]
        return False
    if fields == {"dtype", "float_val"} or fields == {"dtype", "tensor_shape", "float_val"}:
        return len(tensor.float_val) == 1  # type: ignore[attr-defined]
    if fields == {"dtype", "tensor_content"} or fields == {
        "dtype",
        "tensor_shape",
        "tensor_content",
    }:
        return len(tensor.tensor_content) == 4  # type: ignore[attr-defined]
    return False


def decode_rows(
    rows: np.ndarray, template: ScalarTemplate
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Match ``rows`` (``[k, length]`` uint8) against ``template`` and decode the matches.

    Returns ``(matched, step, wall_time, values)``: a bool mask over the rows, then for the
    matching rows the int64 steps, float64 wall times and a ``[m, n_values]`` float32 array.
    """
    ref = rows[0]
    const = template.const
    matched = (rows[:, const] == ref[const]).all(axis=1)
    if template.step_len:
        a, n = template.step_at, template.step_len
        cont = rows[:, a : a + n] & 0x80
        matched &= (cont[:, : n - 1] != 0).all(axis=1) & (cont[:, n - 1] == 0)
    good = rows[matched]
    m = len(good)
    step, wall = _steps_and_wall_times(good, template.step_at, template.step_len)
    cols = np.empty((m, len(template.values)), dtype=np.float32)
    for j, (_, at, _) in enumerate(template.values):
        cols[:, j] = np.ascontiguousarray(good[:, at : at + 4]).view("<f4").reshape(m)
    return matched, step, wall, cols


def tensor_record_matches(record: bytes, template: TensorTemplate) -> bool:
    """Whether ``record`` is ``template``'s event with another wall time, step and content:
    equal to it byte for byte elsewhere, its step a varint of the template's length."""
    ref = template.raw
    a, n, c = template.step_at, template.step_len, template.content_at
    if len(record) != len(ref) or record[0] != ref[0]:
        return False
    if not n:
        return record[AFTER_WALL_TIME:c] == ref[AFTER_WALL_TIME:c]
    last = a + n - 1
    if record[last] & 0x80 or any(b < 0x80 for b in record[a:last]):
        return False
    return (record[AFTER_WALL_TIME:a] == ref[AFTER_WALL_TIME:a]
            and record[a + n : c] == ref[a + n : c])


def decode_tensor_rows(
    rows: np.ndarray, template: TensorTemplate
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The int64 steps, float64 wall times and ``[m, *shape]`` values (the template's dtype)
    of ``rows`` (``[m, length]`` uint8), records that :func:`tensor_record_matches`."""
    step, wall = _steps_and_wall_times(rows, template.step_at, template.step_len)
    values = np.ascontiguousarray(rows[:, template.content_at :]).view(template.dtype)
    return step, wall, values.reshape(len(rows), *template.shape)


def _steps_and_wall_times(
    rows: np.ndarray, step_at: int, step_len: int
) -> tuple[np.ndarray, np.ndarray]:
    m = len(rows)
    wall = np.ascontiguousarray(rows[:, WALL_TIME_AT:AFTER_WALL_TIME]).view("<f8").reshape(m)
    if not step_len:
        return np.zeros(m, dtype=np.int64), wall
    step = np.zeros(m, dtype=np.uint64)
    for i in range(step_len):
        step |= (rows[:, step_at + i] & 0x7F).astype(np.uint64) << np.uint64(7 * i)
    return step.view(np.int64), wall
