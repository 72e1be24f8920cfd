"""``SummaryWriter.add_*`` called inside compiled code: recorded, written to that writer.

Inside ``jax.jit`` (either route of :mod:`summarylib.ops._traced`) and
``torch.compile`` (:mod:`summarylib.ops._compiled_torch`), an ``add_*`` method called on
traced values (or under a traced ``record_if``, or anywhere dynamo traces) does what a
module-level op does there: it records the call once, when traced, and the compiled
code writes it each time it runs, with that run's values. The difference is the writer:
the call writes to its own ``SummaryWriter``, not to the default writer, so the recorded
call names the writer by its key (:mod:`summarylib.writer._registry`; a torch graph
holds only tensors, ints and strings, and compiled code must not keep a writer alive).
When the code runs, the method is called on that writer with the run's values (host
values, CPU tensors, or device arrays that the method's device-value path captures), so
the events are exactly what the eager call writes.

A run whose writer has been collected or closed writes nothing and raises nothing: the
compiled step goes on (a log line is not worth stopping training for, and the writer's
owner has said, by closing or dropping it, that its file is finished).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from summarylib.encoding._pending import is_tracer, torch_compiling
from summarylib.ops._replay import OPS
from summarylib.ops._traced import record_traced
from summarylib.writer._context import DeferredCondition, _local, condition_holds
from summarylib.writer._registry import registered_writer

__all__ = ["WriterMethod", "holds_tracer", "in_compiled_code", "record_method"]


class WriterMethod:
    """The op a recorded ``add_*`` call replays: ``op(self=<writer key>, ...)`` calls
    the method on the live writer of that key (False, writing nothing, once it is
    gone or closed).

    ``where`` is the method's name (errors name it); ``names`` its parameters in order,
    ``self`` first (its value in a recorded call is the writer's key).
    """

    writer_method = True  # read by the torch route: the call's "self" is a writer key

    def __init__(self, method: Callable[..., Any]) -> None:
        self.where: str = method.__name__
        code = method.__code__
        self.names: tuple[str, ...] = code.co_varnames[: code.co_argcount]
        self._method = method
        self.__name__ = self.where
        OPS["SummaryWriter." + self.where] = self

    @property
    def __signature__(self) -> Any:
        # record_traced binds the recorded arguments to this signature. Made when first
        # asked (only in compiled code), so that importing summarylib does not import
        # inspect.
        import inspect

        return inspect.signature(self._method)

    def __call__(self, /, **arguments: Any) -> bool:
        writer = registered_writer(arguments.pop("self"))
        if writer is None or writer.closed:
            return False
        walltime = arguments.get("walltime")
        if walltime is not None and type(walltime) is not float and type(walltime) is not int:
            arguments["walltime"] = _wall_time(walltime, self.where)
        return bool(getattr(writer, self.where)(**arguments))


def in_compiled_code(*values: Any) -> bool:
    """True when an ``add_*`` call with these array arguments is inside compiled code:
    dynamo is tracing it, a JAX function is traced for our ``jit`` (or under a traced
    ``record_if``), or a value is a JAX tracer. The same checks as the module-level ops'
    (:func:`summarylib.ops._compiled.traceable`)."""
    if torch_compiling() or type(_local.state.condition) is DeferredCondition:
        return True
    return any(map(holds_tracer, values))


def holds_tracer(value: object) -> bool:
    """``value`` is a JAX tracer, or a mapping holding one (``add_scalars``)."""
    if is_tracer(value):
        return True
    if isinstance(value, Mapping):
        return any(map(is_tracer, value.values()))
    return False


def record_method(key: str, method: WriterMethod, args: tuple[Any, ...]) -> bool:
    """Record ``method(*args)`` on the writer of ``key`` into the compiled code
    being traced (``args``: every argument but ``self``, in order); False, recording
    nothing, under a false host ``record_if`` (read when traced, as for any op)."""
    cond = _local.state.condition
    if cond is not True and type(cond) is not DeferredCondition and not condition_holds(cond):
        return False
    if torch_compiling():
        from summarylib.ops._compiled_torch import record_compiled

        return record_compiled(method, "SummaryWriter." + method.where, method.names,
                               (key, *args), {})
    return record_traced(method, "SummaryWriter." + method.where, (key, *args), {},
                         target=key)


def _wall_time(value: Any, where: str) -> float:
    # A traced walltime, as the compiled code ran it (numpy, a tensor, a JAX array): one
    # real number, read now.
    size = 1
    for d in getattr(value, "shape", ()):
        size *= int(d)
    kind = getattr(getattr(value, "dtype", None), "kind", "f")  # numpy's and JAX's dtypes
    if size != 1 or kind not in "iuf" or getattr(value, "is_complex", lambda: False)():
        raise TypeError(f"{where}: 'walltime' must be one real number, got {value!r}")
    return float(value.reshape(()) if hasattr(value, "reshape") else value)
