"""Thread-local summary context: default writer, default step, record_if, name scope.

These follow ``tf.summary``: each thread has its own default writer and step;
a thread that never set one has none. Ops read this context on every call, so
its attributes are plain class-level defaults on a ``threading.local`` (a
missing per-thread value falls back to the class attribute without a lookup
failure).
"""

from __future__ import annotations

import operator
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, SupportsIndex

from summarylib.encoding._pending import is_tracer, torch_compiling
from summarylib.errors import ArgumentError, NoDefaultWriterWarning

if TYPE_CHECKING:
    from summarylib.writer._batch import RecordCodecs
    from summarylib.writer._buffered import Deferred
    from summarylib.writer._tags import TagLedger

__all__ = [
    "Condition",
    "DefaultWriter",
    "EventSink",
    "State",
    "Step",
    "check_step",
    "condition_holds",
    "forget_writer",
    "get_step",
    "name_scope",
    "no_default_writer",
    "record_if",
    "set_step",
    "should_record_summaries",
    "state",
    "summaries_off",
    "summary_scope",
    "writer_opened",
]

#: A step: an ``int`` or anything with ``__index__`` (numpy integers, 0-d
#: integer tensors). It is read again on every op, so a mutable counter works.
Step = int | SupportsIndex
#: A recording condition: a bool, or a zero-argument callable returning one.
#: ``record_if`` also takes any object with a truth value, read by each op.
Condition = bool | Callable[[], Any]


