"""Graphs for TensorBoard's graph dashboard: a framework-neutral IR, a builder, writers, lint.

* :class:`Graph`, :class:`Node`, :class:`TensorSpec`, :class:`DType` — the IR
  (``summarylib.graph.ir``), convertible to and from ``GraphDef``.
* :class:`GraphBuilder` — hand-made graphs with TensorFlow's naming rules.
* :func:`write_graph` — the run-level graph; :func:`trace_on` / :func:`trace_export` /
  :func:`trace_off` — tagged graphs captured in between (with an optional profile);
  :func:`write_run_metadata` — a profile of the run-level graph;
  :func:`write_conceptual_graph` — the "Conceptual graph" of a :class:`Module` tree.
* ``trace(fn_or_module)`` — wrap a model so a capture adapter records its graph inside a
  trace; adapters call :func:`record_graph`.
* :func:`check` — lint: what the dashboard will do with a graph.

Importing this package loads neither numpy nor protobuf; conversion and writing load them
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from summarylib.graph.builder import GraphBuilder
from summarylib.graph.conceptual import PARENT_INPUT, Module, keras_json, write_conceptual_graph
from summarylib.graph.ir import DType, Graph, Node, TensorSpec
from summarylib.graph.lint import Issue, check
from summarylib.graph.trace import (
    is_tracing,
    profiler_enabled,
    record_graph,
    register_tracer,
    trace_export,
    trace_off,
    trace_on,
)
from summarylib.graph.writers import NodeStats, write_graph, write_run_metadata

if TYPE_CHECKING:
    # Type checkers see the function; at run time ``trace`` is the module
    # summarylib.graph.trace, made callable, so both ``trace(model)`` and
    # ``from summarylib.graph.trace import record_graph`` work.
    from summarylib.graph.trace import trace as trace
else:
    from summarylib.graph import trace

__all__ = [
    "PARENT_INPUT",
    "DType",
    "Graph",
    "GraphBuilder",
    "Issue",
    "Module",
    "Node",
    "NodeStats",
    "TensorSpec",
    "check",
    "is_tracing",
    "keras_json",
    "profiler_enabled",
    "record_graph",
    "register_tracer",
    "trace",
    "trace_export",
    "trace_off",
    "trace_on",
    "write_conceptual_graph",
    "write_graph",
    "write_run_metadata",
]
