"""Static pictures of a :class:`GraphView` at a depth: Graphviz DOT and a self-made SVG.

``depth`` says how many levels of groups are open: the root (level 0) is always open; a
group at level ``L`` (the root's children are level 1) is open when ``L < depth``. So
``depth=1`` is the dashboard's first picture (the root's children, all collapsed) and a
large depth opens everything.

What is drawn (both formats):

* an open group is a cluster (``subgraph "cluster_<i>"``) holding its children; a closed
  metanode is a rounded box labelled with its op count; a closed series is a stacked box
  (``box3d``) labelled ``add_[1-7]`` and the member count and op type; an op is an ellipse;
* each base edge is drawn between the visible nodes holding its ends (edges inside one
  closed node vanish); edges between the same two visible nodes are bundled, one for data
  and one (dashed) for control inputs; a data edge's label is the shape it carries
  (``N tensors`` for several) and its width follows the element count, as in TensorBoard;
* a group of more than 1,000 children holds its ranges of 1,000 (``children 0\u2013999``, ...:
  ``summarylib.graph.view.ranges``), groups of their own one level below it, as the page
  draws them;
* a group's side-panel children (``GroupNode.side_panel``) sit in a separate cluster of that
  group; their edges are not drawn: each becomes a line of the node's label
  (``← source`` / ``→ destination``), like the dashboard's annotations.

Names are untrusted: every DOT id and string is quoted and escaped (backslashes, quotes,
newlines and other control characters), and all SVG text is XML-escaped.

:func:`view_to_svg` does not need Graphviz: it draws the layered layout of
:mod:`summarylib.graph.view.layout` (the HTML viewer's), composed with the open groups.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from xml.sax.saxutils import escape as _xml_escape

from summarylib.graph.view.model import GraphView, GroupNode, OpNode, Shape, ViewNode
from summarylib.graph.view.ranges import with_ranges

__all__ = ["dot_quote", "view_to_dot", "view_to_svg"]

_RANKDIRS = ("BT", "TB", "LR", "RL")
#: Most annotation lines a side-panel node's label lists before ``+N more``.
_MAX_ANNOTATIONS = 5
_PALETTE = (
    "#c6dbef", "#c7e9c0", "#fdd0a2", "#dadaeb", "#fcbba1", "#d9f0a3", "#fee391", "#c7eae5",
    "#f2d7ee", "#d0d1e6",
)
_PLAIN_GROUP = "#eeeeee"


# --- what is visible at a depth ----------------------------------------------------------


def _label(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _levels(view: GraphView) -> dict[str, int]:
    """Level of every group (root 0), by walking children from the root."""
    levels = {"": 0}
    todo = [""]
    while todo:
        name = todo.pop()
        group = view.nodes[name]
        assert isinstance(group, GroupNode)
        for c in group.children:
            if isinstance(view.nodes.get(c), GroupNode) and c not in levels:
                levels[c] = levels[name] + 1
                todo.append(c)
    return levels


def open_groups(view: GraphView, depth: int) -> set[str]:
    """The groups drawn open at ``depth`` (see the module docstring); ValueError if < 1."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    return {name for name, level in _levels(view).items() if level < depth}


@dataclass
class _Bundle:
    """Base edges between two visible nodes, of one kind (data or control)."""

    count: int = 0
    size: int = 0
    shapes: list[Shape] = field(default_factory=list)


@dataclass
class _Visible:
    """The visible nodes, bundled edges and side-panel annotations at one depth."""

    opened: set[str]
    #: (source, destination, control) -> bundle, in first-seen order
    edges: dict[tuple[str, str, bool], _Bundle]
    #: visible side-panel node -> annotation lines
    notes: dict[str, list[str]]