class DeferredCondition:
    """A recording condition known only when compiled code runs: a ``record_if`` on a
    traced value inside ``jax.jit`` (``value``), or the marker that a compiled function
    is being traced for :func:`summarylib.integrations.jax.jit` (``value`` None: always).

    Ops that see it do not write at once: they record themselves into the compiled code
    (:mod:`summarylib.ops._traced`), which writes when it executes, gated on ``value``.
    Calling it says True, so code that only asks whether to go on does.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> bool:
        return True

# Condition types whose truth value cannot change after record_if() is entered.
_IMMUTABLE = frozenset({int, float, complex, str, bytes})
# What summary_scope() keeps of a name to make its scope (TensorFlow's rule).
_LEGAL_IN_SCOPE = frozenset("-_/.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class EventSink(Protocol):
    """What an op writes to: the writer's interface for ops, and all they may use of it.

    * ``tags``: the current file's :class:`~summarylib.writer._tags.TagLedger` (which
      tags have their metadata in the file, their cached encoded prefixes). Read it
      again after anything that may start a new file: it is replaced, never mutated
      back, when a failed write lost metadata.
    * ``clock()``: the wall time of an event made now (seconds since the epoch; the
      writer's clock, which tests may replace).
    * ``append(event)``: queue one serialized Event, or a
      :class:`~summarylib.writer._buffered.Deferred` one (made on the writer thread, in
      file order). Takes no lock. False: dropped, the writer was closed at exit. Raises
      ``WriterClosedError``/``WriteFailedError`` as the writer's methods do.
    * ``codecs``: the :class:`~summarylib.writer._batch.RecordCodecs` that expand compact
      records (``scalars()``' fast path registers its layouts there).
    """

    tags: TagLedger

    @property
    def codecs(self) -> RecordCodecs: ...

    def clock(self) -> float: ...

    def append(self, event: bytes | Deferred) -> bool: ...


class DefaultWriter(Protocol):
    """What the context and the ops need of a default writer.

    The context holds writers through this protocol rather than the writer class, so the
    dependency runs one way: the writer module imports the context, never the reverse.

    * ``events``: the writer's :class:`EventSink`, or None for a no-op writer (ops never
      see one: :func:`~summarylib.ops._resolve.resolve` returns no sink for it). A plain
      attribute, read once per op call: the hot path pays one attribute load.
    * ``defers_device_values``: False for a writer made with
      ``sync_device_values=True`` (ops then read device values at the call).
    """

    @property
    def events(self) -> EventSink | None: ...

    @property
    def defers_device_values(self) -> bool: ...

    @property
    def closed(self) -> bool: ...


class State:
    """One thread's summary context. Ops read it on every call."""

    __slots__ = ("__weakref__", "condition", "quiet", "scope", "step", "writer")

    def __init__(self) -> None:
        self.writer: DefaultWriter | None = None
        self.step: Step | None = None
        self.condition: Condition = True
        self.scope = ""  # "" or a prefix ending in "/"
        self.quiet = False  # inside summaries_off(): no hint when an op finds no writer
        _states.add(self)


# Every thread's context (a thread's goes when the thread ends), so that closing a
# writer can stop it being the default of every thread, not only the closing one's.
_states: weakref.WeakSet[State] = weakref.WeakSet()


class _Local(threading.local):
    def __init__(self) -> None:
        # Runs once per thread, on that thread's first access.
        self.state = State()


_local = _Local()


def state() -> State:
    """The calling thread's context (ops inline ``_local.state`` instead)."""
    return _local.state


def check_step(step: object, where: str) -> int:
    """Return ``step`` as an int64-range ``int``, or raise naming ``where``.

    Accepts ``int`` and objects with ``__index__`` (numpy integers, 0-d integer
    tensors); rejects ``bool``, floats and anything else.
    """
    if type(step) is int:
        value = step
    else:
        if isinstance(step, bool) or step is None:
            raise TypeError(f"{where}: 'step' must be an integer, got {step!r}")
        try:
            value = operator.index(step)  # type: ignore[arg-type]
        except TypeError:
            held = _integer_array(step)  # a framework's variable: a 0-d integer array
            if held is None:
                raise TypeError(
                    f"{where}: 'step' must be an integer, got {type(step).__name__} {step!r}"
                ) from None
            value = held
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{where}: 'step' must fit in int64, got {value}")
    return value


def _integer_array(value: object) -> int | None:
    # The int of an object whose ``__array__`` is a 0-d integer array (a Keras or
    # TensorFlow variable such as ``optimizer.iterations``), else None.
    if getattr(type(value), "__array__", None) is None:
        return None
    import numpy as np

    try:
        array = np.asarray(value)
    except Exception:
        return None
    if array.ndim != 0 or array.dtype.kind not in "iu":
        return None
    return int(array)


# Writers open in this process (each until its close() begins, or it is collected):
# an op that finds no default writer while one of them exists hints at the fix.
_open_writers: weakref.WeakSet[DefaultWriter] = weakref.WeakSet()
_hint_pending = True  # the hint is given once per process


#: Called by every writer's ``flush()`` and ``close()`` before they write: waits for
#: compiled code dispatched before them whose summary ops have not run yet (JAX's
#: ordered callbacks run while the code executes, after the call that dispatched it
#: returned). Ops that write from compiled code register one the first time they do.
FLUSH_BARRIERS: list[Callable[[], BaseException | None]] = []


def wait_for_compiled_code() -> BaseException | None:
    """Run the :data:`FLUSH_BARRIERS` (see there); the first error one reports (an op
    that failed while compiled code ran it, on a thread of its own), for the caller to
    raise once it has done its own work."""
    found = None
    for barrier in FLUSH_BARRIERS:
        error = barrier()
        if found is None:
            found = error
    return found


def writer_opened(writer: DefaultWriter) -> None:
    """Count ``writer`` as open (for the no-default-writer hint)."""
    _open_writers.add(writer)


def forget_writer(writer: DefaultWriter) -> None:
    """Stop ``writer`` being the default writer of any thread (it is being closed).

    Those threads then have no default writer, as if none had been set; an
    ``as_default()`` block still restores its outer writer on exit.
    """
    _open_writers.discard(writer)
    for st in list(_states):
        if st.writer is writer:
            st.writer = None


def no_default_writer(where: str, stacklevel: int = 3) -> bool:
    """What an op returns when its thread has no default writer: False.

    The first time in the process that this happens while a writer is open,
    it warns (:class:`~summarylib.errors.NoDefaultWriterWarning`) naming the
    fix: the op wrote nothing, which is tf.summary's rule, and is usually a
    forgotten ``set_as_default()`` or a thread other than the one that set
    it. Only ops that find no writer come here: the path with a writer set
    pays nothing.
    """
    global _hint_pending
    if not _hint_pending or not _open_writers or torch_compiling() or _local.state.quiet:
        # (torch.compile traces no warning: the region compiled without a writer is
        # compiled again when one is set, as dynamo guards on the default writer.)
        return False
    _hint_pending = False
    example = next(iter(list(_open_writers)), None)
    where_to = getattr(example, "logdir", None) or getattr(example, "path", None)
    warnings.warn(
        f"summarylib: {where}() wrote nothing: this thread has no default writer, although "
        f"a writer is open ({where_to}). Make it the default on the thread that logs, with "
        "`with writer.as_default():` or `writer.set_as_default()` (the default writer is "
        "per thread), or call its add_* methods. Shown once per process.",
        NoDefaultWriterWarning,
        stacklevel=stacklevel,
    )
    return False


@contextmanager
def summaries_off() -> Iterator[None]:
    """Run the block with no default writer on this thread, and without the hint of
    :func:`no_default_writer`.

    For tracing the variant of compiled code that writes nothing because the call asked
    for nothing (a false ``record_if``, a no-op writer): its ops finding no writer is
    the intent, not a forgotten ``as_default()``.
    """
    st = _local.state
    saved = st.writer, st.quiet
    st.writer, st.quiet = None, True
    try:
        yield
    finally:
        st.writer, st.quiet = saved


def set_step(step: Step | None) -> None:
    """Set this thread's default step (``None`` unsets it).

    The value is validated now and read again by every op, so an object whose
    ``__index__`` changes (a counter tensor updated in place) is followed.
    """
    if step is not None:
        check_step(step, "set_step")
    _local.state.step = step


def get_step() -> Step | None:
    """This thread's default step, or ``None``."""
    return _local.state.step


@contextmanager
def record_if(condition: object) -> Iterator[None]:
    """Record summaries inside the block only when ``condition`` holds.

    ``condition`` is a bool, a zero-argument callable called by each op (so
    ``record_if(lambda: step % 100 == 0)`` works), or any object with a truth
    value (a 0-d torch tensor, numpy or JAX array, an object with
    ``__bool__``), which each op reads again, as TensorFlow reads a variable:
    a tensor changed in place (``flag.fill_(1)``) takes effect at the next op.
    Inside ``jax.jit`` it may be a traced boolean (``step % 100 == 0``): ops then write
    only in the executions where it is true, without a retrace and without reading it
    on the calling thread (docs/compiled.md).
    A nested ``record_if`` replaces the outer condition (it does not AND with
    it); the outer one is restored on exit.

    Raises:
      ValueError: ``condition`` has no truth value (an array of several elements).
    """
    cond: Condition
    if type(condition) is bool and condition is not True and condition is not False:
        # A symbolic bool inside torch.compile (``i % 100 == 0`` of an int argument dynamo
        # made dynamic; a bool to type tests there): a value of the run, as a tensor.
        import torch

        cond = DeferredCondition(torch.scalar_tensor(condition, dtype=torch.bool))
    elif type(condition) is bool or callable(condition):
        cond = condition
    elif (torch_compiling() and hasattr(condition, "is_floating_point")) or is_tracer(condition):
        # Inside jax.jit or torch.compile: a value of the running computation. Ops record
        # it beside their data and the event is left out when it is false.
        cond = DeferredCondition(condition)
    else:
        try:
            value = bool(condition)
        except Exception as e:
            raise ValueError(
                f"record_if: 'condition' must have a truth value, got "
                f"{type(condition).__name__}: {e}"
            ) from None
        # Values that cannot change are read once; anything else is read by each op.
        if condition is None or type(condition) in _IMMUTABLE:
            cond = value
        else:
            cond = partial(bool, condition)
    st = _local.state
    saved = st.condition
    st.condition = cond
    try:
        yield
    finally:
        st.condition = saved


def should_record_summaries() -> bool:
    """True when an op called now would record: a writer is set and the condition holds."""
    st = _local.state
    if st.writer is None:
        return False
    return condition_holds(st.condition)


def condition_holds(cond: Condition) -> bool:
    """Evaluate a recording condition (calls it if it is callable)."""
    if cond is True:
        return True
    if cond is False:
        return False
    return bool(cond())


@contextmanager
def name_scope(name: str) -> Iterator[str]:
    """Prefix the tags of ops inside the block with ``name/``.

    Scopes nest (``a/b/loss``). As in TensorFlow, a name ending in ``/``
    replaces the current scope instead of nesting, and ``""`` (or ``"/"``)
    goes to the root scope: tags inside are not prefixed. Yields the new
    prefix (``""`` at the root).
    """
    if not isinstance(name, str):
        # TensorFlow raises ValueError: the error is both.
        raise ArgumentError(f"name_scope: 'name' must be a str, got {type(name).__name__}")
    st = _local.state
    saved = st.scope
    if not name or name == "/":
        st.scope = ""
    else:
        st.scope = name if name.endswith("/") else saved + name + "/"
    try:
        yield st.scope
    finally:
        st.scope = saved


@contextmanager
def summary_scope(
    name: str | None, default_name: str | None = None, values: object = None
) -> Iterator[tuple[str, str]]:
    """Open a name scope for a custom summary op; yield ``(tag, scope)``.

    As ``tf.summary.experimental.summary_scope``: ``tag`` is ``name`` (or
    ``default_name`` if ``name`` is empty or None) inside the current name
    scope, kept as given: it is not made unique and keeps characters a scope
    cannot hold. The block runs in the name scope ``name`` with every
    character other than ``A-Z a-z 0-9 - _ . /`` removed; if none is left,
    in ``default_name``, and without one at the root scope. ``scope`` is that
    scope's prefix (``"a/my_op/"``; ``""`` at the root). Write the op's value
    with ``write(tag, ...)``, which takes the tag as it is.

    ``values`` is accepted for TensorFlow compatibility and ignored.

    With neither ``name`` nor ``default_name``, the tag and scope are TensorFlow's
    ``"summary"`` (``("summary", "summary/")`` at the root).

    Raises:
      TypeError: ``name`` or ``default_name`` is neither a str nor None.
    """
    del values  # graph tensors pick the graph in TensorFlow; there is no graph here
    for arg, given in (("name", name), ("default_name", default_name)):
        if given is not None and not isinstance(given, str):
            raise TypeError(
                f"summary_scope: {arg!r} must be a str or None, got {type(given).__name__}"
            )
    # Neither given: TensorFlow's scope "summary" (tf.name_scope(None, "summary")).
    chosen = name or default_name or "summary"
    tag = _local.state.scope + chosen
    scope_name = "".join(c for c in chosen if c in _LEGAL_IN_SCOPE) or default_name or ""
    with name_scope(scope_name) as scope:
        yield tag, scope
