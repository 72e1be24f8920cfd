"""Capture a model's graph: ``capture`` (explicit) and ``trace`` (inside a trace window).

The functions are ``summarylib.graph.capture`` and ``summarylib.graph.trace``; this module
holds them (its name differs from theirs, so neither is ever a module). It builds on the
core in :mod:`summarylib.graph.tracing` and imports an adapter only when a model of its
framework is captured; adapters never import this module.

* ``capture(model_or_fn, example_inputs=(), example_kwargs=None, *, framework=None,
  **options) -> Graph`` returns the graph at once. The framework comes from the object's
  type and the example inputs (``framework="torch"`` / ``"jax"`` overrides it). Options go
  to the adapter: torch takes ``method`` (``"auto"``, ``"export"``, ``"fx"``, ``"jit"``)
  and ``device``; jax takes ``params_argnums`` and ``device``
  (see :mod:`summarylib.graph.adapters.torch_fx` and :mod:`summarylib.graph.adapters.jax`).
  Bad arguments and tracer failures raise here: this is the call to use when you want to
  know.
* ``trace(fn_or_module, *, framework=None, **options)`` hands objects of a framework with a
  registered third-party adapter (``register_tracer``) to it; for torch and JAX it returns
  something that behaves
  exactly like its argument (for a plain function the framework may also be told from the
  arguments of its first call) and, on its first call while a trace is on
  (``summarylib.graph.trace_on()``), captures the graph from that call's arguments and
  hands it to ``record_graph`` (once per trace; with ``trace_on(profiler=True)`` the
  capture also times every node once: torch.export and fx graphs, JAX graphs; the
  torch.jit fallback gets an empty profile, see ``profile_torch``). A
  ``torch.nn.Module`` is returned **itself**, with a forward pre-hook (so
  ``.parameters()``, ``.train()``, ``state_dict`` keep working); a function is wrapped
  with ``functools.wraps``. Capture problems never reach the training
  loop: any failure becomes a :class:`GraphCaptureWarning` naming the model and the error,
  and the real call runs and returns its result as usual. Outside a trace the wrapper
  costs one flag check per call.
* ``module_tree(model, graph=None)`` turns a torch module hierarchy into the
  :class:`~summarylib.graph.conceptual.Module` tree ``write_conceptual_graph`` writes
  (TensorBoard's "Conceptual graph"); with the model's captured ``graph`` the tree also
  carries which sibling feeds which.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from typing import Any, TypeVar

from summarylib.graph import tracing
from summarylib.graph.adapters import GraphCaptureWarning, warn_capture
from summarylib.graph.ir import Graph

__all__ = ["GraphCaptureWarning", "capture", "module_tree", "trace"]

F = TypeVar("F")

_ADAPTERS = {
    "torch": "summarylib.graph.adapters.torch_dispatch",
    "jax": "summarylib.graph.adapters.jax",
}


def _framework(obj: object, example: object, framework: str | None, where: str) -> str:
    if framework is not None:
        if framework not in _ADAPTERS:
            raise ValueError(
                f"{where}: 'framework' must be one of {sorted(_ADAPTERS)}, got {framework!r}"
            )
        return framework
    for cls in type(obj).__mro__:
        root = cls.__module__.split(".")[0]
        if root in _ADAPTERS:
            return root
        if root in ("jaxlib", "flax", "equinox", "haiku"):
            return "jax"
    # A plain function: look at what the example inputs are made of.
    for leaf in _leaves(example):
        root = type(leaf).__module__.split(".")[0]
        if root in _ADAPTERS:
            return root
        if root == "jaxlib":
            return "jax"
    loaded = [f for f in _ADAPTERS if f in sys.modules]
    if len(loaded) == 1:
        return loaded[0]
    raise TypeError(
        f"{where}: cannot tell which framework {type(obj).__name__} belongs to; "
        "pass framework='torch' or framework='jax'"
    )


def _leaves(value: object, depth: int = 0) -> list[object]:
    if depth > 4:
        return []
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v, depth + 1)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v, depth + 1)]
    return [value]


def capture(
    model_or_fn: Any,
    example_inputs: Any = (),
    example_kwargs: dict[str, Any] | None = None,
    *,
    framework: str | None = None,
    **options: Any,
) -> Graph:
    """The graph of ``model_or_fn`` called on the example inputs (see the module docstring).

    ``example_inputs`` is the tuple of positional arguments (any other value is the single
    argument). Raises TypeError/ValueError for bad arguments and the tracer's error when the
    model cannot be traced.
    """
    fw = _framework(model_or_fn, (example_inputs, example_kwargs), framework, "capture")
    if fw == "torch":
        from summarylib.graph.adapters.torch_dispatch import capture_torch

        return capture_torch(model_or_fn, example_inputs, example_kwargs, **options)
    from summarylib.graph.adapters.jax import capture_jax

    return capture_jax(model_or_fn, example_inputs, example_kwargs, **options)


# --- trace(): capture on the first call inside a trace ---------------------------------

_local = threading.local()


class _Once:
    """Remembers the trace a graph was recorded for, so each trace records once."""

    def __init__(self) -> None:
        self._trace: weakref.ReferenceType[Any] | None = None

    def due(self) -> bool:
        cur = tracing.current_trace()
        if cur is None or getattr(_local, "busy", False):
            return False
        return self._trace is None or self._trace() is not cur

    def done(self) -> None:
        cur = tracing.current_trace()
        self._trace = weakref.ref(cur) if cur is not None else None


def _record(obj: Any, fw: str | None, args: tuple[Any, ...], kwargs: dict[str, Any],
            options: dict[str, Any], once: _Once) -> None:
    """Capture and record; every failure becomes a warning (the caller's call goes on)."""
    label = getattr(obj, "__qualname__", None) or type(obj).__name__
    _local.busy = True  # the tracer calls the model again: do not recurse into this hook
    try:
        if fw is None:
            fw = _framework(obj, (args, kwargs), None, "trace")
        stats = None
        if fw == "torch" and tracing.profiler_enabled():
            from summarylib.graph.adapters.torch_dispatch import profile_torch

            graph, stats = profile_torch(obj, args, kwargs or None, **options)
        elif fw == "jax" and tracing.profiler_enabled():
            from summarylib.graph.adapters.jax import profile_jax

            graph, stats = profile_jax(obj, args, kwargs or None, **options)
        else:
            graph = capture(obj, args, kwargs or None, framework=fw, **options)
        tracing.record_graph(graph, stats)
    except Exception as e:  # never into the training loop
        text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        warn_capture(
            f"trace: the graph of {label} was not recorded: {type(e).__name__}: {text}", 4
        )
    finally:
        _local.busy = False
        once.done()


def trace(fn_or_module: F, *, framework: str | None = None, **options: Any) -> F:
    """``fn_or_module``, recording its graph on its first call inside each trace.

    See the module docstring. Raises TypeError only for an object that is not callable or
    whose framework cannot be told (pass ``framework=``).
    """
    registered = _registered_framework(fn_or_module, framework)
    if registered is not None:
        return registered(fn_or_module, **options)  # type: ignore[no-any-return]
    if framework is not None and framework not in _ADAPTERS:
        raise ValueError(
            f"trace: no capture adapter for framework {framework!r} (built in: "
            f"{', '.join(sorted(_ADAPTERS))}; others: summarylib.graph.register_tracer)"
        )
    if not callable(fn_or_module):
        raise TypeError(
            f"trace: expected a model or function, got {type(fn_or_module).__name__}: "
            "cannot tell which framework it belongs to"
        )
    try:
        fw: str | None = _framework(fn_or_module, (), framework, "trace")
    except TypeError:
        fw = None  # a plain function: decided from its arguments at the first call
    if fw == "torch" and _is_torch_module(fn_or_module):
        return _hook_module(fn_or_module, options)  # type: ignore[no-any-return]
    return _wrap_function(fn_or_module, fw, options)  # type: ignore[no-any-return]


def _registered_framework(obj: object, framework: str | None) -> Any:
    # A third-party adapter (tracing.register_tracer) for the framework named, or for the
    # first package in the object's class hierarchy that has one.
    if framework is not None:
        return tracing.registered_tracer(framework)
    for cls in type(obj).__mro__:
        tracer = tracing.registered_tracer(cls.__module__.split(".")[0])
        if tracer is not None:
            return tracer
    return None


def _is_torch_module(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


_HOOK_ATTR = "_summarylib_graph_trace"


def _hook_module(module: Any, options: dict[str, Any]) -> Any:
    state = module.__dict__.get(_HOOK_ATTR)
    if state is not None:  # traced before: update the options, keep one hook
        state["options"] = options
        return module
    once = _Once()
    state = {"options": options, "once": once}

    def hook(mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if once.due():
            _record(mod, "torch", args, kwargs, state["options"], once)

    state["handle"] = module.register_forward_pre_hook(hook, with_kwargs=True)
    module.__dict__[_HOOK_ATTR] = state
    return module


def _wrap_function(fn: Any, fw: str | None, options: dict[str, Any]) -> Any:
    once = _Once()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if once.due():
            _record(fn, fw, args, kwargs, options, once)
        return fn(*args, **kwargs)

    return wrapper


def untrace(module: Any) -> Any:
    """Remove the hook :func:`trace` put on a torch module (no-op if there is none)."""
    state = getattr(module, "__dict__", {}).pop(_HOOK_ATTR, None)
    if state is not None:
        state["handle"].remove()
    return module


# --- conceptual graph from a torch module tree -----------------------------------------


def module_tree(model: Any, graph: Graph | None = None) -> Any:
    """The :class:`~summarylib.graph.conceptual.Module` tree of a torch module.

    Without ``graph`` every module with children is written as a chain of its children in
    registration order (a Keras ``Sequential``). With ``graph`` (this model's captured
    graph, whose scopes are the module paths) only modules that ran are kept, in the order
    they ran, and each child lists the siblings (or the parent's input) that feed it,
    looking through the parent's own ops (a residual ``add`` in ``forward``).
    """
    from summarylib.graph.conceptual import PARENT_INPUT, Module

    if not _is_torch_module(model):
        raise TypeError(f"module_tree: 'model' must be a torch.nn.Module, got "
                        f"{type(model).__name__}")
    flow = None
    if graph is not None:
        modules = {path.replace(".", "/") for path, _ in model.named_modules() if path}
        flow = _Flow(_scoped(graph, modules))

    def build(mod: Any, name: str, path: str) -> Module:
        children = list(mod.named_children())
        kids: list[Module] = []
        if flow is not None:
            order = flow.order(path)
            children = sorted(
                (c for c in children if _join(path, c[0]) in order),
                key=lambda c: order[_join(path, c[0])],
            )
        for child_name, child in children:
            kids.append(build(child, child_name, _join(path, child_name)))
        m = Module(name or type(mod).__name__, type(mod).__name__, kids, dtype=_dtype(mod))
        if flow is not None and kids:
            names = [k.name for k in kids]
            inputs = [flow.inputs(path, k.name, names) for k in kids]
            outs = flow.outputs(path, names)
            chain = [[PARENT_INPUT]] + [[n] for n in names[:-1]]
            if inputs != chain or outs not in ([], [names[-1]]):
                # Real branches: a Functional model. A plain chain stays Sequential, which
                # TensorBoard's converter wires correctly at any depth (it connects the
                # InputLayer of a nested Functional model to the previous layer).
                for k, ins in zip(kids, inputs, strict=True):
                    k.inputs = ins
                m.outputs = outs or None
        return m

    return build(model, "", "")


def _scoped(graph: Graph, modules: set[str]) -> Graph:
    """``graph`` with every module's nodes inside its scope again: a single-op module's op
    node ``a/conv`` becomes ``a/conv/op`` and its parameter ``a/conv.weight`` becomes
    ``a/conv/weight`` (see ``adapters.leaf_modules``), so data flow is read by scope."""
    import dataclasses

    renames: dict[str, str] = {}
    for node in graph:
        if node.name in modules:
            renames[node.name] = f"{node.name}/op"
        else:
            scope, _, base = node.name.rpartition("/")
            module, dot, leaf = base.rpartition(".")
            owner = f"{scope}/{module}" if scope else module
            if dot and owner in modules:
                renames[node.name] = f"{owner}/{leaf}"
    if not renames:
        return graph

    def rename(text: str) -> str:
        name, colon, slot = text.partition(":")
        return renames.get(name, name) + colon + slot

    out = Graph()
    for node in graph:
        out.add(dataclasses.replace(
            node, name=renames.get(node.name, node.name),
            inputs=[rename(i) for i in node.inputs],
            control_inputs=[renames.get(c, c) for c in node.control_inputs],
        ))
    return out


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _dtype(mod: Any) -> str | None:
    for p in mod.parameters():
        return str(p.dtype).replace("torch.", "")
    return "float32"


class _Flow:
    """Data flow between sibling scopes of a captured graph, for :func:`module_tree`."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.pos: dict[str, int] = {}
        self.consumers: dict[str, list[str]] = {}
        for i, node in enumerate(graph):
            if node.op != "Const":
                self._mark(node.name, i)
            for inp in node.inputs:
                src = inp.rpartition(":")[0] if inp.rpartition(":")[2].isdigit() else inp
                self.consumers.setdefault(src, []).append(node.name)

    def _mark(self, name: str, i: int) -> None:
        parts = name.split("/")
        for j in range(1, len(parts)):
            self.pos.setdefault("/".join(parts[:j]), i)

    def order(self, path: str) -> dict[str, int]:
        return self.pos

    def _child(self, path: str, node_name: str) -> str | None:
        """The child scope of ``path`` holding ``node_name``; "" if directly in ``path``;
        None if outside ``path``."""
        prefix = f"{path}/" if path else ""
        if not node_name.startswith(prefix):
            return None
        rest = node_name[len(prefix):]
        head, sep, _ = rest.partition("/")
        return head if sep else ""

    def _sources(self, path: str, node: Any, names: list[str], seen: set[str]) -> list[str]:
        # Depth first through the parent's own ops, in input order. A stack of input
        # iterators, not recursion: a forward may chain thousands of its own ops.
        out: list[str] = []
        stack = [iter(node.inputs)]
        while stack:
            for inp in stack[-1]:
                src = inp.rpartition(":")[0] if inp.rpartition(":")[2].isdigit() else inp
                if src in seen or src not in self.graph:
                    continue
                seen.add(src)
                src_node = self.graph[src]
                if src_node.op == "Const":
                    continue
                child = self._child(path, src)
                if child is None or self._is_input(child, src_node):
                    out.append("<input>")
                elif child == "" or child not in names:
                    stack.append(iter(src_node.inputs))  # the parent's own op: look through
                    break
                else:
                    out.append(child)
            else:
                stack.pop()
        return out

    @staticmethod
    def _is_input(child: str | None, node: Any) -> bool:
        # The model's own inputs are Placeholders at the root scope: for the root module
        # they are "directly in path" like its own ops, but they are its input, not an op
        # to look through (else a residual from the block input, x + attn(x), is lost).
        return child == "" and node.op == "Placeholder"

    def inputs(self, path: str, child: str, names: list[str]) -> list[str]:
        from summarylib.graph.conceptual import PARENT_INPUT

        scope = _join(path, child) + "/"
        found: list[str] = []
        for node in self.graph:
            if not node.name.startswith(scope) or node.op == "Const":
                continue
            for inp in node.inputs:
                src = inp.rpartition(":")[0] if inp.rpartition(":")[2].isdigit() else inp
                if src.startswith(scope) or src not in self.graph:
                    continue
                src_node = self.graph[src]
                if src_node.op == "Const":
                    continue
                c = self._child(path, src)
                if c is None or self._is_input(c, src_node):
                    srcs = ["<input>"]
                elif c == "" or c not in names:
                    srcs = self._sources(path, src_node, names, {src})
                    srcs = srcs or ["<input>"]
                else:
                    srcs = [c]
                for s in srcs:
                    s = PARENT_INPUT if s == "<input>" else s
                    if s != child and s not in found:
                        found.append(s)
        return found

    def outputs(self, path: str, names: list[str]) -> list[str]:
        """Children whose values leave ``path`` (directly or through the parent's ops)."""
        outs: list[str] = []
        prefix = f"{path}/" if path else ""
        for node in self.graph:
            if node.op == "Const" or not node.name.startswith(prefix):
                continue
            leaves = any(
                self._child(path, c) is None or c.startswith("output/") or c == "output"
                for c in self.consumers.get(node.name, [])
            )
            if not leaves:
                continue
            c = self._child(path, node.name)
            cands = [c] if c and c in names else self._sources(path, node, names, {node.name})
            for s in cands:
                if s in names and s not in outs:
                    outs.append(s)
        return outs

