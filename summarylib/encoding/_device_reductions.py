"""Reductions run on the device, so that only their small results cross to the host.

:func:`histogram_table` buckets a device array where it lives, with the arithmetic of
:mod:`summarylib.encoding._bucketing` (float64 throughout), and starts the copy of the
table ``[lo, hi, n, counts...]`` (``k + 3`` float64 values) to the host;
:func:`~summarylib.encoding._bucketing.buckets_from_table` then makes the same edges and
counts as the host path. Every step is an elementwise kernel, a reduction or a
scatter-add: nothing here waits for the device (no ``item()``, no data-dependent
shape, no ``bincount``, which reads the maximum back on CUDA).

JAX arrays are bucketed on the device without any float arithmetic there (XLA's CPU
backend flushes subnormal numbers to zero and divides through a reciprocal, and without
``jax_enable_x64`` it has no float64; float arithmetic on the device would not give the
host's counts). Instead, :class:`JaxHistogram`:

1. at the call, dispatches one kernel that maps each value to an integer *key* that
   orders like the value (the float's bits, negative ones flipped; an integer is its own
   key) and reduces them to ``[min key, max key, finite count, 0]``: integer
   comparisons only, so subnormals are compared exactly;
2. on the writer thread, reads those four integers, computes ``lo``, ``hi`` and
   ``width`` as the host does, and for each bucket edge ``j`` finds, by bisection over
   keys, the smallest value ``T_j`` of the data's dtype whose host bucket index
   (``floor((x - lo) / width)`` in float64, numpy's very arithmetic) is at least ``j``.
   The host's index is a monotone function of ``x`` (each rounding step is), so a value's
   bucket is the number of ``T_j`` at or below it;
3. dispatches a second kernel that counts, per bucket, the keys between consecutive
   ``key(T_j)`` (``searchsorted``, integers again), and reads the ``k`` counts.

Only ``k + 4`` integers cross. The kernels run on the values flattened and padded to a
*size class* (:func:`size_class`: 2**14 values, then powers of two), with the
number of real values as an argument, so one compiled pair serves every shape of a class
and dtype (and power of two of ``k``); only the flatten-and-pad kernel is compiled per
shape. Nothing is compiled on the caller's thread (a compile costs tenths of a second):
for a shape whose kernels exist the first kernel is dispatched at the call (its padded
copy is what the second kernel reads: the caller may donate or delete the array right
after), for a new one the writer thread compiles and runs them when it reads the table,
on what :func:`~summarylib.encoding._pending.out_of_reach` kept of the array at the
call (a view of it on the CPU backend, else a private copy on the device).

Where the extremes are zeros, the host takes +0.0 as the maximum if any value is +0.0
and -0.0 as the minimum if any is -0.0 (:mod:`summarylib.encoding._bucketing`): the keys
order -0.0 below +0.0, so the same extremes come out.

:func:`pr_bucket_table` counts a PR curve's predictions per threshold bucket and class
on the device (unweighted counts are integers, exact in any order), so only ``2T + 1``
integers cross.

:func:`images_uint8` converts float pixels to uint8 on the device before their copy
(a quarter of float32's bytes), with the rules of :mod:`summarylib.encoding._pixels`.
"""

from __future__ import annotations

import sys
from typing import Any

from summarylib.encoding._arrays import widen_extended_float
from summarylib.encoding._bucketing import bucket_scaling, histogram_buckets
from summarylib.encoding._pending import (
    JAX_ARRAY_BYTES,
    PendingValue,
    TorchPending,
    buffer_bytes,
    device_kind,
    out_of_reach,
    platform_of,
)

__all__ = [
    "histogram_table", "images_uint8", "pr_bucket_table", "scaled_uint8", "size_class",
    "torch_table",
]

_UNDERFLOW_SCALE = 2.0**1000


