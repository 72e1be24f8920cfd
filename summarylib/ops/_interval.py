"""Interval reductions and the non-finite check of :func:`~summarylib.scalar`.

``scalar(name, data, step, reduce="mean")`` writes, at each step where it is recorded,
the mean (``"max"``, ``"min"``, ``"sum"``, ``"last"``) of ``data`` over every call since
the tag's previous write, the writing call included. ``check_finite=True`` adds a check
that ``data`` was finite at every one of those calls. Neither reads a value on the
calling thread:

* The accumulator of a tag lives with its values: a JAX array on its device (updated by
  one small compiled function per call, dispatched asynchronously), a torch tensor on
  its device (updated by torch ops, which inside ``torch.compile`` run in the
  ``summarylib::summary`` custom op), or numpy for host values and JAX's callback route
  (which brings every value to the host anyway). One accumulator per writer and tag.
  A rank-0 CPU tensor under a host condition is read once and accumulated on Python
  floats rounded to float32 after each operation (:func:`accumulate_cpu_tensor`): the
  numbers the float32 tensor operations give, without a torch operation per call.
* The recording condition decides when the interval ends. A host condition (or none)
  is read at the call; a device condition (``record_if(step % 100 == 0)`` in compiled
  code) selects on the device between keeping the sum and starting again, and crosses
  with the reduced value to the writer thread, as for any gated op. Without any
  condition every call writes, so each interval is one call: the value itself.
* The check counts non-finite values on the device over the interval; the count crosses
  with the written value, and a non-zero count becomes a :class:`~summarylib.errors.
  NonFiniteError` naming the tag and the step on the writer thread, raised by the next
  op, ``flush()`` or ``close()`` (the writer's usual background-error contract). The
  value is still written (NaN and ±inf are kept), so the chart shows it too.

Data contract: ``data`` is a real rank-0 value; the accumulation is float32 for tensors
and device arrays and float64 for other host values; the written value is float32 as for
every scalar.
"""

from __future__ import annotations

import math
import struct
import sys
import weakref
from collections.abc import Callable
from typing import Any

from summarylib.encoding._pending import capture, device_kind, is_tracer, torch_compiling
from summarylib.errors import NonFiniteError
from summarylib.ops._device_step import DeviceStep, defers_device_values
from summarylib.ops._replay import INTERVAL_REPLAY, OPS, TracedCall, replay
from summarylib.ops._resolve import check_tag
from summarylib.writer._batch import Deferred, NotRecorded
from summarylib.writer._context import (
    DeferredCondition,
    _local,
    condition_holds,
    no_default_writer,
)

__all__ = ["REDUCTIONS", "accumulate_cpu_tensor", "append_check", "check_reduce",
           "fused_update", "interval_scalar", "interval_state", "replay_interval"]

#: The values ``scalar``'s ``reduce`` accepts.
REDUCTIONS = ("mean", "max", "min", "sum", "last")
# The accumulator's value before any call of an interval (the reduction's identity).
_START = {"mean": 0.0, "sum": 0.0, "max": float("-inf"), "min": float("inf"), "last": 0.0}
_ARGS = ("name", "data", "step", "description", "reduce", "check_finite")

# writer -> {(tag, reduce): [total, count, non-finite count]}; weakly, as the writer's
# other per-file state.
_STATES: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], list[Any]]] = (
    weakref.WeakKeyDictionary())
# JAX: the compiled update of each (reduce, gated, check), made once.
_JAX_UPDATES: dict[tuple[str, bool], Callable[..., Any]] = {}
# A recorded call with `reduce`/`check_finite` -> the same call writing the reduced value.
_PLAIN: dict[int, tuple[TracedCall, TracedCall]] = {}


def check_reduce(reduce: object, check_finite: object) -> None:
    """Raise ``ValueError``/``TypeError`` naming the argument for a bad ``reduce`` or
    ``check_finite`` of ``scalar``."""
    if reduce is not None and reduce not in REDUCTIONS:
        raise ValueError(f"scalar: 'reduce' must be None or one of {', '.join(REDUCTIONS)}, "
                         f"got {reduce!r}")
    if type(check_finite) is not bool:
        raise TypeError(f"scalar: 'check_finite' must be a bool, got "
                        f"{type(check_finite).__name__}")


