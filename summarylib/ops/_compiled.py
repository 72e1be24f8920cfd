"""How a module-level op finds out that it runs inside compiled code, and which route
records it: ``torch.compile`` (:mod:`summarylib.ops._compiled_torch`) or JAX
(:mod:`summarylib.ops._traced`). Host calls pass straight through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from summarylib.encoding._pending import is_tracer, torch_compiling
from summarylib.ops._replay import OPS
from summarylib.ops._traced import record_traced
from summarylib.writer._context import DeferredCondition, _local, condition_holds

__all__ = ["record_compiled_torch", "traceable"]

P = ParamSpec("P")
R = TypeVar("R")


def traceable(op: Callable[P, R]) -> Callable[P, R]:
    """Make a module-level op record itself when called on traced values or under a
    traced ``record_if`` (see the module docstring). Host calls pass straight through.
    """
    where = op.__name__
    OPS[where] = op
    code = op.__code__
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]

    @wraps(op)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        st = _local.state
        if st.writer is None:
            return op(*args, **kwargs)
        cond = st.condition
        if torch_compiling():  # dynamo is tracing this call: one custom op in the graph
            if cond is True or type(cond) is DeferredCondition or condition_holds(cond):
                return record_compiled_torch(op, where, names, args, kwargs)  # type: ignore[return-value]
            return False  # type: ignore[return-value]
        if type(cond) is DeferredCondition or (
            (any(map(_holds_tracer, args)) or any(map(_holds_tracer, kwargs.values())))
            and condition_holds(cond)  # a host condition is read when traced
        ):
            return record_traced(op, where, args, kwargs)  # type: ignore[return-value]
        return op(*args, **kwargs)

    return call


def record_compiled_torch(
    op: Callable[..., Any], where: str, names: tuple[str, ...], args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> bool:
    """Put the call into the graph ``torch.compile`` is tracing (ops._compiled_torch)."""
    from summarylib.ops._compiled_torch import record_compiled

    return record_compiled(op, where, names, args, kwargs)


def _holds_tracer(value: object) -> bool:
    if is_tracer(value):
        return True
    if isinstance(value, Mapping):  # scalars({...}), hparams-like mappings
        return any(map(is_tracer, value.values()))
    return False


