"""A one-line progress bar on stderr for long CLI commands, shown only on a terminal.

Nothing is printed when stderr is not a terminal (pipes, CI logs) or before the command has
run for ``delay`` seconds, so quick commands and scripts see no change.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A progress bar: ``update(done, total)`` redraws it (at most every ``every`` seconds).

    ``close()`` clears the line if anything was drawn.
    """

    def __init__(
        self, label: str, *, stream: TextIO | None = None, delay: float = 1.0, every: float = 0.1
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.delay = delay
        self.every = every
        self.last = 0.0
        self.shown = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self.last < self.every:
            return
        self.last = now
        frac = done / total if total else 0.0
        bar = "#" * int(frac * 30)
        self.stream.write(f"\r{self.label} [{bar:<30}] {done}/{total}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
