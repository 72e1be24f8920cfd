"""Step 7 of the view: templates, the groups with the same inner structure ("color by
structure"; TensorBoard's template.ts).

Only metanodes (``kind="meta"``, the root included) take part. A group's **signature**
is ``depth=<d> |V|=<children> |E|=<metaedges> [ops] <op>=<n>,...`` over its op histogram;
groups are bucketed by signature and each bucket is split into clusters of similar
groups. The template id is ``<signature>[<k>]`` for the bucket's k-th cluster. Clusters
of one group get no template (``GroupNode.template`` None); :func:`find_templates`
returns ``{template id: [member names]}`` for the others.

``order="height"`` (default): groups are processed by subtree height, smallest first, so
a child's template is known when its parent is compared and nested identical blocks
share a template. The histogram in the signature is sorted by op type, and similarity is
a canonical hash: Weisfeiler-Lehman refinement of the child graph with labels op type /
child template / series size and op, and edge kinds (regular, control), until the
partition is stable; labels are interned, so equal hashes mean equal refinements.

``order="tensorboard"``: what the dashboard really does. Its sorts take one-argument
callbacks and leave the arrays as they are, so buckets are processed in order of first
appearance in the node index (a parent before its children: nested blocks never match),
the histogram keeps insertion order, and similarity is ``isSimilarSubgraph``: equal
sorted degree sequences, equal source counts, and a paired DFS from the sorted sources
(sorted by op, template id, degree, in-degree, out-degree, relative name) comparing
nodes with ``isSimilarNode``.
"""

from __future__ import annotations

from typing import Any

from summarylib.graph.view.hierarchy import ROOT, Tree
from summarylib.graph.view.model import GroupNode, OpNode
from summarylib.graph.view.normalize import FUNCTION_LIBRARY_PREFIX, js_key_order

__all__ = ["find_templates", "new_state", "signature"]


def new_state() -> Any:
    """Memo for repeated :func:`find_templates` calls in the height order."""
    return _Codes()


def signature(tree: Tree, g: GroupNode, sort_ops: bool = True) -> str:
    """TensorBoard's template signature of group ``g``."""
    hist = g.op_histogram
    keys = sorted(hist) if sort_ops else js_key_order(hist)
    ops = ",".join(f"{k}={hist[k]}" for k in keys)
    return (f"depth={g.depth} |V|={len(tree.kids[g.name])} "
            f"|E|={len(tree.metaedges[g.name])} [ops] {ops}")


def find_templates(tree: Tree, order: str = "height", state: Any = None,
                   changed: set[str] | None = None) -> dict[str, list[str]]:
    """Assign ``GroupNode.template`` over the tree; return templates with >= 2 members.

    ``state`` (from :func:`new_state`) keeps the canonical codes of the height order
    between calls; with ``changed``, only those groups' codes are recomputed (the others'
    subtrees must be unchanged).
    """
    # Metanodes in node-index order (JavaScript key order): filtering keeps that order,
    # so only the metanodes' names need ordering, not every op's.
    by_name = {k: v for k, v in tree.nodes.items()
               if isinstance(v, GroupNode) and v.kind == "meta"}
    metas = [by_name[n] for n in js_key_order(by_name)]
    ids: dict[str, str] = {}
    if order == "tensorboard":
        clusters = _tensorboard(tree, metas, ids)
    else:
        clusters = _by_height(tree, metas, ids, state, changed)
    out: dict[str, list[str]] = {}
    for g in metas:
        g.template = None
    for tid, members in clusters.items():
        if len(members) >= 2:
            out[tid] = members
            for m in members:
                tree.group(m).template = tid
    return out


# --- TensorBoard's order and similarity -------------------------------------------------


