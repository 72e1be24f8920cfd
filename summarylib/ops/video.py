"""Videos as animated GIFs, shown (and played) by TensorBoard's Images dashboard.

Data contract:
  * ``data``: one video ``[T, H, W, C]`` or a batch ``[N, T, H, W, C]``, with C in
    (1, 3, 4) (grey, RGB, RGBA) and N, T, H, W >= 1: a numpy array, a nested sequence,
    anything with ``__array__`` (a torch tensor: the framework is never imported), or a
    zero-argument callable returning one.
  * Pixel values: ``uint8`` (0..255) as is; floats (nominally [0, 1], bfloat16/float8 as
    their float32 values) as torch's ``add_video`` converts them: ``x * 255`` in float32,
    clipped to [0, 255], truncated (0.5 -> 127, 1.0 -> 255); NaN -> 0. Other dtypes (bool,
    other integers) are refused: torch would multiply them by 255 too.
  * A batch is tiled into one video as torch's ``_prepare_video`` does: N is padded with
    black videos to the next power of two P, laid out in ``rows = 2 ** (floor(log2 N) //
    2)`` rows of ``P // rows`` videos, row by row (N = 3: one row of 4; N = 5: 2 rows of
    4; N = 16: 4 x 4).
  * ``fps``: frames per second, a real number > 0. Each frame shows ``round(1000 / fps)``
    ms; GIF counts in hundredths of a second (pillow truncates to them), and browsers play
    delays under 20 ms slower, so rates above 50 fps are not kept.
  * Encoded with pillow as a GIF89a looping forever. Grey video is exact (a grey
    palette). Colour frames get an adaptive palette of up to 256 colours per frame: exact
    when a frame has at most 256 colours, approximated otherwise. Alpha is dropped.
    Consecutive equal frames are merged into one frame shown as long (the same animation).
    The tiled frames may be at most 65535 pixels wide and high (GIF's limit).
  * Stored as the image plugin's TF2 value (format.md §5.4), so TensorBoard shows the
    animation where it shows images: plugin ``"images"``, empty content, a rank-1
    ``DT_STRING`` tensor ``[str(width), str(height), gif]``.

Work split: :func:`video` validates, converts and tiles the frames into a fresh uint8
array on the caller's thread (the caller may reuse its buffer at once); the GIF encoding
runs on the writer's background thread.
"""

from __future__ import annotations

import io
import math
import numbers
from functools import partial
from typing import TYPE_CHECKING, Any

from PIL import Image

from summarylib.encoding._arrays import (
    as_array,
    evaluate,
    is_extended_float,
    widen_extended_float,
)
from summarylib.encoding._device_reductions import scaled_uint8
from summarylib.encoding._events import image_proto_bytes
from summarylib.encoding._pending import is_real_dtype
from summarylib.encoding._plugins import IMAGES
from summarylib.encoding._tensor import string_tensor_bytes
from summarylib.encoding._values import value_of
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._emit import IMAGE_FIELD, TENSOR_FIELD, emit_value_deferred
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "PLUGIN_NAME",
    "create_summary_metadata",
    "encode_gif",
    "prepare",
    "tile_videos",
    "video",
    "video_pb",
    "write_video",
]

