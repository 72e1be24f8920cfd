"""``torch.fx`` -> IR: the module-level graph of a ``GraphModule``.

The data contract is :mod:`summarylib.graph.adapters.torch_fx`'s (``method="fx"``). Shapes
(and, when profiling, op times) come from one run of the graph
(:mod:`summarylib.graph.adapters.torch_interpreter`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from summarylib.graph.adapters import PendingNode, gc_paused, warn_capture
from summarylib.graph.adapters.torch_common import (
    device_string,
    key_segments,
    scope_path,
    torch_module,
)
from summarylib.graph.adapters.torch_interpreter import node_stats, shape_prop
from summarylib.graph.adapters.torch_walk import (
    Walker,
    add_call_function,
    add_get_attr,
    example_device,
    modules_by_name,
    scope_of_node,
    val_specs,
)
from summarylib.graph.ir import DType, Graph, TensorSpec

__all__ = ["from_fx", "translate_fx"]


# --- torch.fx (module level) -----------------------------------------------------------


def from_fx(gm: Any, example_inputs: Sequence[Any] = (), *, device: str | None = None,
            root: Any = None) -> Graph:
    """The module-level graph of a ``torch.fx.GraphModule`` (see the module docstring).

    Shapes come from running ``gm`` once on ``example_inputs`` (see :func:`shape_prop`;
    with no inputs, from ``meta["tensor_meta"]`` if a ``ShapeProp`` ran before, else
    unknown). ``root`` is the original module (for class names and parameters).
    """
    return translate_fx(gm, example_inputs, device, root, False)[0]


# Node kinds that run code: the ones a profile times.
def translate_fx(gm: Any, example_inputs: Sequence[Any], device: str | None, root: Any,
             timed: bool) -> tuple[Graph, list[Any] | None]:
    """:func:`from_fx`, plus (when ``timed``) a ``NodeStats`` per timed op of the run that
    found the shapes (None if that run failed: fake tensors are not timed)."""
    torch = torch_module("torch")

    where = "capture(torch.fx)"
    root = root if root is not None else gm
    dev = device or (example_device(example_inputs) if example_inputs else "/device:CPU:0")
    run = shape_prop(gm, example_inputs, timed) if example_inputs else None
    found = run.specs if run is not None else None
    w = Walker(dev, where)
    output_node = None
    modules: dict[str, Any] | None = None  # qualified name -> submodule, built on first use
    with gc_paused():
        for node in gm.graph.nodes:
            # A list per node: Node.outputs are the graph's own, callers may edit them.
            if found is not None:
                outputs = found.get(node.name) or [TensorSpec(None)]
            else:
                meta = node.meta.get("tensor_meta")
                outputs = val_specs(meta) if meta is not None else [TensorSpec(None)]
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
                add_get_attr(w, node, root, dev)
            elif op == "call_module":
                if modules is None:
                    modules = modules_by_name(root)
                _call_module(w, node, root, outputs, dev, modules)
            elif op == "call_method":
                inputs, attrs = w.split_args(None, node.args, node.kwargs, node)
                name = str(node.target)
                w.add(PendingNode(node.name, scope_of_node(node), name, f"Tensor.{name}",
                                  inputs=inputs, attrs=attrs, outputs=outputs, device=dev))
                w.refs[node] = (node.name, 0)
            elif op == "call_function":
                add_call_function(w, node, dev, outputs)
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
    return graph, node_stats(run.times, w.pending.names)



def _call_module(w: Walker, node: Any, root: Any, outputs: list[TensorSpec],
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
