"""The value an op writes, whatever it is: host data, a pending device array, a traced one.

An op asks its value for what it needs when it can have it, through one interface
(:class:`Value`), instead of holding a path per kind of value:

* **at the call**: ``shape`` and ``dtype`` (the framework's dtype for a device or traced
  array), ``at_hand`` (the numbers are on the host already: reading them now costs
  no device wait), and :meth:`Value.stand_in`, a host array to check together with an
  op's other arrays (a mesh's vertices, faces and colors): the host data itself, else a
  zero-memory stand-in of its shape and host dtype;
* **later** (on the writer thread): :meth:`Value.read`, the numbers in the op's host
  form; or, first, :meth:`Value.reduce`, a reduction computed where the numbers live (a
  histogram's bucket table on the device; a PR curve's counts, from its labels and its
  predictions together), and :meth:`Value.map`, a transformation there (images
  converted to uint8 before the copy);
* :meth:`Value.keep` holds the numbers as they are at the call: a private copy of host
  data, the started copy of a device array (:mod:`summarylib.encoding._pending`).

The kinds:

* :class:`HostValue`: data the op converted and checked at the call with its own host
  reader (``host``: numpy arrays, Python numbers, a framework's CPU tensor).
* :class:`DeviceValue`: an array on an accelerator, when the writer defers device values.
  Only its shape and dtype are looked at on the caller's thread (``check``); ``read``
  waits for the copy and runs the op's host reader on the result.
* :class:`TracedValue`: a value of code being compiled (a JAX tracer): it has a shape and
  a dtype and no numbers until the compiled code runs; an op called on one is recorded
  and replayed with each execution's values (``summarylib.ops._traced``), so reading one
  is an error (carrying the op's own refusal, which names the argument: what an op that
  is not recorded, or a core called directly, says).

:func:`value_of` picks the kind. Nothing here imports a framework.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from functools import partial
from typing import Any, Generic, NoReturn, TypeVar

from summarylib.encoding._pending import PendingValue, capture, device_kind, is_tracer, stand_in

__all__ = [
    "DeviceValue", "HostValue", "TracedValue", "Value", "read_values", "value_of",
    "values_of_arrays",
]

T = TypeVar("T")

#: The op's host reader: raw data -> (its host form, whether no one else holds it).
HostReader = Callable[[Any], "tuple[T, bool]"]


class Value(Generic[T]):
    """One argument of an op, of any kind (see the module docstring).

    Attributes:
      shape: the array's shape (known at the call for every kind).
      dtype: the array's dtype (numpy's for host data, the framework's otherwise).
      at_hand: the numbers are on the host now (reading costs no device wait).
      nbytes: for the writer's buffer bound: the size of what :meth:`read` gives, and for
        a kept or reduced device value the memory its pending copy holds until read
        (``PendingValue.held_bytes``: the arrays kept alive and their objects).
    """

    __slots__ = ("dtype", "nbytes", "shape")
    at_hand = False

    def __init__(self, shape: tuple[int, ...], dtype: Any, nbytes: int) -> None:
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes

    @property
    def size(self) -> int:
        """The number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def read(self) -> T:
        """The numbers in the op's host form: at once for host data, after waiting for a
        device copy otherwise (call it on the writer thread)."""
        raise NotImplementedError

    def stand_in(self) -> Any:
        """A host array for the op's checks that need no numbers (shape, dtype), run at
        the call: host data's own array (the host form's first array), else a read-only
        zero-memory array of ``shape`` and the dtype the numbers will be read in
        (:func:`~summarylib.encoding._pending.stand_in`). Reads no device numbers."""
        return stand_in(self.shape, self.dtype)

    def keep(self, start_copy: bool = True) -> Value[T]:
        """The value as it is at this call, whatever the caller does next: a private copy
        of host data, or a device array whose copy to the host started (``start_copy``
        False: a JAX array read only if needed, by the reader)."""
        raise NotImplementedError

    def reduce(self, kernel: Callable[..., PendingValue | None],
               finish: Callable[[Any], Any], *others: Value[Any]) -> Value[Any] | None:
        """A reduction run where the numbers live: ``kernel`` takes the device array (and
        those of ``others``, the op's other device values: a PR curve's predictions with
        its labels) and returns the pending result (None: it does not take these arrays),
        ``finish`` makes the host form of that result when read. None for host data
        (reduce it on the host), when one of ``others`` is not a device value, or when the
        kernel declines."""
        return None

    def map(self, fn: Callable[[Any], Any], host: HostReader[T] | None = None) -> Value[T]:
        """``fn`` applied where the numbers live, before any copy (a device array's
        slice, its conversion to uint8), read later with ``host`` (None: the same host
        reader); host data is returned as it is (the op's host reader did the same)."""
        return self