def _visible(view: GraphView, opened: set[str]) -> _Visible:
    memo: dict[str, str] = {}

    def visible_of(name: str) -> str:
        # The node itself when its parent is open and visible, else what its parent shows
        # as. Iterative: names are untrusted and may nest deeper than Python's recursion.
        path = []
        n = name
        while n not in memo:
            path.append(n)
            p = view.nodes[n].parent
            if not p:
                break
            n = p
        for n in reversed(path):
            p = view.nodes[n].parent
            if not p:
                memo[n] = n
            else:
                pv = memo[p]
                memo[n] = n if pv == p and p in opened else pv
        return memo[name]

    panel_of: dict[str, str] = {}  # side-panel child -> its group
    for name in opened:
        group = view.nodes[name]
        assert isinstance(group, GroupNode)
        for side in ("in", "out"):
            for c in group.side_panel.get(side, []):
                panel_of[c] = name

    def in_panel_below(name: str, stop: set[str]) -> bool:
        node: ViewNode | None = view.nodes.get(name)
        while node is not None and node.name not in stop:
            if node.name in panel_of:
                return True
            node = view.nodes.get(node.parent) if node.parent is not None else None
        return False

    def ancestors(name: str) -> set[str]:
        out = set()
        node: ViewNode | None = view.nodes.get(name)
        while node is not None:
            out.add(node.name)
            node = view.nodes.get(node.parent) if node.parent is not None else None
        return out

    edges: dict[tuple[str, str, bool], _Bundle] = {}
    notes: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}  # per source op: an op may have thousands of outputs
    for e in view.edges:
        src, dst = view.nodes.get(e.src), view.nodes.get(e.dst)
        if not isinstance(src, OpNode) or not isinstance(dst, OpNode):
            continue
        vs, vd = visible_of(e.src), visible_of(e.dst)
        if vs == vd:
            continue
        common = ancestors(vs) & ancestors(vd)
        if in_panel_below(vs, common) or in_panel_below(vd, common):
            _note(notes, vs, "→ " + _label(vd))
            _note(notes, vd, "← " + _label(vs))
            continue
        bundle = edges.setdefault((vs, vd, e.control), _Bundle())
        bundle.count += 1
        if not e.control:
            shape = src.shapes[e.slot] if e.slot < len(src.shapes) else None
            size = sizes.get(e.src)
            if size is None:
                size = sizes[e.src] = _elements(src.shapes)
            bundle.size += size
            if e.slot < len(src.shapes) and shape not in bundle.shapes:
                bundle.shapes.append(shape)
    return _Visible(opened, edges, notes)


def _note(notes: dict[str, list[str]], name: str, line: str) -> None:
    lines = notes.setdefault(name, [])
    if line not in lines:
        lines.append(line)


def _elements(shapes: list[Shape]) -> int:
    # TensorBoard's edge size: the element count of all the source's outputs, unknown dims
    # counted as 1; 1 for a source without shapes.
    if not shapes:
        return 1
    total = 0
    for s in shapes:
        n = 1
        for d in s or ():
            n *= d if d is not None and d > 0 else 1
        total += n
    return total


def _template_colour(template: str | None) -> str:
    if template is None:
        return _PLAIN_GROUP
    h = int(hashlib.sha1(template.encode("utf-8")).hexdigest()[:8], 16)
    return _PALETTE[h % len(_PALETTE)]


def _node_lines(node: ViewNode) -> list[str]:
    """The text lines drawn for a closed node."""
    if isinstance(node, OpNode):
        return [_label(node.name)]
    if node.kind == "series":
        what = node.series_op or "?"
        n = len(node.series_ids) or len(node.children)
        return [_label(node.name), f"{n} \N{MULTIPLICATION SIGN} {what}"]
    return [_label(node.name), f"{node.cardinality} ops"]


def _tooltip(node: ViewNode) -> str:
    if isinstance(node, OpNode):
        return f"{node.name} ({node.op})" + (f" on {node.device}" if node.device else "")
    return f"{node.name} ({node.kind}, {node.cardinality} ops)"


# --- DOT -------------------------------------------------------------------------------------


def dot_quote(text: str) -> str:
    """``text`` as a quoted DOT string: backslashes, quotes and control characters escaped.

    Newlines become ``\\n`` (a centred line break in a label); other control characters are
    written as visible ``\\xNN`` text, so no input can end the string, start an escape
    sequence Graphviz interprets (``\\N``, ``\\G``, ``\\l``...) or inject statements.
    """
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _lines(lines: Iterable[str]) -> str:
    # Each line escaped on its own, joined with DOT's line break.
    parts = [dot_quote(line)[1:-1] for line in lines]
    return '"' + "\\n".join(parts) + '"'


def _rankdir(view: GraphView, rankdir: str | None) -> str:
    rd = rankdir if rankdir is not None else view.options.get("rankdir", "BT")
    if rd not in _RANKDIRS:
        raise ValueError(f"rankdir must be one of {_RANKDIRS}, got {rd!r}")
    assert isinstance(rd, str)
    return rd


