"""The package's imports run one way: no module imports itself back through others.

Every ``import`` counts, at module level, inside functions and under ``TYPE_CHECKING``:
a cycle through a lazy import still ties the modules together for a reader and a type
checker. ``from package import name`` is an arrow to the submodule ``package.name`` when
that is a module, else to the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "summarylib"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    files = {
        _module_name(p): p
        for p in ROOT.rglob("*.py")
        if not p.name.endswith("_pb2.py")
    }
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    targets.append(sub if sub in files else node.module)
            for target in targets:
                if target in files and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 50 and "summarylib.graph.capturing" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_shares_its_name_with_a_function_of_its_package() -> None:
    # `summarylib.graph.trace` must be one thing: a function (not a callable module).
    import importlib
    import inspect

    for name in import_graph():
        package, _, leaf = name.rpartition(".")
        if not package:
            continue
        parent = importlib.import_module(package)
        attr = getattr(parent, leaf, None)
        if attr is not None:
            assert inspect.ismodule(attr), f"{package}.{leaf} is both a module and {attr!r}"
            assert not callable(attr), f"the module {name} is callable"


def test_the_byte_layout_depends_on_nothing_above_it() -> None:
    # ops -> writer -> encoding -> proto: encoding (which owns the bytes) imports neither
    # the writer, the ops nor the readers; the readers take the layout from encoding, not
    # from the writer's framing.
    graph = import_graph()
    above = ("summarylib.writer", "summarylib.ops", "summarylib.reader", "summarylib.summary_")
    for name, targets in graph.items():
        if name.startswith("summarylib.encoding"):
            assert not [t for t in targets if t.startswith(above)], name
    readers = {n: t for n, t in graph.items() if n.startswith("summarylib.reader")}
    for name, targets in readers.items():
        assert not [t for t in targets if t.startswith(("summarylib.ops", "summarylib.writer"))
                    and t != "summarylib.writer._remote"], name
