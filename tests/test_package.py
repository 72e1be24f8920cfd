"""Packaging promises: light import, typed public surface, declared dependencies, the example."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import summarylib as sl
from summarylib.reader import read_scalars

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return set(json.loads(out))


def test_import_loads_no_heavy_dependency_or_framework() -> None:
    loaded = _modules_after("import summarylib")
    heavy = {"numpy", "google.protobuf", "PIL", "torch", "jax", "tensorflow", "tensorboard",
             "crc32c"}
    assert not heavy & loaded, heavy & loaded


def test_first_scalar_needs_no_numpy_or_protobuf(tmp_path: Path) -> None:
    code = (
        "import summarylib as sl\n"
        f"with sl.create_file_writer({os.fspath(tmp_path)!r}) as w:\n"
        "    assert sl.scalar('x', 1.5, step=0)\n"
    )
    loaded = _modules_after(code)
    assert "numpy" not in loaded and "google.protobuf" not in loaded


def test_runtime_dependencies_are_exactly_the_four() -> None:
    # What pip sees: the installed distribution's metadata, not the source file.
    requires = importlib.metadata.requires("summarylib") or []
    runtime = [r for r in requires if "extra ==" not in r]
    names = sorted(re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in runtime)
    assert names == ["crc32c", "numpy", "pillow", "protobuf"]
    assert importlib.metadata.metadata("summarylib")["Requires-Python"] == ">=3.10"


def test_public_names_resolve_and_report_the_public_module() -> None:
    assert (ROOT / "summarylib" / "py.typed").is_file()
    assert list(sl.__all__) == sorted(sl.__all__)
    for name in sl.__all__:
        obj = getattr(sl, name)
        if callable(obj) and not isinstance(obj, type(sl)):
            assert obj.__module__ == "summarylib", name
            assert obj.__doc__, f"{name} has no docstring"
    assert set(sl.__all__) <= set(dir(sl))


def test_lazy_names_live_in_the_modules_they_claim() -> None:
    for name, module in sl._LAZY_ATTRS.items():
        assert hasattr(importlib.import_module(module), name), (module, name)


def test_quickstart_example_runs_and_logs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, os.fspath(ROOT / "examples" / "quickstart.py"), os.fspath(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tensorboard --logdir" in proc.stdout
    runs = read_scalars(tmp_path)
    (series,) = runs.values()
    assert set(series) == {"loss", "accuracy", "learning_rate"}
    losses = [v for _, _, v in series["loss"]]
    assert len(losses) == 300 and losses[-1] < losses[0]


@pytest.mark.skipif(not os.environ.get("SUMMARYLIB_CI"), reason="set by .ci/run only")
def test_ci_has_every_optional_tool() -> None:
    # The framework and proto-compiler tests skip when their tool is missing; in CI a
    # missing tool must fail the run instead of skipping them silently.
    import importlib.util

    missing = [
        m for m in ("torch", "jax", "grpc_tools", "tbparse", "pytest_timeout")
        if importlib.util.find_spec(m) is None
    ]
    assert not missing, f"CI environment lacks {missing}"
