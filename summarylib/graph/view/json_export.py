"""``view_to_json``: a :class:`GraphView` as plain JSON data (format version 1).

::

    {"format": "summarylib.graph.view", "version": 1,
     "options": {...}, "stats": {"ops": n, "edges": n, "groups": n},
     "renamed": {"A": "A/(A)"}, "templates": {"<id>": ["scope", ...]},
     "root": GROUP}
    GROUP = {"kind": "meta"|"series", "name", "label", "depth", "cardinality",
             "op_histogram", "device_histogram", "template",
             "series": {"op", "ids", "vertical"} | null,
             "side_panel": {"in": [...], "out": [...]},
             "children": [GROUP | OP, ...],
             "metaedges": [{"v", "w", "regular", "control", "ref", "size", "shapes"}]}
    OP = {"kind": "op", "name", "label", "op", "device", "attrs", "shapes",
          "inputs": [{"name", "slot", "control"}], "in_embeddings": [{"name", "op",
          "shapes"}], "out_embeddings": [...], "xla_cluster", "compute_time_us"}

Shapes are lists of ints with null for unknown dims, null for an unknown rank. ``inputs``
are the op's base edges (after normalisation) in order. Everything is ``json.dumps``-able.
"""

from __future__ import annotations

from typing import Any

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.model import Embedding, GraphView, GroupNode, OpNode, Shape

__all__ = ["FORMAT", "VERSION", "view_to_json"]

FORMAT = "summarylib.graph.view"
VERSION = 1


def _shape(s: Shape) -> list[int | None] | None:
    return None if s is None else list(s)


def _label(name: str) -> str:
    return name[name.rfind("/") + 1:]


def _embedding(e: Embedding) -> dict[str, Any]:
    return {"name": e.name, "op": e.op, "shapes": [_shape(s) for s in e.shapes]}


def view_to_json(view: GraphView) -> dict[str, Any]:
    """``view`` as JSON-ready data (see the module docstring)."""
    with gc_paused():
        return _to_json(view)


def _to_json(view: GraphView) -> dict[str, Any]:
    inputs: dict[str, list[dict[str, Any]]] = {}
    for e in view.edges:
        inputs.setdefault(e.dst, []).append(
            {"name": e.src, "slot": e.slot, "control": e.control})
    nodes = view.nodes
    groups = sum(1 for n in nodes.values() if isinstance(n, GroupNode)) - 1

    def op_json(n: OpNode) -> dict[str, Any]:
        return {
            "kind": "op", "name": n.name, "label": _label(n.name), "op": n.op,
            "device": n.device, "attrs": dict(n.attrs),
            "shapes": [_shape(s) for s in n.shapes],
            "inputs": inputs.get(n.name, []),
            "in_embeddings": [_embedding(e) for e in n.in_embeddings],
            "out_embeddings": [_embedding(e) for e in n.out_embeddings],
            "xla_cluster": n.xla_cluster, "compute_time_us": n.compute_time_us,
        }

    def group_json(g: GroupNode) -> dict[str, Any]:
        children: list[dict[str, Any]] = []
        for c in g.children:
            node = nodes[c]
            children.append(group_json(node) if isinstance(node, GroupNode) else op_json(node))
        return {
            "kind": g.kind, "name": g.name, "label": _label(g.name), "depth": g.depth,
            "cardinality": g.cardinality, "op_histogram": dict(g.op_histogram),
            "device_histogram": dict(g.device_histogram), "template": g.template,
            "series": None if g.kind != "series" else {
                "op": g.series_op, "ids": list(g.series_ids), "vertical": g.series_vertical},
            "side_panel": {"in": list(g.side_panel.get("in", [])),
                           "out": list(g.side_panel.get("out", []))},
            "children": children,
            "metaedges": [{"v": m.v, "w": m.w, "regular": m.regular, "control": m.control,
                           "ref": m.ref, "size": m.size,
                           "shapes": [_shape(s) for s in m.shapes]} for m in g.metaedges],
        }

    return {
        "format": FORMAT, "version": VERSION,
        "options": dict(view.options),
        "stats": {"ops": sum(1 for n in nodes.values() if isinstance(n, OpNode)),
                  "edges": len(view.edges), "groups": groups},
        "renamed": dict(view.renamed),
        "templates": {k: list(v) for k, v in view.templates.items()},
        "root": group_json(view.root),
    }

