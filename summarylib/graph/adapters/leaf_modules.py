"""Write each single-op leaf module as one op node named after the module.

Tracers name an op by its module and the op: a ``Conv2d`` at ``layer1.conv1`` gives
``layer1/conv1/conv2d`` beside its parameters ``layer1/conv1/weight``, so every leaf module
is a group of its own. TensorBoard's graph dashboard then sees each block as a group of
groups, and its template pass (which compares groups before their own groups have been
given templates) colours identical blocks differently. Written as one op node
``layer1/conv1`` with its parameters beside it (``layer1/conv1.weight``, constants), a block
holds plain op nodes and identical blocks share one colour.

A scope is merged when it holds exactly one op node (not an input or output), any number of
constants (parameters, buffers, literals) and no scope of its own, and when the new names
collide with nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from summarylib.graph.ir import Graph, Node

__all__ = ["merge_single_op_modules"]

_CONSTANT_OPS = frozenset({"Const"})
# Inputs and outputs are named by their argument paths, not modules: never merged.
_BOUNDARY_OPS = frozenset({"Placeholder", "Identity"})


def merge_single_op_modules(
    graph: Graph,
    stats: Iterable[Any] | None = None,
    *,
    keep: Callable[[str], bool] = lambda scope: False,
) -> tuple[Graph, list[Any] | None]:
    """``(graph, stats)`` with single-op leaf modules merged (see the module docstring).

    ``stats`` (``NodeStats`` of a profile, or None) are renamed with their nodes. Scopes
    for which ``keep(scope)`` is true are not modules (a control-flow body) and stay. The
    input graph is not changed.
    """
    renames = _renames(graph, keep)
    if not renames:
        return graph, (list(stats) if stats is not None else None)
    out = Graph()
    for node in graph:
        out.add(
            dataclasses.replace(
                node,
                name=renames.get(node.name, node.name),
                inputs=[_renamed_input(i, renames) for i in node.inputs],
                control_inputs=[renames.get(c, c) for c in node.control_inputs],
            )
        )
    new_stats = None
    if stats is not None:
        new_stats = [
            dataclasses.replace(s, node_name=renames.get(s.node_name, s.node_name)) for s in stats
        ]
    return out, new_stats


def _renamed_input(text: str, renames: dict[str, str]) -> str:
    name, colon, slot = text.partition(":")
    new = renames.get(name)
    return text if new is None else new + colon + slot


def _renames(graph: Graph, keep: Callable[[str], bool]) -> dict[str, str]:
    by_scope: dict[str, list[Node]] = {}
    has_subscope: set[str] = set()
    for node in graph:
        scope = node.name.rpartition("/")[0]
        by_scope.setdefault(scope, []).append(node)
        parent = scope
        while parent:
            parent = parent.rpartition("/")[0]
            has_subscope.add(parent)
    names = {node.name for node in graph}
    renames: dict[str, str] = {}
    taken: set[str] = set()
    for scope, nodes in by_scope.items():
        if not scope or scope in has_subscope or scope in names or keep(scope):
            continue
        ops = [n for n in nodes if n.op not in _CONSTANT_OPS]
        if len(ops) != 1 or ops[0].op in _BOUNDARY_OPS:
            continue
        planned = {ops[0].name: scope}
        for n in nodes:
            if n is not ops[0]:
                planned[n.name] = f"{scope}.{n.name.rpartition('/')[2]}"
        new = set(planned.values())
        if new & (names - set(planned)) or new & taken:
            continue  # a name is in use: leave this module as it is
        taken |= new
        renames.update(planned)
    return renames
