"""PyTorch graphs from ``torch.export`` (op level) or ``torch.fx`` (module level) -> IR.

Data contract of :func:`capture_torch` (graph-pipeline.md §3.3, §5.3):

* ``model``: a ``torch.nn.Module`` or a function of tensors; ``example_inputs``: the
  positional arguments (a tuple; any other value is the single argument) and
  ``example_kwargs`` the keyword arguments. Tensors, nested tuples/lists/dicts of them and
  non-tensor values (ints, bools, strings, None) are accepted. Capture never changes the
  model: export runs on fake tensors; the fx shape pass and the jit tracer run the model
  once for real and then restore every buffer (BatchNorm statistics) and the RNG state.
* ``method="export"`` (op level): one node per aten op, op type ``aten::<op>``
  (``aten::conv2d``), named ``<module path>/<op>`` from ``nn_module_stack``
  (``layer1/0/conv1/conv2d``). ``method="fx"`` (module level): one node per leaf module
  call, op type the module class (``Conv2d``), named ``<module path>/<Class>``, plus
  ``torch.*`` function and tensor-method calls. ``method="auto"`` (default) tries export
  and, if the model cannot be exported (data-dependent control flow), falls back to
  ``torch.jit.trace`` with a :class:`GraphCaptureWarning` saying why (the jit graph holds
  only the branches taken for the example inputs).
* Parameters, buffers and lifted constants are ``Const`` nodes named by their qualified
  names (``layer1/0/conv1/weight``) with attrs ``dtype``, ``target`` (the dotted name) and
  ``kind`` (``parameter``/``buffer``/``constant``); parameter values are not stored.
  Small constant tensors keep their value.
* Tensor inputs are ``Placeholder`` nodes named by argument and key path (``x``,
  ``batch/image``); non-tensor inputs the trace was specialised on are ``Const`` nodes
  holding the value (None inputs are left out). Outputs are ``Identity`` nodes under
  ``output`` (``output`` for a single tensor, ``output/logits`` for a dict key,
  ``output/0`` for a tuple element); None outputs are left out; non-tensor outputs are
  ``Const``. In-place updates of buffers (BatchNorm statistics in training mode) are
  ``Assign`` nodes (drawn as reference edges).
* ``getitem`` on a multi-output op becomes the output slot ``op:k``; non-tensor op
  arguments become attrs named after the op schema's arguments (``stride``, ``padding``).
* Shapes and dtypes come from ``meta["val"]`` (export) or one real run of the fx graph on
  the example inputs (fx; a fake-tensor ``ShapeProp`` if that run fails); symbolic sizes
  are unknown dims (-1). The device is the one the tensors live on (``/device:CPU:0``,
  ``/device:CUDA:0``), or ``device=`` when given.
* :func:`profile_torch` also times the graph's nodes (export and fx; not the jit
  fallback, see there).
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import operator
import sys
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

from summarylib.graph.adapters import (
    GraphCaptureWarning,
    PendingGraph,
    PendingNode,
    const_attrs,
    gc_paused,
    sanitize,
    warn_capture,
)
from summarylib.graph.adapters.leaf_modules import merge_single_op_modules
from summarylib.graph.adapters.torch_common import (
    arg_names,
    device_string,
    dtype_string,
    key_segments,
    module_path,
    op_attr,
    scope_path,
    small_numpy,
    spec_of,
    torch_module,
)
from summarylib.graph.ir import DType, Graph, TensorSpec

__all__ = [
    "arg_names",
    "capture_torch",
    "device_string",
    "dtype_string",
    "from_exported_program",
    "from_fx",
    "module_path",
    "profile_torch",
    "spec_of",
]

_METHODS = ("auto", "export", "fx", "jit")


# --- torch values -> IR ----------------------------------------------------------------


def _input_paths(in_spec: Any, forward: Any) -> list[str]:
    """Names of the flattened user inputs: ``x``, ``batch/image``, ``mask`` (kwargs)."""
    pytree = torch_module("torch.utils._pytree")

    tree = pytree.tree_unflatten(list(range(in_spec.num_leaves)), in_spec)
    leaves = pytree.tree_flatten_with_path(tree)[0]
    n_args = len(tree[0]) if isinstance(tree, tuple) and tree and isinstance(tree[0], tuple) else 0
    names = arg_names(forward, n_args)
    out = []
    for path, _ in leaves:
        segs = key_segments(path)
        if len(segs) >= 2 and segs[0] == "0":  # (args, kwargs) -> args[i]
            segs = [sanitize(names[int(segs[1])]), *segs[2:]]
        elif len(segs) >= 2 and segs[0] == "1":
            segs = segs[1:]
        out.append("/".join(segs) or "input")
    return out


def _output_paths(out_spec: Any) -> list[str]:
    pytree = torch_module("torch.utils._pytree")

    tree = pytree.tree_unflatten(list(range(out_spec.num_leaves)), out_spec)
    return ["/".join(key_segments(p)) for p, _ in pytree.tree_flatten_with_path(tree)[0]]


def _specs(val: Any) -> list[TensorSpec]:
    """Output specs of an fx node from its ``meta['val']`` (a tensor or a tuple of them)."""
    spec = spec_of(val)
    if spec is None and isinstance(val, (tuple, list)):  # TensorMetadata is a tuple too
        return [spec_of(v) or TensorSpec(None) for v in val]
    return [spec] if spec is not None else []


def _device_of(val: Any, default: str) -> str:
    if isinstance(val, (tuple, list)):
        val = next((v for v in val if hasattr(v, "device")), None)
    dev = device_string(getattr(val, "device", None))
    return dev or default


def _example_device(values: Any) -> str:
    """The device of the first tensor among the example inputs (CPU if there is none)."""
    pytree = torch_module("torch.utils._pytree")

    for leaf in pytree.tree_leaves(values):
        dev = getattr(leaf, "device", None)
        if dev is not None and hasattr(leaf, "dtype"):
            return device_string(dev) or "/device:CPU:0"
    return "/device:CPU:0"


def _op_name(target: Any) -> tuple[str, str, dict[str, object]]:
    """``(op type, base name, extra attrs)`` for an fx ``call_function`` target."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None and hasattr(target, "namespace"):
        base = packet.__name__
        extra: dict[str, object] = {}
        overload = getattr(target, "_overloadname", "default")
        if overload and overload != "default":
            extra["overload"] = overload
        return f"{target.namespace}::{base}", base, extra
    name = getattr(target, "__name__", None) or type(target).__name__
    mod = getattr(target, "__module__", None) or ""
    if mod in ("_operator", "operator"):
        return f"operator.{name}", name, {}
    if mod.startswith("torch") and mod != "torch":
        mod = {"torch.nn.functional": "F", "torch._C._nn": "F"}.get(mod, mod)
    qual = f"{mod}.{name}" if mod else name
    return qual, name, {}


