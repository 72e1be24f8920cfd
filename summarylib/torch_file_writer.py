"""``SummaryWriter.file_writer``: torch's ``FileWriter`` surface over the writer's own file.

torch's ``SummaryWriter`` keeps a ``FileWriter`` in ``writer.file_writer`` (``None`` once
the writer is closed), and scripts, tests and libraries call it to write protobufs they
built themselves: ``writer.file_writer.add_summary(summary, step)``. :class:`TorchFileWriter`
is that surface. It owns nothing: it writes into the ``SummaryWriter``'s event file, in
order with the ``add_*`` calls, and its ``flush``/``close`` are the writer's.

Messages are TensorBoard's or summarylib's protobufs (``Event``, ``Summary``,
``GraphDef``, ``RunMetadata``) or their serialized bytes; bytes that do not parse as the
message raise ``ValueError`` and write nothing.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from summarylib.encoding._events import event_bytes, summary_event
from summarylib.encoding._wire import field_bytes
from summarylib.writer._context import check_step


class _Writer(Protocol):
    """What this surface needs of a ``SummaryWriter`` (named structurally: the writer's
    module imports this one)."""

    _silent: bool

    def get_logdir(self) -> str | None: ...
    def flush(self, timeout: float | None = None) -> None: ...
    def close(self, timeout: float | None = None) -> None: ...
    def _check_open(self, where: str) -> None: ...
    def _append(self, payload: bytes) -> bool: ...

__all__ = ["TorchFileWriter", "step1_run_metadata_field"]

_GRAPH_DEF_FIELD = 4
_TAGGED_RUN_METADATA_FIELD = 8


def step1_run_metadata_field(run_metadata: bytes) -> bytes:
    """``Event.tagged_run_metadata`` with torch's tag ``"step1"`` and ``run_metadata``."""
    tagged = field_bytes(1, b"step1") + field_bytes(2, run_metadata)
    return field_bytes(_TAGGED_RUN_METADATA_FIELD, tagged)


class TorchFileWriter:
    """torch's ``FileWriter`` methods, writing into one :class:`~summarylib.SummaryWriter`.

    Get it as ``writer.file_writer``; it is valid until the writer closes (then
    ``writer.file_writer`` is None and calls on a kept reference raise
    :class:`~summarylib.WriterClosedError`).
    """

    __slots__ = ("_writer",)

    def __init__(self, writer: _Writer) -> None:
        self._writer = writer

    def get_logdir(self) -> str | None:
        """The log directory of the event file."""
        return self._writer.get_logdir()

    def add_event(self, event: Any, step: Any = None, walltime: float | None = None) -> None:
        """Write ``event`` (an ``Event`` or its bytes) with the wall time ``walltime`` (default
        now) and, when given, the step ``step``, as torch sets them."""
        from summarylib.proto import event_pb2

        where = "file_writer.add_event"
        data = _serialized(event, where, "event", "Event")
        _parses(data, "Event", where, "event")
        message = event_pb2.Event.FromString(data)
        message.wall_time = self._wall_time(walltime, where)
        if step is not None:
            message.step = check_step(int(step), where)
        self._append(message.SerializeToString(), where)

    def add_summary(self, summary: Any, global_step: Any = None,
                    walltime: float | None = None) -> None:
        """Write ``summary`` (a ``Summary`` or its bytes) verbatim as one Event at
        ``global_step`` (default 0)."""
        where = "file_writer.add_summary"
        data = _serialized(summary, where, "summary", "Summary")
        _parses(data, "Summary", where, "summary")
        step = 0 if global_step is None else check_step(int(global_step), where)
        self._append(summary_event(self._wall_time(walltime, where), step, data), where)

    def add_graph(self, graph_profile: Any, walltime: float | None = None) -> None:
        """Write torch's ``(GraphDef, RunMetadata)`` pair: the graph, then the run metadata
        under the tag ``"step1"``. A lone graph (message, bytes or
        :class:`summarylib.graph.Graph`) is written without run metadata."""
        from summarylib.graph.writers import graph_def_bytes

        where = "file_writer.add_graph"
        graph, stats = graph_profile if isinstance(graph_profile, tuple) else (
            graph_profile, None)
        now = self._wall_time(walltime, where)
        payload = event_bytes(now, 0, field_bytes(_GRAPH_DEF_FIELD, graph_def_bytes(graph, where)))
        extra = b""
        if stats is not None:
            run_metadata = _serialized(stats, where, "graph_profile[1]", "RunMetadata")
            extra = event_bytes(now, 0, step1_run_metadata_field(run_metadata))
        self._append(payload, where)
        if extra:
            self._append(extra, where)

    def flush(self) -> None:
        """Write every pending event of the writer (``SummaryWriter.flush``)."""
        self._writer.flush()

    def close(self) -> None:
        """Close the writer (``SummaryWriter.close``); ``writer.file_writer`` is None after."""
        self._writer.close()

    def _append(self, payload: bytes, where: str) -> None:
        writer = self._writer
        writer._check_open(where)
        if writer._silent:
            return  # write_to_disk=False: a writer that records nothing
        writer._append(payload)

    @staticmethod
    def _wall_time(walltime: float | None, where: str) -> float:
        if walltime is None:
            return time.time()
        from summarylib.ops._resolve import check_wall_time

        return check_wall_time(walltime, where)

    def __repr__(self) -> str:
        return f"<TorchFileWriter of {self._writer!r}>"


def _serialized(message: Any, where: str, arg: str, expected: str) -> bytes:
    # A protobuf message (ours or TensorBoard's) or its serialized bytes.
    if isinstance(message, (bytes, bytearray, memoryview)):
        return bytes(message)
    serialize = getattr(message, "SerializeToString", None)
    if serialize is None:
        raise TypeError(f"{where}: {arg!r} must be a {expected} message or its bytes, got "
                        f"{type(message).__name__}")
    data: bytes = serialize()
    return data


def _parses(data: bytes, message_name: str, where: str, arg: str) -> None:
    # Bytes that are not the message would make the event unreadable: refused here.
    from google.protobuf.message import DecodeError

    from summarylib.proto import event_pb2, summary_pb2

    cls: Any = {"Summary": summary_pb2.Summary, "Event": event_pb2.Event}[message_name]
    try:
        cls.FromString(data)
    except DecodeError as e:
        raise ValueError(f"{where}: {arg!r} is not a serialized {message_name}: {e}") from None
