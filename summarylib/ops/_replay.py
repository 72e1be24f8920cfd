"""A summary op call recorded in compiled code, and its replay when the code runs.

Both compiled-code routes (JAX: :mod:`summarylib.ops._traced`; torch.compile:
:mod:`summarylib.ops._compiled_torch`) record a :class:`TracedCall` when they trace an op
and :func:`replay` it with each execution's values.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from summarylib.encoding._pending import capture, device_kind, own_arrays, restore_own_arrays
from summarylib.ops._device_step import DeviceStep, GatedStep, defers_device_values, device_step
from summarylib.writer._context import DefaultWriter, State, _local
from summarylib.writer._registry import registered_writer

__all__ = ["COMPILED_PLANS", "INTERVAL_REPLAY", "IN_GRAPH", "OPS", "InGraphReduction",
           "TracedCall", "replay"]

# The module-level ops by name, for calls recorded in a torch graph (which holds the name).
OPS: dict[str, Callable[..., Any]] = {}
# The replay of a scalar call that reduces over an interval or checks for non-finite
# values: ops._interval's, put here when that module is imported (with the ops).
INTERVAL_REPLAY: list[Callable[[Any, list[Any], Any, Any], bool]] = []


class InGraphReduction(NamedTuple):
    """How an op reduces a value inside the compiled code, so only the reduction leaves it
    (a histogram's bucket table instead of its data). Registered in :data:`IN_GRAPH` by
    the op's module.

    ``reduce(arguments, gate, framework)`` runs while the compiled code is traced, with
    the call's arguments by name (traced values included), the traced ``record_if``
    condition (or None) and ``"jax"`` or ``"torch"``; it returns ``(argument name, the
    traced reduction, wrap)`` or None (the value leaves whole). ``wrap`` makes what the
    op receives at each execution from the reduction's value (``torch_wrap`` for torch,
    whose graph holds no Python objects).
    """

    reduce: Callable[[dict[str, Any], Any, str], tuple[str, Any, Callable[[Any], Any]] | None]
    torch_wrap: Callable[[Any], Any]


#: The ops that reduce inside compiled code, by op name.
IN_GRAPH: dict[str, InGraphReduction] = {}

#: Ops that write a call recorded inside ``torch.compile`` with less work than
#: :func:`replay`, by op name (put here by the op's module):
#: ``plan(arguments, tensor names, scope, gated)`` returns None or
#: ``write(values, writer)``, which returns None for values it leaves to :func:`replay`
#: (having changed nothing). ``writer`` is the default writer (None for a
#: ``SummaryWriter.add_*`` call, whose plan finds its own).
COMPILED_PLANS: dict[str, Callable[..., Any]] = {}


class TracedCall:
    """One op call recorded while tracing: everything but its traced values.

    ``arguments`` are the call's arguments by name, with None where ``positions`` say a
    traced value goes (in ``values`` order); ``gated`` says the last value is the
    ``record_if`` condition; ``scope`` is the name scope in effect when traced (as in
    TensorFlow, the scope is part of the traced code); ``decode`` names the arguments
    whose value is a reduction computed in the compiled code (:class:`InGraphReduction`)
    and how to wrap it for the op. ``target`` is the key of the writer a
    ``SummaryWriter.add_*`` call writes to (:mod:`summarylib.writer._registry`), None for
    a module-level op (which writes to the default writer).
    """

    __slots__ = ("arguments", "decode", "gated", "op", "positions", "scope", "step_arg",
                 "target", "tracing_state", "where")

    def __init__(
        self, op: Callable[..., Any], where: str, arguments: dict[str, Any],
        positions: list[tuple[str, int | str | None]], gated: bool, scope: str,
        step_arg: str, tracing_state: State | None,
        decode: tuple[tuple[str, Callable[[Any], Any]], ...] = (), target: str | None = None,
    ) -> None:
        self.decode = decode
        self.op = op
        self.where = where
        self.arguments = arguments
        self.positions = positions
        self.gated = gated
        self.scope = scope
        self.step_arg = step_arg
        self.target = target
        # The context of the thread that traced the call: its default writer *now* is the
        # one a callback running on another thread writes to. Weakly: compiled code (and
        # JAX's caches of it) can outlive the thread.
        self.tracing_state = None if tracing_state is None else weakref.ref(tracing_state)


def replay(call: TracedCall, values: list[Any], writer: DefaultWriter | None, step: Any) -> bool:
    """Write ``call`` with ``values`` (device arrays or numpy) to ``writer``; a
    ``SummaryWriter.add_*`` call to its own writer instead (nothing, and False, once that
    writer is collected or closed: compiled code can outlive it, and raising inside it
    would stop the user's step for a log line).

    ``step`` is the default step when the compiled code was called (None: none). Runs on
    the caller's thread; device values are captured, not read (unless the writer was made
    with ``sync_device_values=True``), and a ``record_if`` condition is read with them on
    the writer thread.
    """
    if call.target is not None:
        writer = registered_writer(call.target)
        if writer is None or writer.closed:
            return False
    elif writer is None:
        return False
    # The values are the compiled code's outputs, which no user code holds (so none can
    # donate them): the ops keep them without a protective copy.
    token = own_arrays(values)
    try:
        return _write_call(call, values, writer, step)
    finally:
        restore_own_arrays(token)


def _write_call(call: TracedCall, values: list[Any], writer: DefaultWriter, step: Any) -> bool:
    arguments = call.arguments
    if arguments.get("reduce") is not None or arguments.get("check_finite"):
        # scalar(reduce=, check_finite=): ops._interval, registered when it is imported
        # (it builds on this module, so this module does not import it).
        return INTERVAL_REPLAY[0](call, values, writer, step)
    if call.gated and device_kind(values[-1]) is None and not bool(values[-1]):
        return False  # a host condition (a callback's, a CPU tensor's) that is false
    arguments = dict(call.arguments)
    for (key, inner), value in zip(call.positions, values, strict=False):
        if inner is None:
            arguments[key] = value
        else:
            arguments[key] = dict(arguments[key])
            arguments[key][inner] = value
    for key, wrap in call.decode:
        arguments[key] = wrap(arguments[key])
    st = _local.state
    saved = (st.writer, st.step, st.condition, st.scope)
    st.writer, st.condition, st.scope = writer, True, call.scope
    if step is not None:
        st.step = step
    try:
        if call.gated:
            gate = values[-1]
            run_step = arguments.get(call.step_arg)
            if run_step is None:
                run_step = st.step
                if run_step is None and call.target is not None:
                    run_step = 0  # SummaryWriter.add_*: torch's step when none is set
            if not defers_device_values(writer) or device_kind(gate) is None:
                if not bool(gate):  # host values (the callback route), or a synchronous writer
                    return False
            else:
                pending = capture(gate)
                if pending is not None:
                    arguments[call.step_arg] = GatedStep(_step_of(run_step, call.where), pending,
                                                         call.where)
                elif not bool(gate):
                    return False
        return bool(call.op(**arguments))
    finally:
        st.writer, st.step, st.condition, st.scope = saved


def _step_of(step: Any, where: str) -> int | DeviceStep:
    from summarylib.ops._resolve import resolve_step

    if step is not None and type(step) is not int:
        dstep = device_step(step, where)
        if dstep is not None:
            return dstep
    return resolve_step(step, None, where)


