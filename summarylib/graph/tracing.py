"""``trace_on`` / ``trace_export`` / ``trace_off``, and the hooks capture adapters use.

Semantics follow ``tf.summary`` (format.md §5.9, §6.4):

* ``trace_on(graph=True, profiler=False)`` starts a trace. A trace is process-wide, as in
  TensorFlow. Calling it while a trace is on warns and changes nothing.
* While it is on, capture adapters (``summarylib.graph.trace(model)``, or any code) hand
  each graph they capture to :func:`record_graph`, optionally with a per-node profile.
* ``trace_export(name, step=None)`` writes what was recorded to the default writer and ends
  the trace. Without ``trace_on`` it raises ValueError. The step is ``step``, else the
  default step; with a writer and neither, it raises ValueError and the trace stays on
  (nothing recorded is lost). With no default writer (or a false ``record_if``) nothing is
  written, the trace still ends, and it returns False.
* Each captured graph goes under its own tag: the first under ``name`` (with the current
  name scope), later ones under ``name_1``, ``name_2``, ... TensorBoard breaks control
  edges when one tag holds several function graphs, so graphs are never merged.
* Graph only: plugin ``graph_run_metadata_graph``. With ``profiler=True``: plugin
  ``graph_run_metadata``, whose ``RunMetadata`` also holds the ``StepStats`` the adapter
  passed (an empty ``StepStats`` if it passed none, with a warning). With
  ``graph=False, profiler=True`` the graph is left out and only the profile is written.
* ``trace_off()`` ends the trace and drops what was recorded; it does nothing if no trace
  is on.

This module is the small core that capture adapters depend on: the trace window,
:func:`record_graph`, and the registry of third-party capture adapters
(:func:`register_tracer`). It imports no adapter; ``summarylib.graph.capturing`` (the
``capture`` and ``trace`` functions) builds on it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from summarylib.graph.ir import Graph
from summarylib.graph.writers import (
    PLUGIN_GRAPH,
    PLUGIN_RUN_METADATA,
    NodeStats,
    graph_metadata_bytes,
    run_metadata_bytes,
    step_stats_bytes,
    string_scalar_bytes,
)
from summarylib.writer._context import Step

__all__ = [
    "NodeStats",
    "current_trace",
    "is_tracing",
    "profiler_enabled",
    "record_graph",
    "register_tracer",
    "registered_tracer",
    "trace_export",
    "trace_off",
    "trace_on",
]


@dataclass
class _Trace:
    graph: bool
    profiler: bool
    # (serialized GraphDef, serialized StepStats or None) per recorded graph.
    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)


_lock = threading.Lock()
_current: _Trace | None = None


def _check_bool(value: object, where: str, arg: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {arg!r} must be a bool, got {type(value).__name__}")
    return value


def trace_on(
    graph: bool = True, profiler: bool = False, profiler_outdir: str | None = None
) -> None:
    """Start recording captured graphs (and, with ``profiler``, their per-node profiles).

    ``profiler_outdir`` is accepted for ``tf.summary`` compatibility; profiles go into the
    event file (TensorBoard's graph dashboard), so it is not used and a warning says so.
    """
    global _current
    _check_bool(graph, "trace_on", "graph")
    _check_bool(profiler, "trace_on", "profiler")
    if profiler_outdir is not None:
        _warn_outdir("trace_on")
    with _lock:
        if _current is not None:
            warnings.warn(
                "trace_on: a trace is already on; this call is ignored "
                "(call trace_export() or trace_off() first)",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        _current = _Trace(graph, profiler)


def trace_off() -> None:
    """End the current trace, dropping whatever it recorded. No-op without a trace."""
    global _current
    with _lock:
        _current = None


def is_tracing() -> bool:
    """True while a trace is on: adapters skip capture work when it is False."""
    return _current is not None


def profiler_enabled() -> bool:
    """True while a trace with ``profiler=True`` is on: adapters should time each node."""
    cur = _current
    return cur is not None and cur.profiler


def record_graph(graph: Graph, run_metadata_step_stats: Any = None) -> bool:
    """Record ``graph`` for the next :func:`trace_export`; returns False if no trace is on.

    Capture adapters call this once per captured graph. ``run_metadata_step_stats`` is the
    optional profile of one execution: an iterable of :class:`NodeStats` (node names as in
    ``graph``; shapes and devices default to the graph's), a ``StepStats`` message, or its
    bytes. It is used only when the trace has ``profiler=True``.

    The graph is converted to ``GraphDef`` bytes now, so later changes to it are not seen
    and bad attrs raise here (TypeError/ValueError naming the node and attr), not at export.
    """
    cur = _current
    if cur is None:
        return False
    if not isinstance(graph, Graph):
        raise TypeError(f"record_graph: 'graph' must be a Graph, got {type(graph).__name__}")
    data = graph.to_bytes()
    stats: bytes | None = None
    if cur.profiler and run_metadata_step_stats is not None:
        rms = run_metadata_step_stats
        if isinstance(rms, (bytes, bytearray)):
            stats = bytes(rms)
        elif type(rms).__name__ == "StepStats" and hasattr(rms, "SerializeToString"):
            stats = rms.SerializeToString()
        else:
            stats = step_stats_bytes(rms, graph, "record_graph")
    with _lock:
        if _current is not cur:  # the trace ended (or restarted) meanwhile
            return False
        cur.records.append((data, stats))
    return True


def trace_export(name: str, step: Step | None = None, profiler_outdir: str | None = None) -> bool:
    """Write the graphs recorded since :func:`trace_on` under tag ``name``, then end the trace.

    Returns True if something was written. See the module docstring for tags, plugins and
    the error cases.
    """
    from summarylib.ops._emit import emit_value
    from summarylib.ops._resolve import Caller, resolve

    with _lock:
        cur = _current
    if cur is None:
        raise ValueError("trace_export: no trace is on; call trace_on() before trace_export()")
    if profiler_outdir is not None:
        _warn_outdir("trace_export")
    sink = resolve(name, step, Caller("trace_export"))
    if sink is None:
        trace_off()
        return False
    tag = sink.tag
    with _lock:
        records = list(cur.records)
    if not records:
        trace_off()
        warnings.warn(
            f"trace_export: no graph was captured since trace_on(); nothing written for {tag!r}",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    plugin = PLUGIN_RUN_METADATA if cur.profiler else PLUGIN_GRAPH
    if cur.profiler and any(stats is None for _, stats in records):
        warnings.warn(
            "trace_export: profiler=True but a captured graph came without node stats; "
            "its profile is empty",
            RuntimeWarning,
            stacklevel=2,
        )
    metadata = graph_metadata_bytes(plugin)
    values = []
    for i, (graph_def, stats) in enumerate(records):
        payload = run_metadata_bytes(
            graph_def if cur.graph else None, stats or b"", profile=cur.profiler
        )
        values.append((tag if i == 0 else f"{tag}_{i}", string_scalar_bytes(payload)))
    for t, tensor in values:
        emit_value(sink, tensor, metadata, t)
    trace_off()
    return True


def _warn_outdir(where: str) -> None:
    warnings.warn(
        f"{where}: 'profiler_outdir' is not used: summarylib writes the profile into the "
        "event file, where TensorBoard's graph dashboard reads it",
        UserWarning,
        stacklevel=3,
    )


# --- capture adapters ---------------------------------------------------------------------

Tracer = Callable[..., Any]
_tracers: dict[str, Tracer] = {}


def register_tracer(framework: str, tracer: Tracer) -> None:
    """Make ``tracer(obj, **options)`` the capture adapter for ``framework``.

    ``framework`` is a top-level package name (``"mxnet"``, ``"tinygrad"``): objects whose
    type comes from that package are handed to ``tracer`` by ``summarylib.graph.trace``.
    torch and JAX have built-in adapters; registering one of those names replaces it.
    ``tracer`` returns a callable that behaves like ``obj`` and calls :func:`record_graph`
    with the graph it captures (on its first call while :func:`is_tracing`). It must never
    raise because a graph could not be captured: it warns, naming what it could not
    represent.
    """
    if not isinstance(framework, str) or not framework:
        raise TypeError("register_tracer: 'framework' must be a non-empty str")
    if not callable(tracer):
        raise TypeError(f"register_tracer: 'tracer' must be callable, got {tracer!r}")
    _tracers[framework] = tracer


def registered_tracer(framework: str) -> Tracer | None:
    """The adapter :func:`register_tracer` registered for ``framework``, or None."""
    return _tracers.get(framework)


def current_trace() -> object | None:
    """An object that identifies the trace that is on (None when none is): adapters use it
    to record once per trace."""
    return _current


def _records_for_tests() -> Iterable[tuple[bytes, bytes | None]]:
    cur = _current
    return list(cur.records) if cur is not None else []