def view_to_dot(view: GraphView, depth: int = 1, rankdir: str | None = None) -> str:
    """Graphviz DOT of ``view`` with the groups above ``depth`` open (see the module doc).

    ``rankdir`` defaults to ``view.options["rankdir"]`` (``"BT"``: inputs at the bottom).
    The result is deterministic: children in the view's order, edges in first-seen order.
    Groups of more than 1,000 children hold their ranges, a level of groups of their own
    (``summarylib.graph.view.ranges``), as in the page.
    """
    view = with_ranges(view)
    rd = _rankdir(view, rankdir)
    vis = _visible(view, open_groups(view, depth))
    out = [
        "digraph G {",
        f"  graph [rankdir={rd} compound=true labelloc=t fontname=\"sans-serif\" fontsize=11 "
        "nodesep=0.25 ranksep=0.4];",
        "  node [fontname=\"sans-serif\" fontsize=10 style=filled fillcolor=\"#ffffff\"];",
        "  edge [fontname=\"sans-serif\" fontsize=9 color=\"#777777\" arrowsize=0.6];",
    ]
    counter = [0]
    _dot_group(view, "", vis, out, "  ", counter)
    from summarylib.graph.view.layout import edge_label, edge_width

    for (vs, vd, control), b in vis.edges.items():
        attrs = []
        if control:
            attrs.append("style=dashed")
        else:
            label = edge_label(b.shapes)
            if label:
                attrs.append(f"label={dot_quote(label)}")
            attrs.append(f"penwidth={edge_width(b.size):.2f}")
        if b.count > 1:
            attrs.append(f"tooltip={dot_quote(f'{b.count} edges')}")
        out.append(f"  {dot_quote(vs)} -> {dot_quote(vd)} [{' '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _dot_group(view: GraphView, name: str, vis: _Visible, out: list[str], ind: str,
               counter: list[int]) -> None:
    """The children of the open group ``name`` (main part, then its side-panel cluster),
    open groups among them drawn as clusters holding their own children.

    The same depth-first order a recursion would give, kept on a stack of steps
    (``group``: a group's children; ``panel``: its side-panel cluster; ``child``: one
    child; ``line``: text), since open groups nest as deep as the graph's scopes.
    """
    todo: list[tuple[str, str, str]] = [("group", name, ind)]
    while todo:
        step, n, ind = todo.pop()
        if step == "line":
            out.append(n)
            continue
        steps: list[tuple[str, str, str]] = []
        if step == "group":
            main, panel = _split_panel(view, n)
            steps = [("child", c, ind) for c in main]
            if panel:
                steps.append(("panel", n, ind))
        elif step == "panel":
            counter[0] += 1
            out.append(f"{ind}subgraph \"cluster_{counter[0]}\" {{")
            title = f"{_label(n) or 'root'}: side panel"
            out.append(f"{ind}  label={dot_quote(title)}; style=dashed; color=\"#999999\";")
            steps = [("child", c, ind + "  ") for c in dict.fromkeys(_split_panel(view, n)[1])]
            steps.append(("line", f"{ind}}}", ind))
        elif _dot_child(view, n, vis, out, ind, counter):
            steps = [("group", n, ind + "  "), ("line", f"{ind}}}", ind)]
        todo.extend(reversed(steps))


def _split_panel(view: GraphView, name: str) -> tuple[list[str], list[str]]:
    """Group ``name``'s children: ``(main part, side panel)``."""
    group = view.nodes[name]
    assert isinstance(group, GroupNode)
    panel = [c for side in ("in", "out") for c in group.side_panel.get(side, [])
             if c in group.children]
    return [c for c in group.children if c not in panel], panel


