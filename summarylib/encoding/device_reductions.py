"""Reductions run on the device, so that only their small results cross to the host.

:func:`histogram_table` buckets a device array where it lives, with the arithmetic of
:mod:`summarylib.encoding.bucketing` (float64 throughout), and starts the copy of the
table ``[lo, hi, n, counts...]`` (``k + 3`` float64 values) to the host;
:func:`~summarylib.encoding.bucketing.buckets_from_table` then makes the same edges and
counts as the host path. Every step is an elementwise kernel, a reduction or a
scatter-add: nothing here waits for the device (no ``item()``, no data-dependent
shape, no ``bincount``, which reads the maximum back on CUDA).

JAX arrays get no device table (None): XLA's CPU backend flushes subnormal numbers to
zero and divides through a reciprocal, so its counts differ from the host's near
float64's extremes (found by the property tests), and without ``jax_enable_x64`` it
has no float64 at all. Their data crosses whole, asynchronously, and is bucketed on the
host, off the caller's thread.

:func:`pr_bucket_table` counts a PR curve's predictions per threshold bucket and class
on the device (unweighted counts are integers, exact in any order), so only ``2T + 1``
integers cross.

:func:`images_uint8` converts float pixels to uint8 on the device before their copy
(a quarter of float32's bytes), with the rules of :mod:`summarylib.encoding.pixels`.
"""

from __future__ import annotations

import sys
from typing import Any

from summarylib.encoding.pending import PendingValue, TorchPending, device_kind

__all__ = ["histogram_table", "images_uint8", "pr_bucket_table", "scaled_uint8"]

_UNDERFLOW_SCALE = 2.0**1000


def histogram_table(data: Any, k: int) -> PendingValue | None:
    """The pending bucket table of a device array of real numbers, or None (see above).

    ``data`` is a torch tensor: on a CUDA device, or on any other (the same kernels run
    there; tests use the CPU). Anything else: None.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        return TorchPending(_torch_table(data, k))
    return None


def _torch_table(tensor: Any, k: int) -> Any:
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

    The rule of :func:`summarylib.encoding.pixels.to_uint8` for floats:
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
        from summarylib.encoding.pending import JaxPending

        key = (t, labels.dtype, predictions.dtype)
        fn = _JAX_PR.get(key)
        if fn is None:
            import jax

            fn = jax.jit(lambda lab, pred: _jax_pr_table(lab, pred, t))
            if len(_JAX_PR) >= 64:
                _JAX_PR.clear()
            _JAX_PR[key] = fn
        return JaxPending(fn(labels, predictions))
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

    from summarylib.encoding.arrays import is_extended_float

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