def histogram_table(data: Any, k: int) -> PendingValue | None:
    """The pending bucket table of a device array of real numbers, or None (see above).

    ``data`` is a torch tensor (on a CUDA device, or on any other: the same kernels run
    there; tests use the CPU) or a JAX array of a dtype :class:`JaxHistogram` takes.
    Anything else: None. ``k >= 1``.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        return TorchPending(torch_table(data, k))
    if device_kind(data) == "jax" and JaxHistogram.takes(data):
        return JaxHistogram(data, k)
    return None


# dtype name -> the integer dtype of its bits, or None for an integer dtype (its own key)
_JAX_BITS: dict[str, str | None] = {
    "float32": "int32", "float16": "int16", "bfloat16": "int16",
    "bool": None, "int8": None, "uint8": None, "int16": None, "uint16": None, "int32": None,
}
# The kernels work on the values flattened and padded to a size class, with the number of
# real values as an argument: one compiled pair serves every shape of a class.
_MIN_CLASS = 1 << 14
_POW2_CLASS = 1 << 24
_MAX_CLASS = 1 << 30  # int32 positions stay below 2**31
# Compiled kernels are keyed by placement too (a sharding or another device needs its own):
# (shape, dtype, size class, sharding) -> (flatten-and-pad kernel, its output's sharding)
_JAX_FLATTEN: dict[Any, Any] = {}
# (size class, dtype, slots, padded sharding) -> (stats kernel, count kernel)
_JAX_KERNELS: dict[Any, Any] = {}


def size_class(n: int) -> int:
    """The padded length the kernels run on for ``n`` values: at least 2**14, then the
    next power of two up to 2**24 (few classes: few compiles), then a multiple of an
    eighth of the next power of two (the padded copy at most a quarter more than the
    values), and ``n`` itself beyond 2**30."""
    if n <= _MIN_CLASS:
        return _MIN_CLASS
    if n > _MAX_CLASS:
        return n
    if n <= _POW2_CLASS:
        return 1 << (n - 1).bit_length()
    step = 1 << ((n - 1).bit_length() - 3)
    return -(-n // step) * step


class JaxHistogram(PendingValue):
    """A JAX array's bucket table, reduced on its device with integer kernels only.

    See the module docstring. :meth:`result` (on the writer thread) returns the float64
    table ``[lo, hi, n, count_0, ..., count_{k-1}]`` of
    :func:`~summarylib.encoding._bucketing.buckets_from_table`.

    The caller's thread never compiles: where the kernels for the array's shape are
    compiled already, the first kernel is dispatched at the call; otherwise the array
    (immutable) is kept and :meth:`result` compiles what is missing and runs them.
    """

    __slots__ = ("_count", "_data", "_int", "_k", "_n", "_padded", "_size", "_slots", "_stats",
                 "_view")

    @classmethod
    def takes(cls, data: Any) -> bool:
        """True for a dtype the integer kernels handle and fewer than 2**31 values."""
        n = 1
        for d in data.shape:
            n *= int(d)
        return str(data.dtype) in _JAX_BITS and n < (1 << 31)

    def __init__(self, data: Any, k: int) -> None:
        super().__init__((k + 3,), "float64", 8 * (k + 3))
        self._data = data  # immutable; read by the kernels (and by the host fallback)
        self._k = k
        self._int = _JAX_BITS[str(data.dtype)]
        n = 1
        for d in data.shape:
            n *= int(d)
        self._n = n
        self._size = size_class(n)
        # The count kernel takes its thresholds padded to a power of two (at least 32), so
        # one compiled kernel serves every k up to it.
        self._slots = max(32, 1 << (k - 1).bit_length())
        self._padded: Any = None
        self._stats: Any = None
        self._count: Any = None
        self._view: Any = None
        flatten = _JAX_FLATTEN.get((data.shape, data.dtype, self._size, data.sharding))
        if flatten is not None:
            kernels = _JAX_KERNELS.get((self._size, data.dtype, self._slots, flatten[1]))
            if kernels is not None:
                self._count = kernels[1]
                self._dispatch(flatten[0], kernels[0])  # overlaps with the caller's work
        if self._stats is None:  # kernels to compile: keep the value out of the caller's reach
            platform = platform_of(data)
            # (No compiled copy: the next arrays of this shape find the kernels compiled.)
            self._data, self._view = out_of_reach(data, platform, again=False)
        # Held until the writer thread has run the kernels: the input array itself (the
        # caller may drop it), its padded copy and the first kernel's small result.
        itemsize = data.dtype.itemsize
        self.held_bytes += buffer_bytes(n * itemsize) + buffer_bytes(self._size * itemsize)
        self.held_bytes += 3 * JAX_ARRAY_BYTES + buffer_bytes(8 * 4)

    def _dispatch(self, flatten: Any, stats: Any) -> None:
        import numpy as np

        self._padded = flatten(self._data)
        self._stats = stats(self._padded, np.int32(self._n))

    def _functions(self, dtype: Any, size: int, slots: int) -> Any:
        # The kernels' Python functions: flatten(x) -> padded, stats(padded, n),
        # count(padded, thresholds, last, n).
        import jax
        import jax.numpy as jnp

        bits = self._int
        lo_key, hi_key = self._finite_keys(dtype)

        def flatten(x: Any) -> Any:
            flat = jnp.reshape(x, -1)
            return jnp.pad(flat, (0, size - flat.shape[0]))

        def keys(x: Any) -> Any:
            if bits is None:
                return x.astype(jnp.int32)
            b = jax.lax.bitcast_convert_type(x, jnp.dtype(bits)).astype(jnp.int32)
            w = jnp.dtype(bits).itemsize * 8
            # Negative floats (sign bit set) count down: flip their other bits.
            return jnp.where(b < 0, b ^ ((1 << (w - 1)) - 1), b)

        def finite_keys(key: Any, n: Any) -> Any:
            real = jax.lax.iota(jnp.int32, size) < n  # the padding is no value
            if bits is None:  # every integer is finite
                return real
            return real & (key > lo_key) & (key < hi_key)

        def stats(x: Any, n: Any) -> Any:
            key = keys(x)
            finite = finite_keys(key, n)
            big = (1 << 31) - 1  # beyond every finite key
            small = -(1 << 31)
            kmin = jnp.min(jnp.where(finite, key, big))
            kmax = jnp.max(jnp.where(finite, key, small))
            count = jnp.sum(finite, dtype=jnp.int32)
            return jnp.stack([kmin, kmax, count, jnp.zeros((), jnp.int32)])

        def count(x: Any, thresholds: Any, last: Any, n: Any) -> Any:
            # thresholds: k - 1 keys, then padding; last: k - 1 (no bucket beyond it).
            key = keys(x)
            finite = finite_keys(key, n)
            index = jnp.searchsorted(thresholds, key, side="right").astype(jnp.int32)
            index = jnp.where(finite, jnp.minimum(index, last), slots)
            return jnp.bincount(index, length=slots + 1)[:slots].astype(jnp.int32)

        return flatten, stats, count

    def _compiled(self) -> tuple[Any, Any, Any]:
        # The three kernels for this array, compiled now where missing (writer thread).
        # Tracing and compiling import nothing once jax.numpy is loaded (the caller's
        # array implies it is): the writer thread must not import (a fork while it holds
        # an import lock would hang the child); a test checks it in a fresh process.
        import jax

        data, size, slots = self._data, self._size, self._slots
        flatten_fn, stats_fn, count_fn = self._functions(data.dtype, size, slots)
        key = (data.shape, data.dtype, size, data.sharding)
        flatten = _JAX_FLATTEN.get(key)
        if flatten is None:
            compiled = jax.jit(flatten_fn).lower(data).compile()
            flatten = (compiled, compiled.output_shardings)
            if len(_JAX_FLATTEN) >= 256:
                _JAX_FLATTEN.clear()
            _JAX_FLATTEN[key] = flatten
        kernels = _JAX_KERNELS.get((size, data.dtype, slots, flatten[1]))
        if kernels is None:
            padded = jax.ShapeDtypeStruct(  # type: ignore[no-untyped-call]
                (size,), data.dtype, sharding=flatten[1])
            i32 = jax.ShapeDtypeStruct((), "int32")  # type: ignore[no-untyped-call]
            thresholds = jax.ShapeDtypeStruct((slots,), "int32")  # type: ignore[no-untyped-call]
            kernels = (jax.jit(stats_fn).lower(padded, i32).compile(),
                       jax.jit(count_fn).lower(padded, thresholds, i32, i32).compile())
            if len(_JAX_KERNELS) >= 64:
                _JAX_KERNELS.clear()
            _JAX_KERNELS[(size, data.dtype, slots, flatten[1])] = kernels
        return flatten[0], kernels[0], kernels[1]

    def _finite_keys(self, dtype: Any) -> tuple[int, int]:
        # Float keys at or beyond these are not finite (±inf, NaN): bounds excluded.
        if self._int is None:
            return 0, 0  # unused: every integer is finite
        import numpy as np

        inf = np.array([np.inf, -np.inf], dtype=np.float32).astype(np.dtype(dtype))
        b = inf.view(np.dtype(self._int)).astype(np.int64)
        w = np.dtype(self._int).itemsize * 8
        key = np.where(b < 0, b ^ ((1 << (w - 1)) - 1), b)
        return int(key[1]), int(key[0])

    def _values(self, keys: Any) -> Any:
        # Keys (int64) back to values of the data's dtype, as numpy arrays.
        import numpy as np

        dtype = np.dtype(self._data.dtype)
        if self._int is None:
            return keys.astype(dtype)
        w = np.dtype(self._int).itemsize * 8
        b = np.where(keys < 0, keys ^ ((1 << (w - 1)) - 1), keys)
        return b.astype(np.dtype(self._int)).view(dtype)

    def result(self) -> Any:
        import numpy as np

        k = self._k
        if self._stats is None:  # a new shape: compiled here, on the writer thread
            flatten, stats, self._count = self._compiled()
            if self._view is not None and self._data.is_deleted():
                # Deleted since the call: its view still holds the values.
                return self._host_table(widen_extended_float(self._view.reshape(-1)), k)
            self._dispatch(flatten, stats)
        kmin, kmax, n, _ = (int(v) for v in np.asarray(self._stats))
        table = np.zeros(k + 3, dtype=np.float64)
        if n == 0:
            return table
        lo_v, hi_v = widen_extended_float(self._values(np.array([kmin, kmax], np.int64)))
        lo, hi = float(lo_v), float(hi_v)
        scale = bucket_scaling(lo, hi, k)[0] if hi - lo != 0 else 1.0
        if scale != 1.0:
            # A scaled range, which these dtypes cannot reach: the host path on the
            # whole array (its padded copy, which the caller cannot delete). (Signed
            # zeros need nothing: keys order -0.0 below +0.0, the host's rule for
            # extremes that are zeros.)
            flat = np.asarray(self._padded)[: self._n]
            return self._host_table(widen_extended_float(flat), k)
        table[:3] = (lo, hi, n)
        if hi - lo == 0 or k == 1:
            table[3 + k - 1] = n
            return table
        _, lo_s, width = bucket_scaling(lo, hi, k)
        padded = np.full(self._slots, np.iinfo(np.int32).max, dtype=np.int32)
        padded[: k - 1] = self._thresholds(kmin, kmax, lo_s, width, k)
        counts = self._count(self._padded, padded, np.int32(k - 1), np.int32(self._n))
        table[3:] = np.asarray(counts)[:k]
        return table

    @staticmethod
    def _host_table(data: Any, k: int) -> Any:
        # The table from the host's own bucketing of the values (flat, widened).
        import numpy as np

        table = np.zeros(k + 3, dtype=np.float64)
        out = histogram_buckets(data, k)
        table[:3] = (out[0, 0], out[-1, 1], out[:, 2].sum())
        table[3:] = out[:, 2]
        return table

    def _thresholds(self, kmin: int, kmax: int, lo: float, width: float, k: int) -> Any:
        # For j = 1..k-1 the smallest key whose value's host bucket index is >= j:
        # bisection over keys, all j at once. Invariant: index(below) < j <= index(above).
        import numpy as np

        j = np.arange(1, k, dtype=np.int64)
        below = np.full(k - 1, kmin, dtype=np.int64)
        above = np.full(k - 1, kmax, dtype=np.int64)
        while True:
            open_ = above - below > 1
            if not open_.any():
                break
            mid = below + (above - below) // 2
            values = widen_extended_float(self._values(mid))
            # The host's arithmetic exactly (bucketing._counts): float64 x - lo, / width.
            s = np.subtract(values, lo, dtype=np.float64)
            s /= width
            reaches = s.astype(np.intp) >= j
            above = np.where(open_ & reaches, mid, above)
            below = np.where(open_ & ~reaches, mid, below)
        return above.astype(np.int32)


def torch_table(tensor: Any, k: int) -> Any:
    """The float64 table ``[lo, hi, n, count_0, ..., count_{k-1}]`` of a tensor's finite
    values in ``k`` buckets, with the host's arithmetic (float64 throughout), as torch
    operations on the tensor's device: nothing waits for the device, and dynamo traces
    it into a compiled graph as it is."""
    import torch

    f64 = torch.float64
    x = tensor.detach().reshape(-1).to(f64)
    dev = x.device
    # One NaN more (left out like any NaN) keeps the reductions defined for no data.
    x = torch.cat([x, torch.full((1,), float("nan"), dtype=f64, device=dev)])

    def const(v: float) -> Any:
        # A fill kernel: torch.tensor(v, device=...) would copy from pageable host
        # memory, which synchronizes.
        return torch.full((), v, dtype=f64, device=dev)

    finite = torch.isfinite(x)
    lo = torch.where(finite, x, const(float("inf"))).amin()
    hi = torch.where(finite, x, const(float("-inf"))).amax()
    n = finite.sum()
    # Where the extreme is a zero of either sign, the host's rule (bucketing): the
    # maximum is +0.0 if any +0.0 is among the values, the minimum -0.0 if any -0.0 is.
    zero = finite & (x == 0)
    hi = torch.where((hi == 0) & (zero & ~torch.signbit(x)).any(), const(0.0), hi)
    lo = torch.where((lo == 0) & (zero & torch.signbit(x)).any(), const(-0.0), lo)
    range_ = hi - lo
    one = const(1.0)
    scale = torch.where(
        torch.isinf(range_), const(0.5), torch.where(range_ / k == 0, const(_UNDERFLOW_SCALE), one)
    )
    lo_s = lo * scale
    width = (hi * scale - lo_s) / k
    # Separate kernels, so no multiply-add is fused: the host rounds each step.
    s = (x * scale - lo_s) / width
    index = torch.nan_to_num(s, nan=0.0, posinf=float(k), neginf=0.0).clamp(0, k)
    index = index.to(torch.int64).clamp(max=k - 1)
    index = torch.where(range_ == 0, torch.full_like(index, k - 1), index)
    index = torch.where(finite, index, torch.full_like(index, k))  # bin k: left out
    counts = torch.zeros(k + 1, dtype=torch.int64, device=dev)
    counts.scatter_add_(0, index, torch.ones_like(index))
    return torch.cat([torch.stack([lo, hi, n.to(f64)]), counts[:k].to(f64)])


def images_uint8(data: Any) -> Any:
    """Float pixels of a device array as uint8 on the device (saturating), else ``data``.

    ``data``: a JAX array or a torch tensor (on any device; tests use the CPU).

    The rule of :func:`summarylib.encoding._pixels.to_uint8` for floats:
    ``trunc(clip(x * 255.5, 0, 255))`` in the input's float type (bfloat16 and float8
    as float32), NaN as 0. Other dtypes are returned as they are (the host converts
    them after the copy).
    """
    kind = device_kind(data)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        if not data.is_floating_point():
            return data
        x = data.detach()
        if x.element_size() < 2 or x.dtype == torch.bfloat16:
            x = x.float()
        y = torch.nan_to_num(x * 255.5, nan=0.0).clamp(0, 255)
        return y.to(torch.uint8)
    if kind == "jax":
        import jax.numpy as jnp

        if jnp.issubdtype(data.dtype, jnp.floating):
            arr = data
            if arr.dtype.itemsize < 2 or arr.dtype == jnp.bfloat16:
                arr = arr.astype(jnp.float32)
            scaled = jnp.clip(jnp.nan_to_num(arr * 255.5, nan=0.0), 0, 255)
            return scaled.astype(jnp.uint8)
    return data


def scaled_uint8(data: Any) -> Any:
    """torch's pixel rule on the device: uint8 kept, else ``trunc(clip(float32(x) * 255))``.

    NaN becomes 0. ``data``: a JAX array or a torch tensor (any device).
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        if data.dtype == torch.uint8:
            return data
        scaled = torch.nan_to_num(data.detach().float() * 255, nan=0.0).clamp(0, 255)
        return scaled.to(torch.uint8)
    import jax.numpy as jnp

    if data.dtype == jnp.uint8:
        return data
    scaled_j = jnp.clip(jnp.nan_to_num(data.astype(jnp.float32) * 255, nan=0.0), 0, 255)
    return scaled_j.astype(jnp.uint8)


