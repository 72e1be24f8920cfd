"""Steps 2 and 5 of the view: the scope tree and the metaedges (TensorBoard's hierarchy.ts).

:class:`Tree` is the hierarchy while it is built. ``nodes`` is TensorBoard's node index
(root ``""`` first, then groups and ops in creation order, series appended when they are
made); ``kids[g]`` is group ``g``'s metagraph node list (an ordered set);
``metaedges[g]`` maps ``(v, w)`` child pairs to :class:`Metaedge` in creation order.

* :func:`add_nodes` (``addNodes``): for op ``a/b/c`` the groups ``a`` and ``a/b`` are made
  on first use; every group on the path counts the op in ``cardinality``,
  ``op_histogram`` (keys in order of first appearance, which TensorBoard's template
  signature depends on) and ``device_histogram`` (non-empty devices); ``depth`` is the
  height of the subtree (1: ops only), computed from name paths before series exist.
* :func:`add_edges` (``addEdges``): each base edge goes to the metaedge between the two
  children of the lowest common ancestor of its ends (series count as ancestors of their
  members), counting regular/control/ref edges, ``size`` (TensorBoard's ``totalSize``:
  the element count of *all* the source's outputs, unknown dims as 1; 1 without shapes)
  and the distinct shapes of regular edges (the source's output at the edge's slot).
  ``nonctl`` holds the groups with at least one non-control edge inside (a series drawn
  vertically).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from summarylib.graph.view.model import BaseEdge, GroupNode, Metaedge, OpNode, Shape, ViewNode
from summarylib.graph.view.normalize import js_key_order

__all__ = ["EMPTY", "ROOT", "Tree", "add_edges", "add_nodes", "output_size", "scope_of"]

ROOT = ""
#: The key of the group TensorBoard names ``""`` (the scope of ``/embed/Gather``, ONNX
#: style) and of an op named ``""``: ``""`` is the root here.
EMPTY = "\u2205"


def scope_of(name: str) -> str:
    """The group holding ``name``: ``a/b/c`` -> ``a/b``; ``c`` -> root; ``/c`` -> EMPTY."""
    cut = name.rfind("/")
    if cut < 0:
        return ROOT
    return name[:cut] or EMPTY


@dataclass
class Tree:
    """The hierarchy under construction (see the module docstring)."""

    nodes: dict[str, ViewNode] = field(default_factory=dict)
    kids: dict[str, dict[str, None]] = field(default_factory=dict)
    metaedges: dict[str, dict[tuple[str, str], Metaedge]] = field(default_factory=dict)
    nonctl: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if ROOT not in self.nodes:
            self.nodes[ROOT] = GroupNode(ROOT)
            self.kids[ROOT] = {}
            self.metaedges[ROOT] = {}

    def group(self, name: str) -> GroupNode:
        node = self.nodes[name]
        assert isinstance(node, GroupNode)
        return node

    def children(self, name: str) -> list[str]:
        """Group ``name``'s children in metagraph order (JavaScript key order at the root)."""
        kids = self.kids[name]
        return js_key_order(kids) if name == ROOT else list(kids)

    def new_group(self, name: str, parent: str, kind: str = "meta") -> GroupNode:
        g = GroupNode(name, kind="series" if kind == "series" else "meta", parent=parent)
        self.nodes[name] = g
        self.kids[name] = {}
        self.metaedges[name] = {}
        self.kids[parent][name] = None
        return g

    def groups(self) -> list[GroupNode]:
        return [n for n in self.nodes.values() if isinstance(n, GroupNode)]


def add_nodes(tree: Tree, ops: dict[str, OpNode]) -> None:
    """Place every op under its scope groups, creating them (see the module docstring)."""
    nodes, kids = tree.nodes, tree.kids
    root = tree.group(ROOT)
    chains: dict[str, list[GroupNode]] = {ROOT: [root]}
    for name, op in ops.items():
        scope = scope_of(name)
        chain = chains.get(scope)
        if chain is None:
            chain = _chain(tree, scope, chains)
        n = len(chain)
        opname = op.op
        device = op.device
        for i, g in enumerate(chain):
            height = n - i
            if g.depth < height:
                g.depth = height
            g.cardinality += 1
            hist = g.op_histogram
            hist[opname] = hist.get(opname, 0) + 1
            if device:
                dh = g.device_histogram
                dh[device] = dh.get(device, 0) + 1
        op.parent = scope
        nodes[name] = op
        kids[scope][name] = None


