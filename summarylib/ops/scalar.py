"""Scalar summaries: one float per step, shown by TensorBoard's Scalars dashboard.

Data contract:
  * ``data`` is rank 0: a Python bool/int/float, a numpy scalar or 0-d array,
    or a 0-d framework tensor (read through ``__float__``/``item()``/
    ``__array__``; the framework is never imported). A device array (JAX,
    torch CUDA, CuPy) is not read at the call: its rank and dtype are checked,
    its copy to the host starts, and the writer thread writes it once ready
    (:mod:`summarylib.ops._device`); a device scalar may also be the step.
  * It is stored as a rank-0 ``DT_FLOAT`` tensor in ``tensor_content`` (4
    little-endian bytes), the only scalar form TensorBoard's fast loader
    accepts. Values beyond float32's range become ±inf; NaN and ±inf are kept.
  * Plugin metadata (``plugin_name="scalars"``, empty content, ``data_class``
    unset, as TensorFlow writes it) goes on the first value of each tag in each
    file only: readers take the first and ignore the rest, and leaving it out
    saves 13 bytes per event.

Hot paths: after the first event of a tag, :func:`scalar`'s Event bytes are
wall time, step, a cached per-tag prefix and the 4 value bytes, made by one
``Struct.pack`` per event. After the first event of a set of tags,
:func:`scalars` packs only a compact record (time, step, float32 values) and
the writer thread makes the Event of it (:mod:`summarylib.ops.scalar_record`).
Property tests prove both equal the protobuf encoding.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from summarylib.encoding import _events as events
from summarylib.encoding._arrays import f32_bytes, scalar_float
from summarylib.encoding._events import (
    SCALAR_TENSOR_HEAD,
    STEP3_LOW,
    STEP_FIELDS,
    WALL_TIME_KEY,
    event_packs,
    simple_value_prefix,
    step_field,
    summary_event,
)
from summarylib.encoding._pending import device_kind, is_tracer, jax_array_of, torch_compiling
from summarylib.encoding._plugins import SCALARS
from summarylib.encoding._wire import field_bytes, pack_double, pack_float
from summarylib.ops._compiled import record_compiled_torch, traceable
from summarylib.ops._device import (
    DeviceStep,
    defers_device_values,
    scalar_prefix,
    scalar_value_deferred,
    scalar_values_deferred,
)
from summarylib.ops._device_step import held_by_step, step_name
from summarylib.ops._emit import emit_value
from summarylib.ops._interval import (
    REDUCTIONS,
    accumulate_cpu_tensor,
    append_check,
    interval_scalar,
)
from summarylib.ops._replay import COMPILED_PLANS, OPS
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve_step
from summarylib.ops._traced import record_traced
from summarylib.ops.scalar_record import Layout
from summarylib.writer._buffered import Deferred
from summarylib.writer._context import (
    DeferredCondition,
    Step,
    _local,
    condition_holds,
    no_default_writer,
)

if TYPE_CHECKING:
    from summarylib.proto import summary_pb2
    from summarylib.writer._context import DefaultWriter, EventSink

__all__ = [
    "PLUGIN_NAME",
    "create_summary_metadata",
    "scalar",
    "scalar_pb",
    "scalar_to",
    "scalars",
    "simple_scalar_to",
    "write_first_scalar",
    "write_scalar",
    "write_scalars",
    "write_simple_scalar",
    "write_tensor_scalar",
]

PLUGIN_NAME = SCALARS.name

# Value types that ``struct``'s ``f`` converts to float32 exactly as
# scalar_float() followed by f32_bytes() would (through float(), which is
# exact for them). Where those would not give 4 bytes unchanged, struct
# raises instead: OverflowError for finite values beyond float32 (stored as
# ±inf), struct.error for ints beyond float (scalar_float() raises). numpy's
# are added once numpy is loaded. Used by the fast paths of scalar() and
# scalars().
_fast_types: frozenset[type] = frozenset((float, int, bool))
_numpy_types_missing = True
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorBoard expects for scalars."""
    return SCALARS.create_summary_metadata(description)


