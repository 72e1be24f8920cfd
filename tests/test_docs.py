"""Every Python block of README.md and docs/*.md runs, so the docs cannot drift from the code.

The blocks of one file run in order in one script (a block sees what the blocks before it
defined; a failure names its block), in a fresh directory, after a prelude that stands in for the
user's own objects (``train_step``, ``model``, ``batch``, ...). A block preceded by the line
``<!-- docs-test: skip REASON -->`` is skipped with that reason.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_BLOCK = re.compile(r"(?:^<!-- docs-test: skip (?P<skip>.*?) -->\n)?^```python\n(?P<code>.*?)^```",
                    re.S | re.M)

# Stand-ins for what a user's program has: small, fast, deterministic.
PRELUDE = '''
import numpy as np

_rng = np.random.default_rng(0)
lr = 0.01
w = _rng.normal(size=100)
batch = _rng.random((2, 3, 8, 8))          # NCHW images
loader = [batch] * 3
shards = [[1.0, 2.0], [3.0]]


def train_step(batch=None):
    loss = float(_rng.random())
    return (loss, 1.0 - loss) if batch is None else loss


try:
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    example_batch = torch.ones(2, 4)
    inputs = (example_batch,)
except ImportError:
    model = example_batch = inputs = None
'''


def _blocks() -> list[tuple[Path, int, str, str | None]]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in _BLOCK.finditer(text):
            line = text[: m.start("code")].count("\n")
            out.append((path, line, m.group("code"), m.group("skip")))
    return out


BLOCKS = _blocks()


def _needs_torch(code: str) -> bool:
    return bool(re.search(r"\bmodel\b|example_batch|\binputs\b", code))


@pytest.mark.parametrize("doc", DOCS, ids=[p.name for p in DOCS])
def test_doc_blocks_run(doc: Path, tmp_path: Path) -> None:
    blocks = [b for b in BLOCKS if b[0] == doc and b[3] is None]
    if not blocks:
        pytest.skip(f"no runnable Python block in {doc.name}")
    if any(_needs_torch(c) for _, _, c, _ in blocks) and not importlib.util.find_spec("torch"):
        pytest.skip("needs torch (the stand-in model)")
    parts = [PRELUDE]
    for _, at, code, _ in blocks:
        # The marker says which block a failure comes from.
        parts.append(f"print('@@ {doc.name}:{at}', flush=True)\n{code}")
    script = tmp_path / "doc_blocks.py"
    script.write_text("\n".join(parts))
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    markers = [m for m in proc.stdout.splitlines() if m.startswith("@@ ")]
    where = markers[-1][3:] if markers else doc.name
    assert proc.returncode == 0, f"the block at {where} failed:\n{proc.stderr[-3000:]}"
    assert len(markers) == len(blocks)


def test_every_doc_file_has_blocks_found() -> None:
    names = {p.name for p, _, _, _ in BLOCKS}
    assert {"README.md", "graphs.md", "reading.md"} <= names


def _readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_readme_tells_how_to_install_the_system_programs_ci_installs() -> None:
    # The suite's system programs (pip cannot install them) skip their tests when missing;
    # the set-up section must say how to get every one that .ci/run apt-installs.
    ci = (REPO / ".ci" / "run").read_text()
    m = re.search(r"apt-get install -y -qq ([\w .-]+?) >", ci)
    assert m, "no apt-get install line in .ci/run"
    packages = m[1].split()
    setup = " ".join(_readme_section("Set up").split())
    installs = re.findall(r"apt-get install ([\w .-]+)", setup)
    named = {p for found in installs for p in found.split()}
    assert set(packages) <= named, (packages, installs)


def test_readme_guarantees_admit_the_url_logdirs_they_document() -> None:
    guarantees = " ".join(_readme_section("Guarantees").split())
    assert 'create_file_writer("s3://' in guarantees  # URL logdirs are documented there
    assert "must be local" not in guarantees
    assert "A logdir may be a local path or a URL" in guarantees


def test_architecture_names_only_modules_and_classes_that_exist() -> None:
    """docs/architecture.md stays true: every module path it names exists, and every
    ``Class.method`` or class it names beside a module is defined there."""
    import importlib

    text = (REPO / "docs" / "architecture.md").read_text()
    paths = set(re.findall(r"`((?:summarylib/)?[a-z_]+/[a-z_/]+\.py|summarylib/[a-z_]+/?)`", text))
    assert len(paths) > 15, paths
    for path in paths:
        rooted = path.startswith(("summarylib", "tests/"))
        full = REPO / (path if rooted else f"summarylib/{path}")
        assert full.exists(), f"docs/architecture.md names {path}, which does not exist"
    # `Name` (`module.py`) pairs: the class or function is defined in that module.
    for name, module in re.findall(r"`([A-Z][A-Za-z]+)[`.][^|\n]*?\(`([a-z_]+/[a-z_]+)\.py`", text):
        mod = importlib.import_module("summarylib." + module.replace("/", "."))
        assert hasattr(mod, name), f"docs/architecture.md: {name} is not in {module}.py"
