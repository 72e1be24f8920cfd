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
from typing import Any

__all__ = ["BucketTable", "jax_bucket_words", "table_from_words", "torch_bucket_table"]

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
    import jax
    import jax.numpy as jnp

    fmt = _JAX_FORMATS[str(x.dtype)]
    flat = jnp.reshape(x, -1)
    if fmt is None:
        key = flat.astype(jnp.int32)
        finite = jnp.ones(key.shape, jnp.bool_)
    else:
        bits, ebits, mbits = fmt
        b = jax.lax.bitcast_convert_type(flat, jnp.dtype(f"int{bits}")).astype(jnp.int32)
        key = jnp.where(b < 0, b ^ ((1 << (bits - 1)) - 1), b)
        exponent_all_ones = ((1 << ebits) - 1) << mbits
        finite = (b & exponent_all_ones) != exponent_all_ones
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


def _thresholds(kmin: Any, kmax: Any, k: int, fmt: tuple[int, int, int] | None) -> Any:
    # For j = 1..k-1 the smallest key whose value's host bucket index is >= j (the
    # bisection of _device_reductions.JaxHistogram, here on the device). Invariant:
    # index(below) < j <= index(above); 32 halvings close any int32 interval.
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        lo = _key_value(kmin, fmt)
        hi = _key_value(kmax, fmt)
        width = (hi - lo) / jnp.float64(k)
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
