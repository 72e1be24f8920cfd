"""The offline graph view: TensorBoard's graph-dashboard transformations in Python.

:func:`build_view` turns an IR :class:`~summarylib.graph.Graph`, a ``GraphDef`` (ours or
TensorFlow's) or its bytes into a :class:`GraphView`: the hierarchy TensorBoard's graph
dashboard builds (scopes, series, metaedges, templates, side panels), which the exports
turn into JSON (:func:`view_to_json`), HTML, DOT or SVG. :class:`ViewOptions` selects the
transformations; ``ViewOptions(group_series=False, template_order="tensorboard")``
(:data:`TENSORBOARD`) is exactly the dashboard's view.

Importing this package loads neither numpy nor protobuf.
"""

from __future__ import annotations

from summarylib.graph.view.building import build_view
from summarylib.graph.view.json_export import view_to_json
from summarylib.graph.view.model import (
    BaseEdge,
    Embedding,
    GraphView,
    GroupNode,
    Metaedge,
    OpNode,
    ViewNode,
)
from summarylib.graph.view.options import TENSORBOARD, ViewOptions

# Exports of the other modules, loaded on first use (they pull in more code).
_LAZY = {
    "view_to_html": "summarylib.graph.view.html_export",
    "view_to_dot": "summarylib.graph.view.dot_export",
    "view_to_svg": "summarylib.graph.view.dot_export",
    "diff_views": "summarylib.graph.view.diffing",
    "diff_to_text": "summarylib.graph.view.diffing",
    "diff_to_html": "summarylib.graph.view.diffing",
    "GraphDiff": "summarylib.graph.view.diffing",
    "load_graph_source": "summarylib.graph.view.sources",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "TENSORBOARD",
    "BaseEdge",
    "Embedding",
    "GraphView",
    "GroupNode",
    "Metaedge",
    "OpNode",
    "ViewNode",
    "ViewOptions",
    "build_view",
    "view_to_json",
]
