"""What every op does first: find the writer, check the condition, the tag and the step.

``resolve`` returns None when nothing will be recorded (no default writer, a
no-op writer, or a false ``record_if``); ops then return False without doing
any other work, so expensive encoding never runs for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from summarylib.encoding.pending import device_kind
from summarylib.writer.context import (
    DefaultWriter,
    Step,
    _local,
    check_step,
    condition_holds,
    no_default_writer,
)
from summarylib.writer.path_safety import check_name_text

if TYPE_CHECKING:
    from summarylib.ops._device import DeviceStep

__all__ = ["check_tag", "resolve", "resolve_step"]


def check_tag(name: object, where: str, arg: str = "name") -> str:
    """Return ``name`` if it is a non-empty str that UTF-8 can encode, else raise
    naming ``where``/``arg``.

    A lone surrogate (``"\\ud800"``, from a mis-decoded file name) has no UTF-8 form:
    it is refused here, at the call, not when the writer thread encodes the event.
    """
    if type(name) is not str:
        if isinstance(name, str):
            return check_tag(str(name), where, arg)
        raise TypeError(f"{where}: {arg!r} must be a str, got {type(name).__name__} {name!r}")
    if not name:
        raise ValueError(f"{where}: {arg!r} must be a non-empty string")
    return check_name_text(name, where, arg)


def resolve_step(step: Step | None, default: Step | None, where: str) -> int:
    """The step to write: ``step``, else the default step; raise if neither."""
    if step is None:
        step = default
        if step is None:
            raise ValueError(
                f"{where}: no step: pass step=..., or set a default with "
                "summarylib.set_step() or writer.as_default(step=...)"
            )
    return check_step(step, where)


def resolve(
    name: object, step: Step | None, where: str, *, scoped: bool = True, untagged: bool = False
) -> tuple[DefaultWriter, str, int | DeviceStep] | None:
    """Return ``(writer, tag, step)`` if the op should record now, else None.

    The tag is ``name`` prefixed with the current name scope (unless
    ``scoped`` is False). Ops that write no tag pass ``untagged=True`` and
    ``name=None`` (tag ""); for every other op a None name is an error.
    A step given as an integer scalar on an accelerator comes back as a
    :class:`~summarylib.ops._device.DeviceStep`, read on the writer thread (unless the
    writer was made with ``sync_device_values=True``): ops hand it to
    :mod:`summarylib.ops._emit` as they would an int.

    Raises:
      TypeError, ValueError: a bad ``name`` or ``step``, or no step at all.
    """
    st = _local.state
    writer = st.writer
    if writer is None:
        no_default_writer(where, stacklevel=4)
        return None
    cond = st.condition
    if cond is not True and not condition_holds(cond):
        return None
    if untagged:
        tag = ""
    else:
        tag = check_tag(name, where, "tag" if not scoped else "name")
        if scoped and st.scope:
            tag = st.scope + tag
    if type(step) is not int and step is not None and device_kind(step) is not None:
        from summarylib.ops._device import defers_device_values, device_step

        if defers_device_values(writer):
            dstep = device_step(step, where)
            if dstep is not None:
                return writer, tag, dstep
    return writer, tag, resolve_step(step, st.step, where)
