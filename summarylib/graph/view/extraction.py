"""Step 8 of the view: the side panel of each group (TensorBoard's render.ts
``extractHighDegrees``), computed for every metanode as if it were expanded.

TensorBoard builds a group's render graph (its "core graph") from the group's metagraph
only: its children, the metaedges between them, and constant/summary icons on op
children. Extraction runs *before* the edges that cross the group's border (bridge
edges) are added, so they never change which nodes are extracted. Series groups are not
extracted from. In order:

1. nodes forced out (``ViewOptions.side_panel``, the "Remove from main graph" command) go
   to the out list if they have more out-edges than in-edges, else to the in list;
2. ``NoOp`` children (an op, or a group whose ``scope/(scope)`` op is a ``NoOp``) go out;
3. with ``auto_extract`` and at least 15 children left: degrees count regular metaedges
   (a node with only control metaedges counts those); with Q1/Q3 the degrees at
   positions round(n/4), round(3n/4) of the stable ascending sort, nodes with in-degree
   > max(Q3 + (Q3-Q1), 4) go to the in list, then nodes with out-degree
   > max(Q3 + 4(Q3-Q1), 4) (by the degrees computed before) to the out list;
4. a node with more than 4 control metaedges has them turned into icons;
5. a node left without edges and with icons (constants, summaries or shortcuts) on one
   side only moves too: icons only on its out side -> in list, only in -> out list.

An extracted node's edges all become icons (``detachAllEdgesForHighDegree``). Lists keep
TensorBoard's order.
"""

from __future__ import annotations

from collections.abc import Iterable

from summarylib.graph.view.hierarchy import Tree
from summarylib.graph.view.model import GroupNode, OpNode
from summarylib.graph.view.normalize import FUNCTION_LIBRARY_PREFIX

__all__ = ["MAX_CONTROL_DEGREE", "MIN_DEGREE", "MIN_NODES", "OUT_EXTRACT_TYPES",
           "extract_all", "extract_group"]

MIN_NODES = 15
MIN_DEGREE = 5
MAX_CONTROL_DEGREE = 4
OUT_EXTRACT_TYPES = ("NoOp",)
IN_EXTRACT_TYPES: tuple[str, ...] = ()


def _js_round(x: float) -> int:
    # Math.round: halves go up.
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


class _Core:
    """A group's render graph: ordered nodes, ordered edges, icons, extraction state."""

    def __init__(self, tree: Tree, g: GroupNode, forced: set[str]) -> None:
        self.nodes: dict[str, None] = dict.fromkeys(tree.children(g.name))
        self.succ: dict[str, dict[str, None]] = {n: {} for n in self.nodes}
        self.pred: dict[str, dict[str, None]] = {n: {} for n in self.nodes}
        self.edges: dict[tuple[str, str], int] = {}
        for (v, w), me in tree.metaedges[g.name].items():
            self.edges[(v, w)] = me.regular
            self.succ[v][w] = None
            self.pred[w][v] = None
        self.in_ann: dict[str, set[str]] = {n: set() for n in self.nodes}
        self.out_ann: dict[str, set[str]] = {n: set() for n in self.nodes}
        for n in self.nodes:
            node = tree.nodes[n]
            if isinstance(node, OpNode):
                self.in_ann[n].update(e.name for e in node.in_embeddings)
                self.out_ann[n].update(e.name for e in node.out_embeddings)
        self.excluded = {n for n in forced if n in self.nodes} if forced else set()
        self.is_in: set[str] = set()
        self.is_out: set[str] = set()
        self.iso_in: list[str] = []
        self.iso_out: list[str] = []

    def neighbors(self, n: str) -> int:
        return len(self.succ[n].keys() | self.pred[n].keys())

    def shortcut(self, v: str, w: str) -> None:
        self.out_ann[v].add(w)
        self.in_ann[w].add(v)
        if (v, w) in self.edges:
            del self.edges[(v, w)]
            del self.succ[v][w]
            del self.pred[w][v]

    def remove(self, n: str) -> None:
        del self.nodes[n]

    def make_out(self, n: str) -> None:
        self.is_out.add(n)
        for p in list(self.pred[n]):
            self.shortcut(p, n)
        for s in list(self.succ[n]):
            self.shortcut(n, s)
        if self.neighbors(n) == 0:
            self.excluded.add(n)
            self.iso_out.append(n)
            self.remove(n)

    def make_in(self, n: str) -> None:
        self.is_in.add(n)
        for s in list(self.succ[n]):
            self.shortcut(n, s)
        for p in list(self.pred[n]):
            self.shortcut(p, n)
        if self.neighbors(n) == 0:
            self.excluded.add(n)
            self.iso_in.append(n)
            self.remove(n)


