"""Argument checks and metadata bytes shared by the image, audio and text ops.

Each plugin's ``SummaryMetadata`` is ``plugin_data`` (field 1: ``plugin_name``
= 1, ``content`` = 2) plus an optional ``summary_description`` (field 3), with
``display_name`` and ``data_class`` unset as TensorFlow 2 writes them
(format.md §5.0). The bytes are built by hand here; tests prove they equal the
protobuf serialization of each module's ``create_summary_metadata``.
"""

from __future__ import annotations

import operator
from typing import Any

from summarylib.encoding.wire import field_bytes

__all__ = ["check_max_outputs", "metadata_bytes", "plugin_data_bytes"]


def plugin_data_bytes(plugin_name: str, content: bytes = b"") -> bytes:
    """The ``SummaryMetadata.plugin_data`` field (1), key and length included."""
    inner = field_bytes(1, plugin_name.encode("ascii"))
    if content:  # proto3: empty bytes are not serialized
        inner += field_bytes(2, content)
    return field_bytes(1, inner)


def metadata_bytes(plugin_data: bytes, description: str | None, where: str) -> bytes:
    """Serialized ``SummaryMetadata``: ``plugin_data`` plus the description, if any."""
    if description is None:
        return plugin_data
    if not isinstance(description, str):
        raise TypeError(
            f"{where}: 'description' must be a str or None, got {type(description).__name__}"
        )
    if not description:
        return plugin_data
    try:
        encoded = description.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: 'description' is not valid Unicode text: {e}") from None
    return plugin_data + field_bytes(3, encoded)


def check_max_outputs(max_outputs: Any, where: str) -> int:
    """``max_outputs`` as a non-negative int (numpy integers accepted, bool refused)."""
    if type(max_outputs) is int and max_outputs >= 0:
        return max_outputs
    if isinstance(max_outputs, bool):
        raise TypeError(f"{where}: 'max_outputs' must be an int, got bool {max_outputs!r}")
    try:
        value = operator.index(max_outputs)
    except TypeError:
        raise TypeError(
            f"{where}: 'max_outputs' must be an int, got {type(max_outputs).__name__} "
            f"{max_outputs!r}"
        ) from None
    if value < 0:
        raise ValueError(f"{where}: 'max_outputs' must be >= 0, got {value}")
    return value
