"""fx nodes -> pending IR nodes: what the torch.export and torch.fx translations share.

:class:`Walker` collects :class:`~summarylib.graph.adapters.PendingNode` objects and maps
each fx node to ``(pending key, output slot)``; the functions here turn torch values
(tensors, pytree specs, op targets) into the IR's names, specs and attrs, following the
data contract of :mod:`summarylib.graph.adapters.torch_fx`.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Hashable, Sequence
from typing import Any

from summarylib.graph.adapters import (
    PendingGraph,
    PendingNode,
    const_attrs,
    sanitize,
    warn_capture,
)
from summarylib.graph.adapters.torch_common import (
    arg_names,
    device_string,
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
    "Walker",
    "add_call_function",
    "add_get_attr",
    "device_of",
    "example_device",
    "flat_values",
    "input_paths",
    "modules_by_name",
    "output_paths",
    "scope_of_node",
    "split_path",
    "val_specs",
]


# --- torch values -> IR ----------------------------------------------------------------


def input_paths(in_spec: Any, forward: Any) -> list[str]:
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


def output_paths(out_spec: Any) -> list[str]:
    pytree = torch_module("torch.utils._pytree")

    tree = pytree.tree_unflatten(list(range(out_spec.num_leaves)), out_spec)
    return ["/".join(key_segments(p)) for p, _ in pytree.tree_flatten_with_path(tree)[0]]


def val_specs(val: Any) -> list[TensorSpec]:
    """Output specs of an fx node from its ``meta['val']`` (a tensor or a tuple of them)."""
    spec = spec_of(val)
    if spec is None and isinstance(val, (tuple, list)):  # TensorMetadata is a tuple too
        return [spec_of(v) or TensorSpec(None) for v in val]
    return [spec] if spec is not None else []


def device_of(val: Any, default: str) -> str:
    if isinstance(val, (tuple, list)):
        val = next((v for v in val if hasattr(v, "device")), None)
    dev = device_string(getattr(val, "device", None))
    return dev or default


def example_device(values: Any) -> str:
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


class Walker:
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
                    if any(not isinstance(v, _Marker) for v in flat_values(shown)):
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
                             device=device or device_of(val, self.device)))

    def outputs(self, leaves: Sequence[Any], paths: Sequence[str]) -> None:
        """Identity nodes for user outputs (Const for non-tensor outputs; None skipped)."""
        torch = torch_module("torch")

        single = len(leaves) == 1
        for i, (leaf, path) in enumerate(zip(leaves, paths, strict=True)):
            scope, base = ("", "output") if single or not path else split_path("output/" + path)
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


def flat_values(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flat_values(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in flat_values(v)]
    return [value]


def split_path(path: str) -> tuple[str, str]:
    scope, _, base = path.rpartition("/")
    return scope, base


def scope_of_node(node: Any) -> str:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    return _scope_of_path(str(next(reversed(stack.values()))[0]))


@functools.lru_cache(maxsize=4096)
def _scope_of_path(path: str) -> str:
    # Many nodes share a module path: convert each once.
    return scope_path(module_path(path))


def add_call_function(w: Walker, node: Any, dev: str,
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
        outputs = val_specs(val) if val is not None else val_specs(node.meta.get("tensor_meta"))
    scope = scope_of_node(node)
    w.add(PendingNode(node.name, scope, base, op, inputs=inputs, attrs=attrs,
                      outputs=outputs, device=dev))
    w.refs[node] = (node.name, 0)
    if any(type(a).__name__ == "GraphModule" for a in flat_values(list(node.args))):
        warn_capture(f"capture: the subgraphs of {op} ({node.name}) are not drawn", 5)


def add_get_attr(w: Walker, node: Any, root: Any, dev: str) -> None:
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



def modules_by_name(root: Any) -> dict[str, Any]:
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
