"""Parse records into ``Event`` messages: one file, one run directory, or a logdir of runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from summarylib.errors import DataLossError
from summarylib.reader.records import RecordReader
from summarylib.reader.runs import event_files, list_runs

if TYPE_CHECKING:
    from summarylib.proto import event_pb2, summary_pb2

__all__ = ["iter_events", "iter_run_events", "iter_summary_values"]


def iter_events(path: str | os.PathLike[str]) -> Iterator[event_pb2.Event]:
    """Yield the Events of an event file, or of one run directory.

    For one file, the iterator resumes as the file grows, as TensorFlow's
    ``summary_iterator`` and TensorBoard's loader do: once exhausted, ``next()``
    yields the events appended since (a torn last record is held back until
    it is whole; see :class:`~summarylib.reader.RecordReader`).

    A directory is read as a single run, once: the event files directly in
    it, in name (= creation) order. Runs in its subdirectories are not read;
    use :func:`iter_run_events` for a logdir that holds several runs.

    Raises:
      DataLossError: a corrupt record, or one that is not an ``Event``.
    """
    name = os.fspath(path)
    if not os.path.isdir(name):
        return _FileEvents(name)
    return (event for file in event_files(name) for event in _FileEvents(file))


def iter_run_events(logdir: str | os.PathLike[str]) -> Iterator[tuple[str, event_pb2.Event]]:
    """Yield ``(run, event)`` for every event of every run under ``logdir``.

    Runs are what TensorBoard shows (see :func:`~summarylib.reader.list_runs`):
    ``"."`` for ``logdir`` itself, then its subdirectories by name. Within a
    run, files are read in name (= creation) order.

    Raises:
      NotADirectoryError: ``logdir`` is not a directory.
      DataLossError: a corrupt record, or one that is not an ``Event``.
    """
    for run, files in list_runs(logdir).items():
        for file in files:
            for event in _FileEvents(file):
                yield run, event


def iter_summary_values(
    path: str | os.PathLike[str],
) -> Iterator[tuple[event_pb2.Event, summary_pb2.Summary.Value]]:
    """Yield ``(event, value)`` for every summary value of a file or run directory, in order."""
    for event in iter_events(path):
        if event.HasField("summary"):
            for value in event.summary.value:
                yield event, value


class _FileEvents:
    """The events of one file: an iterator that resumes as the file grows."""

    def __init__(self, file: str) -> None:
        self.records = RecordReader(file)

    def __iter__(self) -> _FileEvents:
        return self

    def __next__(self) -> event_pb2.Event:
        from google.protobuf.message import DecodeError

        from summarylib.proto import event_pb2

        offset, payload = next(self.records)
        event = event_pb2.Event()
        try:
            event.ParseFromString(payload)
        except DecodeError as e:
            reason = f"record is not an Event ({e})"
            raise DataLossError(self.records.path, offset, reason) from None
        return event
