"""Layered layout of a :class:`GraphView`, one group at a time, computed ahead of time.

Every group gets one layout of its direct children drawn **collapsed**
(:func:`layout_group`); the viewer composes expanded groups from those pieces
(:func:`compose`, mirrored by ``assets/viewer.js``). A group's layout therefore never
depends on what is expanded, which is what keeps expansion stable: opening a group makes
room for it by stretching its ancestors' layouts, without reordering anything.

Each group's children are placed by :func:`~summarylib.graph.view.layering.arrange` (a
small Sugiyama; groups with more than :data:`~summarylib.graph.view.layering.CHUNK`
children are cut into chunks in topological order, so no layered layout ever handles more
than that; edges between chunks are straight lines).

A group of more than 1,000 children is laid out as the page draws it: as its ranges of
1,000 children, each a group of its own (:mod:`~summarylib.graph.view.ranges`).

Children in the group's side panel (``GroupNode.side_panel``) are not in the layered
layout: they stand in a column to the right of it, and their metaedges are not routed.

Coordinates are pixels, ``x`` to the right and ``y`` down; boxes are centre-based
``(x, y, w, h)`` in the group's own frame, whose main layout spans ``[0, width] x [0,
height]``. ``rankdir`` follows Graphviz: ``"BT"`` (TensorBoard's default: inputs at the
bottom), ``"TB"``, ``"LR"``, ``"RL"``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.layering import CHUNK, Layered, Point, arrange
from summarylib.graph.view.model import GraphView, GroupNode, Metaedge, OpNode, Shape, ViewNode
from summarylib.graph.view.ranges import with_ranges

__all__ = [
    "CHUNK",
    "Box",
    "EdgeRoute",
    "GroupLayout",
    "Scene",
    "collapsed_size",
    "compose",
    "edge_label",
    "edge_width",
    "layout_group",
    "layout_to_json",
    "layout_view",
]

#: Estimated width of one character of the 11 px sans-serif label font.
CHAR_W = 6.4
#: An expanded group: padding around its content and the band holding its label.
PAD = 12.0
HEADER = 24.0
#: The side-panel column: gap to the main layout, and between the boxes in it.
PANEL_GAP = 28.0
PANEL_VGAP = 8.0
#: Edge width scale (TensorBoard's): a power scale of exponent 0.3 maps element counts in
#: [1, 5e6] to [0.75, 12] px.
MIN_EDGE_W, MAX_EDGE_W, MAX_EDGE_SIZE, EDGE_EXP = 0.75, 12.0, 5e6, 0.3

RANKDIRS = ("BT", "TB", "LR", "RL")
#: Between the dims of an edge label (TensorBoard's multiplication sign).
TIMES = "\u00d7"



class Box(NamedTuple):
    """A centre-based box: centre ``(x, y)``, width ``w``, height ``h``."""

    x: float
    y: float
    w: float
    h: float


@dataclass
class EdgeRoute:
    """How one metaedge is drawn inside its group.

    ``points`` are the bends between the two ends, from ``v`` to ``w``, in the group's
    frame (empty: a straight line); the ends themselves are the children's boxes.
    """

    points: list[Point]
    label: str
    width: float


@dataclass
class GroupLayout:
    """The layout of one group's children, all collapsed.

    ``nodes`` maps every child (side-panel ones included) to its collapsed box; ``width``
    and ``height`` bound the main layout only. ``edges`` follows ``GroupNode.metaedges``
    (``None`` for a metaedge touching a side-panel child). ``panel`` lists the side-panel
    children in drawing order (``in`` then ``out``); ``chunks`` is 1 unless the group was
    cut into chunks.
    """

    width: float
    height: float
    nodes: dict[str, Box]
    edges: list[EdgeRoute | None]
    panel: list[str] = field(default_factory=list)
    chunks: int = 1


# --- node sizes, edge labels and widths -------------------------------------------------


def label_of(name: str) -> str:
    """The last segment of a full name (what a box shows)."""
    return name.rsplit("/", 1)[-1]


def collapsed_size(node: ViewNode) -> tuple[float, float]:
    """Width and height of a node drawn collapsed: an op ellipse, a group box or a stack.

    The width follows the label's length within bounds; the viewer cuts longer labels.
    """
    n = len(label_of(node.name))
    if isinstance(node, OpNode):
        return _round(min(max(n * CHAR_W + 18.0, 40.0), 150.0)), 20.0
    w = _round(min(max(n * CHAR_W + 26.0, 64.0), 170.0))
    if node.kind == "series":
        # Stacks show three offset copies: extra room along the stacking direction.
        return (w, 36.0) if node.series_vertical else (w + 10.0, 28.0)
    return w, 28.0


def _dim(d: int | None) -> str:
    return "?" if d is None or d < 0 else str(d)


def shape_text(shape: Shape) -> str:
    """``8\u00d73`` (multiplication signs); ``?`` for an unknown rank or dim; ``scalar``
    for rank 0."""
    if shape is None:
        return "?"
    if len(shape) == 0:
        return "scalar"
    return TIMES.join(_dim(d) for d in shape)


def edge_label(shapes: list[Shape]) -> str:
    """An edge's label: the one shape it carries, ``N tensors`` for several, else empty."""
    if len(shapes) == 1:
        return shape_text(shapes[0])
    return f"{len(shapes)} tensors" if shapes else ""