def interval_scalar(name: Any, data: Any, step: Any, description: str | None,
                    reduce: str | None, check_finite: bool) -> bool:
    """``scalar`` with ``reduce`` or ``check_finite`` (see the module docstring)."""
    check_reduce(reduce, check_finite)
    st = _local.state
    writer = st.writer
    if writer is None:
        return no_default_writer("scalar")
    args = (name, data, step, description, reduce, check_finite)
    op = OPS["scalar"]
    cond = st.condition
    if torch_compiling():  # one custom op in the graph; accumulated when it runs
        if cond is True or type(cond) is DeferredCondition or condition_holds(cond):
            from summarylib.ops._compiled import record_compiled_torch

            return record_compiled_torch(op, "scalar", _ARGS, args, {})
        return False
    if type(cond) is DeferredCondition or is_tracer(data) or is_tracer(step):
        from summarylib.ops._traced import record_traced

        return record_traced(op, "scalar", args[:4],
                             {"reduce": reduce, "check_finite": check_finite})
    if type(name) is not str or not name:
        name = check_tag(name, "scalar")
    gate = cond is True or condition_holds(cond)  # a host condition: read now
    if step is None:
        step = st.step
    tag = st.scope + name if st.scope else name
    out, bad = _accumulate(writer, tag, reduce, data, gate)
    if not gate:
        return False
    if not check_finite:
        bad = None
    saved = st.condition
    st.condition = True
    try:
        written = bool(op(name, out, step, description))
    finally:
        st.condition = saved
    if written and bad is not None:
        append_check(writer, tag, bad, None, step, reduce)
    return written


def replay_interval(call: TracedCall, values: list[Any], writer: Any, step: Any) -> bool:
    """:func:`~summarylib.ops._replay.replay` for a recorded ``scalar`` call with
    ``reduce`` or ``check_finite``: accumulate this execution's value, then write the
    reduced value under the call's condition."""
    plain, _ = _plain_of(call)
    args = call.arguments
    gate = values[-1] if call.gated else None
    index = next((i for i, (k, _) in enumerate(call.positions) if k == "data"), None)
    data = args["data"] if index is None else values[index]
    if gate is not None and device_kind(gate) is None:
        gate = bool(gate)  # the callback route's and CPU tensors' conditions: host values
    tag = call.scope + args["name"] if call.scope else args["name"]
    out, bad = _accumulate(writer, tag, args["reduce"], data, True if gate is None else gate)
    if gate is False:
        return False
    if not args["check_finite"]:
        bad = None
    row = list(values)
    if index is None:
        plain = _with_data(call, out)
    else:
        row[index] = out
    written = replay(plain, row, writer, step)
    if bad is not None and written:
        run_step = args["step"]
        if run_step is None and "step" in {k for k, _ in call.positions}:
            run_step = values[[k for k, _ in call.positions].index("step")]
        if run_step is None:
            run_step = step if step is not None else _local.state.step
        append_check(writer, tag, bad, gate if device_kind(gate) is not None else None,
                      run_step, args["reduce"])
    return written


def _plain_of(call: TracedCall) -> tuple[TracedCall, TracedCall]:
    found = _PLAIN.get(id(call))
    if found is None or found[1] is not call:
        arguments = dict(call.arguments)
        arguments["reduce"] = None
        arguments["check_finite"] = False
        plain = TracedCall(call.op, call.where, arguments, call.positions, call.gated,
                           call.scope, call.step_arg, None)
        found = (plain, call)  # the call kept too: its id stays its own
        _PLAIN[id(call)] = found
    return found


def _with_data(call: TracedCall, out: Any) -> TracedCall:
    # `data` was a constant of the compiled code: the reduced value goes in as one.
    plain, _ = _plain_of(call)
    arguments = dict(plain.arguments)
    arguments["data"] = out
    return TracedCall(plain.op, plain.where, arguments, plain.positions, plain.gated,
                      plain.scope, plain.step_arg, None)