def _dot_child(view: GraphView, name: str, vis: _Visible, out: list[str], ind: str,
               counter: list[int]) -> bool:
    """One child: a node line, or (True) the opening lines of an open group's cluster."""
    node = view.nodes[name]
    if isinstance(node, GroupNode) and name in vis.opened:
        counter[0] += 1
        out.append(f"{ind}subgraph \"cluster_{counter[0]}\" {{")
        style = "rounded,filled" if node.kind == "meta" else "dashed,filled"
        colour = _template_colour(node.template)
        out.append(f"{ind}  label={dot_quote(_label(name))}; tooltip={dot_quote(_tooltip(node))};"
                   f" style=\"{style}\"; fillcolor=\"{colour}40\"; color=\"#888888\";")
        return True
    lines = _node_lines(node) + _annotations(vis.notes.get(name, []))
    attrs = [f"label={_lines(lines)}", f"tooltip={dot_quote(_tooltip(node))}"]
    if isinstance(node, GroupNode):
        colour = _template_colour(node.template)
        if node.kind == "series":
            attrs.append(f"shape=box3d fillcolor=\"{colour}\"")
        else:
            attrs.append(f"shape=box style=\"rounded,filled\" fillcolor=\"{colour}\"")
    else:
        attrs.append("shape=ellipse")
    out.append(f"{ind}{dot_quote(name)} [{' '.join(attrs)}];")
    return False


def _annotations(lines: list[str]) -> list[str]:
    if len(lines) <= _MAX_ANNOTATIONS:
        return lines
    return [*lines[:_MAX_ANNOTATIONS], f"+{len(lines) - _MAX_ANNOTATIONS} more"]


# --- SVG -------------------------------------------------------------------------------------

_SVG_PAD = 10.0
#: Annotation lines drawn beside a node, their length, height and the width of a character.
_SVG_NOTES = 3
_NOTE_CHARS = 24
_NOTE_LINE = 10.0
_NOTE_CHAR_W = 5.2


def _x(text: str) -> str:
    """XML-escaped text, quotes included; characters XML 1.0 forbids become U+FFFD."""
    clean = "".join(
        ch if ch in "\t\n\r" or 0x20 <= ord(ch) <= 0xD7FF or 0xE000 <= ord(ch) <= 0xFFFD
        or ord(ch) >= 0x10000 else "\ufffd"
        for ch in text
    )
    return _xml_escape(clean, {'"': "&quot;", "'": "&#39;"})


def _fmt(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def view_to_svg(view: GraphView, depth: int = 1, rankdir: str | None = None) -> str:
    """A standalone SVG picture of ``view`` at ``depth``, laid out without Graphviz.

    Open groups are framed boxes holding their children; closed groups are filled boxes
    (stacks for series) with their op count; ops are ellipses; metaedges of open groups are
    drawn as polylines with arrowheads (dashed when they carry only control edges), labelled
    with their shape; side-panel children stand in a column at their group's right, with
    their edges listed under them instead of drawn. Every text is XML-escaped. Groups of
    more than 1,000 children hold their ranges, as in :func:`view_to_dot`.
    """
    from summarylib.graph.view.layout import compose, edge_label, edge_width, layout_view

    view = with_ranges(view)

    rd = _rankdir(view, rankdir)
    opened = open_groups(view, depth)
    layouts = layout_view(view, rd, groups=sorted(opened))
    scene = compose(view, layouts, opened)
    vis = _visible(view, opened)
    root = scene.boxes[""]
    right = root.w
    for name, notes in vis.notes.items():
        b = scene.boxes.get(name)
        if b is not None:
            longest = max(len(line) for line in _svg_notes(notes))
            right = max(right, b.x + b.w / 2 + 4 + longest * _NOTE_CHAR_W)
    width, height = right + 2 * _SVG_PAD, root.h + 2 * _SVG_PAD
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_fmt(width)}" '
        f'height="{_fmt(height)}" viewBox="0 0 {_fmt(width)} {_fmt(height)}" '
        'font-family="sans-serif" font-size="11">',
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto-start-reverse\">"
        "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#777\"/></marker></defs>",
        f'<g transform="translate({_fmt(_SVG_PAD)},{_fmt(_SVG_PAD)})">',
    ]
    # Open groups first (outermost first, so inner frames paint over outer ones).
    levels = _levels(view)
    for name in sorted(opened, key=lambda n: (levels[n], n)):
        if name == "" or name not in scene.boxes:
            continue
        b = scene.boxes[name]
        node = view.nodes[name]
        assert isinstance(node, GroupNode)
        x0, y0 = b.x - b.w / 2, b.y - b.h / 2
        out.append(
            f'<g class="group open"><title>{_x(_tooltip(node))}</title>'
            f'<rect x="{_fmt(x0)}" y="{_fmt(y0)}" width="{_fmt(b.w)}" height="{_fmt(b.h)}" '
            f'rx="6" fill="{_template_colour(node.template)}" fill-opacity="0.25" '
            'stroke="#888"/>'
            f'<text x="{_fmt(x0 + 8)}" y="{_fmt(y0 + 15)}" font-weight="bold">'
            f"{_x(_label(name))}</text></g>"
        )
    for group, i, pts in scene.edges:
        g = view.nodes[group]
        assert isinstance(g, GroupNode)
        me = g.metaedges[i]
        if len(pts) < 2:
            continue
        dashed = ' stroke-dasharray="4,3"' if me.regular == 0 and me.control > 0 else ""
        path = " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in pts)
        label = edge_label(me.shapes) if me.regular else ""
        out.append(
            f'<g class="edge"><polyline points="{path}" fill="none" stroke="#777" '
            f'stroke-width="{edge_width(me.size) if me.regular else 1.0:.2f}"{dashed} '
            'marker-end="url(#arrow)"/>'
        )
        if label:
            mx, my = pts[len(pts) // 2] if len(pts) > 2 else (
                (pts[0][0] + pts[1][0]) / 2, (pts[0][1] + pts[1][1]) / 2)
            out.append(f'<text x="{_fmt(mx + 3)}" y="{_fmt(my)}" font-size="9" '
                       f'fill="#555">{_x(label)}</text>')
        out.append("</g>")
    for name, b in scene.boxes.items():
        if name == "" or name in opened:
            continue
        out.append(_svg_node(view.nodes[name], b.x, b.y, b.w, b.h, vis.notes.get(name, [])))
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def _svg_notes(notes: list[str]) -> list[str]:
    """At most :data:`_SVG_NOTES` annotation lines, each cut to :data:`_NOTE_CHARS`."""
    lines = [n if len(n) <= _NOTE_CHARS else n[: _NOTE_CHARS - 1] + "\N{HORIZONTAL ELLIPSIS}"
             for n in notes[:_SVG_NOTES]]
    if len(notes) > _SVG_NOTES:
        lines.append(f"+{len(notes) - _SVG_NOTES} more")
    return lines