_SCHEMA_NAMES: dict[Any, list[str]] = {}


def _schema_names(target: Any) -> list[str]:
    """Argument names of an op's schema (cached per op overload)."""
    try:
        return _SCHEMA_NAMES[target]
    except (KeyError, TypeError):
        pass
    schema = getattr(target, "_schema", None)
    names = [a.name for a in schema.arguments] if schema is not None else []
    with contextlib.suppress(TypeError):  # an unhashable target is not cached
        _SCHEMA_NAMES[target] = names
    return names


# --- fx graph walking (shared by export and fx) -----------------------------------------


class _Walker:
    """Turns fx nodes into pending IR nodes; ``refs`` maps fx nodes to (key, slot)."""

    def __init__(self, device: str, where: str) -> None:
        self.pending = PendingGraph()
        self.refs: dict[Any, tuple[Hashable, int]] = {}
        self.specs: dict[Hashable, list[TensorSpec]] = {}
        self.device = device
        self.where = where
        self.skipped: list[str] = []

    def add(self, p: PendingNode) -> PendingNode:
        self.pending.add(p)
        self.specs[p.key] = p.outputs
        return p

    def ref(self, fx_node: Any) -> tuple[Hashable, int] | None:
        return self.refs.get(fx_node)

    def split_args(self, target: Any, args: Sequence[Any], kwargs: dict[str, Any], node: Any
                   ) -> tuple[list[tuple[Hashable, int]], dict[str, object]]:
        """Tensor arguments become inputs; the others attrs named by the op schema."""
        torch = torch_module("torch")

        names = _schema_names(target)
        inputs: list[tuple[Hashable, int]] = []
        attrs: dict[str, object] = {}
        items = [(names[i] if i < len(names) else f"arg{i}", a) for i, a in enumerate(args)]
        items.extend(kwargs.items())
        for name, value in items:
            found: list[Any] = []
            torch.fx.node.map_arg(value, found.append)
            if found:
                for n in found:
                    r = self.ref(n)
                    if r is not None:
                        inputs.append(r)
                    else:
                        self.skipped.append(f"{node.name}.{name}")
                if not isinstance(value, torch.fx.Node):
                    # A list mixing tensors and other values (``index`` with None): keep
                    # the non-tensor parts visible.
                    shown = torch.fx.node.map_arg(value, lambda n: _Marker(n.name))
                    if any(not isinstance(v, _Marker) for v in _flat(shown)):
                        attrs[name] = str(shown)[:256]
                continue
            ok, attr = op_attr(value)
            if ok:
                attrs[name] = attr
        return inputs, attrs

    def const_placeholder(self, key: Hashable, target: str, kind: str, val: Any,
                          value: Any = None, *, scope: str | None = None,
                          device: str | None = None) -> None:
        """A parameter, buffer or constant as a ``Const`` named by its qualified name.

        ``scope`` (the scope of ``target``'s parent) and ``device`` skip recomputing what
        the caller already knows (thousands of parameters on large models).
        """
        parent, _, leaf = target.rpartition(".")
        spec = spec_of(val) or TensorSpec(None)
        stored = None
        if value is not None and kind == "constant":
            stored = small_numpy(value)
        attrs = const_attrs(spec, stored, {"target": target, "kind": kind})
        self.add(PendingNode(key, scope_path(parent) if scope is None else scope, leaf or target,
                             "Const", attrs=attrs, outputs=[spec],
                             device=device or _device_of(val, self.device)))

    def outputs(self, leaves: Sequence[Any], paths: Sequence[str]) -> None:
        """Identity nodes for user outputs (Const for non-tensor outputs; None skipped)."""
        torch = torch_module("torch")

        single = len(leaves) == 1
        for i, (leaf, path) in enumerate(zip(leaves, paths, strict=True)):
            scope, base = ("", "output") if single or not path else _split_path("output/" + path)
            key = ("output", i)
            if isinstance(leaf, torch.fx.Node):
                r = self.ref(leaf)
                if r is None:
                    self.skipped.append(f"output {path or i}")
                    continue
                specs = self.specs.get(r[0], [])
                out = [specs[r[1]]] if r[1] < len(specs) else []
                self.add(PendingNode(key, scope, base, "Identity", inputs=[r], outputs=out,
                                     device=self.device))
            elif leaf is not None:
                self.literal(key, scope, base, leaf)

    def literal(self, key: Hashable, scope: str, base: str, value: Any) -> None:
        spec = spec_of(value) or TensorSpec(())
        if isinstance(value, str):
            spec = TensorSpec((), "string")
        attrs: dict[str, object] = {"dtype": DType(spec.dtype)} if spec.dtype else {}
        ok, attr = op_attr(value)
        if ok:
            attrs["value"] = attr
        self.add(PendingNode(key, scope, base, "Const", attrs=attrs, outputs=[spec],
                             device=self.device))

    def finish(self) -> Graph:
        if self.skipped:
            shown = ", ".join(self.skipped[:5]) + (" ..." if len(self.skipped) > 5 else "")
            warn_capture(f"{self.where}: left out arguments with no graph node: {shown}", 4)
        return self.pending.finish(self.where)


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.name}"


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    return [value]


