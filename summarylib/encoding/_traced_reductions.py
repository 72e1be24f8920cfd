"""Histograms bucketed inside compiled code: only the bucket table leaves it.

An op called inside ``jax.jit`` or ``torch.compile`` is recorded when traced and written
each time the compiled code runs (``summarylib.ops._traced``,
``summarylib.ops._compiled_torch``). For a histogram, the values that leave the compiled
code are not the data but its bucket table, computed by operations traced into the
user's own function (fused with its computation, no extra dispatch), with exactly the
arithmetic of :mod:`summarylib.encoding._bucketing`:

* **JAX** (:func:`jax_bucket_words`): the data is mapped to integer *keys* that order
  like its values (a float's bits, negative ones flipped), reduced to the finite values'
  smallest and largest keys and their number, and each bucket's first value is found by
  bisection over keys with the host's float64 arithmetic (``floor((x - lo) / width)``),
  traced under ``jax.enable_x64`` for the ``k - 1`` candidates only; then every value is
  counted by integer comparisons (``searchsorted``). Float64 values are built from the
  float's bits with integer operations and a multiplication by a power of two, because
  XLA's CPU backend treats subnormal inputs of float arithmetic as zero (a float32
  subnormal converted by the hardware would become 0); every float64 number the
  arithmetic then meets is normal (differences of float32 values are multiples of
  2**-149), so the result is the host's. The table crosses as ``k + 3`` int32 words
  ``[min key, max key, n, counts...]``; :func:`table_from_words` makes the float64
  table of :func:`~summarylib.encoding._bucketing.buckets_from_table` on the host.
  Dtypes: bool, int8/16/32, uint8/16, float16, bfloat16, float32 (others cross whole).
* **torch** (:func:`torch_bucket_table`): torch has float64 on every device, so the
  eager device reduction (:mod:`summarylib.encoding._device_reductions`) is traced into
  the graph as it is; the float64 table crosses.

:class:`BucketTable` is what the histogram op receives at each execution: the table
(a device array still computing, or numpy) and how to make the float64 table of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

__all__ = [
    "BucketTable", "EdgeStats", "edge_key_thresholds", "edge_stats_finish",
    "edge_stats_from_words", "jax_bucket_words", "jax_edge_words", "jax_edges_take",
    "table_from_words", "torch_bucket_table", "torch_edge_stats", "torch_edge_table",
]

# dtype name -> (bits of its integer key, exponent bits, mantissa bits); None: an integer
# dtype, its own key.
_JAX_FORMATS: dict[str, tuple[int, int, int] | None] = {
    "float32": (32, 8, 23), "float16": (16, 5, 10), "bfloat16": (16, 8, 7),
    "bool": None, "int8": None, "uint8": None, "int16": None, "uint16": None, "int32": None,
}


class BucketTable:
    """A histogram's bucket table computed inside compiled code, for one execution.

    ``table`` is the array that left the compiled code (a device array, still computing,
    or a host array); ``finish`` turns its numbers (numpy) into the float64 table
    ``[lo, hi, n, count_0, ..., count_{k-1}]`` of
    :func:`~summarylib.encoding._bucketing.buckets_from_table`.
    """

    __slots__ = ("finish", "table")

    def __init__(self, table: Any, finish: Callable[[Any], Any]) -> None:
        self.table = table
        self.finish = finish


def jax_takes(dtype: Any) -> bool:
    """True for a JAX dtype :func:`jax_bucket_words` buckets."""
    return str(dtype) in _JAX_FORMATS


def jax_bucket_words(x: Any, k: int) -> Any:
    """The int32 words ``[min key, max key, n, count_0, ..., count_{k-1}]`` of ``x``'s
    finite values in ``k >= 1`` buckets, as JAX operations (call it while tracing).

    ``x``: a JAX array or tracer of a dtype :func:`jax_takes` accepts, any shape, fewer
    than 2**31 values. With no finite value, ``n`` is 0 and the rest is meaningless.
    """
    import jax.numpy as jnp

    fmt = _JAX_FORMATS[str(x.dtype)]
    key, finite = _jax_keys(x, fmt)
    kmin = jnp.min(jnp.where(finite, key, jnp.int32((1 << 31) - 1)), initial=(1 << 31) - 1)
    kmax = jnp.max(jnp.where(finite, key, jnp.int32(-(1 << 31))), initial=-(1 << 31))
    n = jnp.sum(finite, dtype=jnp.int32)
    if k == 1:
        counts = n[None]
    else:
        thresholds = _thresholds(kmin, kmax, k, fmt)
        index = jnp.searchsorted(thresholds, key, side="right").astype(jnp.int32)
        index = jnp.where(finite, index, k)  # bin k: left out
        counts = jnp.zeros(k + 1, jnp.int32).at[index].add(1)[:k]
    return jnp.concatenate([jnp.stack([kmin, kmax, n]), counts])


def _jax_keys(x: Any, fmt: tuple[int, int, int] | None) -> tuple[Any, Any]:
    # The int32 keys of x's values (flattened), ordered as the values, and which are finite.
    import jax
    import jax.numpy as jnp

    flat = jnp.reshape(x, -1)
    if fmt is None:
        return flat.astype(jnp.int32), jnp.ones(flat.shape, jnp.bool_)
    bits, ebits, mbits = fmt
    b = jax.lax.bitcast_convert_type(flat, jnp.dtype(f"int{bits}")).astype(jnp.int32)
    key = jnp.where(b < 0, b ^ ((1 << (bits - 1)) - 1), b)
    exponent_all_ones = ((1 << ebits) - 1) << mbits
    return key, (b & exponent_all_ones) != exponent_all_ones


def _thresholds(kmin: Any, kmax: Any, k: int, fmt: tuple[int, int, int] | None) -> Any:
    # For j = 1..k-1 the smallest key whose value's host bucket index is >= j (the
    # bisection of _device_reductions.JaxHistogram, here on the device). Invariant:
    # index(below) < j <= index(above); 32 halvings close any int32 interval.
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        lo = _key_value(kmin, fmt)
        hi = _key_value(kmax, fmt)
        # k behind a barrier: XLA rewrites a division by a constant as a multiplication
        # by its reciprocal, which rounds differently from the host's division (a value
        # on a bucket's edge then fell into the bucket below).
        width = (hi - lo) / jax.lax.optimization_barrier(  # type: ignore[no-untyped-call]
            jnp.float64(k))
        j = jnp.arange(1, k, dtype=jnp.float64)
        below = jnp.full(k - 1, kmin, jnp.int64)
        above = jnp.full(k - 1, kmax, jnp.int64)

        def halve(_: Any, bounds: Any) -> Any:
            below, above = bounds
            mid = below + (above - below) // 2
            s = (_key_value(mid.astype(jnp.int32), fmt) - lo) / width
            high = jnp.floor(s) >= j
            return jnp.where(high, below, mid), jnp.where(high, mid, above)

        below, above = jax.lax.fori_loop(0, 32, halve, (below, above))
        return above.astype(jnp.int32)


def _key_value(key: Any, fmt: tuple[int, int, int] | None) -> Any:
    # The float64 value of an int32 key, exactly, with integer operations and one
    # multiplication by a power of two (no float op sees a subnormal input).
    import jax
    import jax.numpy as jnp

    if fmt is None:
        return key.astype(jnp.float64)
    bits, ebits, mbits = fmt
    b = jnp.where(key < 0, key ^ ((1 << (bits - 1)) - 1), key)
    magnitude = b & ((1 << (bits - 1)) - 1)
    e = magnitude >> mbits
    m = magnitude & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    significand = jnp.where(e == 0, m, m | (1 << mbits))
    power = jnp.where(e == 0, 1, e) - bias - mbits  # >= -149 for float32
    two_to = jax.lax.bitcast_convert_type((power.astype(jnp.int64) + 1023) << 52, jnp.float64)
    value = significand.astype(jnp.float64) * two_to
    return jnp.where(b < 0, -value, value)


def table_from_words(words: Any, dtype_name: str, k: int) -> Any:
    """The float64 table ``[lo, hi, n, counts...]`` of :func:`jax_bucket_words`' words."""
    import numpy as np

    w = np.asarray(words).astype(np.int64)
    table = np.zeros(k + 3, dtype=np.float64)
    n = int(w[2])
    if n == 0:
        return table
    lo, hi = _values_of_keys(w[:2], dtype_name)
    table[:3] = (lo, hi, n)
    table[3:] = w[3 : 3 + k]
    return table


