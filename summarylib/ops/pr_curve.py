"""Precision-recall curves: a binary classifier's counts at evenly spaced thresholds.

Shown by TensorBoard's PR Curves dashboard. TensorFlow 2 has no
``tf.summary.pr_curve``; this follows TensorBoard's TF1-style ``pr_curve`` op
and its numpy ``pb`` helper (format.md §5.7).

Data contract of :func:`pr_curve`:
  * ``labels``: ground truth of any shape; bool, or numbers that are all 0 or
    1 (anything else raises ``ValueError``).
  * ``predictions``: real numbers of the same shape as ``labels``, clipped to
    [0, 1] as TensorBoard's op does. **NaN predictions are left out** (as
    TensorBoard's ``pb`` does); ±Inf clip to 1 and 0.
  * ``weights``: None (all 1), or real numbers broadcastable to ``labels``'s
    shape; used as given (negative or NaN weights give what the arithmetic
    gives).
  * ``num_thresholds`` = T, an int in [2, ``MAX_THRESHOLDS``] (2**24; default 201):
    threshold ``i`` is ``i / (T - 1)``. A prediction ``p`` falls in bucket
    ``floor(p * (T - 1))``, computed in ``p``'s float dtype (float32 stays
    float32, as in TensorBoard's ``pb``), so threshold ``i`` counts the
    predictions with bucket >= i.
  * Counts are weighted sums in float64: ``TP[i]``/``FP[i]`` are reverse
    cumulative sums of the per-bucket positive/negative weights,
    ``TN = FP[0] - FP``, ``FN = TP[0] - TP``, ``precision = TP / max(1e-7,
    TP + FP)``, ``recall = TP / max(1e-7, TP + FN)``: bit-for-bit what
    TensorBoard's ``pb`` computes.
  * Stored as a ``DT_FLOAT`` tensor ``[6, T]`` in ``tensor_content``, rows TP,
    FP, TN, FN, precision, recall; tag ``<name>/pr_curves``. Metadata:
    ``plugin_name="pr_curves"``, content ``PrCurvePluginData{version 0,
    num_thresholds}``, ``display_name`` = ``name`` (as TensorBoard writes
    it), description if given; on the first value of a tag per file.

Device arrays (JAX arrays, torch CUDA tensors) are not read on the caller's thread:
their shapes and dtypes are checked, unweighted counts are made on the device (only the
``2T`` bucket counts cross), and the
writer thread makes the curve once the device is done (weighted ones cross whole and
are counted there). The labels' values (all 0 or 1) are checked there too: a bad one
is reported like a failed write, naming the tag.

The counting is one vectorized pass (a bincount of bucket indices, then
reversed cumulative sums; no loop over thresholds). It runs on the caller's
thread, so the inputs need no copy: it is a few dozen microseconds of short
numpy calls that hold the GIL, which a writer thread could not overlap with
a Python caller anyway.
"""

from __future__ import annotations

import operator
from functools import partial
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array, evaluate, widen_extended_float
from summarylib.encoding._device_reductions import pr_bucket_table
from summarylib.encoding._pending import device_kind, host_dtype
from summarylib.encoding._plugins import PR_CURVES, metadata_bytes, plugin_data_bytes
from summarylib.encoding._tensor import DT_FLOAT, shape_bytes
from summarylib.encoding._values import Value, read_values, values_of_arrays
from summarylib.encoding._wire import field_bytes, field_varint, varint
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._emit import emit_value, emit_value_deferred
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "DEFAULT_NUM_THRESHOLDS",
    "MAX_THRESHOLDS",
    "PLUGIN_NAME",
    "create_summary_metadata",
    "pr_curve",
    "pr_curve_counts",
    "pr_curve_counts_pb",
    "pr_curve_pb",
    "pr_curve_raw",
    "pr_curve_raw_pb",
    "write_pr_curve",
    "write_pr_curve_counts",
]