def _split_path(path: str) -> tuple[str, str]:
    scope, _, base = path.rpartition("/")
    return scope, base


def _scope_of_node(node: Any) -> str:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    return _scope_of_path(str(next(reversed(stack.values()))[0]))


@functools.lru_cache(maxsize=4096)
def _scope_of_path(path: str) -> str:
    # Many nodes share a module path: convert each once.
    return scope_path(module_path(path))


# --- torch.export ----------------------------------------------------------------------


def from_exported_program(ep: Any, *, device: str | None = None,
                          forward: Any = None) -> Graph:
    """The op-level graph of a ``torch.export.ExportedProgram`` (see the module docstring).

    ``forward`` (the exported callable) names positional inputs; ``device`` overrides the
    device recorded on the tensors.
    """
    return _from_ep(ep, device, forward)[0]


def _from_ep(ep: Any, device: str | None, forward: Any) -> tuple[Graph, dict[Hashable, str]]:
    with gc_paused():  # see gc_paused: thousands of nodes, a large heap
        return _walk_ep(ep, device, forward)


def _walk_ep(ep: Any, device: str | None, forward: Any) -> tuple[Graph, dict[Hashable, str]]:
    torch = torch_module("torch")
    gs = torch_module("torch.export.graph_signature")
    InputKind, OutputKind = gs.InputKind, gs.OutputKind

    where = "capture(torch.export)"
    sig = ep.graph_signature
    default_dev = device or "/device:CPU:0"
    w = _Walker(default_dev, where)
    in_kinds = {s.arg.name: s for s in sig.input_specs if hasattr(s.arg, "name")}
    user_specs = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    try:
        paths = _input_paths(ep.call_spec.in_spec, forward)
    except Exception:
        paths = []
    if len(paths) != len(user_specs):
        paths = [s.arg.name for s in user_specs]
    user_path = {s.arg.name: p for s, p in zip(user_specs, paths, strict=True)}
    const_values = dict(getattr(ep, "constants", {}) or {})
    kind_names = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer",
                  InputKind.CONSTANT_TENSOR: "constant"}
    user_literals: list[tuple[str, Any]] = []
    for s in user_specs:
        if type(s.arg).__name__ == "ConstantArgument" and s.arg.value is not None:
            user_literals.append((user_path[s.arg.name], s.arg.value))

    output_node = None
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        dev = device or _device_of(val, default_dev)
        if node.op == "placeholder":
            spec_ = in_kinds.get(node.name)
            if spec_ is None:
                continue
            if spec_.kind in kind_names and spec_.target is not None:
                kind = kind_names[spec_.kind]
                w.const_placeholder(node.name, spec_.target, kind, val,
                                    const_values.get(spec_.target))
                w.pending.nodes[-1].device = device or w.pending.nodes[-1].device
                w.refs[node] = (node.name, 0)
            elif spec_.kind == InputKind.USER_INPUT and hasattr(val, "shape"):
                scope, base = _split_path(user_path.get(node.name, node.name))
                spec = spec_of(val) or TensorSpec(None)
                attrs: dict[str, object] = {"shape": TensorSpec(spec.shape)}
                if spec.dtype:
                    attrs = {"dtype": DType(spec.dtype), "shape": TensorSpec(spec.shape)}
                w.add(PendingNode(node.name, scope, base, "Placeholder", attrs=attrs,
                                  outputs=[spec], device=dev))
                w.refs[node] = (node.name, 0)
            elif spec_.kind == InputKind.USER_INPUT:
                continue  # a specialised non-tensor input: added below as a Const
            else:
                w.skipped.append(f"input {node.name} ({spec_.kind.name})")
        elif node.op == "call_function":
            _call_function(w, node, dev)
        elif node.op == "get_attr":
            _get_attr(w, node, ep.graph_module, dev)
        elif node.op == "output":
            output_node = node
    for path, value in user_literals:
        scope, base = _split_path(path)
        w.literal(("input", path), scope, base, value)
    if output_node is not None:
        flat = list(output_node.args[0]) if isinstance(output_node.args[0], (tuple, list)) \
            else [output_node.args[0]]
        specs = list(sig.output_specs)
        user_leaves: list[Any] = []
        for leaf, ospec in zip(flat, specs, strict=False):
            if ospec.kind == OutputKind.USER_OUTPUT:
                user_leaves.append(leaf)
            elif ospec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION,
                                OutputKind.PARAMETER_MUTATION):
                _assign(w, leaf, ospec, dev, sig)
            elif isinstance(leaf, torch.fx.Node):
                name = ospec.kind.name.lower()
                r = w.ref(leaf)
                if r is not None:
                    spec_list = w.specs.get(r[0], [])
                    w.add(PendingNode(("extra_output", len(w.pending.nodes)), "output", name,
                                      "Identity", inputs=[r],
                                      outputs=spec_list[r[1]: r[1] + 1], device=dev))
        try:
            out_paths = _output_paths(ep.call_spec.out_spec)
        except Exception:
            out_paths = []
        if len(out_paths) != len(user_leaves):
            out_paths = [str(i) for i in range(len(user_leaves))]
        w.outputs(user_leaves, out_paths)
    graph = w.finish()
    return graph, w.pending.names


