"""A compiled call's summaries as one unit: its small values packed into one buffer, its
ops written by the writer thread.

:func:`summarylib.integrations.jax.jit` hands the values of the ops recorded in a
function (:mod:`summarylib.ops._traced`) out of the compiled code. Handed over one by one,
every value is an output array of its own, and after every call every op runs its
device-value path on the calling thread (a capture and a queued event per op), which on
a small step costs more than the step. So a :class:`CallPlan` is made once, when the
function is traced:

* **Packed**: the values of the ops that take this route (``scalar`` and in-graph
  bucketed ``histogram`` calls, see :func:`_unit_able`), the step and the ``record_if``
  condition included, are bit-cast to bytes and concatenated inside the compiled code:
  one small ``uint8`` output per call, one copy to the host. Bit-casts and copies do no
  arithmetic, so every value's bits arrive as computed (NaN payloads, subnormals).
* **One unit**: after a call, the calling thread captures that buffer and queues one
  :class:`~summarylib.writer._batch.Deferred` per run of such ops. The writer thread
  reads the buffer once, reads each op's ``record_if`` condition, and runs the ops whose
  condition holds with host values, in the call's order, at the call's default step and
  with the wall time read at the call: the same bytes as the op called eagerly with
  those values. Under a false condition the ops cost nothing more.

The calling thread still decides what depends on the call: whether the writer reads
device values at the call (``sync_device_values=True``: the ops run there, with the
values read at once), host numbers passed for traced arguments (checked there), which
tag's event carries its plugin metadata (marked at the call, as the ops' deferred paths
do, so an eager call of the tag queued later does not take it), and errors that need no
value: a call that could raise at the call (no default step) runs the ops there.
Other ops' values leave as their own outputs and are replayed as before
(:func:`~summarylib.ops._replay.replay`), in the call's order with the units.

``scalar(reduce=...)`` calls (without ``check_finite``) are turned into plain scalar
calls of the reduced value when the function is traced with their accumulators as an
argument (:func:`fuse_intervals`): the update is traced into the step, so they join the
unit too, and no update is dispatched after the call.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

from summarylib.encoding._arrays import f32_bytes, is_extended_float, widen_extended_float
from summarylib.encoding._events import WALL_TIME_KEY, step_field
from summarylib.encoding._pending import JAX_ARRAY_BYTES, buffer_bytes, is_tracer
from summarylib.encoding._wire import pack_double
from summarylib.errors import NonFiniteError, SummaryError
from summarylib.ops._replay import TracedCall, replay
from summarylib.ops._resolve import check_tag, resolve_step
from summarylib.writer._batch import DEFERRED_BYTES, Deferred, NotRecorded
from summarylib.writer._context import DefaultWriter

__all__ = ["CallPlan", "fuse_intervals", "host_argument", "interval_key", "plan_call"]

# The ops a unit runs: their tag is the scope and `name`, and every value they read is
# small (a scalar, a bucket table, a step, a condition).
_UNIT_OPS = frozenset(("scalar", "histogram"))
# A packed value is at most this large (a bucket table of 16k buckets).
_PACK_MAX_BYTES = 1 << 16
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_HOST_NUMBERS = (int, float)
_WALL_TIME = bytes((WALL_TIME_KEY,))


def host_argument(where: int | str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The host number passed for argument ``where`` (a position or a keyword) of a call,
    or None if it was not one (an array, whose traced value left the compiled code)."""
    value = args[where] if isinstance(where, int) else kwargs.get(where)
    if isinstance(value, _HOST_NUMBERS):
        return value
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic) and value.ndim == 0:
        return value
    return None


# struct formats of rank-0 values read without numpy (the same Python number as
# float()/int()/bool() of the value numpy would give). Not float16: struct's half
# conversion drops a NaN's payload, numpy's keeps it.
_STRUCT_CODES = {"f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q",
                 "u1": "B", "u2": "H", "u4": "I", "u8": "Q", "b1": "?"}


