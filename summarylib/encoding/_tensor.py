"""numpy arrays to ``TensorProto`` (and back), encoded the way TensorFlow 2 writes them.

* Non-string dtypes go into ``tensor_content``: raw little-endian bytes in C
  order, even for rank-0 tensors, as TF2's summary writer does.
* Strings go into ``string_val`` (never ``tensor_content``): ``str`` is
  UTF-8 encoded, ``bytes`` kept as is.
* ``tensor_shape`` is always present, even when empty (rank 0).

``tensor_bytes``/``string_tensor_bytes`` build the serialized TensorProto
directly (used by ops); ``make_tensor_proto`` returns a message (used by the
``*_pb`` encoders); tests prove both give the same bytes. ``make_ndarray``
decodes any TensorProto a reader may meet, typed fields included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from summarylib.encoding._wire import field_bytes, varint

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import tensor_pb2

__all__ = [
    "DATA_TYPES",
    "DT_BOOL",
    "DT_DOUBLE",
    "DT_FLOAT",
    "DT_INT32",
    "DT_INT64",
    "DT_STRING",
    "data_type",
    "data_type_name",
    "dtype_enum",
    "make_ndarray",
    "make_tensor_proto",
    "shape_bytes",
    "string_tensor_bytes",
    "tensor_bytes",
    "to_numeric_or_string_array",
]

# numpy-style dtype name <-> TensorFlow DataType (types.proto): the one table of the
# library (graph attrs and output dtypes use it too).
DATA_TYPES: dict[str, int] = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "string": 7,
    "complex64": 8,
    "int64": 9,
    "bool": 10,
    "qint8": 11,
    "quint8": 12,
    "qint32": 13,
    "bfloat16": 14,
    "qint16": 15,
    "quint16": 16,
    "uint16": 17,
    "complex128": 18,
    "float16": 19,
    "resource": 20,
    "variant": 21,
    "uint32": 22,
    "uint64": 23,
    "float8_e5m2": 24,
    "float8_e4m3fn": 25,
    "int4": 29,
    "uint4": 30,
}
_DATA_TYPE_NAMES = {v: k for k, v in DATA_TYPES.items()}
# Other spellings of a name in DATA_TYPES (Python types, torch's "half").
_ALIASES = {"str": "string", "bytes": "string", "object": "string", "half": "float16"}

DT_FLOAT = DATA_TYPES["float32"]
DT_DOUBLE = DATA_TYPES["float64"]
DT_INT32 = DATA_TYPES["int32"]
DT_UINT8 = DATA_TYPES["uint8"]
DT_INT16 = DATA_TYPES["int16"]
DT_INT8 = DATA_TYPES["int8"]
DT_STRING = DATA_TYPES["string"]
DT_COMPLEX64 = DATA_TYPES["complex64"]
DT_INT64 = DATA_TYPES["int64"]
DT_BOOL = DATA_TYPES["bool"]
DT_BFLOAT16 = DATA_TYPES["bfloat16"]
DT_UINT16 = DATA_TYPES["uint16"]
DT_COMPLEX128 = DATA_TYPES["complex128"]
DT_HALF = DATA_TYPES["float16"]
DT_UINT32 = DATA_TYPES["uint32"]
DT_UINT64 = DATA_TYPES["uint64"]

# The dtypes a TensorProto's tensor_content can hold: name -> (TF DataType, little-endian
# numpy dtype string; None for ml_dtypes' bfloat16, stored as its raw 2-byte values).
_NUMERIC = {
    name: (DATA_TYPES[name], le)
    for name, le in (
        ("float32", "<f4"),
        ("float64", "<f8"),
        ("float16", "<f2"),
        ("int32", "<i4"),
        ("int64", "<i8"),
        ("int16", "<i2"),
        ("int8", "i1"),
        ("uint8", "u1"),
        ("uint16", "<u2"),
        ("uint32", "<u4"),
        ("uint64", "<u8"),
        ("bool", "?"),
        ("complex64", "<c8"),
        ("complex128", "<c16"),
        ("bfloat16", None),
    )
}
_BY_ENUM = {enum: name for name, (enum, _) in _NUMERIC.items()}


def data_type(name: str | None) -> int:
    """The TF ``DataType`` of a numpy-style dtype name (``"float32"``, ``"string"``; also
    ``"str"``, ``"bytes"``, ``"object"``, ``"half"``); 0 (``DT_INVALID``) if unknown or None."""
    if name is None:
        return 0
    return DATA_TYPES.get(_ALIASES.get(name, name), 0)


def data_type_name(enum: int) -> str | None:
    """The numpy-style name of a TF ``DataType``; None for ``DT_INVALID`` or an unknown one."""
    return _DATA_TYPE_NAMES.get(enum)


def dtype_enum(dtype: Any) -> int:
    """The TF ``DataType`` for a numpy dtype (``DT_STRING`` for str/bytes/object).

    TypeError for a dtype a TensorProto cannot hold (:func:`data_type` takes a name and
    returns 0 instead).
    """
    import numpy as np

    dt = np.dtype(dtype)
    if dt.kind in "OSU":
        return DT_STRING
    entry = _NUMERIC.get(dt.name)
    if entry is None:
        raise TypeError(f"no TensorFlow dtype for numpy dtype {dt}")
    return entry[0]


def shape_bytes(shape: Sequence[int]) -> bytes:
    """A serialized ``TensorShapeProto`` (``dim`` = 2, each ``Dim.size`` = 1)."""
    return b"".join(field_bytes(2, (b"\x08" + varint(d)) if d else b"") for d in shape)


def tensor_bytes(dtype: int, shape: Sequence[int], content: bytes) -> bytes:
    """A serialized TensorProto with ``tensor_content`` (non-string dtypes)."""
    out = b"\x08" + varint(dtype) + field_bytes(2, shape_bytes(shape))
    if content:
        out += field_bytes(4, content)
    return out


def string_tensor_bytes(shape: Sequence[int], values: Iterable[bytes]) -> bytes:
    """A serialized DT_STRING TensorProto; ``values`` are flattened in C order."""
    return (
        b"\x08\x07"
        + field_bytes(2, shape_bytes(shape))
        + b"".join(field_bytes(8, v) for v in values)
    )


def to_numeric_or_string_array(value: Any, where: str, arg: str = "tensor") -> np.ndarray:
    """Convert a user value to an array for a TensorProto, following TF's defaults.

    Python floats become float32 and Python ints int32 (int64 if they do not
    fit), as ``tf.convert_to_tensor`` does; str/bytes become string arrays.
    """
    import numpy as np

    from summarylib.encoding._arrays import as_array

    if isinstance(value, (str, bytes)):
        return np.array(value, dtype=object)
    arr = as_array(value, where, arg)
    if isinstance(value, (float, int, list, tuple)) and not isinstance(value, bool):
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and (arr.size == 0 or _fits_int32(arr)):
            arr = arr.astype(np.int32)
    return arr


def _fits_int32(arr: np.ndarray) -> bool:
    return bool(arr.min() >= -(2**31) and arr.max() < 2**31)


def array_tensor_bytes(arr: np.ndarray, where: str, arg: str = "tensor") -> bytes:
    """A serialized TensorProto for any numeric or string numpy array."""
    import numpy as np

    if arr.dtype.kind in "OSU":
        return string_tensor_bytes(arr.shape, (_to_bytes(v, where, arg) for v in arr.reshape(-1)))
    entry = _NUMERIC.get(arr.dtype.name)
    if entry is None:
        raise TypeError(f"{where}: {arg!r} has dtype {arr.dtype}, which TensorBoard cannot store")
    enum, le = entry
    data = arr if le is None else np.ascontiguousarray(arr, dtype=le)
    return tensor_bytes(enum, arr.shape, np.ascontiguousarray(data).tobytes())


def _to_bytes(v: Any, where: str, arg: str) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    raise TypeError(f"{where}: {arg!r} must hold only str or bytes, found {type(v).__name__}")


def make_tensor_proto(value: Any, where: str = "make_tensor_proto") -> tensor_pb2.TensorProto:
    """A ``TensorProto`` message for ``value`` (see :func:`to_numeric_or_string_array`)."""
    from summarylib.proto import tensor_pb2

    arr = to_numeric_or_string_array(value, where, "value")
    msg = tensor_pb2.TensorProto()
    msg.ParseFromString(array_tensor_bytes(arr, where, "value"))
    return msg


def make_ndarray(tensor: Any) -> np.ndarray:
    """Decode a ``TensorProto`` (ours or TensorBoard's) into a numpy array.

    Handles ``tensor_content`` and every typed field, the one-value broadcast
    TensorFlow allows, and strings (returned as an object array of bytes).
    """
    import numpy as np

    shape = tuple(d.size for d in tensor.tensor_shape.dim)
    dtype = tensor.dtype
    if dtype == DT_STRING:
        flat = np.empty(len(tensor.string_val), dtype=object)
        flat[:] = list(tensor.string_val)
        return _fill(flat, shape)
    name = _BY_ENUM.get(dtype)
    if name is None:
        raise TypeError(f"make_ndarray: unsupported DataType {dtype}")
    le = _NUMERIC[name][1]
    np_dtype = np.dtype(le if le is not None else np.uint16)
    if tensor.tensor_content:
        arr = np.frombuffer(tensor.tensor_content, dtype=np_dtype).copy()
        return np.asarray(arr.reshape(shape))
    if dtype in (DT_HALF, DT_BFLOAT16):
        values = np.array(tensor.half_val, dtype=np.uint16).view(np_dtype)
    elif dtype == DT_FLOAT:
        values = np.array(tensor.float_val, dtype=np.float32)
    elif dtype == DT_DOUBLE:
        values = np.array(tensor.double_val, dtype=np.float64)
    elif dtype in (DT_INT64,):
        values = np.array(tensor.int64_val, dtype=np.int64)
    elif dtype == DT_UINT32:
        values = np.array(tensor.uint32_val, dtype=np.uint32)
    elif dtype == DT_UINT64:
        values = np.array(tensor.uint64_val, dtype=np.uint64)
    elif dtype == DT_BOOL:
        values = np.array(tensor.bool_val, dtype=bool)
    elif dtype == DT_COMPLEX64:
        values = np.array(tensor.scomplex_val, dtype=np.float32).view(np.complex64)
    elif dtype == DT_COMPLEX128:
        values = np.array(tensor.dcomplex_val, dtype=np.float64).view(np.complex128)
    else:
        values = np.array(tensor.int_val, dtype=np.int64).astype(np_dtype)
    return _fill(values.astype(np_dtype, copy=False), shape)


def _fill(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if values.size == n:
        return values.reshape(shape)
    if values.size == 0:
        return np.zeros(shape, dtype=values.dtype)
    # TensorFlow pads a short list with its last value.
    out = np.empty(n, dtype=values.dtype)
    out[: values.size] = values
    out[values.size :] = values[-1]
    return out.reshape(shape)
