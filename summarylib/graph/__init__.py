"""Graphs for TensorBoard's graph dashboard: a framework-neutral IR, a builder, writers, lint.

* :class:`Graph`, :class:`Node`, :class:`TensorSpec`, :class:`DType` — the IR
  (``summarylib.graph.ir``), convertible to and from ``GraphDef``.
* :class:`GraphBuilder` — hand-made graphs with TensorFlow's naming rules.
* :func:`write_graph` — the run-level graph; :func:`trace_on` / :func:`trace_export` /
  :func:`trace_off` — tagged graphs captured in between (with an optional profile);
  :func:`write_run_metadata` — a profile of the run-level graph;
  :func:`write_conceptual_graph` — the "Conceptual graph" of a :class:`Module` tree.
* :func:`capture` — a model's graph now (torch.export/fx/jit, JAX);
  :func:`trace` — wrap a model so its graph is recorded on its first call inside a trace;
  :func:`module_tree` — a torch model's conceptual graph. Adapters call
  :func:`record_graph`; :func:`register_tracer` adds one for another framework.
* :func:`check` — lint: what the dashboard will do with a graph.

Importing this package loads neither numpy nor protobuf; conversion and writing load them
on first use.
"""

from __future__ import annotations

from summarylib.graph.builder import GraphBuilder
from summarylib.graph.capturing import GraphCaptureWarning, capture, module_tree, trace, untrace
from summarylib.graph.conceptual import PARENT_INPUT, Module, keras_json, write_conceptual_graph
from summarylib.graph.ir import DType, Graph, Node, TensorSpec
from summarylib.graph.lint import Issue, check
from summarylib.graph.tracing import (
    is_tracing,
    profiler_enabled,
    record_graph,
    register_tracer,
    trace_export,
    trace_off,
    trace_on,
)
from summarylib.graph.writers import NodeStats, write_graph, write_run_metadata

__all__ = [
    "PARENT_INPUT",
    "DType",
    "Graph",
    "GraphBuilder",
    "GraphCaptureWarning",
    "Issue",
    "Module",
    "Node",
    "NodeStats",
    "TensorSpec",
    "capture",
    "check",
    "is_tracing",
    "keras_json",
    "module_tree",
    "profiler_enabled",
    "record_graph",
    "register_tracer",
    "trace",
    "trace_export",
    "trace_off",
    "trace_on",
    "untrace",
    "write_conceptual_graph",
    "write_graph",
    "write_run_metadata",
]