def _encode_tag(tag: str, where: str) -> bytes:
    try:
        return tag.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: 'name' is not valid Unicode text: {e}") from None


def scalar(
    name: str,
    data: Any,
    step: Step | None = None,
    description: str | None = None,
    *,
    reduce: str | None = None,
    check_finite: bool = False,
) -> bool:
    """Write a scalar summary to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current
        :func:`~summarylib.name_scope`. A non-empty str.
      data: a real number of rank 0 (see the module docstring), or a
        zero-argument callable returning one, called only when recording.
      step: an int64 step; defaults to the thread's default step.
      description: Markdown shown in TensorBoard (kept from the first event).
      reduce: None (write ``data``), or ``"mean"``, ``"max"``, ``"min"``, ``"sum"``,
        ``"last"``: write that reduction of ``data`` over every call since the tag's
        last write (this call included), computed where ``data`` lives (on the device
        for device values, inside compiled code too); the recording condition
        (``record_if``) ends the interval. Without a condition each call writes its own
        value. See :mod:`summarylib.ops._interval` and docs/compiled.md.
      check_finite: check on the device that ``data`` is finite (at every call of the
        interval, with ``reduce``); a NaN or ±inf raises
        :class:`~summarylib.NonFiniteError` naming the tag and step on the next op,
        ``flush()`` or ``close()``, never at this call. The value is still written.

    Returns:
      True if the summary was written, False if nothing is recording (no
      default writer, a no-op writer, or a false ``record_if``).

    Raises:
      TypeError, ValueError: bad ``name``, ``data``, ``step``, ``reduce`` or
        ``check_finite`` (nothing written).
      ValueError: a writer is set but no step is known.
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    if reduce is not None or check_finite is not False:  # state kept between calls
        return interval_scalar(name, data, step, description, reduce, check_finite)
    st = _local.state
    writer = st.writer
    if writer is None:
        return no_default_writer("scalar")
    cond = st.condition
    if cond is not True:
        if type(cond) is DeferredCondition:  # inside compiled code: written when it runs
            if torch_compiling():
                return record_compiled_torch(scalar, "scalar", _SCALAR_ARGS,
                                             (name, data, step, description), {})
            return record_traced(scalar, "scalar", (name, data, step, description), {})
        if not condition_holds(cond):
            return False
    if step is None:
        if type(data) is not float and type(data) not in _fast_types and torch_compiling():
            # Before reading the default step: dynamo would guard on its value and
            # compile the region again whenever set_step() changes it. The run's default
            # step is read when the op runs.
            return record_compiled_torch(scalar, "scalar", _SCALAR_ARGS,
                                         (name, data, None, description), {})
        step = st.step
    if type(step) is not int or step < _INT64_MIN or step > _INT64_MAX:
        if torch_compiling():  # inside torch.compile: one op in the graph
            return record_compiled_torch(scalar, "scalar", _SCALAR_ARGS,
                                         (name, data, step, description), {})
        array_step = _array_of(step, "step")
        if array_step is not None:  # a Keras variable (optimizer.iterations): its array
            array_data = _array_of(data, "data")
            return scalar(name, data if array_data is None else array_data, array_step,
                          description)
        if is_tracer(step) or is_tracer(data):  # inside jax.jit: written when it runs
            return record_traced(scalar, "scalar", (name, data, step, description), {})
        if device_kind(step) is not None and defers_device_values(writer):
            return _scalar_deferred(writer, name, data, step, description, st.scope)
        step = resolve_step(step, None, "scalar")
    if type(name) is not str or not name:
        name = check_tag(name, "scalar")
    if description is not None and type(description) is not str:
        SCALARS.metadata_bytes(description, "scalar")  # raises TypeError naming the argument
    scope = st.scope
    tag = scope + name if scope else name
    t = type(data)
    if t is not float and t not in _fast_types:
        # Checked and converted here; the types in the set go to struct's
        # "f" as they are (see _fast_types).
        if _numpy_types_missing:
            _add_numpy_types()
        if torch_compiling():  # inside torch.compile: one op in the graph
            given = None if step is st.step else step
            return record_compiled_torch(scalar, "scalar", _SCALAR_ARGS,
                                         (name, data, given, description), {})
        if is_tracer(data):  # inside jax.jit: written when it runs (the step as given)
            given = None if step is st.step else step
            return record_traced(scalar, "scalar", (name, data, given, description), {})
        array_data = _array_of(data, "data")
        if array_data is not None:  # a Keras variable (a learning rate): its array
            return scalar(name, array_data, None if step is st.step else step, description)
        if device_kind(data) is not None and defers_device_values(writer):
            return _scalar_deferred(writer, name, data, step, description, scope)
        data = scalar_float(data, "scalar")
    res: EventSink = writer.events  # type: ignore[assignment]
    prefix = res.tags.prefix_of(tag)
    if prefix is None:
        return _write_first(res, tag, data, step, description, res.clock(), "scalar")
    return res.append(_scalar_event(prefix, step, res.clock(), data, "scalar"))


OPS["scalar"] = scalar


def _array_of(value: Any, arg: str) -> Any:
    # The array a Keras variable (on the JAX backend) stands for, or None; its own
    # failure to give one (a variable read outside the trainer's scope) named here. The
    # trainer donates its variables' buffers to its next step: like any JAX array, the
    # device path keeps the value out of its reach.
    try:
        return jax_array_of(value)
    except Exception as e:
        raise TypeError(f"scalar: cannot read {arg!r} ({type(value).__name__}): {e!r}") from e


def compiled_scalar_plan(
    arguments: dict[str, Any], tensors: tuple[str, ...], scope: str, gated: bool,
) -> Callable[[list[Any], DefaultWriter], bool | None] | None:
    """How to write a :func:`scalar` call recorded inside ``torch.compile`` each time it
    runs, with less work than replaying the call: the tag is scoped once, here, and each
    run converts the value and the step and packs the Event as :func:`scalar` does (the
    same bytes, the same errors).

    ``arguments`` are the recorded call's arguments by name (None for a tensor),
    ``tensors`` the names of its tensor arguments in the order of the run's values (a
    ``record_if`` condition follows them when ``gated``), ``scope`` the name scope when
    traced. None when the call needs :func:`scalar` itself (a tag it would refuse, the
    default step, or a tensor other than ``data`` and ``step``); a gated call only with
    ``reduce``/``check_finite`` (others are written only under a true condition, which
    the op checks first). The plan returns None for values it leaves to :func:`scalar`
    (not CPU tensors: a device value may be deferred).
    """
    name, description = arguments.get("name"), arguments.get("description")
    if (type(name) is not str or not name or tensors not in (("data",), ("data", "step"))
            or (description is not None and type(description) is not str)):
        return None
    static_step = arguments.get("step")
    if tensors == ("data",) and type(static_step) is not int:
        return None  # the default step, or one scalar() checks itself
    tag = scope + name if scope else name
    reduce, check = arguments.get("reduce"), arguments.get("check_finite")
    if reduce is not None or check:
        if (reduce is not None and reduce not in REDUCTIONS) or type(check) is not bool:
            return None
        return _interval_plan(tag, reduce, check, static_step, len(tensors) == 2, gated,
                              description)
    if gated:
        return None
    # A 0-d float32 tensor's item() is the float scalar_float() would return (struct packs
    # it as the same float32), without its checks for every other kind of value.
    f32 = sys.modules["torch"].float32
    if tensors == ("data",):

        def write_static(values: list[Any], writer: DefaultWriter) -> bool | None:
            data = values[0]
            if not data.is_cpu:
                return None
            if data.dtype is f32 and not data.dim():
                data = data.item()
            return scalar_to(writer, tag, resolve_step(static_step, None, "scalar"), None,
                             _CALLER, data, description)

        return write_static

    def write(values: list[Any], writer: DefaultWriter) -> bool | None:
        data, step = values
        if not (data.is_cpu and step.is_cpu):
            return None
        if data.dtype is f32 and not data.dim():
            data = data.item()
        return scalar_to(writer, tag, resolve_step(step, None, "scalar"), None, _CALLER, data,
                         description)

    return write


def _interval_plan(
    tag: str, reduce: str | None, check: bool, static_step: Any, step_tensor: bool,
    gated: bool, description: str | None,
) -> Callable[[list[Any], DefaultWriter], bool | None]:
    # scalar(reduce=, check_finite=) recorded in torch.compile, for a rank-0 CPU value
    # under a CPU condition (or none): ops._interval's accumulator updated without a
    # torch operation, then the reduced value written as scalar() writes it (the replay
    # of ops._interval.replay_interval, the same numbers and bytes).
    def write(values: list[Any], writer: DefaultWriter) -> bool | None:
        gate = True
        if gated:
            cond = values[-1]
            if not cond.is_cpu:
                return None  # read on the writer thread, by the replay
            gate = bool(cond)
        step = values[1] if step_tensor else static_step
        if step_tensor and not step.is_cpu:
            return None
        found = accumulate_cpu_tensor(writer, tag, reduce, values[0], gate)
        if found is None:
            return None
        if not gate:
            return False
        out, bad = found
        run_step = resolve_step(step, None, "scalar")
        written = scalar_to(writer, tag, run_step, None, _CALLER, out, description)
        if check and written:
            append_check(writer, tag, bad, None, run_step, reduce)
        return written

    return write


COMPILED_PLANS["scalar"] = compiled_scalar_plan


def _scalar_event(prefix: bytes, step: int, wall_time: float, data: Any, where: str) -> bytes:
    # The whole Event in one Struct.pack: the wall-time key and time, the step
    # field, the cached prefix, the value as float32 (see events.event_packs).
    packs = _EVENT_PACKS.get(len(prefix)) or event_packs(len(prefix))
    try:
        if 0 <= step < 16384:
            sf = STEP_FIELDS[step]
            return packs[len(sf)](WALL_TIME_KEY, wall_time, sf, prefix, data)
        if 16384 <= step < 2097152:
            # A 3-byte step: key and low 14 bits from the table, then the
            # high 7 bits as a byte. IndexError while the table is unbuilt.
            return packs[-1](
                WALL_TIME_KEY, wall_time, STEP3_LOW[step & 0x3FFF], step >> 14, prefix, data
            )
        sf = step_field(step)
        return packs[len(sf)](WALL_TIME_KEY, wall_time, sf, prefix, data)
    except (OverflowError, struct.error, IndexError):
        # Finite beyond float32 (stored as ±inf), an int beyond float
        # (scalar_float raises the usual ValueError), or the 3-byte step
        # table not built yet (step_field builds it).
        return (
            _WALL_TIME
            + pack_double(wall_time)
            + step_field(step)
            + prefix
            + f32_bytes(scalar_float(data, where))
        )


# Assigned, not imported by name: CPython 3.11 compiles a method call on a name that an
# import statement bound as an attribute load plus a call (as for a module), which costs
# scalar() about 0.1 µs against the method call that a plain global gets.
_EVENT_PACKS = events.EVENT_PACKS
_WALL_TIME = bytes((WALL_TIME_KEY,))


def _scalar_deferred(
    writer: DefaultWriter, name: Any, data: Any, step: Any, description: str | None, scope: str
) -> bool:
    # A device value or step: captured now, written when ready (see ops._device).
    if type(name) is not str or not name:
        name = check_tag(name, "scalar")
    tag = scope + name if scope else name
    return _deferred(writer, tag, data, step, description, None, _CALLER)


def _deferred(
    writer: DefaultWriter, tag: str, data: Any, step: Any, description: str | None,
    wall_time: float | None, caller: Caller,
) -> bool:
    where = caller.where
    if type(step) is int and _INT64_MIN <= step <= _INT64_MAX:
        if description is not None and type(description) is not str:
            SCALARS.metadata_bytes(description, where)  # raises TypeError naming it
        prefix = writer.events.tags.prefix_of(tag)  # type: ignore[union-attr]
        if prefix is not None:
            done = scalar_value_deferred(writer, prefix, tag, data, step, wall_time, caller)
            if done is not None:
                return done
    entries = [(tag, data, (where, caller.data), SCALARS.metadata_bytes(description, where))]
    return scalar_values_deferred(writer, entries, step, where, wall_time)


_CALLER = Caller("scalar")
_SCALAR_ARGS = ("name", "data", "step", "description")


def write_scalar(sink: Sink, data: Any, description: str | None = None) -> bool:
    """The core of :func:`scalar`: write ``data`` to ``sink`` (same contract)."""
    step = sink.step
    if type(step) is not int:  # on the device: read on the writer thread
        return _deferred(sink.writer, sink.tag, data, step, description, sink.wall_time,
                         sink.caller)
    return scalar_to(sink.writer, sink.tag, step, sink.wall_time, sink.caller, data,
                     description)


def scalar_to(
    writer: DefaultWriter, tag: str, step: int, wall_time: float | None, caller: Caller,
    data: Any, description: str | None = None,
) -> bool:
    """:func:`write_scalar` with the sink's fields as arguments, for the hot path of
    ``SummaryWriter.add_scalar`` (no sink made per call). ``tag`` is checked and scoped,
    ``step`` an int in int64's range; the data may live on a device."""
    t = type(data)
    if t is not float and t not in _fast_types:
        if _numpy_types_missing:
            _add_numpy_types()
        if device_kind(data) is not None and defers_device_values(writer):
            return _deferred(writer, tag, data, step, description, wall_time, caller)
        data = scalar_float(data, caller.where, caller.data)
    if description is not None and type(description) is not str:
        SCALARS.metadata_bytes(description, caller.where)  # raises TypeError naming it
    res: EventSink = writer.events  # type: ignore[assignment]
    prefix = res.tags.prefix_of(tag)
    now = res.clock() if wall_time is None else wall_time
    if prefix is None:
        return _write_first(res, tag, data, step, description, now, caller.where)
    return res.append(_scalar_event(prefix, step, now, data, caller.where))


