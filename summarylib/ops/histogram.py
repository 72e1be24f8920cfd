"""Histogram summaries: the distribution of a tensor's values per step.

Shown by TensorBoard's Histograms and Distributions dashboards.

Data contract:
  * ``data`` is an array of real numbers of any shape (bool, int, uint,
    float16/32/64, and ml_dtypes' float types such as bfloat16 and float8,
    taken as their exact float32 values): a numpy array, a (nested) Python
    sequence or number, or a framework tensor (through ``__array__``; the
    framework is never imported; torch bfloat16/float8 tensors through
    ``.float()``), or a zero-argument callable returning one. Strings,
    complex numbers and objects raise ``TypeError``.
  * ``buckets`` is an int in [0, ``MAX_BUCKETS``] (2**24; default 30). 0 writes an
    empty ``[0, 3]`` tensor, as TensorFlow does (TensorBoard shows nothing for it);
    the data is still checked.
  * Bucketing is TensorFlow 2's (format.md §5.3), exactly: ``buckets``
    equal-width buckets from min to max computed in float64, the last
    bucket closed, the last right edge exactly the max. All values equal:
    every edge is that value and the last bucket holds them all. No values:
    ``buckets`` rows of zeros.
  * **NaN and ±Inf are left out** (TensorFlow would write NaN/Inf edges and
    lose counts), so counts sum to the number of finite values. Data whose
    range overflows or underflows float64 still gets finite, meaningful
    buckets.
  * Stored as TensorFlow 2 does: a ``DT_DOUBLE`` tensor ``[buckets, 3]`` of
    ``[left, right, count]`` rows in ``tensor_content``. Metadata:
    ``plugin_name="histograms"``, empty content (``HistogramPluginData``
    version 0), ``data_class`` unset; on the first value of a tag per file.

Differences from TensorFlow: NaN/Inf handling (above), and ``buckets < 0``
raises ``ValueError`` (TensorFlow takes it as 0, which hides the mistake).

Device arrays (JAX arrays, torch CUDA tensors, CuPy arrays) are never read on the
caller's thread: large torch tensors are bucketed on the device with the same
float64 arithmetic, large JAX arrays (float32, float16, bfloat16, small integers, bool)
with integer kernels that give the host's edges and counts exactly (only the bucket
table is copied), other arrays are
copied asynchronously, and the writer thread writes the histogram once the device is
done.

Work split: the input is validated and flattened on the caller's thread. Up
to 1 MiB of data is copied (unless it is already private to this call) and
bucketed by the writer's background thread, so the caller may reuse its
buffer at once. Larger inputs are bucketed on the caller's thread instead:
a copy would double their memory, and the writer's buffer bound would make
the caller wait for the bucketing anyway.
"""

from __future__ import annotations

import operator
from functools import partial
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array, evaluate, is_extended_float, widen_extended_float
from summarylib.encoding._bucketing import buckets_from_table, histogram_buckets
from summarylib.encoding._device_reductions import histogram_table
from summarylib.encoding._pending import is_real_dtype, is_tracer
from summarylib.encoding._plugins import HISTOGRAMS
from summarylib.encoding._tensor import DT_DOUBLE, shape_bytes
from summarylib.encoding._traced_reductions import (
    BucketTable,
    jax_bucket_words,
    jax_finish,
    jax_takes,
    torch_bucket_table,
    torch_finish,
)
from summarylib.encoding._values import value_of
from summarylib.encoding._wire import field_bytes, varint
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._device_step import GatedStep
from summarylib.ops._emit import emit_value, emit_value_deferred
from summarylib.ops._replay import IN_GRAPH, InGraphReduction
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "DEFAULT_BUCKET_COUNT",
    "MAX_BUCKETS",
    "PLUGIN_NAME",
    "create_summary_metadata",
    "histogram",
    "histogram_pb",
    "write_histogram",
]

