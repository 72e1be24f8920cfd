"""Ops called inside compiled JAX code: recorded when traced, written when executed.

Inside ``jax.jit`` an op's values are tracers: they have a shape and a dtype but no
numbers until the compiled function runs, every time it runs. An op that sees one (or
whose thread's recording condition is a :class:`~summarylib.writer._context.
DeferredCondition`) does not write: it records a :class:`TracedCall` (the op, its
arguments with the traced values taken out, the name scope) and hands the traced
values to one of two routes, both of which write *each time the compiled code
executes*, with that execution's values:

* **Collected** (the fast route): inside a function compiled by
  :func:`summarylib.integrations.jax.jit`, the values become extra outputs of the
  compiled function. After each call the wrapper replays the recorded calls with the
  output arrays, which are still computing (no host sync): the small values of
  ``scalar`` and in-graph bucketed ``histogram`` calls arrive packed in one buffer and
  those ops are written by the writer thread as one unit
  (:mod:`summarylib.ops._call_unit`); the others take the ordinary device-value path on
  the caller's thread.
* **Called back** (the route that works anywhere): in plain ``jax.jit`` and in the
  bodies of ``lax.scan``, ``fori_loop``, ``while_loop`` and ``cond`` (whose values cannot
  leave their loop), an ordered ``jax.experimental.io_callback`` runs the replay on the
  host during the execution, once per executed iteration.

A ``record_if`` on a traced boolean gates the events: the condition crosses with the
values and is read on the writer thread (:class:`~summarylib.ops._device_step.
GatedStep`), or by the callback. Under ``jax.grad`` (and ``jvp``, ``linearize``) an op
writes the forward values (they leave through ``stop_gradient``); under ``vmap`` and
transformations like it an op raises ``TypeError`` naming itself: call it on the
transformation's results.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from summarylib.encoding._pending import is_tracer
from summarylib.ops._replay import IN_GRAPH, TracedCall, replay
from summarylib.writer._context import FLUSH_BARRIERS, DeferredCondition, _local

__all__ = ["Collector", "collecting", "differentiating", "record_traced"]

class _Tracing(threading.local):
    # The collectors of the compiled functions this thread is tracing (innermost last):
    # per thread, as JAX's traces are, so that two threads tracing at once each record
    # into their own function.
    def __init__(self) -> None:
        self.collectors: list[Collector] = []


_TRACING = _Tracing()


class Collector:
    """The calls recorded while one compiled function is traced, and their values.

    ``trace`` is JAX's trace of the function's body: values of that trace can be
    returned as outputs; values of a nested trace (a loop body) cannot, and take the
    callback route.
    """

    __slots__ = ("calls", "trace", "values")

    def __init__(self, trace: Any) -> None:
        self.trace = trace
        self.calls: list[TracedCall] = []
        self.values: list[list[Any]] = []


class collecting:  # a context manager, used as `with collecting(c):`
    """Inside the block, this thread's ops record into ``collector`` and no op writes."""

    __slots__ = ("_collector", "_saved")

    def __init__(self, collector: Collector) -> None:
        self._collector = collector

    def __enter__(self) -> Collector:
        st = _local.state
        self._saved = st.condition
        st.condition = DeferredCondition(None)
        _TRACING.collectors.append(self._collector)
        return self._collector

    def __exit__(self, *exc: object) -> None:
        _TRACING.collectors.pop()
        _local.state.condition = self._saved


