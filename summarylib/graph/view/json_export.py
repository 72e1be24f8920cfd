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

import json
import math
from typing import Any

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.model import Embedding, GraphView, GroupNode, OpNode, Shape

__all__ = ["FORMAT", "VERSION", "json_text", "view_to_json"]

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
        # Without its children: to_json fills "children" (a loop, not recursion, as
        # names may be thousands of scopes deep).
        return {
            "kind": g.kind, "name": g.name, "label": _label(g.name), "depth": g.depth,
            "cardinality": g.cardinality, "op_histogram": dict(g.op_histogram),
            "device_histogram": dict(g.device_histogram), "template": g.template,
            "series": None if g.kind != "series" else {
                "op": g.series_op, "ids": list(g.series_ids), "vertical": g.series_vertical},
            "side_panel": {"in": list(g.side_panel.get("in", [])),
                           "out": list(g.side_panel.get("out", []))},
            "children": [],
            "metaedges": [{"v": m.v, "w": m.w, "regular": m.regular, "control": m.control,
                           "ref": m.ref, "size": m.size,
                           "shapes": [_shape(s) for s in m.shapes]} for m in g.metaedges],
        }

    root = group_json(view.root)
    todo: list[tuple[GroupNode, list[dict[str, Any]]]] = [(view.root, root["children"])]
    while todo:
        group, children = todo.pop()
        for c in group.children:
            node = nodes[c]
            if isinstance(node, GroupNode):
                child = group_json(node)
                todo.append((node, child["children"]))
            else:
                child = op_json(node)
            children.append(child)

    return {
        "format": FORMAT, "version": VERSION,
        "options": dict(view.options),
        "stats": {"ops": sum(1 for n in nodes.values() if isinstance(n, OpNode)),
                  "edges": len(view.edges), "groups": groups},
        "renamed": dict(view.renamed),
        "templates": {k: list(v) for k, v in view.templates.items()},
        "root": root,
    }



class _Raw(str):
    """Text :func:`json_text` writes as it is (punctuation, encoded keys)."""


def json_text(obj: Any, separators: tuple[str, str] = (",", ":"), nan: str | None = None,
              indent: int | None = None) -> str:
    """``json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=separators,
    indent=indent)``, for data nested to any depth (a view's groups nest as deep as its
    scopes).

    ``obj`` holds dicts, lists, tuples and JSON scalars. NaN and infinities raise
    ValueError, unless ``nan`` is given: then they are written as that text (``"null"``).
    ``json`` writes the text when it can; it recurses, so data nested deeper than Python's
    recursion limit is written by a loop over an explicit stack instead.
    """
    try:
        return json.dumps(obj, ensure_ascii=True, allow_nan=False, separators=separators,
                          indent=indent)
    except RecursionError:
        pass
    except ValueError:
        if nan is None:
            raise
    item_sep, key_sep = separators
    parts: list[str] = []
    todo: list[tuple[Any, int]] = [(obj, 0)]
    while todo:
        x, level = todo.pop()
        if type(x) is _Raw:
            parts.append(x)
            continue
        if isinstance(x, dict):
            items: list[tuple[str | None, Any]] = [(_key_text(k) + key_sep, v)
                                                   for k, v in x.items()]
            ends = "{}"
        elif isinstance(x, (list, tuple)):
            items = [(None, v) for v in x]
            ends = "[]"
        elif nan is not None and isinstance(x, float) and not math.isfinite(x):
            parts.append(nan)
            continue
        else:
            parts.append(json.dumps(x, ensure_ascii=True, allow_nan=False))
            continue
        if not items:
            parts.append(ends)
            continue
        if indent is None:
            open_, sep, close = ends[0], item_sep, ends[1]
        else:
            inner = "\n" + " " * (indent * (level + 1))
            open_, sep = ends[0] + inner, item_sep + inner
            close = "\n" + " " * (indent * level) + ends[1]
        tokens: list[tuple[Any, int]] = [(_Raw(open_), level)]
        for i, (key, v) in enumerate(items):
            if i:
                tokens.append((_Raw(sep), level))
            if key is not None:
                tokens.append((_Raw(key), level))
            tokens.append((v, level + 1))
        tokens.append((_Raw(close), level))
        todo.extend(reversed(tokens))
    return "".join(parts)


def _key_text(key: object) -> str:
    # json.dumps's own conversion of a key (str, or int/float/bool/None made a string).
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=True)
    text = json.dumps({key: 0}, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text[1:text.rindex(":")]
