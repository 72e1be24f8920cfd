"""Per-file knowledge of tags: which carry their metadata, and the ops' cached encodings.

TensorBoard reads a tag's plugin metadata from its first value in each file and ignores
repeats (format.md), so ops attach metadata to the first value of a tag in a file only.
Which tags have had theirs written is a fact about one file: the writer hands out one
:class:`TagLedger` per file and replaces it, never clears it, when a new file starts
(after fork) or when a failed write may have lost a metadata-carrying event. Ops ask the
ledger they were handed; nothing else edits it.

Replacing rather than clearing matters: ops hold no lock while they read the ledger, and
an op that read the old ledger just before the swap only writes its event without
metadata if it races the failure itself.

Ops also cache their per-tag encodings here (the scalar op's event prefix, the layout of
a ``scalars()`` call), because those caches embed the "metadata written" decision and so
must start over with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TagLedger"]


class TagLedger:
    """One file's tags with metadata written, and the ops' per-tag caches.

    ``prefix_of(tag)``, ``simple_prefix_of(tag)`` and ``layout_of(key)`` are the caches'
    lookups (None when absent); they are bound methods of plain dicts, so the hot path
    pays one call.
    """

    __slots__ = ("_layouts", "_prefixes", "_simple_prefixes", "_with_metadata", "layout_of",
                 "prefix_of", "simple_prefix_of")

    def __init__(self) -> None:
        self._with_metadata: set[str] = set()
        self._prefixes: dict[str, bytes] = {}
        self._layouts: dict[Any, Any] = {}
        self._simple_prefixes: dict[str, bytes] = {}
        self.prefix_of = self._prefixes.get
        self.simple_prefix_of = self._simple_prefixes.get
        self.layout_of = self._layouts.get

    def needs_metadata(self, tag: str) -> bool:
        """True until an event of ``tag`` carrying its metadata was accepted in this file."""
        return tag not in self._with_metadata

    def have_metadata(self, tags: frozenset[str]) -> bool:
        """True when every tag of ``tags`` had an event carrying its metadata accepted in
        this file (none of them needs it): one set comparison for a compiled call's
        several tags."""
        return tags <= self._with_metadata

    def metadata_written(self, tag: str) -> None:
        """An event of ``tag`` with its metadata was accepted (or is about to be)."""
        self._with_metadata.add(tag)

    def metadata_lost(self, tag: str) -> None:
        """That event was not written after all: the next event of ``tag`` carries it."""
        self._with_metadata.discard(tag)

    def remember_prefix(self, tag: str, prefix: bytes) -> None:
        """Cache the scalar op's encoded event prefix of ``tag`` (metadata written)."""
        self._prefixes[tag] = prefix
        self._with_metadata.add(tag)

    def remember_simple_prefix(self, tag: str, prefix: bytes) -> None:
        """Cache the event prefix of ``tag``'s ``simple_value`` scalars (torch's form,
        which carries no metadata): kept apart from :meth:`remember_prefix`'s, as one
        writer may log a tag in both forms."""
        self._simple_prefixes[tag] = prefix

    def remember_layout(self, key: Any, layout: Any) -> None:
        """Cache a ``scalars()`` layout under ``key``."""
        self._layouts[key] = layout

    def layout_count(self) -> int:
        """How many ``scalars()`` layouts this file has cached."""
        return len(self._layouts)
