"""Pending device values: an accelerator's array captured at a call, read later.

Frameworks that dispatch asynchronously (JAX, torch on CUDA, CuPy) hand back arrays
whose values may still be computing. Reading one on the caller's thread (``float()``,
``item()``, ``numpy()``) waits for everything queued before it: a device
synchronization per logged value. A :class:`PendingValue` instead starts the transfer
to host memory at the call, in the framework's own order, and is read later on
another thread (the writer's):

* **JAX**: JAX arrays are immutable, but the caller may *donate* one to a jitted
  function (``donate_argnums``: the usual training loop donates its state) or
  ``delete()`` it before the writer thread reads it. So what is kept is out of the
  caller's reach: on the CPU backend, an array already computed is viewed as a numpy
  array at the call (no copy; JAX's CPU client then copies a donated buffer instead of
  taking it, and deleting the array leaves the view's memory alive); anywhere else (an
  accelerator, or an array still computing) a copy is dispatched on the device, in the
  framework's order, so it holds the value even if the original is donated right after
  (:func:`private_copy`). ``copy_to_host_async()`` then starts the transfer, except on
  the CPU backend where the device buffer already is host memory. Arrays the caller
  cannot reach (our own kernels' results, the outputs of compiled code of ours) are kept
  as they are (``own=True``, :func:`own_arrays`).
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

import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Sequence
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
    "keep_jax_value",
    "out_of_reach",
    "own_arrays",
    "platform_of",
    "private_copy",
    "restore_own_arrays",
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
    """A ``jax.Array`` kept out of the caller's reach, its copy to the host started (see
    the module docstring).

    ``own``: the array is ours (a kernel's result, compiled code's output), kept as it is.
    """

    __slots__ = ("_array", "_view")

    def __init__(self, array: Any, start_copy: bool = True, own: bool = False) -> None:
        shape = tuple(array.shape)
        super().__init__(shape, array.dtype, _nbytes(shape, array.dtype.itemsize))
        self.held_bytes += JAX_ARRAY_BYTES
        self._view: Any = None
        platform = platform_of(array)
        if not own:
            array, self._view = out_of_reach(array, platform)
        self._array = array
        if not start_copy or platform == "cpu" or self._view is not None:
            # Read only if needed, on the reading thread; on the CPU backend the buffer
            # is host memory already.
            return
        # The copy runs while the caller goes on, and reading it later finds it done.
        # The array keeps that host copy too.
        array.copy_to_host_async()
        self.held_bytes += buffer_bytes(self.nbytes)

    def result(self) -> np.ndarray:
        import numpy as np

        view = self._view
        return widen_extended_float(np.asarray(self._array) if view is None else view)


# sharding -> the platform of its one device, or None (several devices); asking an array
# for its device costs more than a small step's dispatch.
_PLATFORMS: dict[Any, str | None] = {}


def platform_of(array: Any) -> str | None:
    """The platform (``"cpu"``, ``"gpu"``, ``"tpu"``) of a JAX array on one device, else
    None (sharded over several)."""
    sharding = array.sharding
    try:
        return _PLATFORMS[sharding]
    except KeyError:
        pass
    devices = sharding.device_set
    platform = next(iter(devices)).platform if len(devices) == 1 else None
    if len(_PLATFORMS) >= _MAX_TYPES:
        _PLATFORMS.clear()
    _PLATFORMS[sharding] = platform
    return platform


class _OwnArrays(threading.local):
    # ids of arrays this thread is writing that nobody else holds (compiled code's
    # outputs being replayed): kept as they are, no copy.
    ids: frozenset[int] = frozenset()


_OWN = _OwnArrays()


def own_arrays(arrays: Iterable[object]) -> frozenset[int]:
    """Mark ``arrays`` as the caller's own until the returned token is given back to
    :func:`restore_own_arrays`: outputs of compiled code of ours, which no user code
    holds (so none can donate them), kept without a protective copy while this thread
    writes them. The arrays must stay referenced meanwhile (they are known by ``id``)."""
    previous = _OWN.ids
    _OWN.ids = frozenset(map(id, arrays))
    return previous


def restore_own_arrays(token: frozenset[int]) -> None:
    """End an :func:`own_arrays` marking, restoring the one before it."""
    _OWN.ids = token


def out_of_reach(array: Any, platform: str | None, again: bool = True) -> tuple[Any, Any]:
    """What to keep of a JAX array so that the caller can no longer destroy its value:
    ``(array, view)``.

    * an array marked by :func:`own_arrays`: ``(array, None)``, kept as it is;
    * on the CPU backend (``platform == "cpu"``: ``array.device.platform``), an array
      already computed: ``(array, a numpy view of it)``;
    * else ``(a private copy, None)`` (:func:`private_copy`, with ``again``).

    An array that fails (deleted already, or its computation failed) is kept as it is:
    reading it reports the failure, on the reading thread.
    """
    if id(array) in _OWN.ids:
        return array, None
    if platform == "cpu":
        try:
            if array.is_ready():
                import numpy as np

                # A view (no copy, no wait): the buffer gains an outside reference, which
                # keeps its memory alive through delete(), and makes JAX's CPU client
                # copy the buffer when it is donated rather than take it.
                return array, np.asarray(array)
        except Exception:  # a failed computation or a deleted array: read (and report) later
            return array, None
    try:
        return private_copy(array, again), None
    except Exception:  # deleted already: the read reports it
        return array, None


def keep_jax_value(value: Any) -> Any:
    """``value`` as it is unless it is a JAX array; a JAX array as a numpy view of it or a
    private copy whose transfer to the host started (:func:`out_of_reach`): something to
    read later, on another thread, whatever the caller does with the array meanwhile."""
    if device_kind(value) != "jax":
        return value
    platform = platform_of(value)
    array, view = out_of_reach(value, platform)
    if view is not None:
        return view
    if platform != "cpu":
        with contextlib.suppress(Exception):  # a failed array: reading it reports that
            array.copy_to_host_async()
    return array


# The copy run as compiled code, and the kinds of array (shape, dtype, weak type,
# sharding) it is compiled for: only those are copied with it on the caller's thread (a
# compile there would cost tens of milliseconds). Arrays of another kind are copied with
# device_put (no compile, but several times the cost of the compiled copy); once a kind
# has been copied that way _COMPILE_AFTER times (a loop's, logged at every step), a
# thread of its own compiles the copy for it: its tracing still takes the interpreter
# from the caller for ~10 ms, which only pays off for a kind that keeps coming.
_COMPILE_AFTER = 16
_COPY: list[Any] = []
_COPY_COMPILED: set[tuple[Any, ...]] = set()
_COPY_COUNTS: dict[tuple[Any, ...], int] = {}  # device_put copies by kind, up to the compile


def _forget_unfinished_compiles() -> None:
    # A forked child has none of the parent's threads: what they were compiling, it asks
    # for again.
    for kind in [k for k in _COPY_COUNTS if k not in _COPY_COMPILED]:
        _COPY_COUNTS[kind] = 0


os.register_at_fork(after_in_child=_forget_unfinished_compiles)


def private_copy(array: Any, again: bool = True) -> Any:
    """A new JAX array with ``array``'s value, on its devices, dispatched without waiting
    for ``array`` (still computing or not), which holds the value even if ``array`` is
    donated or deleted right after. ``again=False``: arrays of this kind are not expected
    again (they do not count toward compiling a copy for them)."""
    kind = (array.shape, array.dtype, array.weak_type, array.sharding)
    if kind in _COPY_COMPILED:
        return _COPY[0](array)
    import jax

    copy = jax.device_put(array, may_alias=False)
    if not again:
        return copy
    count = _COPY_COUNTS.get(kind, 0) + 1
    if count == 1 and len(_COPY_COUNTS) >= 256:  # (jit's own cache keeps what it compiled)
        _COPY_COUNTS.clear()
        _COPY_COMPILED.clear()
    _COPY_COUNTS[kind] = count
    if count == _COMPILE_AFTER:
        if not _COPY:
            import jax.numpy as jnp

            _COPY.append(jax.jit(jnp.copy))
        threading.Thread(target=_compile_copy, args=(copy, kind), daemon=True,
                         name="summarylib-compile").start()
    return copy


def _compile_copy(array: Any, kind: tuple[Any, ...]) -> None:
    # Trace, compile and cache the copy for arrays of this kind (jit keeps it), by running
    # it once. Nothing is imported here (JAX is loaded): a fork while this thread held an
    # import lock would hang the child.
    try:
        _COPY[0](array)
    except Exception:  # device_put's copy stays in use for this kind (not asked again)
        return
    _COPY_COMPILED.add(kind)


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


def capture(data: Any, start_copy: bool = True, own: bool = False) -> PendingValue | None:
    """Start the host copy of a device array; None for host data (read it as usual).

    ``start_copy=False`` keeps a JAX array without starting its copy (a value that may
    never be read: the reader then copies it); other frameworks copy either way.
    ``own``: a JAX array no one else holds (see :class:`JaxPending`).
    """
    kind = device_kind(data)
    if kind is None:
        return None
    if kind == "jax":
        return JaxPending(data, start_copy, own)
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
            return JaxPending(_jax_stack(values), own=True)
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
