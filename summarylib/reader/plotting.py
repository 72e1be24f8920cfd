"""Line charts of scalar series with pillow (``summarylib plot``): no matplotlib.

Several runs are overlaid, each in its own colour; as in TensorBoard, the raw series is drawn
faint and the smoothed one (TensorBoard's debiased exponential moving average) on top.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from PIL import ImageDraw

__all__ = ["PALETTE", "Chart", "draw_chart", "smooth"]

#: Run colours (TensorBoard's run palette order).
PALETTE = (
    (66, 133, 244),
    (239, 108, 0),
    (0, 150, 136),
    (194, 24, 91),
    (51, 105, 30),
    (142, 36, 170),
    (121, 85, 72),
    (96, 125, 139),
)
# Points turned into Python objects at a time (see smooth and _line).
_CHUNK_POINTS = 1 << 14
_BG = (255, 255, 255)
_AXIS = (90, 90, 90)
_GRID = (232, 232, 232)


def smooth(values: Sequence[float] | np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's smoothing: a debiased exponential moving average with ``weight``.

    ``weight`` in [0, 1): 0 returns the values; non-finite values are passed through and do
    not enter the average; a constant series stays constant.
    """
    if not 0 <= weight < 1:
        raise ValueError(f"smooth: 'weight' must be in [0, 1), got {weight!r}")
    y = np.asarray(values, dtype=np.float64)
    out: np.ndarray = y.copy()
    if weight == 0 or not len(y):
        return out
    last = 0.0
    count = 0
    for start in range(0, len(y), _CHUNK_POINTS):  # a slice at a time: no million floats
        for i, v in enumerate(y[start:start + _CHUNK_POINTS].tolist(), start):
            if not math.isfinite(v):
                continue
            last = last * weight + (1 - weight) * v
            count += 1
            out[i] = last / (1 - weight**count)
    return out


@dataclass
class Chart:
    """Where a drawn chart put its data: map data coordinates to pixels with :meth:`pixel`."""

    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    log_y: bool

    def pixel(self, x: float, y: float) -> tuple[int, int]:
        """The pixel (column, row) of data point ``(x, y)``."""
        x0, x1 = self.x_range
        y0, y1 = self.y_range
        if self.log_y:
            y, y0, y1 = math.log10(y), math.log10(y0), math.log10(y1)
        px = self.left + (x - x0) / (x1 - x0 or 1) * (self.right - self.left)
        py = self.bottom - (y - y0) / (y1 - y0 or 1) * (self.bottom - self.top)
        return round(px), round(py)


def draw_chart(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    out: str | os.PathLike[str],
    *,
    title: str = "",
    smoothing: float = 0.6,
    log_y: bool = False,
    size: tuple[int, int] = (800, 450),
) -> Chart:
    """Draw ``{label: (steps, values)}`` as one PNG chart at ``out``; return its geometry.

    Non-finite values (and, with ``log_y``, values <= 0) are not drawn. Raises ValueError
    when there is nothing to draw.
    """
    from PIL import Image, ImageDraw, ImageFont

    if not 0 <= smoothing < 1:
        raise ValueError(f"plot: 'smoothing' must be in [0, 1), got {smoothing!r}")
    width, height = size
    if width < 200 or height < 150:
        raise ValueError(f"plot: 'size' must be at least 200x150, got {width}x{height}")
    cleaned = {}
    for label, (steps, values) in series.items():
        x = np.asarray(steps, dtype=np.float64)
        y = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(y) & ((y > 0) if log_y else True)
        if ok.all():
            cleaned[label] = (x, y)  # no copies of a series that is all drawable
        elif ok.any():
            cleaned[label] = (x[ok], y[ok])
    if not cleaned:
        raise ValueError(
            "plot: no finite values to draw" + (" (log scale needs y > 0)" if log_y else "")
        )
    x_lo = min(float(x.min()) for x, _ in cleaned.values())
    x_hi = max(float(x.max()) for x, _ in cleaned.values())
    x_range = (x_lo, x_hi if x_hi > x_lo else x_lo + 1)
    y_lo = min(float(y.min()) for _, y in cleaned.values())
    y_hi = max(float(y.max()) for _, y in cleaned.values())
    if y_hi == y_lo:
        y_lo, y_hi = (y_lo / 2, y_hi * 2) if log_y else (y_lo - 0.5, y_hi + 0.5)
    elif not log_y:
        pad = (y_hi - y_lo) * 0.05
        y_lo, y_hi = y_lo - pad, y_hi + pad
    chart = Chart(
        width,
        height,
        70,
        36 if title else 16,
        width - 16 - 140,
        height - 40,
        x_range,
        (y_lo, y_hi),
        log_y,
    )
    image = Image.new("RGB", (width, height), _BG)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    _axes(draw, chart, font)
    if title:
        draw.text((chart.left, 10), title, fill=_AXIS, font=font)
    for i, (label, (x, y)) in enumerate(cleaned.items()):
        colour = PALETTE[i % len(PALETTE)]
        faint = tuple(int(c + (255 - c) * 0.7) for c in colour)
        if smoothing:
            _line(draw, chart, x, y, faint, 1)
        sm = smooth(y, smoothing)
        _line(draw, chart, x, sm, colour, 2)
        ly = chart.top + 4 + 16 * i
        draw.rectangle([chart.right + 12, ly + 3, chart.right + 24, ly + 9], fill=colour)
        draw.text((chart.right + 30, ly), label[:18], fill=_AXIS, font=font)
    image.save(os.fspath(out), format="PNG")
    return chart


