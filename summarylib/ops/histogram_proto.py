"""Histograms in the legacy ``HistogramProto`` form, bucketed by explicit bin edges.

This is the form ``torch.utils.tensorboard`` and tensorboardX write (``Summary.Value.histo``,
field 5, no plugin metadata); TensorBoard converts it to its histogram tensor when it loads
the file, so the Histograms and Distributions dashboards show it as they show the TF2 form
of :mod:`summarylib.ops.histogram`. Use it where the bucket edges are chosen by the caller:
torch's default "tensorflow" bins (exponential edges ±1e-12·1.1^k up to 1e20), numpy's bin
rules (``"auto"``, ``"fd"``, an int, an array of edges), or counts made elsewhere.

Data contract:
  * :func:`histogram_raw`: ``min``, ``max``, ``num``, ``sum``, ``sum_squares`` are finite
    real numbers (``num`` >= 0); ``bucket_limits`` and ``bucket_counts`` are 1-D sequences
    of real numbers of the same length, limits non-decreasing, counts >= 0. Written as
    given: ``bucket_limits[i]`` is the right edge of bucket ``i``; TensorBoard takes the
    left edge of bucket 0 from ``min``.
  * :func:`histogram_bins`: ``values`` is a non-empty array of finite real numbers of any
    shape; ``bins`` is ``"tensorflow"``, a numpy bin rule (str), an int in [1, 2**24]
    (:data:`~summarylib.ops.histogram.MAX_BUCKETS`) or a 1-D
    increasing sequence of edges; ``max_bins`` (optional int >= 1) merges neighbouring
    buckets until at most that many remain. Buckets are made as torch's ``make_histogram``
    makes them: ``numpy.histogram`` on float64 values, then trimmed to the buckets that
    hold values plus one empty bucket on the left (TensorBoard shows only right edges).
  * ``min`` and ``max`` are numpy's ``min()`` and ``max()``, except where the extreme is a
    zero: -0.0 is the smallest when one is among the values, +0.0 the largest when one is
    (numpy picks by position, so by the CPU's vector width).
  * Values are copied on the caller's thread; the bucketing runs on the writer's thread.
  * Inside compiled code (``SummaryWriter.add_histogram`` in ``jax.jit`` or
    ``torch.compile``) with ``bins="tensorflow"`` or explicit edges, the counts and
    statistics are computed there (for the edges of :func:`fixed_edges`) and only
    they leave it: every field equals the eager call's, except ``sum_squares``, added in
    numpy's pairwise order instead of BLAS's (last bits; see docs/compiled.md).
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array, evaluate
from summarylib.encoding._bucketing import signed_zero_extremes
from summarylib.encoding._events import summary_event
from summarylib.encoding._pending import is_real_dtype, is_tracer
from summarylib.encoding._traced_reductions import (
    BucketTable,
    EdgeStats,
    edge_key_thresholds,
    edge_stats_finish,
    jax_edge_words,
    jax_edges_take,
    torch_edge_stats,
    torch_edge_table,
)
from summarylib.encoding._values import value_of
from summarylib.encoding._wire import field_bytes, pack_double
from summarylib.ops._bins import check_bins as _check_bins
from summarylib.ops._bins import fixed_edges, tensorflow_bins
from summarylib.ops._device_step import DeviceStep, GatedStep, defers_device_values, step_name
from summarylib.ops._emit import emit_summary, event_wall_time
from summarylib.ops._replay import IN_GRAPH, InGraphReduction
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._buffered import Deferred
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "histogram_bins",
    "histogram_bins_pb",
    "histogram_proto_bytes",
    "histogram_raw",
    "histogram_raw_pb",
    "make_histogram",
    "tensorflow_bins",
    "write_histogram_bins",
    "write_histogram_raw",
]

def histogram_proto_bytes(
    vmin: float, vmax: float, num: float, vsum: float, sum_squares: float,
    limits: np.ndarray, counts: np.ndarray,
) -> bytes:
    """A serialized ``HistogramProto`` (all fields doubles, repeated ones packed)."""
    out = []
    for number, value in ((1, vmin), (2, vmax), (3, num), (4, vsum), (5, sum_squares)):
        if value != 0 or math.copysign(1.0, value) < 0:  # proto3 leaves out +0.0 only
            out.append(bytes((number << 3 | 1,)) + pack_double(value))
    if len(limits):
        out.append(field_bytes(6, limits.astype("<f8").tobytes()))
    if len(counts):
        out.append(field_bytes(7, counts.astype("<f8").tobytes()))
    return b"".join(out)


def _histo_summary(tag: str, histo: bytes) -> bytes:
    # Summary { value { tag = 1; histo = 5 } }: no metadata, as torch writes it.
    return field_bytes(1, field_bytes(1, tag.encode("utf-8")) + field_bytes(5, histo))


def _real(value: Any, where: str, arg: str, *, minimum: float | None = None) -> float:
    value = evaluate(value)
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{where}: {arg!r} must be a real number, got {type(value).__name__}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{where}: {arg!r} must be a real number, got {type(value).__name__}"
        ) from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {arg!r} must be finite, got {x}")
    if minimum is not None and x < minimum:
        raise ValueError(f"{where}: {arg!r} must be >= {minimum}, got {x}")
    return x


def _raw_parts(
    where: str, vmin: Any, vmax: Any, num: Any, vsum: Any, sum_squares: Any,
    bucket_limits: Any, bucket_counts: Any,
) -> bytes:
    import numpy as np

    lo = _real(vmin, where, "min")
    hi = _real(vmax, where, "max")
    n = _real(num, where, "num", minimum=0)
    s = _real(vsum, where, "sum")
    sq = _real(sum_squares, where, "sum_squares", minimum=0)
    limits = as_array(bucket_limits, where, "bucket_limits")
    counts = as_array(bucket_counts, where, "bucket_counts")
    for arr, arg in ((limits, "bucket_limits"), (counts, "bucket_counts")):
        if arr.ndim != 1:
            raise ValueError(f"{where}: {arg!r} must be 1-D, got shape {arr.shape}")
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {arr.dtype}")
    if len(limits) != len(counts):
        raise ValueError(
            f"{where}: 'bucket_limits' and 'bucket_counts' must have the same length, "
            f"got {len(limits)} and {len(counts)}"
        )
    limits = limits.astype(np.float64)
    counts = counts.astype(np.float64)
    if np.isnan(limits).any() or (len(limits) > 1 and (np.diff(limits) < 0).any()):
        raise ValueError(f"{where}: 'bucket_limits' must be non-decreasing numbers")
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise ValueError(f"{where}: 'bucket_counts' must be finite and >= 0")
    return histogram_proto_bytes(lo, hi, n, s, sq, limits, counts)


def histogram_raw(
    name: str, min: Any, max: Any, num: Any, sum: Any, sum_squares: Any,
    bucket_limits: Any, bucket_counts: Any, step: Step | None = None,
) -> bool:
    """Write a histogram given as its statistics and buckets (see the module docstring).

    Returns True if written, False if nothing is recording. Raises TypeError/ValueError
    naming the bad argument (nothing written).
    """
    sink = resolve(name, step, _RAW_CALLER)
    if sink is None:
        return False
    return write_histogram_raw(sink, min, max, num, sum, sum_squares, bucket_limits,
                               bucket_counts)


_RAW_CALLER = Caller("histogram_raw")


def write_histogram_raw(
    sink: Sink, min: Any, max: Any, num: Any, sum: Any, sum_squares: Any,
    bucket_limits: Any, bucket_counts: Any,
) -> bool:
    """The core of :func:`histogram_raw`: write the histogram to ``sink``."""
    histo = _raw_parts(
        sink.caller.where, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
    )
    return emit_summary(sink, _histo_summary(sink.tag, histo))


def histogram_raw_pb(
    tag: str, min: Any, max: Any, num: Any, sum: Any, sum_squares: Any,
    bucket_limits: Any, bucket_counts: Any,
) -> summary_pb2.Summary:
    """A ``Summary`` with one legacy histogram value; no writer needed."""
    from summarylib.proto import summary_pb2

    tag = check_tag(tag, "histogram_raw_pb", "tag")
    histo = _raw_parts(
        "histogram_raw_pb", min, max, num, sum, sum_squares, bucket_limits, bucket_counts
    )
    return summary_pb2.Summary.FromString(_histo_summary(tag, histo))


def _check_values(values: Any, where: str, arg: str = "values") -> np.ndarray:
    import numpy as np

    arr = as_array(values, where, arg)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{where}: {arg!r} is empty")
    # A private copy in the input's own dtype (float64 conversion, as torch buckets, is
    # left to make_histogram on the writer's thread).
    flat = np.array(arr, order="C").reshape(-1)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        raise ValueError(f"{where}: {arg!r} must be finite (NaN or Inf found)")
    return flat


def _checked(values: Any, bins: Any, where: str, arg: str) -> np.ndarray:
    # The host reader: the values checked, as a private flat copy.
    flat = _check_values(values, where, arg)
    _check_inside(flat, bins, where)
    return flat


def _check_device(where: str, arg: str, shape: tuple[int, ...], dtype: Any) -> None:
    # _check_values()'s checks that need no numbers, for a device or traced array.
    if not is_real_dtype(dtype):
        raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {dtype}")
    if 0 in shape:
        raise ValueError(f"{where}: {arg!r} is empty")


def _check_inside(flat: np.ndarray, bins: Any, where: str) -> None:
    # Values outside explicit edges are not counted (numpy's and torch's rule); when none
    # is inside there is no histogram to write, and torch raises too.
    import numpy as np

    if not isinstance(bins, np.ndarray):
        return
    lo, hi = bins[0], bins[-1]
    if flat.min() >= lo and flat.max() <= hi:
        return  # the common case: two reductions
    if not np.logical_and(flat >= lo, flat <= hi).any():
        raise ValueError(f"{where}: no value of 'values' lies within the bin edges "
                         f"[{float(lo)!r}, {float(hi)!r}]")


#: The most bins a numpy rule (``bins="fd"``, ``"auto"``, ...) may give, as for explicit counts.
MAX_RULE_BINS = 1 << 24


def check_rule_bins(values: np.ndarray, rule: str) -> None:
    """Raise ``ValueError`` if numpy's bin rule ``rule`` gives more than MAX_RULE_BINS bins
    for ``values`` (float64, finite): values spread over many orders of magnitude give a
    rule like "fd" a tiny width, and numpy would try to allocate terabytes of edges."""
    import importlib
    import math

    import numpy as np

    try:
        impl = importlib.import_module("numpy.lib._histograms_impl")  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        impl = importlib.import_module("numpy.lib.histograms")
    selector = getattr(impl, "_hist_bin_selectors", {}).get(rule)
    if selector is None or values.size == 0:
        return  # numpy names the unknown rule itself
    low, high = float(np.min(values)), float(np.max(values))
    if high <= low:
        return
    with np.errstate(all="ignore"):
        width = float(selector(values, (low, high)))
    if width > 0 and math.ceil((high - low) / width) > MAX_RULE_BINS:
        raise ValueError(
            f"histogram: bins={rule!r} gives {math.ceil((high - low) / width)} bins for this "
            f"data (at most {MAX_RULE_BINS}); pass a number of bins")


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None) -> bytes:
    """Bucket finite ``values`` (1-D, non-empty) as torch does (in float64); a HistogramProto.

    With explicit edges, at least one value must lie within them (checked by the callers).
    """
    import numpy as np

    values = values.astype(np.float64, copy=False)
    if isinstance(bins, np.ndarray):
        # np.histogram's own method for explicit edges (sort, then find each edge in the
        # sorted values; the last bucket is closed), without its range checks.
        ordered = np.sort(values)
        cum = np.searchsorted(ordered, bins, "left")
        cum[-1] = np.searchsorted(ordered, bins[-1], "right")
        counts, limits = np.diff(cum), bins
    else:
        if isinstance(bins, str):
            check_rule_bins(values, bins)
        counts, limits = np.histogram(values, bins=bins)
    # min() and max(), as torch takes them, except for a zero extreme: numpy picks 0.0 or
    # -0.0 by their positions in its vector loop (so torch's pick depends on the CPU);
    # here -0.0 is the smallest if one is among the values, +0.0 the largest if one is,
    # as compiled code finds them.
    low, high = signed_zero_extremes(values, float(values.min()), float(values.max()))
    return histogram_from_counts(
        counts, limits, max_bins, low, high, float(len(values)), float(values.sum()),
        float(values.dot(values)))


def histogram_from_counts(
    counts: np.ndarray, limits: np.ndarray, max_bins: int | None, low: float, high: float,
    num: float, vsum: float, sum_squares: float,
) -> bytes:
    """The HistogramProto of :func:`make_histogram` from its parts: ``counts`` of the
    buckets between ``limits`` (one more limit than counts, some count > 0), merged to at
    most ``max_bins`` and trimmed as torch does, and the values' statistics."""
    import numpy as np

    if max_bins is not None and len(counts) > max_bins:
        step = len(counts) // max_bins
        rem = len(counts) % step
        if rem:
            counts = np.pad(counts, (0, step - rem))
        counts = counts.reshape(-1, step).sum(axis=-1)
        merged = np.empty(counts.size + 1, limits.dtype)
        merged[:-1] = limits[:-1:step]
        merged[-1] = limits[-1]
        limits = merged
    # Keep the buckets holding values, plus one on the left: TensorBoard shows right edges
    # only, so that bucket's right edge is the leftmost limit.
    cum = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1 : end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start : end + 1]
    return histogram_proto_bytes(low, high, num, vsum, sum_squares, limits, counts)


