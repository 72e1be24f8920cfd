"""Capture adapters: framework graphs (torch.export / torch.fx / torch.jit, jaxprs) -> IR.

Every adapter produces a :class:`~summarylib.graph.ir.Graph` that follows the same rules
(graph-pipeline.md §5.3), so TensorBoard's dashboard shows it the same way:

* node names are ``scope/op``: the scope is the module path (``layer1/0/conv1``) or the
  JAX function/name-scope path, the last segment a readable op name (``conv2d``), made
  unique with ``_1``, ``_2``... A name never equals a scope (which TensorBoard would draw
  as ``A/(A)``), and every segment is reduced to ``[A-Za-z0-9_.-]`` (a ``:`` would be read
  as an output slot), with a first character TensorFlow's node-name rule accepts (a
  root-level ``_x`` becomes ``n_x``);
* graph inputs are ``Placeholder``; parameters, buffers, literals and other constants
  are ``Const`` (drawn as icons inside their consumers) with attr ``dtype`` and, when
  small, ``value``;
* multi-output ops are one node with ``name:k`` inputs downstream (no ``getitem``/
  ``TupleUnpack`` bookkeeping nodes), every input names an existing node, and every
  non-``Const`` node has ``_output_shapes`` (from the framework's shape metadata);
* anything that cannot be represented is reported as a :class:`GraphCaptureWarning`
  naming it; the graph is still produced.

This package imports no framework: each adapter module imports torch or jax inside its
functions. :class:`PendingGraph` is the two-pass naming both adapters share.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from summarylib.graph._gc import gc_paused
from summarylib.graph.ir import DType, Graph, Node, TensorSpec

__all__ = [
    "GraphCaptureWarning",
    "PendingGraph",
    "PendingNode",
    "arg_names",
    "const_attrs",
    "gc_paused",
    "plain_attr",
    "sanitize",
    "warn_capture",
]

# Values above this size are not stored in a Const's "value" attr: TensorBoard sends every
# attr to the browser (graph-pipeline.md §2.2), and parameters can be megabytes.
VALUE_LIMIT = 1024
# Attrs turned into their string form are cut to this many characters.
_STR_LIMIT = 256

_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.\-]+")


class GraphCaptureWarning(UserWarning):
    """A capture adapter could not represent something; the message names it."""


def warn_capture(message: str, stacklevel: int = 3) -> None:
    """Warn with :class:`GraphCaptureWarning` (adapters never raise for such things)."""
    warnings.warn(message, GraphCaptureWarning, stacklevel=stacklevel)


def sanitize(segment: str) -> str:
    """One name segment reduced to ``[A-Za-z0-9_.-]`` (never empty, never starting ``.``)."""
    s = _BAD_CHARS.sub("_", segment).strip("_") or "_"
    return "_" + s if s[0] in ".-" else s


def _root_safe(path: str) -> str:
    """``path`` with a first character TensorFlow's node-name rule accepts.

    The rule (``[A-Za-z0-9.][A-Za-z0-9_./>-]*``) restricts only the first character of a
    full name; :func:`sanitize` can leave a ``_`` there (an argument named ``_``, a segment
    that was all punctuation). Such root-level paths get an ``n`` in front (``_`` ->
    ``n_``); applied to scopes and names alike, so a scope's nodes stay together.
    """
    return "n" + path if path[:1] == "_" else path


def scope_of(path: str, sep: str = ".") -> str:
    """A module path (``layer1.0.conv1``) as a scope (``layer1/0/conv1``); ``""`` is root."""
    if not path:
        return ""
    return "/".join(sanitize(p) for p in path.split(sep) if p)


@dataclass
class PendingNode:
    """A node before naming: inputs refer to other pending nodes by ``key`` and slot."""

    key: Hashable
    scope: str  # "" or "a/b" (already sanitized)
    base: str  # the wanted last segment, e.g. "conv2d"
    op: str
    inputs: list[tuple[Hashable, int]] = field(default_factory=list)
    attrs: dict[str, object] = field(default_factory=dict)
    outputs: list[TensorSpec] = field(default_factory=list)
    device: str = ""
    control: list[Hashable] = field(default_factory=list)


class PendingGraph:
    """Collects :class:`PendingNode` objects, then names them all at once.

    Naming waits until every scope is known, so an op is never given a name that a later
    node uses as a scope (``encoder/relu`` as an op while ``encoder/relu/...`` exists).
    """

    def __init__(self) -> None:
        self.nodes: list[PendingNode] = []
        self._keys: set[Hashable] = set()
        #: key -> final node name, filled by :meth:`finish`.
        self.names: dict[Hashable, str] = {}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keys

    def add(self, node: PendingNode) -> PendingNode:
        if node.key in self._keys:
            raise ValueError(f"PendingGraph: key {node.key!r} added twice")
        self._keys.add(node.key)
        self.nodes.append(node)
        return node

    def finish(self, where: str) -> Graph:
        """Assign unique names and build the :class:`Graph`.

        Inputs naming keys that were never added are dropped with a warning, so the graph
        has no dangling inputs.
        """
        scopes: set[str] = set()
        for p in self.nodes:
            p.scope = _root_safe(p.scope)
            s = p.scope
            while s and s not in scopes:
                scopes.add(s)
                s = s.rpartition("/")[0]
        taken: set[str] = set(scopes)
        counters: dict[str, int] = {}
        names: dict[Hashable, str] = {}
        for p in self.nodes:
            base = sanitize(p.base)
            want = f"{p.scope}/{base}" if p.scope else _root_safe(base)
            name = want
            if name in taken:
                i = counters.get(want, 0)
                while name in taken:
                    i += 1
                    name = f"{want}_{i}"
                counters[want] = i
            taken.add(name)
            names[p.key] = name
        self.names = names
        graph = Graph()
        missing: list[str] = []
        for p in self.nodes:
            inputs: list[str] = []
            for key, slot in p.inputs:
                src = names.get(key)
                if src is None:
                    missing.append(f"{names[p.key]} <- {key!r}")
                    continue
                inputs.append(src if slot == 0 else f"{src}:{slot}")
            control = [names[k] for k in p.control if k in names]
            graph.nodes.append(
                Node(
                    name=names[p.key],
                    op=p.op,
                    inputs=inputs,
                    control_inputs=control,
                    attrs=p.attrs,
                    outputs=p.outputs,
                    device=p.device,
                )
            )
        graph.reindex()
        if missing:
            shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
            warn_capture(
                f"{where}: {len(missing)} input(s) had no source node and were left out: {shown}"
            )
        return graph


def plain_attr(value: object) -> tuple[bool, object]:
    """``(ok, attr)``: a Python value as an IR attr value, or ``(False, None)`` to skip it.

    Numbers, strings, bools and homogeneous lists of them are kept; ``None`` is skipped
    (it means "the default"); other objects become their (cut) ``str`` form.
    """
    if value is None:
        return False, None
    if isinstance(value, (bool, int, float, str, DType, TensorSpec)):
        too_big = isinstance(value, int) and not -(2**63) <= value < 2**63
        return True, str(value) if too_big else value
    if isinstance(value, (list, tuple)):
        items = list(value)
        numbers = all(isinstance(v, bool) for v in items) or all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in items
        )
        if numbers and all(not isinstance(v, int) or -(2**63) <= v < 2**63 for v in items):
            return True, items
        if all(isinstance(v, str) for v in items):
            return True, items
    text = str(value)
    if len(text) > _STR_LIMIT:
        text = text[: _STR_LIMIT - 3] + "..."
    return True, text


def const_attrs(
    spec: TensorSpec, value: Any = None, extra: dict[str, object] | None = None
) -> dict[str, object]:
    """Attrs of a ``Const``: ``dtype``, ``value`` (numpy array, only if at most 1 KB), extra."""
    attrs: dict[str, object] = {}
    if spec.dtype is not None:
        attrs["dtype"] = DType(spec.dtype)
    if value is not None and getattr(value, "nbytes", VALUE_LIMIT + 1) <= VALUE_LIMIT:
        attrs["value"] = value
    if extra:
        attrs.update(extra)
    return attrs


def arg_names(fn: Any, n: int) -> list[str]:
    """Names of the first ``n`` positional parameters of ``fn`` (``input_i`` if unknown)."""
    names: list[str] = []
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            break
    while len(names) < n:
        names.append(f"input_{len(names)}")
    return names[:n]
