"""``first_use_order``: ids in order of their earliest (position, rank) event."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.graph.view.first_use import first_use_order


def _reference(pos: list[int], rank: list[int], ids: list[int], size: int,
               ) -> tuple[list[int], list[int]]:
    # Every event sorted by (position, rank, index); an id's place is its first event.
    order: list[int] = []
    for _, _, _, u in sorted(zip(pos, rank, range(len(ids)), ids, strict=True)):
        if u not in order:
            order.append(u)
    remap = [-1] * size
    for i, u in enumerate(order):
        remap[u] = i
    return order, remap


# Few distinct positions and ranks, so that events tie and the earliest must win; huge
# positions, so that the folded key would overflow and the events are sorted instead.
_EVENTS = st.integers(1, 8).flatmap(lambda size: st.tuples(
    st.just(size),
    st.lists(st.tuples(st.sampled_from([0, 1, 2, 5, 2**40, 2**61]), st.integers(0, 3),
                       st.integers(0, size - 1)), max_size=40)))


@settings(max_examples=300, deadline=None)
@given(_EVENTS)
def test_first_use_order_is_the_first_event_of_each_id(
        case: tuple[int, list[tuple[int, int, int]]]) -> None:
    size, events = case
    pos, rank, ids = ([e[k] for e in events] for k in range(3))
    order, remap = first_use_order(np.array(pos, np.int64), np.array(rank, np.int64),
                                   np.array(ids, np.int64), size)
    want_order, want_remap = _reference(pos, rank, ids, size)
    assert order.tolist() == want_order
    assert remap.tolist() == want_remap


def test_first_use_order_names_bad_events() -> None:
    with pytest.raises(ValueError, match="one length"):
        first_use_order(np.zeros(2, np.int64), np.zeros(3, np.int64), np.zeros(2, np.int64), 1)
    with pytest.raises(ValueError, match=r"ids in \[0, size=2\)"):
        first_use_order(np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([2]), 2)
    with pytest.raises(ValueError, match="must be >= 0"):
        first_use_order(np.array([-1]), np.zeros(1, np.int64), np.zeros(1, np.int64), 1)