def histogram_bins(
    name: str, values: Any, step: Step | None = None, bins: Any = "tensorflow",
    max_bins: int | None = None,
) -> bool:
    """Write a legacy histogram of ``values`` bucketed by ``bins`` (see the module docstring).

    Returns True if written, False if nothing is recording.
    """
    sink = resolve(name, step, _BINS_CALLER)
    if sink is None:
        return False
    return write_histogram_bins(sink, values, bins, max_bins)


_BINS_CALLER = Caller("histogram_bins", data="values")


def write_histogram_bins(
    sink: Sink, values: Any, bins: Any = "tensorflow", max_bins: int | None = None
) -> bool:
    """The core of :func:`histogram_bins`: write the histogram to ``sink``."""
    where, arg, tag, step_ = sink.caller.where, sink.caller.data, sink.tag, sink.step
    bins, max_bins = _check_bins(bins, max_bins, where)
    if type(values) is BucketTable:  # counted inside compiled code: its table, per run
        return _write_table(sink, values, bins, max_bins)
    # On the device: shape and dtype checked now, the values (copied asynchronously)
    # checked and bucketed on the writer thread once ready.
    kept = value_of(evaluate(values), defers_device_values(sink.writer),
                    lambda d: (_checked(d, bins, where, arg), True),
                    partial(_check_device, where, arg)).keep()
    wall_time = event_wall_time(sink)
    encoded_tag = tag.encode("utf-8")

    def make() -> bytes:
        histo = make_histogram(kept.read(), bins, max_bins)
        value = field_bytes(1, encoded_tag) + field_bytes(5, histo)
        s = step_.value() if isinstance(step_, DeviceStep) else step_
        return summary_event(wall_time, s, field_bytes(1, value))

    return sink.writer.events.append(  # type: ignore[union-attr]
        Deferred(make, 2048 + len(encoded_tag), f"the histogram {tag!r} at {step_name(step_)}")
    )