def edge_width(size: int) -> float:
    """Stroke width in px for a metaedge carrying ``size`` elements (TensorBoard's scale)."""
    s = min(max(float(size), 1.0), MAX_EDGE_SIZE)
    t = (math.pow(s, EDGE_EXP) - 1.0) / (math.pow(MAX_EDGE_SIZE, EDGE_EXP) - 1.0)
    return MIN_EDGE_W + (MAX_EDGE_W - MIN_EDGE_W) * t


# --- one group ----------------------------------------------------------------------------


def _panel(group: GroupNode) -> list[str]:
    names: list[str] = []
    for side in ("in", "out"):
        for name in group.side_panel.get(side, []):
            if name not in names and name in group.children:
                names.append(name)
    return names


_Memo = dict[tuple[object, ...], "Layered"]


def layout_group(
    view: GraphView, group: GroupNode, rankdir: str = "BT", memo: _Memo | None = None
) -> GroupLayout:
    """The layout of ``group``'s children, drawn collapsed (see the module docstring).

    ``memo`` (shared across calls) reuses the layered layout of an earlier group with the
    same child sizes and edges: repeated blocks (templates, series members) are the bulk
    of big graphs and come out identical.
    """
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir must be one of {RANKDIRS}, not {rankdir!r}")
    panel = _panel(group)
    in_panel = set(panel)
    main = [c for c in group.children if c not in in_panel]
    index = {name: i for i, name in enumerate(main)}
    sized = {c: collapsed_size(view.nodes[c]) for c in group.children}
    across = rankdir in ("TB", "BT")
    # (along the layers, across them): width and height for vertical flows, else swapped.
    sizes = [(sized[c] if across else (sized[c][1], sized[c][0])) for c in main]
    edge_ids: list[int] = []
    pairs: list[tuple[int, int]] = []
    for i, me in enumerate(group.metaedges):
        a, b = index.get(me.v), index.get(me.w)
        if a is not None and b is not None:
            edge_ids.append(i)
            pairs.append((a, b))
    key = (tuple(sizes), tuple(pairs))
    lay = memo.get(key) if memo is not None else None
    if lay is None:
        lay = arrange(sizes, pairs)
        if memo is not None:
            memo[key] = lay

    def to_xy(o: float, r: float) -> Point:
        if rankdir == "TB":
            return o, r
        if rankdir == "BT":
            return o, lay.extent_r - r
        if rankdir == "LR":
            return r, o
        return lay.extent_r - r, o

    width, height = (
        (lay.extent_o, lay.extent_r) if across else (lay.extent_r, lay.extent_o)
    )
    nodes: dict[str, Box] = {}
    for c, o, r in zip(main, lay.o, lay.r, strict=True):
        x, y = to_xy(o, r)
        w, h = sized[c]
        nodes[c] = Box(_round(x), _round(y), w, h)
    # The side panel's collapsed column (the viewer restacks it when boxes in it expand).
    py = 0.0
    for c in panel:
        w, h = sized[c]
        nodes[c] = Box(_round(width + PANEL_GAP + w / 2.0), _round(py + h / 2.0), w, h)
        py += h + PANEL_VGAP
    routes: list[EdgeRoute | None] = [None] * len(group.metaedges)
    for i, pts in zip(edge_ids, lay.routes, strict=True):
        me = group.metaedges[i]
        routes[i] = EdgeRoute(
            [(_round(x), _round(y)) for x, y in (to_xy(o, r) for o, r in pts)],
            edge_label(me.shapes),
            round(edge_width(me.size), 2),
        )
    return GroupLayout(
        _round(width), _round(height), nodes, routes, panel, lay.chunks)