def write_simple_scalar(sink: Sink, data: Any) -> bool:
    """torch's scalar (``SummaryWriter.add_scalar``): ``data`` written to ``sink`` as a
    ``Summary.Value.simple_value`` (float32, no plugin metadata), the form
    ``torch.utils.tensorboard`` writes and TensorBoard's ``EventAccumulator`` files
    under ``scalars``. Same data contract as :func:`scalar`; the step may be on the device.
    """
    return simple_scalar_to(sink.writer, sink.tag, sink.step, sink.wall_time, sink.caller,
                            data)


def simple_scalar_to(
    writer: DefaultWriter, tag: str, step: int | DeviceStep, wall_time: float | None,
    caller: Caller, data: Any,
) -> bool:
    """:func:`write_simple_scalar` with the sink's fields as arguments (the hot path of
    ``add_scalar``). A warm call packs one Event with the tag's cached prefix, as
    :func:`scalar_to` does; the data may live on a device."""
    res: EventSink = writer.events  # type: ignore[assignment]
    prefix = res.tags.simple_prefix_of(tag)
    if prefix is None:
        # No metadata to write first: the prefix is known before any event is.
        try:
            # An empty tag (torch takes one) is left out, as protobuf leaves it out.
            tag_field = field_bytes(1, tag.encode("utf-8")) if tag else b""
        except UnicodeEncodeError as e:
            raise ValueError(f"{caller.where}: {caller.name!r} is not valid Unicode text: "
                             f"{e}") from None
        prefix = simple_value_prefix(tag_field)
        res.tags.remember_simple_prefix(tag, prefix)
    t = type(data)
    if t is not float and t not in _fast_types:
        if _numpy_types_missing:
            _add_numpy_types()
        if device_kind(data) is not None and defers_device_values(writer):
            if type(step) is int:
                done = scalar_value_deferred(writer, prefix, tag, data, step, wall_time, caller)
                if done is not None:
                    return done
            else:
                return _simple_at_device_step(res, prefix, tag, data, step, wall_time, caller)
        data = scalar_float(data, caller.where, caller.data)
    if type(step) is not int:
        return _simple_at_device_step(res, prefix, tag, data, step, wall_time, caller)
    now = res.clock() if wall_time is None else wall_time
    return res.append(_scalar_event(prefix, step, now, data, caller.where))