PLUGIN_NAME = PR_CURVES.name
DEFAULT_NUM_THRESHOLDS = 201
_MINIMUM_COUNT = 1e-7  # TensorBoard's floor on the precision/recall denominators
#: The most thresholds a PR curve may have: its [6, T] float32 tensor (24 bytes a
#: threshold, 384 MiB here) stays well inside an event's 2 GiB, and the counting's
#: memory in hundreds of MiB. More would exhaust memory or make an event no reader can
#: parse.
MAX_THRESHOLDS = 1 << 24
# numpy.histogram (inside TensorBoard's pb) sums weights in blocks of this
# many values; summing in the same blocks gives the same float64 bits.
_BLOCK = 65536
_RAW_ARGS = (
    "true_positive_counts",
    "false_positive_counts",
    "true_negative_counts",
    "false_negative_counts",
    "precision",
    "recall",
)
_HEADERS: dict[int, bytes] = {}  # T -> serialized TensorProto up to tensor_content's bytes
_METADATA: dict[tuple[str, int, str | None], bytes] = {}  # small cache of metadata bytes


def plugin_content(num_thresholds: int) -> bytes:
    """Serialized ``PrCurvePluginData{version 0, num_thresholds}`` (version 0 is implicit)."""
    return field_varint(2, num_thresholds) if num_thresholds else b""


def _metadata(
    name: str,
    num_thresholds: int,
    description: str | None,
    where: str,
    display_name: str | None = None,
) -> bytes:
    # SummaryMetadata: plugin_data (1), display_name (2), summary_description (3).
    # The display name is ``name`` unless one is given, as TensorBoard's ops do.
    if display_name is None:
        display_name, arg = name, "name"
    else:
        arg = "display_name"
    if type(display_name) is not str or (
        description is not None and type(description) is not str
    ):
        return _build_metadata(display_name, arg, num_thresholds, description, where)
    key = (display_name, num_thresholds, description)
    md = _METADATA.get(key)
    if md is None:
        md = _build_metadata(display_name, arg, num_thresholds, description, where)
        if len(_METADATA) < 256:
            _METADATA[key] = md
    return md


def _build_metadata(
    display_name: str, arg: str, num_thresholds: int, description: str | None, where: str
) -> bytes:
    if not isinstance(display_name, str):
        raise TypeError(
            f"{where}: {arg!r} must be a str or None, got {type(display_name).__name__}"
        )
    try:
        display = display_name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: {arg!r} is not valid Unicode text: {e}") from None
    head = plugin_data_bytes(PLUGIN_NAME, plugin_content(num_thresholds))
    return metadata_bytes(head + (field_bytes(2, display) if display else b""), description,
                          where)


def create_summary_metadata(
    display_name: str, num_thresholds: int, description: str | None = None
) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorBoard writes for PR curves (protobuf API)."""
    from summarylib.proto import summary_pb2

    data = _build_metadata(display_name, "display_name", num_thresholds, description,
                           "create_summary_metadata")
    return summary_pb2.SummaryMetadata.FromString(data)


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------
def check_num_thresholds(num_thresholds: Any, where: str) -> int:
    """``num_thresholds`` as an int in [2, MAX_THRESHOLDS] (2**24; numpy integers accepted,
    bool refused)."""
    if type(num_thresholds) is not int:
        if isinstance(num_thresholds, bool):
            raise TypeError(f"{where}: 'num_thresholds' must be an int, got bool")
        try:
            num_thresholds = operator.index(num_thresholds)
        except TypeError:
            raise TypeError(
                f"{where}: 'num_thresholds' must be an int, got "
                f"{type(num_thresholds).__name__} {num_thresholds!r}"
            ) from None
    if num_thresholds < 2 or num_thresholds > MAX_THRESHOLDS:
        raise ValueError(
            f"{where}: 'num_thresholds' must be in [2, 2**24], got {num_thresholds}"
        )
    return int(num_thresholds)


def _real_array(data: Any, where: str, arg: str) -> np.ndarray:
    # ml_dtypes' floats (bfloat16 from JAX, float8) as their exact float32
    # values: in float8_e5m2 arithmetic p * (T - 1) would round to 2 mantissa bits.
    arr = widen_extended_float(as_array(data, where, arg))
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {arr.dtype}")
    return arr


def prepare(
    labels: Any, predictions: Any, weights: Any, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate; return flat bool labels, float predictions and weights (or None).

    The predictions are not clipped or rid of NaN yet: :func:`pr_data` does
    that, and only when some are outside [0, 1].
    """
    import numpy as np

    lab = widen_extended_float(as_array(labels, where, "labels"))  # JAX bfloat16 0/1 too
    if lab.dtype.kind != "b":
        if lab.dtype.kind not in "iuf":
            raise TypeError(
                f"{where}: 'labels' must be bool (or numbers 0 and 1), got dtype {lab.dtype}"
            )
        as_bool = lab != 0
        if not np.array_equal(lab, as_bool):
            raise ValueError(f"{where}: 'labels' must be bool, or numbers that are all 0 or 1")
        lab = as_bool
    pred = _real_array(predictions, where, "predictions")
    shape = lab.shape
    if pred.shape != shape:
        raise ValueError(
            f"{where}: 'labels' and 'predictions' must have the same shape, got "
            f"{shape} and {pred.shape}"
        )
    w = None
    if weights is not None:
        warr = _real_array(weights, where, "weights")
        try:
            w = np.broadcast_to(warr, shape).reshape(-1)
        except ValueError:
            raise ValueError(
                f"{where}: 'weights' of shape {warr.shape} does not broadcast to the shape "
                f"of 'labels' {shape}"
            ) from None
    if pred.dtype.kind != "f":
        pred = pred.astype(np.float64)
    return lab.reshape(-1), pred.reshape(-1), w


