"""``group_runs``: the grouping that one tuple key per item gives, numbered by first use."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.graph.view.equal_runs import group_runs

# Few distinct codes and short runs, so that items repeat; int64 extremes, so that the
# hash wraps; zero entries, so that runs of zeros differ by their length only.
_CODE = st.sampled_from([0, 1, 2, -1, 7, 2**62, -(2**63), 2**63 - 1])
_ITEM = st.lists(st.lists(st.tuples(_CODE, _CODE), max_size=3), min_size=1, max_size=2)


def _reference(items: list[list[list[tuple[int, int]]]]) -> tuple[list[int], list[int]]:
    keys: dict[object, int] = {}
    group = [keys.setdefault(repr(item), len(keys)) for item in items]
    firsts = [group.index(g) for g in range(len(keys))]
    return group, firsts


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2).flatmap(
    lambda r: st.lists(st.lists(st.lists(st.tuples(_CODE, _CODE), max_size=3),
                                min_size=r, max_size=r), max_size=30)),
       st.sampled_from(["default", "zeros", "short"]))
def test_group_runs_is_the_tuple_grouping(items: list[list[list[tuple[int, int]]]],
                                          mix: str) -> None:
    # "zeros": every item hashes alike (the collision path); "short": too few multipliers.
    r = len(items[0]) if items else 1
    runs = []
    for k in range(r):
        per = [item[k] for item in items]
        lens = np.array([len(x) for x in per], np.int64)
        flat = [e for x in per for e in x]
        cols = [np.array([e[0] for e in flat], np.int64), np.array([e[1] for e in flat], np.int64)]
        runs.append((lens, cols))
    m = None if mix == "default" else np.zeros(8, np.int64) if mix == "zeros" \
        else np.ones(3, np.int64)
    group, firsts = group_runs(runs, m)
    want_group, want_firsts = _reference(items)
    assert group.tolist() == want_group
    assert firsts.tolist() == want_firsts


def test_runs_of_zeros_differ_by_length() -> None:
    lens = np.array([0, 1, 2, 1, 0, 2], np.int64)
    zeros = np.zeros(6, np.int64)
    group, firsts = group_runs([(lens, [zeros])])
    assert group.tolist() == [0, 1, 2, 1, 0, 2]
    assert firsts.tolist() == [0, 1, 2]


def test_bad_runs_are_named() -> None:
    with pytest.raises(ValueError, match="runs must hold"):
        group_runs([])
    with pytest.raises(ValueError, match="lens"):
        group_runs([(np.array([1, -1]), [np.zeros(0, np.int64)])])
    with pytest.raises(ValueError, match="columns"):
        group_runs([(np.array([1, 1]), [np.zeros(3, np.int64)])])
