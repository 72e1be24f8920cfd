"""Text summaries: strings (Markdown) per step, shown by TensorBoard's Text dashboard.

Data contract:
  * ``data`` is a ``str``, ``bytes``, or an array of them of any shape: a
    (nested) list or tuple, a numpy array of dtype ``str`` (``U``), ``bytes``
    (``S``) or ``object`` holding only str/bytes, or a framework string
    tensor (through ``__array__``); or a zero-argument callable returning one.
    Anything else (numbers, None, mixed objects) raises ``TypeError``.
  * Stored as TensorFlow 2 does (format.md §5.6): ``DT_STRING`` with the
    original shape, ``str`` as UTF-8, ``bytes`` as is, in ``string_val``.
    numpy's fixed-width ``U``/``S`` dtypes drop trailing NULs, as numpy always
    does for them. Metadata: ``plugin_name="text"``, empty content,
    ``data_class`` unset; on the first value of a tag per file.
  * JAX, torch and CuPy have no string arrays on a device: a device array is refused
    (``TypeError``) from its dtype, without reading it (no wait for the device).
  * TensorBoard renders rank 0 as one Markdown block, ranks 1 and 2 as a
    table, and only the first 2-D slice of higher ranks.
  * At most :data:`~summarylib.encoding._events.MAX_EVENT_BYTES` (2 GiB) in all,
    the most an event can hold: larger text is refused with ``ValueError``,
    checked from the lengths before anything is encoded or copied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array, evaluate
from summarylib.encoding._events import MAX_EVENT_BYTES
from summarylib.encoding._pending import device_kind
from summarylib.encoding._plugins import TEXT
from summarylib.encoding._tensor import string_tensor_bytes
from summarylib.ops._compiled import traceable
from summarylib.ops._emit import emit_value
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    from summarylib.proto import summary_pb2

__all__ = ["PLUGIN_NAME", "create_summary_metadata", "text", "text_pb", "write_text"]

PLUGIN_NAME = TEXT.name


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorFlow 2 writes for text (protobuf API)."""
    return TEXT.create_summary_metadata(description)


def _utf8(s: str, where: str, arg: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: {arg!r} is not valid Unicode text: {e}") from None


def _check_size(total: int, where: str, arg: str) -> None:
    # `total` counts characters (a lower bound of the UTF-8 bytes) or bytes, plus a
    # byte per string for its framing: above the limit no event can hold the text.
    if total > MAX_EVENT_BYTES:
        raise ValueError(
            f"{where}: {arg!r} holds at least {total} bytes of text; an event can hold at "
            f"most {MAX_EVENT_BYTES} (2 GiB, protobuf's limit): log less text per call"
        )


def strings(data: Any, where: str, arg: str = "data") -> tuple[tuple[int, ...], list[bytes]]:
    """The shape of ``data`` and its strings as UTF-8 bytes, flattened in C order.

    Raises ``ValueError`` before encoding anything if the text cannot fit in an event.
    """
    import numpy as np

    data = evaluate(data)
    if isinstance(data, str):
        _check_size(len(data), where, arg)
        return (), [_utf8(data, where, arg)]
    if isinstance(data, (bytes, bytearray)):
        _check_size(len(data), where, arg)
        return (), [bytes(data)]
    if isinstance(data, (list, tuple)):
        try:
            arr = np.array(data, dtype=object)
        except ValueError as e:  # ragged nesting
            raise ValueError(
                f"{where}: {arg!r} must be a rectangular array of strings: {e}"
            ) from None
    elif device_kind(data) is not None:
        # No framework has string arrays on a device: refused from the dtype, unread.
        raise TypeError(
            f"{where}: {arg!r} must be str, bytes or an array of them, got a device array "
            f"of dtype {data.dtype}"
        )
    else:
        arr = as_array(data, where, arg)
    kind = arr.dtype.kind
    if kind not in "OSU":
        raise TypeError(
            f"{where}: {arg!r} must be str, bytes or an array of them, got "
            + (
                f"an array of dtype {arr.dtype}"
                if hasattr(data, "shape")
                else f"{type(data).__name__} {data!r:.60}"
            )
        )
    if kind != "O":
        # From numpy's lengths, before tolist() makes a Python string of each element
        # (a broadcast array can stand for far more text than it takes memory).
        _check_size(int(np.char.str_len(arr).sum(dtype=np.int64)) + arr.size, where, arg)
    values = arr.reshape(-1).tolist()
    if kind == "O":
        size = sum(len(v) for v in values if isinstance(v, (str, bytes)))
        _check_size(size + len(values), where, arg)
    out: list[bytes] = []
    for v in values:
        if isinstance(v, bytes):
            out.append(v)
        elif isinstance(v, str):
            out.append(_utf8(v, where, arg))
        else:
            raise TypeError(
                f"{where}: {arg!r} must hold only str or bytes, found {type(v).__name__} {v!r:.60}"
            )
    return arr.shape, out


@traceable
def text(
    name: str,
    data: Any,
    step: Step | None = None,
    description: str | None = None,
) -> bool:
    """Write text (Markdown) to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current name scope.
      data: a str, bytes, or array of them of any shape (see the module
        docstring), or a zero-argument callable returning one.
      step: an int64 step; defaults to the thread's default step.
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if written, False if nothing is recording.

    Raises:
      TypeError, ValueError: bad arguments (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        return False
    return write_text(sink, data, description)


_CALLER = Caller("text")


def write_text(sink: Sink, data: Any, description: str | None = None) -> bool:
    """The core of :func:`text`: write ``data`` to ``sink`` (same contract)."""
    where = sink.caller.where
    md = TEXT.metadata_bytes(description, where)
    shape, values = strings(data, where, sink.caller.data)
    return emit_value(sink, string_tensor_bytes(shape, values), md)


def text_pb(tag: str, data: Any, description: str | None = None) -> summary_pb2.Summary:
    """A ``Summary`` with one text value, with metadata; no writer needed.

    Same data contract as :func:`text`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "text_pb", "tag")
    TEXT.metadata_bytes(description, "text_pb")  # the same checks as text()
    shape, values = strings(data, "text_pb")
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_STRING
    v.tensor.tensor_shape.SetInParent()  # present even for rank 0, as TensorFlow writes it
    for d in shape:
        v.tensor.tensor_shape.dim.add().size = d
    v.tensor.string_val.extend(values)
    v.metadata.CopyFrom(create_summary_metadata(description))
    return summary