def _accumulate(writer: Any, tag: str, reduce: str | None, data: Any,
                gate: Any) -> tuple[Any, Any]:
    # Add `data` to the tag's interval: the reduced value over the interval (this call
    # included) and the interval's count of non-finite values, both in data's framework
    # (reduce None: the value and whether it is non-finite). `gate` True/False (host) or
    # a device boolean: where it holds, the interval ends with this call.
    kind = device_kind(data)
    if kind == "jax":
        return _accumulate_jax(writer, tag, reduce, data, gate)
    if type(data).__module__.startswith("torch"):
        return _accumulate_torch(writer, tag, reduce, data, gate)
    np = sys.modules.get("numpy")
    if np is None:
        import numpy as np
    return _accumulate_host(writer, tag, reduce, data, gate, np)


def _state(writer: Any, tag: str, reduce: str, start: Callable[[], list[Any]]) -> list[Any]:
    states = _STATES.get(writer)
    if states is None:
        states = _STATES[writer] = {}
    key = (tag, reduce)
    state = states.get(key)
    if state is None:
        state = states[key] = start()
    return state


def _accumulate_host(writer: Any, tag: str, reduce: str | None, data: Any, gate: Any,
                     np: Any) -> tuple[Any, Any]:
    from summarylib.encoding._arrays import scalar_float

    v = scalar_float(data, "scalar")
    bad = 0 if np.isfinite(v) else 1
    if reduce is None:
        return v, bad
    state = _state(writer, tag, reduce, lambda: [_START[reduce], 0, 0])
    total = _combine(reduce, state[0], v, np.maximum, np.minimum)
    out = total / (state[1] + 1) if reduce == "mean" else total
    nonfinite = state[2] + bad
    if gate:
        state[:] = [_START[reduce], 0, 0]
    else:
        state[:] = [total, state[1] + 1, nonfinite]
    return out, nonfinite


def _combine(reduce: str, total: Any, v: Any, maximum: Any, minimum: Any) -> Any:
    # The interval's running value after `v`, in whatever array library the values are.
    if reduce in ("mean", "sum"):
        return total + v
    if reduce == "max":
        return maximum(total, v)
    if reduce == "min":
        return minimum(total, v)
    return v  # last


_F32 = struct.Struct("<f")
# CPU tensor dtypes whose item() is the value exactly (float64: the value, which _f32
# rounds once to float32 as torch's cast does); int64 only up to 2**53 (checked per call).
# Not float16/bfloat16: torch's cast to float32 gives their NaNs another payload.
_EXACT_DTYPES: set[Any] = set()


def _f32(x: float) -> float:
    # x rounded to float32 (round to nearest even, as the CPU's float32 arithmetic): the
    # sum, quotient... of two float32 values computed in float64 and rounded once more
    # is the float32 operation's result (53 >= 2 * 24 + 2 bits).
    try:
        return _F32.unpack(_F32.pack(x))[0]  # type: ignore[no-any-return]
    except OverflowError:  # rounds beyond float32's largest: infinite, as torch's float32
        return math.copysign(math.inf, x)


def accumulate_cpu_tensor(writer: Any, tag: str, reduce: str | None, data: Any,
                          gate: bool) -> tuple[float, int] | None:
    """:func:`_accumulate_torch` for a rank-0 CPU tensor under a host condition, without
    a torch operation: the value read once (``item()``) and the float32 arithmetic of
    the tensors done on Python floats rounded to float32, the same numbers (NaN and
    signed zeros as torch's ``maximum``/``minimum`` pick them). The accumulator is kept
    as Python numbers (the float32 values and the count). None, with nothing changed,
    for other tensors or an accumulator of another kind (that path keeps its own).
    """
    if not _EXACT_DTYPES:
        torch = sys.modules["torch"]
        _EXACT_DTYPES.update((torch.float32, torch.float64, torch.int32, torch.int16,
                              torch.int8, torch.uint8, torch.bool, torch.int64))
    if not data.is_cpu or data.dim() or data.dtype not in _EXACT_DTYPES:
        return None
    v = data.item()
    if type(v) is not float:
        if type(v) is int and -(2 ** 53) <= v <= 2 ** 53:
            v = float(v)
        elif type(v) is bool:
            v = 1.0 if v else 0.0
        else:
            return None
    v = _f32(v)
    bad = 0 if math.isfinite(v) else 1
    if reduce is None:
        return v, bad
    states = _STATES.get(writer)
    if states is None:
        states = _STATES[writer] = {}
    key = (tag, reduce)
    state = states.get(key)
    start = _START[reduce]
    if state is None:
        state = states[key] = [start, 0.0, 0]
    elif type(state[0]) is not float or type(state[1]) is not float:
        return None  # tensors, numpy or a host count: their own path
    total = state[0]
    if reduce == "mean" or reduce == "sum":
        total = _f32(v + total)  # of two NaNs, torch keeps the added one
    elif reduce == "max":  # torch.maximum: its own NaN if either is one, else the first
        total = math.nan if total != total or v != v else v if total < v else total
    elif reduce == "min":  # of equal values (of -0.0 and 0.0)
        total = math.nan if total != total or v != v else v if v < total else total
    else:
        total = v
    count = _f32(state[1] + 1.0)
    out = _f32(total / count) if reduce == "mean" else total
    nonfinite = state[2] + bad
    if gate:
        state[:] = [start, 0.0, 0]
    else:
        state[:] = [total, count, nonfinite]
    return out, nonfinite