def _tensorboard(tree: Tree, metas: list[GroupNode], ids: dict[str, str]) -> dict[str, list[str]]:
    buckets: dict[str, list[GroupNode]] = {}
    for g in metas:
        buckets.setdefault(signature(tree, g, sort_ops=False), []).append(g)
    out: dict[str, list[str]] = {}
    for sig, members in buckets.items():
        if len(members) == 1 and not _is_function(members[0]):
            continue
        reps: list[GroupNode] = []
        cl: list[list[str]] = []
        # Representatives by fingerprint, in cluster order; groups that can match
        # nothing are never compared with.
        by_finger: dict[Any, list[tuple[int, _Meta]]] = {}
        for g in members:
            meta = _Meta(tree, g)
            finger = _fingerprint(tree, meta, ids)
            if finger is not None:
                for k, rmeta in by_finger.get(finger, ()):
                    if _tb_similar(tree, rmeta, meta, ids):
                        ids[g.name] = ids[reps[k].name]
                        cl[k].append(g.name)
                        break
                else:
                    by_finger.setdefault(finger, []).append((len(reps), meta))
                    finger = None
            if finger is None:
                ids[g.name] = f"{sig}[{len(reps)}]"
                reps.append(g)
                cl.append([g.name])
        for rep, names in zip(reps, cl, strict=True):
            out[ids[rep.name]] = names
    return out


def _fingerprint(tree: Tree, m: _Meta, ids: dict[str, str]) -> Any:
    """What ``isSimilarSubgraph`` success implies, or None when it can never succeed.

    A successful paired DFS visits every node reachable from the sources, pairs the two
    reachable sets one to one and checks each pair with ``isSimilarNode``; so a reachable
    metanode without a template id fails every comparison, and similar groups have equal
    degree sequences, source counts and multisets of node labels. Comparing only groups
    with equal fingerprints gives the same clusters as TensorBoard's loop, much faster.
    """
    sources = [n for n in m.nodes if not m.pred[n]]
    seen = set(sources)
    stack = list(sources)
    while stack:
        for w in m.succ[stack.pop()]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    labels: list[tuple[Any, ...]] = []
    for n in seen:
        node = tree.nodes[n]
        if isinstance(node, OpNode):
            labels.append(("op", node.op))
        elif node.kind == "meta":
            tid = ids.get(n)
            if not tid:
                return None
            labels.append(("meta", tid))
        else:
            kids = tree.kids[n]
            first = tree.nodes[next(iter(kids))] if kids else None
            labels.append(("series", len(kids), str(getattr(first, "op", None))))
    degrees = sorted(m.neighbors(n) for n in m.nodes)
    return (len(sources), tuple(degrees), tuple(sorted(labels)))


def _is_function(g: GroupNode) -> bool:
    return g.parent == ROOT and g.name.startswith(FUNCTION_LIBRARY_PREFIX)


class _Meta:
    # A group's metagraph as graphlib would answer for it.
    def __init__(self, tree: Tree, g: GroupNode) -> None:
        self.name = g.name
        self.nodes = tree.children(g.name)
        self.succ: dict[str, list[str]] = {n: [] for n in self.nodes}
        self.pred: dict[str, list[str]] = {n: [] for n in self.nodes}
        for v, w in tree.metaedges[g.name]:
            self.succ[v].append(w)
            self.pred[w].append(v)

    def neighbors(self, n: str) -> int:
        return len(set(self.succ[n]) | set(self.pred[n]))


def _undef_key(value: Any) -> tuple[int, Any]:
    # lodash compareAscending: defined values, then null, then undefined.
    if value is _UNDEFINED:
        return (2, "")
    if value is None:
        return (1, "")
    return (0, value)


_UNDEFINED = object()


def _sort_nodes(tree: Tree, names: list[str], m: _Meta, ids: dict[str, str]) -> list[str]:
    cut = len(m.name)

    def key(n: str) -> tuple[Any, ...]:
        node = tree.nodes[n]
        op: Any = node.op if isinstance(node, OpNode) else _UNDEFINED
        if isinstance(node, GroupNode) and node.kind == "meta":
            tid: Any = ids.get(n)
        else:
            tid = _UNDEFINED
        return (_undef_key(op), _undef_key(tid), m.neighbors(n), len(m.pred[n]),
                len(m.succ[n]), n[cut:])

    return sorted(names, key=key)


