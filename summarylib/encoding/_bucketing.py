"""TensorFlow 2's histogram bucketing, in O(n) time and O(1) extra memory.

:func:`histogram_buckets` computes what ``tf.summary.histogram`` writes
(format.md §5.3; TensorBoard's ``summary_v2._buckets``): a float64 ``[k, 3]``
array of ``[left_edge, right_edge, count]`` rows, with

* ``lo, hi`` = min and max of the data as float64, ``width = (hi - lo) / k``;
* each value in bucket ``min(floor((x - lo) / width), k - 1)``, computed in
  float64, so buckets are half-open ``[l, r)`` except the last, which is
  closed and holds ``hi``;
* ``edges[i] = lo + width * i`` for ``i < k`` and ``edges[k] = hi`` exactly;
* all values equal: every edge is that value, the last bucket holds them all;
* no values: ``k`` rows of zeros.

For finite data whose ``hi - lo`` and ``width`` are normal float64 numbers the
result is bit-identical to TensorFlow's. Where TensorFlow produces garbage,
this module makes documented choices instead:

* **Signed zeros**: where the maximum is zero, it is +0.0 if any value is +0.0;
  where the minimum is zero, -0.0 if any value is -0.0 (numpy's and TensorFlow's
  reductions pick one by position; the device reductions use this same rule).
* **NaN and ±Inf are left out.** TensorFlow turns them into NaN/Inf edges and
  silently loses counts; TensorBoard cannot draw either. The counts then sum
  to the number of finite values; with none, the result is as for no data.
* **``hi - lo`` overflows** (data spanning most of float64's range): the
  arithmetic runs on values halved (exact for normal numbers), so edges and
  counts stay finite and meaningful. TensorFlow gives infinite edges.
* **``width`` underflows to 0** (a range of a few subnormals): the arithmetic
  runs on values scaled by 2**1000 (exact), edges are scaled back.

TensorFlow builds an ``n x k`` one-hot matrix (2.4 GB for 10M values); here
the data is processed in chunks of 64 Ki values (or 2k, if larger) that reuse
two scratch buffers, so extra memory is about 1 MiB whatever ``n`` is (plus a
compacted copy of the finite values, only when NaN/Inf are present).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["bucket_scaling", "buckets_from_table", "histogram_buckets", "signed_zero_extremes"]

# Values per chunk: the float64 and index scratch (1 MiB together) stay in
# cache, and per-chunk Python overhead is negligible (~150 chunks for 10M).
_CHUNK = 1 << 16
_UNDERFLOW_SCALE = 2.0**1000


def histogram_buckets(values: np.ndarray, k: int) -> np.ndarray:
    """Bucket ``values`` as ``tf.summary.histogram`` does (see the module docstring).

    Args:
      values: a rank-1 array of a real dtype (bool, int, uint, float).
      k: the number of buckets, >= 1.

    Returns:
      A new C-contiguous float64 array of shape ``[k, 3]``.
    """
    import numpy as np

    out = np.zeros((k, 3), dtype=np.float64)
    if values.size == 0:
        return out
    lo = float(values.min())
    hi = float(values.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        # NaN propagates through min/max, so this also catches NaN.
        values = values[np.isfinite(values)]
        if values.size == 0:
            return out
        lo = float(values.min())
        hi = float(values.max())
    if hi == 0.0 or lo == 0.0:
        lo, hi = signed_zero_extremes(values, lo, hi)
    range_ = hi - lo
    if range_ == 0.0:
        out[:, 0] = hi
        out[:, 1] = hi
        out[-1, 2] = values.size
        return out
    scale, lo_s, width = bucket_scaling(lo, hi, k)
    out[:, 2] = _counts(values, lo_s, width, k, scale)
    _fill_edges(out, lo, hi, k, scale, lo_s, width)
    return out


def signed_zero_extremes(values: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    # numpy's min and max pick whichever zero comes first in their vector order when both
    # -0.0 and +0.0 are the extreme; the rule here does not depend on the order (the
    # device reductions order values by their bits and find the same): +0.0 is the
    # maximum if any +0.0 is among the values, -0.0 the minimum if any -0.0 is.
    import numpy as np

    if values.dtype.kind != "f":
        return lo, hi
    zero = values == 0
    if hi == 0.0 and math.copysign(1.0, hi) < 0 and (zero & ~np.signbit(values)).any():
        hi = 0.0
    if lo == 0.0 and math.copysign(1.0, lo) > 0 and (zero & np.signbit(values)).any():
        lo = -0.0
    return lo, hi


def buckets_from_table(table: np.ndarray, k: int) -> np.ndarray:
    """The result of :func:`histogram_buckets` from a reduction computed elsewhere.

    ``table`` is float64 ``[lo, hi, n, count_0, ..., count_{k-1}]``: the min and max
    of the finite values, their number, and the count of each bucket computed with
    the arithmetic of this module (``floor((x * scale - lo * scale) / width)`` in
    float64, indices from ``k`` on in the last bucket; see :func:`bucket_scaling`).
    Device reductions produce it; the edges are computed here, as for host data.
    """
    import numpy as np

    out = np.zeros((k, 3), dtype=np.float64)
    n = float(table[2])
    if n == 0:
        return out
    lo = float(table[0])
    hi = float(table[1])
    if hi - lo == 0.0:
        out[:, 0] = hi
        out[:, 1] = hi
        out[-1, 2] = n
        return out
    scale, lo_s, width = bucket_scaling(lo, hi, k)
    out[:, 2] = table[3 : 3 + k]
    _fill_edges(out, lo, hi, k, scale, lo_s, width)
    return out


def bucket_scaling(lo: float, hi: float, k: int) -> tuple[float, float, float]:
    """``(scale, lo * scale, width)`` of data from ``lo`` to ``hi`` (``lo < hi``) in ``k`` buckets.

    Value ``x`` goes to bucket ``min(floor((x * scale - lo * scale) / width), k - 1)``
    (float64 throughout; ``x * 1.0`` is ``x``). ``scale`` is 1 except where the range
    overflows (0.5) or the width underflows (2**1000): see the module docstring.
    """
    range_ = hi - lo
    scale = 1.0
    if math.isinf(range_):
        scale = 0.5
    elif range_ / k == 0.0:
        scale = _UNDERFLOW_SCALE
    lo_s = lo * scale
    return scale, lo_s, (hi * scale - lo_s) / k


def _fill_edges(
    out: np.ndarray, lo: float, hi: float, k: int, scale: float, lo_s: float, width: float
) -> None:
    import numpy as np

    # edges[i] = lo + width * i for i < k; edges[k] is hi itself (width * k
    # may round above the largest float).
    edges = np.empty(k + 1, dtype=np.float64)
    inner = edges[:k]
    np.multiply(np.arange(k, dtype=np.float64), width, out=inner)
    inner += lo_s
    if scale != 1.0:
        inner /= scale
        edges[0] = lo
    edges[k] = hi
    out[:, 0] = edges[:-1]
    out[:, 1] = edges[1:]


def _counts(values: np.ndarray, lo: float, width: float, k: int, scale: float) -> np.ndarray:
    # Bucket index = floor((x - lo) / width) in float64. x >= lo, so the
    # quotient is >= 0 and truncation (the float -> int cast) is the floor.
    # The quotient is at most (hi - lo) / width, about k (a little more when
    # width is subnormal); indices >= k belong to the last, closed bucket.
    import numpy as np

    n = values.size
    # With many buckets, chunks of at least 2k values keep the per-chunk
    # bincount (length >= k) from dominating: O(n + k) in all.
    step = max(_CHUNK, 2 * k)
    if n <= step and scale == 1.0:  # one chunk: fewer calls, same arithmetic
        s = np.subtract(values, lo, dtype=np.float64)
        s /= width
        b = np.bincount(s.astype(np.intp), minlength=k)
        if b.size > k:
            b[k - 1] += b[k:].sum()
            b = b[:k]
        return b
    m = min(n, step)
    scratch = np.empty(m, dtype=np.float64)
    index = np.empty(m, dtype=np.intp)
    counts = np.zeros(k, dtype=np.int64)
    for start in range(0, n, step):
        chunk = values[start : start + step]
        size = chunk.size
        s = scratch[:size]
        i = index[:size]
        if scale == 1.0:
            np.subtract(chunk, lo, out=s, dtype=np.float64)
        else:
            np.multiply(chunk, scale, out=s, dtype=np.float64)
            s -= lo
        s /= width
        np.copyto(i, s, casting="unsafe")
        b = np.bincount(i, minlength=k)
        if b.size > k:
            b[k - 1] += b[k:].sum()
        counts += b[:k]
    return counts
