"""The ops' path for device values: captured at the call, written when ready.

An op given an array that lives on an accelerator (:func:`~summarylib.encoding._pending.
device_kind`) checks what needs no value (rank, dtype) on the caller's thread, starts
the array's copy to the host (:mod:`summarylib.encoding._pending`) and queues a
:class:`~summarylib.writer._buffered.Deferred` event whose ``make`` (on the writer
thread, in file order) waits for the value and encodes it. The caller never waits for
the device. A framework error while the value is read loses that event only and is
reported like a failed write, naming the tag.

A writer made with ``sync_device_values=True`` reads device values at the call
instead (the ordinary conversion), for debugging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import f32_bytes, scalar_float
from summarylib.encoding._events import (
    SCALAR_TENSOR_HEAD,
    SUMMARY_KEY,
    VALUE_KEY,
    WALL_TIME_KEY,
    step_field,
)
from summarylib.encoding._pending import (
    capture,
    capture_stacked,
    device_kind,
    is_real_dtype,
)
from summarylib.encoding._wire import field_bytes, pack_double, varint
from summarylib.ops._device_step import DeviceStep, defers_device_values, device_step
from summarylib.ops._resolve import Caller, resolve_step
from summarylib.writer._buffered import Deferred

if TYPE_CHECKING:
    import numpy as np

    from summarylib.writer._context import DefaultWriter

__all__ = [
    "DeviceStep",
    "defers_device_values",
    "device_step",
    "read_scalar_later",
    "scalar_prefix",
    "scalar_value_deferred",
    "scalar_values_deferred",
]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_WALL_TIME = bytes((WALL_TIME_KEY,))
_SCALAR = Caller("scalar")


def _check_device_scalar(data: Any, where: str, arg: str) -> None:
    shape = tuple(int(d) for d in data.shape)
    if shape != ():
        raise ValueError(f"{where}: {arg!r} must be a scalar (rank 0), got shape {shape}")
    if not is_real_dtype(data.dtype):
        raise TypeError(f"{where}: {arg!r} must be a real number, got dtype {data.dtype}")


def scalar_prefix(tag_field: bytes) -> bytes:
    """The bytes every scalar Event of a tag shares after its step (no metadata).

    ``Event.summary`` key and length, ``Value`` key and length, the tag field, the
    tensor header; only the 4 float32 bytes of the value follow.
    """
    value_len = len(tag_field) + len(SCALAR_TENSOR_HEAD) + 4
    value_head = bytes((VALUE_KEY,)) + varint(value_len)
    return (bytes((SUMMARY_KEY,)) + varint(len(value_head) + value_len) + value_head
            + tag_field + SCALAR_TENSOR_HEAD)


def scalar_value_deferred(
    writer: DefaultWriter, prefix: bytes, tag: str, data: Any, step: int,
    wall_time: float | None = None, caller: Caller = _SCALAR,
) -> bool | None:
    """The common case, lean: one device scalar, an int step, a tag already in the file.

    ``prefix`` is the tag's :func:`scalar_prefix`; ``wall_time`` None is now. None:
    ``data`` is not captured (a layout the capture does not take); use the ordinary path.
    """
    if data.shape or not is_real_dtype(data.dtype):
        _check_device_scalar(data, caller.where, caller.data)  # raises
    pending = capture(data)
    if pending is None:
        return None
    res = writer.events
    assert res is not None, "ops never see the no-op writer"
    now = res.clock() if wall_time is None else wall_time
    head = _WALL_TIME + pack_double(now) + step_field(step)

    def make() -> bytes:
        return head + prefix + f32_bytes(float(pending.result()))

    return res.append(Deferred(make, len(prefix) + 32, f"the value of {tag!r} at step {step}"))


def read_scalar_later(data: Any, caller: Caller) -> Callable[[], float]:
    """A reader of the scalar ``data`` for the writer thread: a device scalar is checked
    and its copy to the host started now (read at the call if the capture does not take
    it); anything else is converted now.

    Raises:
      TypeError, ValueError: ``data`` is not a real rank-0 value (named by ``caller``).
    """
    if device_kind(data) is not None:
        _check_device_scalar(data, caller.where, caller.data)
        pending = capture(data)
        if pending is not None:
            return _element(pending.result, None)
    value = scalar_float(data, caller.where, caller.data)
    return lambda: value


def scalar_values_deferred(
    writer: DefaultWriter,
    entries: Sequence[tuple[str, Any, tuple[str, str], bytes]],
    step: Any,
    where: str,
    wall_time: float | None = None,
) -> bool:
    """Queue one Event of scalar values, some of which live on a device.

    ``entries`` are ``(tag, data, (where, arg), metadata)``: ``where`` and ``arg`` name
    the value in errors, ``metadata`` is the tag's
    ``SummaryMetadata`` (written with the tag's first value in the file). Host values
    are converted now; device values of one framework are stacked and cross in one
    transfer. ``step`` is an int, a host step, or a device scalar; ``wall_time`` None
    is now.

    Raises:
      TypeError, ValueError: a bad value, tag or step (checked now; nothing queued).
    """
    res = writer.events
    assert res is not None, "ops never see the no-op writer"
    dstep = step if isinstance(step, DeviceStep) else device_step(step, where)
    step_int = 0 if dstep is not None else resolve_step(step, None, where)
    host: dict[int, bytes] = {}
    devices: list[int] = []
    for i, (_, data, (where_data, arg), _) in enumerate(entries):
        if device_kind(data) is not None:
            _check_device_scalar(data, where_data, arg)
            devices.append(i)
        else:
            host[i] = f32_bytes(scalar_float(data, where_data, arg))
    tag_fields = [field_bytes(1, _encode_tag(tag, where)) for tag, _, _, _ in entries]
    reads = _capture_scalars([entries[i][1] for i in devices])
    for i, read in zip(devices, reads, strict=True):
        if read is None:  # a layout the capture does not take: the ordinary way
            host[i] = f32_bytes(scalar_float(entries[i][1], *entries[i][2]))
    if wall_time is None:
        wall_time = res.clock()
    ledger = res.tags
    firsts = [tag for tag, _, _, _ in entries if ledger.needs_metadata(tag)]

    def make() -> bytes:
        # On the writer thread, in file order: wait for the values, then encode. A tag
        # whose metadata an earlier failed event carried gets it here (see _emit).
        current = res.tags  # replaced if a failed write lost metadata meanwhile
        attach = set(firsts)
        attach.update(tag for tag, _, _, _ in entries if current.needs_metadata(tag))
        try:
            values = dict(host)
            for i, read in zip(devices, reads, strict=True):
                if read is not None:
                    values[i] = f32_bytes(read())
            s = dstep.value() if dstep is not None else step_int
            parts = []
            for i, (tag, _, _, metadata) in enumerate(entries):
                v = tag_fields[i] + SCALAR_TENSOR_HEAD + values[i]
                if tag in attach:
                    v += field_bytes(9, metadata)
                parts.append(field_bytes(1, v))
        except BaseException:
            for tag in attach:
                current.metadata_lost(tag)  # the next event of each carries it
            raise
        for i, (tag, _, _, _) in enumerate(entries):
            if tag in attach:  # metadata written; later values take the lean path
                current.remember_prefix(tag, scalar_prefix(tag_fields[i]))
        summary = b"".join(parts)
        return _WALL_TIME + pack_double(wall_time) + step_field(s) + field_bytes(5, summary)

    size = 64 + sum(len(f) + 8 + len(e[3]) for f, e in zip(tag_fields, entries, strict=True))
    size += 8 * len(devices)
    tags = ", ".join(repr(e[0]) for e in entries)
    at = "a step on the device" if dstep is not None else f"step {step_int}"
    what = f"the value{'s' if len(entries) > 1 else ''} of {tags} at {at}"
    for tag in firsts:  # before the append: make() may run at once
        ledger.metadata_written(tag)
    accepted = False
    try:
        accepted = res.append(Deferred(make, size, what))
    finally:
        if not accepted:
            for tag in firsts:
                ledger.metadata_lost(tag)
    return accepted


def _capture_scalars(values: list[Any]) -> list[Callable[[], float] | None]:
    # One read per value: from one stacked transfer where the values allow it.
    if len(values) > 1:
        stacked = capture_stacked(values)
        if stacked is not None:
            got: list[Any] = []

            def whole() -> np.ndarray:
                if not got:
                    got.append(stacked.result())
                return got[0]  # type: ignore[no-any-return]

            return [_element(whole, j) for j in range(len(values))]
    reads: list[Callable[[], float] | None] = []
    for v in values:
        pending = capture(v)
        reads.append(None if pending is None else _element(pending.result, None))
    return reads


def _element(read: Callable[[], np.ndarray], j: int | None) -> Callable[[], float]:
    def value() -> float:
        arr = read()
        return float(arr if j is None else arr[j])

    return value


def _encode_tag(tag: str, where: str) -> bytes:
    try:
        return tag.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: 'name' is not valid Unicode text: {e}") from None