def _simple_at_device_step(
    res: EventSink, prefix: bytes, tag: str, data: Any, step: Any,
    wall_time: float | None, caller: Caller,
) -> bool:
    # The step (and maybe the value) on the device: the Event is made on the writer
    # thread, in its place in the file, once they are read.
    from summarylib.ops._device import read_scalar_later

    read, held = read_scalar_later(data, caller)
    now = res.clock() if wall_time is None else wall_time

    def make() -> bytes:
        return (_WALL_TIME + pack_double(now) + step_field(step.value()) + prefix
                + f32_bytes(read()))

    return res.append(Deferred(make, len(prefix) + 32 + held + held_by_step(step),
                               f"the value of {tag!r} at {step_name(step)}"))


def write_tensor_scalar(sink: Sink, data: Any, double_precision: bool = False) -> bool:
    """torch's ``add_scalar(..., new_style=True)``: a ``scalars``-plugin tensor holding
    ``float_val`` (``double_val``, DT_DOUBLE, with ``double_precision``) and no shape, as
    torch writes it; the plugin metadata on the tag's first value in the file. The value
    is read at the call (torch's ``float(tensor)``)."""
    value = scalar_float(data, sink.caller.where, sink.caller.data)
    if double_precision:
        tensor = b"\x08\x02\x32\x08" + pack_double(value)  # dtype DT_DOUBLE, double_val
    else:
        tensor = b"\x08\x01\x2a\x04" + f32_bytes(value)  # dtype DT_FLOAT, float_val
    return emit_value(sink, tensor, SCALARS.metadata_bytes(None, sink.caller.where))


