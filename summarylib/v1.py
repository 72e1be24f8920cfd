"""TensorFlow 1's ``FileWriter`` workflow without TensorFlow.

The workflow of TensorFlow's "Visualizing Learning" guide: build ``Summary`` protobufs
(here with the ``*_pb`` encoders: :func:`summarylib.scalar_pb`, :func:`summarylib.image_pb`,
...), merge them, and hand them to a ``FileWriter`` with a global step::

    from summarylib import v1, scalar_pb, histogram_pb

    writer = v1.FileWriter("logs/train")
    for step in range(100):
        merged = v1.merge([scalar_pb("loss", loss), histogram_pb("w", weights)])
        writer.add_summary(merged, global_step=step)
    writer.close()

Summaries are written verbatim, as TensorFlow 1's writer writes them (the metadata of
every value included). Event files and the flush policy are summarylib's writer's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from summarylib.encoding._events import event_bytes, summary_event
from summarylib.encoding._wire import field_bytes
from summarylib.writer._context import check_step

__all__ = ["FileWriter", "merge"]

_SESSION_LOG_FIELD = 7
_TAGGED_RUN_METADATA_FIELD = 8
_GRAPH_DEF_FIELD = 4


def _serialized(message: Any, where: str, arg: str, expected: str) -> bytes:
    if isinstance(message, (bytes, bytearray, memoryview)):
        data = bytes(message)
    else:
        serialize = getattr(message, "SerializeToString", None)
        if serialize is None:
            raise TypeError(f"{where}: {arg!r} must be a {expected} message or its bytes, got "
                            f"{type(message).__name__}")
        data = serialize()
    return data


def _parses(data: bytes, message_name: str, where: str, arg: str) -> None:
    from google.protobuf.message import DecodeError

    from summarylib.proto import event_pb2, summary_pb2

    cls: Any = {"Summary": summary_pb2.Summary, "Event": event_pb2.Event}[message_name]
    try:
        cls.FromString(data)
    except DecodeError as e:
        raise ValueError(f"{where}: {arg!r} is not a serialized {message_name}: {e}") from None


def merge(summaries: Iterable[Any]) -> Any:
    """One ``Summary`` with the values of ``summaries`` (messages or bytes), in order.

    What ``tf.compat.v1.summary.merge`` gives for evaluated summaries.
    """
    from summarylib.proto import summary_pb2

    if isinstance(summaries, (bytes, str)) or not isinstance(summaries, Iterable):
        raise TypeError(f"merge: 'summaries' must be a list of Summary messages or bytes, got "
                        f"{type(summaries).__name__}")
    parts = []
    for i, s in enumerate(summaries):
        data = _serialized(s, "merge", f"summaries[{i}]", "Summary")
        _parses(data, "Summary", "merge", f"summaries[{i}]")
        parts.append(data)
    # Concatenated serializations of a message are its merge: repeated values append.
    return summary_pb2.Summary.FromString(b"".join(parts))


class FileWriter:
    """Writes ``Summary`` and ``Event`` protobufs to an event file, as TensorFlow 1 does.

    Args:
      logdir: the directory (created if missing).
      graph: a graph to write first (see :meth:`add_graph`), or None.
      max_queue: write when more than this many events are pending (default 10).
      flush_secs: write pending events at most this many seconds after the last write.
      filename_suffix: appended to the file name (default ".v2", as summarylib's writer).

    Raises:
      TypeError, ValueError: a bad argument, named in the message.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        graph: Any = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str | None = None,
    ) -> None:
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not (
            flush_secs >= 0
        ):
            raise ValueError(f"FileWriter: 'flush_secs' must be a number >= 0, got "
                             f"{flush_secs!r}")
        self._options = (logdir, max_queue, int(flush_secs * 1000), filename_suffix)
        self._writer = self._open()
        if graph is not None:
            self.add_graph(graph)

    def _open(self) -> Any:
        from summarylib.creation import create_file_writer

        logdir, max_queue, flush_millis, suffix = self._options
        return create_file_writer(logdir, max_queue=max_queue, flush_millis=flush_millis,
                                  filename_suffix=suffix)

    def get_logdir(self) -> str:
        """The log directory."""
        return str(self._writer.logdir)

    def _append(self, payload: bytes, where: str) -> None:
        from summarylib.errors import WriterClosedError

        if self._writer.closed:
            raise WriterClosedError(f"{where}: the FileWriter for {self.get_logdir()} is closed "
                                    "(reopen() it first)")
        self._writer._append(payload)

    @staticmethod
    def _step(global_step: Any, where: str) -> int:
        return 0 if global_step is None else check_step(global_step, where)

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Write ``summary`` (a ``Summary`` message, ours or TensorBoard's, or its bytes)."""
        import time

        where = "add_summary"
        data = _serialized(summary, where, "summary", "Summary")
        step = self._step(global_step, where)
        _parses(data, "Summary", where, "summary")
        self._append(summary_event(time.time(), step, data), where)

    def add_event(self, event: Any) -> None:
        """Write ``event`` (an ``Event`` message or its bytes) as it is."""
        where = "add_event"
        data = _serialized(event, where, "event", "Event")
        _parses(data, "Event", where, "event")
        self._append(data, where)

    def add_session_log(self, session_log: Any, global_step: int | None = None) -> None:
        """Write a ``SessionLog`` (e.g. ``status=START`` after a restart: TensorBoard then
        drops the run's earlier points at steps >= ``global_step``)."""
        import time

        where = "add_session_log"
        data = _serialized(session_log, where, "session_log", "SessionLog")
        step = self._step(global_step, where)
        self._append(event_bytes(time.time(), step, field_bytes(_SESSION_LOG_FIELD, data)),
                     where)

    def add_run_metadata(self, run_metadata: Any, tag: str,
                         global_step: int | None = None) -> None:
        """Write a ``RunMetadata`` (a profile) under ``tag`` (``Event.tagged_run_metadata``)."""
        import time

        where = "add_run_metadata"
        if not isinstance(tag, str) or not tag:
            raise ValueError(f"{where}: 'tag' must be a non-empty str, got {tag!r}")
        data = _serialized(run_metadata, where, "run_metadata", "RunMetadata")
        step = self._step(global_step, where)
        tagged = field_bytes(1, tag.encode("utf-8")) + field_bytes(2, data)
        self._append(event_bytes(time.time(), step,
                                 field_bytes(_TAGGED_RUN_METADATA_FIELD, tagged)), where)

    def add_graph(self, graph: Any, global_step: int | None = None) -> None:
        """Write the run's op graph: a ``GraphDef`` message or bytes, or a
        :class:`summarylib.graph.Graph`."""
        import time

        from summarylib.graph.writers import graph_def_bytes

        where = "add_graph"
        data = graph_def_bytes(graph, where)
        step = self._step(global_step, where)
        self._append(event_bytes(time.time(), step, field_bytes(_GRAPH_DEF_FIELD, data)),
                     where)

    def flush(self) -> None:
        """Write every pending event to the file."""
        self._writer.flush()

    def close(self) -> None:
        """Write pending events and close the file (a later call does nothing)."""
        self._writer.close()

    def reopen(self) -> None:
        """After :meth:`close`, start a new event file in the same directory (no-op if open)."""
        if self._writer.closed:
            self._writer = self._open()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