def _round(v: float) -> float:
    # One decimal is below a pixel and keeps the embedded JSON short.
    return round(v, 1)


def _rankdir(view: GraphView, rankdir: str | None) -> str:
    if rankdir is not None:
        return rankdir
    opt = view.options.get("rankdir", "BT")
    return opt if isinstance(opt, str) else "BT"


def layout_view(
    view: GraphView, rankdir: str | None = None, groups: Iterable[str] | None = None
) -> dict[str, GroupLayout]:
    """Layouts of ``groups`` (default: every group), keyed by group name.

    ``rankdir`` defaults to ``view.options["rankdir"]`` (``"BT"`` when absent). Groups of
    more than 1,000 children are laid out as the page draws them: as their ranges, each
    range a group of its own (``summarylib.graph.view.ranges``), whose names ``groups``
    may hold.
    """
    rd = _rankdir(view, rankdir)
    with gc_paused():
        return _layout_all(with_ranges(view), rd, groups)


def _layout_all(view: GraphView, rd: str, groups: Iterable[str] | None) -> dict[str, GroupLayout]:
    names = groups if groups is not None else [
        k for k, v in view.nodes.items() if isinstance(v, GroupNode)
    ]
    out: dict[str, GroupLayout] = {}
    memo: _Memo = {}
    for name in names:
        node = view.nodes[name]
        if not isinstance(node, GroupNode):
            raise ValueError(f"{name!r} is not a group")
        out[name] = layout_group(view, node, rd, memo)
    return out


def layout_to_json(view: GraphView, layouts: dict[str, GroupLayout]) -> dict[str, object]:
    """The layouts in the compact form the HTML viewer reads (groups of more than 1,000
    children as their ranges, as :func:`layout_view` lays them out).

    ``{group name: {"w", "h", "nodes": [[x, y, w, h], ...] in children order,
    "panel": [child index, ...], "chunks": k, "edges": [[[x, y, ...], width, label] |
    null, ...] in metaedges order}}``: bend points flattened.
    """
    out: dict[str, object] = {}
    view = with_ranges(view)
    for name, lay in layouts.items():
        group = view.nodes[name]
        assert isinstance(group, GroupNode)
        pos = {c: i for i, c in enumerate(group.children)}
        nodes = [list(lay.nodes[c]) for c in group.children]
        edges: list[object] = []
        for route in lay.edges:
            if route is None:
                edges.append(None)
            else:
                edges.append([[v for p in route.points for v in p], route.width, route.label])
        out[name] = {
            "w": lay.width,
            "h": lay.height,
            "nodes": nodes,
            "panel": [pos[c] for c in lay.panel],
            "chunks": lay.chunks,
            "edges": edges,
        }
    return out


