"""The timed workloads: inputs, call counts (full and --quick) and what one "call" is.

Inputs are made once per case and shared by every system, so only the libraries
differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    n: int  # calls per repetition
    n_quick: int
    per_call: int = 1  # items per call: µs are reported per item (metrics)
    unit: str = "call"


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("scalar", "100,000 scalars", 100_000, 20_000),
        Case(
            "scalars20",
            "20 metrics per step, 5,000 steps (µs per metric)",
            5_000,
            1_000,
            per_call=20,
            unit="metric",
        ),
        Case("hist", "2,000 histograms of 10,000 float32", 2_000, 400),
        Case("hist_big", "1 histogram of 10,000,000 float32", 1, 1),
        Case("image", "300 images 64x64x3 uint8", 300, 100),
        Case("pr", "500 PR curves, 1,000 points, 127 thresholds", 500, 100),
        Case("audio", "200 clips of 1 s mono 16 kHz float32", 200, 50),
        Case("text", "2,000 short Markdown texts", 2_000, 400),
    )
}

METRIC_NAMES = [f"train/metric_{k:02d}" for k in range(20)]


def make_inputs(case: str, n: int) -> Any:
    """The input of ``case`` for ``n`` calls (seeded: the same every run)."""
    import numpy as np

    rng = np.random.default_rng(1234)
    if case == "scalar":
        return [float(np.sin(i * 0.01)) for i in range(n)]
    if case == "scalars20":
        base = rng.random(20)
        return [
            {name: float(base[k] / (i + 1)) for k, name in enumerate(METRIC_NAMES)}
            for i in range(n)
        ]
    if case == "hist":
        return rng.standard_normal(10_000, dtype=np.float32)
    if case == "hist_big":
        return rng.standard_normal(10_000_000, dtype=np.float32)
    if case == "image":
        return rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    if case == "pr":
        labels = rng.integers(0, 2, size=1000).astype(bool)
        preds = rng.random(1000, dtype=np.float32)
        return (labels, preds)
    if case == "audio":
        t = np.arange(16_000, dtype=np.float32) / 16_000
        return (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    if case == "text":
        return [f"**step {i}**: loss went *down* to `{1.0 / (i + 1):.6f}`" for i in range(n)]
    raise ValueError(case)


def input_bytes(inputs: Any) -> int:
    """Bytes of an array input (for memory ratios); 0 for other inputs."""
    return int(getattr(inputs, "nbytes", 0))