def _values_of_keys(keys: Any, dtype_name: str) -> tuple[float, float]:
    # With integer arithmetic and ldexp: exact whatever the thread's floating-point flags
    # (on a thread with XLA's, which treat subnormal inputs as zero, converting a float32
    # subnormal to float64 with a float instruction gives 0).
    fmt = _JAX_FORMATS[dtype_name]
    if fmt is None:
        return float(keys[0]), float(keys[1])
    bits, ebits, mbits = fmt
    out = []
    for key in (int(keys[0]), int(keys[1])):
        b = key ^ ((1 << (bits - 1)) - 1) if key < 0 else key
        magnitude = b & ((1 << (bits - 1)) - 1)
        e, m = magnitude >> mbits, magnitude & ((1 << mbits) - 1)
        bias = (1 << (ebits - 1)) - 1
        value = math.ldexp(m, 1 - bias - mbits) if e == 0 else math.ldexp(
            m | (1 << mbits), e - bias - mbits)
        out.append(-value if b < 0 else value)
    return out[0], out[1]


def jax_finish(dtype_name: str, k: int) -> Callable[[Any], Any]:
    """``finish`` of a :class:`BucketTable` of :func:`jax_bucket_words`' words."""
    return partial(table_from_words, dtype_name=dtype_name, k=k)


