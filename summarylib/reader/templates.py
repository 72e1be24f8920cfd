"""Decode the common scalar events of a chunk in bulk, without a protobuf message per event.

A scalar event is a few fixed fields: ``wall_time`` (field 1, 8 bytes), ``step`` (field 2, a
varint), then a ``Summary`` whose values are a tag and one float32 (a DT_FLOAT tensor or a
legacy ``simple_value``). Every event of the same tags written by the same writer has the
same bytes apart from the time, the step and the floats. One event of a group of records of
equal length is parsed with protobuf (the *template*); every other record is checked against
it byte for byte outside those columns, and the columns are decoded with numpy. A record that
does not match is left to the protobuf path.
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

__all__ = ["ScalarTemplate", "decode_rows", "scalar_template"]


@dataclass(frozen=True)
class ScalarTemplate:
    """Where the varying fields of a scalar event are, and what its values are."""

    step_at: int  # first byte of the step varint; 0 when the event has no step (step 0)
    step_len: int
    values: tuple[tuple[str, int, bool], ...]  # (tag, offset of the float32, is_tensor)
    const: np.ndarray  # bool mask over the record's bytes: must equal the template's


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


def scalar_template(ref: bytes) -> ScalarTemplate | None:
    """The template of ``ref`` (one serialized Event), or None if it is not a plain scalar event.

    Plain means: fields in TensorFlow's order (wall_time, step, summary) and nothing else;
    every value a tag plus one float32 with no metadata, serialized canonically (so the float
    is the value's last four bytes).
    """
    from google.protobuf.message import DecodeError

    from summarylib.proto import summary_pb2

    try:
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
    wall = np.ascontiguousarray(good[:, WALL_TIME_AT:AFTER_WALL_TIME]).view("<f8").reshape(m)
    if template.step_len:
        a, n = template.step_at, template.step_len
        step = np.zeros(m, dtype=np.uint64)
        for i in range(n):
            step |= (good[:, a + i] & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        step = step.view(np.int64)
    else:
        step = np.zeros(m, dtype=np.int64)
    cols = np.empty((m, len(template.values)), dtype=np.float32)
    for j, (_, at, _) in enumerate(template.values):
        cols[:, j] = np.ascontiguousarray(good[:, at : at + 4]).view("<f4").reshape(m)
    return matched, step, wall, cols
