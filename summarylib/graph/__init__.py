"""Graphs for TensorBoard's graph dashboard: a framework-neutral IR, a builder, writers, lint.

Importing this package loads neither numpy nor protobuf; conversion to ``GraphDef`` and
writing load them on first use.
"""

from __future__ import annotations

from summarylib.graph.ir import DType, Graph, Node, TensorSpec

__all__ = ["DType", "Graph", "Node", "TensorSpec"]
