"""Parse records into ``Event`` messages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from summarylib.errors import DataLossError
from summarylib.reader.records import iter_records
from summarylib.reader.runs import event_files

if TYPE_CHECKING:
    from summarylib.proto import event_pb2, summary_pb2

__all__ = ["iter_events", "iter_summary_values"]


def iter_events(path: str | os.PathLike[str]) -> Iterator[event_pb2.Event]:
    """Yield the Events of an event file, or of every event file directly in a directory.

    Raises:
      DataLossError: a corrupt record, or one that is not an ``Event``.
    """
    from google.protobuf.message import DecodeError

    from summarylib.proto import event_pb2

    name = os.fspath(path)
    files = event_files(name) if os.path.isdir(name) else [name]
    for file in files:
        for offset, payload in iter_records(file):
            event = event_pb2.Event()
            try:
                event.ParseFromString(payload)
            except DecodeError as e:
                raise DataLossError(file, offset, f"record is not an Event ({e})") from None
            yield event


def iter_summary_values(
    path: str | os.PathLike[str],
) -> Iterator[tuple[event_pb2.Event, summary_pb2.Summary.Value]]:
    """Yield ``(event, value)`` for every summary value, in file order."""
    for event in iter_events(path):
        if event.HasField("summary"):
            for value in event.summary.value:
                yield event, value