def _call_function(w: _Walker, node: Any, dev: str,
                   outputs: list[TensorSpec] | None = None) -> None:
    """An op node (``outputs``: its specs if known, else from the node's metadata)."""
    torch = torch_module("torch")

    target = node.target
    if target is operator.getitem and isinstance(node.args[0], torch.fx.Node) \
            and isinstance(node.args[1], int):
        src = w.ref(node.args[0])
        if src is not None and src[1] == 0 and len(w.specs.get(src[0], [])) > 1:
            w.refs[node] = (src[0], node.args[1])  # an output slot, not a node
            return
    op, base, extra = _op_name(target)
    inputs, attrs = w.split_args(target, node.args, node.kwargs, node)
    attrs.update(extra)
    if outputs is None:
        val = node.meta.get("val")
        outputs = _specs(val) if val is not None else _specs(node.meta.get("tensor_meta"))
    scope = _scope_of_node(node)
    w.add(PendingNode(node.name, scope, base, op, inputs=inputs, attrs=attrs,
                      outputs=outputs, device=dev))
    w.refs[node] = (node.name, 0)
    if any(type(a).__name__ == "GraphModule" for a in _flat(list(node.args))):
        warn_capture(f"capture: the subgraphs of {op} ({node.name}) are not drawn", 5)


