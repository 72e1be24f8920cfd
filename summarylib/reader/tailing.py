"""Follow a logdir's scalars as they are written (``summarylib tail``), like ``tail -f``.

Each poll lists the runs again (new runs and files appear), reads only the whole records
added to each file since the last poll (the reader of each file resumes where it stopped),
and prints one line per new scalar point with a
sparkline of the tag's recent values.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TextIO

from summarylib.reader.runs import list_runs

__all__ = ["ScalarPoint", "follow_scalars", "sparkline", "tail"]

_BARS = "▁▂▃▄▅▆▇█"

ScalarPoint = tuple[str, str, int, float]  # run, tag, step, value


def sparkline(values: list[float] | deque[float]) -> str:
    """One bar per value, scaled between the values' min and max (non-finite: a space)."""
    finite = [v for v in values if v == v and abs(v) != float("inf")]
    if not finite:
        return " " * len(values)
    lo, hi = min(finite), max(finite)
    span = hi - lo
    out = []
    for v in values:
        if v != v or abs(v) == float("inf"):
            out.append(" ")
        else:
            out.append(_BARS[int((v - lo) / span * (len(_BARS) - 1)) if span else len(_BARS) // 2])
    return "".join(out)


def follow_scalars(
    logdir: str | os.PathLike[str],
    *,
    interval: float = 1.0,
    from_start: bool = False,
    stop: Callable[[], bool] = lambda: False,
    on_existing: Callable[[list[ScalarPoint]], None] | None = None,
    on_problem: Callable[[str], None] | None = None,
    follow_links: bool = True,
) -> Iterator[list[ScalarPoint]]:
    """Yield, once per poll, the scalar points added since the last poll (maybe none).

    ``logdir`` is a logdir (every run under it) or one event file (run ``"."``).

    With ``from_start`` False, the points the files held at the first poll are not yielded,
    but they are read: a tag's first record carries the metadata that makes its later points
    scalars. They go to ``on_existing`` instead (in batches, before the first yield), e.g.
    to seed a sparkline. Records are read whole, both checksums checked; a torn last record waits
    for its missing bytes. A file that shrank (rewritten) is read again from its start. A
    corrupt record stops the reading of its file; ``on_problem`` gets one line saying so. A
    URL logdir (``s3://``, ...) is polled for new objects, each read once (objects do not
    change). Stops when ``stop()`` returns True. ``follow_links`` as in
    :func:`~summarylib.reader.list_runs`.
    """
    from summarylib.errors import DataLossError
    from summarylib.reader.records import RecordReader
    from summarylib.reader.runs import is_logdir, is_remote

    readers: dict[str, RecordReader] = {}
    done: set[str] = set()  # objects of a URL logdir read whole, and files found corrupt
    read_sizes: dict[str, int] = {}  # bytes read of each object of a URL logdir
    plugin_of: dict[tuple[str, str], str] = {}
    first = True
    root = os.fspath(logdir)
    remote = is_remote(root)

    def skipped(points: list[ScalarPoint]) -> None:
        if on_existing is not None:
            on_existing(points)
        points.clear()

    while not stop():
        points: list[ScalarPoint] = []
        skipping = first and not from_start
        runs = list_runs(root, follow_links=follow_links) if is_logdir(root) else {".": [root]}
        for run, files in runs.items():
            for path in files:
                if path in done:
                    continue
                reader = readers.get(path)
                if reader is None or (not remote and _shrank(path, reader.end)):
                    reader = readers[path] = RecordReader(path)
                    if remote:
                        # A merged object repeats objects this loop may have read.
                        reader.end = _read_already(path, files, read_sizes)
                try:
                    for _, payload in reader:
                        _scalar_points(run, payload, plugin_of, points)
                        if skipping and len(points) >= 4096:
                            skipped(points)  # what was there: bounded, however much
                except DataLossError as e:
                    done.add(path)
                    if on_problem is not None:
                        on_problem(f"{e}; not read further")
                except OSError:
                    continue  # vanished or unreadable since it was listed: try again
                if remote:
                    done.add(path)
                    read_sizes[path] = reader.end
        if skipping:
            skipped(points)
        first = False
        yield points
        time.sleep(interval)


def _read_already(path: str, listed: list[str], read_sizes: dict[str, int]) -> int:
    """Bytes at the start of the merged object ``path`` that were read from the numbered
    objects it replaced (0 for any other object): where to start reading it."""
    from summarylib.writer._remote import object_name, object_parts

    parts = object_parts(path)
    if parts is None or not parts[2]:
        return 0
    base, last, _ = parts
    first = 0  # after the merged object before it, if any
    for other in [*listed, *read_sizes]:
        p = object_parts(other)
        if p is not None and p[0] == base and p[2] and p[1] < last:
            first = max(first, p[1] + 1)
    skip = 0
    for seq in range(first, last + 1):
        size = read_sizes.get(object_name(base, seq))
        if size is None:
            break  # not read (deleted before this loop reached it): the rest is new
        skip += size
    return skip


def _shrank(path: str, end: int) -> bool:
    try:
        return os.path.getsize(path) < end
    except OSError:
        return False


def _scalar_points(
    run: str, payload: bytes, plugin_of: dict[tuple[str, str], str], points: list[ScalarPoint]
) -> None:
    from google.protobuf.message import DecodeError

    from summarylib.proto import event_pb2
    from summarylib.reader.scalars import scalar_value

    try:
        event = event_pb2.Event.FromString(payload)
    except DecodeError:  # whole and checksummed, yet not an Event: nothing to show
        return
    for value in event.summary.value:
        key = (run, value.tag)
        if key not in plugin_of and value.HasField("metadata"):
            plugin_of[key] = value.metadata.plugin_data.plugin_name
        which = value.WhichOneof("value")
        if which == "simple_value":
            points.append((run, value.tag, event.step, float(value.simple_value)))
        elif which == "tensor" and plugin_of.get(key) == "scalars":
            number = scalar_value(value.tensor)
            if number is not None:
                points.append((run, value.tag, event.step, number))


def tail(
    logdir: str | os.PathLike[str],
    out: TextIO,
    *,
    interval: float = 1.0,
    width: int = 20,
    from_start: bool = False,
    stop: Callable[[], bool] = lambda: False,
    follow_links: bool = True,
) -> None:
    """Print ``run  tag  step  value  sparkline`` for each new scalar point until ``stop()``.

    Without ``from_start``, the points already there are not printed, but the sparklines
    of their tags start with them. Problems (a corrupt file) go to standard error.
    """
    history: dict[tuple[str, str], deque[float]] = {}

    def seed(points: list[ScalarPoint]) -> None:
        for run, tag, _, value in points:
            history.setdefault((run, tag), deque(maxlen=width)).append(value)

    def problem(line: str) -> None:
        print(f"summarylib tail: {line}", file=sys.stderr, flush=True)

    for points in follow_scalars(
        logdir,
        interval=interval,
        from_start=from_start,
        stop=stop,
        on_existing=seed,
        on_problem=problem,
        follow_links=follow_links,
    ):
        for run, tag, step, value in points:
            h = history.setdefault((run, tag), deque(maxlen=width))
            h.append(value)
            out.write(f"{run:<16} {tag:<24} {step:>9}  {value:<12.6g} {sparkline(h)}\n")
        if points:
            out.flush()
