"""``capture_torch`` / ``profile_torch``: check the arguments, pick the tracer, fall back.

The data contract is :mod:`summarylib.graph.adapters.torch_fx`'s. ``method="export"`` and
``"auto"`` go through :mod:`~summarylib.graph.adapters.torch_export` (``"auto"`` falls
back to :mod:`~summarylib.graph.adapters.torch_jit`), ``"fx"`` through
:mod:`~summarylib.graph.adapters.torch_fx_graph`; profiles come from
:mod:`~summarylib.graph.adapters.torch_interpreter`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from typing import Any

from summarylib.graph.adapters import warn_capture
from summarylib.graph.adapters.leaf_modules import merge_single_op_modules
from summarylib.graph.adapters.torch_common import torch_module
from summarylib.graph.adapters.torch_export import profile_ep, translate_ep
from summarylib.graph.adapters.torch_fx_graph import translate_fx
from summarylib.graph.adapters.torch_walk import example_device
from summarylib.graph.ir import Graph

__all__ = ["capture_torch", "profile_torch"]

_METHODS = ("auto", "export", "fx", "jit")


# --- entry point -----------------------------------------------------------------------


def _as_args(example_inputs: Any) -> tuple[Any, ...]:
    if isinstance(example_inputs, tuple):
        return example_inputs
    return (example_inputs,)


def _as_module(model: Any) -> Any:
    torch = torch_module("torch")

    if isinstance(model, torch.nn.Module):
        return model

    base: Any = torch.nn.Module

    class _Function(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.fn = model

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return self.fn(*args, **kwargs)

    return _Function()


def capture_torch(
    model: Any,
    example_inputs: Any = (),
    example_kwargs: dict[str, Any] | None = None,
    *,
    method: str = "auto",
    device: str | None = None,
) -> Graph:
    """Capture the graph of a torch module or function (see the module docstring).

    Raises TypeError/ValueError for bad arguments, and the tracer's own error when the
    chosen ``method`` cannot trace the model (with ``method="auto"`` only when the jit
    fallback fails too).
    """
    graph = _capture(model, example_inputs, example_kwargs, method, device, False)[0]
    return merge_single_op_modules(graph)[0]


def profile_torch(
    model: Any,
    example_inputs: Any = (),
    example_kwargs: dict[str, Any] | None = None,
    *,
    method: str = "auto",
    device: str | None = None,
) -> tuple[Graph, list[Any] | None]:
    """:func:`capture_torch` plus a profile of one real run: ``(graph, node_stats)``.

    The exported program runs once on the example inputs (``no_grad``; buffers are
    restored afterwards) under an ``fx.Interpreter`` that times every op and sums the bytes
    of its outputs, giving one :class:`~summarylib.graph.writers.NodeStats` per op node
    with wall-clock start times. With ``method="fx"`` the run that finds the shapes is
    timed the same way, one ``NodeStats`` per module, function and method call. Times
    include Python overhead per node and no fusion: they rank ops, they are not kernel
    times. Graphs from the torch.jit fallback get no profile (``node_stats`` is ``[]``;
    a warning says so, once per process); ``node_stats`` is None when the fx run failed.
    """
    graph, stats = _capture(model, example_inputs, example_kwargs, method, device, True)
    return merge_single_op_modules(graph, stats)


def _capture(model: Any, example_inputs: Any, example_kwargs: dict[str, Any] | None,
             method: str, device: str | None, profile: bool
             ) -> tuple[Graph, list[Any] | None]:
    torch = torch_module("torch")

    if method not in _METHODS:
        raise ValueError(f"capture: 'method' must be one of {_METHODS}, got {method!r}")
    if not callable(model):
        raise TypeError(f"capture: 'model' must be a torch module or function, got "
                        f"{type(model).__name__}")
    if example_kwargs is not None and not isinstance(example_kwargs, dict):
        raise TypeError(f"capture: 'example_kwargs' must be a dict, got "
                        f"{type(example_kwargs).__name__}")
    args = _as_args(example_inputs)
    kwargs = dict(example_kwargs or {})
    module = _as_module(model)
    forward = model.forward if isinstance(model, torch.nn.Module) else model
    dev = device or example_device((args, kwargs))
    if method == "fx":
        if kwargs:
            raise ValueError("capture: method='fx' takes positional example inputs only")
        gm = torch.fx.symbolic_trace(module)
        return translate_fx(gm, args, dev, module, profile)
    if method == "jit":
        from summarylib.graph.adapters.torch_jit import capture_jit

        return _no_profile(capture_jit(module, args, kwargs, device=dev), profile)
    try:
        with warnings.catch_warnings(), _quiet_logs(method == "auto"):
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)
            ep = torch.export.export(module, args, kwargs, strict=False)
    except Exception as e:
        if method == "export":
            raise
        reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
        warn_capture(
            f"capture: torch.export could not trace {type(model).__name__} ({reason}); "
            "falling back to torch.jit.trace, which records only the branches taken for "
            "these example inputs", 3)
        from summarylib.graph.adapters.torch_jit import capture_jit

        return _no_profile(capture_jit(module, args, kwargs, device=dev), profile)
    graph, names = translate_ep(ep, dev, forward)
    if not profile:
        return graph, None
    return graph, profile_ep(ep, module, names, args, kwargs)


# torch logs a failed export (the guard, the partial graph's code) at WARNING level; with
# method="auto" that failure is handled (jit fallback, one GraphCaptureWarning), so keep
# those loggers quiet while exporting.
_EXPORT_LOGGERS = (
    "torch.fx.experimental.symbolic_shapes",
    "torch.fx.experimental.recording",
    "torch.export",
    "torch._export",
    "torch._export.non_strict_utils",
    "torch._dynamo",
    "torch._functorch",
    "torch._subclasses.fake_tensor",
)


@contextlib.contextmanager
def _quiet_logs(active: bool) -> Any:
    """Silence torch's report of a failed export (loggers, and the partial graph's code it
    prints to stderr); anything else written to stderr meanwhile is passed through."""
    if not active:
        yield
        return
    saved = [(lg, lg.level) for lg in map(logging.getLogger, _EXPORT_LOGGERS)]
    for lg, _ in saved:
        lg.setLevel(logging.ERROR)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stderr(buf):
            yield
    finally:
        for lg, level in saved:
            lg.setLevel(level)
        text = buf.getvalue()
        if text and "def forward(" not in text:
            sys.stderr.write(text)


_warned_jit_profile = False


def _no_profile(graph: Graph, profile: bool) -> tuple[Graph, list[Any] | None]:
    """A torch.jit graph and, when profiling, an empty profile (warned about once).

    The jit graph is what the tracer recorded, inlined and rewritten into IR nodes (values
    folded into attrs, list constructs dropped): there is no executable per-node form to
    time node by node and map back, as there is for fx and export graphs.
    """
    global _warned_jit_profile
    if not profile:
        return graph, None
    if not _warned_jit_profile:
        _warned_jit_profile = True
        warn_capture(
            "capture: no per-node profile for graphs from the torch.jit fallback (models "
            "torch.export cannot trace): the jit graph cannot be run node by node, so its "
            "profile is empty; method='fx' gives a module-level graph with a profile "
            "(warned once per process)", 4)
    return graph, []