def torch_bucket_table(tensor: Any, k: int) -> Any:
    """The float64 table ``[lo, hi, n, counts...]`` of a tensor, as torch operations
    (traceable by dynamo: no ``item()``, no shape that depends on the data)."""
    from summarylib.encoding._device_reductions import torch_table

    return torch_table(tensor, k)


def torch_finish(numbers: Any) -> Any:
    """``finish`` of a :class:`BucketTable` of :func:`torch_bucket_table`: itself."""
    import numpy as np

    return np.asarray(numbers, dtype=np.float64)


# -- Histograms over fixed edges (torch's add_histogram, bins="tensorflow" or edges) ------

#: JAX dtypes :func:`jax_edge_words` counts: the squares of their values are exact in
#: float64 (int32's are not), and their keys and the keys' bounds fit in int32. Not
#: bfloat16: add_histogram refuses numpy's (ml_dtypes') bfloat16, so a JAX one crosses
#: whole and is refused as eagerly.
_EDGE_DTYPES = ("float32", "float16", "bool", "int8", "uint8", "int16", "uint16")


class EdgeStats(NamedTuple):
    """What torch's ``make_histogram`` needs of its values, besides their order: made
    inside compiled code by :func:`jax_edge_words` or :func:`torch_edge_table`.

    ``nonfinite``: how many values are NaN or infinite (then the rest means nothing);
    ``low``, ``high``: the smallest and largest value (a zero extreme: -0.0 for the
    smallest if a -0.0 is among the values, +0.0 for the largest if a +0.0 is); ``num``:
    the number of values; ``total``: their float64 sum in numpy's order (bit for bit
    ``values.sum()``); ``squares``: the float64 sum of their squares in the same order;
    ``counts``: int64 counts of the buckets ``[edges[j], edges[j + 1])``, the last one
    closed (values outside the edges are not counted).
    """

    nonfinite: int
    low: float
    high: float
    num: float
    total: float
    squares: float
    counts: Any


def jax_edges_take(dtype: Any) -> bool:
    """True for a JAX dtype :func:`jax_edge_words` counts."""
    return str(dtype) in _EDGE_DTYPES


def edge_key_thresholds(edges: Any, dtype_name: str) -> Any:
    """For a JAX dtype's int32 keys (:func:`jax_bucket_words`' order), the smallest key
    whose value is >= each edge but the last, and > the last (one past the largest
    finite key where none is): a value's bucket is the number of thresholds <= its key,
    minus one. Exact (integer bisection, values made with ``ldexp``), on the host."""
    import numpy as np

    e = np.asarray(edges, dtype=np.float64)
    fmt = _JAX_FORMATS[dtype_name]
    if fmt is None:
        info = (0, 1) if dtype_name == "bool" else (int(np.iinfo(dtype_name).min),
                                                   int(np.iinfo(dtype_name).max))
        first, last = info
    else:
        _, ebits, mbits = fmt
        last = (((1 << ebits) - 1) << mbits) - 1  # the largest finite value's key
        first = -last - 1
    lo = np.full(e.shape, first, np.int64)
    hi = np.full(e.shape, last + 1, np.int64)  # last + 1: no finite key qualifies
    closed = np.zeros(e.shape, bool)
    closed[-1] = True
    while (lo < hi).any():
        mid = (lo + hi) // 2
        value = _key_values(mid, fmt)
        ok = np.where(closed, value > e, value >= e)
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1)
    return hi.astype(np.int32)


def _key_values(keys: Any, fmt: tuple[int, int, int] | None) -> Any:
    # The float64 values of int64 keys, exactly (numpy, integer operations and ldexp).
    import numpy as np

    if fmt is None:
        return keys.astype(np.float64)
    bits, ebits, mbits = fmt
    b = np.where(keys < 0, keys ^ ((1 << (bits - 1)) - 1), keys)
    magnitude = b & ((1 << (bits - 1)) - 1)
    e = magnitude >> mbits
    m = magnitude & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    significand = np.where(e == 0, m, m | (1 << mbits)).astype(np.float64)
    value = np.ldexp(significand, (np.where(e == 0, 1, e) - bias - mbits).astype(np.int32))
    return np.where(b < 0, -value, value)


