"""``read_scalars``: every scalar series of a logdir, as TensorBoard would show it."""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING

from summarylib.encoding._plugins import SCALARS
from summarylib.reader.events import iter_summary_values
from summarylib.reader.runs import list_runs

if TYPE_CHECKING:
    from summarylib.proto import tensor_pb2

__all__ = ["read_scalars"]

ScalarSeries = dict[str, list[tuple[int, float, float]]]

# DataType -> (struct format of one element in tensor_content, typed field).
# Only what a scalar can be; anything else is not a number and is skipped.
_SCALAR_DTYPES = {
    1: ("<f", "float_val"),  # DT_FLOAT
    2: ("<d", "double_val"),  # DT_DOUBLE
    3: ("<i", "int_val"),  # DT_INT32
    4: ("<B", "int_val"),  # DT_UINT8
    5: ("<h", "int_val"),  # DT_INT16
    6: ("<b", "int_val"),  # DT_INT8
    9: ("<q", "int64_val"),  # DT_INT64
    10: ("<?", "bool_val"),  # DT_BOOL
    17: ("<H", "int_val"),  # DT_UINT16
    19: ("<e", "half_val"),  # DT_HALF (half_val holds the raw 16 bits)
    22: ("<I", "uint32_val"),  # DT_UINT32
    23: ("<Q", "uint64_val"),  # DT_UINT64
}


def read_scalars(logdir: str | os.PathLike[str]) -> dict[str, ScalarSeries]:
    """Return ``{run: {tag: [(step, wall_time, value), ...]}}`` for a logdir.

    A tag is a scalar series when the first metadata seen for it in the run
    names the ``scalars`` plugin, or when it holds legacy ``simple_value``
    data. Points are in file order; nothing is deduplicated or re-sorted
    (TensorBoard's fast loader would keep only the last point per step).

    Files are untrusted: a value whose tensor does not hold exactly one
    number (a wrong size, a shape of many elements, a string) is skipped, and
    nothing is allocated from a shape the data does not back.

    Raises:
      DataLossError: a corrupt record (file and offset).
    """
    out: dict[str, ScalarSeries] = {}
    for run, files in list_runs(logdir).items():
        plugin_of: dict[str, str] = {}
        series: ScalarSeries = {}
        for file in files:
            for event, value in iter_summary_values(file):
                tag = value.tag
                if tag not in plugin_of and value.HasField("metadata"):
                    plugin_of[tag] = value.metadata.plugin_data.plugin_name
                kind = value.WhichOneof("value")
                number: float | None
                if kind == "simple_value":
                    number = float(value.simple_value)
                elif kind == "tensor" and plugin_of.get(tag) == SCALARS.name:
                    number = scalar_value(value.tensor)
                else:
                    continue
                if number is not None:
                    series.setdefault(tag, []).append((event.step, event.wall_time, number))
        if series:
            out[run] = series
    return out


def scalar_value(tensor: tensor_pb2.TensorProto) -> float | None:
    """The number in a one-element tensor, or None if it does not hold exactly one.

    Decodes ``tensor_content`` or the typed field as TensorFlow does (one
    value in a typed field fills the shape; an empty field means zeros),
    without materializing the shape.
    """
    entry = _SCALAR_DTYPES.get(tensor.dtype)
    if entry is None:
        return None
    fmt, field = entry
    n = 1
    for dim in tensor.tensor_shape.dim:
        if dim.size < 0:
            return None
        n *= dim.size
    if n != 1:
        return None
    content = tensor.tensor_content
    if content:
        if len(content) != struct.calcsize(fmt):
            return None
        return float(struct.unpack(fmt, content)[0])
    values = getattr(tensor, field)
    if len(values) > 1:
        return None
    if not values:
        return 0.0
    if field == "half_val":
        return float(struct.unpack("<e", struct.pack("<H", values[0] & 0xFFFF))[0])
    return float(values[0])