def _line(
    draw: ImageDraw.ImageDraw,
    chart: Chart,
    x: np.ndarray,
    y: np.ndarray,
    colour: tuple[int, ...],
    w: int,
) -> None:
    if len(x) == 1:
        px, py = chart.pixel(float(x[0]), float(y[0]))
        draw.ellipse([px - 2, py - 2, px + 2, py + 2], fill=colour)
        return
    # The polyline in slices that share their end points: each segment is drawn on its
    # own, so the picture is the same as one call's, and a series of millions of points
    # never becomes a list of millions of tuples.
    for start in range(0, len(x) - 1, _CHUNK_POINTS):
        end = start + _CHUNK_POINTS + 1
        draw.line(_pixels(chart, x[start:end], y[start:end]), fill=colour, width=w)


def _pixels(chart: Chart, x: np.ndarray, y: np.ndarray) -> list[tuple[int, int]]:
    """``chart.pixel`` of every point, as a list; the linear scale computed by numpy with
    the same float64 operations in the same order and the same rounding (half to even),
    so the same pixels."""
    if chart.log_y:  # math.log10 per point, exactly as chart.pixel takes it
        return [chart.pixel(a, b) for a, b in zip(x.tolist(), y.tolist(), strict=True)]
    x0, x1 = chart.x_range
    y0, y1 = chart.y_range
    px = chart.left + (x - x0) / (x1 - x0 or 1) * (chart.right - chart.left)
    py = chart.bottom - (y - y0) / (y1 - y0 or 1) * (chart.bottom - chart.top)
    return list(zip(np.rint(px).astype(np.int64).tolist(),
                    np.rint(py).astype(np.int64).tolist(), strict=True))


def _axes(draw: ImageDraw.ImageDraw, chart: Chart, font: Any) -> None:
    for k in range(5):
        fy = k / 4
        y = chart.bottom - fy * (chart.bottom - chart.top)
        lo, hi = chart.y_range
        value = (
            10 ** (math.log10(lo) + fy * (math.log10(hi) - math.log10(lo)))
            if chart.log_y
            else lo + fy * (hi - lo)
        )
        draw.line([(chart.left, y), (chart.right, y)], fill=_GRID)
        draw.text((4, y - 6), f"{value:.4g}", fill=_AXIS, font=font)
        x = chart.left + fy * (chart.right - chart.left)
        step = chart.x_range[0] + fy * (chart.x_range[1] - chart.x_range[0])
        span = chart.x_range[1] - chart.x_range[0]
        label = f"{round(step)}" if span >= 8 else f"{step:.3g}"  # steps are integers
        draw.text((x - 10, chart.bottom + 8), label, fill=_AXIS, font=font)
    draw.line(
        [(chart.left, chart.top), (chart.left, chart.bottom), (chart.right, chart.bottom)],
        fill=_AXIS,
    )
