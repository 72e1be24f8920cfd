"""User data to Python floats and numpy arrays, without importing any framework.

Accepted everywhere: Python numbers and sequences, numpy scalars and arrays,
and framework tensors (torch, JAX, TensorFlow, CuPy...) through the
``__array__`` protocol or ``numpy()``/``item()``/``__float__``. Zero-argument
callables are called first, so expensive values can be computed only when a
summary is actually recorded.

Low-precision floats: ml_dtypes' float types (``bfloat16``, the ``float8_*``,
``float6_*`` and ``float4_*`` variants; what JAX and TensorFlow hand out for
bf16/fp8 arrays) are real numbers to every op: :func:`widen_extended_float`
turns them into float32, which holds each of their values exactly (at most
8 exponent and 7 mantissa bits). Left as they are, numpy sees most of them as
opaque (kind ``V``, refused as not numbers), and arithmetic on them runs in
their own precision: ``float8_e5m2`` claims kind ``f``, and ``1.0 * 200``
in it is 192. torch tensors of dtypes numpy cannot hold (bfloat16, float8)
are converted with ``.float()`` by :func:`as_array`. ml_dtypes' sub-byte
integer types (``int4``, ``uint2``...) are not converted: ops refuse them
as non-real.
"""

from __future__ import annotations

import math
import struct
import sys
from typing import TYPE_CHECKING, Any

from summarylib.errors import ArgumentError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "as_array",
    "evaluate",
    "f32_bytes",
    "is_extended_float",
    "scalar_float",
    "shape_of",
    "widen_extended_float",
]

_pack_f = struct.Struct("<f").pack


def evaluate(data: Any) -> Any:
    """Call ``data`` if it is a zero-argument callable (lazy values), else return it."""
    if callable(data) and not hasattr(data, "__array__") and not hasattr(data, "shape"):
        return data()
    return data


def shape_of(data: Any) -> tuple[int, ...] | None:
    """The shape of an array-like, or None if it has no ``shape`` attribute.

    None also when reading it fails: torch's nested (jagged) tensors raise
    ``RuntimeError`` from ``shape``; the conversion then refuses them clearly.
    """
    try:
        shape = getattr(data, "shape", None)
    except Exception:
        return None
    if shape is None:
        return None
    try:
        return tuple(int(d) for d in shape)
    except Exception:  # TypeError; AttributeError from the jagged sizes of torch.jagged
        return None


def scalar_float(data: Any, where: str, arg: str = "data") -> float:
    """Return a rank-0 real number as a Python float.

    Accepts bool, int, float, numpy scalars and 0-d arrays (ml_dtypes' float
    types included), and 0-d tensors of any framework, read through
    ``__float__``, ``item()`` or ``__array__``.

    Objects with a dtype that is not numpy's (torch tensors) are read through
    ``item()`` first: torch warns on ``float()`` of a tensor that requires
    grad, not on ``item()``. Everything else tries ``float()`` first (for a
    numpy scalar ``item()`` costs ten times as much), then ``item()`` (for
    array types that have ``shape == ()`` and ``item()`` but no
    ``__float__``), then ``__array__``.

    Raises:
      TypeError: not a real number (strings, complex numbers, objects).
      ValueError: not rank 0 (e.g. shape ``(3,)`` or even ``(1,)``).
    """
    data = evaluate(data)
    t = type(data)
    if t is float:
        return data  # type: ignore[no-any-return]
    if t is int or t is bool:
        try:
            return float(data)
        except OverflowError:
            raise ValueError(f"{where}: {arg!r} is too large for a float: {data}") from None
    if isinstance(data, (str, bytes, bytearray)):
        # TensorFlow raises ValueError for string data: the error is both.
        raise ArgumentError(
            f"{where}: {arg!r} must be a real number, got {t.__name__} {data!r}"
        )
    shape = shape_of(data)
    if shape is not None and len(shape) != 0:
        raise ValueError(f"{where}: {arg!r} must be a scalar (rank 0), got shape {shape}")
    item_first = False
    dtype = getattr(data, "dtype", None)
    if dtype is not None:
        kind = getattr(dtype, "kind", None)
        if kind is None:
            item_first = shape is not None  # not a numpy dtype: torch and the like
        elif kind not in "biuf" and not is_extended_float(dtype):
            raise (ArgumentError if kind in "SUO" else TypeError)(
                f"{where}: {arg!r} must be a real number, got an array of dtype {dtype}"
            )
        if getattr(dtype, "is_complex", False):
            raise TypeError(f"{where}: {arg!r} must be a real number, got dtype {dtype}")
    if isinstance(data, complex):
        raise TypeError(f"{where}: {arg!r} must be a real number, got complex {data!r}")
    if item_first:
        value = _via_item(data, t, where, arg)
        if value is not None:
            return value
    try:
        return float(data)
    except (TypeError, ValueError, RuntimeError, NotImplementedError):
        pass  # RuntimeError, NotImplementedError: torch's meta and nested tensors
    if shape is not None and not item_first:
        value = _via_item(data, t, where, arg)
        if value is not None:
            return value
    if hasattr(data, "__array__"):
        arr = widen_extended_float(as_array(data, where, arg))
        if arr.ndim != 0:
            raise ValueError(f"{where}: {arg!r} must be a scalar (rank 0), got shape {arr.shape}")
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{where}: {arg!r} must be a real number, got dtype {arr.dtype}")
        return float(arr)
    if isinstance(data, (list, tuple)):
        raise ValueError(
            f"{where}: {arg!r} must be a scalar (rank 0), got a {t.__name__} of length {len(data)}"
        )
    raise TypeError(f"{where}: {arg!r} must be a real number, got {t.__name__}")


