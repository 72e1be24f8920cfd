"""``unique_rows``: the distinct rows of an integer matrix, as ``np.unique(axis=0)``.

``np.unique(rows, axis=0)`` sorts the rows as structured records, which compares them
field by field in a generic loop: at a million ops the template pass spent a large share
of its time there. Here each row is hashed to one integer (a dot product with fixed odd
multipliers, wrapping around), the hashes are made unique, the result is checked against
the rows themselves (a collision falls back to ``np.unique``), and only the distinct rows
are sorted, so the output is ``np.unique``'s exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique_rows"]

_MIX = np.random.default_rng(0x5EED).integers(1, 1 << 62, 4096, np.int64) | 1


def unique_rows(rows: np.ndarray, mix: np.ndarray | None = None,
                ) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of a 2-D integer array: (the
    distinct rows in lexicographic order, each row's index among them, 1-D).

    ``mix``: the multipliers of the row hash (one per column; default: fixed random odd
    integers); any values give the same result, only the speed differs.
    """
    if rows.ndim != 2:
        raise ValueError(f"unique_rows: rows must be 2-D, got shape {rows.shape}")
    k, w = rows.shape
    mix = _MIX if mix is None else np.asarray(mix, np.int64)
    if w > mix.size or k < 2 or w == 0:
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        return uniq, inv.reshape(-1)
    with np.errstate(over="ignore"):
        h = rows.astype(np.int64, copy=False) @ mix[:w]  # wraps around: a hash
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    distinct = rows[first]
    if not np.array_equal(distinct[inv], rows):  # two rows share a hash
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        return uniq, inv.reshape(-1)
    order = sorted(range(first.size), key=distinct.tolist().__getitem__)
    rank = np.empty(first.size, np.int64)
    rank[order] = np.arange(first.size)
    return distinct[order], rank[inv]