# --- composing expanded groups (mirrored by the viewer's JavaScript) -----------------------


@dataclass
class Scene:
    """Everything drawn for one set of expanded groups, in one frame (top-left at 0, 0).

    ``boxes`` maps every visible node (the root included) to its centre-based box; an
    expanded group's box is its frame. ``edges`` lists ``(group, metaedge index, points)``
    for every routed metaedge of every expanded group, the ends clipped to the boxes.
    """

    boxes: dict[str, Box]
    edges: list[tuple[str, int, list[Point]]]


def _stretch(intervals: list[tuple[float, float, float]]) -> tuple[list[float], list[float]]:
    """Room to insert so that every interval ``(lo, hi, need)`` grows by ``need``.

    Intervals are handled by centre; each one's deficit (``need`` minus the room already
    inserted inside it) goes in at its centre, so that a column of boxes sharing a centre
    (a chain) stays aligned when one of them grows. A point ``p`` counts for the intervals
    with ``lo < p <= hi``. Returns the sorted insertion points and the cumulative room up
    to each.
    """
    pts: list[float] = []
    cum: list[float] = []
    for lo, hi, need in sorted(intervals, key=lambda t: (t[0] + t[1]) / 2.0):
        if need <= 0:
            continue
        k = bisect.bisect_right(pts, lo)
        have = (cum[-1] if cum else 0.0) - (cum[k - 1] if k else 0.0)
        if have < need:
            pts.append((lo + hi) / 2.0)
            cum.append((cum[-1] if cum else 0.0) + need - have)
    return pts, cum


def _mapper(pts: list[float], cum: list[float], v: float) -> float:
    k = bisect.bisect_right(pts, v)
    return v + (cum[k - 1] if k else 0.0)


def _clip(box: Box, toward: Point) -> Point:
    """Where the segment from ``box``'s centre to ``toward`` leaves the box."""
    dx, dy = toward[0] - box.x, toward[1] - box.y
    hw, hh = box.w / 2.0, box.h / 2.0
    if abs(dx) * hh <= 1e-9 and abs(dy) * hw <= 1e-9:
        return box.x, box.y
    t = min(hw / abs(dx) if dx else float("inf"), hh / abs(dy) if dy else float("inf"))
    if t >= 1.0:  # the other end lies inside this box
        return box.x, box.y
    return box.x + dx * t, box.y + dy * t


@dataclass
class _Placed:
    w: float
    h: float
    kids: dict[str, Box]  # relative to the group's top-left corner
    edges: list[tuple[int, list[Point]]]


def _place(
    view: GraphView, layouts: dict[str, GroupLayout], top: str, expanded: Collection[str],
    cache: dict[str, _Placed],
) -> _Placed:
    """Place ``top`` and every open group inside it into ``cache``, inner groups first.

    A loop over an explicit list, not recursion: open groups nest as deep as the scopes.
    """
    order = [top]
    for name in order:  # grows while it is read: every open group below top, parents first
        group = view.nodes[name]
        assert isinstance(group, GroupNode)
        order.extend(c for c in group.children
                     if c in expanded and isinstance(view.nodes[c], GroupNode))
    for name in reversed(order):
        _place_group(view, layouts, name, expanded, cache)
    return cache[top]


