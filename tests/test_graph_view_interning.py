"""intern_ids: numbers keys in a table as one setdefault per key would."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.graph.view.interning import intern_ids

keys = st.one_of(st.text(alphabet="ab/", max_size=3),
                 st.tuples(st.integers(0, 3), st.none()))


@settings(max_examples=300, deadline=None)
@given(st.lists(keys, unique=True, max_size=6), st.lists(keys, max_size=40))
def test_intern_ids_numbers_as_setdefault_per_key(before: list[Any], later: list[Any]) -> None:
    table = {k: i for i, k in enumerate(before)}
    want_table = dict(table)
    want = [want_table.setdefault(k, len(want_table)) for k in later]
    got = intern_ids(table, later)
    assert got.dtype == np.int64 and got.tolist() == want
    assert list(table.items()) == list(want_table.items())
