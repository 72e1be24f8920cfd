"""The bucket edges of torch's ``add_histogram``: its ``bins`` and ``max_bins`` checked,
and the fixed edges (TensorFlow 1's default ones, or the caller's) where they are fixed.

Shared by :mod:`summarylib.ops.histogram_proto` (the op) and
:mod:`summarylib.ops._torch_constants` (the edges a torch graph holds as constants).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array
from summarylib.ops.histogram import MAX_BUCKETS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["check_bins", "fixed_edges", "tensorflow_bins"]

_tensorflow_bins: np.ndarray | None = None


def tensorflow_bins() -> np.ndarray:
    """TensorFlow 1's default bucket edges, as torch's ``bins="tensorflow"`` builds them."""
    global _tensorflow_bins
    if _tensorflow_bins is None:
        import numpy as np

        v = 1e-12
        positive = []
        while v < 1e20:  # the same float products as torch's loop, hence the same edges
            positive.append(v)
            v *= 1.1
        _tensorflow_bins = np.array([-x for x in reversed(positive)] + [0.0] + positive)
    return _tensorflow_bins


def check_bins(bins: Any, max_bins: Any, where: str) -> tuple[Any, int | None]:
    """``bins`` as the bucketing takes it (the default edges or a caller's as a float64
    array, a numpy rule's name, an int) and ``max_bins`` as an int or None; raises
    TypeError or ValueError naming the argument."""
    import numpy as np

    if isinstance(bins, str):
        if bins == "tensorflow":
            bins = tensorflow_bins()
        elif bins not in ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"):
            raise ValueError(
                f"{where}: 'bins' must be 'tensorflow', a numpy bin rule, an int or edges, "
                f"got {bins!r}"
            )
    elif isinstance(bins, bool):
        raise TypeError(f"{where}: 'bins' must be a str, an int or a sequence, got bool")
    elif isinstance(bins, int) or hasattr(bins, "__index__"):
        bins = operator.index(bins)
        # Bounded as histogram()'s buckets: the bucketing on the writer thread needs
        # memory in proportion (2**31 bins would exhaust the machine's).
        if bins < 1 or bins > MAX_BUCKETS:
            raise ValueError(f"{where}: 'bins' must be in [1, 2**24], got {bins}")
    else:
        edges = as_array(bins, where, "bins", dtype=np.float64)
        if edges.ndim != 1 or len(edges) < 2 or not (np.diff(edges) > 0).all():
            raise ValueError(f"{where}: 'bins' edges must be a 1-D increasing sequence of >= 2")
        bins = edges
    if max_bins is not None:
        if isinstance(max_bins, bool) or not hasattr(max_bins, "__index__"):
            raise TypeError(f"{where}: 'max_bins' must be an int or None, got {max_bins!r}")
        max_bins = operator.index(max_bins)
        if max_bins < 1:
            raise ValueError(f"{where}: 'max_bins' must be >= 1, got {max_bins}")
    return bins, max_bins


def fixed_edges(bins: Any) -> tuple[float, ...] | None:
    """The edges of ``bins="tensorflow"`` or of explicit edges (a sequence or a numpy
    array), else None (numpy's rules and bin counts; and bad edges, which the method
    refuses, naming the argument, when it runs)."""
    import numpy as np

    if isinstance(bins, str) and bins != "tensorflow":
        return None
    if not isinstance(bins, (str, list, tuple, np.ndarray)):
        return None
    try:
        edges, _ = check_bins(bins, None, "add_histogram")
    except (TypeError, ValueError):
        return None
    return tuple(float(e) for e in edges) if isinstance(edges, np.ndarray) else None