class HostValue(Value[T]):
    """Data the op's host reader converted and checked at the call."""

    __slots__ = ("_host", "_private")
    at_hand = True

    def __init__(self, host: T, private: bool, shape: tuple[int, ...], dtype: Any,
                 nbytes: int) -> None:
        # No super() call: this runs on every host op call.
        self.shape = shape
        self.dtype = dtype
        self.nbytes = nbytes
        self._host = host
        self._private = private

    def read(self) -> T:
        return self._host

    def stand_in(self) -> Any:
        host: Any = self._host
        return host[0] if type(host) is tuple else host

    def keep(self, start_copy: bool = True) -> Value[T]:
        if self._private:
            return self
        copied = self._host.copy()  # type: ignore[attr-defined]
        return HostValue(copied, True, self.shape, self.dtype, self.nbytes)


class DeviceValue(Value[T]):
    """An array on an accelerator, read on the writer thread with the op's host reader."""

    __slots__ = ("_data", "_host", "_own", "_pending")

    def __init__(self, data: Any, host: HostReader[T], own: bool = False) -> None:
        shape = tuple(int(d) for d in data.shape)
        super().__init__(shape, data.dtype, 0)
        # The host copy's size, once known (keep()); until then the device array's.
        self.nbytes = self.size * int(getattr(data.dtype, "itemsize", 8))
        self._data = data
        self._host = host
        # Made by map() from the caller's array: no one else holds it (so no one can
        # donate it), and keep() needs no protective copy.
        self._own = own
        self._pending: PendingValue | None = None

    def read(self) -> T:
        pending = self._pending
        if pending is None:
            raise RuntimeError("a device value is read after keep()")
        return self._host(pending.result())[0]

    def keep(self, start_copy: bool = True) -> Value[T]:
        pending = capture(self._data, start_copy=start_copy, own=self._own)
        if pending is None:  # a layout the capture does not take: read at the call
            host, _ = self._host(self._data)
            arr = host[0] if isinstance(host, tuple) else host
            return HostValue(host, True, self.shape, self.dtype,
                             int(getattr(arr, "nbytes", 0)))
        kept: DeviceValue[T] = DeviceValue.__new__(DeviceValue)
        Value.__init__(kept, self.shape, self.dtype, pending.held_bytes)
        kept._data = None  # the pending copy holds what is read; nothing else is kept
        kept._host = self._host
        kept._pending = pending
        return kept

    def reduce(self, kernel: Callable[..., PendingValue | None],
               finish: Callable[[Any], Any], *others: Value[Any]) -> Value[Any] | None:
        arrays = [self._data]
        for other in others:
            if type(other) is not DeviceValue or other._data is None:
                return None  # host data, or a device value already kept or reduced
            arrays.append(other._data)
        pending = kernel(*arrays)
        if pending is None:
            return None
        reduced: DeviceValue[Any] = DeviceValue.__new__(DeviceValue)
        Value.__init__(reduced, pending.shape, pending.dtype, pending.held_bytes)
        reduced._data = None
        reduced._host = lambda numbers: (finish(numbers), True)
        reduced._pending = pending
        return reduced

    def map(self, fn: Callable[[Any], Any], host: HostReader[T] | None = None) -> Value[T]:
        mapped = fn(self._data)
        # A new array is the device's result of fn, held by no one else; fn may also give
        # its input back as it is (nothing to convert), which is as much ours as it was.
        return DeviceValue(mapped, self._host if host is None else host,
                           own=self._own or mapped is not self._data)


