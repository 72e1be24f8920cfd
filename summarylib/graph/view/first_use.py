"""``first_use_order``: the order in which ids are first used by a stream of events.

The page's string and shape tables list each entry where a breadth-first walk over the
nodes first uses it: an event is (node position, rank within the node, id), and an id's
place is that of its earliest event. Sorting every event by (position, rank) and making
the sorted ids unique costs two sorts of the whole stream; here each id keeps the minimum
of one integer key per event (position, rank and the event's index folded together, so
keys never tie: the earliest of equal (position, rank) events wins, as in a stable sort),
and only the ids used are sorted, by that key.
"""

from __future__ import annotations

import numpy as np

__all__ = ["first_use_order"]

_NONE = np.iinfo(np.int64).max


def first_use_order(pos: np.ndarray, rank: np.ndarray, ids: np.ndarray, size: int,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(the ids used, in order of first use; id -> index in that order, -1 when unused).

    ``pos``, ``rank``, ``ids``: one event per element (1-D non-negative integer arrays of
    one length); an id's first use is its event with the smallest (pos, rank), the
    earliest such event on ties. ``size``: the number of ids (each id lies in
    ``[0, size)``); the second array has that length.
    """
    pos = np.asarray(pos, np.int64)
    rank = np.asarray(rank, np.int64)
    ids = np.asarray(ids, np.int64)
    if not (pos.ndim == rank.ndim == ids.ndim == 1 and pos.size == rank.size == ids.size):
        raise ValueError(f"first_use_order: pos, rank and ids must be 1-D of one length, "
                         f"got shapes {pos.shape}, {rank.shape}, {ids.shape}")
    remap = np.full(size, -1, np.int64)
    m = ids.size
    if not m:
        return np.zeros(0, np.int64), remap
    if min(int(pos.min()), int(rank.min()), int(ids.min())) < 0 or int(ids.max()) >= size:
        raise ValueError(f"first_use_order: pos and rank must be >= 0 and ids in "
                         f"[0, size={size})")
    width = int(rank.max()) + 1
    if (int(pos.max()) + 1) * width * m < 1 << 62:
        key = (pos * width + rank) * m + np.arange(m)
        best = np.full(size, _NONE, np.int64)
        np.minimum.at(best, ids, key)
        used = np.flatnonzero(best != _NONE)
        ordered = used[np.argsort(best[used])]
    else:  # the folded key would overflow: sort the events themselves
        seq = ids[np.lexsort((rank, pos))]
        uniq, first = np.unique(seq, return_index=True)
        ordered = uniq[np.argsort(first, kind="stable")]
    remap[ordered] = np.arange(ordered.size)
    return ordered, remap