# ---------------------------------------------------------------------------
# The computation
# ---------------------------------------------------------------------------
def pr_data(
    labels: np.ndarray, predictions: np.ndarray, weights: np.ndarray | None, num_thresholds: int
) -> np.ndarray:
    """The float32 ``[6, T]`` tensor from :func:`prepare`'s output (see the module docstring)."""
    import numpy as np

    t = num_thresholds
    k = t - 1
    if k > 65504 and predictions.dtype == np.float16:
        predictions = predictions.astype(np.float32)  # T - 1 would be inf in float16
    # Clip to [0, 1] and leave NaN out, unless every prediction is in [0, 1]
    # already (two reductions, which NaN fails, cost less than the clip and
    # the NaN test).
    if not (
        predictions.size
        and np.minimum.reduce(predictions) >= 0
        and np.maximum.reduce(predictions) <= 1
    ):
        predictions, labels, weights = _clip(predictions, labels, weights)
    # p >= 0, so the float -> int cast (truncation) is the floor. k is a weak
    # Python int: the product is in p's dtype, as in TensorBoard's pb.
    index = (predictions * k).astype(np.intp)
    # buckets[i] = [negatives' weight, positives' weight] in bucket i.
    # k <= 2048 is exact in every float dtype (float16 has 11 significant bits).
    if weights is None and (k <= 2048 or float(predictions.dtype.type(k)) == k):
        # Every index is <= T - 1, so one bincount over 2 * index + label
        # counts both classes; sums of ones are exact in any order.
        index += index
        index += labels
        buckets = np.bincount(index, minlength=2 * t).reshape(t, 2)
    else:
        # Indices >= T (T - 1 rounded up in float32/16) are dropped, as
        # numpy.histogram's range does in TensorBoard's pb.
        f_labels = labels.astype(np.float64)
        w = 1.0 if weights is None else weights
        by_class = np.empty((2, t), dtype=np.float64)
        by_class[0] = _weighted_counts(index, (1.0 - f_labels) * w, t)
        by_class[1] = _weighted_counts(index, f_labels * w, t)
        buckets = by_class.T
    return pr_from_buckets(buckets)


def pr_from_buckets(buckets: np.ndarray) -> np.ndarray:
    """The float32 ``[6, T]`` tensor from ``buckets[i] = [negatives, positives]`` in bucket i
    (int64 counts, or float64 weighted sums)."""
    import numpy as np

    t = buckets.shape[0]
    out = np.empty((6, t), dtype=np.float64)
    # Rows 0 and 1, TP and FP: the positives' and the negatives' buckets
    # summed from the last threshold down (column j of the transposed sums is
    # [FP, TP] at threshold T - 1 - j). Integer counts become float64 on
    # assignment, exactly; weighted ones are float64 already.
    out[1::-1, ::-1] = np.add.accumulate(buckets[::-1], axis=0).T
    np.subtract(out[1::-1, :1], out[1::-1], out=out[2:4])  # TN = FP[0] - FP, FN = TP[0] - TP
    den = out[1:4:2] + out[0]  # [TP + FP, TP + FN]
    np.maximum(den, _MINIMUM_COUNT, out=den)
    np.divide(out[0], den, out=out[4:6])  # precision, recall
    return out.astype(np.float32)