def _write_first(
    res: EventSink, tag: str, data: Any, step: int, description: str | None,
    wall_time: float, where: str,
) -> bool:
    # First value of `tag` in this file: with metadata. Also caches the
    # prefix that every later event of the tag shares.
    value = f32_bytes(scalar_float(data, where))
    tag_field = field_bytes(1, _encode_tag(tag, where))
    md = SCALARS.metadata_bytes(description, where)
    v = tag_field + SCALAR_TENSOR_HEAD + value + field_bytes(9, md)
    if not res.append(summary_event(wall_time, step, field_bytes(1, v))):
        return False
    _remember(res, tag, tag_field)
    return True


def write_first_scalar(
    res: EventSink, tag: str, data: Any, step: int, description: str | None,
    wall_time: float,
) -> bool:
    """Write the first value of ``tag`` in the file to ``res``: with the plugin metadata,
    and the tag's prefix remembered (for a caller that decided earlier, in file order, that
    this event carries it). ``tag`` is checked and scoped, ``step`` an int."""
    return _write_first(res, tag, data, step, description, wall_time, "scalar")


def _remember(res: EventSink, tag: str, tag_field: bytes) -> None:
    # Cache the bytes every later event of `tag` in this file starts with:
    # Event.summary key and length, Value key and length, the tag, the tensor
    # header. Only the 4 value bytes follow.
    res.tags.remember_prefix(tag, scalar_prefix(tag_field))