def _via_item(data: Any, t: type, where: str, arg: str) -> float | None:
    # A rank-0 object's item(), as a float; None when it has none or it fails
    # (the caller then tries the other ways).
    item = getattr(data, "item", None)
    if item is None:
        return None
    try:
        value = item()
    except Exception:
        return None
    vt = type(value)
    if vt is float:
        return value  # type: ignore[no-any-return]
    if vt is int or vt is bool:
        return _int_float(value, where, arg)
    if isinstance(value, (str, bytes, bytearray, complex)):
        raise (TypeError if isinstance(value, complex) else ArgumentError)(
            f"{where}: {arg!r} must be a real number, got {t.__name__} whose item() is "
            f"{vt.__name__} {value!r:.60}"
        )
    if vt is t:  # np.longdouble's item() returns itself
        return None
    return scalar_float(value, where, arg)


def _int_float(value: int, where: str, arg: str) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{where}: {arg!r} is too large for a float: {value}") from None


def is_extended_float(dtype: Any) -> bool:
    """True for ml_dtypes' float types (bfloat16, float8_*, float6_*, float4_*).

    Decided without importing ml_dtypes: its scalar types live in the module
    ``ml_dtypes`` and their names start with ``float``/``bfloat``. Plain numpy
    dtypes answer False after one attribute lookup.
    """
    scalar_type = getattr(dtype, "type", None)
    return (
        getattr(scalar_type, "__module__", None) == "ml_dtypes"
        and str(getattr(dtype, "name", "")).startswith(("bfloat", "float"))
    )


def widen_extended_float(arr: np.ndarray) -> np.ndarray:
    """``arr``, or a float32 copy of it when its dtype is one of ml_dtypes' float types.

    float32 holds every value of those types exactly (NaN and ±inf
    included), so ops then treat them as they treat float32 data.
    """
    import numpy as np

    if arr.dtype.kind in "biu" or not is_extended_float(arr.dtype):
        return arr
    # Every such type today is 1 or 2 bytes with at most 8 exponent bits; a
    # wider one, should ml_dtypes add it, gets float64 to stay exact.
    return arr.astype(np.float32 if arr.dtype.itemsize <= 2 else np.float64)


def f32_bytes(value: float) -> bytes:
    """``value`` as 4 little-endian float32 bytes; out-of-range values become ±inf.

    ``struct`` refuses finite values that round to infinity; numpy (and so
    TensorFlow's cast) gives infinity, which is what we store.
    """
    try:
        return _pack_f(value)
    except OverflowError:
        return _pack_f(math.copysign(math.inf, value))