class TracedValue(Value[Any]):
    """A value of code being compiled: a shape and a dtype, numbers only when it runs.

    Reading or keeping one raises TypeError, with the op's own refusal of it (its host
    reader's error, which names the op and the argument) when it gives one.
    """

    __slots__ = ("_data", "_host")

    def __init__(self, data: Any, host: HostReader[Any] | None = None) -> None:
        super().__init__(tuple(int(d) for d in data.shape), data.dtype, 0)
        self._data = data
        self._host = host

    def read(self) -> Any:
        self._refuse()

    def keep(self, start_copy: bool = True) -> Value[Any]:
        self._refuse()

    def _refuse(self) -> NoReturn:
        if self._host is not None:
            try:
                self._host(self._data)  # a tracer's numbers: the op's reader refuses them
            except (TypeError, ValueError) as e:
                raise TypeError(f"{e} ({_NO_NUMBERS})") from None
        raise TypeError(_NO_NUMBERS)


_NO_NUMBERS = ("a traced value has no numbers until the compiled code runs; an op recorded "
               "in compiled code writes each execution's values")


def value_of(
    data: Any,
    defer: bool,
    host: HostReader[T],
    check: Callable[[tuple[int, ...], Any], None],
    own: bool = False,
) -> Value[T]:
    """``data`` as a :class:`Value`.

    ``defer``: the writer defers device values (False: a device array is read at the call
    with ``host``, as host data). ``host``: the op's host reader (validates and converts;
    raises the op's errors). ``check``: the op's checks of a device array's shape and
    dtype (no numbers), run at the call. ``own``: ``data`` is an array made from the
    caller's by the library, which no one else holds (kept without a protective copy).
    """
    if defer and device_kind(data) is not None:
        value: DeviceValue[T] = DeviceValue(data, host, own)
        check(value.shape, value.dtype)
        return value
    if is_tracer(data):
        traced = TracedValue(data, host)
        check(traced.shape, traced.dtype)
        return traced
    converted, private = host(data)
    # The host form is a numpy array, or a tuple led by one (pixels, width, height).
    arr: Any = converted[0] if type(converted) is tuple else converted  # type: ignore[index]
    return HostValue(converted, private, arr.shape, arr.dtype, arr.nbytes)


def values_of_arrays(
    arrays: Sequence[tuple[Any, str]], defer: bool, where: str, optional: Container[str] = (),
) -> list[Value[Any] | None]:
    """Several array arguments of one op that the op checks together (their shapes
    against each other) once it has them: each ``(data, arg)`` as a :class:`Value` whose
    host form is the array as given (``as_array``; a kept one is copied), with no check
    of its own at the call. ``data`` None for an ``arg`` in ``optional`` stays None."""
    from summarylib.encoding._arrays import as_array

    def as_given(arg: str, data: Any) -> tuple[Any, bool]:
        return as_array(data, where, arg), False

    return [None if data is None and arg in optional else
            value_of(data, defer, partial(as_given, arg), _checked_later)
            for data, arg in arrays]


def read_values(values: Sequence[Value[Any] | None]) -> tuple[Any, ...]:
    """:meth:`Value.read` of each value (None stays None)."""
    return tuple(None if v is None else v.read() for v in values)


def _checked_later(shape: tuple[int, ...], dtype: Any) -> None:
    return None  # values_of_arrays: the op checks the arrays together
