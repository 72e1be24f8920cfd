"""What changed between two graph views: scopes, ops, shapes, edges and op histograms.

:func:`diff_views` compares the *ops* of two :class:`GraphView` objects (their original
names: normalisation's ``A/(A)`` renaming is undone first, so it never shows as a change)
arranged in their scope tree (``a/b/op`` lies in scope ``a/b``). Series, templates and side
panels are ways of drawing and are not compared.

Scopes are matched top-down, each matched pair's child scopes among themselves:

1. every candidate pair gets a score: 1 for an identical subtree (same ops, op types,
   attrs, shapes, devices and inner edges, relative to the scope), else the similarity of
   the two subtrees (Jaccard over op names and types and inner edges, with op details
   counting half; skipped, as 0, when there are too many candidates to compare), plus 0.3
   when the two have the same name;
2. pairs are taken best score first (ties: closest positions, then order), keeping those
   with the same name or a similarity of at least 0.5.

So a scope keeps its partner of the same name (``loss`` stays ``loss`` even when rewritten)
unless identical or far more similar scopes prove the names shifted (a layer inserted
before ``dense_1`` makes the old ``dense_1`` the new ``dense_2``): those are renames, as is
``encoder`` → ``enc`` with the same content. Afterwards, unmatched scopes anywhere whose
subtrees are identical and unique on both sides are matched as moved (a rename across
parents).

Within a matched pair, direct ops are matched by name. Data contract of the result
(:class:`GraphDiff`), a tree of :class:`ScopeDiff` holding only what differs:

* a matched scope pair appears when it was renamed or anything in its subtree changed;
  ``added_ops``/``removed_ops``/``changed_ops`` are its *direct* ops (op type, attrs,
  output shapes, device and embedded constants/summaries compared);
* an added (removed) scope appears once, with its op count and histogram, not its content;
* an added (removed) edge is listed at the scope that is the lowest common ancestor of its
  ends in B (A), by the B (A) names, unless both ends lie inside one added (removed) scope;
  edges are ``(src, slot, dst, control)`` and compared as a multiset after mapping A's
  names to B's;
* ``histogram`` lists the op types whose count in the subtree differs: ``(in A, in B)``.
"""

from __future__ import annotations

import difflib
import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from summarylib.graph.view.model import GraphView, OpNode, Shape

__all__ = [
    "EdgeChange",
    "GraphDiff",
    "OpChange",
    "OpRef",
    "ScopeDiff",
    "diff_views",
    "shapes_text",
]

#: A pair with a different name is a rename only above this similarity.
RENAME_SIMILARITY = 0.5
_SAME_NAME_BONUS = 0.3
_DETAIL_WEIGHT = 0.5
#: Fuzzy comparison is skipped when it would compare more feature items than this.
_FUZZY_BUDGET = 2_000_000
_MAX_PAIRS = 10_000


@dataclass
class OpRef:
    """An op added or removed: its full (original) name and op type."""

    name: str
    op: str


@dataclass
class EdgeChange:
    """A base edge: output ``slot`` of ``src`` into ``dst`` (``control``: a ``^src`` input)."""

    src: str
    dst: str
    slot: int = 0
    control: bool = False


@dataclass
class OpChange:
    """An op present in both views that differs. Each field is ``(in A, in B)`` or None."""

    name: str
    #: The op's name in A (differs from ``name`` when a scope above it was renamed).
    old_name: str
    op: tuple[str, str] | None = None
    #: attr name -> (value in A, value in B); None for an attr only one side has.
    attrs: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    shapes: tuple[list[Shape], list[Shape]] | None = None
    device: tuple[str, str] | None = None
    #: Embedded constants and summaries that differ: their name (last segment) ->
    #: ``"Op [shapes]"`` in A and in B (None on the side that lacks it).
    embeddings: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


@dataclass
class ScopeDiff:
    """One scope that differs. ``name`` is its path in B (in A when removed; root ``""``)."""

    name: str
    #: Its path in A: None when added; differs from ``name`` when it or a scope above it
    #: was renamed.
    old_name: str | None
    status: Literal["matched", "added", "removed"] = "matched"
    #: Ops in the subtree: (in A, in B); 0 on the side where the scope does not exist.
    ops: tuple[int, int] = (0, 0)
    added_ops: list[OpRef] = field(default_factory=list)
    removed_ops: list[OpRef] = field(default_factory=list)
    changed_ops: list[OpChange] = field(default_factory=list)
    added_edges: list[EdgeChange] = field(default_factory=list)
    removed_edges: list[EdgeChange] = field(default_factory=list)
    #: op type -> (count in A, count in B), only the types whose count differs.
    histogram: dict[str, tuple[int, int]] = field(default_factory=dict)
    children: list[ScopeDiff] = field(default_factory=list)
    #: This scope itself was renamed or moved (its name, or its parent's partner, differs).
    renamed: bool = False

    @property
    def has_direct_changes(self) -> bool:
        """Ops or edges of this scope itself changed (children not counted)."""
        return bool(self.added_ops or self.removed_ops or self.changed_ops
                    or self.added_edges or self.removed_edges)

    def walk(self) -> Iterator[ScopeDiff]:
        """This scope and every scope below it, depth first, in order."""
        stack = [self]
        while stack:
            s = stack.pop()
            yield s
            stack.extend(reversed(s.children))


