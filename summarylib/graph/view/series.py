"""Step 4 of the view: series collapsing (TensorBoard's ``groupSeries``) and an extension.

:func:`group_op_series` is TensorBoard's rule exactly (hierarchy.ts ``groupSeries``,
``clusterNodes``, ``detectSeriesUsingNumericSuffixes``, ``addSeriesToDict``). It runs on
the tree before any edge is added, child groups first:

* only op children of a group are candidates, clustered by op type (empty types skipped);
* the last name segment must match ``^(\\D*)(\\d+)$``: a digit-free prefix and a number;
  a name without that form is id 0 of its *own* name as prefix (so ``foo`` joins
  ``foo1…foo4`` but ``add`` does not join ``add_1…``);
* per (op type, prefix), members sorted by id are cut into runs of consecutive ids; runs
  of two or more are candidate series ``scope/prefix[first-last]``, and those of at least
  ``min_size`` members (5) become series groups. A series group is appended to its
  parent's children and holds its members in id order.

:func:`group_group_series` (not in TensorBoard): sibling *metanodes* whose labels match
the same rule and that share a template id become a series group too (``layer_[0-47]``,
``layers/[0-11]``); metaedges of the parent are re-bundled around it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TypeVar

from summarylib.graph.view.hierarchy import ROOT, Tree
from summarylib.graph.view.model import GroupNode, Metaedge, OpNode
from summarylib.graph.view.normalize import js_key_order

__all__ = ["consecutive_runs", "group_group_series", "group_op_series", "series_name",
           "split_series_name"]

# JavaScript's \D and \d: ASCII digits only.
_SUFFIX_RE = re.compile(r"^([^0-9]*)([0-9]+)$")


def split_series_name(leaf: str) -> tuple[str, int, str]:
    """``add_3`` -> ``("add_", 3, "")``; ``foo`` -> ``("foo", 0, "")`` (TensorBoard's rule)."""
    m = _SUFFIX_RE.match(leaf)
    if m:
        return m.group(1), int(m.group(2)), ""
    if leaf.endswith("*"):
        return leaf[:-1], 0, "*"
    return leaf, 0, ""


def series_name(parent: str, prefix: str, suffix: str, first: int, last: int) -> str:
    """TensorBoard's series name: ``parent/prefix[first-last]suffix``."""
    pattern = f"{prefix}[{first}-{last}]{suffix}"
    return f"{parent}/{pattern}" if parent else pattern


T = TypeVar("T")


def consecutive_runs(members: Iterable[tuple[T, str, int, str]],
                     ) -> list[tuple[str, str, list[tuple[int, T]]]]:
    """Candidate runs: members ``(item, prefix, id, suffix)`` in cluster order ->
    ``[(prefix, suffix, [(id, item), ...])]`` in TensorBoard's dict order: the runs of two
    or more consecutive ids sharing a prefix and suffix. ``item`` is a name here, a group
    index in ``page_columns``."""
    candidates: dict[tuple[str, str], list[tuple[int, T]]] = {}
    for item, prefix, ident, suffix in members:
        candidates.setdefault((prefix, suffix), []).append((ident, item))
    out: list[tuple[str, str, list[tuple[int, T]]]] = []
    for (prefix, suffix), items in candidates.items():
        if len(items) < 2:
            continue
        items.sort(key=lambda t: t[0])
        run = [items[0]]
        for entry in items[1:]:
            if entry[0] == run[-1][0] + 1:
                run.append(entry)
                continue
            if len(run) > 1:
                out.append((prefix, suffix, run))
            run = [entry]
        if len(run) > 1:
            out.append((prefix, suffix, run))
    return out


def group_op_series(tree: Tree, min_size: int = 5) -> None:
    """TensorBoard's series grouping over the whole tree (see the module docstring)."""
    _group_ops(tree, ROOT, min_size)


def _group_ops(tree: Tree, top: str, min_size: int) -> None:
    # Groups in post-order (each child group's subtree before the group itself, in child
    # order: the order series are made in), with a stack rather than recursion, as names
    # may be thousands of scopes deep.
    nodes = tree.nodes
    top_order = tree.children(top)
    stack = [(top, top_order, iter(top_order))]
    while stack:
        g, order, pending = stack[-1]
        for child in pending:
            node = nodes[child]
            if isinstance(node, GroupNode) and node.kind == "meta":
                child_order = tree.children(child)
                stack.append((child, child_order, iter(child_order)))
                break
        else:
            stack.pop()
            _series_in(tree, g, order, min_size)


def _series_in(tree: Tree, g: str, order: list[str], min_size: int) -> None:
    """Series among group ``g``'s own ops (``order``: its children)."""
    nodes = tree.nodes
    clusters: dict[str, list[str]] = {}
    for child in order:
        node = nodes[child]
        if isinstance(node, OpNode) and node.op:
            clusters.setdefault(node.op, []).append(child)
    for op in js_key_order(clusters):
        members = clusters[op]
        if len(members) <= 1:
            continue
        for prefix, suffix, run in _long_runs(members, min_size):
            _make_series(tree, g, prefix, suffix, run, op)


_Run = tuple[str, str, list[tuple[int, str]]]  # (prefix, suffix, [(id, name), ...])


def _long_runs(members: list[str], min_size: int) -> Iterator[_Run]:
    """The runs of consecutive ids among ``members`` (by their last name segment) of at
    least ``min_size`` members: ``(prefix, suffix, [(id, name), ...])``."""
    parsed = []
    for name in members:
        prefix, ident, suffix = split_series_name(name[name.rfind("/") + 1:])
        parsed.append((name, prefix, ident, suffix))
    for prefix, suffix, run in consecutive_runs(parsed):
        if len(run) >= min_size:
            yield prefix, suffix, run


def _make_series(tree: Tree, g: str, prefix: str, suffix: str,
                 run: list[tuple[int, str]], op: str) -> GroupNode:
    # TensorBoard names a series after the scope in its members' names, which differs
    # from the group's key only for the empty-named scope.
    first = run[0][1]
    scope = first[:first.rfind("/")] if "/" in first else ""
    name = series_name(scope, prefix, suffix, run[0][0], run[-1][0])
    if name in tree.nodes:
        name = series_name(g, prefix, suffix, run[0][0], run[-1][0])
    s = tree.new_group(name, g, kind="series")
    s.series_op = op
    s.series_ids = [i for i, _ in run]
    parent_kids = tree.kids[g]
    skids = tree.kids[name]
    for _, member in run:
        node = tree.nodes[member]
        del parent_kids[member]
        skids[member] = None
        node.parent = name
        if isinstance(node, OpNode):
            s.cardinality += 1
            s.op_histogram[node.op] = s.op_histogram.get(node.op, 0) + 1
            if node.device:
                s.device_histogram[node.device] = s.device_histogram.get(node.device, 0) + 1
        else:
            s.cardinality += node.cardinality
            for k, v in node.op_histogram.items():
                s.op_histogram[k] = s.op_histogram.get(k, 0) + v
            for k, v in node.device_histogram.items():
                s.device_histogram[k] = s.device_histogram.get(k, 0) + v
            s.depth = max(s.depth, node.depth + 1)
    return s


def group_group_series(tree: Tree, min_size: int = 5) -> list[str]:
    """Collapse runs of same-template sibling metanodes; return the new series' names.

    Runs after templates and metaedges exist; the parent's metaedges are re-bundled: an
    edge between two members moves into the series, an edge between a member and another
    sibling is merged into a metaedge of the series.
    """
    made: list[str] = []
    for g in [n.name for n in tree.groups() if n.kind == "meta"]:
        clusters: dict[str, list[str]] = {}
        for child in tree.children(g):
            node = tree.nodes[child]
            if isinstance(node, GroupNode) and node.kind == "meta" and node.template:
                clusters.setdefault(node.template, []).append(child)
        for _template, members in clusters.items():
            if len(members) < min_size:
                continue
            for prefix, suffix, run in _long_runs(members, min_size):
                s = _make_series(tree, g, prefix, suffix, run, "group")
                s.series_op = "group"
                _rebundle(tree, g, s.name, {m for _, m in run})
                made.append(s.name)
    return made


def _rebundle(tree: Tree, g: str, s: str, members: set[str]) -> None:
    old = tree.metaedges[g]
    inner = tree.metaedges[s]
    new: dict[tuple[str, str], Metaedge] = {}
    for (v, w), me in old.items():
        vin, win = v in members, w in members
        if vin and win:
            inner[(v, w)] = me
            if me.regular:
                tree.nonctl.add(s)
            continue
        key = (s if vin else v, s if win else w)
        if key == (v, w):
            new[key] = me
            continue
        merged = new.get(key)
        if merged is None:
            merged = new[key] = Metaedge(key[0], key[1])
        merged.regular += me.regular
        merged.control += me.control
        merged.ref += me.ref
        merged.size += me.size
        for shape in me.shapes:
            if shape not in merged.shapes:
                merged.shapes.append(shape)
    tree.metaedges[g] = new
