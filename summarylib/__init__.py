"""summarylib: write TensorBoard event files from plain Python, in the style of ``tf.summary``.

Usage::

    import summarylib as sl

    writer = sl.create_file_writer("logs/run1")
    with writer.as_default():
        for step in range(100):
            sl.scalar("loss", 1.0 / (step + 1), step=step)
    writer.close()

Ops write to the calling thread's *default writer*; with none they do nothing
and return False. See :func:`create_file_writer` for the flush policy and
``summarylib.reader`` to read files back.

Importing summarylib loads no framework and not even numpy or protobuf: they
are imported by the first op that needs them.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from typing import TYPE_CHECKING, Any

from summarylib._version import __version__
from summarylib.creation import create_file_writer, create_noop_writer, create_writer
from summarylib.errors import (
    ArgumentError,
    DataLossError,
    NoDefaultWriterWarning,
    NonFiniteError,
    SummaryError,
    WriteFailedError,
    WriterClosedError,
)
from summarylib.ops.scalar import scalar, scalar_pb, scalars
from summarylib.ops.write import write, write_raw_pb
from summarylib.summary_writer import SummaryWriter
from summarylib.writer._context import (
    get_step,
    name_scope,
    record_if,
    set_step,
    should_record_summaries,
    summary_scope,
)
from summarylib.writer._file_writer import flush
from summarylib.writer._output import FileOutput, MemoryOutput, Output

if TYPE_CHECKING:
    from summarylib import distributed, graph, hparams, reader, v1
    from summarylib.graph import trace_export, trace_off, trace_on, write_graph
    from summarylib.ops.audio import audio, audio_pb
    from summarylib.ops.custom_scalars import custom_scalars, custom_scalars_pb
    from summarylib.ops.embedding import embedding
    from summarylib.ops.figure import figure, figure_pb
    from summarylib.ops.histogram import histogram, histogram_pb
    from summarylib.ops.histogram_proto import (
        histogram_bins,
        histogram_bins_pb,
        histogram_raw,
        histogram_raw_pb,
    )
    from summarylib.ops.image import image, image_pb
    from summarylib.ops.mesh import mesh, mesh_pb
    from summarylib.ops.pr_curve import pr_curve, pr_curve_pb, pr_curve_raw, pr_curve_raw_pb
    from summarylib.ops.text import text, text_pb
    from summarylib.ops.video import video, video_pb
    from summarylib.writer._signals import flush_on_signals

__all__ = [
    "ArgumentError",
    "DataLossError",
    "FileOutput",
    "MemoryOutput",
    "NoDefaultWriterWarning",
    "NonFiniteError",
    "Output",
    "SummaryError",
    "SummaryWriter",
    "WriteFailedError",
    "WriterClosedError",
    "__version__",
    "audio",
    "audio_pb",
    "create_file_writer",
    "create_noop_writer",
    "create_writer",
    "custom_scalars",
    "custom_scalars_pb",
    "distributed",
    "embedding",
    "figure",
    "figure_pb",
    "flush",
    "flush_on_signals",
    "get_step",
    "graph",
    "histogram",
    "histogram_bins",
    "histogram_bins_pb",
    "histogram_pb",
    "histogram_raw",
    "histogram_raw_pb",
    "hparams",
    "image",
    "image_pb",
    "mesh",
    "mesh_pb",
    "name_scope",
    "pr_curve",
    "pr_curve_pb",
    "pr_curve_raw",
    "pr_curve_raw_pb",
    "reader",
    "record_if",
    "scalar",
    "scalar_pb",
    "scalars",
    "set_step",
    "should_record_summaries",
    "summary_scope",
    "text",
    "text_pb",
    "trace_export",
    "trace_off",
    "trace_on",
    "v1",
    "video",
    "video_pb",
    "write",
    "write_graph",
    "write_raw_pb",
]

# Public names report the public module (as httpx does), so reprs and docs
# show ``summarylib.SummaryWriter`` rather than a private path.
for _name in __all__:
    _obj = globals().get(_name)
    if _obj is not None and getattr(_obj, "__module__", "").startswith("summarylib."):
        with contextlib.suppress(AttributeError, TypeError):  # e.g. builtins, slots
            _obj.__module__ = "summarylib"
del _name, _obj

# Parts that need numpy, pillow or protobuf load on first use (PEP 562).
_LAZY_MODULES = {
    "distributed": "summarylib.distributed",
    "graph": "summarylib.graph",
    "hparams": "summarylib.hparams",
    "reader": "summarylib.reader",
    "v1": "summarylib.v1",
}
_LAZY_ATTRS = {
    "audio": "summarylib.ops.audio",
    "audio_pb": "summarylib.ops.audio",
    "custom_scalars": "summarylib.ops.custom_scalars",
    "custom_scalars_pb": "summarylib.ops.custom_scalars",
    "embedding": "summarylib.ops.embedding",
    "figure": "summarylib.ops.figure",
    "figure_pb": "summarylib.ops.figure",
    "histogram_bins": "summarylib.ops.histogram_proto",
    "histogram_bins_pb": "summarylib.ops.histogram_proto",
    "histogram_raw": "summarylib.ops.histogram_proto",
    "histogram_raw_pb": "summarylib.ops.histogram_proto",
    "mesh": "summarylib.ops.mesh",
    "mesh_pb": "summarylib.ops.mesh",
    "video": "summarylib.ops.video",
    "video_pb": "summarylib.ops.video",
    "flush_on_signals": "summarylib.writer._signals",
    "histogram": "summarylib.ops.histogram",
    "histogram_pb": "summarylib.ops.histogram",
    "image": "summarylib.ops.image",
    "image_pb": "summarylib.ops.image",
    "pr_curve": "summarylib.ops.pr_curve",
    "pr_curve_pb": "summarylib.ops.pr_curve",
    "pr_curve_raw": "summarylib.ops.pr_curve",
    "pr_curve_raw_pb": "summarylib.ops.pr_curve",
    "text": "summarylib.ops.text",
    "text_pb": "summarylib.ops.text",
    "trace_export": "summarylib.graph",
    "trace_off": "summarylib.graph",
    "trace_on": "summarylib.graph",
    "write_graph": "summarylib.graph",
}


# fork() and lazy loading: a thread that imports a module holds that module's import
# lock, and a child forked meanwhile inherits the lock held by a thread that does not
# exist there: the first use of the op in the child would wait forever (or find the
# module half initialized). So the loads below hold _lazy_lock, and fork() waits for
# it (at most _FORK_WAIT_SECS, in case the forking thread itself holds an import lock
# that the load needs: then the fork goes ahead as before). Only first uses take it:
# a loaded name is a plain global afterwards. Threads of summarylib's own (the writer
# thread, its encoders) import nothing; the op modules load what they need.
_lazy_lock = threading.RLock()
_FORK_WAIT_SECS = 10.0
_held_for_fork = False


def _before_fork() -> None:
    global _held_for_fork
    _held_for_fork = _lazy_lock.acquire(timeout=_FORK_WAIT_SECS)


def _after_fork_in_parent() -> None:
    global _held_for_fork
    if _held_for_fork:
        _held_for_fork = False
        _lazy_lock.release()


def _after_fork_in_child() -> None:
    global _lazy_lock, _held_for_fork
    _lazy_lock = threading.RLock()  # whoever held it does not exist here
    _held_for_fork = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY_MODULES.get(name)
    attr = module is None and name in _LAZY_ATTRS
    if module is None and not attr:
        raise AttributeError(f"module 'summarylib' has no attribute {name!r}")
    with _lazy_lock:
        if module is not None:
            value = importlib.import_module(module)
        else:
            value = getattr(importlib.import_module(_LAZY_ATTRS[name]), name)
            if getattr(value, "__module__", "").startswith("summarylib."):
                value.__module__ = "summarylib"
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