def record_traced(
    op: Callable[..., Any], where: str, args: tuple[Any, ...], kwargs: Mapping[str, Any],
    target: str | None = None,
) -> bool:
    """Record ``op(*args, **kwargs)`` into the code being traced; True (it will write
    each time the code executes, where its condition holds).

    ``target``: the key of the writer a ``SummaryWriter.add_*`` call writes to
    (:mod:`summarylib.ops._writer_methods`); None for a module-level op.

    Raises:
      TypeError: a value of ``vmap`` or a transformation like it, or arguments ``op``
        does not take (named as the op names them).
    """
    import inspect

    import jax

    st = _local.state
    try:
        bound = inspect.signature(op).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{where}: {e}") from None
    # Under jax.grad (and jvp, linearize) the op writes the forward values, as a summary
    # inside tf.GradientTape does: no derivative flows through a summary.
    arguments = _forward_values(dict(bound.arguments), jax)
    step_arg = "global_step" if "global_step" in inspect.signature(op).parameters else "step"
    cond = st.condition
    gate = cond.value if type(cond) is DeferredCondition else None
    if gate is not None and differentiating(gate):
        gate = jax.lax.stop_gradient(gate)
    decode: tuple[tuple[str, Callable[[Any], Any]], ...] = ()
    in_graph = IN_GRAPH.get(where)
    if in_graph is not None:
        _check_traced(list(arguments.values()), where, arguments, jax)
        reduced = in_graph.reduce(arguments, gate, "jax")
        if reduced is not None:  # only the reduction leaves the compiled code
            key, value, wrap = reduced
            arguments[key] = value
            decode = ((key, wrap),)
    values: list[Any] = []
    positions: list[tuple[str, int | str | None]] = []
    for key, value in arguments.items():
        if _is_value(value, jax):
            positions.append((key, None))
            values.append(value)
            arguments[key] = None
        elif isinstance(value, Mapping) and any(_is_value(v, jax) for v in value.values()):
            inner = dict(value)
            for k, v in value.items():
                if _is_value(v, jax):
                    positions.append((key, k))
                    values.append(v)
                    inner[k] = None
            arguments[key] = inner
    if gate is not None:
        values.append(gate)
    _check_traced(values, where, arguments, jax)
    call = TracedCall(op, where, arguments, positions, gate is not None, st.scope, step_arg,
                      st, decode, target)
    collectors = _TRACING.collectors
    collector = collectors[-1] if collectors else None
    if collector is not None and _in_trace(values, collector):
        collector.calls.append(call)
        collector.values.append(values)
        return True
    from jax.experimental import io_callback

    # Ordered: the events of one execution keep their order, and an iteration's
    # events come before the next iteration's.
    io_callback(partial(_replay_on_host, call), None, *values, ordered=True)
    _REPLAYER.start()  # here, not in a callback: a thread inherits its maker's float flags
    if _effects_barrier not in FLUSH_BARRIERS:
        FLUSH_BARRIERS.append(_effects_barrier)
    return True


def _effects_barrier() -> BaseException | None:
    # A writer's flush() and close() wait for the callbacks of code dispatched before
    # them (the call that dispatched it returned before they ran), then for the replays
    # the callbacks handed over; the first error a replay raised since the last barrier
    # is returned, for the flush or close to raise.
    if threading.current_thread() is _REPLAYER.thread:
        return None  # a replay that flushes: it cannot wait for itself
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            jax.effects_barrier()
        except Exception:  # JAX torn down at interpreter exit: nothing to wait for
            return None
    return _REPLAYER.drain()