def _get_attr(w: _Walker, node: Any, root: Any, dev: str) -> None:
    target = str(node.target)
    try:
        obj = root
        for part in target.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        obj = None
    if obj is None or not hasattr(obj, "shape"):
        # A submodule used by a higher-order op (torch.cond branches), not a tensor.
        return
    kind = "parameter" if type(obj).__name__ == "Parameter" else "constant"
    w.const_placeholder(node.name, target, kind, obj, obj if kind == "constant" else None)
    w.pending.nodes[-1].device = device_string(getattr(obj, "device", None)) or dev
    w.refs[node] = (node.name, 0)


def _assign(w: _Walker, leaf: Any, ospec: Any, dev: str, sig: Any) -> None:
    """A buffer/input mutation as ``Assign(target, new_value)`` next to its target."""
    r = w.ref(leaf)
    target = ospec.target or ""
    # The mutated buffer's placeholder key: the input spec with that target.
    src_key = next(
        (s.arg.name for s in sig.input_specs if getattr(s, "target", None) == target), None
    )
    if src_key is None:
        src_key = next((s.arg.name for s in sig.input_specs
                        if getattr(s.arg, "name", None) == target), None)
    if r is None or src_key is None or src_key not in w.pending:
        w.skipped.append(f"update of {target}")
        return
    parent, _, leafname = target.rpartition(".")
    specs = w.specs.get(r[0], [])
    w.add(PendingNode(("assign", target), scope_path(parent), f"{leafname}_assign", "Assign",
                      inputs=[(src_key, 0), r], outputs=specs[r[1]: r[1] + 1], device=dev))


# --- torch.fx (module level) -----------------------------------------------------------


def from_fx(gm: Any, example_inputs: Sequence[Any] = (), *, device: str | None = None,
            root: Any = None) -> Graph:
    """The module-level graph of a ``torch.fx.GraphModule`` (see the module docstring).

    Shapes come from running ``gm`` once on ``example_inputs`` (see :func:`_shape_prop`;
    with no inputs, from ``meta["tensor_meta"]`` if a ``ShapeProp`` ran before, else
    unknown). ``root`` is the original module (for class names and parameters).
    """
    return _from_fx(gm, example_inputs, device, root, False)[0]


# Node kinds that run code: the ones a profile times.
_CALLS = ("call_module", "call_function", "call_method")


