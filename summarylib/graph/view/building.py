"""``build_view``: every transformation of the view, in TensorBoard's order.

1. :func:`~summarylib.graph.view.normalize.normalize` (graph.ts ``build``);
2. :func:`~summarylib.graph.view.hierarchy.add_nodes` (hierarchy.ts ``addNodes``);
3. :func:`~summarylib.graph.view.series.group_op_series` (``groupSeries``, before edges);
4. :func:`~summarylib.graph.view.hierarchy.add_edges` (``addEdges``);
5. :func:`~summarylib.graph.view.templates.find_templates` (template.ts ``detect``);
6. with ``group_series``: :func:`~summarylib.graph.view.series.group_group_series`, then
   templates again (the parents' structure changed);
7. :func:`~summarylib.graph.view.extraction.extract_all` (render.ts ``extractHighDegrees``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.extraction import extract_all
from summarylib.graph.view.hierarchy import Tree, add_edges, add_nodes
from summarylib.graph.view.model import GraphView
from summarylib.graph.view.normalize import normalize
from summarylib.graph.view.options import ViewOptions
from summarylib.graph.view.series import group_group_series, group_op_series
from summarylib.graph.view.templates import find_templates, new_state

__all__ = ["build_view"]


def build_view(source: Any, options: ViewOptions | Mapping[str, Any] | None = None,
               **overrides: Any) -> GraphView:
    """Build the dashboard's hierarchy of ``source``.

    ``source``: an IR :class:`~summarylib.graph.Graph`, a ``GraphDef`` message (ours or
    TensorFlow's), its serialized bytes, or a path (a logdir, event file, ``.pb`` or
    ``.pbtxt``) read with ``load_graph_source``. ``options`` (default
    :class:`ViewOptions`, or a dict of its fields) with ``overrides`` applied
    (``build_view(g, series=False)``).
    A source that is not a graph raises ValueError naming it.
    """
    if options is None:
        options = ViewOptions()
    elif isinstance(options, Mapping):
        # view.options (or its JSON) builds the same view again.
        options = ViewOptions().with_overrides(
            **{k: v for k, v in options.items() if k != "hidden_count"})
    elif not isinstance(options, ViewOptions):
        raise TypeError(f"build_view: options must be a ViewOptions, got {type(options).__name__}")
    opts = options.with_overrides(**overrides) if overrides else options
    if isinstance(source, (str, os.PathLike)):
        source = _load_path(source)
    # Hundreds of thousands of small containers: cyclic GC passes would cost more than
    # the build itself, and nothing made here is cyclic garbage.
    with gc_paused():
        return _build(source, opts)


def _build(source: Any, opts: ViewOptions) -> GraphView:
    norm = normalize(source, opts)
    tree = Tree()
    add_nodes(tree, norm.ops)
    if opts.series:
        group_op_series(tree, opts.series_min_size)
    add_edges(tree, norm.edges)
    state = new_state()
    templates = find_templates(tree, opts.template_order, state)
    made = group_group_series(tree, opts.series_min_size) if (
        opts.series and opts.group_series) else []
    if made:
        # The parents of the new series (and their ancestors) changed shape.
        changed: set[str] = set()
        for name in made:
            parent = tree.group(name).parent
            while parent is not None and parent not in changed:
                changed.add(parent)
                parent = tree.group(parent).parent
        templates = find_templates(tree, opts.template_order, state, changed)
    extract_all(tree, set(opts.side_panel), opts.auto_extract)
    for g in tree.groups():
        g.children = tree.children(g.name)
        g.metaedges = list(tree.metaedges[g.name].values())
        if g.kind == "series":
            g.series_vertical = g.name in tree.nonctl
    options_json: dict[str, object] = opts.to_json()
    options_json["hidden_count"] = norm.hidden
    return GraphView(nodes=tree.nodes, edges=norm.edges, templates=templates,
                     options=options_json, renamed=norm.renamed)


def _load_path(path: str | os.PathLike[str]) -> Any:
    from summarylib.graph.view.sources import load_graph_source

    return load_graph_source(path)
