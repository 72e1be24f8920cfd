"""``intern_ids``: number many keys in a table at once, in order of first occurrence.

The page's tables (strings, shape lists) number each key where it first occurs. A key per
op or per embedding, looked up one by one, costs two dict operations per key (is it
there; its number); the keys repeat (op labels, embedded constants' shown names), so here
each key costs one ``setdefault`` in a fresh dict, which hands back the position of the
key's first occurrence, and the table is consulted once per distinct key.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import count, filterfalse
from typing import Any

import numpy as np

__all__ = ["intern_ids"]


def intern_ids(table: dict[Any, int], keys: Sequence[Hashable]) -> np.ndarray:
    """Each key's number in ``table`` (an int64 array, one per key), after numbering the
    keys not yet in ``table`` on from its size in order of first occurrence: what
    ``table.setdefault(k, len(table))`` per key gives, in one pass over ``keys``.

    ``table`` maps keys to the numbers ``0 .. len(table) - 1`` (it is updated in place);
    ``keys``: hashable keys, in their order of use.
    """
    n = len(keys)
    seen: dict[Hashable, int] = {}
    # setdefault keeps the first position of each key: equal keys share it.
    first = np.fromiter(map(seen.setdefault, keys, count()), np.int64, n)
    distinct = list(seen)
    table.update(zip(filterfalse(table.__contains__, distinct), count(len(table))))
    ids = np.fromiter(map(table.__getitem__, distinct), np.int64, len(distinct))
    slot = np.zeros(n, np.int64)
    slot[np.fromiter(seen.values(), np.int64, len(seen))] = np.arange(len(seen))
    out: np.ndarray = ids[slot[first]]
    return out
