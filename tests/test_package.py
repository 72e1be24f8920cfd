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

import numpy as np
import pytest

import summarylib as sl
from summarylib.reader import read_scalars
from tests.helpers import only_file, tb_events

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, under its PyPI name
    tomllib = pytest.importorskip("tomli")

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


# Every op once, with numpy data, through a real file writer.
_EVERY_OP = """
import numpy as np
import summarylib as sl
from summarylib.ops.histogram import create_summary_metadata

rng = np.random.default_rng(0)
with sl.create_file_writer({logdir!r}).as_default(step=1) as w:
    assert sl.scalar("scalar", np.float32(0.5))
    assert sl.scalars({{"scalars_a": 1.0, "scalars_b": np.float64(2.0)}})
    assert sl.histogram("histogram", rng.normal(size=100))
    assert sl.image("image", rng.random((2, 4, 4, 3)))
    assert sl.audio("audio", rng.uniform(-1, 1, (2, 100, 2)), 8000)
    assert sl.text("text", np.array([["a", "b"]]))
    assert sl.pr_curve("pr_curve", rng.random(50) > 0.5, rng.random(50))
    ones = np.ones(5)
    assert sl.pr_curve_raw("pr_curve_raw", ones, ones, ones, ones, ones, ones)
    assert sl.write("write", np.arange(6.0).reshape(2, 3), metadata=create_summary_metadata())
    assert sl.write_raw_pb(sl.scalar_pb("write_raw_pb", 3.0))
    for pb in (sl.histogram_pb("h", [1.0]), sl.image_pb("i", np.zeros((1, 1, 1, 1))),
               sl.audio_pb("a", np.zeros((1, 1)), 8000), sl.text_pb("t", "x"),
               sl.pr_curve_pb("p", [True], [0.5]), sl.pr_curve_raw_pb("r", *[ones] * 6)):
        assert pb.value
w.close()
"""
FRAMEWORKS = ("torch", "jax", "jaxlib", "tensorflow", "tensorboard", "ml_dtypes")


def test_every_op_with_numpy_data_imports_no_framework(tmp_path: Path) -> None:
    # The frameworks are installed in the test environment, so an import anywhere on these
    # paths (ours, or a dependency's on our behalf) would show up in sys.modules.
    loaded = _modules_after(_EVERY_OP.format(logdir=os.fspath(tmp_path)))
    assert "numpy" in loaded and "PIL" in loaded  # the ops really ran
    imported = {m for m in loaded if m.split(".")[0] in FRAMEWORKS}
    assert not imported, sorted(imported)
    tags = {v.tag for e in tb_events(only_file(tmp_path)) for v in e.summary.value}
    assert tags == {
        "scalar", "scalars_a", "scalars_b", "histogram", "image", "audio", "text",
        "pr_curve/pr_curves", "pr_curve_raw/pr_curves", "write", "write_raw_pb",
    }


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


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The quickstart run once: its stdout and its logdir."""
    logdir = tmp_path_factory.mktemp("quickstart")
    proc = subprocess.run(
        [sys.executable, os.fspath(ROOT / "examples" / "quickstart.py"), os.fspath(logdir)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, logdir


def test_quickstart_example_runs_and_logs(quickstart: tuple[str, Path]) -> None:
    stdout, logdir = quickstart
    assert "tensorboard --logdir" in stdout
    runs = read_scalars(logdir)
    (series,) = runs.values()
    assert set(series) == {"loss", "accuracy", "learning_rate"}
    losses = [v for _, _, v in series["loss"]]
    assert len(losses) == 300 and losses[-1] < losses[0]


def test_quickstart_curves_improve_over_the_whole_run(quickstart: tuple[str, Path]) -> None:
    # The example is what a new user first opens in TensorBoard: its curves must show
    # learning, not a line that is flat after the first few steps.
    (series,) = read_scalars(quickstart[1]).values()
    acc = [v for _, _, v in series["accuracy"]]
    loss = [v for _, _, v in series["loss"]]
    assert acc[0] < 0.7 and acc[-1] > 0.9
    # Still climbing after the first tenth and after the first third of the run.
    assert acc[30] < acc[-1] - 0.15 and acc[100] < acc[-1] - 0.05, (acc[30], acc[100], acc[-1])
    assert loss[100] > 1.5 * loss[-1] and loss[-1] < 0.5 * loss[0]
    assert len(set(np.round(acc[150:], 3))) > 3  # the second half moves too


def _install_extras(command: str) -> set[str]:
    """The extras of this project that a README command's ``pip install -e '.[...]'`` asks for."""
    found = re.findall(r"pip install (?:-e )?'?\.(?:\[([\w,\s-]*)\])?'?", command)
    assert found, command
    return {e.strip() for group in found for e in group.split(",") if e.strip()}


def _readme_command(marker: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- {marker} -->\n```sh\n(.*?)\n```", text, re.S)
    assert m, marker
    return m[1]


def test_example_command_installs_the_command_the_quickstart_prints(
    quickstart: tuple[str, Path],
) -> None:
    # The quickstart ends with a command to run; the README's example command must install it.
    (line,) = (ln for ln in quickstart[0].splitlines() if "open it with:" in ln)
    program = line.split("open it with:")[1].split()[0]
    with open(ROOT / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    wanted = _install_extras(_readme_command("example-command"))
    requirements = [r for e in wanted for r in extras[e]]
    providers = []
    for req in requirements:
        dist = importlib.metadata.distribution(re.split(r"[<>=!~ ;\[]", req, maxsplit=1)[0])
        scripts = {ep.name for ep in dist.entry_points if ep.group == "console_scripts"}
        if program in scripts:
            providers.append(req)
    assert providers, f"`{program}` is not installed by the extras {sorted(wanted)}"


@pytest.mark.skipif(not os.environ.get("SUMMARYLIB_CI"), reason="set by .ci/run only")
def test_ci_has_every_optional_tool() -> None:
    # The framework and proto-compiler tests skip when their tool is missing; in CI a
    # missing tool must fail the run instead of skipping them silently.
    import importlib.util

    missing = [
        m
        for m in ("torch", "jax", "grpc_tools", "tbparse", "pytest_timeout", "pandas",
                  "pyarrow", "playwright", "tensorboardX", "soundfile", "matplotlib", "keras",
                  "lightning", "transformers", "accelerate", "flax", "optax", "clu",
                  "fsspec", "s3fs", "boto3", "moto", "pydot")
        if importlib.util.find_spec(m) is None
    ]
    assert not missing, f"CI environment lacks {missing}"
    from tests.browser import missing as browser_missing

    assert browser_missing() is None, browser_missing()
    import shutil

    assert shutil.which("dot"), "CI environment lacks Graphviz's dot (apt-get install graphviz)"
