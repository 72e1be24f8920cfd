"""Write graphs and profiles into event files in the three forms TensorBoard reads.

* :func:`write_graph` — the run-level op graph: ``Event.graph_def`` holding a serialized
  ``GraphDef``. TensorBoard shows one per run (tag "Default"; the highest step wins).
  Like ``tf.summary.graph``, it is written at step 0 unless a step is given.
* Tagged op graphs (what :func:`summarylib.graph.trace_export` writes): a ``Summary.Value``
  with plugin ``graph_run_metadata_graph`` (graph only) or ``graph_run_metadata`` (graph
  plus ``StepStats`` profile), content ``b"1"``, whose tensor is a rank-0 ``DT_STRING``
  holding a serialized ``RunMetadata`` with exactly one ``function_graphs`` entry
  (``pre_optimization_graph``). :func:`run_metadata_bytes` builds that payload.
* :func:`write_run_metadata` — a profile for the run-level graph as
  ``Event.tagged_run_metadata`` (TensorBoard's "Session runs" list).

Profiles are framework-neutral :class:`NodeStats` records (one per executed node) or a
``StepStats`` message. TensorBoard draws a node's compute time as the span from its start to
its end and a group's as the span over its children, so ``start_micros`` must be real,
comparable timestamps (microseconds since the epoch), not per-node offsets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from summarylib.encoding._plugins import plugin_data_bytes
from summarylib.encoding._tensor import data_type, string_tensor_bytes
from summarylib.encoding._wire import field_bytes, field_varint
from summarylib.errors import ArgumentError
from summarylib.graph.ir import Graph, TensorSpec
from summarylib.writer._context import Step

if TYPE_CHECKING:
    from summarylib.ops._resolve import Sink
    from summarylib.proto import step_stats_pb2

__all__ = [
    "PLUGIN_GRAPH",
    "PLUGIN_KERAS_MODEL",
    "PLUGIN_RUN_METADATA",
    "NodeStats",
    "graph_def_bytes",
    "graph_metadata_bytes",
    "run_metadata_bytes",
    "step_stats_bytes",
    "write_graph",
    "write_graph_def",
    "write_run_metadata",
]

PLUGIN_GRAPH = "graph_run_metadata_graph"
PLUGIN_RUN_METADATA = "graph_run_metadata"
PLUGIN_KERAS_MODEL = "graph_keras_model"
# The graph plugin ignores a tag whose plugin content is anything but exactly b"1".
_CONTENT = b"1"
_DEFAULT_DEVICE = "/device:CPU:0"


def graph_metadata_bytes(plugin_name: str) -> bytes:
    """Serialized ``SummaryMetadata`` for one of the graph plugins (content ``b"1"``)."""
    return plugin_data_bytes(plugin_name, _CONTENT)


def string_scalar_bytes(payload: bytes) -> bytes:
    """A rank-0 ``DT_STRING`` TensorProto holding ``payload``."""
    return string_tensor_bytes((), [payload])


def graph_def_bytes(graph: object, where: str = "write_graph") -> bytes:
    """Serialize ``graph``: a :class:`Graph`, a ``GraphDef`` message (ours, TensorBoard's
    or TensorFlow's) or already serialized ``GraphDef`` bytes."""
    if isinstance(graph, Graph):
        return graph.to_bytes()
    if isinstance(graph, (bytes, bytearray, memoryview)):
        data = bytes(graph)
        _check_graph_def(data, where)
        return data
    if type(graph).__name__ == "GraphDef" and hasattr(graph, "SerializeToString"):
        return graph.SerializeToString()  # type: ignore[no-any-return]
    # TensorFlow raises ValueError for anything but a graph: the error is both.
    raise ArgumentError(
        f"{where}: 'graph' must be a summarylib.graph.Graph, a GraphDef or its bytes, "
        f"got {type(graph).__name__}"
    )


def _check_graph_def(data: bytes, where: str) -> None:
    # Bytes go into the event verbatim: bytes that are not a GraphDef would leave the
    # run with a graph no reader can show.
    from google.protobuf.message import DecodeError

    from summarylib.proto import graph_pb2

    try:
        graph_pb2.GraphDef.FromString(data)
    except DecodeError as e:
        raise ValueError(
            f"{where}: 'graph' is not a serialized GraphDef ({data[:32]!r}"
            f"{'...' if len(data) > 32 else ''}): {e}"
        ) from None


def write_graph(graph: object, step: Step | None = None) -> bool:
    """Write ``graph`` as the run-level op graph (``Event.graph_def``) to the default writer.

    ``graph`` is a :class:`~summarylib.graph.Graph`, a ``GraphDef`` message or its bytes.
    The step defaults to 0, as ``tf.summary.graph`` writes it; TensorBoard keeps one graph per
    run and shows the one with the highest step. Returns False (doing nothing) when no
    summary would be recorded.
    """
    from summarylib.ops._resolve import Caller, resolve

    sink = resolve(None, 0 if step is None else step, Caller("write_graph"), untagged=True)
    if sink is None:
        return False
    return write_graph_def(sink, graph)


def write_graph_def(sink: Sink, graph: object) -> bool:
    """The core of :func:`write_graph`: write ``graph`` to ``sink`` (an untagged sink)."""
    from summarylib.ops._emit import emit_event_field

    data = graph_def_bytes(graph)
    emit_event_field(sink, field_bytes(4, data))
    return True


@dataclass
class NodeStats:
    """How one graph node ran once: the input to a ``StepStats`` profile.

    ``start_micros``: start time in microseconds since the epoch (comparable across nodes).
    ``duration_micros``: wall time of the node (>= 0).
    ``output_bytes``: total size of its outputs (TensorBoard's "memory"); 0 = unknown.
    ``outputs``: output shapes and dtypes (TensorBoard's "output sizes"); None = take them
    from the graph node of that name. ``device``: None = the graph node's device, else
    ``/device:CPU:0``. TensorBoard overwrites the node's device with this one.
    """

    node_name: str
    start_micros: int
    duration_micros: int
    output_bytes: int = 0
    outputs: list[TensorSpec] | None = None
    device: str | None = None


def _itemsize(dtype: str | None) -> int | None:
    sizes = {"bool": 1, "int8": 1, "uint8": 1, "float16": 2, "bfloat16": 2, "int16": 2}
    sizes.update(uint16=2, float32=4, int32=4, uint32=4, float64=8, int64=8, uint64=8)
    sizes.update(complex64=8, complex128=16)
    return sizes.get(dtype) if dtype else None


def _tensor_description(spec: TensorSpec) -> bytes:
    # TensorDescription: dtype = 1, shape = 2, allocation_description = 4.
    if spec.shape is None:
        shape = field_varint(3, 1)  # unknown_rank
    else:
        shape = b"".join(
            field_bytes(2, field_varint(1, -1 if d is None else d) if d != 0 else b"")
            for d in spec.shape
        )
    out = field_varint(1, data_type(spec.dtype)) if data_type(spec.dtype) else b""
    out += field_bytes(2, shape)
    size = _itemsize(spec.dtype)
    if size is not None and spec.shape is not None and None not in spec.shape:
        n = size
        for d in spec.shape:
            n *= d  # type: ignore[operator]  # None was excluded above
        if n:
            # AllocationDescription: requested_bytes = 1, allocated_bytes = 2
            out += field_bytes(4, field_varint(1, n) + field_varint(2, n))
    return out


def _node_stats_bytes(st: NodeStats, outputs: Sequence[TensorSpec], where: str) -> bytes:
    if not isinstance(st.node_name, str) or not st.node_name:
        raise ValueError(f"{where}: NodeStats.node_name must be a non-empty str")
    for arg in ("start_micros", "duration_micros", "output_bytes"):
        v = getattr(st, arg)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{where}: NodeStats.{arg} of {st.node_name!r} must be an int >= 0")
    out = field_bytes(1, st.node_name.encode("utf-8"))
    if st.start_micros:
        out += field_varint(2, st.start_micros)
    if st.duration_micros:
        out += field_varint(4, st.duration_micros) + field_varint(5, st.duration_micros)
    if st.output_bytes:
        # AllocatorMemoryUsed: allocator_name = 1, total_bytes = 2, peak_bytes = 3
        mem = field_bytes(1, b"cpu") + field_varint(2, st.output_bytes)
        out += field_bytes(6, mem + field_varint(3, st.output_bytes))
    for slot, spec in enumerate(outputs):
        # NodeOutput: slot = 1, tensor_description = 3
        out += field_bytes(
            7, (field_varint(1, slot) if slot else b"") + field_bytes(3, _tensor_description(spec))
        )
    return out


def step_stats_bytes(
    stats: Iterable[NodeStats], graph: Graph | None = None, where: str = "step_stats"
) -> bytes:
    """A serialized ``StepStats``: the records grouped by device, in first-seen order."""
    by_device: dict[str, list[bytes]] = {}
    for st in stats:
        if not isinstance(st, NodeStats):
            raise TypeError(f"{where}: expected NodeStats records, got {type(st).__name__}")
        node = graph._lookup().get(st.node_name) if graph is not None else None
        outputs = st.outputs if st.outputs is not None else (node.outputs if node else [])
        device = st.device or (node.device if node is not None else "") or _DEFAULT_DEVICE
        by_device.setdefault(device, []).append(_node_stats_bytes(st, outputs, where))
    return b"".join(
        # DeviceStepStats: device = 1, node_stats = 2
        field_bytes(
            1, field_bytes(1, dev.encode("utf-8")) + b"".join(field_bytes(2, n) for n in ns)
        )
        for dev, ns in by_device.items()
    )


def _step_stats(stats: Any, graph: Graph | None, where: str) -> bytes:
    if stats is None:
        return b""
    if hasattr(stats, "SerializeToString") and type(stats).__name__ == "StepStats":
        return stats.SerializeToString()  # type: ignore[no-any-return]
    if isinstance(stats, (bytes, bytearray)):
        return bytes(stats)
    return step_stats_bytes(stats, graph, where)


def run_metadata_bytes(
    graph_def: bytes | None,
    step_stats: Iterable[NodeStats] | step_stats_pb2.StepStats | bytes | None = None,
    graph: Graph | None = None,
    *,
    profile: bool = False,
    where: str = "run_metadata",
) -> bytes:
    """A serialized ``RunMetadata``: ``step_stats`` (field 1, when ``profile``) and one
    ``function_graphs`` entry (field 4) whose ``pre_optimization_graph`` is ``graph_def``."""
    out = b""
    if profile:
        # An empty StepStats is still written: it marks the tag as having a profile.
        out += field_bytes(1, _step_stats(step_stats, graph, where))
    if graph_def is not None:
        out += field_bytes(4, field_bytes(2, graph_def))
    return out


def write_run_metadata(
    name: str,
    stats: Iterable[NodeStats] | step_stats_pb2.StepStats | bytes,
    step: Step | None = None,
    graph: Graph | None = None,
) -> bool:
    """Write a profile of the run-level graph as ``Event.tagged_run_metadata``.

    TensorBoard lists ``name`` under "Session runs" and joins ``stats`` to the run-level
    graph (:func:`write_graph`) by node name. ``graph`` (optional) supplies output shapes and
    devices missing from :class:`NodeStats`. The tag is used verbatim (no name scope), as
    TF1's ``add_run_metadata`` does, and must differ from other tags of the run.
    """
    from summarylib.ops._emit import emit_event_field
    from summarylib.ops._resolve import Caller, resolve

    sink = resolve(name, step, Caller("write_run_metadata"), scoped=False)
    if sink is None:
        return False
    rm = field_bytes(1, _step_stats(stats, graph, "write_run_metadata"))
    # TaggedRunMetadata: tag = 1, run_metadata = 2 (bytes); Event field 8.
    tagged = field_bytes(1, sink.tag.encode("utf-8")) + field_bytes(2, rm)
    emit_event_field(sink, field_bytes(8, tagged))
    return True
