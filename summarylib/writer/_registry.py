"""Live writers by key, for compiled code that names the writer it writes to.

A ``SummaryWriter.add_*`` call recorded in compiled code (:mod:`summarylib.ops.
_writer_methods`) cannot hold the writer itself: a ``torch.compile`` graph holds only
tensors, ints and strings, and a writer held by compiled code (or by the caches of
compiled code, which outlive it) would never be collected, nor its file closed. Each
``SummaryWriter`` gets a key when it is made; the recorded call holds the key and looks
the writer up when the compiled code runs. The registry holds writers weakly: a writer
dropped by its user is collected as if no compiled code named it, and a lookup of its key
then finds nothing.

Keys are strings made from a counter, not ints: dynamo treats an int attribute whose
value differs between two compilations as a dynamic input (a symbolic int, no longer a
constant of the graph), while a string is always a constant, guarded by equality.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["register_writer", "registered_writer"]

# Keys are never reused: a key held by old compiled code never finds a newer writer.
_NEXT = itertools.count(1)
_BY_KEY: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def register_writer(writer: Any) -> str:
    """A new key for ``writer`` (held weakly), by which compiled code finds it."""
    key = f"writer-{next(_NEXT)}"
    _BY_KEY[key] = writer
    return key


def registered_writer(key: str) -> Any | None:
    """The writer of ``key``; None once it has been collected."""
    return _BY_KEY.get(key)
