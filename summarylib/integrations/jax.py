"""``jit``: ``jax.jit`` whose summary ops write each time the compiled function runs.

summarylib's ops work inside plain ``jax.jit`` (an ordered host callback writes during
each execution); compiling with this ``jit`` instead makes them cheap: the summaries'
values leave the compiled function as extra outputs, still on the device (the small ones
packed into one buffer per call), and are written by the writer thread after the call
(:mod:`summarylib.ops._call_unit`), with no host round trip inside the step and no host
sync on the calling thread; ``scalar(reduce=...)`` accumulators are carried through the
step (one more trace on the first call that finds them)::

    import summarylib as sl
    from summarylib.integrations.jax import jit

    @jit
    def train_step(state, batch, step):
        loss, grads = jax.value_and_grad(loss_fn)(state.params, batch)
        sl.scalar("loss", loss, step=step)
        with sl.record_if(step % 100 == 0):           # a traced condition: no retrace
            sl.histogram("grad_norm", optax.global_norm(grads), step=step)
        return update(state, grads)

    with sl.create_file_writer("logs").as_default():
        for i in range(n):
            state = train_step(state, next(batches), i)

Data contract:

* The writer is the thread's default writer **when the function is called**, not when it
  was traced: a function traced with no writer and called later with one writes to it,
  and one called with no default writer runs a variant compiled without the module-level
  ops' summaries, which computes nothing for them. ``SummaryWriter.add_*`` calls write to
  their own writer, default writer or not. Under a false host ``record_if`` a call runs a
  variant compiled with no summaries at all.
* ``step``: an int, a traced integer, or None for the default step at the call
  (``set_step``); name scopes are those in effect when the function is traced.
* Ops inside ``lax.scan``/``fori_loop``/``while_loop``/``cond`` bodies write once per
  executed iteration through the callback route (their values cannot leave the loop).
* Called while other code is traced or transformed (inside ``jax.jit``, another function
  compiled by this ``jit``, a loop body, ``jax.eval_shape``, ``jax.vmap``, or
  differentiated inside compiled code), the function is traced into that code as if it
  were not decorated: its ops then behave as ops written there directly (the callback
  route inside plain ``jax.jit``, the fast route inside this ``jit``, the ops' TypeError
  under ``vmap``). Differentiated (``jax.grad``, ``jax.value_and_grad``), each evaluation
  writes its forward values.
* ``flush()`` and ``close()`` include every call that returned before them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any, TypeVar, cast

from summarylib.encoding._pending import is_tracer
from summarylib.ops._call_unit import CallPlan, fuse_intervals, plan_call
from summarylib.ops._interval import interval_state
from summarylib.ops._traced import Collector, collecting, differentiating
from summarylib.writer._context import _local, condition_holds, summaries_off

__all__ = ["jit"]

F = TypeVar("F", bound=Callable[..., Any])


class _Collected:
    # The summaries' values of one call: a pytree whose static part (the plan: the
    # recorded calls, which values are packed into one buffer, which are arguments of the
    # function as they are) comes back with every execution of the cached compiled
    # function (ops._call_unit).
    # `state`: the interval accumulators after the call (ops._call_unit.fuse_intervals).
    __slots__ = ("leaves", "plan", "state")

    def __init__(self, plan: CallPlan, leaves: tuple[Any, ...], state: dict[str, Any]) -> None:
        self.plan = plan
        self.leaves = leaves
        self.state = state


# The keyword argument that carries the accumulators of `scalar(reduce=...)` calls into
# the compiled function (taken out before the user's function is called).
_STATE = "_summarylib_intervals"


def _argument_sources(args: tuple[Any, ...], kwargs: dict[str, Any],
                      collector: Collector) -> tuple[tuple[Any, ...] | None, ...]:
    # For each recorded call, the top-level argument each of its values *is* (the step
    # passed as `step=step`), else None; a call with none: None. At a call that passes a
    # host number there, the replay uses that number: no device value to wait for.
    inputs: dict[int, int | str] = {id(a): i for i, a in enumerate(args) if is_tracer(a)}
    inputs.update((id(v), k) for k, v in kwargs.items() if is_tracer(v))
    out: list[tuple[Any, ...] | None] = []
    for values in collector.values:
        found = tuple(inputs.get(id(v)) for v in values)
        out.append(found if any(f is not None for f in found) else None)
    return tuple(out)


def _staged(trace: Any, concrete: tuple[type, ...]) -> bool:
    # Whether the values of `trace` have no numbers yet (staged out by jit, a loop body,
    # eval_shape; batched by vmap): the function's summaries cannot be read after the
    # call there. Differentiation at the top level computes the primal values (they can);
    # a trace JAX may add later counts as staged (inlining works under any trace).
    while not isinstance(trace, concrete):
        if not differentiating(trace):
            return True
        trace = cast(Any, trace).parent_trace
    return False


_registered = False


def _register(jax: Any) -> None:
    global _registered
    if not _registered:
        jax.tree_util.register_pytree_node(
            _Collected,
            lambda c: ((c.leaves, c.state), c.plan),
            lambda plan, children: _Collected(plan, children[0], children[1]),
        )
        _registered = True


def jit(fun: F | None = None, **jit_kwargs: Any) -> Any:
    """Compile ``fun`` with ``jax.jit(fun, **jit_kwargs)``; its summary ops write on each
    call (see the module docstring). Usable as ``@jit`` or ``@jit(static_argnums=...)``.

    Returns a callable with ``fun``'s signature and results.
    """
    if fun is None:
        return partial(jit, **jit_kwargs)
    import jax
    from jax._src import core

    _register(jax)
    concrete = (core.EvalTrace,)

    # wraps(): jax.jit reads fun's signature through __wrapped__, so static_argnames and
    # donate_argnames name fun's parameters.
    @wraps(fun)
    def with_summaries(*args: Any, **kwargs: Any) -> Any:
        state = kwargs.pop(_STATE, None)
        collector = Collector(core.trace_ctx.trace)
        with collecting(collector):
            out = fun(*args, **kwargs)
        calls, values, sources, after, wanted = fuse_intervals(
            tuple(collector.calls), collector.values,
            _argument_sources(args, kwargs, collector), state)
        plan, leaves = plan_call(calls, values, sources)
        plan.intervals = tuple(wanted)
        return out, _Collected(plan, leaves, after)

    @wraps(fun)
    def methods_only(*args: Any, **kwargs: Any) -> Any:
        # No default writer: the module-level ops are no-ops (nothing is computed for
        # them), while SummaryWriter.add_* calls, which name their own writer, collect.
        if _local.state.writer is not None:  # a no-op writer: nothing is asked of the ops
            with summaries_off():
                return with_summaries(*args, **kwargs)
        return with_summaries(*args, **kwargs)

    @wraps(fun)
    def without_summaries(*args: Any, **kwargs: Any) -> Any:
        with summaries_off():  # ops are no-ops: nothing is computed for them
            return fun(*args, **kwargs)

    # Called inside code being traced: `fun` itself, traced into that code (its ops join
    # the surrounding function's), or plain jax.jit where shardings were asked for (kept;
    # its ops then take the callback route).
    nested = (jax.jit(fun, **jit_kwargs)
              if "in_shardings" in jit_kwargs or "out_shardings" in jit_kwargs else fun)
    compiled = jax.jit(with_summaries, **jit_kwargs)
    writer_calls = jax.jit(methods_only, **jit_kwargs)
    plain = jax.jit(without_summaries, **jit_kwargs)

    def variant() -> Any:
        # The compiled variant a call made now runs: plain under a false host record_if
        # (nothing is written), else with every op's summaries if there is a default
        # writer, else with those of the SummaryWriter.add_* calls only.
        st = _local.state
        if st.condition is not True and not condition_holds(st.condition):
            return plain
        writer = st.writer
        if writer is None or writer.events is None:
            return writer_calls
        return compiled

    # The interval accumulators this function carries (key -> (tag, reduce)), learned
    # from its first call that made them (one more trace, then none).
    intervals: dict[str, tuple[str, str]] = {}
    # JAX refuses keyword arguments where in_shardings are given: there, the accumulators
    # stay outside (updated after each call).
    fuse = jit_kwargs.get("in_shardings") is None

    def carried(writer: Any) -> dict[str, Any]:
        # The default writer's accumulators of the tags this function reduces.
        import numpy as np

        state = {}
        for key, (tag, reduce) in intervals.items():
            total, count, nonfinite = interval_state(writer, tag, reduce)
            state[key] = (
                total if isinstance(total, jax.Array) else np.asarray(total, np.float32),
                count if isinstance(count, jax.Array) else np.asarray(count, np.float32),
                nonfinite if isinstance(nonfinite, jax.Array)
                else np.asarray(nonfinite, np.int32))
        return state

    @wraps(fun)
    def call(*args: Any, **kwargs: Any) -> Any:
        trace = core.trace_ctx.trace
        if type(trace) is not core.EvalTrace and _staged(trace, concrete):
            # Inside code being traced: traced into it, its ops as if written there.
            return nested(*args, **kwargs)
        # variant(), inlined: this runs at every step.
        st = _local.state
        cond = st.condition
        if cond is not True and not condition_holds(cond):
            return plain(*args, **kwargs)
        writer = st.writer
        if writer is None or writer.events is None:
            writer = None
            out, collected = writer_calls(*args, **kwargs)
        elif intervals:
            out, collected = compiled(*args, **kwargs, **{_STATE: carried(writer)})
        else:
            out, collected = compiled(*args, **kwargs)
        if collected.state:
            for key, after in collected.state.items():
                interval_state(writer, *intervals[key])[:] = after
        plan = collected.plan
        if plan.intervals and writer is not None and fuse:
            for key, tag, reduce in plan.intervals:
                intervals.setdefault(key, (tag, reduce))
        plan.replay(collected.leaves, writer, st.step, args, kwargs)
        return out

    def lower(*args: Any, **kwargs: Any) -> Any:
        # The variant a call made now would run (``jax.stages.Lowered``).
        chosen = variant()
        writer = _local.state.writer
        if chosen is compiled and intervals:
            return chosen.lower(*args, **kwargs, **{_STATE: carried(writer)})
        return chosen.lower(*args, **kwargs)

    call.lower = lower  # type: ignore[attr-defined]
    return call