def jax_edge_words(x: Any, thresholds: Any) -> Any:
    """The int32 words ``[nonfinite, min key, max key, sum (2 words), sum of squares
    (2 words), counts...]`` of ``x``'s values over fixed edges, as JAX operations (call
    it while tracing); ``thresholds``: :func:`edge_key_thresholds` of the edges for
    ``x``'s dtype (one count per pair of neighbouring edges).

    ``x``: a JAX array or tracer of a dtype :func:`jax_edges_take` accepts, at least one
    and fewer than 2**31 values. :func:`edge_stats_from_words` reads the words.
    """
    import jax
    import jax.numpy as jnp

    from summarylib.encoding._pairwise import jax_pairwise_sum

    fmt = _JAX_FORMATS[str(x.dtype)]
    key, finite = _jax_keys(x, fmt)
    nonfinite = jnp.sum(~finite, dtype=jnp.int32)
    kmin = jnp.min(jnp.where(finite, key, jnp.int32((1 << 31) - 1)))
    kmax = jnp.max(jnp.where(finite, key, jnp.int32(-(1 << 31))))
    m = len(thresholds)
    index = jnp.searchsorted(jnp.asarray(thresholds), key, side="right").astype(jnp.int32)
    index = jnp.where(finite, index, 0)  # slots 0 (below) and m (above) are left out
    counts = jnp.zeros(m + 1, jnp.int32).at[index].add(1)[1:m]
    with jax.enable_x64(True):
        values = _key_value(key, fmt)  # exact, and normal: float arithmetic is the host's
        sums = jax_pairwise_sum(jnp.stack([values, values * values], axis=-1))
        words = jax.lax.bitcast_convert_type(sums, jnp.int32).reshape(-1)
    return jnp.concatenate([jnp.stack([nonfinite, kmin, kmax]), words, counts])


def edge_stats_from_words(words: Any, dtype_name: str, num: int) -> EdgeStats:
    """:class:`EdgeStats` of :func:`jax_edge_words`' words (``num``: the values' count)."""
    import numpy as np

    w = np.asarray(words).astype(np.int32)
    nonfinite = int(w[0])
    low, high = _values_of_keys(w[1:3].astype(np.int64), dtype_name) if not nonfinite else (
        0.0, 0.0)
    total, squares = (float(v) for v in w[3:7].copy().view(np.float64))
    return EdgeStats(nonfinite, low, high, float(num), total, squares,
                     w[7:].astype(np.int64))


def edge_stats_finish(dtype_name: str, num: int) -> Callable[[Any], Any]:
    """``finish`` of a :class:`BucketTable` of :func:`jax_edge_words`' words."""
    return partial(edge_stats_from_words, dtype_name=dtype_name, num=num)


def torch_edge_table(tensor: Any, edges: tuple[float, ...], plan: Any) -> Any:
    """The float64 table ``[nonfinite, low, high, num, sum, sum of squares, counts...]``
    of a real tensor (at least one value, a size known when traced) over ``edges``, as
    torch operations (traceable by dynamo); ``plan``: the
    :func:`~summarylib.encoding._pairwise.pairwise_plan` of its size, made outside the
    trace. :func:`torch_edge_stats` reads it."""
    import torch

    from summarylib.encoding._pairwise import torch_pairwise_sum

    f64 = torch.float64
    v = tensor.reshape(-1).to(f64)
    finite = torch.isfinite(v)
    inf = torch.tensor(math.inf, dtype=f64, device=v.device)
    low = torch.where(finite, v, inf).amin()
    high = torch.where(finite, v, -inf).amax()
    zero = v == 0
    negative = torch.signbit(v)
    zeros = torch.zeros((), dtype=f64, device=v.device)
    low = torch.where(low == 0, torch.where((zero & negative).any(), -zeros, zeros), low)
    high = torch.where(high == 0, torch.where((zero & ~negative).any(), zeros, -zeros), high)
    e = torch.tensor(edges, dtype=f64, device=v.device)
    m = len(edges)
    index = torch.searchsorted(e, v, right=True)
    index = torch.where(v == e[-1], m - 1, index)  # the last bucket is closed
    index = torch.where(finite & (index < m), index, 0)
    counts = torch.zeros(m, dtype=f64, device=v.device).index_add(
        0, index, torch.ones_like(v))[1:]
    head = torch.stack([(~finite).sum().to(f64), low, high,
                        torch.tensor(float(v.shape[0]), dtype=f64, device=v.device),
                        torch_pairwise_sum(v, plan), torch_pairwise_sum(v * v, plan)])
    return torch.cat([head, counts])


def torch_edge_stats(numbers: Any) -> EdgeStats:
    """:class:`EdgeStats` of :func:`torch_edge_table`'s table."""
    import numpy as np

    t = np.asarray(numbers, dtype=np.float64)
    return EdgeStats(int(t[0]), float(t[1]), float(t[2]), float(t[3]), float(t[4]),
                     float(t[5]), t[6:].astype(np.int64))