def _accumulate_torch(writer: Any, tag: str, reduce: str | None, data: Any,
                      gate: Any) -> tuple[Any, Any]:
    if gate is True or gate is False:
        found = accumulate_cpu_tensor(writer, tag, reduce, data, gate)
        if found is not None:
            return found
    import torch

    with torch.no_grad():
        v = data.detach().to(torch.float32)
        bad = (~torch.isfinite(v)).to(torch.int32)
        if reduce is None:
            return v, bad
        if reduce == "last":  # kept past this call: a copy (compiled code reuses buffers)
            v = v.clone()
        device = v.device

        def start() -> list[Any]:
            return [torch.full((), _START[reduce], dtype=torch.float32, device=device),
                    torch.zeros((), dtype=torch.float32, device=device),
                    torch.zeros((), dtype=torch.int32, device=device)]

        state = _state(writer, tag, reduce, start)
        if type(state[1]) is float:  # kept as numbers by accumulate_cpu_tensor
            state[:] = [torch.tensor(state[0], dtype=torch.float32, device=device),
                        torch.tensor(state[1], dtype=torch.float32, device=device),
                        torch.tensor(state[2], dtype=torch.int32, device=device)]
        total = _combine(reduce, state[0], v, torch.maximum, torch.minimum)
        count = state[1] + 1
        out = total / count if reduce == "mean" else total
        nonfinite = state[2] + bad
        if gate is True:
            # Fresh tensors, never an in-place reset: the total may be the caller's own
            # tensor ("last"), and the written value may still be on its way to the host.
            state[:] = start()
        elif gate is False:
            state[:] = [total, count, nonfinite]
        else:  # a device condition: chosen on the device
            g = gate.to(device=device, dtype=torch.bool)
            state[:] = [torch.where(g, torch.full_like(total, _START[reduce]), total),
                        torch.where(g, torch.zeros_like(count), count),
                        torch.where(g, torch.zeros_like(nonfinite), nonfinite)]
        return out, nonfinite


