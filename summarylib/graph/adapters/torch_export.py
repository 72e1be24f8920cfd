"""``torch.export`` -> IR: the op-level graph of an ``ExportedProgram``, and its profile.

The data contract is :mod:`summarylib.graph.adapters.torch_fx`'s (``method="export"``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from summarylib.graph.adapters import PendingNode, gc_paused
from summarylib.graph.adapters.torch_common import scope_path, spec_of, torch_module
from summarylib.graph.adapters.torch_interpreter import node_stats, run_nodes, uses_cuda
from summarylib.graph.adapters.torch_walk import (
    Walker,
    add_call_function,
    add_get_attr,
    device_of,
    input_paths,
    output_paths,
    split_path,
)
from summarylib.graph.ir import DType, Graph, TensorSpec

__all__ = ["from_exported_program", "profile_ep", "translate_ep"]


# --- torch.export ----------------------------------------------------------------------


def from_exported_program(ep: Any, *, device: str | None = None,
                          forward: Any = None) -> Graph:
    """The op-level graph of a ``torch.export.ExportedProgram`` (see the module docstring).

    ``forward`` (the exported callable) names positional inputs; ``device`` overrides the
    device recorded on the tensors.
    """
    return translate_ep(ep, device, forward)[0]


def translate_ep(ep: Any, device: str | None, forward: Any) -> tuple[Graph, dict[Hashable, str]]:
    with gc_paused():  # see gc_paused: thousands of nodes, a large heap
        return _walk_ep(ep, device, forward)


def _walk_ep(ep: Any, device: str | None, forward: Any) -> tuple[Graph, dict[Hashable, str]]:
    torch = torch_module("torch")
    gs = torch_module("torch.export.graph_signature")
    InputKind, OutputKind = gs.InputKind, gs.OutputKind

    where = "capture(torch.export)"
    sig = ep.graph_signature
    default_dev = device or "/device:CPU:0"
    w = Walker(default_dev, where)
    in_kinds = {s.arg.name: s for s in sig.input_specs if hasattr(s.arg, "name")}
    user_specs = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    try:
        paths = input_paths(ep.call_spec.in_spec, forward)
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
        dev = device or device_of(val, default_dev)
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
                scope, base = split_path(user_path.get(node.name, node.name))
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
            add_call_function(w, node, dev)
        elif node.op == "get_attr":
            add_get_attr(w, node, ep.graph_module, dev)
        elif node.op == "output":
            output_node = node
    for path, value in user_literals:
        scope, base = split_path(path)
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
            out_paths = output_paths(ep.call_spec.out_spec)
        except Exception:
            out_paths = []
        if len(out_paths) != len(user_leaves):
            out_paths = [str(i) for i in range(len(user_leaves))]
        w.outputs(user_leaves, out_paths)
    graph = w.finish()
    return graph, w.pending.names



def _assign(w: Walker, leaf: Any, ospec: Any, dev: str, sig: Any) -> None:
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



def profile_ep(ep: Any, module: Any, names: dict[Hashable, str], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> list[Any]:
    """One timed run of ``ep`` on the example inputs: a ``NodeStats`` per op node of the
    graph :func:`translate_ep` built (``names``: its pending keys -> node names).

    The run is :func:`~summarylib.graph.adapters.torch_interpreter.run_nodes`'s, the same
    timer as fx graphs; ``no_grad``, and the RNG state and buffers are restored afterwards.
    """
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
    times: list[tuple[str, int, int, int]] = []
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            run_nodes(ep.graph_module, inputs, {}, times, uses_cuda(inputs))
    finally:
        with torch.no_grad():
            for t, copy in saved:
                t.copy_(copy)
    return node_stats(times, names)
