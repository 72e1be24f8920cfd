"""Packaging promises: light import, typed public surface, declared dependencies, the example."""

from __future__ import annotations

import email
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from summarylib.reader import read_scalars
from tests.helpers import only_file, tb_events

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


def test_import_defers_the_standard_modules_only_later_work_needs() -> None:
    # inspect (signatures of SummaryWriter methods recorded in compiled code) and the
    # encoder thread pool's module are a third of the import's own time: they load when
    # first needed, on the op's thread.
    loaded = _modules_after("import summarylib")
    deferred = {"inspect", "concurrent.futures"}
    assert not deferred & loaded, deferred & loaded


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


def _pyproject() -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser under its PyPI name
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        data: dict[str, Any] = tomllib.load(f)
    return data


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
    extras = _pyproject()["project"]["optional-dependencies"]
    wanted = _install_extras(_readme_command("example-command"))
    requirements = [r for e in wanted for r in extras[e]]
    providers = []
    for req in requirements:
        dist = importlib.metadata.distribution(re.split(r"[<>=!~ ;\[]", req, maxsplit=1)[0])
        scripts = {ep.name for ep in dist.entry_points if ep.group == "console_scripts"}
        if program in scripts:
            providers.append(req)
    assert providers, f"`{program}` is not installed by the extras {sorted(wanted)}"


def test_build_system_floor_reads_the_license_field() -> None:
    # An SPDX string in `license` (PEP 639) is read from setuptools 77 on; older ones stop the
    # build ("project.license must be valid exactly by one definition").
    data = _pyproject()
    (req,) = (r for r in data["build-system"]["requires"] if r.startswith("setuptools"))
    floor = re.fullmatch(r"setuptools>=([\d.]+)", req)
    assert floor, req
    if isinstance(data["project"]["license"], str):
        assert tuple(int(x) for x in floor[1].split(".")) >= (77,), req
    assert data["project"]["license"] == "Apache-2.0"
    assert data["project"]["license-files"] == ["LICENSE"]


def test_sdist_and_wheel_ship_the_license(tmp_path: Path) -> None:
    # A real build of a copy of the tree with the installed setuptools (the build backend).
    if importlib.util.find_spec("setuptools") is None:
        if os.environ.get("SUMMARYLIB_CI"):
            pytest.fail("CI needs setuptools to build the sdist and wheel")
        pytest.skip("setuptools is not installed")
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in license_text
    src = tmp_path / "src"
    shutil.copytree(ROOT / "summarylib", src / "summarylib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    # setuptools logs to stdout too: the file names come last, marked.
    build = ("from setuptools import build_meta as b\n"
             "s, w = b.build_sdist('dist'), b.build_wheel('dist')\nprint('@@', s, w)")
    proc = subprocess.run([sys.executable, "-c", build], cwd=src, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, sdist_name, wheel_name = proc.stdout.strip().splitlines()[-1].split()
    with tarfile.open(src / "dist" / sdist_name) as sdist:
        (member,) = (m for m in sdist.getnames() if m.endswith("/LICENSE"))
        f = sdist.extractfile(member)
        assert f is not None and f.read().decode() == license_text
    with zipfile.ZipFile(src / "dist" / wheel_name) as wheel:
        (meta,) = (n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        info = email.message_from_bytes(wheel.read(meta))
        assert info["License-Expression"] == "Apache-2.0"
        assert info.get_all("License-File") == ["LICENSE"]
        dist_info = meta.rsplit("/", 1)[0]
        assert wheel.read(f"{dist_info}/licenses/LICENSE").decode() == license_text


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
                  "fsspec", "s3fs", "boto3", "moto", "pydot", "pdoc", "setuptools", "onnx")
        if importlib.util.find_spec(m) is None
    ]
    assert not missing, f"CI environment lacks {missing}"
    from tests.browser import missing as browser_missing

    assert browser_missing() is None, browser_missing()
    import shutil

    assert shutil.which("dot"), "CI environment lacks Graphviz's dot (apt-get install graphviz)"