@traceable
def scalars(
    values: Mapping[str, Any],
    step: Step | None = None,
    description: Mapping[str, str | None] | None = None,
) -> bool:
    """Write several scalars at one step as a single event.

    TensorBoard reads the result exactly like one :func:`scalar` call per
    entry (each key is a tag, inside the current name scope), at a fraction of
    the cost per metric.

    Args:
      values: tag name -> rank-0 real number (or a callable returning one).
      step: the step of every value; defaults to the thread's default step.
      description: optional mapping of name (a key of ``values``) -> Markdown
        str, or None. As for :func:`scalar`, it is stored with the first
        value of a tag in each file and ignored after that; names that are
        not in ``values`` are ignored.

    Returns:
      True if written; False if nothing is recording or ``values`` is empty
      (then nothing is written).

    Raises:
      TypeError, ValueError: a bad key, value, step or description; nothing
        is written.
    """
    st = _local.state
    writer = st.writer
    if writer is None:
        return no_default_writer("scalars")
    cond = st.condition
    if cond is not True and not condition_holds(cond):
        return False
    return write_scalars(writer, values, st.step if step is None else step, description,
                         st.scope)


def write_scalars(
    writer: DefaultWriter,
    values: Mapping[str, Any],
    step: Step | None,
    description: Mapping[str, str | None] | None = None,
    scope: str = "",
) -> bool:
    """The core of :func:`scalars`: write ``values`` to ``writer`` as one event, each key
    a tag prefixed by ``scope`` (same contract; ``step`` None is an error)."""
    if description is not None:
        _check_descriptions(description)
    res: EventSink = writer.events  # type: ignore[assignment]
    if type(values) is dict and type(step) is int:
        # The fast path (every tag already in this file, plain numbers): the caller
        # packs a compact record of the time, the step and the values as float32, and
        # the writer thread makes the Event of it (see scalar_record). struct checks the
        # rest: a step beyond int64, a finite value beyond float32 (stored as ±inf by
        # the checked path) and an int beyond float raise, and the checked path decides.
        layout = res.tags.layout_of((scope, tuple(values)) if scope else tuple(values))
        if layout is not None:
            vals = values.values()
            if tuple(map(type, vals)) == layout.types or _accepts(layout, vals):
                try:
                    record = layout.pack(layout.marker, res.clock(), step, *vals)
                except (OverflowError, struct.error):
                    pass
                else:
                    return res.append(record)
    return _scalars_checked(writer, values, step, description, scope)


