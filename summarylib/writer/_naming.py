"""Event file names, unique per writer, thread and process.

``events.out.tfevents.<10-digit secs>.<host>.<pid>.<counter><suffix>``, as
TensorFlow 2 names them. The counter is per process; the pid separates
processes (and a forked child, which opens its own file). Files are opened
with ``O_EXCL``, so even a clash that slips through these parts (a clock
stepping back, pid reuse) cannot make two writers share a file.

TensorBoard reads the files of a run in name order, and its Python loader
never goes back to a file that sorts before the one it is reading, so the
names one process creates must sort in creation order. The time does that
across seconds; within one second the counter must, for any count. A plain
number does not (``13`` sorts before ``2``), so a counter of two or more
digits is written after a letter that says how many digits follow: ``0`` ...
``9``, ``a10`` ... ``a99``, ``b100`` ... ``b999``, ``c1000``, ... Letters sort
after digits, and a longer number gets a later letter. The first ten names
of a process are TensorFlow's own.
"""

from __future__ import annotations

import itertools
import os
import socket
import time

__all__ = ["DEFAULT_SUFFIX", "counter_text", "event_file_name", "normalize_suffix"]

DEFAULT_SUFFIX = ".v2"

# next() on itertools.count is atomic under the GIL: no lock needed.
_counter = itertools.count()


def normalize_suffix(suffix: str | None) -> str:
    """Return the file name suffix, with a leading "." added if missing."""
    if suffix is None:
        return DEFAULT_SUFFIX
    if not isinstance(suffix, str):
        raise TypeError(
            f"create_file_writer: 'filename_suffix' must be a str, got {type(suffix).__name__}"
        )
    if "/" in suffix or os.sep in suffix or "\x00" in suffix:
        raise ValueError(
            f"create_file_writer: 'filename_suffix' must not contain a path separator, "
            f"got {suffix!r}"
        )
    if suffix and not suffix.startswith("."):
        suffix = "." + suffix
    return suffix


def counter_text(n: int) -> str:
    """``n`` (>= 0) as text that sorts, as a string, in the order of the numbers."""
    digits = str(n)
    if len(digits) == 1:
        return digits
    return chr(ord("a") + len(digits) - 2) + digits


def event_file_name(suffix: str, now: float | None = None) -> str:
    """A fresh event file name (the basename only).

    Names this process creates sort, as strings, in creation order (unless the
    clock steps back).

    Args:
      suffix: an already normalized suffix (see :func:`normalize_suffix`).
      now: the creation time in seconds; defaults to ``time.time()``.
    """
    secs = int(time.time() if now is None else now)
    host, pid, n = socket.gethostname(), os.getpid(), next(_counter)
    return f"events.out.tfevents.{secs:010d}.{host}.{pid}.{counter_text(n)}{suffix}"
