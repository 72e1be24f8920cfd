"""The "Conceptual graph" view for any framework: a module tree written as Keras JSON.

TensorBoard's graph dashboard offers a conceptual graph only for tags of plugin
``graph_keras_model`` (content ``b"1"``, a rank-0 ``DT_STRING`` holding Keras
``Model.to_json()`` text). Its server turns that JSON into a ``GraphDef`` in which only the
layer name (scoped under its model), the inputs, attr ``keras_class`` and attr ``dtype``
survive (TB ``plugins/graph/keras_util.py``). This module writes the Keras 3 JSON shape that
converter reads, from a neutral :class:`Module` tree that a torch/JAX adapter can produce.

Data contract of a :class:`Module`:

* ``name``: the module's name among its siblings (torch attribute name: ``"layer1"``,
  ``"0"``), unique among them; the root's name becomes the top scope. ``/`` is not allowed.
* ``class_name``: shown as ``keras_class`` (``"Conv2d"``, ``"Linear"``).
* ``children``: sub-modules in call order. A module with children is drawn as a group.
* ``inputs``: what feeds this module, as sibling names (``"conv1"``; ``"block:1"`` for
  output 1 of a multi-output sibling) or :data:`PARENT_INPUT` for the parent's input.
  ``None`` (default) means "the previous sibling" (the first child: the parent's input).
  When no child of a module gives ``inputs`` the module is written as a Keras
  ``Sequential`` (children chained in order); otherwise as a ``Functional`` model with an
  ``InputLayer`` named ``input`` (shown as a node) that stands for the parent's input.
* ``outputs``: which children produce a group's output(s); None = its last child.
* ``dtype``: numpy-style name shown as attr ``dtype``, or None.

Example: ``Module("Net", "Net", [Module("conv", "Conv2d"), Module("fc", "Linear")])``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from summarylib.encoding._tensor import data_type
from summarylib.writer._context import Step

__all__ = ["PARENT_INPUT", "Module", "keras_json", "write_conceptual_graph"]

#: In ``Module.inputs``: the input of the enclosing module.
PARENT_INPUT = "<input>"
_INPUT_LAYER = "input"


@dataclass
class Module:
    """One node of a module tree (see the module docstring)."""

    name: str
    class_name: str
    children: list[Module] = field(default_factory=list)
    inputs: list[str] | None = None
    outputs: list[str] | None = None
    dtype: str | None = "float32"


def _as_module(obj: object, where: str, path: str) -> Module:
    if isinstance(obj, Module):
        m = obj
    elif isinstance(obj, Mapping):
        unknown = set(obj) - {"name", "class_name", "children", "inputs", "outputs", "dtype"}
        if unknown:
            raise ValueError(
                f"{where}: module {path or '<root>'} has unknown keys {sorted(unknown)}"
            )
        try:
            m = Module(
                name=obj["name"],
                class_name=obj["class_name"],
                children=list(obj.get("children") or []),
                inputs=obj.get("inputs"),
                outputs=obj.get("outputs"),
                dtype=obj.get("dtype", "float32"),
            )
        except KeyError as e:
            raise ValueError(f"{where}: module {path or '<root>'} lacks key {e}") from None
    else:
        raise TypeError(f"{where}: expected a Module or a mapping, got {type(obj).__name__}")
    if not isinstance(m.name, str) or not m.name or "/" in m.name:
        raise ValueError(
            f"{where}: module name must be a non-empty str without '/', got {m.name!r}"
        )
    if not isinstance(m.class_name, str) or not m.class_name:
        raise ValueError(f"{where}: module {m.name!r} needs a non-empty class_name")
    if m.dtype is not None and not data_type(m.dtype):
        raise ValueError(f"{where}: module {m.name!r} has unknown dtype {m.dtype!r}")
    return m


def _tensor_ref(ref: str) -> dict[str, Any]:
    name, sep, idx = ref.rpartition(":")
    if not (sep and idx.isdigit()):
        name, idx = ref, "0"
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, int(idx)]}}


def _layer(m: Module, where: str, path: str) -> dict[str, Any]:
    config: dict[str, Any] = {"name": m.name}
    if m.dtype is not None:
        config["dtype"] = m.dtype
    out: dict[str, Any] = {"class_name": m.class_name, "config": config}
    if not m.children:
        return out
    children = [_as_module(c, where, f"{path}/{m.name}") for c in m.children]
    names = [c.name for c in children]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: children of {path}/{m.name} have duplicate names: {names}")
    layers = [_layer(c, where, f"{path}/{m.name}") for c in children]
    functional = any(c.inputs is not None for c in children)
    if functional and _INPUT_LAYER in names:
        raise ValueError(
            f"{where}: {path}/{m.name} has a child named {_INPUT_LAYER!r}, the name of the "
            "InputLayer that stands for its input; rename that child"
        )
    if functional:
        prev = _INPUT_LAYER
        for c, layer in zip(children, layers, strict=True):
            refs = [prev] if c.inputs is None else list(c.inputs)
            srcs = []
            for r in refs:
                r = _INPUT_LAYER if r == PARENT_INPUT else r
                if r.rpartition(":")[0] not in names and r not in names and r != _INPUT_LAYER:
                    raise ValueError(
                        f"{where}: {path}/{m.name}/{c.name} has input {r!r}, "
                        f"which is not a sibling (siblings: {names})"
                    )
                srcs.append(_tensor_ref(r))
            arg: Any = srcs[0] if len(srcs) == 1 else srcs
            layer["inbound_nodes"] = [{"args": [arg] if srcs else [], "kwargs": {}}]
            prev = c.name
        input_layer: dict[str, Any] = {"class_name": "InputLayer", "config": {"name": _INPUT_LAYER}}
        if m.dtype is not None:
            input_layer["config"]["dtype"] = m.dtype
        layers.insert(0, input_layer)
        config["input_layers"] = [[_INPUT_LAYER, 0, 0]]
        outs = m.outputs if m.outputs is not None else [names[-1]]
        for o in outs:
            if o not in names:
                raise ValueError(f"{where}: output {o!r} of {path}/{m.name} is not a child")
        config["output_layers"] = [[o, 0, 0] for o in outs]
    config["layers"] = layers
    return out


def keras_json(tree: Module | Mapping[str, Any], where: str = "keras_json") -> str:
    """The Keras-style JSON text TensorBoard converts into a conceptual graph."""
    root = _as_module(tree, where, "")
    if not root.children:
        # A bare layer is not a model; wrap it so TensorBoard draws one node.
        root = Module(root.name, "Sequential", [root], dtype=root.dtype)
    return json.dumps(_layer(root, where, ""), separators=(",", ":"))


def write_conceptual_graph(
    tree: Module | Mapping[str, Any], name: str = "keras", step: Step | None = None
) -> bool:
    """Write ``tree`` as a conceptual graph (plugin ``graph_keras_model``) under tag ``name``.

    The tag defaults to ``keras`` and the step to 0, as the Keras callback writes them.
    Returns False (doing nothing) when no summary would be recorded.
    """
    from summarylib.graph.writers import (
        PLUGIN_KERAS_MODEL,
        graph_metadata_bytes,
        string_scalar_bytes,
    )
    from summarylib.ops._emit import emit_value
    from summarylib.ops._resolve import Caller, resolve

    sink = resolve(name, 0 if step is None else step, Caller("write_conceptual_graph"))
    if sink is None:
        return False
    text = keras_json(tree, "write_conceptual_graph").encode("utf-8")
    emit_value(sink, string_scalar_bytes(text), graph_metadata_bytes(PLUGIN_KERAS_MODEL))
    return True