def _write_table(sink: Sink, data: BucketTable, edges: Any, max_bins: int | None) -> bool:
    # The table is small: its copy (a device array's, still computing) or a private copy of
    # a host one (a callback's buffer is reused once the callback returns) is taken now;
    # the writer thread checks the values (finite, some within the edges) and makes the
    # HistogramProto, as it would from the values.
    where, arg, tag, step_ = sink.caller.where, sink.caller.data, sink.tag, sink.step
    value = value_of(data.table, defers_device_values(sink.writer), _table_numbers,
                     _no_check)
    gated = isinstance(step_, GatedStep)
    kept = value.keep(start_copy=not gated)  # under a device condition: after it, if true
    finish = data.finish
    wall_time = event_wall_time(sink)
    encoded_tag = tag.encode("utf-8")

    def make() -> bytes:
        # The step first: under a false condition (NotRecorded) the table is all zeros.
        s = step_.value() if isinstance(step_, DeviceStep) else step_
        stats: EdgeStats = finish(kept.read())
        if stats.nonfinite:
            raise ValueError(f"{where}: {arg!r} must be finite (NaN or Inf found)")
        if not stats.counts.any():
            raise ValueError(f"{where}: no value of 'values' lies within the bin edges "
                             f"[{float(edges[0])!r}, {float(edges[-1])!r}]")
        histo = histogram_from_counts(stats.counts, edges, max_bins, stats.low, stats.high,
                                      stats.num, stats.total, stats.squares)
        value = field_bytes(1, encoded_tag) + field_bytes(5, histo)
        return summary_event(wall_time, s, field_bytes(1, value))

    return sink.writer.events.append(  # type: ignore[union-attr]
        Deferred(make, 2048 + len(encoded_tag) + kept.nbytes,
                 f"the histogram {tag!r} at {step_name(step_)}")
    )