# Jitted JAX PR tables, by (T, label dtype, prediction dtype); jit caches shapes itself.
_JAX_PR: dict[Any, Any] = {}


def pr_bucket_table(labels: Any, predictions: Any, t: int) -> PendingValue | None:
    """The pending ``[2T + 1]`` integer table of an unweighted PR curve, or None.

    ``labels`` and ``predictions``: device arrays of one framework (JAX, or torch on any
    device), one shape, real dtypes. Entry ``2i + c`` counts the predictions in bucket
    ``i`` (``floor(p * (T - 1))`` in ``p``'s float dtype after clipping to [0, 1], NaN
    left out) whose label is ``c``; the last entry counts labels that are neither 0 nor 1
    (the host refuses those). This is :func:`summarylib.ops.pr_curve.pr_data`'s bincount,
    bit for bit, where that bincount applies: float16 predictions only with ``T <= 2049``
    (the product ``p * (T - 1)`` then never reaches 1 from a subnormal, which XLA may
    flush). None where it does not (the values then cross whole).
    """
    kind = device_kind(predictions)
    if kind != device_kind(labels) or kind is None:
        torch = sys.modules.get("torch")
        if torch is None or not (isinstance(labels, torch.Tensor)
                                 and isinstance(predictions, torch.Tensor)):
            return None
        kind = "torch"
    name = str(predictions.dtype).replace("torch.", "")
    if name == "float16" and t > 2049:
        return None
    if kind == "torch":
        if labels.device != predictions.device:
            return None
        return TorchPending(_torch_pr_table(labels, predictions, t))
    if kind == "jax":
        from summarylib.encoding._pending import JaxPending

        key = (t, labels.dtype, predictions.dtype)
        fn = _JAX_PR.get(key)
        if fn is None:
            import jax

            fn = jax.jit(lambda lab, pred: _jax_pr_table(lab, pred, t))
            if len(_JAX_PR) >= 64:
                _JAX_PR.clear()
            _JAX_PR[key] = fn
        return JaxPending(fn(labels, predictions), own=True)
    return None


