"""The real TensorBoard (Rust data server) serves back every scalar we wrote."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import summarylib as sl
from tests.tbserver import TensorBoardServer


@pytest.mark.parametrize("load_fast", [True, False], ids=["rust", "python"])
def test_tensorboard_serves_every_scalar(tmp_path: Path, load_fast: bool) -> None:
    rng = np.random.default_rng(0)
    expected: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for run in ("train", "eval/a"):
        with sl.create_file_writer(tmp_path / run, max_queue=3).as_default() as w:
            for step in range(60):
                values = {"loss": float(rng.random()), "acc": float(step) / 60}
                sl.scalars(values, step=step)
                sl.scalar("lr", 0.1 * 0.9**step, step=step)
                values["lr"] = 0.1 * 0.9**step
                for tag, v in values.items():
                    expected.setdefault(run, {}).setdefault(tag, []).append(
                        (step, float(np.float32(v)))
                    )
            sl.scalar("special", float("inf"), step=0)
            sl.scalar("special", float("nan"), step=1)
        w.close()
    with TensorBoardServer(tmp_path, load_fast=load_fast) as tb:
        tags = tb.poll(
            lambda: tb.get_json("/data/plugin/scalars/tags"),
            lambda t: all(len(t.get(r, {})) == 4 for r in expected),
        )
        for run, series in expected.items():
            assert set(tags[run]) == {*series, "special"}
            for tag, points in series.items():
                got = tb.get_json("/data/plugin/scalars/scalars", run=run, tag=tag)
                assert [(s, v) for _, s, v in got] == points
                assert all(wall > 1e9 for wall, _, _ in got)
            special = tb.get_json("/data/plugin/scalars/scalars", run=run, tag="special")
            assert [s for _, s, _ in special] == [0, 1]
            # TensorBoard's JSON spells non-finite numbers as strings.
            assert float(special[0][2]) == math.inf
            assert math.isnan(float(special[1][2]))
