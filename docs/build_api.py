"""Build summarylib's API reference (static HTML) from its docstrings with pdoc.

    pip install -e '.[test,frameworks]'      # pdoc is in the test extra
    python docs/build_api.py                 # writes docs/api/ (open docs/api/index.html)
    python docs/build_api.py -o site/api     # anywhere else

The reference covers the public surface and nothing else: every name in ``summarylib.__all__``
(the ops, writers and errors, and the public modules ``distributed``, ``graph``, ``hparams``,
``reader`` and ``v1``, each with its own ``__all__``) and ``summarylib.integrations`` with its
modules. pdoc only walks into the submodules a package lists in ``__all__``, so the private
modules (``ops``, ``writer``, ``encoding``, ``proto``, the CLI) stay out.

The integrations import their frameworks (Keras, Lightning, transformers, torch), so those must
be installed. A pdoc warning (a name in ``__all__`` that does not resolve, a broken reference)
fails the build.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from pathlib import Path

# Keras 3 picks its backend at import; TensorFlow's, its default, is not installed.
os.environ.setdefault("KERAS_BACKEND", "torch")

ROOT = Path(__file__).resolve().parent.parent
# Document this checkout's summarylib, installed or not.
sys.path.insert(0, str(ROOT))
# The packages pdoc starts from; it adds the public submodules each lists in __all__.
ROOTS = ("summarylib", "summarylib.integrations")
INTEGRATIONS = ("clu", "keras", "lightning", "torch", "transformers")


def public_modules() -> list[str]:
    """Every module the reference has a page for, as pdoc will find them."""
    import summarylib

    subs = [f"summarylib.{n}" for n in summarylib.__all__
            if type(getattr(summarylib, n)) is type(summarylib)]
    return ["summarylib", *sorted(subs), "summarylib.integrations",
            *(f"summarylib.integrations.{n}" for n in INTEGRATIONS)]


def _load(name: str) -> None:
    """Import ``name`` and resolve its lazily loaded ``__all__`` names (PEP 562).

    pdoc looks a name up in the module's ``__dict__`` and otherwise takes it for a submodule;
    a name that ``__getattr__`` serves on first use (``summarylib.reader.read_dataframe``)
    would be listed as an undocumented variable. Setting the resolved object on the module
    is what the first use does anyway.
    """
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        sys.exit(f"build_api: cannot import {name} ({e}); the reference needs the frameworks "
                 "the integrations use: pip install -e '.[test,frameworks]'")
    for attr in getattr(module, "__all__", ()):
        if attr not in vars(module):
            setattr(module, attr, getattr(module, attr))


def build(output: Path) -> list[Path]:
    """Write the reference into ``output``; return the HTML pages written."""
    import pdoc
    import pdoc.render

    for name in public_modules():
        _load(name)
    import summarylib

    pdoc.render.configure(
        # Google-style sections (Args:, Returns:) with reST markup (:func:, ``::`` blocks);
        # pdoc's "google" format converts both.
        docformat="google",
        footer_text=f"summarylib {summarylib.__version__}",
    )
    pdoc_dir = Path(pdoc.__file__).resolve().parent
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*ROOTS, output_directory=output)
    problems = []
    for w in caught:
        if pdoc_dir not in Path(w.filename).resolve().parents:
            continue  # a framework's own warning while pdoc inspects it: not ours to judge
        # Annotations that name a type imported only for type checkers (``Step``,
        # ``summary_pb2.Summary``) cannot be evaluated at run time; pdoc shows them as written.
        if str(w.message).startswith("Error parsing type annotation"):
            continue
        problems.append(str(w.message))
    if problems:
        raise SystemExit("build_api: pdoc reported problems:\n  " + "\n  ".join(problems))
    return sorted(output.rglob("*.html"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "api",
                        help="output directory (default: docs/api)")
    args = parser.parse_args(argv)
    pages = build(args.output)
    print(f"wrote {len(pages)} pages; open {args.output / 'index.html'}")


if __name__ == "__main__":
    main()
