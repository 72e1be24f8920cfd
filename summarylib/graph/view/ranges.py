"""Groups of more than :data:`RANGE` children drawn as ranges of :data:`RANGE` children.

Opening a group lays out its children; a group of 76,000 (a million-node graph's series of
``Assign`` ops) would be one layout of 76,000 boxes. So a group other than the root with
more than :data:`RANGE` children is drawn as its ranges: ``children 0\u2013999``,
``children 1000\u20131999``, ... (an en dash, U+2013; the last one ends at the last
child), each a group of its own, holding those children in their order, opened on its
own. The HTML page (``assets/viewer.js``), the layout
(:func:`~summarylib.graph.view.layout.layout_view`,
:func:`~summarylib.graph.view.layout.compose`), DOT and SVG
(:mod:`~summarylib.graph.view.dot_export`) and the statistics overlay
(:func:`~summarylib.graph.view.statistics.statistics_to_json`) all draw them, by this
module's rule (the page's JavaScript repeats it: keep the two in step):

* a range is named ``<group>/children a\u2013b``; should a child of the group have that name,
  the range's gets a thin space (U+2009) more, until no child has it;
* the group's metaedges between children of two ranges become one metaedge between the
  ranges (in order of first appearance; counts and sizes summed, shapes the distinct ones
  in order); those within one range are the range's, in the group's order;
* a range is a metanode (``kind="meta"``) without template, side panel or histograms; its
  cardinality is the sum of its children's (an op counts 1), its depth 1 more than its
  deepest child group's (1 when it holds only ops). The group keeps its own cardinality
  and depth, and draws no side panel (its side-panel children are in their ranges);
* the root is never split (a flat graph's top level is drawn near the view only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from summarylib.graph.view.model import GraphView, GroupNode, Metaedge, Shape

__all__ = ["RANGE", "is_ranged", "range_names", "ranges_of", "with_ranges"]

#: Most children a group draws; a group (not the root) with more is drawn as ranges.
RANGE = 1000
#: What a range's name gets more when a child of its group has that name.
THIN_SPACE = "\u2009"


def is_ranged(group: GroupNode) -> bool:
    """Whether ``group`` is drawn as ranges: not the root, more than :data:`RANGE`
    children."""
    return bool(group.name) and len(group.children) > RANGE


def range_names(group: GroupNode) -> list[str]:
    """The names of ``group``'s ranges, in order ([] when it is not drawn as ranges)."""
    if not is_ranged(group):
        return []
    return ranges_of(group.name, group.children)


def ranges_of(name: str, children: Sequence[str]) -> list[str]:
    """The names of the ranges of a group ``name`` (drawn as ranges) holding
    ``children`` in this order, by the module docstring's rule."""
    kids = set(children)
    n = len(children)
    names = []
    for lo in range(0, n, RANGE):
        got = f"{name}/children {lo}\u2013{min(n, lo + RANGE) - 1}"
        while got in kids:
            got += THIN_SPACE
        names.append(got)
    return names


def _split_metaedges(group: GroupNode, names: list[str]
                     ) -> tuple[list[Metaedge], list[list[Metaedge]]]:
    """``group``'s metaedges as drawn: between its ranges (summed) and within each."""
    pos = {c: k for k, c in enumerate(group.children)}
    top: dict[tuple[int, int], Metaedge] = {}
    inner: list[list[Metaedge]] = [[] for _ in names]
    for m in group.metaedges:
        v, w = pos.get(m.v), pos.get(m.w)
        if v is None or w is None:
            continue
        rv, rw = v // RANGE, w // RANGE
        if rv == rw:
            inner[rv].append(m)
            continue
        t = top.get((rv, rw))
        if t is None:
            t = top[(rv, rw)] = Metaedge(names[rv], names[rw])
        t.regular += m.regular
        t.control += m.control
        t.ref += m.ref
        t.size += m.size
        seen: list[Shape] = t.shapes
        for s in m.shapes:
            if s not in seen:
                seen.append(s)
    return list(top.values()), inner


class _Drawn(GraphView):
    """A view made by :func:`with_ranges` (its groups of ranges are not split again)."""


def with_ranges(view: GraphView) -> GraphView:
    """``view`` as it is drawn: each group drawn as ranges holds its ranges, each range
    its children (whose ``parent`` is the range), by the module docstring's rule.

    ``view`` itself is returned when no group is drawn as ranges or ``view`` came from
    this function; otherwise a new view sharing the nodes that do not change (the others
    are copies: ``view`` is left as it is). The base edges, templates and options are
    ``view``'s.
    """
    if isinstance(view, _Drawn):
        return view
    big = [name for name, g in view.nodes.items() if isinstance(g, GroupNode) and is_ranged(g)]
    if not big:
        return view
    nodes = dict(view.nodes)
    for name in big:
        group = nodes[name]  # (a copy when it is in a range of a bigger group)
        assert isinstance(group, GroupNode)
        names = range_names(group)
        top, inner = _split_metaedges(group, names)
        for k, rname in enumerate(names):
            members = group.children[k * RANGE:(k + 1) * RANGE]
            card, depth = 0, 1
            for c in members:
                child = nodes[c]
                if isinstance(child, GroupNode):
                    card += child.cardinality
                    depth = max(depth, child.depth + 1)
                else:
                    card += 1
                nodes[c] = dataclasses.replace(child, parent=rname)
            nodes[rname] = GroupNode(rname, "meta", list(members), inner[k], depth, card,
                                     parent=name)
        nodes[name] = dataclasses.replace(group, children=names, metaedges=top,
                                          side_panel={"in": [], "out": []})
    return _Drawn(nodes, view.edges, view.templates, view.options, view.renamed)
