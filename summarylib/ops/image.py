"""Image summaries: batches of pictures per step, shown by TensorBoard's Images dashboard.

Data contract:
  * ``data`` is a batch of images: a numpy array, a (nested) Python
    sequence, or a framework tensor (through ``__array__``; the framework is
    never imported), or a zero-argument callable returning one.
  * Its layout is given by ``dataformats``: ``"NHWC"`` (default, as
    ``tf.summary.image``), ``"NCHW"`` (PyTorch batches), ``"HWC"``, ``"CHW"``
    (one image) or ``"HW"`` (one grayscale image); case-insensitive. After
    that, the batch is ``[k, h, w, c]`` with ``c`` in 1 (grayscale), 2
    (grayscale + alpha), 3 (RGB), 4 (RGBA), and ``h, w >= 1``. ``k`` may be 0.
    Without ``dataformats``, a batch that reads as channels-first (``h`` of 1, 3
    or 4 pixels, a channel count, and ``w`` at least 4 times that:
    ``[4, 3, 32, 3]``) is written as NHWC with a warning naming ``dataformats``
    (once per tag); passing ``dataformats="NHWC"`` says it is meant.
  * Pixel values: any real dtype, converted to uint8 as
    ``tf.image.convert_image_dtype(..., saturate=True)`` does: uint8 as is,
    floats in [0, 1] as ``trunc(clip(x * 255.5, 0, 255))`` (computed in the
    input's float type, as TensorFlow does), other integer types rescaled
    from their full range, bool as 0/255, NaN as 0. bfloat16 and float8 (ml_dtypes, JAX,
    torch) convert as their exact float32 values: 0.5 gives 127 from every
    framework. (TensorFlow would multiply by 255.5 rounded to bfloat16, i.e.
    256, giving 128; torch's bfloat16 reaches us only as float32, so
    matching that for JAX alone would make one picture differ by framework.)
    Float data with values above 2 (almost surely 0..255 data, which turns
    white) is written as asked with a warning, once per tag (the first 8
    calls of a tag are checked).
  * Only the first ``max_outputs`` images are converted and encoded.
  * Stored as TensorFlow 2 does (format.md §5.4): a rank-1 ``DT_STRING``
    tensor ``[str(w), str(h), png_0, png_1, ...]``, width first (taken from
    the whole batch), then one PNG per kept image, in ``string_val``.
    Metadata: ``plugin_name="images"``, empty content (``ImagePluginData``
    version 0), ``data_class`` unset; on the first value of a tag per file.

Device arrays (JAX arrays, torch CUDA tensors, CuPy arrays) are not read on the
caller's thread: their shape and dtype are checked, the kept images are converted
to uint8 on the device (the same rule) and copied asynchronously, and the writer
thread encodes them once the device is done.

Work split: :func:`image` validates the input, converts the kept images to a
fresh uint8 copy on the caller's thread (so the caller may reuse its buffer at
once), and leaves the PNG encoding to the writer's background thread.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import (
    as_array,
    evaluate,
    is_extended_float,
    widen_extended_float,
)
from summarylib.encoding._device_reductions import images_uint8
from summarylib.encoding._events import image_proto_bytes
from summarylib.encoding._pending import is_real_dtype
from summarylib.encoding._pixels import (
    DATAFORMATS,
    SUSPECT_FLOAT_PIXEL,
    float_pixel_max,
    is_pixel_dtype,
    to_nhwc,
    to_uint8,
)
from summarylib.encoding._png import encode_png
from summarylib.encoding._tensor import string_tensor_bytes
from summarylib.encoding._values import value_of
from summarylib.errors import warn_user
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._emit import IMAGE_FIELD, TENSOR_FIELD, emit_value_deferred
from summarylib.ops._media import check_max_outputs, metadata_bytes, plugin_data_bytes
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "PLUGIN_NAME",
    "create_summary_metadata",
    "image",
    "image_pb",
    "warn_float_range",
    "write_image",
]

PLUGIN_NAME = "images"
_PLUGIN_DATA = plugin_data_bytes(PLUGIN_NAME)  # content: ImagePluginData{version 0} is empty
# (what, tag) of the warnings given: each is given once per tag in a process, so a loop
# that logs the same mistake every step is told once.
_warned: set[tuple[str, str]] = set()
# Float data is checked on the first calls of each tag only: a mistake such as 0..255
# data shows from the first step, and a loop then pays a dict look-up per call, not a
# look at its pixels.
_FLOAT_CHECKS_PER_TAG = 8
_float_checks: dict[str, int] = {}


def warn_float_range(arr: np.ndarray, tag: str, where: str) -> None:
    """Warn (once per tag) if float pixel data ``arr`` holds values above 2.

    Floats are read as 0..1, so such data (0..255 values in a float array, or
    normalized data) is clipped to white. The first 8 calls of each tag are checked.
    The warning points at the user's line.
    """
    done = _float_checks.get(tag, 0)
    if done >= _FLOAT_CHECKS_PER_TAG or (
            arr.dtype.kind != "f" and not is_extended_float(arr.dtype)):
        return
    _float_checks[tag] = done + 1
    top = float_pixel_max(arr)
    if top > SUSPECT_FLOAT_PIXEL:
        _float_checks[tag] = _FLOAT_CHECKS_PER_TAG
        warn_user(
            f"{where}: float pixel values are read as 0..1, but {tag!r} has values up to "
            f"{top:g}: they are clipped to white. Divide 0..255 data by 255 or pass it as "
            "uint8. (Warned once per tag.)"
        )


def _warn_channels_first(shape: tuple[int, ...], tag: str, where: str) -> None:
    if ("layout", tag) in _warned:
        return
    _warned.add(("layout", tag))
    _, h, w, c = shape
    warn_user(
        f"{where}: {tag!r} has shape {shape}, read as [k, h, w, c]: images {h} pixels high "
        f"and {w} wide with {c} channels. If it is channels-first, pass "
        "dataformats='NCHW'; pass dataformats='NHWC' to say the layout is meant. "
        "(Warned once per tag.)"
    )


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` TensorFlow 2 writes for images (protobuf API)."""
    from summarylib.proto import plugin_data_pb2, summary_pb2

    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = PLUGIN_NAME
    md.plugin_data.content = plugin_data_pb2.ImagePluginData(version=0).SerializeToString()
    if description:
        md.summary_description = description
    return md