class _Replayer:
    """The thread that runs the callback route's replays, in the order the callbacks ran.

    A callback runs on one of XLA's threads, where the CPU treats subnormal float inputs
    as zero (XLA sets the flags for its own arithmetic): a float32 1e-40 converted there
    becomes 0.0. So the callback only copies the values (bytes, no float operation) and
    hands them here; the op converts them on this ordinary thread, as the eager call
    would.
    """

    def __init__(self) -> None:
        import queue

        self.queue: queue.Queue[tuple[TracedCall, list[Any], Any, Any] | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()

    def start(self) -> None:
        """Start the thread if it is not running. Called when code is traced: a thread
        starts with the floating-point flags of the thread that starts it, and a
        callback's thread has XLA's (only a forked child, whose thread is gone, starts
        one from a callback)."""
        thread = self.thread
        if thread is None or not thread.is_alive():
            with self.lock:
                if self.thread is None or not self.thread.is_alive():
                    import queue

                    self.queue = queue.Queue()
                    self.thread = threading.Thread(target=self._run, daemon=True,
                                                   name="summarylib-replay")
                    self.thread.start()

    def put(self, item: tuple[TracedCall, list[Any], Any, Any]) -> None:
        self.start()
        self.queue.put(item)

    def _run(self) -> None:
        q = self.queue
        while True:
            item = q.get()
            try:
                if item is not None:
                    replay(*item)
            except BaseException as e:
                self.errors.append(e)
            finally:
                q.task_done()

    def drain(self) -> BaseException | None:
        if self.thread is not None and self.thread.is_alive():
            self.queue.join()
        return self.errors.pop(0) if self.errors else None


_REPLAYER = _Replayer()


def _is_value(value: object, jax: Any) -> bool:
    return is_tracer(value) or isinstance(value, jax.Array)


def _check_traced(values: list[Any], where: str, arguments: Mapping[str, Any], jax: Any) -> None:
    from jax._src.interpreters.partial_eval import DynamicJaxprTracer

    for v in values:
        if is_tracer(v) and not isinstance(v, DynamicJaxprTracer):
            name = arguments.get("name", arguments.get("tag"))
            raise TypeError(
                f"{where}: cannot write the summary {name!r} from inside jax.vmap or another "
                f"transformation that runs a function on many values at once (got a "
                f"{type(v).__name__}): call {where} on the transformation's results, outside "
                "it (inside jax.jit and under jax.grad is fine)"
            )


def _differentiation_types() -> tuple[type, ...]:
    try:
        from jax._src.interpreters import ad
    except ImportError:  # another JAX: no value is taken for its forward value
        return ()
    return tuple(t for t in (getattr(ad, "JVPTracer", None), getattr(ad, "LinearizeTracer", None),
                             getattr(ad, "JVPTrace", None), getattr(ad, "LinearizeTrace", None))
                 if t is not None)


def differentiating(value: object) -> bool:
    """Whether ``value`` is a value (or a trace) of JAX's forward- or reverse-mode
    differentiation (``jax.grad``, ``jvp``, ``linearize``)."""
    return isinstance(value, _differentiation_types())


def _forward_values(arguments: dict[str, Any], jax: Any) -> dict[str, Any]:
    # Each value of differentiation replaced by its forward value (stop_gradient: a
    # value of the trace below, concrete under jax.grad at the top level).
    for key, value in arguments.items():
        if differentiating(value):
            arguments[key] = jax.lax.stop_gradient(value)
        elif isinstance(value, Mapping) and any(map(differentiating, value.values())):
            arguments[key] = {k: jax.lax.stop_gradient(v) if differentiating(v) else v
                              for k, v in value.items()}
    return arguments


def _in_trace(values: list[Any], collector: Collector) -> bool:
    # Values of the collector's own trace (not of a loop body traced inside it), called
    # in that trace or under differentiation inside it (forward values: see above).
    try:
        from jax._src import core

        current = core.trace_ctx.trace
    except (ImportError, AttributeError):  # another JAX: the callback route always works
        return False
    while current is not collector.trace:
        if not differentiating(current):
            return False
        current = current.parent_trace
    return all(getattr(v, "_trace", collector.trace) is collector.trace for v in values
               if is_tracer(v))


def _replay_on_host(call: TracedCall, *values: Any) -> None:
    # The callback route, during the execution: on the host, with numpy values. The writer
    # is the default of the thread that runs the callback (JAX's CPU client runs ordered
    # callbacks on the dispatching thread when it executes the code there), else the
    # default *now* of the thread that traced the code: for code called by the thread that
    # traced it, the default at the call, which the call's thread keeps until the callbacks
    # ran (leaving as_default() waits for them). Not the writer of the trace: a function
    # traced under one writer and called under the next would write to the first.
    # A SummaryWriter.add_* call (call.target) writes to its own writer: replay finds it.
    st = _local.state
    writer, step = st.writer, st.step
    if writer is None and call.target is None:
        tracing = None if call.tracing_state is None else call.tracing_state()
        if tracing is None:
            return
        writer, step = tracing.writer, tracing.step  # its default step too
        if writer is None or getattr(writer, "closed", False):
            return
    # Copies (XLA reuses the buffers once the callback returns), of the bytes: numpy's
    # view of the buffer, then numpy's copy (a JAX array's own copy runs on XLA's CPU
    # backend, whose arithmetic flushes subnormal floats to zero).
    np = sys.modules["numpy"]
    _REPLAYER.put((call, [np.asarray(v).copy() for v in values], writer, step))
