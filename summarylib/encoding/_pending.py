"""Pending device values: an accelerator's array captured at a call, read later.

Frameworks that dispatch asynchronously (JAX, torch on CUDA, CuPy) hand back arrays
whose values may still be computing. Reading one on the caller's thread (``float()``,
``item()``, ``numpy()``) waits for everything queued before it: a device
synchronization per logged value. A :class:`PendingValue` instead starts the transfer
to host memory at the call, in the framework's own order, and is read later on
another thread (the writer's):

* **JAX**: the array itself is kept (JAX arrays are immutable) and
  ``copy_to_host_async()`` starts the transfer, except on the CPU backend where the
  device buffer already is host memory. Reading converts it with numpy. An array
  deleted before it is read (donated to a jitted function, ``delete()``) fails to
  read, and the framework's error says so.
* **torch on CUDA**: a ``non_blocking`` copy into a fresh pinned host tensor, and an
  event recorded on the current stream after it. The copy is ordered on the stream
  before anything the caller queues afterwards, so in-place updates of the tensor
  after the call do not reach the captured value. Reading waits on the event (torch
  releases the GIL while it waits). Tensors on the CPU are not device values here;
  :class:`TorchPending` still accepts them (it then copies at once), so the same
  interface is testable without a GPU.
* **CuPy**: likewise, with ``cupyx.empty_pinned`` and a ``cupy.cuda.Event``.

Frameworks are recognised by the module of an object's type and, for torch, by
``torch.Tensor`` once torch is loaded: nothing here imports a framework that the
caller has not imported already. Anything else is host data (:func:`capture` returns
None) and keeps the ordinary conversion (:mod:`summarylib.encoding._arrays`).

Data contract of :meth:`PendingValue.result`: a numpy array of the captured shape and
the captured dtype, except torch's and JAX's low-precision floats (bfloat16, float8),
which come back as float32 (exact).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import is_extended_float, widen_extended_float

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CUPY_ARRAY_BYTES",
    "JAX_ARRAY_BYTES",
    "TORCH_TENSOR_BYTES",
    "CupyPending",
    "JaxPending",
    "PendingValue",
    "TorchPending",
    "buffer_bytes",
    "capture",
    "capture_stacked",
    "device_kind",
    "host_dtype",
    "is_integer_dtype",
    "is_real_dtype",
    "is_tracer",
    "stand_in",
    "torch_compiling",
]

# type -> "jax" / "torch" / "cupy" / None (host), decided once per type.
_KIND_OF_TYPE: dict[type, str | None] = {}
_MAX_TYPES = 256


def device_kind(data: object) -> str | None:
    """``"jax"``, ``"torch"`` or ``"cupy"`` for an array that lives on a device, else None.

    ``"step"`` for a step already captured from a device (a ``DeviceStep``), which ops
    pass on as it is.

    A torch tensor counts only on a CUDA device (ROCm's too): on the CPU it is host
    data, and on other devices torch offers no event to wait on, so those keep the
    ordinary (synchronous) conversion.
    """
    t = type(data)
    try:
        kind = _KIND_OF_TYPE[t]
    except KeyError:
        kind = _classify(t)
    if kind == "torch":
        return "torch" if getattr(data, "is_cuda", False) is True else None
    return kind


_TRACER_TYPES: dict[type, bool] = {}


def is_tracer(value: object) -> bool:
    """True for a JAX tracer: a value of a computation being traced (``jax.jit``,
    ``lax.scan`` bodies, ``vmap``, ``grad``), which has a shape and dtype but no numbers
    yet. Decided once per type, without importing JAX."""
    t = type(value)
    known = _TRACER_TYPES.get(t)
    if known is None:
        known = False
        if (getattr(t, "__module__", "") or "").startswith("jax"):
            jax = sys.modules.get("jax")
            known = jax is not None and issubclass(t, jax.core.Tracer)
        if len(_TRACER_TYPES) >= _MAX_TYPES:
            _TRACER_TYPES.clear()
        _TRACER_TYPES[t] = known
    return known


def jax_array_of(value: object) -> Any:
    """The JAX array an array-like stands for (``__jax_array__``: a Keras variable on
    the JAX backend, whose value is a tracer inside the trainer's compiled step), or
    None for anything else. Without importing JAX."""
    t = type(value)
    method = getattr(t, "__jax_array__", None)
    # JAX's own arrays and tracers are themselves (a tracer's __jax_array__ is a property).
    if (method is None or not callable(method) or "jax" not in sys.modules
            or (getattr(t, "__module__", "") or "").startswith("jax")):
        return None
    return method(value)


def torch_compiling() -> bool:
    """True while ``torch.compile`` (dynamo) traces the calling code; False without torch."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.compiler.is_compiling())


def _classify(t: type) -> str | None:
    module = getattr(t, "__module__", "") or ""
    kind: str | None = None
    if getattr(t, "is_device_step", False) is True:
        kind = "step"  # a step already captured from a device (ops._device_step)
    elif module.startswith(("jax", "jaxlib")):
        jax = sys.modules.get("jax")
        if jax is not None and issubclass(t, jax.Array) and hasattr(t, "copy_to_host_async"):
            kind = "jax"
    elif module.startswith("cupy"):
        if hasattr(t, "get") and hasattr(t, "data") and hasattr(t, "dtype"):
            kind = "cupy"
    else:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(t, type) and issubclass(t, torch.Tensor):
            kind = "torch"
    if len(_KIND_OF_TYPE) >= _MAX_TYPES:
        _KIND_OF_TYPE.clear()
    _KIND_OF_TYPE[t] = kind
    return kind


def is_real_dtype(dtype: Any) -> bool:
    """True for the dtype of real numbers: bool, integers, floats (low-precision included).

    Works on numpy dtypes (JAX's and CuPy's) and on torch's dtypes without importing
    either framework.
    """
    kind = getattr(dtype, "kind", None)
    if kind is not None:
        return kind in "biuf" or is_extended_float(dtype)
    # torch.dtype: complex and quantized types are not real numbers.
    if getattr(dtype, "is_complex", False):
        return False
    name = str(dtype)
    return name.startswith("torch.") and not name.startswith(("torch.q", "torch.complex"))


def is_integer_dtype(dtype: Any) -> bool:
    """True for integer dtypes (not bool), numpy's or torch's."""
    kind = getattr(dtype, "kind", None)
    if kind is not None:
        return kind in "iu"
    name = str(dtype)
    return name.startswith(("torch.int", "torch.uint", "torch.long", "torch.short"))


def host_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype :meth:`PendingValue.result` gives for a device array of ``dtype``.

    ``dtype``: JAX's or CuPy's (numpy dtypes) or torch's. Low-precision floats
    (bfloat16, float8) give float32, as ``result()`` widens them. Raises TypeError for a
    torch dtype numpy has no counterpart of (quantized types).
    """
    import numpy as np

    if getattr(dtype, "kind", None) is not None:
        d = np.dtype(dtype)
        return np.dtype(np.float32) if is_extended_float(d) else d
    torch = sys.modules["torch"]  # a torch dtype: torch is loaded
    if dtype.is_floating_point and dtype.itemsize < 4 and dtype != torch.float16:
        return np.dtype(np.float32)
    try:
        return torch.empty((), dtype=dtype).numpy().dtype  # type: ignore[no-any-return]
    except (TypeError, RuntimeError):
        raise TypeError(f"a device array of dtype {dtype} has no numpy counterpart") from None


def stand_in(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A read-only numpy array of a device array's ``shape`` and the :func:`host_dtype` of
    its ``dtype``, all zeros, that takes no memory (one element, broadcast): host checks
    of shape and dtype run on it without reading the device array."""
    import numpy as np

    return np.broadcast_to(np.zeros((), host_dtype(dtype)), shape)


# Memory a captured array holds beyond its elements until it is read: the framework's array
# object, its runtime buffer and their bookkeeping, the pending object, and the holes that
# the step's freed temporaries leave around them. Measured as resident memory (after
# malloc_trim) per held value: JAX 0.10's CPU client takes 2.7 KB per scalar array held in
# a list, and 5.4 KB per pending scalar event with a stalled writer (the array, its event's
# objects, the holes); torch 2.13 ~0.6 KB per CPU tensor. So the writer's
# max_buffer_bytes bounds the memory pending device values really take.
JAX_ARRAY_BYTES = 4096
TORCH_TENSOR_BYTES = 640
CUPY_ARRAY_BYTES = 1024
# Device buffers come in allocation units: a small array still takes a whole one.
_MIN_BUFFER_BYTES = 64


class PendingValue:
    """A device array whose transfer to host memory was started; :meth:`result` reads it.

    Attributes:
      shape: the array's shape (known without waiting for its value).
      dtype: the framework's dtype object.
      nbytes: the size of the host copy.
      held_bytes: the memory held until the value is read (the arrays kept, on the device
        and on the host, with their objects), for the writer's buffer bound.
    """

    __slots__ = ("dtype", "held_bytes", "nbytes", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: Any, nbytes: int) -> None:
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes
        self.held_bytes = buffer_bytes(nbytes)

    def result(self) -> np.ndarray:
        """Wait for the value (releasing the GIL while the framework waits) and return it.

        Raises whatever the framework raises when the computation failed or the array
        is gone.
        """
        raise NotImplementedError


def buffer_bytes(nbytes: int) -> int:
    """The memory an array of ``nbytes`` takes: whole allocation units."""
    return max(_MIN_BUFFER_BYTES, -(-nbytes // _MIN_BUFFER_BYTES) * _MIN_BUFFER_BYTES)


def _nbytes(shape: tuple[int, ...], itemsize: int) -> int:
    n = itemsize
    for d in shape:
        n *= d
    return n


class JaxPending(PendingValue):
    """A ``jax.Array`` whose copy to the host was started (see the module docstring)."""

    __slots__ = ("_array",)

    def __init__(self, array: Any, start_copy: bool = True) -> None:
        shape = tuple(array.shape)
        super().__init__(shape, array.dtype, _nbytes(shape, array.dtype.itemsize))
        self._array = array
        self.held_bytes += JAX_ARRAY_BYTES
        if not start_copy:  # read only if needed, on the reading thread
            return
        try:
            platform = array.device.platform
        except Exception:  # sharded over several devices: no single platform
            platform = None
        if platform != "cpu":
            # On the CPU backend the buffer is host memory already; elsewhere the copy
            # runs while the caller goes on, and reading it later finds it done. The
            # array keeps that host copy too.
            array.copy_to_host_async()
            self.held_bytes += buffer_bytes(self.nbytes)

    def result(self) -> np.ndarray:
        import numpy as np

        return widen_extended_float(np.asarray(self._array))


class TorchPending(PendingValue):
    """A torch tensor copied to host memory in its stream's order.

    A CUDA tensor is copied with ``non_blocking=True`` into pinned memory, and an event
    recorded on the current stream marks the copy's end. Any other tensor is copied at
    once (``clone()``): the value is the value at the call either way.
    """

    __slots__ = ("_event", "_host")

    def __init__(self, tensor: Any) -> None:
        import torch  # the caller holds a tensor: torch is loaded already

        src = tensor.detach()
        shape = tuple(int(d) for d in src.shape)
        super().__init__(shape, src.dtype, _nbytes(shape, src.element_size()))
        if src.device.type == "cuda":
            host = torch.empty(src.shape, dtype=src.dtype, pin_memory=True)
            # A copy into pageable memory would be staged and synchronous: pinned only.
            host.copy_(src, non_blocking=True)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record(torch.cuda.current_stream(src.device))
            self._event: Any = event
        else:
            host = src.clone()
            self._event = None
        self._host = host
        self.held_bytes += TORCH_TENSOR_BYTES

    def result(self) -> np.ndarray:
        import numpy as np

        if self._event is not None:
            self._event.synchronize()
        host = self._host
        if host.is_floating_point() and host.dtype.itemsize < 4 and str(host.dtype) != (
            "torch.float16"
        ):
            host = host.float()  # bfloat16 and float8: no numpy dtype; float32 is exact
        return np.asarray(host.numpy())


class CupyPending(PendingValue):
    """A CuPy array copied into pinned host memory on the current stream, with an event."""

    __slots__ = ("_event", "_host")

    def __init__(self, array: Any) -> None:
        import cupy
        import cupyx

        shape = tuple(int(d) for d in array.shape)
        super().__init__(shape, array.dtype, _nbytes(shape, array.dtype.itemsize))
        stream = cupy.cuda.get_current_stream()
        src = cupy.ascontiguousarray(array)  # queued on the stream like the copy
        host = cupyx.empty_pinned(shape, dtype=array.dtype)
        src.get(stream=stream, out=host, blocking=False)
        event = cupy.cuda.Event()
        event.record(stream)
        self._event = event
        self._host = host
        self.held_bytes += CUPY_ARRAY_BYTES

    def result(self) -> np.ndarray:
        self._event.synchronize()
        return self._host  # type: ignore[no-any-return]


def capture(data: Any, start_copy: bool = True) -> PendingValue | None:
    """Start the host copy of a device array; None for host data (read it as usual).

    ``start_copy=False`` keeps a JAX array without starting its copy (a value that may
    never be read: the reader then copies it); other frameworks copy either way.
    """
    kind = device_kind(data)
    if kind is None:
        return None
    if kind == "jax":
        return JaxPending(data, start_copy)
    if kind == "torch":
        if getattr(data, "layout", None) is not sys.modules["torch"].strided:
            return None  # sparse and other layouts: the ordinary conversion
        return TorchPending(data)
    return CupyPending(data)


# Jitted stackers of JAX scalars, by count (jit caches per dtype/shape itself).
_JAX_STACKERS: dict[int, Any] = {}


def capture_stacked(values: Sequence[Any]) -> PendingValue | None:
    """One pending vector of several device scalars of one framework (and one device).

    The values are cast on the device to float64 (float32 for JAX without x64,
    where no value is wider) and stacked, so one transfer brings them all: element
    ``i`` holds ``float(values[i])`` exactly as the host would convert it. None when
    the values do not all share one framework and device: capture them one by one.
    """
    kinds = {device_kind(v) for v in values}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    try:
        if kind == "jax":
            return JaxPending(_jax_stack(values))
        if kind == "torch":
            import torch

            devices = {v.device for v in values}
            if len(devices) != 1:
                return None
            stacked = torch.stack([v.detach().reshape(()).to(torch.float64) for v in values])
            return TorchPending(stacked)
    except Exception:  # e.g. arrays on different devices: one by one instead
        return None
    return None


def _jax_stack(values: Sequence[Any]) -> Any:
    n = len(values)
    stack = _JAX_STACKERS.get(n)
    if stack is None:
        import jax
        import jax.numpy as jnp

        def stack_values(*xs: Any) -> Any:
            dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32  # type: ignore[attr-defined]
            return jnp.stack([jnp.reshape(x, ()).astype(dtype) for x in xs])

        stack = jax.jit(stack_values)
        if len(_JAX_STACKERS) >= 64:
            _JAX_STACKERS.clear()
        _JAX_STACKERS[n] = stack
    return stack(*values)