def _from_fx(gm: Any, example_inputs: Sequence[Any], device: str | None, root: Any,
             timed: bool) -> tuple[Graph, list[Any] | None]:
    """:func:`from_fx`, plus (when ``timed``) a ``NodeStats`` per timed op of the run that
    found the shapes (None if that run failed: fake tensors are not timed)."""
    torch = torch_module("torch")

    where = "capture(torch.fx)"
    root = root if root is not None else gm
    dev = device or (_example_device(example_inputs) if example_inputs else "/device:CPU:0")
    run = _shape_prop(gm, example_inputs, timed) if example_inputs else None
    found = run.specs if run is not None else None
    w = _Walker(dev, where)
    output_node = None
    modules: dict[str, Any] | None = None  # qualified name -> submodule, built on first use
    with gc_paused():
        for node in gm.graph.nodes:
            # A list per node: Node.outputs are the graph's own, callers may edit them.
            if found is not None:
                outputs = found.get(node.name) or [TensorSpec(None)]
            else:
                meta = node.meta.get("tensor_meta")
                outputs = _specs(meta) if meta is not None else [TensorSpec(None)]
            op = node.op
            if op == "placeholder":
                spec = outputs[0] if outputs else TensorSpec(None)
                attrs: dict[str, object] = {"shape": TensorSpec(spec.shape)}
                if spec.dtype:
                    attrs = {"dtype": DType(spec.dtype), "shape": TensorSpec(spec.shape)}
                w.add(PendingNode(node.name, "", str(node.target), "Placeholder", attrs=attrs,
                                  outputs=[spec], device=dev))
                w.refs[node] = (node.name, 0)
            elif op == "get_attr":
                _get_attr(w, node, root, dev)
            elif op == "call_module":
                if modules is None:
                    modules = _modules_by_name(root)
                _call_module(w, node, root, outputs, dev, modules)
            elif op == "call_method":
                inputs, attrs = w.split_args(None, node.args, node.kwargs, node)
                name = str(node.target)
                w.add(PendingNode(node.name, _scope_of_node(node), name, f"Tensor.{name}",
                                  inputs=inputs, attrs=attrs, outputs=outputs, device=dev))
                w.refs[node] = (node.name, 0)
            elif op == "call_function":
                _call_function(w, node, dev, outputs)
            elif op == "output":
                output_node = node
        if output_node is not None:
            pytree = torch_module("torch.utils._pytree")

            flat = pytree.tree_flatten_with_path(
                output_node.args[0], is_leaf=lambda x: isinstance(x, torch.fx.Node))[0]
            leaves = [leaf for _, leaf in flat]
            paths = ["/".join(key_segments(p)) for p, _ in flat]
            w.outputs(leaves, paths)
        graph = w.finish()
    if not timed:
        return graph, None
    if run is None or run.specs is None:
        warn_capture("capture(torch.fx): no per-node profile: the model could not be run on "
                     "the example inputs (shapes came from fake tensors)", 4)
        return graph, None
    return graph, _node_stats(run.times, w.pending.names)