def _check_dataformats(dataformats: Any, where: str) -> str:
    if not isinstance(dataformats, str):
        raise TypeError(f"{where}: 'dataformats' must be a str, got {type(dataformats).__name__}")
    fmt = dataformats.upper()
    if fmt not in DATAFORMATS:
        raise ValueError(
            f"{where}: 'dataformats' must be one of {', '.join(DATAFORMATS)}, got {dataformats!r}"
        )
    return fmt


def prepare(
    data: Any, max_outputs: int, dataformats: str | None, where: str, tag: str,
    arg: str = "data",
) -> tuple[np.ndarray, int, int]:
    """Validate ``data`` (the caller's argument ``arg``); return the kept images as fresh
    uint8 ``[n, h, w, c]``, w, h.

    ``tag`` names the series in the warnings about data that is almost surely a mistake.
    """
    fmt = "NHWC" if dataformats is None else _check_dataformats(dataformats, where)
    arr = as_array(data, where, arg)
    extended = is_extended_float(arr.dtype)
    if not extended and not is_pixel_dtype(arr.dtype):
        raise TypeError(
            f"{where}: {arg!r} must hold real numbers (pixel values), got dtype {arr.dtype} "
            f"(shape {arr.shape})"
        )
    _check_shape(arr.shape, fmt, where, arg)
    batch = to_nhwc(arr, fmt)
    _, h, w, _ = batch.shape
    if h == 0 or w == 0:
        raise ValueError(
            f"{where}: {arg!r} must have images of at least 1x1 pixels, got shape {arr.shape}"
        )
    if dataformats is None and h in (1, 3, 4) and w >= 4 * h:
        _warn_channels_first(arr.shape, tag, where)
    kept = batch[:max_outputs]
    warn_float_range(kept, tag, where)
    if extended:
        # ml_dtypes' floats (bfloat16 from JAX, float8) convert as their exact
        # float32 values, like torch's bfloat16 (which reaches us as float32),
        # so one picture gives the same pixels from any framework.
        kept = widen_extended_float(kept)
    return to_uint8(kept), w, h


def _check_shape(shape: tuple[int, ...], fmt: str, where: str, arg: str) -> None:
    axes, layout = DATAFORMATS[fmt]
    c_axis = axes[3]  # where the channels are in the input, None for "HW"
    rank = sum(a is not None for a in axes)
    if len(shape) != rank or (c_axis is not None and shape[c_axis] not in (1, 2, 3, 4)):
        channels = "" if c_axis is None else " with c in (1, 2, 3, 4)"
        message = (f"{where}: {arg!r} with dataformats={fmt!r} must have shape "
                   f"{layout}{channels}, got {shape}")
        for other, (other_axes, _) in DATAFORMATS.items():  # a layout the shape fits
            c = other_axes[3]
            if other != fmt and sum(a is not None for a in other_axes) == len(shape) and (
                c is not None and shape[c] in (1, 2, 3, 4)
            ):
                message += f"; pass dataformats={other!r} if that is its layout"
                break
        raise ValueError(message)
    h_axis, w_axis = axes[1], axes[2]
    if shape[h_axis] == 0 or shape[w_axis] == 0:  # type: ignore[index]
        raise ValueError(
            f"{where}: {arg!r} must have images of at least 1x1 pixels, got shape {shape}"
        )


def _tensor_values(pixels: np.ndarray, w: int, h: int) -> list[bytes]:
    return [str(w).encode(), str(h).encode(), *map(encode_png, pixels)]