PLUGIN_NAME = IMAGES.name
# Image.save loads Pillow's format plugins on first use; the GIF encoder runs on the
# writer thread, which must import nothing (a fork while it holds an import lock would
# hang the child), so they load now, with this module.
Image.preinit()
_GIF_MAX_SIDE = 65535


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` of a video value: the image plugin's (protobuf API)."""
    return IMAGES.create_summary_metadata(description)


def tile_videos(videos: np.ndarray) -> np.ndarray:
    """``[N, T, H, W, C]`` as one ``[T, rows*H, cols*W, C]`` video, tiled as torch tiles.

    N is padded with zeros to the next power of two; ``rows = 2 ** (floor(log2 N) // 2)``
    (from the unpadded N, as torch computes it). Returns a fresh C-contiguous array.
    """
    import numpy as np

    n, t, h, w, c = videos.shape
    padded = 1 << (n - 1).bit_length()  # the next power of two (n itself if one)
    if padded != n:
        pad = np.zeros((padded - n, t, h, w, c), videos.dtype)
        videos = np.concatenate((videos, pad))
    rows = 2 ** ((n.bit_length() - 1) // 2)
    cols = padded // rows
    grid = videos.reshape(rows, cols, t, h, w, c).transpose(2, 0, 3, 1, 4, 5)
    # np.array copies even when the grid is the input itself (N = 1).
    return np.array(grid.reshape(t, rows * h, cols * w, c), order="C")


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    import numpy as np

    if arr.dtype == np.uint8:
        return arr
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = arr.astype(np.float32) * np.float32(255)  # float32, as torch computes it
        np.clip(scaled, 0, 255, out=scaled)
        scaled[np.isnan(scaled)] = 0
        out: np.ndarray = scaled.astype(np.uint8)  # truncates, as torch does
    return out


def _check_fps(fps: Any, where: str) -> float:
    if isinstance(fps, bool) or not isinstance(fps, numbers.Real):
        raise TypeError(f"{where}: 'fps' must be a real number, got {type(fps).__name__} "
                        f"{fps!r:.60}")
    value = float(fps)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: 'fps' must be a finite number > 0, got {fps!r}")
    return value


def prepare(data: Any, where: str, arg: str = "data") -> np.ndarray:
    """Validate ``data`` (the caller's argument ``arg``); return it as fresh, tiled uint8
    frames ``[T, H, W, C]``."""
    import numpy as np

    arr = as_array(data, where, arg)
    if is_extended_float(arr.dtype):
        arr = widen_extended_float(arr)
    if arr.ndim not in (4, 5) or arr.shape[-1] not in (1, 3, 4) or 0 in arr.shape:
        raise ValueError(
            f"{where}: {arg!r} must have shape [T, H, W, C] or [N, T, H, W, C] with C in "
            f"(1, 3, 4) and N, T, H, W >= 1, got {arr.shape}")
    if arr.dtype != np.uint8 and arr.dtype.kind != "f":
        raise TypeError(f"{where}: {arg!r} must be uint8 (0..255) or floats in [0, 1], got "
                        f"dtype {arr.dtype}")
    frames = _to_uint8(arr)  # elementwise, so converting before tiling changes nothing
    # Tiling copies; a single video is copied here, so the caller may change its buffer.
    frames = tile_videos(frames) if frames.ndim == 5 else np.array(frames, order="C")
    _, h, w, _ = frames.shape
    if h > _GIF_MAX_SIDE or w > _GIF_MAX_SIDE:
        raise ValueError(f"{where}: {arg!r} makes frames of {w}x{h} pixels; a GIF may be at "
                         f"most {_GIF_MAX_SIDE} pixels wide and high")
    return frames


def encode_gif(frames: np.ndarray, fps: float) -> bytes:
    """uint8 ``[T, H, W, C]`` frames (C in 1, 3, 4) as a GIF looping forever."""
    if frames.shape[3] == 1:
        images = [Image.fromarray(f[:, :, 0], "L") for f in frames]
    else:
        images = [Image.fromarray(f[:, :, :3], "RGB") for f in frames]
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:],
                   duration=max(1, round(1000 / fps)), loop=0)
    return out.getvalue()


def _size_hint(frames: np.ndarray) -> int:
    # LZW codes of at most 12 bits per pixel index, plus a palette per frame.
    t, h, w, _ = frames.shape
    return int(t * (h * w * 3 // 2 + 800) + 64)


@traceable
def video(
    name: str,
    data: Any,
    step: Step | None = None,
    fps: float = 4,
    description: str | None = None,
) -> bool:
    """Write a video (or a batch, tiled) to the default writer, as an animated GIF.

    Args:
      name: the series name; the tag is ``name`` inside the current name scope.
      data: frames (see the module docstring), or a zero-argument callable
        returning them, called only when recording.
      step: an int64 step; defaults to the thread's default step.
      fps: frames per second, > 0.
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if the video was queued for writing, False if nothing is recording
      (then ``data`` is not even looked at).

    Raises:
      TypeError, ValueError: bad arguments, naming the argument (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        return False
    return write_video(sink, data, fps, description)


_CALLER = Caller("video")


def write_video(sink: Sink, data: Any, fps: float = 4, description: str | None = None,
                *, torch_form: bool = False) -> bool:
    """The core of :func:`video`: write the frames to ``sink`` (same contract).

    ``torch_form``: write the GIF as torch's ``SummaryWriter`` does, a legacy
    ``Summary.Value.image`` (``Summary.Image``: height, width, channels, GIF) without
    plugin metadata, instead of the ``images`` plugin's tensor.
    """
    where = sink.caller.where
    md = None if torch_form else IMAGES.metadata_bytes(description, where)
    rate = _check_fps(fps, where)
    arg = sink.caller.data
    value = value_of(evaluate(data), defers_device_values(sink.writer),
                     lambda d: (prepare(d, where, arg), True),
                     partial(_check_device, where, arg))
    # On the device: converted to uint8 there (a quarter of float32 frames cross); tiled,
    # checked for GIF's size and encoded on the writer thread.
    converted = value.map(scaled_uint8)
    kept = converted.keep()
    # Host frames (free to read) bound the GIF's size; a device copy, the memory held and
    # the frames' bytes.
    size = (_size_hint(kept.read()) if kept.at_hand
            else kept.nbytes + converted.nbytes + 800)

    def make_tensor() -> bytes:
        return _encoded(kept.read(), rate, torch_form)

    return emit_value_deferred(sink, make_tensor, md, size,
                               IMAGE_FIELD if torch_form else TENSOR_FIELD)


def _encoded(frames: np.ndarray, rate: float, torch_form: bool) -> bytes:
    # The value's bytes: a Summary.Image holding the GIF, or the plugin's tensor.
    _, h, w, c = frames.shape
    gif = encode_gif(frames, rate)
    if torch_form:
        return image_proto_bytes(h, w, c, gif)
    return string_tensor_bytes((3,), [str(w).encode(), str(h).encode(), gif])


def _check_device(where: str, arg: str, shape: tuple[int, ...], dtype: Any) -> None:
    # prepare()'s checks that need no numbers, for a device or traced array.
    if len(shape) not in (4, 5) or shape[-1] not in (1, 3, 4) or 0 in shape:
        raise ValueError(
            f"{where}: {arg!r} must have shape [T, H, W, C] or [N, T, H, W, C] with C in "
            f"(1, 3, 4) and N, T, H, W >= 1, got {shape}")
    if str(dtype) not in ("uint8", "torch.uint8") and not (
        is_real_dtype(dtype) and "float" in str(dtype)
    ):
        raise TypeError(f"{where}: {arg!r} must be uint8 (0..255) or floats in [0, 1], got "
                        f"dtype {dtype}")


def video_pb(
    tag: str, data: Any, fps: float = 4, description: str | None = None
) -> summary_pb2.Summary:
    """A ``Summary`` with one video (GIF) value, with metadata; no writer needed.

    Same data contract as :func:`video`; ``tag`` is used as is (no name scope).
    """
    from summarylib.proto import summary_pb2, types_pb2

    tag = check_tag(tag, "video_pb", "tag")
    IMAGES.metadata_bytes(description, "video_pb")  # the same checks as video()
    rate = _check_fps(fps, "video_pb")
    frames = prepare(data, "video_pb")
    _, h, w, _ = frames.shape
    summary = summary_pb2.Summary()
    v = summary.value.add()
    v.tag = tag
    v.tensor.dtype = types_pb2.DT_STRING
    v.tensor.tensor_shape.dim.add().size = 3
    v.tensor.string_val.extend([str(w).encode(), str(h).encode(), encode_gif(frames, rate)])
    v.metadata.CopyFrom(create_summary_metadata(description))
    return summary
