"""``group_runs``: items grouped by equal runs of integer codes, without a tuple per item.

Reading a million-node graph, nodes share a display record when their attributes and
outputs are the same: per node a variable-length run of (attribute name, value) codes and
one of (shape, dtype) codes. A tuple key per node costs several Python objects per node;
here every run is hashed with numpy (a polynomial over its entries, wrapping around), the
hashes are made unique, and the grouping is checked against the runs themselves, entry for
entry. Two different items with the same hash fall back to tuple keys, so the result is
always exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count

import numpy as np

__all__ = ["group_runs"]

#: Default multipliers: [0] combines the runs, [1] the entries of a run, [2:] the columns.
_MIX = np.random.default_rng(0xC0DE5).integers(1, 1 << 62, 64, np.int64) | 1

Runs = Sequence[tuple[np.ndarray, Sequence[np.ndarray]]]


def group_runs(runs: Runs, mix: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Items ``0 .. n-1`` grouped by their runs.

    ``runs``: one or more (lens, columns): ``lens`` (``n`` integers >= 0) cuts each column
    (integer arrays of ``lens.sum()`` entries) into consecutive runs, run ``j`` belonging
    to item ``j``. Two items are in one group when, for every (lens, columns), their runs
    have the same length and the same entries in every column.

    Returns (each item's group, groups numbered in order of first occurrence; the first
    item of each group), int64. ``mix``: the hash multipliers (default: fixed random odd
    integers); any values give the same result, only the speed differs.
    """
    if not runs:
        raise ValueError("group_runs: runs must hold at least one (lens, columns)")
    n = np.asarray(runs[0][0]).size
    checked: list[tuple[np.ndarray, list[np.ndarray]]] = []
    for lens, columns in runs:
        lens = np.asarray(lens, np.int64)
        cols = [np.asarray(c, np.int64) for c in columns]
        if lens.ndim != 1 or lens.size != n or (lens < 0).any():
            raise ValueError(f"group_runs: every lens must be {n} integers >= 0")
        if not cols or any(c.shape != (int(lens.sum()),) for c in cols):
            raise ValueError("group_runs: columns must be 1-D with lens.sum() entries each")
        checked.append((lens, cols))
    mix = _MIX if mix is None else np.asarray(mix, np.int64)
    if n < 2 or mix.size < 2 + max(len(c) for _, c in checked):
        return _by_tuples(checked)
    m = mix.astype(np.uint64)
    h = np.zeros(n, np.uint64)
    for lens, cols in checked:
        entries = np.zeros(cols[0].size, np.uint64)
        for c, k in zip(cols, m[2:], strict=False):
            entries += c.astype(np.uint64) * k
        h = h * m[0] + _run_hash(lens, entries, m[1])
    first, inv = np.unique(h, return_index=True, return_inverse=True)[1:]
    inv = inv.reshape(-1)
    rep = first[inv]
    if not all(_runs_equal(lens, cols, rep) for lens, cols in checked):
        return _by_tuples(checked)  # two different items share a hash
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    return rank[inv], first[order].astype(np.int64)


def _run_hash(lens: np.ndarray, entries: np.ndarray, base: np.uint64) -> np.ndarray:
    """Per run, the sum of its entries times powers of ``base`` (wrapping), plus its length
    (so that runs of zeros of different lengths differ)."""
    out = lens.astype(np.uint64)
    if entries.size:
        starts = np.cumsum(lens) - lens
        pos = np.arange(entries.size) - np.repeat(starts, lens)
        powers = np.ones(int(lens.max()), np.uint64)
        np.cumprod(np.full(powers.size - 1, base, np.uint64), out=powers[1:])
        nonempty = np.flatnonzero(lens)
        # reduceat over the starts of the non-empty runs: each sums exactly its run
        out[nonempty] += np.add.reduceat(entries * powers[pos], starts[nonempty])
    return out


def _runs_equal(lens: np.ndarray, cols: list[np.ndarray], rep: np.ndarray) -> bool:
    """Whether every item's run equals item ``rep[j]``'s, in length and entries."""
    if not np.array_equal(lens, lens[rep]):
        return False
    if not cols[0].size:
        return True
    starts = np.cumsum(lens) - lens
    other = np.arange(cols[0].size) + np.repeat(starts[rep] - starts, lens)
    return all(np.array_equal(c, c[other]) for c in cols)


def _by_tuples(checked: list[tuple[np.ndarray, list[np.ndarray]]]
               ) -> tuple[np.ndarray, np.ndarray]:
    """``group_runs`` with one tuple key per item (the exact, slow way)."""
    parts = []
    for lens, cols in checked:
        ends = np.cumsum(lens).tolist()
        starts = [0, *ends][:len(ends)]
        for c in cols:
            values = c.tolist()
            parts.append([tuple(values[a:b]) for a, b in zip(starts, ends, strict=True)])
    seen: dict[tuple[tuple[int, ...], ...], int] = {}
    first_of = np.fromiter(map(seen.setdefault, zip(*parts, strict=True), count()), np.int64,
                           len(parts[0]))
    firsts, group = np.unique(first_of, return_inverse=True)
    return group.reshape(-1).astype(np.int64), firsts.astype(np.int64)
