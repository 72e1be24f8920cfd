"""Live writers by number, for compiled code that names the writer it writes to.

A ``SummaryWriter.add_*`` call recorded in compiled code (:mod:`summarylib.ops.
_writer_methods`) cannot hold the writer itself: a ``torch.compile`` graph holds only
tensors, ints and strings, and a writer held by compiled code (or by the caches of
compiled code, which outlive it) would never be collected, nor its file closed. Each
``SummaryWriter`` gets a number when it is made; the recorded call holds the number and
looks the writer up when the compiled code runs. The registry holds writers weakly: a
writer dropped by its user is collected as if no compiled code named it, and a lookup of
its number then finds nothing.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["number_writer", "writer_numbered"]

# Numbers are never reused: a number held by old compiled code never finds a newer writer.
_NEXT = itertools.count(1)
_BY_NUMBER: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def number_writer(writer: Any) -> int:
    """A new number for ``writer`` (held weakly), by which compiled code finds it."""
    number = next(_NEXT)
    _BY_NUMBER[number] = writer
    return number


def writer_numbered(number: int) -> Any | None:
    """The writer of ``number``; None once it has been collected."""
    return _BY_NUMBER.get(number)
