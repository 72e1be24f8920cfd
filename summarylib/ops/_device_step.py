"""A step given as a device scalar, and whether a writer defers device values.

The one piece of the device path that :mod:`summarylib.ops._resolve` needs (a sink's step
may live on the device), kept apart from the ops' device paths
(:mod:`summarylib.ops._device`), which build on ``_resolve``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from summarylib.encoding._pending import PendingValue, capture, device_kind, is_integer_dtype

if TYPE_CHECKING:
    from summarylib.writer._context import DefaultWriter

__all__ = ["DeviceStep", "defers_device_values", "device_step", "step_name"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def defers_device_values(writer: DefaultWriter) -> bool:
    """False for a writer made with ``sync_device_values=True`` (read at the call)."""
    return not getattr(writer, "_sync_device_values", False)


class DeviceStep:
    """A step given as a device scalar of an integer dtype, read on the writer thread.

    Ops pass it where they would pass an int step to :mod:`summarylib.ops._emit`, whose
    functions read it when they make the event (an op that writes several events reads
    it once).
    """

    __slots__ = ("_pending", "_value", "where")

    def __init__(self, pending: PendingValue, where: str) -> None:
        self._pending = pending
        self._value: int | None = None
        self.where = where

    def value(self) -> int:
        """The step as an int in int64's range (waits for the device)."""
        if self._value is None:
            step = int(self._pending.result())
            if not _INT64_MIN <= step <= _INT64_MAX:
                raise ValueError(f"{self.where}: 'step' must fit in int64, got {step}")
            self._value = step
        return self._value


def step_name(step: int | DeviceStep) -> str:
    """``"step 5"``, or ``"a step on the device"`` (for messages made before it is read)."""
    return "a step on the device" if isinstance(step, DeviceStep) else f"step {step}"


def device_step(step: Any, where: str) -> DeviceStep | None:
    """A :class:`DeviceStep` if ``step`` is a rank-0 integer device array, else None.

    Raises:
      TypeError: a device array of another rank or dtype (as a host step would).
    """
    if device_kind(step) is None:
        return None
    shape = tuple(step.shape)
    if shape != () or not is_integer_dtype(step.dtype):
        raise TypeError(
            f"{where}: 'step' must be an integer, got a device array of shape {shape} "
            f"and dtype {step.dtype}"
        )
    pending = capture(step)
    if pending is None:
        return None
    return DeviceStep(pending, where)