def _has_type(tree: Tree, name: str, types: Iterable[str]) -> bool:
    node = tree.nodes[name]
    if isinstance(node, OpNode):
        return node.op in types
    if node.kind == "meta":
        root_op = tree.nodes.get(f"{name}/({name.rsplit('/', 1)[-1]})")
        return (isinstance(root_op, OpNode) and root_op.parent == name
                and root_op.op in types)
    return False


def _degrees(core: _Core, n: str) -> tuple[int, int]:
    edges = core.edges
    preds, succs = core.pred[n], core.succ[n]
    din = sum(1 for p in preds if edges[(p, n)])
    if din == 0 and preds:
        din = len(preds)
    dout = sum(1 for s in succs if edges[(n, s)])
    if dout == 0 and succs:
        dout = len(succs)
    return din, dout


def _high_degree(core: _Core) -> None:
    indeg: dict[str, int] = {}
    outdeg: dict[str, int] = {}
    for n in core.nodes:
        if n in core.excluded:
            continue
        indeg[n], outdeg[n] = _degrees(core, n)
    count = len(indeg)
    if count < MIN_NODES:
        return
    floor = MIN_DEGREE - 1
    q3i, q1i = _js_round(count * 0.75), _js_round(count * 0.25)
    by_in = sorted(indeg, key=indeg.__getitem__)
    q3, q1 = indeg[by_in[q3i]], indeg[by_in[q1i]]
    bound = max(q3 + q3 - q1, floor)
    i = count - 1
    while i >= 0 and indeg[by_in[i]] > bound:
        core.make_in(by_in[i])
        i -= 1
    by_out = sorted(outdeg, key=outdeg.__getitem__)
    q3, q1 = outdeg[by_out[q3i]], outdeg[by_out[q1i]]
    bound = max(q3 + (q3 - q1) * 4, floor)
    i = count - 1
    while i >= 0 and outdeg[by_out[i]] > bound:
        n = by_out[i]
        i -= 1
        if n not in core.nodes or n in core.is_in:
            continue
        core.make_out(n)


def _control_edges(core: _Core) -> None:
    per_node: dict[str, list[tuple[str, str]]] = {}
    for (v, w), regular in core.edges.items():
        if not regular:
            per_node.setdefault(v, []).append((v, w))
            per_node.setdefault(w, []).append((v, w))
    for edges in per_node.values():
        if len(edges) > MAX_CONTROL_DEGREE:
            for v, w in edges:
                core.shortcut(v, w)


def extract_group(tree: Tree, g: GroupNode, forced: set[str] = frozenset(),  # type: ignore[assignment]
                  auto: bool = True) -> dict[str, list[str]]:
    """The side panel ``{"in": [...], "out": [...]}`` of metanode ``g``."""
    core = _Core(tree, g, forced)
    for n in list(core.nodes):
        if n in core.excluded and not n.startswith(FUNCTION_LIBRARY_PREFIX):
            if len(core.succ[n]) > len(core.pred[n]):
                core.make_out(n)
            else:
                core.make_in(n)
    for n in list(core.nodes):
        if n in core.nodes and n not in core.excluded and _has_type(tree, n, OUT_EXTRACT_TYPES):
            core.make_out(n)
    if IN_EXTRACT_TYPES:  # empty by default: no need to look at every child
        for n in list(core.nodes):
            if n in core.nodes and n not in core.excluded and _has_type(
                    tree, n, IN_EXTRACT_TYPES):
                core.make_in(n)
    if auto:
        _high_degree(core)
    _control_edges(core)
    for n in list(core.nodes):
        if n in core.excluded or core.neighbors(n):
            continue
        has_out, has_in = bool(core.out_ann[n]), bool(core.in_ann[n])
        if n in core.is_in:
            core.iso_in.append(n)
        elif n in core.is_out:
            core.iso_out.append(n)
        elif has_out and not has_in:
            core.is_in.add(n)
            core.iso_in.append(n)
        elif has_in and not has_out:
            core.is_out.add(n)
            core.iso_out.append(n)
        else:
            continue
        core.excluded.add(n)
        core.remove(n)
    return {"in": core.iso_in, "out": core.iso_out}


def extract_all(tree: Tree, forced: Iterable[str] = (), auto: bool = True) -> None:
    """Set ``side_panel`` on every metanode of the tree (series keep empty lists)."""
    forced_set = set(forced)
    for g in tree.groups():
        if g.kind == "meta":
            g.side_panel = extract_group(tree, g, forced_set, auto)
        else:
            g.side_panel = {"in": [], "out": []}
