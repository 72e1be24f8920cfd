"""Helpers for a device path kept outside the value layer (``SummaryWriter.add_pr_curve``'s
counts; the ops that take arrays use :mod:`summarylib.encoding._values` instead).

A device path is taken when an argument is an array on an accelerator
(:func:`~summarylib.encoding._pending.device_kind`) and the writer defers device values.
Every path follows one pattern:

1. On the caller's thread, everything that needs no value is checked from the arrays'
   shapes and dtypes (the op's own checks, run on a
   :func:`~summarylib.encoding._pending.stand_in` where they can be, so the messages are
   the op's), and the device arrays' copies to the host start
   (:mod:`summarylib.encoding._pending`); host arguments are copied, so the caller may
   change them at once.
2. The event is queued with :func:`~summarylib.ops._emit.emit_value_deferred`: on the
   writer thread, in file order, ``make_tensor`` waits for the values and runs the op's
   host encoding on them, checks of values (labels all 0 or 1, finite vertices, ...)
   included. A check that fails there, or a framework error while reading, loses that
   event only and is reported like a failed write, naming the tag.

A path returns None when a device argument is of a kind the capture does not take (a
sparse torch tensor): the op then runs its ordinary path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from summarylib.encoding._pending import capture, device_kind

__all__ = ["any_on_device", "host_copy", "reader"]

_Read = Callable[[], Any]


def reader(value: Any, copy: Callable[[Any], Any]) -> tuple[_Read, int] | None:
    """A zero-argument reader of ``value`` at this call, and its size in bytes.

    A device array is captured (read later); anything else is converted by ``copy`` now,
    into memory the caller does not hold. None: a device array the capture does not take.
    """
    if value is None:
        return (lambda: None), 0
    if device_kind(value) is not None:
        pending = capture(value)
        if pending is None:
            return None
        return pending.result, pending.held_bytes
    host = copy(value)
    return (lambda: host), int(getattr(host, "nbytes", 0))


def host_copy(where: str, arg: str) -> Callable[[Any], Any]:
    """A ``copy`` for :func:`reader`: a host argument as a private numpy array."""

    def copy(value: Any) -> Any:
        import numpy as np

        from summarylib.encoding._arrays import as_array

        return np.array(as_array(value, where, arg))  # a copy, even of a numpy array

    return copy


def any_on_device(*values: Any) -> bool:
    """True if one of ``values`` is an array on an accelerator."""
    return any(device_kind(v) is not None for v in values)
