"""TemplateFramer: many payloads of one template framed at once equal frame_many's records."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.encoding._template_framing import TemplateFramer
from summarylib.encoding._tfrecord import frame_many


@st.composite
def templates_and_rows(draw: st.DrawFn) -> tuple[bytes, list[int], np.ndarray]:
    template = draw(st.binary(min_size=1, max_size=300))
    positions = draw(st.lists(st.integers(0, len(template) - 1), unique=True, max_size=60))
    m = draw(st.integers(1, 40))
    data = draw(st.binary(min_size=m * len(positions), max_size=m * len(positions)))
    rows = np.frombuffer(data, dtype=np.uint8).reshape(m, len(positions))
    return template, positions, rows


def fill(template: bytes, positions: list[int], row: np.ndarray) -> bytes:
    payload = bytearray(template)
    for p, v in zip(positions, row.tolist(), strict=True):
        payload[p] = v
    return bytes(payload)


@settings(max_examples=200, deadline=None)
@given(case=templates_and_rows())
def test_frame_equals_frame_many(case: tuple[bytes, list[int], np.ndarray]) -> None:
    template, positions, rows = case
    framer = TemplateFramer(template, positions)
    assert framer.frame(rows) == frame_many([fill(template, positions, r) for r in rows])


def test_every_byte_value_at_every_bit() -> None:
    # Each table entry is used: all 256 values at the first, a middle and the last byte.
    template = bytes(range(100))
    positions = [0, 50, 99]
    rows = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, axis=1)
    framer = TemplateFramer(template, positions)
    assert framer.frame(rows) == frame_many([fill(template, positions, r) for r in rows])


def test_bad_positions_are_refused() -> None:
    with pytest.raises(ValueError, match="positions"):
        TemplateFramer(b"abc", [3])
    with pytest.raises(ValueError, match="positions"):
        TemplateFramer(b"abc", [1, 1])
