"""Helpers the torch adapters share (torch.export/fx and the torch.jit fallback).

Plain functions over torch objects, importing torch lazily: dtype and device strings,
tensor specs, module paths as scopes, argument names, op arguments as attrs.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from collections.abc import Sequence
from typing import Any

from summarylib.graph.adapters import arg_names, plain_attr, sanitize
from summarylib.graph.ir import DType, TensorSpec

__all__ = [
    "arg_names",
    "device_string",
    "dtype_string",
    "key_segments",
    "module_path",
    "op_attr",
    "scope_path",
    "small_numpy",
    "spec_of",
    "torch_module",
]


def torch_module(name: str) -> Any:
    """Import a torch module as ``Any``: torch's own annotations change between versions and
    this adapter only passes its objects through."""
    mod = sys.modules.get(name)  # called per node: skip importlib when already imported
    return mod if mod is not None else importlib.import_module(name)


_DTYPE_STRINGS: dict[Any, str | None] = {}


def dtype_string(dtype: Any) -> str | None:
    """``torch.float32`` -> ``"float32"``; None for anything that is not a torch dtype."""
    if dtype is None:
        return None
    try:
        return _DTYPE_STRINGS[dtype]  # called for every tensor of the graph: cache
    except (KeyError, TypeError):
        pass
    text = str(dtype)
    name = text[6:] if text.startswith("torch.") else None
    if name is not None:
        _DTYPE_STRINGS[dtype] = name
    return name


def device_string(device: Any) -> str:
    """``torch.device("cuda", 1)`` -> ``"/device:CUDA:1"``; ``cpu`` -> ``"/device:CPU:0"``.

    ``meta`` devices (fake tensors that know no real device) give ``""``.
    """
    if device is None:
        return ""
    try:
        return _DEVICE_STRINGS[device]  # called for every parameter: cache
    except (KeyError, TypeError):
        pass
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    index = getattr(device, "index", None)
    text = "" if kind == "meta" else f"/device:{kind.upper()}:{0 if index is None else index}"
    with contextlib.suppress(TypeError):
        _DEVICE_STRINGS[device] = text
    return text


_DEVICE_STRINGS: dict[Any, str] = {}


def spec_of(value: Any) -> TensorSpec | None:
    """A tensor-like (real, fake, ``TensorMetadata``) or a Python/symbolic scalar as a spec.

    Symbolic sizes become unknown dims (None). Returns None for other objects.
    """
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        dims = tuple(shape)
        if not all(type(d) is int for d in dims):  # symbolic sizes
            dims = tuple(d if type(d) is int else _maybe_int(d) for d in dims)
        return TensorSpec(dims, dtype_string(dtype))
    kind = type(value).__name__
    if isinstance(value, bool) or kind == "SymBool":
        return TensorSpec((), "bool")
    if isinstance(value, int) or kind == "SymInt":
        return TensorSpec((), "int64")
    if isinstance(value, float) or kind == "SymFloat":
        return TensorSpec((), "float32")
    return None


def _maybe_int(d: Any) -> int | None:
    # A SymInt with a concrete hint would be specialised; an unbacked one is unknown.
    node = getattr(d, "node", None)
    if node is not None and hasattr(node, "maybe_as_int"):
        v = node.maybe_as_int()
        return v if isinstance(v, int) else None
    try:
        return int(d)
    except Exception:
        return None


def module_path(path: str) -> str:
    """A module path as written by any tracer, in plain dotted form (``layer1.0.conv1``).

    Non-strict export writes ``layer1.0.conv1``; dynamo-based export
    ``L['self'].layer1[0].conv1``; jit ``__module.layer1.0``.
    """
    path = path.strip()
    for prefix in (r"L\['self'\]", "L__self__", "__module", "self"):
        path = re.sub(rf"^{prefix}(\.|$)", "", path)
    path = re.sub(r"\[['\"]?([^\]'\"]+)['\"]?\]", r".\1", path)
    return path.strip(".")


def scope_path(dotted: str) -> str:
    """A dotted module path as a graph scope (``layer1.0`` -> ``layer1/0``), sanitized."""
    return "/".join(sanitize(p) for p in dotted.split(".") if p)


def key_segments(keys: Sequence[Any]) -> list[str]:
    """pytree key path entries (dict keys, indices, attribute names) as scope segments."""
    out = []
    for k in keys:
        for attr in ("key", "idx", "name"):
            if hasattr(k, attr):
                out.append(sanitize(str(getattr(k, attr))))
                break
        else:
            out.append(sanitize(str(k)))
    return out


def op_attr(value: Any) -> tuple[bool, object]:
    """A torch op argument as an attr (dtypes as ``DType``, devices/layouts as text)."""
    t = type(value)
    if t.__module__ == "torch" and t.__name__ == "dtype":
        name = dtype_string(value)
        return (True, DType(name)) if name else (True, str(value))
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a tensor argument
        small = small_numpy(value)
        return (True, small) if small is not None else (True, f"tensor{list(value.shape)}")
    return plain_attr(value)


def small_numpy(value: Any) -> Any:
    """A real tensor as a numpy array if it is at most 1 KB (else None)."""
    try:
        if value.numel() * value.element_size() > 1024 or type(value).__name__ != "Tensor":
            return None
        return value.detach().cpu().numpy()
    except Exception:  # fake, meta, bfloat16 (no numpy dtype), ...
        return None
