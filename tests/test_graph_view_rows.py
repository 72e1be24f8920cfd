"""``unique_rows``: the same result as ``np.unique(axis=0, return_inverse=True)``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from summarylib.graph.view.rows import unique_rows

# Few distinct values, so that rows repeat; int64 extremes, so that the hash wraps.
_VALUES = st.sampled_from([0, 1, 2, -1, 7, 2**62, -(2**63), 2**63 - 1])
_MATRICES = st.tuples(st.integers(0, 40), st.integers(0, 6)).flatmap(
    lambda shape: hnp.arrays(np.int64, shape, elements=_VALUES))


@settings(max_examples=200, deadline=None)
@given(_MATRICES, st.sampled_from(["default", "zeros", "short"]))
def test_unique_rows_is_nps(rows: np.ndarray, mix: str) -> None:
    # "zeros": every row hashes the same (the collision path); "short": fewer
    # multipliers than columns (np.unique itself).
    w = rows.shape[1]
    m = None if mix == "default" else np.zeros(w, np.int64) if mix == "zeros" \
        else np.ones(max(w - 1, 0), np.int64)
    uniq, inv = unique_rows(rows, m)
    want_uniq, want_inv = np.unique(rows, axis=0, return_inverse=True)
    assert uniq.tolist() == want_uniq.tolist()
    assert inv.tolist() == want_inv.reshape(-1).tolist()


def test_unique_rows_names_a_bad_shape() -> None:
    with pytest.raises(ValueError, match="rows must be 2-D"):
        unique_rows(np.zeros(3, np.int64))
