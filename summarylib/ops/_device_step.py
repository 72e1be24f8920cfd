"""A step given as a device scalar, and whether a writer defers device values.

The one piece of the device path that :mod:`summarylib.ops._resolve` needs (a sink's step
may live on the device), kept apart from the ops' device paths
(:mod:`summarylib.ops._device`), which build on ``_resolve``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from summarylib.encoding._pending import PendingValue, capture, device_kind, is_integer_dtype
from summarylib.writer._batch import NotRecorded

if TYPE_CHECKING:
    from summarylib.writer._context import DefaultWriter

__all__ = ["DeviceStep", "GatedStep", "defers_device_values", "device_step", "step_name"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def defers_device_values(writer: DefaultWriter) -> bool:
    """False for a writer made with ``sync_device_values=True`` (read at the call)."""
    return writer.defers_device_values


class DeviceStep:
    """A step given as a device scalar of an integer dtype, read on the writer thread.

    Ops pass it where they would pass an int step to :mod:`summarylib.ops._emit`, whose
    functions read it when they make the event (an op that writes several events reads
    it once).
    """

    __slots__ = ("_pending", "_value", "where")
    is_device_step = True  # device_kind() says "step": ops pass it on as it is

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


class GatedStep(DeviceStep):
    """A device step whose event is written only if a device boolean is true.

    Made by the ops' compiled-code path for a ``record_if`` on a traced condition: the
    condition crosses with the values and is read on the writer thread, never on the
    caller's. :meth:`value` raises :class:`~summarylib.writer._batch.NotRecorded` when it
    is false, and the writer leaves the event out (no loss is reported). ``step`` is an
    int or a pending device step.
    """

    __slots__ = ("_gate", "_step")

    def __init__(self, step: int | DeviceStep, gate: PendingValue, where: str) -> None:
        super().__init__(gate, where)
        self._step = step
        self._gate = gate

    def value(self) -> int:
        """The step, or raise NotRecorded if the condition was false (waits for it)."""
        if not bool(self._gate.result()):
            raise NotRecorded
        step = self._step
        return step if type(step) is int else step.value()  # type: ignore[union-attr]


def step_name(step: int | DeviceStep) -> str:
    """``"step 5"``, or ``"a step on the device"`` (for messages made before it is read)."""
    return "a step on the device" if isinstance(step, DeviceStep) else f"step {step}"


def device_step(step: Any, where: str) -> DeviceStep | None:
    """A :class:`DeviceStep` if ``step`` is a rank-0 integer device array, else None.

    A :class:`DeviceStep` is returned as it is.

    Raises:
      TypeError: a device array of another rank or dtype (as a host step would).
    """
    if isinstance(step, DeviceStep):
        return step
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