def _torch_pr_table(labels: Any, predictions: Any, t: int) -> Any:
    import torch

    k = t - 1
    lab = labels.detach().reshape(-1)
    p = predictions.detach().reshape(-1)
    if lab.dtype == torch.bool:
        positive = lab
        bad = torch.zeros((), dtype=torch.int64, device=lab.device)
    else:
        if lab.is_floating_point() and lab.element_size() < 4 and lab.dtype != torch.float16:
            lab = lab.float()
        positive = lab != 0
        bad = ((lab != 0) & (lab != 1)).sum()
    if p.is_floating_point():
        if p.dtype not in (torch.float16, torch.float32, torch.float64):
            p = p.float()  # bfloat16, float8: their exact float32 values, as the host
        nan = torch.isnan(p)
        # p * k in p's dtype, truncated: the floor of a product in [0, k].
        index = (p.clamp(0, 1) * k).nan_to_num(0.0).to(torch.int64)
    else:
        nan = torch.zeros_like(p, dtype=torch.bool)
        index = (p > 0).to(torch.int64) * k  # clip(x, 0, 1) of an integer
    slot = torch.where(nan, torch.full_like(index, 2 * t), 2 * index + positive.to(torch.int64))
    counts = torch.zeros(2 * t + 1, dtype=torch.int64, device=p.device)
    counts.scatter_add_(0, slot, torch.ones_like(slot))
    return torch.cat([counts[: 2 * t], bad.reshape(1)])