class _Slot:
    # Where one packed value lies in the buffer, and how to read it back.
    __slots__ = ("dtype", "nbytes", "offset", "shape", "unpack")

    def __init__(self, offset: int, nbytes: int, dtype: Any, shape: tuple[int, ...]) -> None:
        self.offset = offset
        self.nbytes = nbytes
        self.dtype = dtype
        self.shape = shape
        code = _STRUCT_CODES.get(f"{dtype.kind}{dtype.itemsize}") if not shape else None
        if code is not None and is_extended_float(dtype):
            code = None  # bfloat16, float8: numpy's (ml_dtypes') conversion
        self.unpack = None if code is None else struct.Struct("<" + code).unpack_from

    def read(self, raw: Any) -> Any:
        """The value from the buffer's bytes ``raw`` (a numpy uint8 array): a Python
        number for a rank-0 value of a plain dtype, else a numpy array of its dtype and
        shape (low-precision floats widened to float32, as a device value's read gives)."""
        unpack = self.unpack
        if unpack is not None:
            return unpack(raw, self.offset)[0]
        a = raw[self.offset:self.offset + self.nbytes].view(self.dtype).reshape(self.shape)
        return widen_extended_float(a.copy())


def _read_all(slots: list[_Slot]) -> Any:
    # One struct's unpack_from for the values of `slots` (consecutive in the buffer), or
    # None if some slot is not a rank-0 value struct reads (see _Slot).
    fmt = ["<"]
    end = 0
    for slot in slots:
        if slot.unpack is None or slot.offset != end:
            return None
        fmt.append(_STRUCT_CODES[f"{slot.dtype.kind}{slot.dtype.itemsize}"])
        end += slot.nbytes
    return struct.Struct("".join(fmt)).unpack_from


class _UnitOp:
    # One op of a unit, fixed when traced: the call, its tag, where its values are
    # (slots), which of them are arguments of the function, and where a scalar's data
    # and step come from.
    __slots__ = ("call", "data_slot", "data_where", "default_step", "gate_slot", "scalar",
                 "slots", "sources", "step_const", "step_slot", "step_where", "tag")

    def __init__(self, call: TracedCall, slots: list[int],
                 sources: tuple[Any, ...] | None) -> None:
        self.call = call
        self.slots = slots
        src = sources or (None,) * len(slots)
        self.sources = tuple((j, w) for j, w in enumerate(src) if w is not None)
        name = call.arguments["name"]
        self.tag = call.scope + name if call.scope else name
        self.scalar = call.where == "scalar"
        self.gate_slot = slots[-1] if call.gated else None
        self.data_slot = self.step_slot = self.data_where = self.step_where = None
        for j, (key, _) in enumerate(call.positions):
            if key == "data":
                self.data_slot, self.data_where = slots[j], src[j]
            elif key == "step":
                self.step_slot, self.step_where = slots[j], src[j]
        self.step_const = call.arguments.get("step")
        self.default_step = self.step_slot is None and self.step_const is None


class _Unit:
    # A run of ops of one call written as one event entry, fixed when traced.
    __slots__ = ("arrays", "default_step", "held", "number_ids", "ops", "read_all", "slot_ids",
                 "tags", "what", "wheres")

    def __init__(self, ops: list[_UnitOp], slots: list[_Slot]) -> None:
        self.ops = ops
        self.default_step = any(op.default_step for op in ops)
        wheres: dict[Any, bool] = {}  # argument -> whether some op takes it as its step
        for op in ops:
            for _, where in op.sources:
                wheres[where] = wheres.get(where, False) or op.step_where == where
        self.wheres = tuple(wheres.items())
        self.slot_ids = sorted({k for op in ops for k in op.slots})
        total = sum(slots[k].nbytes for k in self.slot_ids)
        # The buffer (its array, host copy), the Run and each op's share of the event.
        self.held = JAX_ARRAY_BYTES + 2 * buffer_bytes(total) + 96 * len(ops)
        # The unit's tags: once all have had their metadata accepted in the file, a call
        # decides "no first event" with one set comparison.
        self.tags = frozenset(op.tag for op in ops)
        # Where the unit reads every slot of the plan and each is a rank-0 number of a
        # plain dtype (scalars, steps, conditions): one struct unpack of the buffer gives
        # all the values (the same Python numbers as each slot's read), in slot order.
        self.read_all = _read_all(slots) if self.slot_ids == list(range(len(slots))) else None
        # Otherwise: the conditions and the slots read as Python numbers first, and each
        # op's other slots (arrays: bucket tables) once its condition holds.
        gates = {op.gate_slot for op in ops}
        first = [k for k in self.slot_ids if slots[k].unpack is not None or k in gates]
        self.number_ids = first
        self.arrays = [tuple(k for k in op.slots if k not in first) for op in ops]
        tags = ", ".join(repr(op.tag) for op in ops[:4])
        more = "" if len(ops) <= 4 else f" and {len(ops) - 4} more"
        self.what = f"the summaries {tags}{more} of a compiled call"


