"""Generic writes: any tensor with any metadata, or raw serialized ``Summary`` protos.

These are the building blocks for custom plugins (set ``data_class`` in your
metadata, or TensorBoard will not show the data) and for summaries made by
other tools (``write_raw_pb`` with TensorBoard's own ``*_pb`` helpers).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from summarylib.encoding._arrays import evaluate
from summarylib.encoding._pending import host_dtype
from summarylib.encoding._tensor import array_tensor_bytes, to_numeric_or_string_array
from summarylib.encoding._values import value_of
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._emit import emit_summary, emit_value, emit_value_deferred
from summarylib.ops._resolve import Caller, Sink, resolve
from summarylib.writer._context import Step

__all__ = [
    "write",
    "write_raw_pb",
    "write_tensor",
]


def _serialized(message: Any, where: str, arg: str) -> bytes:
    if isinstance(message, (bytes, bytearray, memoryview)):
        return bytes(message)
    serialize = getattr(message, "SerializeToString", None)
    if serialize is None:
        # A 0-d array of bytes (numpy's "S" or object dtype): what TensorFlow's scalar
        # string tensor of serialized bytes is here.
        if getattr(message, "ndim", None) == 0 and hasattr(message, "item"):
            item = message.item()
            if isinstance(item, (bytes, bytearray)):
                return bytes(item)
        raise TypeError(
            f"{where}: {arg!r} must be a protobuf message, its serialized bytes or a "
            f"0-d array of them, got {_describe(message)}"
        )
    return serialize()  # type: ignore[no-any-return]


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"{type(value).__name__} of dtype {value.dtype} and shape {tuple(shape)}"
    return type(value).__name__


@traceable
def write(
    tag: str,
    tensor: Any,
    step: Step | None = None,
    metadata: Any = None,
) -> bool:
    """Write an arbitrary tensor to the default writer.

    Args:
      tag: the tag, used as is (like ``tf.summary.write``, no name scope).
      tensor: any array-like (numeric or strings), or a zero-argument callable
        returning one, called only when recording. A device array (JAX, torch CUDA,
        CuPy) is not read at the call: its dtype is checked and its copy started, and
        the writer thread encodes it once the device is done. Python floats are stored
        as float32 and ints as int32, as TensorFlow converts them.
      step: int64 step; defaults to the thread's default step.
      metadata: a ``SummaryMetadata`` message (ours or TensorBoard's), its
        serialized bytes, or a 0-d array holding those bytes (numpy ``"S"`` or
        object dtype, as TensorFlow takes a scalar string tensor); written on
        the first value of the tag in each file. Serialized bytes are checked
        to parse (``ValueError`` otherwise).

    Returns:
      True if written, False if nothing is recording.
    """
    sink = resolve(tag, step, _CALLER, scoped=False)
    if sink is None:
        return False
    return write_tensor(sink, tensor, metadata)


_CALLER = Caller("write", name="tag", data="tensor")


def write_tensor(sink: Sink, tensor: Any, metadata: Any = None) -> bool:
    """The core of :func:`write`: write ``tensor`` (and ``metadata``) to ``sink``."""
    where, arg = sink.caller.where, sink.caller.data
    md = None
    if metadata is not None:
        md = _serialized(metadata, where, "metadata")
        if not hasattr(metadata, "SerializeToString"):
            # Bytes go into the record verbatim: bytes that are not a SummaryMetadata would
            # make the whole event unparsable for every reader.
            _check_parses(md, "SummaryMetadata", where, "metadata")
    value = value_of(evaluate(tensor), defers_device_values(sink.writer),
                     lambda d: (to_numeric_or_string_array(d, where, arg), False),
                     partial(_check_device, where, arg))
    if not value.at_hand:
        value = value.keep()  # a device array: its copy starts; the writer thread encodes it
    if value.at_hand:  # host data is encoded now: no copy to keep
        return emit_value(sink, array_tensor_bytes(value.read(), where, arg), md)
    kept, exact = value, _stored_dtype(value.dtype)

    def make_tensor() -> bytes:
        arr = kept.read()
        if arr.dtype != exact:
            arr = arr.astype(exact)  # bfloat16 read as float32: back, exactly
        return array_tensor_bytes(arr, where, arg)

    return emit_value_deferred(sink, make_tensor, md, kept.nbytes + 64)


def write_raw_pb(
    tensor: Any,
    step: Step | None = None,
    name: str | None = None,
) -> bool:
    """Write serialized ``Summary`` protos as one event, metadata and all, verbatim.

    Args:
      tensor: a ``Summary`` (ours or TensorBoard's), its serialized bytes (a
        str counts as its UTF-8 bytes, as a TensorFlow string tensor), or a
        list of either (merged into one event), or a callable returning any
        of these. Bytes that are not a ``Summary`` raise
        :class:`~summarylib.errors.SummaryDecodeError` (a ``DataLossError``, as
        TensorFlow raises, and a ``ValueError``) showing their start.
      step: int64 step; defaults to the thread's default step.
      name: accepted for ``tf.summary`` compatibility; unused.

    Returns:
      True if written, False if nothing is recording.
    """
    del name
    sink = resolve(None, step, _RAW_CALLER, untagged=True)
    if sink is None:
        return False
    value = evaluate(tensor)
    items: Iterable[Any] = value if isinstance(value, (list, tuple)) else (value,)
    summary = b"".join(_serialized(_utf8(item), "write_raw_pb", "tensor") for item in items)
    _check_summary(summary)
    return emit_summary(sink, summary)


_RAW_CALLER = Caller("write_raw_pb", data="tensor")


def _utf8(item: Any) -> Any:
    # A str is a string tensor to TensorFlow: its UTF-8 bytes (then checked to parse).
    return item.encode("utf-8", "surrogateescape") if isinstance(item, str) else item


def _check_summary(data: bytes) -> None:
    from google.protobuf.message import DecodeError

    from summarylib.errors import SummaryDecodeError
    from summarylib.proto import summary_pb2

    try:
        summary_pb2.Summary.FromString(data)
    except DecodeError as e:  # TensorFlow's DataLossError (ours is a ValueError too)
        shown = f"{data[:32]!r}{'...' if len(data) > 32 else ''}"
        raise SummaryDecodeError("write_raw_pb: 'tensor'", 0,
                                 f"is not a serialized Summary ({shown}): {e}") from None


def _check_parses(data: bytes, message: str, where: str, arg: str) -> None:
    from google.protobuf.message import DecodeError

    from summarylib.proto import summary_pb2

    try:
        getattr(summary_pb2, message).FromString(data)
    except DecodeError as e:
        shown = f"{data[:32]!r}{'...' if len(data) > 32 else ''}"
        raise ValueError(
            f"{where}: {arg!r} is not a serialized {message} ({shown}): {e}"
        ) from None


def _stored_dtype(dtype: Any) -> Any:
    """The dtype a device array of ``dtype`` is stored in, as the host path stores it: its
    own (JAX's and CuPy's numpy dtypes: bfloat16 as DT_BFLOAT16), or for torch what its
    host conversion gives (bfloat16 as float32)."""
    import numpy as np

    return np.dtype(dtype) if getattr(dtype, "kind", None) is not None else host_dtype(dtype)


def _check_device(where: str, arg: str, shape: tuple[int, ...], dtype: Any) -> None:
    # What needs no numbers of a device or traced array: a dtype TensorBoard stores.
    from summarylib.encoding._tensor import _NUMERIC

    exact = _stored_dtype(dtype)
    if exact.name not in _NUMERIC:
        raise TypeError(f"{where}: {arg!r} has dtype {exact}, which TensorBoard cannot store")