def as_array(data: Any, where: str, arg: str = "data", dtype: Any = None) -> np.ndarray:
    """Convert user data to a numpy array without importing its framework.

    Framework tensors that live on an accelerator or track gradients are
    converted through ``detach().cpu().numpy()`` when plain ``__array__``
    refuses them (torch does, for tensors that require grad). torch tensors
    of a floating dtype numpy cannot hold (bfloat16, float8_*) come back as
    float32 (``detach().cpu().float().numpy()``), which holds their values
    exactly; this is tried only after the plain ways failed. Other dtypes
    keep their own (ml_dtypes' bfloat16 from JAX stays bfloat16; see
    :func:`widen_extended_float`).
    """
    import numpy as np

    data = evaluate(data)
    try:
        return np.asarray(data, dtype=dtype)
    except (TypeError, RuntimeError, ValueError, NotImplementedError) as first:
        _refuse_valueless(data, where, arg)
        converted = _via_framework(data)
        if converted is not None:
            try:
                return np.asarray(converted, dtype=dtype)
            except (TypeError, ValueError) as e:
                raise TypeError(
                    f"{where}: cannot convert {arg!r} ({_describe(data)}) to an array: {e}"
                ) from e
        raise TypeError(
            f"{where}: cannot convert {arg!r} ({_describe(data)}) to an array: {first}"
        ) from first


def _refuse_valueless(data: Any, where: str, arg: str) -> None:
    # torch tensors that hold no values numpy could take: say what they are, not what
    # torch's conversion said (a RuntimeError, or advice to call .cpu() that fails too).
    if getattr(data, "is_meta", False) is True:
        raise TypeError(
            f"{where}: {arg!r} is a tensor on the meta device ({_describe(data)}): it has a "
            "shape but no values; log a tensor that holds data"
        )
    if _in_vmap(data):
        raise TypeError(
            f"{where}: {arg!r} is a tensor of torch.func.vmap ({_describe(data)}): it holds "
            "one slice of a batch being traced; call the op on vmap's results, outside it"
        )
    if getattr(data, "is_nested", False) is True:
        raise TypeError(
            f"{where}: {arg!r} is a nested (jagged) tensor of type {type(data).__name__}: "
            "its components differ in shape; log them one by one, or pad them first "
            "(torch.nested.to_padded_tensor)"
        )


def _in_vmap(data: Any) -> bool:
    # A functorch batched tensor, itself or under other transforms' wrappers (grad
    # inside vmap): it has no storage of its own.
    torch = sys.modules.get("torch")
    functorch = getattr(getattr(torch, "_C", None), "_functorch", None)
    if functorch is None or not isinstance(data, torch.Tensor):  # type: ignore[union-attr]
        return False
    try:
        while functorch.is_functorch_wrapped_tensor(data):
            if functorch.is_batchedtensor(data):
                return True
            data = functorch.get_unwrapped(data)
    except (AttributeError, RuntimeError):  # another torch: no verdict
        return False
    return False


def _describe(data: Any) -> str:
    # "Tensor of dtype torch.complex32 and shape (2, 3)" for error messages.
    parts = []
    dtype = getattr(data, "dtype", None)
    if dtype is not None:
        parts.append(f"dtype {dtype}")
    shape = shape_of(data)
    if shape is not None:
        parts.append(f"shape {shape}")
    return type(data).__name__ + (" of " + " and ".join(parts) if parts else "")


def _via_framework(data: Any) -> Any:
    # torch: tensors that require grad or live on a GPU refuse __array__.
    for chain in (("detach", "cpu", "numpy"), ("cpu", "numpy"), ("numpy",)):
        obj = data
        try:
            for attr in chain:
                obj = getattr(obj, attr)()
        except Exception:
            continue
        return obj
    # torch: bfloat16 and float8 tensors have no numpy dtype at all; float32
    # holds their values exactly. Only floating dtypes: .float() of a
    # complex32 would drop the imaginary part.
    is_floating_point = getattr(data, "is_floating_point", None)
    if callable(is_floating_point):
        try:
            if is_floating_point() is True:
                return data.detach().cpu().float().numpy()
        except Exception:
            pass
    return None
