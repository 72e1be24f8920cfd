"""What every op does first: find its sink (writer, tag, step, wall time) and its caller.

Each op has a *core* that takes a :class:`Sink`: the writer to write to, the tag (already
checked and inside the name scope), the step, the wall time (None: the time of writing)
and the :class:`Caller` whose names its error messages use. Two kinds of callers build
sinks: the module-level ops (``summarylib.scalar``, ...) with :func:`resolve`, from the
thread's default writer, step and name scope; and ``SummaryWriter.add_*`` with
:func:`sink_for`, from their own writer, torch's step and wall time, and torch's argument
names. Neither swaps the thread's default writer, and no message is rewritten afterwards.

``resolve`` and ``sink_for`` return None when nothing will be recorded (no default writer,
a no-op writer, or a false ``record_if``); ops then return False without doing any other
work, so expensive encoding never runs for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from summarylib.encoding._pending import device_kind
from summarylib.writer._context import (
    DefaultWriter,
    Step,
    _local,
    check_step,
    condition_holds,
    no_default_writer,
)
from summarylib.writer._path_safety import check_name_text

if TYPE_CHECKING:
    from summarylib.ops._device_step import DeviceStep

__all__ = ["Caller", "Sink", "check_tag", "check_wall_time", "resolve", "resolve_step", "sink_for"]


class Caller(NamedTuple):
    """Who called an op core, as its error messages name it.

    ``where`` starts every message (``"image"``, ``"add_image"``); ``name`` and ``data``
    are the caller's names of the tag and data arguments (``"name"``/``"data"`` for the
    tf.summary-style ops, torch's ``"tag"``/``"img_tensor"`` for ``add_image``).
    ``empty_tag``: an empty tag is accepted (torch's and tensorboardX's ``add_*`` take
    one); the tf.summary-style ops refuse it, as TensorFlow does.
    """

    where: str
    name: str = "name"
    data: str = "data"
    empty_tag: bool = False


class Sink(NamedTuple):
    """Where one op call writes: the writer, the full tag, the step and the wall time.

    ``wall_time`` None means the time of writing (taken when the event is made). A step
    given as an integer scalar on an accelerator is a
    :class:`~summarylib.ops._device.DeviceStep`, read on the writer thread (unless the
    writer was made with ``sync_device_values=True``): ops hand it to
    :mod:`summarylib.ops._emit` as they would an int.
    """

    writer: DefaultWriter
    tag: str
    step: int | DeviceStep
    wall_time: float | None
    caller: Caller


def check_tag(name: object, where: str, arg: str = "name", *, allow_empty: bool = False) -> str:
    """Return ``name`` if it is a non-empty str that UTF-8 can encode, else raise
    naming ``where``/``arg``. ``allow_empty``: "" is returned too.

    A lone surrogate (``"\\ud800"``, from a mis-decoded file name) has no UTF-8 form:
    it is refused here, at the call, not when the writer thread encodes the event.
    """
    if type(name) is not str:
        if isinstance(name, str):
            return check_tag(str(name), where, arg, allow_empty=allow_empty)
        raise TypeError(f"{where}: {arg!r} must be a str, got {type(name).__name__} {name!r}")
    if not name:
        if allow_empty:
            return name
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
    name: object,
    step: Step | None,
    caller: Caller,
    *,
    scoped: bool = True,
    untagged: bool = False,
) -> Sink | None:
    """The sink of a module-level op (the thread's default writer), or None if it
    should not record now.

    The tag is ``name`` prefixed with the current name scope (unless
    ``scoped`` is False). Ops that write no tag pass ``untagged=True`` and
    ``name=None`` (tag ""); for every other op a None name is an error.

    Raises:
      TypeError, ValueError: a bad ``name`` or ``step``, or no step at all.
    """
    st = _local.state
    writer = st.writer
    if writer is None:
        no_default_writer(caller.where, stacklevel=4)
        return None
    cond = st.condition
    if cond is not True and not condition_holds(cond):
        return None
    tag = _full_tag(st.scope, name, caller, scoped, untagged)
    if type(step) is not int and step is not None and device_kind(step) is not None:
        dstep = _device_step(writer, step, caller.where)
        if dstep is not None:
            return Sink(writer, tag, dstep, None, caller)
    return Sink(writer, tag, resolve_step(step, st.step, caller.where), None, caller)


def sink_for(
    writer: DefaultWriter,
    name: object,
    step: Step,
    wall_time: object,
    caller: Caller,
    *,
    scoped: bool = True,
    untagged: bool = False,
) -> Sink | None:
    """The sink of an op called with an explicit ``writer`` (``SummaryWriter.add_*``),
    or None if ``record_if`` is false.

    The tag goes through the current name scope as for :func:`resolve` (unless
    ``scoped`` is False); ``step`` is the caller's, already an int or a host step;
    ``wall_time`` is None (the time of writing) or seconds since the epoch.

    Raises:
      TypeError, ValueError: a bad ``name``, ``step`` or ``wall_time``.
    """
    st = _local.state
    cond = st.condition
    if cond is not True and not condition_holds(cond):
        return None
    tag = _full_tag(st.scope, name, caller, scoped, untagged)
    if wall_time is not None:
        wall_time = check_wall_time(wall_time, caller.where)
    if type(step) is not int and device_kind(step) is not None:
        dstep = _device_step(writer, step, caller.where)
        if dstep is not None:
            return Sink(writer, tag, dstep, wall_time, caller)
    return Sink(writer, tag, check_step(step, caller.where), wall_time, caller)


def _device_step(writer: DefaultWriter, step: object, where: str) -> DeviceStep | None:
    # A device scalar step, captured without reading it (None: read it at the call).
    from summarylib.ops._device_step import defers_device_values, device_step

    return device_step(step, where) if defers_device_values(writer) else None


def _full_tag(scope: str, name: object, caller: Caller, scoped: bool, untagged: bool) -> str:
    # The checked tag inside the name scope; "" for ops that write no tag.
    if untagged:
        return ""
    tag = check_tag(name, caller.where, caller.name, allow_empty=caller.empty_tag)
    return scope + tag if scoped and scope else tag


def check_wall_time(wall_time: object, where: str) -> float:
    """``wall_time`` (seconds since the epoch, a real number) as a float, else raise."""
    if isinstance(wall_time, bool) or not isinstance(wall_time, (int, float)):
        raise TypeError(f"{where}: 'walltime' must be a number, got {wall_time!r}")
    return float(wall_time)