@dataclass
class GraphDiff:
    """The differences between views A and B (see the module docstring).

    ``renamed`` maps the path in A of every scope that was itself renamed or moved to its
    path in B (scopes inside it, renamed only with it, are not listed). ``stats``
    counts: ``ops_added``/``ops_removed`` (every op only in B/A, inside added or removed
    scopes too), ``ops_changed``, ``edges_added``/``edges_removed`` (as listed),
    ``scopes_added``/``scopes_removed`` (top-most only), ``scopes_renamed``, and ``ops_a``/
    ``ops_b``/``edges_a``/``edges_b`` (sizes of the two graphs).
    """

    root: ScopeDiff
    renamed: dict[str, str] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        """True when nothing differs (no scope, op or edge change, no rename)."""
        return not self.root.children and not self.root.has_direct_changes \
            and not self.renamed

    def scopes(self) -> Iterator[ScopeDiff]:
        """Every scope diff, depth first (the root first)."""
        return self.root.walk()


# --- the scope trees --------------------------------------------------------------------------

_Edge = tuple[str, int, str, bool]  # src, slot, dst, control


@dataclass(eq=False)
class _Scope:
    path: str
    parent: _Scope | None
    children: dict[str, _Scope] = field(default_factory=dict)
    ops: dict[str, OpNode] = field(default_factory=dict)
    #: edges whose lowest common ancestor scope is this one
    edges: list[_Edge] = field(default_factory=list)
    hist: Counter[str] = field(default_factory=Counter)
    count: int = 0
    digest: str = ""
    features: frozenset[str] | None = None

    @property
    def label(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def rel(self, name: str) -> str:
        return name[len(self.path) + 1:] if self.path else name


@dataclass
class _Tree:
    root: _Scope
    scopes: dict[str, _Scope]
    ops: dict[str, OpNode]  # original name -> op
    scope_of: dict[str, _Scope]  # original op name -> its scope
    edges: Counter[_Edge]


def _parent_path(name: str) -> str:
    return name.rpartition("/")[0]


def _scope(tree_scopes: dict[str, _Scope], path: str) -> _Scope:
    missing = []
    p = path
    while p not in tree_scopes:
        missing.append(p)
        p = _parent_path(p)
    for q in reversed(missing):
        parent = tree_scopes[_parent_path(q)]
        s = tree_scopes[q] = _Scope(q, parent)
        parent.children[s.label] = s
    return tree_scopes[path]


def _op_detail(op: OpNode) -> str:
    emb = [(e.name.rsplit("/", 1)[-1], e.op, e.shapes) for e in op.in_embeddings]
    emb_out = [(e.name.rsplit("/", 1)[-1], e.op, e.shapes) for e in op.out_embeddings]
    return repr((op.op, op.device, sorted(op.attrs.items()), op.shapes, emb, emb_out))


def _lca(a: str, b: str) -> str:
    """The common scope of two scope paths."""
    if a == b:
        return a
    pa, pb = a.split("/") if a else [], b.split("/") if b else []
    k = 0
    while k < len(pa) and k < len(pb) and pa[k] == pb[k]:
        k += 1
    return "/".join(pa[:k])


def _tree(view: GraphView) -> _Tree:
    original = {shown: orig for orig, shown in view.renamed.items()}
    root = _Scope("", None)
    scopes = {"": root}
    ops: dict[str, OpNode] = {}
    scope_of: dict[str, _Scope] = {}
    for node in view.nodes.values():
        if not isinstance(node, OpNode):
            continue
        name = original.get(node.name, node.name)
        s = _scope(scopes, _parent_path(name))
        s.ops[name.rsplit("/", 1)[-1]] = node
        ops[name] = node
        scope_of[name] = s
    edges: Counter[_Edge] = Counter()
    for e in view.edges:
        src, dst = original.get(e.src, e.src), original.get(e.dst, e.dst)
        if src not in ops or dst not in ops:
            continue
        key = (src, e.slot, dst, e.control)
        edges[key] += 1
        scopes[_lca(scope_of[src].path, scope_of[dst].path)].edges.append(key)
    # Counts, histograms and digests bottom-up (deepest scopes first).
    for s in sorted(scopes.values(), key=lambda s: -s.path.count("/") - (s.path != "")):
        s.count = len(s.ops) + sum(c.count for c in s.children.values())
        s.hist = Counter(op.op for op in s.ops.values())
        for c in s.children.values():
            s.hist.update(c.hist)
        h = hashlib.blake2b(digest_size=16)
        for label, op in sorted(s.ops.items()):
            h.update(repr((label, _op_detail(op))).encode())
        for label, c in sorted(s.children.items()):
            h.update(repr((label, c.digest)).encode())
        for src, slot, dst, control in sorted(s.edges):
            h.update(repr((s.rel(src), slot, s.rel(dst), control)).encode())
        s.digest = h.hexdigest()
    return _Tree(root, scopes, ops, scope_of, edges)


def _features(s: _Scope) -> frozenset[str]:
    """Items compared by the fuzzy similarity: ops (name and type; and with details) and
    inner edges, relative to ``s``."""
    if s.features is not None:
        return s.features
    items: set[str] = set()
    stack = [s]
    while stack:
        t = stack.pop()
        for label, op in t.ops.items():
            rel = s.rel(f"{t.path}/{label}" if t.path else label)
            items.add(f"o\x00{rel}\x00{op.op}")
            items.add(f"d\x00{rel}\x00{_op_detail(op)}")
        for src, slot, dst, control in t.edges:
            items.add(f"e\x00{s.rel(src)}\x00{slot}\x00{s.rel(dst)}\x00{control}")
        stack.extend(t.children.values())
    s.features = frozenset(items)
    return s.features


def _similarity(a: _Scope, b: _Scope) -> float:
    """Weighted Jaccard similarity of the features: structure (op names and types, edges)
    counts 1, details (attrs, shapes, devices) count :data:`_DETAIL_WEIGHT`, so that a
    layer whose width changed stays similar to itself."""
    if a.digest == b.digest:
        return 1.0
    fa, fb = _features(a), _features(b)
    common, union = fa & fb, fa | fb
    num = sum(_DETAIL_WEIGHT if f[0] == "d" else 1.0 for f in common)
    den = sum(_DETAIL_WEIGHT if f[0] == "d" else 1.0 for f in union)
    return num / den if den else 0.0


# --- matching ---------------------------------------------------------------------------------


def _match_children(a: _Scope, b: _Scope) -> list[tuple[_Scope, _Scope]]:
    ca, cb = list(a.children.values()), list(b.children.values())
    if not ca or not cb:
        return []
    pos_a = {id(s): i for i, s in enumerate(ca)}
    pos_b = {id(s): j for j, s in enumerate(cb)}
    # Identical same-name children are settled first: nothing can beat them.
    pairs: list[tuple[_Scope, _Scope]] = []
    used_a: set[int] = set()
    used_b: set[int] = set()
    for s in ca:
        t = b.children.get(s.label)
        if t is not None and t.digest == s.digest:
            pairs.append((s, t))
            used_a.add(id(s))
            used_b.add(id(t))
    ra = [s for s in ca if id(s) not in used_a]
    rb = [t for t in cb if id(t) not in used_b]
    if not ra or not rb:
        return pairs
    fuzzy = (len(ra) * len(rb) <= _MAX_PAIRS and
             len(rb) * sum(s.count for s in ra) + len(ra) * sum(t.count for t in rb)
             <= _FUZZY_BUDGET)
    candidates: list[tuple[float, int, int, int, _Scope, _Scope]] = []
    if fuzzy:
        for i, s in enumerate(ra):
            for j, t in enumerate(rb):
                sim = _similarity(s, t)
                same = s.label == t.label
                if same or sim >= RENAME_SIMILARITY:
                    score = sim + (_SAME_NAME_BONUS if same else 0.0)
                    gap = abs(pos_a[id(s)] - pos_b[id(t)])
                    candidates.append((-score, gap, i, j, s, t))
    else:
        # Too many to compare: identical subtrees (aligned in order) and same names only.
        by_name = {t.label: t for t in rb}
        for i, s in enumerate(ra):
            t2 = by_name.get(s.label)
            if t2 is not None:
                candidates.append((-_SAME_NAME_BONUS, 0, i, 0, s, t2))
        sm = difflib.SequenceMatcher(None, [s.digest for s in ra], [t.digest for t in rb],
                                     autojunk=False)
        for block in sm.get_matching_blocks():
            for k in range(block.size):
                s, t = ra[block.a + k], rb[block.b + k]
                candidates.append((-1.0, 0, block.a + k, block.b + k, s, t))
    candidates.sort(key=lambda c: c[:4])
    for _, _, _, _, s, t in candidates:
        if id(s) in used_a or id(t) in used_b:
            continue
        pairs.append((s, t))
        used_a.add(id(s))
        used_b.add(id(t))
    return pairs


def _match(ta: _Tree, tb: _Tree) -> dict[str, _Scope]:
    """A's scope path -> matched B scope."""
    pairs: dict[str, _Scope] = {}
    matched_b: set[str] = set()
    work = [(ta.root, tb.root)]
    while True:
        while work:
            sa, sb = work.pop()
            pairs[sa.path] = sb
            matched_b.add(sb.path)
            work.extend(_match_children(sa, sb))
        # Moved scopes: identical unmatched subtrees, unique on both sides.
        top_a = [s for p, s in ta.scopes.items()
                 if p not in pairs and s.parent is not None and s.parent.path in pairs]
        top_b = [s for p, s in tb.scopes.items()
                 if p not in matched_b and s.parent is not None and s.parent.path in matched_b]
        count_a = Counter(s.digest for s in top_a)
        count_b = Counter(s.digest for s in top_b)
        by_digest_b = {s.digest: s for s in top_b}
        for s in top_a:
            if count_a[s.digest] == 1 and count_b[s.digest] == 1:
                work.append((s, by_digest_b[s.digest]))
        if not work:
            return pairs


# --- the diff ---------------------------------------------------------------------------------


def _op_change(name: str, old_name: str, a: OpNode, b: OpNode) -> OpChange | None:
    if (a.op == b.op and a.attrs == b.attrs and a.shapes == b.shapes and a.device == b.device
            and a.in_embeddings == b.in_embeddings and a.out_embeddings == b.out_embeddings):
        return None
    ch = OpChange(name, old_name)
    if a.op != b.op:
        ch.op = (a.op, b.op)
    for k in sorted(set(a.attrs) | set(b.attrs)):
        va, vb = a.attrs.get(k), b.attrs.get(k)
        if va != vb:
            ch.attrs[k] = (va, vb)
    if a.shapes != b.shapes:
        ch.shapes = (list(a.shapes), list(b.shapes))
    if a.device != b.device:
        ch.device = (a.device, b.device)
    if _raw_embeddings(a) != _raw_embeddings(b):  # formatted only when they differ
        ea, eb = _embeddings(a), _embeddings(b)
        for k in [*ea, *(k for k in eb if k not in ea)]:
            if ea.get(k) != eb.get(k):
                ch.embeddings[k] = (ea.get(k), eb.get(k))
    if ch.op or ch.attrs or ch.shapes or ch.device or ch.embeddings:
        return ch
    return None


def _raw_embeddings(op: OpNode) -> list[tuple[str, str, list[Shape]]]:
    return [(e.name, e.op, e.shapes) for e in [*op.in_embeddings, *op.out_embeddings]]


def _embeddings(op: OpNode) -> dict[str, str]:
    return {e.name.rsplit("/", 1)[-1]: f"{e.op} {shapes_text(e.shapes)}"
            for e in [*op.in_embeddings, *op.out_embeddings]}


def _hist_delta(a: Counter[str], b: Counter[str]) -> dict[str, tuple[int, int]]:
    if a == b:
        return {}
    return {k: (a[k], b[k]) for k in sorted(set(a) | set(b)) if a[k] != b[k]}


def _path_join(scope: str, label: str) -> str:
    return f"{scope}/{label}" if scope else label


def diff_views(a: GraphView, b: GraphView) -> GraphDiff:
    """The differences from view ``a`` to view ``b`` (see the module docstring)."""
    ta, tb = _tree(a), _tree(b)
    pairs = _match(ta, tb)
    b_to_a = {sb.path: pa for pa, sb in pairs.items()}
    # Op name mapping A -> B through the matched scopes.
    op_map: dict[str, str] = {}
    for pa, sb in pairs.items():
        sa = ta.scopes[pa]
        for label in sa.ops:
            if label in sb.ops:
                op_map[_path_join(pa, label)] = _path_join(sb.path, label)
    diffs: dict[str, ScopeDiff] = {}  # B path of matched scopes -> diff
    for pa, sb in pairs.items():
        sa = ta.scopes[pa]
        d = ScopeDiff(sb.path, pa, "matched", (sa.count, sb.count))
        for label, op in sb.ops.items():
            if label not in sa.ops:
                d.added_ops.append(OpRef(_path_join(sb.path, label), op.op))
        for label, op in sa.ops.items():
            if label not in sb.ops:
                d.removed_ops.append(OpRef(_path_join(pa, label), op.op))
            else:
                ch = _op_change(_path_join(sb.path, label), _path_join(pa, label), op,
                                sb.ops[label])
                if ch is not None:
                    d.changed_ops.append(ch)
        d.histogram = _hist_delta(sa.hist, sb.hist)
        diffs[sb.path] = d
    # Edges: A's mapped into B's names, compared as multisets.
    mapped: Counter[_Edge] = Counter()
    removed: list[_Edge] = []
    for (src, slot, dst, control), n in ta.edges.items():
        ms, md = op_map.get(src), op_map.get(dst)
        if ms is None or md is None:
            removed.extend([(src, slot, dst, control)] * n)
        else:
            mapped[(ms, slot, md, control)] += n
    inverse = {v: k for k, v in op_map.items()}
    for key, n in (mapped - tb.edges).items():
        src, slot, dst, control = key
        removed.extend([(inverse[src], slot, inverse[dst], control)] * n)
    added = [key for key, n in (tb.edges - mapped).items() for _ in range(n)]
    stats = Counter[str]()
    for src, slot, dst, control in removed:
        lca = _lca(ta.scope_of[src].path, ta.scope_of[dst].path)
        if lca in pairs:  # else both ends lie inside one removed scope
            diffs[pairs[lca].path].removed_edges.append(EdgeChange(src, dst, slot, control))
            stats["edges_removed"] += 1
    for src, slot, dst, control in added:
        lca = _lca(tb.scope_of[src].path, tb.scope_of[dst].path)
        if lca in b_to_a:
            diffs[lca].added_edges.append(EdgeChange(src, dst, slot, control))
            stats["edges_added"] += 1
    # The tree: matched scopes under their parents, with added and removed scopes.
    renamed: dict[str, str] = {}
    for pa, sb in pairs.items():
        sa = ta.scopes[pa]
        d = diffs[sb.path]
        if sa.parent is not None and (sa.label != sb.label or sb.parent is None
                                      or pairs[sa.parent.path] is not sb.parent):
            d.renamed = True
            renamed[pa] = sb.path
        for c in sb.children.values():
            if c.path not in b_to_a:
                d.children.append(ScopeDiff(c.path, None, "added", (0, c.count),
                                            histogram=_hist_delta(Counter(), c.hist)))
                stats["scopes_added"] += 1
                stats["ops_added"] += c.count
        for c in sa.children.values():
            if c.path not in pairs:
                d.children.append(ScopeDiff(c.path, c.path, "removed", (c.count, 0),
                                            histogram=_hist_delta(c.hist, Counter())))
                stats["scopes_removed"] += 1
                stats["ops_removed"] += c.count
        stats["ops_added"] += len(d.added_ops)
        stats["ops_removed"] += len(d.removed_ops)
        stats["ops_changed"] += len(d.changed_ops)
    # Hang matched children under their B parent, deepest first, keeping only what differs.
    for path in sorted(diffs, key=lambda p: -p.count("/") - (p != "")):
        if path == "":
            continue
        d = diffs[path]
        if d.renamed or d.has_direct_changes or d.children or d.histogram:
            parent = tb.scopes[path].parent
            assert parent is not None
            diffs[parent.path].children.append(d)
    for path, d in diffs.items():
        order = {c.label: i for i, c in enumerate(tb.scopes[path].children.values())}
        d.children.sort(key=lambda c: (c.status == "removed",
                                       order.get(c.name.rsplit("/", 1)[-1], 0), c.name))
    stats["scopes_renamed"] = len(renamed)
    stats.update(ops_a=len(ta.ops), ops_b=len(tb.ops), edges_a=sum(ta.edges.values()),
                 edges_b=sum(tb.edges.values()))
    keys = ("ops_added", "ops_removed", "ops_changed", "edges_added", "edges_removed",
            "scopes_added", "scopes_removed", "scopes_renamed", "ops_a", "ops_b", "edges_a",
            "edges_b")
    return GraphDiff(diffs[""], renamed, {k: stats[k] for k in keys})


def _shape_text(shape: Shape) -> str:
    if shape is None:
        return "?"
    return "(" + ", ".join("?" if d is None or d < 0 else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def shapes_text(shapes: list[Shape]) -> str:
    """Output shapes as ``[(2, 16), (?,)]``: how the diff names a changed shape."""
    return "[" + ", ".join(_shape_text(s) for s in shapes) + "]"
