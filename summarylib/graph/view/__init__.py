"""The offline graph view: TensorBoard's graph-dashboard transformations in Python.

:func:`build_view` turns an IR :class:`~summarylib.graph.Graph`, a ``GraphDef`` (ours or
TensorFlow's) or its bytes into a :class:`GraphView`: the hierarchy TensorBoard's graph
dashboard builds (scopes, series, metaedges, templates, side panels), which the exports
turn into JSON (:func:`view_to_json`), HTML, DOT or SVG. :func:`source_to_html` writes
the same page as ``view_to_html(build_view(source))`` without making the view's objects
when it can (``page_columns``: many times faster on graphs of a million ops).
:func:`read_statistics` joins a run's training statistics to a view, for
``view_to_html(view, statistics=...)``.
:class:`ViewOptions` selects the transformations;
``ViewOptions(group_series=False, template_order="tensorboard")`` (:data:`TENSORBOARD`) is
exactly the dashboard's view.

Importing this package loads neither numpy nor protobuf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and IDEs
    from summarylib.graph.view.diff_rendering import diff_to_html, diff_to_json, diff_to_text
    from summarylib.graph.view.diffing import GraphDiff, diff_views
    from summarylib.graph.view.dot_export import view_to_dot, view_to_svg
    from summarylib.graph.view.html_export import source_to_html, view_to_html
    from summarylib.graph.view.sources import (
        GraphSourceError,
        apply_compute_times,
        load_graph,
        load_graph_source,
    )
    from summarylib.graph.view.statistics import (
        GraphStatistics,
        check_graphs_match,
        read_statistics,
    )

# Exports of the other modules, loaded on first use (they pull in more code).
_LAZY = {
    "view_to_html": "summarylib.graph.view.html_export",
    "source_to_html": "summarylib.graph.view.html_export",
    "view_to_dot": "summarylib.graph.view.dot_export",
    "view_to_svg": "summarylib.graph.view.dot_export",
    "diff_views": "summarylib.graph.view.diffing",
    "diff_to_text": "summarylib.graph.view.diff_rendering",
    "diff_to_html": "summarylib.graph.view.diff_rendering",
    "diff_to_json": "summarylib.graph.view.diff_rendering",
    "GraphDiff": "summarylib.graph.view.diffing",
    "load_graph_source": "summarylib.graph.view.sources",
    "load_graph": "summarylib.graph.view.sources",
    "apply_compute_times": "summarylib.graph.view.sources",
    "GraphSourceError": "summarylib.graph.view.sources",
    "GraphStatistics": "summarylib.graph.view.statistics",
    "read_statistics": "summarylib.graph.view.statistics",
    "check_graphs_match": "summarylib.graph.view.statistics",
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
    "GraphDiff",
    "GraphSourceError",
    "GraphStatistics",
    "GraphView",
    "GroupNode",
    "Metaedge",
    "OpNode",
    "ViewNode",
    "ViewOptions",
    "apply_compute_times",
    "build_view",
    "check_graphs_match",
    "diff_to_html",
    "diff_to_json",
    "diff_to_text",
    "diff_views",
    "load_graph",
    "load_graph_source",
    "read_statistics",
    "source_to_html",
    "view_to_dot",
    "view_to_html",
    "view_to_json",
    "view_to_svg",
]