@traceable
def image(
    name: str,
    data: Any,
    step: Step | None = None,
    max_outputs: int = 3,
    description: str | None = None,
    *,
    dataformats: str | None = None,
) -> bool:
    """Write a batch of images to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current name scope.
      data: images (see the module docstring for shapes and dtypes), or a
        zero-argument callable returning them, called only when recording.
      step: an int64 step; defaults to the thread's default step.
      max_outputs: keep at most this many images (the first ones); >= 0.
      description: Markdown shown in TensorBoard (kept from the first event).
      dataformats: the layout of ``data``: "NHWC", "NCHW", "HWC", "CHW", "HW";
        None (default) is "NHWC", with a warning for data that reads as channels-first.

    Returns:
      True if the images were queued for writing, False if nothing is
      recording (then ``data`` is not even looked at).

    Raises:
      TypeError, ValueError: bad arguments (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        return False
    return write_image(sink, data, max_outputs, description, dataformats=dataformats)


_CALLER = Caller("image")


def write_image(
    sink: Sink,
    data: Any,
    max_outputs: int = 3,
    description: str | None = None,
    *,
    dataformats: str | None = None,
    torch_form: bool = False,
    own_data: bool = False,
) -> bool:
    """The core of :func:`image`: write the images to ``sink`` (same contract).

    ``own_data``: ``data`` is a device array the library made (a conversion of the
    caller's), which no one else holds.

    ``torch_form``: write the first image as torch's ``SummaryWriter`` does, a legacy
    ``Summary.Value.image`` (``Summary.Image``: height, width, channels, PNG) without
    plugin metadata, instead of TensorFlow 2's tensor of the ``images`` plugin.
    """
    where, arg = sink.caller.where, sink.caller.data
    md = None if torch_form else metadata_bytes(_PLUGIN_DATA, description, where)
    keep = 1 if torch_form else check_max_outputs(max_outputs, where)
    tag = sink.tag
    value = value_of(evaluate(data), defers_device_values(sink.writer),
                     lambda d: (prepare(d, keep, dataformats, where, tag, arg), True),
                     partial(_check_device, where, arg, dataformats), own_data)
    if not value.at_hand:
        # On the device: the kept images only, converted to uint8 there (the host's rule),
        # so a quarter of a float32 batch crosses; the writer thread encodes them. The
        # format is checked, so the host reader takes it as given (no channels-first
        # warning: that needs no device either way).
        fmt = _check_dataformats("NHWC" if dataformats is None else dataformats, where)
        batch_first = DATAFORMATS[fmt][0][0] is not None and keep < value.shape[0]
        value = value.map(lambda d: images_uint8(d[:keep] if batch_first else d),
                          lambda d: (prepare(d, keep, fmt, where, tag, arg), True))
    kept = value.keep()
    n = len(kept.read()[0]) if kept.at_hand else keep  # host pixels: free to read

    def make_tensor() -> bytes:
        pixels, w, h = kept.read()
        return _encoded(pixels, w, h, torch_form)

    # Noise-like images barely compress: the raw size bounds the PNG size.
    return emit_value_deferred(sink, make_tensor, md, kept.nbytes + 64 * n + 32,
                               IMAGE_FIELD if torch_form else TENSOR_FIELD)


def _encoded(pixels: np.ndarray, w: int, h: int, torch_form: bool) -> bytes:
    # The value's bytes: a Summary.Image of the first image, or the plugin's tensor.
    if torch_form:
        return image_proto_bytes(h, w, pixels.shape[3], encode_png(pixels[0]))
    return string_tensor_bytes((2 + len(pixels),), _tensor_values(pixels, w, h))


def _check_device(where: str, arg: str, dataformats: Any, shape: tuple[int, ...],
                  dtype: Any) -> None:
    # What needs no numbers of a device or traced array: real numbers, the format's shape.
    fmt = _check_dataformats("NHWC" if dataformats is None else dataformats, where)
    if not is_real_dtype(dtype):
        raise TypeError(
            f"{where}: {arg!r} must hold real numbers (pixel values), got dtype {dtype} "
            f"(shape {shape})"
        )
    _check_shape(shape, fmt, where, arg)


def image_pb(
    tag: str,
    data: Any,
    max_outputs: int = 3,
    description: str | None = None,
    *,
    dataformats: str | None = None,
) -> summary_pb2.Summary:
    """A ``Summary`` with one image value, with metadata; no writer needed.

    Same data contract as :func:`image`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "image_pb", "tag")
    metadata_bytes(_PLUGIN_DATA, description, "image_pb")  # the same checks as image()
    md = create_summary_metadata(description)
    keep = check_max_outputs(max_outputs, "image_pb")
    pixels, w, h = prepare(data, keep, dataformats, "image_pb", tag)
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_STRING
    v.tensor.tensor_shape.dim.add().size = 2 + len(pixels)
    v.tensor.string_val.extend(_tensor_values(pixels, w, h))
    v.metadata.CopyFrom(md)
    return summary
