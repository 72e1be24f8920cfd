"""The array steps of ``page_columns`` against the rules they compute, one item at a time.

``test_graph_view_page_columns`` checks the whole page against the view's; these check
the vectorised helpers on inputs the synthetic graphs do not reach (arbitrary text,
deep and uneven trees, keys too wide to pack into one integer): series keys against
``split_series_name`` leaf by leaf, metaedge placement against ancestor paths, and
histograms against a dict filled op by op.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from summarylib.graph.view.page_columns import (
    Declined,
    bundle_pairs,
    key_histograms,
    series_keys,
    small_unique,
    string_codes,
)
from summarylib.graph.view.series import split_series_name

# Digits ASCII and not (U+0661, U+FF11), "*", a newline (the rule's "$" lets one
# through), multi-byte letters and a lone surrogate (a graph's names can hold one).
_LEAF = st.text(st.sampled_from([*"ab_09*\n", "\u0661", "\uff11", "\u00e9", "\U0001f600",
                                 "\ud800"]), max_size=8)
_LONG = st.text(st.sampled_from("0123456789"), min_size=17, max_size=22)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_LEAF, st.builds(lambda a, b: a + b, _LEAF, _LONG)), max_size=40))
@example(["add", "add_1", "add_01", "x*", "7", "", "a1b2", "a12\n", "k9223372036854775807"])
@example(["x4611686018427387903", "x04611686018427387903"])  # 2**62 - 1: the largest taken
def test_series_keys_are_the_rule_leaf_by_leaf(leaves: list[str]) -> None:
    rule = [split_series_name(x) for x in leaves]
    if any(ident >= 1 << 62 for _, ident, _ in rule):
        with pytest.raises(Declined):
            series_keys(list(leaves))
        return
    pre, ids, keys = series_keys(list(leaves))
    # Keys in order of first occurrence, each leaf's the rule's (prefix, suffix).
    assert keys == list(dict.fromkeys((p, s) for p, _, s in rule))
    assert [keys[k] for k in pre.tolist()] == [(p, s) for p, _, s in rule]
    assert ids.tolist() == [ident for _, ident, _ in rule]


@st.composite
def trees_and_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A tree of groups (a parent made before its child, group 0 the root) and pairs of
    distinct groups."""
    size = draw(st.integers(2, 40))
    parent = [-1] + [draw(st.integers(0, k - 1)) for k in range(1, size)]
    pairs = draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
                          .filter(lambda p: p[0] != p[1]), min_size=1, max_size=30))
    a, b = zip(*pairs, strict=True)
    return np.array(parent, np.int64), np.array(a, np.int64), np.array(b, np.int64)


def _path(parent: np.ndarray, g: int) -> list[int]:
    out = []
    while g >= 0:
        out.append(g)
        g = int(parent[g])
    return out[::-1]


@settings(max_examples=200, deadline=None)
@given(trees_and_pairs())
def test_metaedges_go_to_the_lowest_common_ancestor(
        case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    parent, a, b = case
    g, v, w = bundle_pairs(parent, a, b)
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        pa, pb = _path(parent, x), _path(parent, y)
        k = 1
        while k < min(len(pa), len(pb)) and pa[k] == pb[k]:
            k += 1
        if k == len(pa):  # x holds y: the edge's source is the op itself
            want = (x, -1, pb[k])
        elif k == len(pb):
            want = (y, pa[k], -1)
        else:
            want = (pa[k - 1], pa[k], pb[k])
        assert (int(g[i]), int(v[i]), int(w[i])) == want


@st.composite
def memberships(draw: st.DrawFn,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]:
    """(group, op) pairs, each pair once, in any order, each pair's key (the op's), and
    what each pair counts (None: 1 each)."""
    n_ops = draw(st.integers(1, 30))
    groups = draw(st.integers(1, 8))
    # Keys small, or wide enough that (group, key, op) does not pack into an int64.
    wide = draw(st.booleans())
    keys = [draw(st.integers(0, 3)) * (1 << 50 if wide else 1) for _ in range(n_ops)]
    ops = draw(st.lists(st.integers(0, 5000 if wide else 40), min_size=n_ops, max_size=n_ops,
                        unique=True))
    pairs = draw(st.lists(st.tuples(st.integers(0, groups - 1), st.integers(0, n_ops - 1)),
                          unique=True, max_size=60))
    pg = np.array([g for g, _ in pairs], np.int64)
    po = np.array([ops[j] for _, j in pairs], np.int64)
    key = np.array([keys[j] for _, j in pairs], np.int64)
    count = (np.array(draw(st.lists(st.integers(1, 4), min_size=len(pairs),
                                    max_size=len(pairs))), np.int64)
             if draw(st.booleans()) else None)
    return pg, po, key, groups, count


@settings(max_examples=200, deadline=None)
@given(memberships())
def test_histograms_count_keys_in_order_of_first_op(
        case: tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]) -> None:
    pg, po, key, groups, count = case
    want: list[dict[int, int]] = [{} for _ in range(groups)]
    for i in np.argsort(po, kind="stable").tolist():
        h = want[int(pg[i])]
        h[int(key[i])] = h.get(int(key[i]), 0) + (1 if count is None else int(count[i]))
    got = key_histograms(pg, po, key, groups, count)
    assert got == [list(h.items()) for h in want]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=30), st.integers(0, 3))
def test_small_unique_is_numpys_unique(values: list[int], scale: int) -> None:
    # scale spreads the values: dense ones take the table, sparse ones the sort.
    a = np.array(values, np.int64) * (1 + 50 * scale)
    uniq, inv = small_unique(a)
    want_u, want_i = np.unique(a, return_inverse=True)
    assert uniq.tolist() == want_u.tolist() and inv.tolist() == want_i.reshape(-1).tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["", "a", "b", "Const", "\u0661", "a "]), max_size=30))
def test_string_codes_number_values_by_first_occurrence(values: list[str]) -> None:
    distinct, first, code = string_codes(values)
    want = list(dict.fromkeys(values))
    assert distinct == want
    assert first.tolist() == [values.index(v) for v in want]
    assert code.tolist() == [want.index(v) for v in values]