def _svg_node(node: ViewNode, x: float, y: float, w: float, h: float,
              notes: list[str]) -> str:
    lines = _node_lines(node)
    parts = [f'<g class="node {node.kind}"><title>{_x(_tooltip(node))}</title>']
    if isinstance(node, OpNode):
        parts.append(f'<ellipse cx="{_fmt(x)}" cy="{_fmt(y)}" rx="{_fmt(w / 2)}" '
                     f'ry="{_fmt(h / 2)}" fill="#fff" stroke="#555"/>')
    else:
        fill = _template_colour(node.template)
        x0, y0 = x - w / 2, y - h / 2
        if node.kind == "series":
            for k in (2, 1):  # the stack: two offset copies behind the front box
                parts.append(f'<rect x="{_fmt(x0 + 3 * k)}" y="{_fmt(y0 - 3 * k + 6)}" '
                             f'width="{_fmt(w - 6)}" height="{_fmt(h - 6)}" rx="4" '
                             f'fill="{fill}" stroke="#777"/>')
            x0, y0, w, h = x0, y0 + 6, w - 6, h - 6
        parts.append(f'<rect x="{_fmt(x0)}" y="{_fmt(y0)}" width="{_fmt(w)}" '
                     f'height="{_fmt(h)}" rx="4" fill="{fill}" stroke="#777"/>')
        y = y0 + h / 2
    if len(lines) == 1:
        parts.append(f'<text x="{_fmt(x)}" y="{_fmt(y + 4)}" text-anchor="middle">'
                     f"{_x(lines[0])}</text>")
    else:
        parts.append(f'<text x="{_fmt(x)}" y="{_fmt(y - 1)}" text-anchor="middle">'
                     f"{_x(lines[0])}</text>"
                     f'<text x="{_fmt(x)}" y="{_fmt(y + 10)}" text-anchor="middle" '
                     f'font-size="9" fill="#555">{_x(lines[1])}</text>')
    # Annotations to the right of the node, as the dashboard draws them.
    shown = _svg_notes(notes)
    top = y - (len(shown) - 1) * _NOTE_LINE / 2 + 3
    for k, note in enumerate(shown):
        parts.append(f'<text x="{_fmt(x + w / 2 + 4)}" y="{_fmt(top + _NOTE_LINE * k)}" '
                     f'font-size="9" fill="#666">{_x(note)}</text>')
    parts.append("</g>")
    return "".join(parts)