def _scalars_checked(
    writer: DefaultWriter,
    values: Mapping[str, Any],
    step: Any,
    description: Mapping[str, str | None] | None,
    scope: str,
) -> bool:
    # Everything checked and converted one value at a time, with error messages that
    # name the value; the Event is built here. Also makes the tags' layout for the fast
    # path once every tag has its metadata in this file.
    if type(values) is not dict and not isinstance(values, Mapping):
        raise TypeError(f"scalars: 'values' must be a mapping, got {type(values).__name__}")
    if (device_kind(step) is not None or any(map(device_kind, values.values()))) and (
        defers_device_values(writer)
    ):
        return _scalars_deferred(writer, values, step, description, scope)
    res: EventSink = writer.events  # type: ignore[assignment]
    if type(step) is not int or step < _INT64_MIN or step > _INT64_MAX:
        step = resolve_step(step, None, "scalars")
    get = res.tags.prefix_of
    parts: list[bytes] = []
    append = parts.append
    firsts = []
    names = []
    for name, data in values.items():
        if type(name) is not str or not name:
            name = check_tag(name, "scalars", "values key")
        names.append(name)
        tag = scope + name if scope else name
        if type(data) is float:
            try:
                value = pack_float(data)
            except OverflowError:
                value = f32_bytes(data)
        else:
            value = f32_bytes(scalar_float(data, f"scalars: values[{name!r}]"))
        prefix = get(tag)
        if prefix is not None:
            # The cached prefix minus its Event.summary key and length is the
            # Value's own key, length, tag and tensor header. The length is
            # one byte unless the tag is longer than about 100 bytes.
            if prefix[1] < 0x80:
                append(prefix[2:] + value)
            else:
                append(prefix[_summary_header_len(prefix) :] + value)
        else:
            desc = description.get(name) if description else None
            tag_field = field_bytes(1, _encode_tag(tag, "scalars"))
            firsts.append((tag, tag_field))
            md = SCALARS.metadata_bytes(desc, "scalars")
            v = tag_field + SCALAR_TENSOR_HEAD + value + field_bytes(9, md)
            append(field_bytes(1, v))
    if not parts:
        return False  # empty mapping: nothing to write
    if not res.append(summary_event(res.clock(), step, b"".join(parts))):
        return False
    for tag, tag_field in firsts:
        _remember(res, tag, tag_field)
    if type(values) is dict:
        _add_layout(res, scope, tuple(values), names)
    return True


