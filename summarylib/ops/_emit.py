"""Hand an encoded summary value to a writer, with metadata only where readers need it.

Plugin metadata is written on the first value of each tag in each file only:
TensorBoard's readers use the first and ignore the rest (format.md §6.5). A
tag counts as "seen" only once its event was accepted, so a failed call never
leaves a tag without metadata. An event encoded on the writer thread that
carried the metadata and failed to encode un-marks its tag, so that the next
event of the tag written carries it instead (one already queued decides when
it is encoded, in file order; a later call when it is made).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from summarylib.encoding._events import (
    AUDIO_KEY,
    IMAGE_KEY,
    MAX_EVENT_BYTES,
    TENSOR_KEY,
    event_bytes,
    summary_event,
    value_bytes,
)
from summarylib.encoding._wire import field_bytes
from summarylib.ops._device_step import DeviceStep, held_by_step, step_name
from summarylib.writer._buffered import Deferred

if TYPE_CHECKING:
    from summarylib.ops._resolve import Sink
    from summarylib.writer._context import DefaultWriter, EventSink

__all__ = [
    "AUDIO_FIELD",
    "IMAGE_FIELD",
    "TENSOR_FIELD",
    "check_event_size",
    "emit_event_field",
    "emit_summary",
    "emit_value",
    "emit_value_deferred",
    "event_wall_time",
]

#: The ``Summary.Value`` field keys a deferred value may fill (see emit_value_deferred).
TENSOR_FIELD = bytes((TENSOR_KEY,))
IMAGE_FIELD = bytes((IMAGE_KEY,))
AUDIO_FIELD = bytes((AUDIO_KEY,))

# The writer thread runs the ``prepare`` of deferred events on a thread pool
# (summarylib.writer._batch). Its module is imported by the op's thread, before the
# first such event is handed over (not when summarylib is imported: it costs a tenth of
# the import): the writer thread must import nothing, as a child forked while a thread
# holds a module's import lock waits for that lock forever when it imports the module.
_POOL_MODULE = "concurrent.futures.thread"


def _import_pool_module() -> None:
    import concurrent.futures.thread  # noqa: F401


def _events(writer: DefaultWriter) -> EventSink:
    res = writer.events
    assert res is not None, "ops never see the no-op writer"
    return res


def check_event_size(size: int, tag: str, step: int) -> None:
    """Raise ``ValueError`` if an event of ``size`` bytes is more than readers can parse."""
    if size > MAX_EVENT_BYTES:
        raise ValueError(
            f"summarylib: the value of {tag!r} at step {step} makes an event of {size} bytes; "
            f"readers cannot parse an event of more than {MAX_EVENT_BYTES} bytes (2 GiB, "
            "protobuf's limit): log less data per call"
        )


def event_wall_time(sink: Sink) -> float:
    """The wall time of an event of ``sink``: the caller's, else the writer's clock."""
    wall_time = sink.wall_time
    return _events(sink.writer).clock() if wall_time is None else wall_time


def emit_value(sink: Sink, tensor: bytes, metadata: bytes | None, tag: str | None = None) -> bool:
    """Write one ``Summary.Value`` (serialized ``tensor`` and ``metadata``) as an Event.

    ``tag`` replaces the sink's tag when given (ops that write under derived tags).
    Raises ``ValueError`` (nothing written) if the event would be larger than
    :data:`~summarylib.encoding._events.MAX_EVENT_BYTES`. A step on the device is read
    on the writer thread (the event is then made there, in its place in the file).
    """
    if tag is None:
        tag = sink.tag
    step = sink.step
    if isinstance(step, DeviceStep):
        if tag is not sink.tag:
            sink = sink._replace(tag=tag)
        return emit_value_deferred(sink, lambda: tensor, metadata, len(tensor))
    res = _events(sink.writer)
    tags = res.tags
    first = metadata is not None and tags.needs_metadata(tag)
    value = value_bytes(tag, tensor, metadata if first else None)
    event = summary_event(event_wall_time(sink), step, field_bytes(1, value))
    if len(event) > MAX_EVENT_BYTES:
        check_event_size(len(event), tag, step)
    if not res.append(event):
        return False  # dropped: the writer was closed at exit
    if first:
        tags.metadata_written(tag)
    return True


def emit_value_deferred(
    sink: Sink,
    make_tensor: Callable[[], bytes],
    metadata: bytes | None,
    size_hint: int,
    field: bytes = TENSOR_FIELD,
) -> bool:
    """Like :func:`emit_value`, but ``make_tensor`` runs on the writer thread.

    ``field`` is the ``Summary.Value`` field ``make_tensor``'s bytes go to: the tensor,
    or torch's legacy ``image``/``audio`` (:data:`IMAGE_FIELD`, :data:`AUDIO_FIELD`).

    Use it for expensive, infallible encoding (PNG, WAV, bucketing) of input
    the caller has already validated and copied. An event that turns out larger
    than :data:`~summarylib.encoding._events.MAX_EVENT_BYTES` is not written: it
    is reported as lost, like an event whose encoding failed. The wall time is taken now,
    and the event keeps its place in the file order. A step on the device
    (:class:`~summarylib.ops._device.DeviceStep`) is read in ``make``, on the writer thread.
    """
    if _POOL_MODULE not in sys.modules:
        _import_pool_module()
    tag = sink.tag
    step = sink.step
    res = _events(sink.writer)
    tags = res.tags
    first = metadata is not None and tags.needs_metadata(tag)
    wall_time = event_wall_time(sink)
    # The encoding may run early on another thread (prepare); everything that depends on
    # file order (which event carries the tag's metadata) runs in make(), in order.
    done: list[tuple[bool, object]] = []
    # Held only until the tensor is made: what make_tensor keeps (a pending device array,
    # a host copy) is freed once encoded, not when the event is written, so an event
    # waiting for the output holds its encoding, not both.
    source = [make_tensor]

    def prepare() -> None:
        try:
            done.append((True, source[0]()))
        except BaseException as e:  # reported by make(), in file order
            done.append((False, e))
        source.clear()

    def make() -> bytes:
        # On the writer thread, in file order. The tag is unmarked here if an earlier
        # event that carried its metadata failed to encode.
        current = res.tags  # replaced if a failed write lost metadata meanwhile
        attach = first or (metadata is not None and current.needs_metadata(tag))
        try:
            if done:
                ok, result = done[0]
                if not ok:
                    raise result  # type: ignore[misc]
                tensor = result
            else:
                tensor = source[0]()
            s = step.value() if isinstance(step, DeviceStep) else step
            value = value_bytes(
                tag, tensor, metadata if attach else None, field  # type: ignore[arg-type]
            )
            event = summary_event(wall_time, s, field_bytes(1, value))
            # Too large to parse: reported as this event's loss, never written as a
            # record that ends every reader's view of the file.
            check_event_size(len(event), tag, s)
        except BaseException:
            if attach:
                current.metadata_lost(tag)  # the next event carries it
            raise
        if attach:
            current.metadata_written(tag)
        return event

    size = (size_hint + len(tag) + 64 + (len(metadata) if metadata is not None else 0)
            + held_by_step(step))
    if first:
        # Marked before the append: the writer thread may encode (and fail,
        # and unmark) the event before this thread runs another line.
        tags.metadata_written(tag)
    try:
        accepted = res.append(
            Deferred(make, size, f"the value of {tag!r} at {step_name(step)}", prepare)
        )
    except BaseException:
        accepted = False
        raise
    finally:
        if first and not accepted:
            tags.metadata_lost(tag)  # not accepted
    return accepted


def emit_summary(sink: Sink, summary: bytes) -> bool:
    """Write a serialized ``Summary`` verbatim as one Event (False: dropped at exit)."""
    return _emit_encoded(sink, summary_event, summary, "a summary")


def emit_event_field(sink: Sink, field: bytes) -> bool:
    """Write an Event whose ``what`` is the already encoded field (False: dropped at exit)."""
    return _emit_encoded(sink, event_bytes, field, "an event")


def _emit_encoded(
    sink: Sink, encode: Callable[[float, int, bytes], bytes], payload: bytes, what: str
) -> bool:
    step = sink.step
    if isinstance(step, DeviceStep):
        return _emit_at_device_step(sink, step, encode, payload)
    event = encode(event_wall_time(sink), step, payload)
    if len(event) > MAX_EVENT_BYTES:
        check_event_size(len(event), what, step)
    return _events(sink.writer).append(event)


def _emit_at_device_step(
    sink: Sink, step: DeviceStep, encode: Callable[[float, int, bytes], bytes],
    payload: bytes,
) -> bool:
    # An Event whose only pending part is its step: made on the writer thread, in order.
    wall_time = event_wall_time(sink)

    def make() -> bytes:
        s = step.value()
        event = encode(wall_time, s, payload)
        check_event_size(len(event), "an event", s)
        return event

    return _events(sink.writer).append(
        Deferred(make, len(payload) + 32 + step.held_bytes, f"an event at {step_name(step)}")
    )