def _chain(tree: Tree, scope: str, chains: dict[str, list[GroupNode]]) -> list[GroupNode]:
    # Groups root..scope, creating missing ones in path order (as addNodes does). A loop,
    # not recursion: a name may be thousands of scopes deep.
    missing = []
    while scope not in chains:
        missing.append(scope)
        scope = scope_of(scope) if scope != EMPTY else ROOT
    above = chains[scope]
    for name in reversed(missing):
        node = tree.nodes.get(name)
        if not isinstance(node, GroupNode):
            node = tree.new_group(name, scope)
        above = chains[name] = [*above, node]
        scope = name
    return above


def output_size(op: OpNode) -> int:
    """TensorBoard's size of the tensors an edge from ``op`` carries (see module doc)."""
    if not op.shapes:
        return 1
    total = 0
    for shape in op.shapes:
        if shape is None:
            total += 1
            continue
        size = 1
        for d in shape:
            if d is not None and d != -1:
                size *= d
        total += size
    return total


def group_ancestors(tree: Tree) -> dict[str, tuple[str, ...]]:
    """Every group's path from the root: ``("", "a", "a/b")``."""
    out: dict[str, tuple[str, ...]] = {ROOT: (ROOT,)}
    stack = [ROOT]
    kids = tree.kids
    while stack:
        g = stack.pop()
        base = out[g]
        for child in kids[g]:
            if child in kids:
                out[child] = (*base, child)
                stack.append(child)
    return out


def _lca(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str | None, str | None]:
    # a, b: root paths of the two ends' parents (which differ).
    n = min(len(a), len(b))
    i = 1
    while i < n and a[i] == b[i]:
        i += 1
    if i == len(a):  # a's group contains b's group: src itself is the child
        return a[-1], None, b[i]
    if i == len(b):
        return b[-1], a[i], None
    return a[i - 1], a[i], b[i]


_MISSING: Any = object()


def add_edges(tree: Tree, edges: list[BaseEdge]) -> None:
    """Bundle ``edges`` into metaedges at their lowest common ancestors."""
    nodes = tree.nodes
    anc: dict[str, tuple[str, ...]] | None = None
    index: dict[tuple[str, str], Metaedge] = {}
    shapes_of: dict[tuple[str, str], dict[Shape, None]] = {}
    # Per source name, once: (its parent, the size an edge from it carries, its output
    # shapes); per destination name: its parent. A name not in the tree maps to None.
    sources: dict[str, tuple[str, int, list[Shape]] | None] = {}
    parent_of: dict[str, str | None] = {}
    nonctl = tree.nonctl
    metaedges = tree.metaedges
    # (parent of src, parent of dst) -> (common ancestor, its child holding src or None
    # for src itself, its child holding dst or None for dst itself).
    pairs: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}
    for e in edges:
        src = e.src
        dst = e.dst
        info = sources.get(src, _MISSING)
        if info is _MISSING:
            node = nodes.get(src)
            if node is None or node.parent is None:
                info = sources[src] = None
            elif isinstance(node, OpNode):
                info = sources[src] = (node.parent, output_size(node), node.shapes)
            else:
                info = sources[src] = (node.parent, 1, [])
        if info is None:
            continue
        pd = parent_of.get(dst, _MISSING)
        if pd is _MISSING:
            node = nodes.get(dst)
            pd = parent_of[dst] = None if node is None else node.parent
        if pd is None:
            continue
        ps = info[0]
        if ps == pd:  # siblings: the common case
            g = ps
            key = (src, dst)
        else:
            lca = pairs.get((ps, pd))
            if lca is None:
                if anc is None:
                    anc = group_ancestors(tree)
                lca = pairs[(ps, pd)] = _lca(anc[ps], anc[pd])
            g = lca[0]
            key = (lca[1] or src, lca[2] or dst)
        me = index.get(key)
        if me is None:
            me = index[key] = Metaedge(key[0], key[1])
            metaedges[g][key] = me
        me.size += info[1]
        if e.control:
            me.control += 1
        else:
            me.regular += 1
            nonctl.add(g)
            shapes = info[2]
            if shapes:
                slot = e.slot
                shape = shapes[slot] if slot < len(shapes) else None
                seen = shapes_of.get(key)
                if seen is None:
                    shapes_of[key] = {shape: None}
                else:
                    seen[shape] = None
        if e.ref:
            me.ref += 1
    for key, seen in shapes_of.items():
        index[key].shapes = list(seen)