PLUGIN_NAME = HISTOGRAMS.name
DEFAULT_BUCKET_COUNT = 30
# Inputs up to this size are copied and bucketed on the writer thread.
_DEFER_MAX_BYTES = 1 << 20
#: The most buckets a histogram may have: its [k, 3] float64 tensor (24 bytes a bucket,
#: 384 MiB here) stays well inside an event's 2 GiB and the bucketing's memory in
#: hundreds of MiB. More would fail on the writer thread, or make an event no reader
#: can parse; TensorBoard shows a few dozen buckets anyway.
MAX_BUCKETS = 1 << 24
# Device arrays of at least this many values are bucketed on the device: below it, the
# dozen kernels of the reduction cost the caller more than copying the values.
_DEVICE_REDUCE_MIN = 1 << 14
_HEADERS: dict[int, bytes] = {}  # k -> serialized TensorProto up to tensor_content's bytes


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorFlow 2 writes for histograms (protobuf API)."""
    return HISTOGRAMS.create_summary_metadata(description)


def check_buckets(buckets: Any, where: str) -> int:
    """``buckets`` as an int in [0, MAX_BUCKETS] (2**24); None means 30."""
    if buckets is None:
        return DEFAULT_BUCKET_COUNT
    if type(buckets) is not int:
        if isinstance(buckets, bool):
            raise TypeError(f"{where}: 'buckets' must be an int, got bool {buckets!r}")
        try:
            buckets = operator.index(buckets)
        except TypeError:
            raise TypeError(
                f"{where}: 'buckets' must be an int, got {type(buckets).__name__} {buckets!r}"
            ) from None
    if buckets < 0 or buckets > MAX_BUCKETS:
        raise ValueError(f"{where}: 'buckets' must be in [0, 2**24], got {buckets}")
    return int(buckets)


def prepare(data: Any, where: str, arg: str = "data") -> tuple[np.ndarray, bool]:
    """Validate ``data`` (the caller's argument ``arg``); return it flattened, and whether
    no one else holds it.

    The array is private when numpy built it for this call (from Python
    numbers or sequences, by a dtype conversion or a non-contiguous
    flatten); otherwise it may be a view of the caller's memory.
    """
    import numpy as np

    data = evaluate(data)
    arr = as_array(data, where, arg)
    private = isinstance(data, (list, tuple, int, float))
    if arr.dtype.kind not in "biuf" or is_extended_float(arr.dtype):
        # ml_dtypes' floats (bfloat16, float8_*): bucketed as their exact
        # float32 values (numpy has no min/max loops for most of them).
        widened = widen_extended_float(arr)
        if widened is arr:
            raise TypeError(
                f"{where}: {arg!r} must hold real numbers, got dtype {arr.dtype} "
                f"(shape {arr.shape})"
            )
        return widened.reshape(-1), True
    flat = arr.reshape(-1)
    if not private and not np.may_share_memory(flat, arr):
        private = True  # reshape had to copy
    return flat, private


def _tensor(values: np.ndarray, k: int) -> bytes:
    # The serialized TensorProto: a header that depends on k only, then the
    # 24 * k bytes of tensor_content (none at all for k = 0, as TensorFlow writes it).
    if not k:
        return _header(k)
    return _header(k) + _le_bytes(histogram_buckets(values, k))


def _header(k: int) -> bytes:
    header = _HEADERS.get(k)
    if header is None:
        # dtype, tensor_shape [k, 3], then tensor_content's key and length.
        shape = field_bytes(2, shape_bytes((k, 3)))
        header = b"\x08" + varint(DT_DOUBLE) + shape
        if k:  # a [0, 3] tensor has no tensor_content at all, as TensorFlow writes it
            header += b"\x22" + varint(24 * k)
        if len(_HEADERS) < 64:
            _HEADERS[k] = header
    return header


def _le_bytes(buckets: np.ndarray) -> bytes:
    # tensor_content is little-endian whatever the machine.
    return buckets.astype("<f8", copy=False).tobytes()


@traceable
def histogram(
    name: str,
    data: Any,
    step: Step | None = None,
    buckets: int | None = None,
    description: str | None = None,
) -> bool:
    """Write a histogram of ``data``'s values to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current name scope.
      data: real numbers of any shape (see the module docstring), or a
        zero-argument callable returning them, called only when recording.
      step: an int64 step; defaults to the thread's default step.
      buckets: the number of buckets, >= 0 (0: an empty histogram); default 30.
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if the histogram was queued for writing, False if nothing is
      recording (then ``data`` is not even looked at).

    Raises:
      TypeError, ValueError: bad arguments (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        return False
    return write_histogram(sink, data, buckets, description)


_CALLER = Caller("histogram")


def write_histogram(
    sink: Sink, data: Any, buckets: int | None = None, description: str | None = None
) -> bool:
    """The core of :func:`histogram`: write the histogram to ``sink`` (same contract)."""
    where, arg = sink.caller.where, sink.caller.data
    md = HISTOGRAMS.metadata_bytes(description, where)
    k = check_buckets(buckets, where)
    if type(data) is BucketTable:  # bucketed inside compiled code: its table, per run
        return _write_table(sink, data, k, md)
    value = value_of(evaluate(data), defers_device_values(sink.writer),
                     lambda d: prepare(d, where, arg), partial(_check_device, where, arg))
    gate = sink.step if isinstance(sink.step, GatedStep) else None
    if k and gate is None and not value.at_hand and value.size >= _DEVICE_REDUCE_MIN:
        # On the device, only the bucket table crosses. Not under a condition on the
        # device (compiled code's record_if): no kernels and no copy per call; the writer
        # thread reads the condition first and the array only when it holds.
        table = value.reduce(partial(histogram_table, k=k),
                             partial(buckets_from_table, k=k))
        if table is not None:
            header = _header(k)

            def make_from_table() -> bytes:
                return header + _le_bytes(table.read())

            return emit_value_deferred(sink, make_from_table, md, table.nbytes + 24 * k)
    if value.at_hand and (value.nbytes > _DEFER_MAX_BYTES or not k):
        # Host data this large is bucketed here: a copy would double its memory, and the
        # writer's buffer bound would make the caller wait for the bucketing anyway.
        return emit_value(sink, _tensor(value.read(), k), md)
    kept = value.keep(start_copy=gate is None)

    def make_tensor() -> bytes:
        if gate is not None:
            gate.value()  # raises NotRecorded (the event is left out) when it is false
        return _tensor(kept.read(), k)

    return emit_value_deferred(sink, make_tensor, md, kept.nbytes + 24 * k + 16 * kept.at_hand)


def _write_table(sink: Sink, data: BucketTable, k: int, md: bytes) -> bool:
    # The table is small; its copy (a device array's, still computing) or a private copy
    # of a host one (a callback's buffer is reused once the callback returns) is taken
    # now, and the writer thread makes the buckets: the caller, which may be XLA's own
    # thread running the callback, does no more.
    value = value_of(data.table, defers_device_values(sink.writer), _table_numbers,
                     _no_check)
    gate = sink.step if isinstance(sink.step, GatedStep) else None
    finish, header = data.finish, _header(k)
    # Under a condition on the device the copy starts only if it holds (read after it).
    kept = value.keep(start_copy=gate is None)

    def make_tensor() -> bytes:
        if gate is not None:
            gate.value()  # raises NotRecorded (the event is left out) when it is false
        return header + _le_bytes(buckets_from_table(finish(kept.read()), k))

    return emit_value_deferred(sink, make_tensor, md, kept.nbytes + 24 * k)


def _table_numbers(table: Any) -> tuple[Any, bool]:
    import numpy as np

    detach = getattr(table, "detach", None)  # a CPU tensor from the torch graph
    return np.asarray(table if detach is None else detach()), False


def _no_check(shape: tuple[int, ...], dtype: Any) -> None:
    return None  # made by the compiled code from checked data


def _bucket_in_graph(
    arguments: dict[str, Any], gate: Any, framework: str
) -> tuple[str, Any, Any] | None:
    # The histogram's reduction inside compiled code (ops._replay.InGraphReduction): the
    # bucket table instead of the data, when the bucket count is a constant of the code.
    data: Any = arguments.get("data")
    buckets = arguments.get("buckets")
    if buckets is not None and type(buckets) is not int:
        return None
    k = check_buckets(buckets, "histogram")
    if k == 0:
        return None
    if framework == "torch":
        if data is None or not hasattr(data, "is_complex") or data.is_complex():
            return None  # not a tensor, or not real numbers: the op says so at the call
        if gate is not None and data.device.type == "cpu":
            # Under a record_if, host data leaves whole: the op reads it (as the eager call
            # does) only in the runs whose condition holds, where the table would be
            # computed in every run. (On a device the table is kept: the op would have to
            # copy the data before the step changes it, and the kernels cost no host time.)
            return None
        return "data", torch_bucket_table(data, k), _TORCH_WRAP
    if not is_tracer(data) or not jax_takes(data.dtype) or data.size >= (1 << 31):
        return None
    import jax
    import jax.numpy as jnp

    if gate is None:
        words = jax_bucket_words(data, k)
    else:  # computed only in the runs whose condition holds
        words = jax.lax.cond(jnp.asarray(gate, jnp.bool_).reshape(()),
                             lambda x: jax_bucket_words(x, k),
                             lambda x: jnp.zeros(k + 3, jnp.int32), data)
    return "data", words, partial(BucketTable, finish=jax_finish(str(data.dtype), k))


_TORCH_WRAP = partial(BucketTable, finish=torch_finish)
IN_GRAPH["histogram"] = InGraphReduction(_bucket_in_graph, _TORCH_WRAP)


def _check_device(where: str, arg: str, shape: tuple[int, ...], dtype: Any) -> None:
    # What needs no numbers of a device or traced array: it holds real numbers.
    if not is_real_dtype(dtype):
        raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {dtype} "
                        f"(shape {shape})")


def histogram_pb(
    tag: str, data: Any, buckets: int | None = None, description: str | None = None
) -> summary_pb2.Summary:
    """A ``Summary`` with one histogram value, with metadata; no writer needed.

    Same data contract as :func:`histogram`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "histogram_pb", "tag")
    HISTOGRAMS.metadata_bytes(description, "histogram_pb")  # the same checks as histogram()
    k = check_buckets(buckets, "histogram_pb")
    values, _ = prepare(data, "histogram_pb")
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_DOUBLE
    v.tensor.tensor_shape.dim.add().size = k
    v.tensor.tensor_shape.dim.add().size = 3
    if k:
        v.tensor.tensor_content = _le_bytes(histogram_buckets(values, k))
    v.metadata.CopyFrom(create_summary_metadata(description))
    return summary