def _scalars_deferred(
    writer: DefaultWriter,
    values: Mapping[str, Any],
    step: Any,
    description: Mapping[str, str | None] | None,
    scope: str,
) -> bool:
    # Some values (or the step) live on a device: one Event, written when they are ready.
    entries = []
    for name, data in values.items():
        if type(name) is not str or not name:
            name = check_tag(name, "scalars", "values key")
        desc = description.get(name) if description else None
        tag = scope + name if scope else name
        md = SCALARS.metadata_bytes(desc, "scalars")
        entries.append((tag, data, (f"scalars: values[{name!r}]", "data"), md))
    if not entries:
        return False
    return scalar_values_deferred(writer, entries, step, "scalars")


def _check_descriptions(description: Any) -> None:
    # Up front, before any fast path: a description is only looked at for a
    # tag's first value in a file, and a bad one must not pass unnoticed
    # because its tag happens to be known already.
    if type(description) is not dict and not isinstance(description, Mapping):
        raise TypeError(
            "scalars: 'description' must be a mapping of name -> str, got "
            f"{type(description).__name__}"
        )
    for name, text in description.items():
        if not isinstance(name, str):
            raise TypeError(
                f"scalars: 'description' keys must be str, got {type(name).__name__} {name!r}"
            )
        if text is not None and not isinstance(text, str):
            raise TypeError(
                f"scalars: 'description'[{name!r}] must be a str, got {type(text).__name__}"
            )


# Layouts kept per writer (per file): past this, new sets of tags take the checked path.
_MAX_LAYOUTS = 1024


def _accepts(layout: Layout, values: Any) -> bool:
    # True if the types of `values` go to struct's "f" as they are (see _fast_types),
    # remembered on the layout for the next call.
    if _numpy_types_missing:
        _add_numpy_types()
    types = tuple(map(type, values))
    if not _fast_types.issuperset(types):
        return False
    layout.types = types
    return True


def _add_layout(
    res: EventSink, scope: str, keys: tuple[str, ...], names: list[str]
) -> None:
    # After a checked write of a dict: from now on its tags have their metadata here.
    tags = res.tags
    key = (scope, keys) if scope else keys
    if tags.layout_of(key) is not None or tags.layout_count() >= _MAX_LAYOUTS:
        return
    heads = []
    for name in names:
        prefix = tags.prefix_of(scope + name if scope else name)
        if prefix is None:
            return  # a failed write reset the metadata meanwhile
        heads.append(prefix[_summary_header_len(prefix) :])
    layout = Layout(heads)
    marker = res.codecs.register(layout.expand, layout.run_framer())
    if marker is not None:
        layout.marker = marker
        tags.remember_layout(key, layout)


def _add_numpy_types() -> None:
    global _fast_types, _numpy_types_missing
    np = sys.modules.get("numpy")
    if np is not None and np.float32 not in _fast_types:
        _fast_types = _fast_types | {np.float16, np.float32, np.float64, np.int32, np.int64}
        _numpy_types_missing = False


def _summary_header_len(prefix: bytes) -> int:
    # The Event.summary key, then a varint length, which ends at the first byte below 0x80.
    i = 1
    while prefix[i] & 0x80:
        i += 1
    return i + 1


def scalar_pb(tag: str, data: Any, description: str | None = None) -> summary_pb2.Summary:
    """A ``Summary`` holding one scalar value, with metadata; no writer needed.

    Same data contract as :func:`scalar`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "scalar_pb", "tag")
    value = f32_bytes(scalar_float(data, "scalar_pb"))
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_FLOAT
    v.tensor.tensor_shape.SetInParent()
    v.tensor.tensor_content = value
    v.metadata.CopyFrom(SCALARS.create_summary_metadata(description, "scalar_pb"))
    return summary
