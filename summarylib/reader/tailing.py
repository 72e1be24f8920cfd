"""Follow a logdir's scalars as they are written (``summarylib tail``), like ``tail -f``.

Each poll lists the runs again (new runs and files appear), reads only the whole records
added to each file since the last poll, and prints one line per new scalar point with a
sparkline of the tag's recent values.
"""

from __future__ import annotations

import os
import struct
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TextIO

from summarylib.reader.runs import list_runs

__all__ = ["ScalarPoint", "follow_scalars", "sparkline", "tail"]

_BARS = "▁▂▃▄▅▆▇█"
_unpack_q = struct.Struct("<Q").unpack_from

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
) -> Iterator[list[ScalarPoint]]:
    """Yield, once per poll, the scalar points added since the last poll (maybe none).

    With ``from_start`` False, what the files held at the first poll is skipped. A file that
    shrank (rewritten) is read again from its start. A URL logdir (``s3://``, ...) is
    polled for new objects, each read once (objects do not change). Stops when ``stop()``
    returns True.
    """
    from summarylib.proto import event_pb2
    from summarylib.reader.runs import is_logdir, is_remote
    from summarylib.reader.scalars import scalar_value

    offsets: dict[str, int] = {}
    done: set[str] = set()  # objects of a URL logdir read whole: they never change
    plugin_of: dict[tuple[str, str], str] = {}
    first = True
    root = os.fspath(logdir)
    fs = None
    if is_remote(root):
        from summarylib.writer.remote import filesystem

        fs = filesystem(root, None)
    while not stop():
        points: list[ScalarPoint] = []
        runs = list_runs(root) if is_logdir(root) else {}
        for run, files in runs.items():
            for path in files:
                if path in done:
                    continue
                start = offsets.get(path, 0)
                try:
                    if fs is not None:
                        data = bytes(fs.cat_file(fs._strip_protocol(path)))[start:]
                        done.add(path)
                    else:
                        size = os.path.getsize(path)
                        if size < start:
                            start = 0
                        with open(path, "rb") as f:
                            f.seek(start)
                            data = f.read(size - start)
                except OSError:
                    continue
                off = 0
                while off + 12 <= len(data):
                    (length,) = _unpack_q(data, off)
                    if off + 16 + length > len(data):
                        break
                    payload = data[off + 12 : off + 12 + length]
                    off += 16 + length
                    if first and not from_start:
                        continue
                    try:
                        event = event_pb2.Event.FromString(payload)
                    except Exception:  # a corrupt record: skip it, as a live view should
                        continue
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
                offsets[path] = start + off
        first = False
        yield points
        time.sleep(interval)


def tail(
    logdir: str | os.PathLike[str],
    out: TextIO,
    *,
    interval: float = 1.0,
    width: int = 20,
    from_start: bool = False,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Print ``run  tag  step  value  sparkline`` for each new scalar point until ``stop()``."""
    history: dict[tuple[str, str], deque[float]] = {}
    for points in follow_scalars(logdir, interval=interval, from_start=from_start, stop=stop):
        for run, tag, step, value in points:
            h = history.setdefault((run, tag), deque(maxlen=width))
            h.append(value)
            out.write(f"{run:<16} {tag:<24} {step:>9}  {value:<12.6g} {sparkline(h)}\n")
        if points:
            out.flush()