def _clip(
    predictions: np.ndarray, labels: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    # Clip to [0, 1] keeping the dtype (the bounds are weak Python ints) and
    # NaN; two ufuncs cost less than np.clip's Python wrapper.
    import numpy as np

    pred = np.maximum(predictions, 0)
    np.minimum(pred, 1, out=pred)
    nan = np.isnan(pred)
    if nan.any():  # left out, as numpy.histogram does inside TensorBoard's pb
        keep = ~nan
        pred, labels = pred[keep], labels[keep]
        weights = None if weights is None else weights[keep]
    return pred, labels, weights


def _weighted_counts(index: np.ndarray, weights: np.ndarray, t: int) -> np.ndarray:
    import numpy as np

    n = index.size
    if n <= _BLOCK:
        return np.bincount(index, weights=weights, minlength=t)[:t]
    total = np.zeros(t, dtype=np.float64)
    for start in range(0, n, _BLOCK):
        end = start + _BLOCK
        total += np.bincount(index[start:end], weights=weights[start:end], minlength=t)[:t]
    return total


def _tensor(data: np.ndarray, float_val: bool = False) -> bytes:
    # ``float_val``: the values in TensorProto.float_val (packed), as torch writes them,
    # instead of tensor_content; the same bytes under another key.
    t = data.shape[1]
    if float_val:
        head = b"\x08" + varint(DT_FLOAT) + field_bytes(2, shape_bytes((6, t)))
        return head + b"\x2a" + varint(24 * t) + data.astype("<f4", copy=False).tobytes()
    header = _HEADERS.get(t)
    if header is None:
        # dtype, tensor_shape [6, T], then tensor_content's key and length.
        shape = field_bytes(2, shape_bytes((6, t)))
        header = b"\x08" + varint(DT_FLOAT) + shape + b"\x22" + varint(24 * t)
        if len(_HEADERS) < 64:
            _HEADERS[t] = header
    return header + data.astype("<f4", copy=False).tobytes()


def _raw_data(values: tuple[Any, ...], num_thresholds: Any, where: str,
              min_thresholds: int = 2) -> np.ndarray:
    import numpy as np

    arrays = [_real_array(v, where, arg) for v, arg in zip(values, _RAW_ARGS, strict=True)]
    for arr, arg in zip(arrays, _RAW_ARGS, strict=True):
        if arr.ndim != 1:
            raise ValueError(f"{where}: {arg!r} must have rank 1, got shape {arr.shape}")
    lengths = {arr.shape[0] for arr in arrays}
    if len(lengths) != 1:
        got = ", ".join(f"{arg}={arr.shape[0]}" for arr, arg in zip(arrays, _RAW_ARGS, strict=True))
        raise ValueError(f"{where}: the six vectors must have the same length, got {got}")
    (t,) = lengths
    if num_thresholds is not None:
        expected = check_num_thresholds(num_thresholds, where)
        if expected != t:
            raise ValueError(
                f"{where}: 'num_thresholds' is {expected} but the vectors have length {t}"
            )
    elif t < min_thresholds:
        raise ValueError(f"{where}: the vectors must have length >= {min_thresholds} "
                         f"(thresholds), got {t}")
    # float32 with numpy's cast: values beyond float32's range become +-inf.
    with np.errstate(over="ignore"):
        return np.stack(arrays).astype(np.float32)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------
@traceable
def pr_curve(
    name: str,
    labels: Any,
    predictions: Any,
    step: Step | None = None,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    weights: Any = None,
    description: str | None = None,
    display_name: str | None = None,
) -> bool:
    """Write a PR curve of ``predictions`` against ``labels`` to the default writer.

    Args:
      name: the series name; the tag is ``<name>/pr_curves`` inside the
        current name scope, the display name is ``name``.
      labels: bool (or 0/1) ground truth, any shape.
      predictions: real numbers of the same shape, clipped to [0, 1].
      step: an int64 step; defaults to the thread's default step.
      num_thresholds: T >= 2 evenly spaced thresholds in [0, 1]; default 201.
      weights: None, or real numbers broadcastable to ``labels``.
      description: Markdown shown in TensorBoard (kept from the first event).
      display_name: the name TensorBoard shows for the curve; default ``name``.

    Any array argument may be a zero-argument callable, called only when
    recording. See the module docstring for the exact arithmetic.

    Returns:
      True if written, False if nothing is recording (then the arrays are not
      even looked at).

    Raises:
      TypeError, ValueError: bad arguments (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        return False
    if type(name) is not str:  # resolve() checked it; a str subclass becomes a str
        name = check_tag(name, "pr_curve")
    return write_pr_curve(sink, name, labels, predictions, num_thresholds, weights,
                          description, display_name)


_CALLER = Caller("pr_curve")
_RAW_CALLER = Caller("pr_curve_raw")
_COUNTS_CALLER = Caller("pr_curve_counts")


def write_pr_curve(
    sink: Sink,
    name: str,
    labels: Any,
    predictions: Any,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    weights: Any = None,
    description: str | None = None,
    display_name: str | None = None,
) -> bool:
    """The core of :func:`pr_curve`: write to ``sink`` under ``<sink.tag>/pr_curves``;
    ``name`` is the default display name."""
    where = sink.caller.where
    t = check_num_thresholds(num_thresholds, where)
    md = _metadata(name, t, description, where, display_name)
    defer = defers_device_values(sink.writer)
    # Weights may be None (unweighted); labels and predictions may not (prepare() says so).
    values = values_of_arrays(((evaluate(labels), "labels"),
                               (evaluate(predictions), "predictions"),
                               (evaluate(weights), "weights")), defer, where, ("weights",))
    if any(v is not None and not v.at_hand for v in values):
        return _pr_curve_deferred(sink._replace(tag=sink.tag + "/pr_curves"), values, t, md)
    labels_, predictions_, weights_ = read_values(values)
    lab, pred, w = prepare(labels_, predictions_, weights_, where)
    return emit_value(sink, _tensor(pr_data(lab, pred, w, t)), md, sink.tag + "/pr_curves")


def pr_curve_raw(
    name: str,
    true_positive_counts: Any,
    false_positive_counts: Any,
    true_negative_counts: Any,
    false_negative_counts: Any,
    precision: Any,
    recall: Any,
    step: Step | None = None,
    num_thresholds: int | None = None,
    description: str | None = None,
    display_name: str | None = None,
) -> bool:
    """Write a PR curve from precomputed counts (TensorBoard's ``raw_data_op``).

    The six arguments are rank-1 real vectors of one length T >= 2 (index
    ``i`` is threshold ``i / (T - 1)``), stored as float32 rows in this order.
    ``num_thresholds`` defaults to T; if given it must equal T. Tag, metadata
    and ``display_name`` as :func:`pr_curve`.

    Returns:
      True if written, False if nothing is recording.

    Raises:
      TypeError, ValueError: bad arguments (nothing is written).
    """
    sink = resolve(name, step, _RAW_CALLER)
    if sink is None:
        return False
    name = check_tag(name, "pr_curve_raw")
    values = (
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
    )
    data = _raw_data(values, num_thresholds, "pr_curve_raw")
    md = _metadata(name, data.shape[1], description, "pr_curve_raw", display_name)
    return emit_value(sink, _tensor(data), md, sink.tag + "/pr_curves")


def pr_curve_counts(
    name: str,
    true_positive_counts: Any,
    false_positive_counts: Any,
    true_negative_counts: Any,
    false_negative_counts: Any,
    precision: Any,
    recall: Any,
    step: Step | None = None,
) -> bool:
    """Write precomputed counts in the form torch and tensorboardX write them.

    As :func:`pr_curve_raw`, but under the tag ``name`` itself (inside the name scope, no
    ``/pr_curves`` suffix) and with no display name in the metadata: what
    ``SummaryWriter.add_pr_curve`` writes, so that its tags are torch's.
    """
    sink = resolve(name, step, _COUNTS_CALLER)
    if sink is None:
        return False
    return write_pr_curve_counts(sink, true_positive_counts, false_positive_counts,
                                 true_negative_counts, false_negative_counts, precision, recall)


def write_pr_curve_counts(
    sink: Sink,
    true_positive_counts: Any,
    false_positive_counts: Any,
    true_negative_counts: Any,
    false_negative_counts: Any,
    precision: Any,
    recall: Any,
    *,
    torch_form: int | None = None,
) -> bool:
    """The core of :func:`pr_curve_counts`: write the counts to ``sink`` under its tag.

    ``torch_form``: write as torch's ``SummaryWriter`` does, with this ``num_thresholds``
    in the plugin metadata whatever the vectors' length, the values in ``float_val``,
    and one-threshold curves accepted (as tensorboardX writes them).
    """
    values = (true_positive_counts, false_positive_counts, true_negative_counts,
              false_negative_counts, precision, recall)
    data = _raw_data(values, None, sink.caller.where, 2 if torch_form is None else 1)
    thresholds = data.shape[1] if torch_form is None else torch_form
    md = plugin_data_bytes(PLUGIN_NAME, plugin_content(thresholds))
    return emit_value(sink, _tensor(data, torch_form is not None), md)


def pr_curve_counts_pb(
    tag: str,
    true_positive_counts: Any,
    false_positive_counts: Any,
    true_negative_counts: Any,
    false_negative_counts: Any,
    precision: Any,
    recall: Any,
) -> summary_pb2.Summary:
    """A ``Summary`` of :func:`pr_curve_counts`'s value; no writer needed."""
    from summarylib.encoding._events import value_bytes
    from summarylib.proto import summary_pb2

    tag = check_tag(tag, "pr_curve_counts_pb", "tag")
    values = (true_positive_counts, false_positive_counts, true_negative_counts,
              false_negative_counts, precision, recall)
    data = _raw_data(values, None, "pr_curve_counts_pb")
    md = plugin_data_bytes(PLUGIN_NAME, plugin_content(data.shape[1]))
    return summary_pb2.Summary.FromString(field_bytes(1, value_bytes(tag, _tensor(data), md)))


def _summary(
    name: str,
    data: np.ndarray,
    num_thresholds: int,
    description: str | None,
    display_name: str | None,
) -> summary_pb2.Summary:
    from summarylib.proto import summary_pb2, types_pb2

    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = name + "/pr_curves"
    v.tensor.dtype = types_pb2.DT_FLOAT
    v.tensor.tensor_shape.dim.add().size = 6
    v.tensor.tensor_shape.dim.add().size = data.shape[1]
    v.tensor.tensor_content = data.astype("<f4", copy=False).tobytes()
    display = name if display_name is None else display_name
    v.metadata.CopyFrom(create_summary_metadata(display, num_thresholds, description))
    return summary


def pr_curve_pb(
    name: str,
    labels: Any,
    predictions: Any,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    weights: Any = None,
    description: str | None = None,
    display_name: str | None = None,
) -> summary_pb2.Summary:
    """A ``Summary`` with one PR curve value; no writer needed.

    Same data contract as :func:`pr_curve`. Like TensorBoard's ``pb``, the tag
    is ``<name>/pr_curves`` (no name scope) and the display name
    ``display_name``, by default ``name``.
    """
    name = check_tag(name, "pr_curve_pb")
    t = check_num_thresholds(num_thresholds, "pr_curve_pb")
    _metadata(name, t, description, "pr_curve_pb", display_name)  # pr_curve()'s checks
    lab, pred, w = prepare(labels, predictions, weights, "pr_curve_pb")
    return _summary(name, pr_data(lab, pred, w, t), t, description, display_name)


def pr_curve_raw_pb(
    name: str,
    true_positive_counts: Any,
    false_positive_counts: Any,
    true_negative_counts: Any,
    false_negative_counts: Any,
    precision: Any,
    recall: Any,
    num_thresholds: int | None = None,
    description: str | None = None,
    display_name: str | None = None,
) -> summary_pb2.Summary:
    """A ``Summary`` from precomputed counts, as TensorBoard's ``raw_data_pb``; no writer.

    Same contract as :func:`pr_curve_raw` (``display_name`` included); the tag
    is ``<name>/pr_curves``.
    """
    name = check_tag(name, "pr_curve_raw_pb")
    values = (
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
    )
    data = _raw_data(values, num_thresholds, "pr_curve_raw_pb")
    _metadata(name, data.shape[1], description, "pr_curve_raw_pb", display_name)
    return _summary(name, data, data.shape[1], description, display_name)


def _pr_curve_deferred(
    sink: Sink, values: list[Value[np.ndarray] | None], t: int, md: bytes,
) -> bool:
    """:func:`summarylib.pr_curve` with device labels, predictions or weights, written
    under the sink's tag.

    Unweighted counts of two device arrays are made on the device
    (:func:`~summarylib.encoding._device_reductions.pr_bucket_table`): only the per-bucket
    counts cross. Otherwise the arrays cross whole and are counted on the writer thread.
    """
    import numpy as np

    where = sink.caller.where
    labels, predictions, weights = values
    assert labels is not None and predictions is not None
    check_pr_shapes(labels.stand_in(), predictions.stand_in(),
                    None if weights is None else weights.stand_in(), where)

    def finish(table: np.ndarray) -> np.ndarray:
        counts = table.astype(np.int64)
        if counts[-1]:
            raise ValueError(f"{where}: 'labels' must be bool, or numbers that are all 0 or 1")
        return pr_from_buckets(counts[:-1].reshape(t, 2))

    table = None if weights is not None else labels.reduce(
        partial(pr_bucket_table, t=t), finish, predictions)
    if table is not None:
        reduced = table

        def make_from_table() -> bytes:
            return _tensor(reduced.read())

        return emit_value_deferred(sink, make_from_table, md, 16 * t + 64)
    # Device arguments' copies start; host ones are copied (the caller may change them).
    kept = [None if v is None else v.keep() for v in values]

    def make_tensor() -> bytes:
        labels_, predictions_, weights_ = read_values(kept)
        lab, pred, w = prepare(labels_, predictions_, weights_, where)
        return _tensor(pr_data(lab, pred, w, t))

    nbytes = sum(0 if k is None else k.nbytes for k in kept)
    return emit_value_deferred(sink, make_tensor, md, nbytes + 24 * t + 64)


def check_pr_shapes(labels: Any, predictions: Any, weights: Any, where: str) -> None:
    """:func:`prepare`'s checks that need no value (dtypes, equal shapes, weights that
    broadcast), on device arrays or host ones."""
    import numpy as np

    from summarylib.encoding._arrays import as_array

    def meta(value: Any, arg: str) -> tuple[tuple[int, ...], np.dtype]:
        if device_kind(value) is not None:
            return tuple(int(d) for d in value.shape), host_dtype(value.dtype)
        arr = as_array(value, where, arg)
        return arr.shape, arr.dtype

    lshape, ldtype = meta(labels, "labels")
    if ldtype.kind not in "biuf":
        raise TypeError(
            f"{where}: 'labels' must be bool (or numbers 0 and 1), got dtype {ldtype}")
    pshape, pdtype = meta(predictions, "predictions")
    if pdtype.kind not in "biuf":
        raise TypeError(f"{where}: 'predictions' must hold real numbers, got dtype {pdtype}")
    if pshape != lshape:
        raise ValueError(
            f"{where}: 'labels' and 'predictions' must have the same shape, got "
            f"{lshape} and {pshape}")
    if weights is not None:
        wshape, wdtype = meta(weights, "weights")
        if wdtype.kind not in "biuf":
            raise TypeError(f"{where}: 'weights' must hold real numbers, got dtype {wdtype}")
        try:
            if np.broadcast_shapes(wshape, lshape) != lshape:
                raise ValueError  # broadcast both ways, not to the labels' shape
        except ValueError:
            raise ValueError(
                f"{where}: 'weights' of shape {wshape} does not broadcast to the shape "
                f"of 'labels' {lshape}") from None
