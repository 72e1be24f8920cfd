"""Videos as animated GIFs, shown (and played) by TensorBoard's Images dashboard.

Data contract:
  * ``data``: frames ``[T, H, W, C]`` with C in (1, 3, 4): uint8 (0..255) or other real
    dtypes converted as :func:`summarylib.image` converts pixels (floats in [0, 1]); or a
    zero-argument callable returning them. T, H, W >= 1. A batch of videos is tiled into
    one by the caller (``SummaryWriter.add_video`` does it as torch does).
  * ``fps``: frames per second, a number > 0 (each frame shows ``round(1000 / fps)`` ms;
    GIF times are in hundredths of a second, so players round further).
  * Encoded with pillow, looping forever. One channel is written as a grey palette (exact);
    colour frames get an adaptive palette of up to 256 colours per frame (GIF's limit, so
    colours may be approximated); alpha is dropped.
  * Stored as the image plugin's value (plugin ``"images"``): a DT_STRING tensor
    ``[width, height, gif]``, so TensorBoard shows the animation where it shows images.
    The encoding runs on the writer's thread; the frames are copied first.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

from summarylib.encoding.arrays import as_array
from summarylib.encoding.pixels import is_pixel_dtype, to_uint8
from summarylib.encoding.tensor import string_tensor_bytes
from summarylib.ops._emit import emit_value_deferred
from summarylib.ops._media import metadata_bytes, plugin_data_bytes
from summarylib.ops._resolve import check_tag, resolve
from summarylib.writer.context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = ["encode_gif", "video", "video_pb"]

_PLUGIN_DATA = plugin_data_bytes("images")


def _frames(data: Any, fps: Any, where: str) -> tuple[np.ndarray, float]:
    arr = as_array(data, where, "data")
    if arr.ndim != 4 or arr.shape[3] not in (1, 3, 4) or 0 in arr.shape[:3]:
        raise ValueError(
            f"{where}: 'data' must have shape [T, H, W, C] with C in (1, 3, 4) and T, H, W "
            f">= 1, got {arr.shape}")
    if not is_pixel_dtype(arr.dtype):
        raise TypeError(f"{where}: 'data' must hold real numbers, got dtype {arr.dtype}")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not (
        math.isfinite(fps) and fps > 0
    ):
        raise ValueError(f"{where}: 'fps' must be a number > 0, got {fps!r}")
    return to_uint8(arr), float(fps)


def encode_gif(frames: np.ndarray, fps: float) -> bytes:
    """uint8 ``[T, H, W, C]`` frames as a looping animated GIF."""
    from PIL import Image

    if frames.shape[3] == 1:
        images = [Image.fromarray(f[:, :, 0], "L") for f in frames]
    else:
        images = [Image.fromarray(f[:, :, :3], "RGB") for f in frames]
    out = io.BytesIO()
    duration = max(1, round(1000 / fps))
    if len(images) == 1:
        images[0].save(out, format="GIF", duration=duration, loop=0)
    else:
        images[0].save(out, format="GIF", save_all=True, append_images=images[1:],
                       duration=duration, loop=0, optimize=False, disposal=1)
    return out.getvalue()


def video(name: str, data: Any, step: Step | None = None, fps: float = 4,
          description: str | None = None) -> bool:
    """Write a video to the default writer (see the module docstring).

    Returns True if queued, False if nothing is recording. Raises TypeError/ValueError
    naming the bad argument (nothing written).
    """
    resolved = resolve(name, step, "video")
    if resolved is None:
        return False
    writer, tag, step_ = resolved
    md = metadata_bytes(_PLUGIN_DATA, description, "video")
    frames, rate = _frames(data, fps, "video")
    _, h, w, _ = frames.shape

    def make_tensor() -> bytes:
        return string_tensor_bytes((3,), [str(w).encode(), str(h).encode(),
                                          encode_gif(frames, rate)])

    return emit_value_deferred(writer, tag, step_, make_tensor, md, frames.nbytes // 2 + 64)


def video_pb(tag: str, data: Any, fps: float = 4,
             description: str | None = None) -> summary_pb2.Summary:
    """A ``Summary`` with one video (GIF) value, with metadata; no writer needed."""
    from summarylib.encoding.events import value_bytes
    from summarylib.encoding.wire import field_bytes
    from summarylib.proto import summary_pb2

    tag = check_tag(tag, "video_pb", "tag")
    md = metadata_bytes(_PLUGIN_DATA, description, "video_pb")
    frames, rate = _frames(data, fps, "video_pb")
    _, h, w, _ = frames.shape
    tensor = string_tensor_bytes((3,), [str(w).encode(), str(h).encode(),
                                        encode_gif(frames, rate)])
    return summary_pb2.Summary.FromString(field_bytes(1, value_bytes(tag, tensor, md)))