def _tb_similar_node(tree: Tree, a: str, b: str, ids: dict[str, str]) -> bool:
    n1, n2 = tree.nodes[a], tree.nodes[b]
    if isinstance(n1, GroupNode) and n1.kind == "meta":
        t1, t2 = ids.get(a), ids.get(b)
        return bool(t1) and bool(t2) and t1 == t2
    if isinstance(n1, OpNode) and isinstance(n2, OpNode):
        return n1.op == n2.op
    if isinstance(n1, GroupNode) and isinstance(n2, GroupNode) and n2.kind == "series":
        k1, k2 = tree.kids[a], tree.kids[b]
        if len(k1) != len(k2):
            return False
        if not k1:
            return True
        f1, f2 = tree.nodes[next(iter(k1))], tree.nodes[next(iter(k2))]
        return getattr(f1, "op", None) == getattr(f2, "op", None)
    return False


def _tb_similar(tree: Tree, m1: _Meta, m2: _Meta, ids: dict[str, str]) -> bool:
    d1 = sorted(m1.neighbors(n) for n in m1.nodes)
    d2 = sorted(m2.neighbors(n) for n in m2.nodes)
    if d1 != d2[:len(d1)]:
        return False
    cut1, cut2 = len(m1.name), len(m2.name)
    visited1: set[str] = set()
    visited2: set[str] = set()
    stack: list[tuple[str, str]] = []

    def push(n1: str, n2: str) -> bool:
        s1, s2 = n1[cut1:], n2[cut2:]
        if (s1 in visited1) != (s2 in visited2):
            return True
        if s1 not in visited1:
            visited1.add(s1)
            visited2.add(s2)
            stack.append((n1, n2))
        return False

    src1 = [n for n in m1.nodes if not m1.pred[n]]
    src2 = [n for n in m2.nodes if not m2.pred[n]]
    if len(src1) != len(src2):
        return False
    for a, b in zip(_sort_nodes(tree, src1, m1, ids), _sort_nodes(tree, src2, m2, ids),
                    strict=True):
        if push(a, b):
            return False
    while stack:
        a, b = stack.pop()
        if not _tb_similar_node(tree, a, b, ids):
            return False
        s1, s2 = list(dict.fromkeys(m1.succ[a])), list(dict.fromkeys(m2.succ[b]))
        if len(s1) != len(s2):
            return False
        for x, y in zip(_sort_nodes(tree, s1, m1, ids), _sort_nodes(tree, s2, m2, ids),
                        strict=True):
            if push(x, y):
                return False
    return True


# --- smallest subtree first, canonical hashing ----------------------------------------


