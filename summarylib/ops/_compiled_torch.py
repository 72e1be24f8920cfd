"""Ops called inside ``torch.compile``: one custom op in the graph, written when it runs.

While dynamo traces a compiled region, an op called on tensors does not read them (an
``item()`` would break the graph): it registers the call once (the op, its arguments
other than tensors, the name scope; :func:`_register` runs outside the trace, its result
a constant of the graph) and puts one ``summarylib::summary`` custom op into the graph,
taking the call's number and its tensors. The custom op mutates a one-element token
tensor, so no backend (``aot_eager``, ``inductor``) removes it as dead code, and it
returns nothing, so nothing waits for it. When the compiled code runs, its implementation
replays the call (:func:`summarylib.ops._traced.replay`) to the default writer of the
calling thread at that moment, with that run's tensors: CPU tensors are read then (no
device sync exists on the CPU), CUDA tensors take the device-value path (copied in stream
order, read on the writer thread).

Imported only once torch is (by an op that finds dynamo tracing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from summarylib.ops._replay import COMPILED_PLANS, IN_GRAPH, OPS, TracedCall, replay
from summarylib.writer._context import DeferredCondition, _local

__all__ = ["record_compiled"]

# Calls registered while tracing, by number (the graph holds the number), each with
# whether a false host condition ends it before replay (not for scalar(reduce=,
# check_finite=), whose replay updates its running values whatever the condition), and
# the op's own plan for writing it, if it has one (ops._replay.COMPILED_PLANS).
_CALLS: list[tuple[TracedCall, bool, Callable[[list[Any], Any], bool | None] | None]] = []
_IDS: dict[Any, int] = {}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# Mutated by every summary op in a graph, so that no backend drops the op as dead code.
_TOKEN = torch.zeros(1)


# Not capturable in a CUDA graph: it runs Python (the replay) each time it runs, and a
# graph replays only the kernels recorded. With the tag, inductor's CUDA graphs
# (mode="reduce-overhead") partition the region around the op instead of recording it.
_TAGS = (torch.Tag.cudagraph_unsafe,) if hasattr(torch.Tag, "cudagraph_unsafe") else ()


# Defined with ``torch.library.Library`` rather than ``torch.library.custom_op``: the
# latter's Python autograd, ADInplaceOrView and default-filling layers cost several times
# the replay itself at every call (the op has no outputs to differentiate, and nothing
# reads the token's version). Kept alive with the module: the definition lives as long as
# this object.
_LIB = torch.library.Library("summarylib", "DEF")  # type: ignore[no-untyped-call]
_LIB.define("summary(Tensor(a!) token, int call, Tensor[] values) -> ()",  # type: ignore[no-untyped-call]
            tags=_TAGS)


def _summary(token: torch.Tensor, call: int, values: list[torch.Tensor]) -> None:
    traced, gate_first, direct = _CALLS[call]
    if gate_first:
        gate = values[-1]
        if gate.is_cpu and not gate:
            return  # a false CPU condition: nothing to read or write (as replay decides)
    if traced.target is not None:  # SummaryWriter.add_*: its own writer, found by replay
        if direct is None or direct(values, None) is None:
            replay(traced, values, None, None)
        return
    writer = _local.state.writer
    if writer is None or writer.events is None:
        return  # no default writer when the compiled code runs: nothing written
    if direct is not None and direct(values, writer) is not None:
        return
    replay(traced, values, writer, None)


# Every backend (CPU, CUDA, ...). No autograd kernel: the dispatcher's own (C++) autograd
# fallback passes the call on, as the op has no outputs to differentiate.
_LIB.impl("summary", _summary, "CompositeExplicitAutograd")  # type: ignore[no-untyped-call]


@torch.library.register_fake("summarylib::summary", lib=_LIB)  # type: ignore[untyped-decorator]
def _summary_fake(token: torch.Tensor, call: int, values: list[torch.Tensor]) -> None:
    return None


@torch._dynamo.assume_constant_result  # type: ignore[untyped-decorator]
def _register(where: str, scope: str, static: tuple[tuple[str, Any], ...],
              tensors: tuple[tuple[str, str | None], ...], maps: tuple[str, ...],
              gated: bool, reduced: tuple[str, ...]) -> int:
    # Runs when traced, outside the trace: the graph keeps the number it returns. ``maps``
    # names the dict arguments, given as their items (tensors taken out: None).
    key: tuple[Any, ...] | None = (where, scope, static, tensors, maps, gated, reduced)
    try:
        found = _IDS.get(key)
    except TypeError:  # a list or dict among the constants (add_embedding's metadata)
        key = None
        found = None
    if found is not None:
        return found
    op = OPS[where]
    arguments: dict[str, Any] = dict(static)
    for name in maps:
        arguments[name] = dict(arguments[name])
    for name, inner in tensors:
        if inner is None:
            arguments[name] = None
    step_arg = "global_step" if "global_step" in arguments else "step"
    decode = tuple((name, IN_GRAPH[where].torch_wrap) for name in reduced)
    # SummaryWriter.add_*: the call's first argument is its writer's key.
    target = arguments["self"] if getattr(op, "writer_method", False) else None
    call = TracedCall(op, where, arguments, list(tensors), gated, scope, step_arg, None,
                      decode, target)
    interval = arguments.get("reduce") is not None or bool(arguments.get("check_finite"))
    direct = None
    plan = COMPILED_PLANS.get(where)
    if plan is not None and all(inner is None for _, inner in tensors):
        direct = plan(arguments, tuple(name for name, _ in tensors), scope, gated)
    _CALLS.append((call, gated and not interval, direct))
    if key is not None:
        _IDS[key] = len(_CALLS) - 1
    return len(_CALLS) - 1


def record_compiled(op: Any, where: str, names: tuple[str, ...], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> bool:
    """Put ``op(*args, **kwargs)`` into the graph dynamo is tracing (see the module).

    ``names`` are ``op``'s parameter names in order. A tensor argument, or a tensor value
    of a dict argument (``scalars``' and ``add_scalars``' dicts), goes into the graph;
    everything else is a constant of the call. Traced by dynamo: plain Python on
    constants and tensors only.
    """
    st = _local.state
    static: list[tuple[str, Any]] = []
    tensor_names: list[tuple[str, str | None]] = []
    values: list[torch.Tensor] = []
    maps: list[str] = []
    given = dict(zip(names, args, strict=False))
    given.update(kwargs)
    # An int step enters the graph as a tensor: a Python int argument of the region that
    # changes between calls becomes dynamic (a symbolic int) once dynamo recompiles, and
    # a symbolic int cannot be a constant of the call (dynamo has no type test for it:
    # under tracing it is an int). The op reads the tensor when it runs, as a tensor step.
    step_name = "global_step" if "global_step" in names else "step"
    step = given.get(step_name)
    if type(step) is int and _INT64_MIN <= step <= _INT64_MAX:  # else the op says why
        given[step_name] = torch.scalar_tensor(step, dtype=torch.int64)
    cond = st.condition
    gate = cond.value if type(cond) is DeferredCondition else None
    reduced: tuple[str, ...] = ()
    in_graph = IN_GRAPH.get(where)
    if in_graph is not None:
        found = in_graph.reduce(given, gate, "torch")
        if found is not None:  # only the reduction leaves the compiled code
            given[found[0]] = found[1]
            reduced = (found[0],)
    for name in names:
        if name not in given:
            continue
        value = given[name]
        if isinstance(value, torch.Tensor):
            tensor_names.append((name, None))
            values.append(value)
        elif isinstance(value, Mapping):
            items: list[tuple[Any, Any]] = []
            for key, item in value.items():
                if isinstance(item, torch.Tensor):
                    tensor_names.append((name, key))
                    values.append(item)
                    items.append((key, None))
                else:
                    items.append((key, item))
            static.append((name, tuple(items)))
            maps.append(name)
        else:
            static.append((name, value))
    if gate is not None:
        values.append(gate)
    call = _register(where, st.scope, tuple(static), tuple(tensor_names), tuple(maps),
                     gate is not None, reduced)
    torch.ops.summarylib.summary(_TOKEN, call, values)
    return True
