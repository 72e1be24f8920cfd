"""``import summarylib`` imports no framework; no integration imports TensorFlow."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

FRAMEWORKS = ("torch", "jax", "keras", "lightning", "transformers", "clu", "flax",
              "tensorflow", "matplotlib")


def modules_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def top_level(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_import_summarylib_imports_no_framework() -> None:
    loaded = top_level(modules_after(
        "import summarylib, summarylib.integrations, summarylib.hparams, summarylib.v1\n"
        "import summarylib as sl; sl.SummaryWriter; sl.mesh; sl.video; sl.embedding"))
    assert not loaded & set(FRAMEWORKS), loaded & set(FRAMEWORKS)


@pytest.mark.parametrize("module,framework,env", [
    ("summarylib.integrations.clu", "clu", {}),
    ("summarylib.integrations.torch", "torch", {}),
    ("summarylib.integrations.lightning", "lightning", {}),
    ("summarylib.integrations.transformers", "transformers", {}),
    ("summarylib.integrations.keras", "keras", {"KERAS_BACKEND": "jax"}),
    ("summarylib.integrations.keras", "keras", {"KERAS_BACKEND": "torch"}),
])
def test_integrations_never_import_tensorflow(module: str, framework: str,
                                              env: dict[str, str]) -> None:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    loaded = top_level(modules_after(f"import {module}", env))
    assert "tensorflow" not in loaded
