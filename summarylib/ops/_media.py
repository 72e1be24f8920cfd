"""Argument checks shared by the image, audio and text ops.

The metadata helpers are :mod:`summarylib.encoding._plugins`'; they are named here too
for the ops that take them from this module.
"""

from __future__ import annotations

import operator
from typing import Any

from summarylib.encoding._plugins import metadata_bytes, plugin_data_bytes

__all__ = ["check_max_outputs", "metadata_bytes", "plugin_data_bytes"]


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