def _jax_pr_table(labels: Any, predictions: Any, t: int) -> Any:
    import jax.numpy as jnp

    from summarylib.encoding._arrays import is_extended_float

    k = t - 1
    lab = jnp.reshape(labels, -1)
    p = jnp.reshape(predictions, -1)
    if lab.dtype == jnp.bool_:
        positive = lab
        bad = jnp.zeros((), jnp.int32)
    else:
        if is_extended_float(lab.dtype):
            lab = lab.astype(jnp.float32)
        positive = lab != 0
        bad = jnp.sum((lab != 0) & (lab != 1), dtype=jnp.int32)
    if jnp.issubdtype(p.dtype, jnp.floating):
        if is_extended_float(p.dtype):
            p = p.astype(jnp.float32)
        nan = jnp.isnan(p)
        clipped = jnp.minimum(jnp.maximum(p, 0), 1)
        index = jnp.where(nan, 0, clipped * k).astype(jnp.int32)
    else:
        nan = jnp.zeros(p.shape, jnp.bool_)
        index = (p > 0).astype(jnp.int32) * k
    slot = jnp.where(nan, 2 * t, 2 * index + positive.astype(jnp.int32))
    counts = jnp.bincount(slot, length=2 * t + 1)
    return jnp.concatenate([counts[: 2 * t].astype(jnp.int32), bad[None]])
