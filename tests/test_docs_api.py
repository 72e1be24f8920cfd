"""The API reference: docs/build_api.py builds it with pdoc, one page per public module.

The build needs pdoc (test extra) and the frameworks the integrations import (frameworks
extra); without them these tests skip, and in CI (SUMMARYLIB_CI=1) they fail instead.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import summarylib as sl

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "docs" / "build_api.py"
NEEDS = ("pdoc", "torch", "keras", "lightning", "transformers")
# A section of a pdoc page: the member's id, then the kind pdoc rendered it as.
_SECTION = re.compile(
    r'<section id="(?P<name>[^"]+)">\s*(?:<input[^>]*>\s*)?<div class="attr (?P<kind>\w+)">'
)


def _need_tools() -> None:
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("SUMMARYLIB_CI"):
            pytest.fail(f"CI needs {missing} to build the API reference")
        pytest.skip(f"building the API reference needs {missing}")


def _public_module_names() -> list[str]:
    """What the reference must cover: the modules in summarylib.__all__, the integrations."""
    import summarylib.integrations as integrations  # imports no framework

    names = ["summarylib", *(f"summarylib.{n}" for n in sl.__all__
                             if isinstance(getattr(sl, n), ModuleType))]
    names.append("summarylib.integrations")
    names += [f"summarylib.integrations.{m.name}"
              for m in pkgutil.iter_modules(integrations.__path__) if not m.name.startswith("_")]
    return names


# One child builds the reference and then reports what each public module exports (the
# integrations import Keras, whose backend is fixed at its first import: not in this process).
_BUILD_AND_REPORT = """
import importlib, json, runpy, sys, types
build, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.argv = [build, "-o", out]
runpy.run_path(build, run_name="__main__")
surface = {}
for name in names:
    module = importlib.import_module(name)
    members = surface[name] = {}
    for attr in getattr(module, "__all__", ()):
        obj = getattr(module, attr)
        kind = ("module" if isinstance(obj, types.ModuleType) else "class"
                if isinstance(obj, type) else "function" if callable(obj) else "other")
        members[attr] = [kind, bool((getattr(obj, "__doc__", None) or "").strip())]
print(json.dumps(surface))
"""
Surface = dict[str, dict[str, tuple[str, bool]]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Surface]:
    """The reference's directory, and {module: {name in its __all__: (kind, has a docstring)}}."""
    _need_tools()
    out = tmp_path_factory.mktemp("api")
    env = {**os.environ, "KERAS_BACKEND": "torch", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD_AND_REPORT, str(BUILD), str(out), *_public_module_names()],
        capture_output=True, text=True, timeout=600, env=env, cwd=out,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    wrote, report = proc.stdout.strip().splitlines()[-2:]
    assert wrote.startswith("wrote ")
    surface = {m: {a: (k, d) for a, (k, d) in members.items()}
               for m, members in json.loads(report).items()}
    return out, surface


@pytest.fixture(scope="module")
def api(built: tuple[Path, Surface]) -> Path:
    return built[0]


def _page(api: Path, module: str) -> Path:
    return api / (module.replace(".", "/") + ".html")


def _docstring_html(page: str, name: str) -> str:
    start = page.index(f'<section id="{name}">')
    section = page[start:page.index("</section>", start)]
    m = re.search(r'<div class="docstring">(.*)</div>', section, re.S)
    assert m, f"{name} has no docstring on its page"
    return m[1]


def test_a_page_for_each_public_module_and_none_for_private_ones(api: Path) -> None:
    pages = {p.relative_to(api).as_posix() for p in api.rglob("*.html")}
    expected = {_page(api, m).relative_to(api).as_posix() for m in _public_module_names()}
    assert pages == expected | {"index.html"}, pages ^ (expected | {"index.html"})
    assert "summarylib/integrations/keras.html" in pages  # the integrations are walked
    assert not any("/_" in p or p.startswith("summarylib/ops") for p in pages)


def test_every_public_name_is_documented_as_what_it_is(built: tuple[Path, Surface]) -> None:
    api, surface = built
    # Each name in a module's __all__ has its section, rendered as a function or class when it
    # is one (a lazily loaded name that pdoc failed to resolve shows up as a bare variable),
    # with its docstring when it has one; a public submodule is linked to its page.
    assert set(surface) == set(_public_module_names())
    for name, members in surface.items():
        page = _page(api, name).read_text()
        rendered = {m["name"]: m["kind"] for m in _SECTION.finditer(page)}
        for attr, (kind, has_doc) in members.items():
            if kind == "module":
                assert f"/{attr}.html" in page or f'"{attr}.html"' in page, (name, attr)
                continue
            assert attr in rendered, f"{name}.{attr} is missing from its page"
            if kind in ("class", "function"):
                assert rendered[attr] == kind, (name, attr, rendered[attr])
                if has_doc:
                    assert _docstring_html(page, attr).strip(), (name, attr)


def test_docstrings_are_rendered_with_their_markup(api: Path) -> None:
    page = _page(api, "summarylib.reader").read_text()
    doc = _docstring_html(page, "read_dataframe")
    # ``literals`` become code, :func: roles links to the function's section.
    assert "<code>pandas.DataFrame</code>" in doc
    assert '<a href="#read_columns">' in doc
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", doc)).split())
    assert "Long format (the default), one row per point" in text


def test_readme_links_the_reference_and_says_how_to_build_it() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/build_api.py)" in readme  # a link to the builder
    assert "python docs/build_api.py" in readme  # and the command
