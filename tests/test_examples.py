"""Every example runs and writes a logdir TensorBoard's loader reads."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.observe import observe

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NEEDS = {"torch_drop_in.py": "torch", "torch_watch.py": "torch", "keras_fit.py": "keras",
         "lightning_fit.py": "lightning", "transformers_trainer.py": "transformers",
         "flax_clu.py": "flax"}


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_runs(tmp_path: Path, name: str) -> None:
    if importlib.util.find_spec(NEEDS[name]) is None:
        pytest.skip(f"{NEEDS[name]} is not installed")
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name), str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote" in done.stdout
    runs = observe(tmp_path / "logs")
    assert any(tags for tags in runs.values()), runs