def _table_numbers(table: Any) -> tuple[Any, bool]:
    import numpy as np

    detach = getattr(table, "detach", None)  # a CPU tensor from the torch graph
    return np.asarray(table if detach is None else detach()), False


def _no_check(shape: tuple[int, ...], dtype: Any) -> None:
    return None  # made by the compiled code from checked data


def _count_in_graph(
    arguments: dict[str, Any], gate: Any, framework: str
) -> tuple[str, Any, Any] | None:
    # add_histogram's reduction inside compiled code (ops._replay.InGraphReduction): the
    # bucket counts over fixed edges (bins="tensorflow", its default, or explicit edges)
    # and the statistics instead of the values. Numpy's bin rules and bin counts need the
    # values' range first, then numpy's own arithmetic on every value: those values leave
    # whole, and the writer thread buckets them.
    values: Any = arguments.get("values")
    bins = arguments.get("bins", "tensorflow")
    if framework == "torch":
        if not hasattr(values, "is_complex") or values.is_complex():
            return None  # not a tensor, or not real numbers: the method says so
        if gate is not None and values.device.type == "cpu":
            # As histogram(): under a record_if, host values leave whole and are counted
            # only in the runs whose condition holds (in the graph, every run would).
            return None
        if type(values.numel()) is not int or values.numel() == 0:
            return None  # a size dynamo made symbolic (no order to follow), or no values
        if isinstance(bins, list):
            bins = tuple(bins)
        if type(bins) is not str and type(bins) is not tuple:
            return None
        from summarylib.ops._torch_constants import constant_edges, constant_plan

        edges = constant_edges(bins)
        if edges is None:
            return None
        plan = constant_plan(values.numel())
        return "values", torch_edge_table(values, edges, plan), _TORCH_WRAP
    if not is_tracer(values) or not jax_edges_take(values.dtype):
        return None
    n = int(values.size)
    if n == 0 or n >= (1 << 31):
        return None
    found = fixed_edges(bins)
    if found is None:
        return None
    import jax
    import jax.numpy as jnp

    thresholds = edge_key_thresholds(found, str(values.dtype))
    m = len(found)
    if gate is None:
        words = jax_edge_words(values, thresholds)
    else:  # counted only in the runs whose condition holds
        words = jax.lax.cond(jnp.asarray(gate, jnp.bool_).reshape(()),
                             lambda x: jax_edge_words(x, thresholds),
                             lambda x: jnp.zeros(m + 6, jnp.int32), values)
    return "values", words, partial(BucketTable,
                                    finish=edge_stats_finish(str(values.dtype), n))


_TORCH_WRAP = partial(BucketTable, finish=torch_edge_stats)
IN_GRAPH["SummaryWriter.add_histogram"] = InGraphReduction(_count_in_graph, _TORCH_WRAP)


def histogram_bins_pb(
    tag: str, values: Any, bins: Any = "tensorflow", max_bins: int | None = None
) -> summary_pb2.Summary:
    """A ``Summary`` with one legacy histogram of ``values``; no writer needed."""
    from summarylib.proto import summary_pb2

    tag = check_tag(tag, "histogram_bins_pb", "tag")
    bins, max_bins = _check_bins(bins, max_bins, "histogram_bins_pb")
    flat = _check_values(values, "histogram_bins_pb")
    _check_inside(flat, bins, "histogram_bins_pb")
    return summary_pb2.Summary.FromString(
        _histo_summary(tag, make_histogram(flat, bins, max_bins))
    )
