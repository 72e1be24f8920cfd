"""Event file names, unique per writer, thread and process.

``events.out.tfevents.<10-digit secs>.<host>.<pid>.<counter><suffix>``, as
TensorFlow 2 names them. The counter is per process; the pid separates
processes (and a forked child, which opens its own file). Files are opened
with ``O_EXCL``, so even a clash that slips through these parts (a clock
stepping back, pid reuse) cannot make two writers share a file.
"""

from __future__ import annotations

import itertools
import os
import socket
import time

__all__ = ["DEFAULT_SUFFIX", "event_file_name", "normalize_suffix"]

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


def event_file_name(suffix: str, now: float | None = None) -> str:
    """A fresh event file name (the basename only).

    Args:
      suffix: an already normalized suffix (see :func:`normalize_suffix`).
      now: the creation time in seconds; defaults to ``time.time()``.
    """
    secs = int(time.time() if now is None else now)
    host, pid, n = socket.gethostname(), os.getpid(), next(_counter)
    return f"events.out.tfevents.{secs:010d}.{host}.{pid}.{n}{suffix}"