def _accumulate_jax(writer: Any, tag: str, reduce: str | None, data: Any,
                    gate: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp
    import numpy as np

    if reduce is None:
        return data, _jax_update("bad", False)(data)
    state = _state(writer, tag, reduce, lambda: [
        np.float32(_START[reduce]), np.float32(0), np.int32(0)])
    if gate is True or gate is False:
        update = _jax_update(reduce, False)
        total, count, nonfinite, out = update(*state, data)
        state[:] = ([np.float32(_START[reduce]), np.float32(0), np.int32(0)] if gate
                    else [total, count, nonfinite])
    else:
        update = _jax_update(reduce, True)
        total, count, nonfinite, out, bad = update(*state, data, jnp.asarray(gate))
        state[:] = [total, count, nonfinite]
        nonfinite = bad
    return out, nonfinite


def interval_state(writer: Any, tag: str, reduce: str) -> list[Any]:
    """The accumulator ``[total, count, non-finite count]`` of ``tag``'s ``reduce`` on
    ``writer`` (shared by every call of the tag: eager, compiled, fused); a new one holds
    the reduction's start as float32/int32 numpy scalars. Replace its items to update it."""
    import numpy as np

    return _state(writer, tag, reduce, lambda: [
        np.float32(_START[reduce]), np.float32(0), np.int32(0)])


def fused_update(reduce: str, state: tuple[Any, Any, Any], data: Any,
                 gate: Any) -> tuple[tuple[Any, Any, Any], Any]:
    """The accumulator's update as JAX operations, traced into the compiled step itself:
    ``(new state, reduced value)`` for ``data`` added to ``state`` (see
    :func:`interval_state`). ``gate`` is the traced ``record_if`` condition, or None where
    every call writes (each interval is then one call). The same operations as the
    update dispatched after a call (:func:`_jax_update`), so the same numbers."""
    import jax.numpy as jnp

    total, count, nonfinite = state
    v = data.astype(jnp.float32)
    total = _combine(reduce, total, v, jnp.maximum, jnp.minimum)
    count = count + 1
    out = total / count if reduce == "mean" else total
    nonfinite = nonfinite + (~jnp.isfinite(v)).astype(jnp.int32)
    start = jnp.float32(_START[reduce])
    if gate is None:
        return (start, jnp.float32(0), jnp.int32(0)), out
    g = jnp.asarray(gate)
    return (jnp.where(g, start, total), jnp.where(g, 0.0, count), jnp.where(g, 0, nonfinite)), out


def _jax_update(reduce: str, gated: bool) -> Callable[..., Any]:
    # One compiled function per reduction: a call is one asynchronous dispatch.
    key = (reduce, gated)
    update = _JAX_UPDATES.get(key)
    if update is not None:
        return update
    import jax
    import jax.numpy as jnp

    if reduce == "bad":
        def count_bad(v: Any) -> Any:
            return (~jnp.isfinite(v)).astype(jnp.int32)

        update = jax.jit(count_bad)
    else:
        start = _START[reduce]

        def step(total: Any, count: Any, nonfinite: Any, v: Any, *gate: Any) -> Any:
            v = v.astype(jnp.float32)
            total = _combine(reduce, total, v, jnp.maximum, jnp.minimum)
            count = count + 1
            out = total / count if reduce == "mean" else total
            nonfinite = nonfinite + (~jnp.isfinite(v)).astype(jnp.int32)
            if not gate:
                return total, count, nonfinite, out
            g = gate[0]
            return (jnp.where(g, jnp.float32(start), total), jnp.where(g, 0.0, count),
                    jnp.where(g, 0, nonfinite), out, nonfinite)

        update = jax.jit(step)
    _JAX_UPDATES[key] = update
    return update


def append_check(writer: Any, tag: str, bad: Any, gate: Any, step: Any,
                 reduce: str | None) -> None:
    """Queue the non-finite check of a written value: an event that writes nothing; on
    the writer thread it reads ``bad`` (the interval's count of non-finite values) and
    ``gate`` (a device condition, or None) and raises :class:`NonFiniteError` naming
    ``tag`` and ``step`` if the count is not zero."""
    from summarylib.ops._replay import _step_of

    res = writer.events
    if res is None:
        return
    read_bad = _reader(bad, writer)
    read_gate = None if gate is None else _reader(gate, writer)
    where = "scalar"
    run_step = _step_of(step, where)
    over = "" if reduce is None else f" (one of the values of {reduce!r} since its last write)"

    def make() -> bytes:
        if read_gate is not None and not read_gate():
            raise NotRecorded
        if not read_bad():
            raise NotRecorded
        at = run_step.value() if isinstance(run_step, DeviceStep) else run_step
        raise NonFiniteError(tag, at, f"scalar: {tag!r} is not finite (NaN or ±inf) at step "
                                      f"{at}{over}")

    res.append(Deferred(make, 16, f"the finite check of {tag!r}"))


def _reader(value: Any, writer: Any) -> Callable[[], Any]:
    if device_kind(value) is not None and defers_device_values(writer):
        pending = capture(value)
        if pending is not None:
            return lambda: bool(pending.result())
    now = bool(value)
    return lambda: now


INTERVAL_REPLAY.append(replay_interval)
