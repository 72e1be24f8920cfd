"""``PageTree``: the names of a page's nodes and the groups they are drawn in.

A run's statistics are joined to a graph by node name and aggregated over the groups
drawn above each node (``statistics``). A page made straight from the source
(``page_columns``) has no :class:`~summarylib.graph.view.GraphView` to ask; its tree is
this: every node's full name and parent, rows numbered as the page numbers them
(breadth-first from the root, row 0; a group's children consecutive, in the view's
order), and a group of more than :data:`~summarylib.graph.view.ranges.RANGE` children
drawn as its ranges, named by ``ranges.range_names``' rule.
"""

from __future__ import annotations

import numpy as np

from summarylib.graph.view.ranges import RANGE, ranges_of

__all__ = ["PageTree"]


class PageTree:
    """The nodes of a page by name, and the group each is drawn in.

    ``names[r]``, ``parent[r]`` (row; -1 for the root), ``first[r]`` and ``nchild[r]``
    (a group's first child row and its number of children), ``kinds[r]`` (an op's type,
    else ``"meta"`` or ``"series"``: what ``statistics.check_graphs_match`` compares) per
    row. ``nodes`` maps each name but the root's to its row: what ``GraphView.nodes``
    names (``name in tree.nodes``)."""

    def __init__(self, names: list[str], parent: np.ndarray, first: np.ndarray,
                 nchild: np.ndarray, kinds: list[str]) -> None:
        self.names = names
        self.kinds = kinds
        self.parent = parent
        self.first = first
        self.nchild = nchild
        self.nodes: dict[str, int] = dict(zip(names, range(len(names)), strict=True))
        self.nodes.pop("", None)
        self._ranges: dict[int, list[str]] = {}
        self._range_group: dict[str, int] = {}

    def drawn_parent(self, name: str) -> str:
        """The name of the group ``name`` (a node, or a range) is drawn in: its parent,
        or its parent's range when the parent draws ranges; ``""`` for the root.
        KeyError for a name that is neither."""
        group = self._range_group.get(name)
        if group is None and name not in self.nodes:
            # A range not named yet: its group's ranges are named on first use.
            head = self.nodes.get(name.rpartition("/children ")[0], 0)
            self._ranges_of(head)
            group = self._range_group.get(name)
        if group is not None:
            return self.names[group]
        row = self.nodes[name]
        p = int(self.parent[row])
        if p <= 0:
            return ""
        ranges = self._ranges_of(p)
        if not ranges:
            return self.names[p]
        return ranges[(row - int(self.first[p])) // RANGE]

    def _ranges_of(self, group: int) -> list[str]:
        """The names of ``group``'s ranges (``ranges.ranges_of``), [] when it draws
        none (the root, or at most RANGE children)."""
        got = self._ranges.get(group)
        if got is not None:
            return got
        n = int(self.nchild[group])
        names: list[str] = []
        if group > 0 and n > RANGE:
            a = int(self.first[group])
            names = ranges_of(self.names[group], self.names[a:a + n])
            self._range_group.update(dict.fromkeys(names, group))
        self._ranges[group] = names
        return names

    def __repr__(self) -> str:
        return f"PageTree({len(self.names)} nodes)"