class _Codes:
    """Interned canonical codes: equal codes mean equal Weisfeiler-Lehman refinements.

    ``of[group]`` is the code of a metanode's subtree; a metanode child is labelled by its
    code (a code no other group has is as good as a unique name). ``_exact`` memoizes
    child graphs that repeat in the same order (the common case of generated blocks), so
    refinement runs once per distinct block.
    """

    def __init__(self) -> None:
        self.intern: dict[Any, int] = {}
        self.of: dict[str, int] = {}
        #: Groups whose code is a placeholder (alone in their bucket).
        self.unique: set[str] = set()
        self._exact: dict[Any, int] = {}
        #: op type -> the code of ("op", type): one lookup per op child.
        self._op: dict[str, int] = {}

    def code(self, value: Any) -> int:
        c = self.intern.get(value)
        if c is None:
            c = self.intern[value] = len(self.intern)
        return c

    def label(self, tree: Tree, name: str) -> int:
        node = tree.nodes[name]
        if isinstance(node, OpNode):
            c = self._op.get(node.op)
            if c is None:
                c = self._op[node.op] = self.code(("op", node.op))
            return c
        if node.kind == "meta":
            return self.code(("meta", self.of[name]))
        kids = list(tree.kids[name])
        first = tree.nodes[kids[0]] if kids else None
        inner: Any = first.op if isinstance(first, OpNode) else (
            self.label(tree, kids[0]) if kids else None)
        return self.code(("series", len(kids), inner))

    def group(self, tree: Tree, g: GroupNode, sig: str) -> int:
        names = list(tree.kids[g.name])
        pos = {n: i for i, n in enumerate(names)}
        labels = [self.label(tree, n) for n in names]
        edges = tuple((pos[v], pos[w], (1 if me.regular else 0) | (2 if me.control else 0))
                      for (v, w), me in tree.metaedges[g.name].items())
        c = self.of[g.name] = self.group_code(sig, labels, edges)
        return c

    def group_code(self, sig: str, labels: list[int],
                   edges: tuple[tuple[int, int, int], ...]) -> int:
        """The code of a child graph: ``labels`` per child, ``edges`` as (child
        position, child position, 1 regular | 2 control)."""
        exact = (sig, tuple(labels), edges)
        c = self._exact.get(exact)
        if c is None:
            c = self._exact[exact] = self._refine(sig, labels, edges)
        return c

    def _refine(self, sig: str, labels: list[int], edges: tuple[tuple[int, int, int], ...],
                ) -> int:
        n = len(labels)
        succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        pred: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for v, w, k in edges:
            succ[v].append((k, w))
            pred[w].append((k, v))
        label = labels
        distinct = len(set(label))
        code = self.code
        for _ in range(n):
            new = [code((label[i],
                         tuple(sorted((k, label[m]) for k, m in succ[i])),
                         tuple(sorted((k, label[m]) for k, m in pred[i]))))
                   for i in range(n)]
            count = len(set(new))
            label = new
            if count == distinct:
                break
            distinct = count
        shape = tuple(sorted((label[v], label[w], k) for v, w, k in edges))
        return code(("graph", sig, tuple(sorted(label)), shape))


def _by_height(tree: Tree, metas: list[GroupNode], ids: dict[str, str],
               codes: _Codes | None = None, changed: set[str] | None = None,
               ) -> dict[str, list[str]]:
    """Level by level (subtree height), bucket by signature, split buckets by code.

    A group alone in its bucket cannot share a template: it gets a code of its own
    without refinement (large unique groups, such as a scope holding hundreds of layers,
    would need as many refinement rounds as their diameter). ``changed`` (a set the
    function extends) names groups whose subtree changed since ``codes`` was filled.
    """
    codes = codes or _Codes()
    fresh = changed is None
    changed = set() if changed is None else changed
    levels: dict[int, list[GroupNode]] = {}
    for g in metas:
        levels.setdefault(g.depth, []).append(g)
    out: dict[str, list[str]] = {}
    for depth in sorted(levels):
        buckets: dict[str, list[GroupNode]] = {}
        for g in levels[depth]:
            buckets.setdefault(signature(tree, g), []).append(g)
        for sig, members in buckets.items():
            if len(members) == 1:
                g = members[0]
                if fresh or g.name in changed or g.name not in codes.of:
                    codes.of[g.name] = codes.code(("unique", g.name))
                    codes.unique.add(g.name)
                continue
            classes: dict[int, list[str]] = {}
            for g in members:
                name = g.name
                if fresh or name in changed or name in codes.unique or name not in codes.of:
                    if not fresh and name in codes.unique:
                        _mark_ancestors(tree, name, changed)
                    codes.unique.discard(name)
                    codes.group(tree, g, sig)
                classes.setdefault(codes.of[name], []).append(name)
            for k, names in enumerate(classes.values()):
                if len(names) >= 2:
                    tid = f"{sig}[{k}]"
                    out[tid] = names
                    for n in names:
                        ids[n] = tid
    return out


def _mark_ancestors(tree: Tree, name: str, changed: set[str]) -> None:
    # A group's code became a real one: the codes of its ancestors must be recomputed.
    parent = tree.nodes[name].parent
    while parent is not None:
        changed.add(parent)
        parent = tree.nodes[parent].parent