def _place_group(
    view: GraphView, layouts: dict[str, GroupLayout], name: str, expanded: Collection[str],
    cache: dict[str, _Placed],
) -> _Placed:
    """Place group ``name``'s children; its open child groups are already in ``cache``."""
    lay = layouts[name]
    group = view.nodes[name]
    assert isinstance(group, GroupNode)
    size: dict[str, tuple[float, float]] = {}
    for c in group.children:
        b = lay.nodes[c]
        if c in expanded and isinstance(view.nodes[c], GroupNode):
            p = cache[c]
            size[c] = (p.w, p.h)
        else:
            size[c] = (b.w, b.h)
    in_panel = set(lay.panel)
    main = [c for c in group.children if c not in in_panel]
    xs = _stretch([(lay.nodes[c].x - lay.nodes[c].w / 2.0, lay.nodes[c].x + lay.nodes[c].w / 2.0,
                    size[c][0] - lay.nodes[c].w) for c in main])
    ys = _stretch([(lay.nodes[c].y - lay.nodes[c].h / 2.0, lay.nodes[c].y + lay.nodes[c].h / 2.0,
                    size[c][1] - lay.nodes[c].h) for c in main])
    x0, y0 = PAD, HEADER
    kids: dict[str, Box] = {}
    for c in main:
        b = lay.nodes[c]
        lx = _mapper(*xs, b.x - b.w / 2.0)
        hx = _mapper(*xs, b.x + b.w / 2.0)
        ly = _mapper(*ys, b.y - b.h / 2.0)
        hy = _mapper(*ys, b.y + b.h / 2.0)
        kids[c] = Box(x0 + (lx + hx) / 2.0, y0 + (ly + hy) / 2.0, *size[c])
    core_w = _mapper(*xs, lay.width)
    core_h = _mapper(*ys, lay.height)
    panel_w = panel_h = 0.0
    for c in lay.panel:
        w, h = size[c]
        kids[c] = Box(0.0, y0 + panel_h + h / 2.0, w, h)
        panel_h += h + PANEL_VGAP
        panel_w = max(panel_w, w)
    if lay.panel:
        panel_h -= PANEL_VGAP
        px = x0 + core_w + (PANEL_GAP if main else 0.0)
        for c in lay.panel:
            b = kids[c]
            kids[c] = Box(px + b.w / 2.0, b.y, b.w, b.h)
        core_w = px - x0 + panel_w
    w = max(PAD + core_w + PAD, len(label_of(name)) * CHAR_W + 2 * PAD)
    h = HEADER + max(core_h, panel_h) + PAD
    edges: list[tuple[int, list[Point]]] = []
    for i, route in enumerate(lay.edges):
        if route is None:
            continue
        me: Metaedge = group.metaedges[i]
        bv, bw = kids[me.v], kids[me.w]
        mid = [(x0 + _mapper(*xs, x), y0 + _mapper(*ys, y)) for x, y in route.points]
        first = mid[0] if mid else (bw.x, bw.y)
        last = mid[-1] if mid else (bv.x, bv.y)
        edges.append((i, [_clip(bv, first), *mid, _clip(bw, last)]))
    placed = _Placed(w, h, kids, edges)
    cache[name] = placed
    return placed


def compose(
    view: GraphView, layouts: dict[str, GroupLayout], expanded: Collection[str] = ()
) -> Scene:
    """The scene with the root and the groups in ``expanded`` open.

    A group in ``expanded`` whose ancestors are not all open stays hidden. Each open group
    keeps its own layout; children it holds that are open are larger than their collapsed
    box, so the layout is stretched (room inserted along x and y) where they stand.
    Groups of more than 1,000 children hold their ranges (:func:`layout_view`), which
    ``expanded`` opens by name.
    """
    view = with_ranges(view)
    cache: dict[str, _Placed] = {}
    root = _place(view, layouts, "", frozenset(expanded), cache)
    boxes: dict[str, Box] = {"": Box(root.w / 2.0, root.h / 2.0, root.w, root.h)}
    edges: list[tuple[str, int, list[Point]]] = []
    todo = [("", 0.0, 0.0)]
    while todo:
        name, ox, oy = todo.pop()
        placed = cache[name]
        for i, pts in placed.edges:
            edges.append((name, i, [(ox + x, oy + y) for x, y in pts]))
        for c, b in placed.kids.items():
            box = Box(ox + b.x, oy + b.y, b.w, b.h)
            boxes[c] = box
            if c in cache:
                todo.append((c, box.x - box.w / 2.0, box.y - box.h / 2.0))
    return Scene(boxes, edges)
