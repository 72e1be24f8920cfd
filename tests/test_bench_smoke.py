"""The benchmark runs on its own: a copy of bench/ away from this checkout (nothing beside it,
as in a user's clone) runs a short pass of the main cases and prints its tables. No timing
is asserted; only that the bench works and compares against its own floor."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_bench_runs_without_anything_beside_the_checkout(tmp_path: Path) -> None:
    bench = tmp_path / "clone" / "bench"
    shutil.copytree(REPO / "bench", bench, ignore=shutil.ignore_patterns("results*.json"))
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(bench / "run.py"), "--quick", "--reps", "1",
         "--cases", "scalar", "hist", "image", "text",
         "--systems", "summarylib", "floor", "floor-tensor", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "### targets" in proc.stdout and "issue" not in proc.stdout.lower()
    result = json.loads(out.read_text())
    for case in ("scalar", "hist", "image", "text"):
        assert {"summarylib", "floor"} <= set(result["cases"][case]), case
