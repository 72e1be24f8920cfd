"""Decode a ``TensorProto`` into numpy, as TensorFlow's ``make_ndarray`` does, for readers.

Files are untrusted: a shape the data does not back is refused (no allocation from a claimed
shape), and only the dtypes a summary can hold are decoded.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from summarylib.proto import tensor_pb2

__all__ = ["tensor_array", "tensor_strings"]

# DataType -> (numpy dtype of tensor_content, the typed field).
_DTYPES: dict[int, tuple[str, str]] = {
    1: ("<f4", "float_val"),
    2: ("<f8", "double_val"),
    3: ("<i4", "int_val"),
    4: ("u1", "int_val"),
    5: ("<i2", "int_val"),
    6: ("i1", "int_val"),
    9: ("<i8", "int64_val"),
    10: ("?", "bool_val"),
    17: ("<u2", "int_val"),
    19: ("<f2", "half_val"),
    22: ("<u4", "uint32_val"),
    23: ("<u8", "uint64_val"),
}
_DT_STRING = 7
# The most elements a single value, or none, may fill (TensorFlow's rule) from a claimed shape.
_MAX_FILL = 1 << 24


def _shape(tensor: tensor_pb2.TensorProto) -> tuple[int, ...] | None:
    dims = tuple(d.size for d in tensor.tensor_shape.dim)
    return None if any(d < 0 for d in dims) else dims


def tensor_array(tensor: tensor_pb2.TensorProto) -> np.ndarray | None:
    """The numeric tensor as an array, or None (a string, unknown dtype or unbacked shape)."""
    entry = _DTYPES.get(tensor.dtype)
    shape = _shape(tensor)
    if entry is None or shape is None:
        return None
    dtype, field = entry
    n = math.prod(shape)  # Python ints: a product of claimed dims must not wrap around
    content = tensor.tensor_content
    if content:
        if len(content) != n * np.dtype(dtype).itemsize:
            return None
        arr: np.ndarray = np.frombuffer(content, dtype=dtype).reshape(shape).copy()
        return arr
    values: Any = getattr(tensor, field)
    if field == "half_val":
        values = np.asarray(values, dtype=np.uint16).view(np.float16)
    if n == 0 and (max(shape) > _MAX_FILL or math.prod(d for d in shape if d)
                   * np.dtype(dtype).itemsize >= 1 << 63):
        return None  # an empty tensor, but with dims numpy cannot even describe
    if len(values) == n:
        return np.asarray(values, dtype=dtype).reshape(shape)
    if len(values) == 1 and n <= _MAX_FILL:  # one value fills the shape, as in TensorFlow
        return np.full(shape, values[0], dtype=dtype)
    if not len(values) and n <= _MAX_FILL:
        return np.zeros(shape, dtype=dtype)
    return None


def tensor_strings(tensor: tensor_pb2.TensorProto) -> list[Any] | None:
    """A string tensor as nested lists of bytes in its shape, or None if it is not one."""
    if tensor.dtype != _DT_STRING:
        return None
    shape = _shape(tensor)
    values = list(tensor.string_val)
    if shape is None:
        return None
    n = math.prod(shape)
    if len(values) != n:
        if len(values) == 1 and n <= 1 << 20:
            values = values * n
        else:
            return None
    if any(math.prod(shape[:k]) > max(n, 1 << 20) for k in range(1, len(shape))):
        return None  # no strings, yet a claimed shape of countless empty lists
    nested: list[Any] = _nest(values, shape)
    return nested


def _nest(flat: list[bytes], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