class CallPlan:
    """How the summaries of one traced function leave it and are written (see the module
    docstring). Static: made once per trace, it comes back with every execution.

    ``calls`` are the recorded calls in order; ``leaves`` (at :meth:`replay`) are the
    compiled function's summary outputs: the packed buffer first (if any value is
    packed), then every value of the other calls, in order.
    """

    __slots__ = ("_leaf_of", "_on_host", "_segments", "_slots", "calls", "intervals", "packed",
                 "sources")

    def __init__(self, calls: tuple[TracedCall, ...],
                 sources: tuple[tuple[Any, ...] | None, ...], slots: list[_Slot],
                 leaf_of: list[list[tuple[bool, int]]], units: list[_UnitOp | None]) -> None:
        self.calls = calls
        self.sources = sources
        self._slots = slots
        self.packed = bool(slots)
        self._on_host: bool | None = None
        #: ``(key, tag, reduce)`` of the reduced calls whose accumulator the function
        #: was not given when traced (see :func:`fuse_intervals`).
        self.intervals: tuple[tuple[str, str, str], ...] = ()
        # Each value of call i: (packed, slot or leaf index).
        self._leaf_of = leaf_of
        # Runs of the call order: (a unit, or None) and the calls' indexes.
        runs: list[tuple[list[_UnitOp] | None, list[int]]] = []
        for i, op in enumerate(units):
            if runs and (runs[-1][0] is not None) == (op is not None):
                runs[-1][1].append(i)
                if op is not None:
                    runs[-1][0].append(op)  # type: ignore[union-attr]
            else:
                runs.append(([op] if op is not None else None, [i]))
        self._segments = [(None if ops is None else _Unit(ops, slots), indexes)
                          for ops, indexes in runs]

    def replay(self, leaves: tuple[Any, ...], writer: DefaultWriter | None, step: Any,
               args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Write the summaries of one execution: ``leaves`` its outputs, ``writer`` the
        default writer at the call (None: the ``SummaryWriter.add_*`` calls only),
        ``step`` the default step at the call, ``args``/``kwargs`` the call's arguments
        (host numbers passed for traced values are used as given)."""
        packed: Any = leaves[0] if self.packed else None
        host: list[Any] | None = None  # the packed values, read at the call if needed
        started = False
        for unit, indexes in self._segments:
            if unit is not None and writer is not None and writer.defers_device_values:
                if not started:
                    # The packed buffer's copy to the host, started now. Where the
                    # buffer lives is asked once per plan: asking costs more than a
                    # small step's dispatch (and a wrong answer only delays the copy).
                    on_host = self._on_host
                    if on_host is None:
                        on_host = self._on_host = _on_host(packed)
                    if not on_host:
                        packed.copy_to_host_async()
                    started = True
                if self._queue(unit, packed, writer, step, args, kwargs):
                    continue
            for i in indexes:
                if host is None and unit is not None:
                    host = self._read_now(packed)
                self._replay_one(i, leaves, host, writer, step, args, kwargs)

    # -- the calling thread ---------------------------------------------------------------
    def _read_now(self, packed: Any) -> list[Any]:
        import numpy as np

        raw = np.asarray(packed)
        return [s.read(raw) for s in self._slots]

    def _replay_one(self, i: int, leaves: tuple[Any, ...], host: list[Any] | None,
                    writer: DefaultWriter | None, step: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> None:
        offset = 1 if self.packed else 0
        values = [host[k] if p else leaves[offset + k]  # type: ignore[index]
                  for p, k in self._leaf_of[i]]
        sources = self.sources[i]
        if sources is not None:  # values that are arguments: host numbers as given
            for j, where in enumerate(sources):
                if where is not None:
                    given = host_argument(where, args, kwargs)
                    if given is not None:
                        values[j] = given
        replay(self.calls[i], values, writer, step)

    def _queue(self, unit: _Unit, packed: Any, writer: DefaultWriter, step: Any,
               args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        # One Deferred for `unit`; False (nothing queued): run its ops here.
        if unit.default_step and type(step) is not int:
            return False  # no default step (the op raises at the call), or a device one
        given: dict[Any, Any] | None = None  # argument -> the host number passed
        for where, as_step in unit.wheres:
            value = args[where] if type(where) is int else kwargs.get(where)
            # An int in int64's range (the usual step) is fine as step and as data.
            if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
                value = host_argument(where, args, kwargs)
                if value is None:
                    continue
                if not _fine_host_number(value, as_step):
                    return False  # the op checks it at the call
            if given is None:
                given = {}
            given[where] = value
        res = writer.events
        if res is None:
            return False
        tags = res.tags
        firsts: list[str] | None = None
        if not tags.have_metadata(unit.tags):
            for op in unit.ops:
                tag = op.tag
                # As the ops decide at the call: a scalar's event carries the metadata
                # while its tag has no remembered prefix, anything else's while it needs
                # it.
                if tags.needs_metadata(tag) and (not op.scalar or tags.prefix_of(tag) is None):
                    if firsts is None:
                        firsts = []
                    firsts.append(tag)
        run = _Run(unit, self._slots, packed, res.clock(), given, step, firsts, res)
        if firsts is None:
            res.append(run)
            return True
        for tag in firsts:  # before the append: the writer thread may make it at once
            tags.metadata_written(tag)
        accepted = False
        try:
            accepted = res.append(run)
        finally:
            if not accepted:
                for tag in firsts:
                    tags.metadata_lost(tag)
        return True


def _on_host(array: Any) -> bool:
    # The buffer is host memory already (JAX's CPU backend): no copy to start.
    try:
        return bool(array.device.platform == "cpu")
    except Exception:  # sharded over several devices: no single platform
        return False


def _fine_host_number(value: Any, as_step: bool) -> bool:
    # A host number given for a traced value that the op takes on the writer thread
    # without an error: a step in int64's range, a real number in int64's range as data.
    if type(value) is int:
        return _INT64_MIN <= value <= _INT64_MAX
    if type(value) is float:
        return not as_step
    if type(value) is bool or getattr(value, "dtype", None) is None:
        return False  # a bool step is refused by the op; other host types are rare
    kind = value.dtype.kind
    if as_step:
        return kind in "iu" and _INT64_MIN <= int(value) <= _INT64_MAX
    return kind in "biuf"


class _Gather:
    """The writer an op of a unit writes to on the writer thread: the events it appends
    are kept, in order, for the unit to return; the metadata ledger, the compact record
    formats and the device-value switch are the writer's, the clock is the call's."""

    __slots__ = ("defers_device_values", "entries", "events", "res", "time")

    def __init__(self, res: Any, time: float) -> None:
        self.res = res
        self.events = self
        self.entries: list[Any] = []
        self.time = time
        self.defers_device_values = True

    @property
    def tags(self) -> Any:
        return self.res.tags

    @tags.setter
    def tags(self, ledger: Any) -> None:
        self.res.tags = ledger

    @property
    def codecs(self) -> Any:
        return self.res.codecs

    @property
    def closed(self) -> bool:
        return False

    def clock(self) -> float:
        return self.time

    def append(self, event: Any) -> bool:
        self.entries.append(event)
        return True


class _Run(Deferred):
    # A unit queued by one call: made on the writer thread, in file order. The queue's
    # entry itself (one object per call, not a Run and a Deferred around its make):
    # make is this class's method (it shadows Deferred's slot, left unset), so no bound
    # method is stored and the entry is freed as soon as it is written.
    __slots__ = ("buffer", "firsts", "given", "res", "slots", "step", "time", "unit")

    def __init__(self, unit: _Unit, slots: list[_Slot], buffer: Any, time: float,
                 given: dict[Any, Any] | None, step: Any, firsts: list[str] | None,
                 res: Any) -> None:
        self.size = unit.held + DEFERRED_BYTES
        self.what = unit.what
        self.prepare = None
        self.unit = unit
        self.slots = slots
        self.buffer = buffer
        self.time = time
        self.given = given
        self.step = step
        self.firsts = firsts
        self.res = res

    def make(self) -> list[Any]:
        """The Events of the unit's ops whose condition holds, in order (None: an event
        not recorded; an exception: that op's event lost, with that error)."""
        import numpy as np

        res = self.res
        firsts = self.firsts or ()
        slots = self.slots
        try:
            raw = np.asarray(self.buffer)
            read_all = self.unit.read_all
            if read_all is not None:  # every slot, rank-0 numbers: one unpack
                values: list[Any] = list(read_all(raw))
            else:
                # The numbers now (conditions, steps); arrays (bucket tables) only for
                # the ops whose condition holds.
                values = [None] * len(slots)
                for k in self.unit.number_ids:
                    values[k] = slots[k].read(raw)
        except BaseException:
            for tag in firsts:
                res.tags.metadata_lost(tag)  # the next event of each carries it
            raise
        self.buffer = None  # the device buffer is freed once read
        given = self.given
        out: list[Any] = []
        gather: _Gather | None = None
        head = b""  # the wall time field, the same in each event of the call
        for op, arrays in zip(self.unit.ops, self.unit.arrays, strict=True):
            first = op.tag in firsts
            gate = op.gate_slot
            if gate is not None and not values[gate]:
                if first:
                    res.tags.metadata_lost(op.tag)
                continue  # not recorded in this execution
            if arrays and read_all is None:
                try:
                    for k in arrays:
                        if values[k] is None:
                            values[k] = slots[k].read(raw)
                except Exception as e:
                    if first:
                        res.tags.metadata_lost(op.tag)
                    out.append(_failure(e, f"the value of {op.tag!r}"))
                    continue
            if op.scalar and not first and op.data_slot is not None:
                if not head:
                    head = _WALL_TIME + pack_double(self.time)
                event = self._lean_scalar(op, values, head)
                if event is not None:
                    out.append(event)
                    continue
            row = [values[k] for k in op.slots]
            if given is not None:
                for j, where in op.sources:
                    if where in given:
                        row[j] = given[where]
            if gather is None:
                gather = _Gather(res, self.time)
            if first:
                res.tags.metadata_lost(op.tag)  # the op attaches it and marks it again
            try:
                if first and op.scalar:
                    _first_scalar(op, row, gather, self.step)
                    res.tags.metadata_written(op.tag)
                else:
                    replay(op.call, row, gather, self.step)
            except Exception as e:
                if first:
                    res.tags.metadata_lost(op.tag)
                out.append(_failure(e, f"the value of {op.tag!r}"))
                gather.entries.clear()
                continue
            for entry in gather.entries:
                out.append(_materialize(entry, res))
            gather.entries.clear()
        return out

    def _lean_scalar(self, op: _UnitOp, values: list[Any], head: bytes) -> bytes | None:
        # A scalar whose tag is in the file: the bytes of ops._device's lean path
        # (scalar_value_deferred) made here, without running the op. None: the op runs.
        prefix = self.res.tags.prefix_of(op.tag)
        if prefix is None:
            return None
        given = self.given
        data = values[op.data_slot]  # type: ignore[index]
        step = op.step_const
        if op.step_slot is not None:
            step = values[op.step_slot]
        if given is not None:
            if op.data_where in given:
                data = given[op.data_where]
            if op.step_where in given:
                step = given[op.step_where]
        if step is None:
            step = self.step
        if type(step) is not int or not _INT64_MIN <= step <= _INT64_MAX:
            return None  # the op says what is wrong
        try:
            value = f32_bytes(float(data))
        except (TypeError, ValueError, OverflowError):
            return None
        event: bytes = head + step_field(step) + prefix + value
        return event


def _first_scalar(op: _UnitOp, row: list[Any], gather: _Gather, step: Any) -> None:
    # The first value of a scalar tag in the file (marked at the call): with its
    # metadata, even if an eager call queued after this one wrote the tag meanwhile.
    from summarylib.ops.scalar import write_first_scalar

    call = op.call
    args = dict(call.arguments)
    for (key, _), v in zip(call.positions, row, strict=False):
        args[key] = v
    write_first_scalar(gather, op.tag, args["data"],
                       resolve_step(args["step"], step, "scalar"), args["description"],
                       gather.time)


def _materialize(entry: Any, res: Any) -> Any:
    # An entry an op appended: its Event's bytes, or the exception that lost it.
    if type(entry) is bytes:
        from summarylib.encoding._compact import MARK

        if entry and entry[0] == MARK:
            try:
                expanded: bytes = res.codecs.format_of(entry)[0](entry)
                return expanded
            except Exception as e:
                return _failure(e, "a compact record")
        return entry
    if isinstance(entry, Deferred):
        try:
            return entry.make()
        except NotRecorded:
            return None
        except NonFiniteError as e:
            return e
        except Exception as e:
            return _failure(e, entry.what)
    return entry


def _failure(e: Exception, what: str) -> SummaryError:
    err = SummaryError(f"summarylib: encoding {what} failed: {e!r}")
    err.__cause__ = e
    return err


# -- when the function is traced -------------------------------------------------------


def fuse_intervals(
    calls: tuple[TracedCall, ...], values: list[list[Any]],
    sources: tuple[tuple[Any, ...] | None, ...], state: dict[str, Any] | None,
) -> tuple[tuple[TracedCall, ...], list[list[Any]], tuple[tuple[Any, ...] | None, ...],
           dict[str, Any], list[tuple[str, str, str]]]:
    """Carry the accumulators of ``scalar(reduce=...)`` calls through the traced function.

    ``state`` maps :func:`interval_key` to the traced accumulator the function was called
    with (None: none). The calls of a key in ``state`` are replaced by plain ``scalar``
    calls of the reduced value, updated by operations traced now
    (:func:`~summarylib.ops._interval.fused_update`): no dispatch after the call. Returns
    the calls, values and sources, the accumulators after the call (every key of
    ``state``, updated or not), and ``(key, tag, reduce)`` of the reduced calls whose key
    was not in ``state`` (replayed as before this time: the caller passes their
    accumulators from the next call on).
    """
    from summarylib.ops._interval import REDUCTIONS, fused_update

    out_calls: list[TracedCall] = []
    out_values: list[list[Any]] = []
    out_sources: list[tuple[Any, ...] | None] = []
    after = dict(state or {})
    wanted: list[tuple[str, str, str]] = []
    for call, vals, src in zip(calls, values, sources, strict=True):
        args = call.arguments
        reduce = args.get("reduce")
        j = next((k for k, (key, inner) in enumerate(call.positions)
                  if key == "data" and inner is None), None)
        if (call.where != "scalar" or call.target is not None or reduce not in REDUCTIONS
                or args.get("check_finite") or j is None or type(args.get("name")) is not str
                or vals[j].shape != () or not _real(vals[j].dtype)):
            out_calls.append(call)
            out_values.append(vals)
            out_sources.append(src)
            continue
        tag = call.scope + args["name"] if call.scope else args["name"]
        key = interval_key(tag, reduce)
        if key not in after:
            wanted.append((key, tag, reduce))
            out_calls.append(call)
            out_values.append(vals)
            out_sources.append(src)
            continue
        after[key], reduced = fused_update(reduce, tuple(after[key]), vals[j],
                                           vals[-1] if call.gated else None)
        plain = dict(args)
        plain["reduce"] = None
        plain["check_finite"] = False
        out_calls.append(TracedCall(call.op, call.where, plain, call.positions, call.gated,
                                    call.scope, call.step_arg, None))
        row = list(vals)
        row[j] = reduced
        out_values.append(row)
        # The written value is the reduction, not the argument `data` may have been.
        out_sources.append(None if src is None else tuple(
            None if k == j else w for k, w in enumerate(src)))
    return tuple(out_calls), out_values, tuple(out_sources), after, wanted


def interval_key(tag: str, reduce: str) -> str:
    """The key of a tag's accumulator among a compiled function's inputs."""
    return f"{reduce}:{tag}"


def plan_call(calls: tuple[TracedCall, ...], values: list[list[Any]],
              sources: tuple[tuple[Any, ...] | None, ...]) -> tuple[CallPlan, tuple[Any, ...]]:
    """The plan of a traced function's recorded ``calls`` (with their traced ``values``
    and which of them are the function's arguments), and the outputs it hands out of the
    compiled code: the packed buffer (traced now) first, then the other values."""
    import numpy as np

    slots: list[_Slot] = []
    slot_of: dict[int, int] = {}  # id(value) -> slot: a condition shared by many ops
    to_pack: list[Any] = []
    others: list[Any] = []
    leaf_of: list[list[tuple[bool, int]]] = []
    units: list[_UnitOp | None] = []
    offset = 0
    for call, vals, src in zip(calls, values, sources, strict=True):
        if _unit_able(call, vals):
            mine = []
            for v in vals:
                k = slot_of.get(id(v))
                if k is None:
                    dtype = np.dtype(v.dtype)
                    shape = tuple(int(d) for d in v.shape)
                    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                    k = slot_of[id(v)] = len(slots)
                    slots.append(_Slot(offset, nbytes, dtype, shape))
                    to_pack.append(v)
                    offset += nbytes
                mine.append(k)
            leaf_of.append([(True, k) for k in mine])
            units.append(_UnitOp(call, mine, src))
        else:
            leaf_of.append([(False, len(others) + j) for j in range(len(vals))])
            others.extend(vals)
            units.append(None)
    plan = CallPlan(calls, sources, slots, leaf_of, units)
    leaves = tuple(others) if not to_pack else (_pack(to_pack), *others)
    return plan, leaves


def _pack(values: list[Any]) -> Any:
    # One uint8 vector of the values' bits, traced into the function.
    import jax.numpy as jnp
    from jax import lax

    parts = []
    for v in values:
        x = jnp.asarray(v)
        # A bool's byte is 0 or 1 either way; bit-casting it is not allowed.
        b = (x.astype(jnp.uint8) if x.dtype == jnp.bool_
             else lax.bitcast_convert_type(x, jnp.uint8))
        parts.append(jnp.reshape(b, (-1,)))
    return jnp.concatenate(parts) if len(parts) > 1 else parts[0]


def _unit_able(call: TracedCall, values: list[Any]) -> bool:
    # An op the writer thread can run from packed values with no error the call would
    # raise: a module-level scalar (rank-0 real data) or in-graph bucketed histogram,
    # its name, description, step and condition of kinds it takes.
    if call.target is not None or call.where not in _UNIT_OPS:
        return False
    args = call.arguments
    if args.get("reduce") is not None or args.get("check_finite"):
        return False  # ops._interval keeps state per call
    name = args.get("name")
    if type(name) is not str:
        return False
    try:
        check_tag(name, call.where)
    except (TypeError, ValueError):
        return False
    if args.get("description") is not None and type(args["description"]) is not str:
        return False
    step = args.get("step")
    if step is not None and (type(step) is not int or not _INT64_MIN <= step <= _INT64_MAX):
        return False
    keys = {"data", "step"}
    if call.where == "histogram":
        if tuple(k for k, _ in call.decode) != ("data",):
            return False  # the data leaves whole: bucketed by the device-value path
        if args.get("buckets") is not None and type(args["buckets"]) is not int:
            return False
    elif call.decode:
        return False
    for (key, inner), v in zip(call.positions, values, strict=False):
        if inner is not None or key not in keys or not _packable(v):
            return False
        if key == "step" and (v.shape != () or v.dtype.kind not in "iu"):
            return False
        if key == "data" and call.where == "scalar" and (
            v.shape != () or not _real(v.dtype)
        ):
            return False
    if call.gated:
        gate = values[-1]
        if not _packable(gate) or gate.shape != ():
            return False
    return len(values) == len(call.positions) + call.gated


def _real(dtype: Any) -> bool:
    import numpy as np

    d = np.dtype(dtype)
    return d.kind in "biuf" or is_extended_float(d)


def _packable(v: Any) -> bool:
    import numpy as np

    if not (is_tracer(v) or hasattr(v, "dtype")):
        return False
    try:
        d = np.dtype(v.dtype)
    except TypeError:
        return False
    if not (d.kind in "biuf" or is_extended_float(d)) or d.itemsize not in (1, 2, 4, 8):
        return False
    size = 1
    for n in v.shape:
        size *= int(n)
    return bool(size * d.itemsize <= _PACK_MAX_BYTES)