def _node_stats(times: list[tuple[str, int, int, int]], names: dict[Hashable, str]
                ) -> list[Any]:
    """``NodeStats`` for timed fx nodes that are graph nodes (a ``getitem`` that became an
    output slot is not), with wall-clock start times in microseconds."""
    import time

    from summarylib.graph.writers import NodeStats

    # perf_counter_ns has the resolution; time_ns the epoch TensorBoard wants.
    epoch = time.time_ns() - time.perf_counter_ns()
    stats = []
    for key, t0, dt, size in times:
        name = names.get(key)
        if name is not None:
            stats.append(NodeStats(name, (epoch + t0) // 1000, dt // 1000, size))
    return stats


def _modules_by_name(root: Any) -> dict[str, Any]:
    """Qualified name -> submodule, every name of a shared module included (what
    ``get_submodule`` finds), walking ``_modules`` directly: ``named_modules`` is a
    recursive generator, several times slower on models with thousands of modules."""
    out: dict[str, Any] = {"": root}
    stack = [("", root)]
    while stack:
        prefix, mod = stack.pop()
        for name, child in mod._modules.items():
            if child is None:
                continue
            qual = f"{prefix}.{name}" if prefix else name
            if qual not in out:
                out[qual] = child
                stack.append((qual, child))
    return out


def _call_module(w: _Walker, node: Any, root: Any, outputs: list[TensorSpec],
                 dev: str, modules: dict[str, Any]) -> None:
    target = str(node.target)
    sub = modules.get(target)
    cls = type(sub).__name__ if sub is not None else "Module"
    scope = scope_path(target)
    inputs, attrs = w.split_args(None, node.args, node.kwargs, node)
    if sub is not None:
        if sub._modules:
            tensors = list(sub.named_parameters(recurse=True))
            tensors += sub.named_buffers(recurse=True)
        else:  # a leaf (Linear, Conv2d): its own dicts, without named_*'s module walk
            tensors = []
            seen: set[int] = set()  # a tensor under two names counts once, as in named_*
            for d in (sub._parameters, sub._buffers):
                for k, v in d.items():
                    if v is not None and id(v) not in seen:
                        seen.add(id(v))
                        tensors.append((k, v))
        for pname, tensor in tensors:
            qual = f"{target}.{pname}"
            key = ("param", qual)
            if key not in w.pending:
                kind = "parameter" if type(tensor).__name__ == "Parameter" else "buffer"
                parent = qual.rpartition(".")[0]
                w.const_placeholder(key, qual, kind, tensor,
                                    scope=scope if parent == target else None,
                                    device=device_string(tensor.device) or dev)
            inputs.append((key, 0))
        config = sub.extra_repr() if hasattr(sub, "extra_repr") else ""
        if config:
            attrs["config"] = config[:256]
    w.add(PendingNode(node.name, scope, cls, cls, inputs=inputs, attrs=attrs,
                      outputs=outputs, device=dev))
    w.refs[node] = (node.name, 0)


class _Run:
    """What one real run of an fx graph found: output specs and, if timed, op times."""

    def __init__(self) -> None:
        #: node name -> output specs (None: the result held no tensor); None if the real
        #: run failed and fake tensors filled ``meta["tensor_meta"]`` instead.
        self.specs: dict[str, list[TensorSpec] | None] | None = {}
        #: (node name, start perf_counter_ns, duration ns, output bytes) per timed node.
        self.times: list[tuple[str, int, int, int]] = []


def _result_specs(result: Any, tensor: Any) -> list[TensorSpec] | None:
    """Output specs of a node's real result, as ``ShapeProp``'s ``tensor_meta`` gives them
    (a tensor, or a tuple/list holding tensors; None for a result without tensors)."""
    if isinstance(result, tensor):
        return [spec_of(result) or TensorSpec(None)]
    if isinstance(result, (tuple, list)) and any(isinstance(v, tensor) for v in _flat(result)):
        return [spec_of(v) or TensorSpec(None) for v in result]
    return None


def _nbytes(result: Any, tensor: Any) -> int:
    if isinstance(result, tensor):
        return int(result.nelement() * result.element_size())
    if isinstance(result, (tuple, list, dict)):
        return sum(_nbytes(v, tensor) for v in _flat(result) if isinstance(v, tensor))
    return 0


_NO_ARG = object()


def _run_nodes(gm: Any, args: Sequence[Any], specs: dict[str, list[TensorSpec] | None],
               times: list[tuple[str, int, int, int]] | None, cuda: Any) -> None:
    """Run ``gm``'s graph node by node, as ``torch.fx.Interpreter.run`` does, keeping each
    node's output specs in ``specs`` and, if ``times`` is a list, appending
    ``(node name, start perf_counter_ns, duration ns, output bytes)`` per call node.

    The Interpreter's own per-node work (a progress bar, a context manager, argument
    fetching through several methods) cost as much as the model itself on a 10k-node
    graph; what it does is kept: placeholders (``*args``, defaults), ``get_attr``, the
    three kinds of call, and each value freed after its last use.
    """
    import time

    torch = torch_module("torch")
    map_arg = torch.fx.node.map_arg
    tensor = torch.Tensor
    graph = gm.graph
    nodes = list(graph.nodes)
    last_user: dict[Any, Any] = {}
    for n in reversed(nodes):
        for i in n.all_input_nodes:
            last_user.setdefault(i, n)
    frees: dict[Any, list[Any]] = {}
    for i, n in last_user.items():
        frees.setdefault(n, []).append(i)
    env: dict[Any, Any] = {}
    get = env.__getitem__
    args_iter = iter(graph.process_inputs(*args))
    modules: dict[str, Any] | None = None
    clock = time.perf_counter_ns
    value: Any
    for n in nodes:
        op = n.op
        if op == "placeholder":
            target = str(n.target)
            if target.startswith("*"):
                value = list(args_iter)
            else:
                value = next(args_iter, _NO_ARG)
                if value is _NO_ARG:
                    if not n.args:
                        raise RuntimeError(f"no example input for placeholder {target!r}")
                    value = n.args[0]  # the parameter's default
        elif op == "get_attr":
            value = gm
            for part in str(n.target).split("."):
                value = getattr(value, part)
        elif op == "output":
            break
        else:
            a = map_arg(n.args, get)
            k = map_arg(n.kwargs, get)
            t0 = clock()
            if op == "call_function":
                value = n.target(*a, **k)
            elif op == "call_method":
                value = getattr(a[0], n.target)(*a[1:], **k)
            else:
                if modules is None:
                    modules = _modules_by_name(gm)
                value = modules[n.target](*a, **k)
            if times is not None:
                if cuda is not None:
                    cuda.synchronize()  # kernels are asynchronous: time them, not the launch
                times.append((n.name, t0, clock() - t0, _nbytes(value, tensor)))
        env[n] = value
        specs[n.name] = _result_specs(value, tensor)
        for dead in frees.get(n, ()):
            del env[dead]


def _shape_prop(gm: Any, example_inputs: Sequence[Any], timed: bool = False) -> _Run:
    """Run ``gm`` once on the example inputs for its output shapes (and, if ``timed``,
    each op's wall time and output bytes).

    The run is real (fast: about 10x faster than fake tensors per node) but leaves no
    trace: ``no_grad``, the RNG state and every buffer are restored afterwards. It keeps
    only shapes and dtypes (``ShapeProp`` also computes strides, memory format and
    quantization metadata per node, which the graph does not use) and runs the nodes
    itself (see :func:`_run_nodes`). If it fails (inputs on a meta device, ...)
    ``ShapeProp`` on fake tensors fills ``meta["tensor_meta"]`` (``specs`` None); if that
    fails too, the graph keeps unknown shapes and a warning says so.
    """
    torch = torch_module("torch")
    run = _Run()
    specs: dict[str, list[TensorSpec] | None] = {}
    cuda = torch.cuda if any(
        getattr(getattr(v, "device", None), "type", "") == "cuda" for v in example_inputs
    ) else None
    buffers = [(b, b.detach().clone()) for b in gm.buffers()]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            _run_nodes(gm, example_inputs, specs, run.times if timed else None, cuda)
        run.specs = specs
        return run
    except Exception:
        pass
    finally:
        with torch.no_grad():
            for b, copy in buffers:
                b.copy_(copy)
    run.specs = None
    run.times = []
    ShapeProp = torch_module("torch.fx.passes.shape_prop").ShapeProp
    FakeTensorMode = torch_module("torch._subclasses.fake_tensor").FakeTensorMode
    pytree = torch_module("torch.utils._pytree")
    try:
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        fake = pytree.tree_map(
            lambda v: mode.from_tensor(v) if hasattr(v, "dtype") and hasattr(v, "shape")
            else v, list(example_inputs))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ShapeProp(gm, fake_mode=mode).propagate(*fake)
    except Exception as e:  # shapes are optional: the structure is still right
        warn_capture(f"capture(torch.fx): shape propagation failed ({type(e).__name__}: "
                     f"{str(e)[:200]}); shapes are unknown", 6)
    return run


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
    dev = device or _example_device((args, kwargs))
    if method == "fx":
        if kwargs:
            raise ValueError("capture: method='fx' takes positional example inputs only")
        gm = torch.fx.symbolic_trace(module)
        return _from_fx(gm, args, dev, module, profile)
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
    graph, names = _from_ep(ep, dev, forward)
    if not profile:
        return graph, None
    return graph, _profile(ep, module, names, args, kwargs)


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


def _profile(ep: Any, module: Any, names: dict[Hashable, str], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> list[Any]:
    import time

    from summarylib.graph.writers import NodeStats

    torch = torch_module("torch")
    InputKind = torch_module("torch.export.graph_signature").InputKind
    pytree = torch_module("torch.utils._pytree")

    state = ep.state_dict
    consts = dict(getattr(ep, "constants", {}) or {})
    user = iter(pytree.tree_flatten((args, kwargs))[0])
    inputs: list[Any] = []
    saved: list[tuple[Any, Any]] = []
    for s in ep.graph_signature.input_specs:
        if s.kind == InputKind.USER_INPUT:
            inputs.append(next(user))
        elif s.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            t = state.get(s.target)
            if t is None:  # a non-persistent buffer is not in the state dict
                t = module.get_buffer(s.target)
            if s.kind == InputKind.BUFFER:
                saved.append((t, t.detach().clone()))
            inputs.append(t)
        else:
            inputs.append(consts.get(s.target))
    stats: list[Any] = []

    interpreter: Any = torch.fx.Interpreter

    class _Timer(interpreter):  # type: ignore[misc]
        def run_node(self, n: Any) -> Any:
            t0 = time.time_ns()
            result = super().run_node(n)
            t1 = time.time_ns()
            name = names.get(n.name)
            if n.op == "call_function" and name is not None:
                size = sum(int(v.nbytes) for v in pytree.tree_leaves(result)
                           if hasattr(v, "nbytes"))
                stats.append(NodeStats(name, t0 // 1000, max(0, (t1 - t0) // 1000), size))
            return result

    try:
        with torch.no_grad():
            _Timer(ep.graph_module).run(*inputs)
    finally:
        with torch.no_grad():
            for t, copy in saved:
                t.copy_(copy)
    return stats


_ = GraphCaptureWarning  # re-exported for ``from ...torch_fx import GraphCaptureWarning``
