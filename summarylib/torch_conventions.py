"""The input conventions of ``torch.utils.tensorboard.SummaryWriter``, as pure numpy functions.

:class:`summarylib.SummaryWriter`'s ``add_*`` methods map torch's arguments through these
before calling the op of each kind, so that the pixels, buckets and counts written are the
ones torch writes for the same input:

  * images: ``dataformats`` ("CHW", "HWC", "HW", "NCHW", ...) to HWC; one channel repeated
    to three; a batch tiled into one grid of up to 8 columns; floats scaled by 255 and
    uint8 taken as is, then clipped to [0, 255] and truncated to uint8;
  * videos: ``[N, T, C, H, W]``, a batch tiled into a grid of a power-of-two size;
  * precision-recall counts: torch's bucketing of predictions into ``num_thresholds``;
  * boxes drawn in red, two pixels wide, with labels, by pillow.

Every function raises ``ValueError``/``TypeError`` naming ``where`` and the argument.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array
from summarylib.encoding._pending import device_kind, is_real_dtype

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "audio_on_device",
    "boxed_image",
    "default_log_dir",
    "image_hwc",
    "make_grid",
    "pr_curve_data",
    "reorder_on_device",
    "torch_step",
    "video_frames",
]


def default_log_dir(comment: str = "") -> str:
    """``runs/<Mon DD_HH-MM-SS>_<host><comment>``, torch's default log directory."""
    now = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", now + "_" + socket.gethostname() + comment)


def torch_step(step: Any, where: str) -> Any:
    """torch's ``global_step``: a real number that is not an integer is written as
    ``int(step)`` (truncated toward zero: 2.5 is step 2, -2.5 step -2), as torch's event
    writer does. Integers (and objects with ``__index__``) and anything that is not a real
    number are returned unchanged, for the step check to accept or name in its error.

    Raises:
      ValueError: ``step`` is a NaN or infinite float.
    """
    import math
    import operator

    if isinstance(step, (bool, str, bytes)) or not hasattr(step, "__float__"):
        return step
    if device_kind(step) is not None:
        return step  # the op reads it off the caller's thread (its dtype is checked now)
    try:
        operator.index(step)
        return step  # an integer already
    except TypeError:
        pass
    value = float(step)
    if not math.isfinite(value):
        raise ValueError(f"{where}: 'global_step' must be a finite number, got {step!r}")
    return int(value)


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    import numpy as np

    # torch: uint8 kept, anything else scaled by 255; then clip and truncate.
    scale = 1 if arr.dtype == np.uint8 else 255
    return (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tile ``[N, C, H, W]`` images (C in 1, 3) into one ``[3, rows*H, cols*W]`` image."""
    import numpy as np

    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = images[i]
    return canvas


def _check_format(dataformats: Any, ndim: int, where: str) -> str:
    if not isinstance(dataformats, str):
        raise TypeError(
            f"{where}: 'dataformats' must be a str, got {type(dataformats).__name__}"
        )
    fmt = dataformats.upper()
    needed = {4: "NCHW", 3: "CHW", 2: "HW"}.get(len(fmt))
    if needed is None or len(set(fmt)) != len(fmt) or set(fmt) != set(needed):
        raise ValueError(
            f"{where}: 'dataformats' must be an ordering of NCHW, CHW or HW, got {dataformats!r}"
        )
    if len(fmt) != ndim:
        raise ValueError(
            f"{where}: 'img_tensor' has {ndim} dimensions but dataformats {dataformats!r} "
            f"has {len(fmt)}"
        )
    return fmt


def image_hwc(
    img: Any, dataformats: str, where: str, arg: str = "img_tensor", tag: str | None = None,
    *, on_device: bool = False,
) -> np.ndarray:
    """An image (or batch, tiled) as ``[H, W, C]`` uint8 exactly as torch converts it.

    ``img``: numbers in ``dataformats`` layout; uint8 taken as 0..255, any other real
    dtype as 0..1 (scaled by 255, clipped, truncated). C is 1, 3 or 4 (1 becomes 3).
    With ``on_device``, a device array (JAX, torch CUDA) is converted where it lives and
    the result is a device array of that framework (no wait; NaN becomes 0).
    With ``tag``, float data with values above 2 (almost surely 0..255 data, which turns
    white) warns, once per tag.
    """
    import numpy as np

    if on_device and device_kind(img) is not None:
        return _on_device(_device_hwc, img, dataformats, where, arg)  # type: ignore[no-any-return]
    arr = as_array(img, where, arg)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {arr.dtype}")
    fmt = _check_format(dataformats, arr.ndim, where)
    if tag is not None and arr.dtype.kind == "f":
        from summarylib.ops.image import warn_float_range

        warn_float_range(arr, tag, where)
    if len(fmt) == 4:
        nchw = arr.transpose([fmt.find(c) for c in "NCHW"])
        if nchw.shape[1] not in (1, 3):
            raise _channels_error(where, arg, arr.shape, fmt, (1, 3))
        if nchw.shape[0] == 0:
            raise ValueError(f"{where}: {arg!r} holds no images, got shape {arr.shape}")
        hwc = make_grid(nchw).transpose(1, 2, 0)
    elif len(fmt) == 3:
        hwc = arr.transpose([fmt.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        elif hwc.shape[2] not in (3, 4):
            raise _channels_error(where, arg, arr.shape, fmt, (1, 3, 4))
    else:
        hw = arr.transpose([fmt.find(c) for c in "HW"])
        hwc = np.stack([hw, hw, hw], 2)
    if hwc.shape[0] == 0 or hwc.shape[1] == 0:
        raise ValueError(f"{where}: {arg!r} is empty, got shape {arr.shape}")
    if hwc.dtype.kind == "f" and np.isnan(hwc).any():
        raise ValueError(f"{where}: {arg!r} holds NaN")
    return _to_uint8(hwc)


# (function, its other arguments) -> the function jitted, for JAX arrays
_JAX_JITTED: dict[tuple[Any, ...], Any] = {}


def _on_device(fn: Any, data: Any, *args: Any) -> Any:
    """``fn(data, *args)``; for a JAX array as one jitted computation.

    Eagerly, each array operation of ``fn`` is a computation of its own, and XLA's CPU
    client keeps only about 32 in flight: a few calls on an unfinished step would wait for
    it. Jitted, a call dispatches one. ``args`` are static (strings).
    """
    if device_kind(data) != "jax":
        return fn(data, *args)
    key = (fn, *args)
    jitted = _JAX_JITTED.get(key)
    if jitted is None:
        import jax

        def run(x: Any) -> Any:
            return fn(x, *args)

        jitted = jax.jit(run)
        if len(_JAX_JITTED) >= 64:
            _JAX_JITTED.clear()
        _JAX_JITTED[key] = jitted
    return jitted(data)


def _device_hwc(img: Any, dataformats: str, where: str, arg: str) -> Any:
    # image_hwc on the device (JAX, torch CUDA): the same layout and uint8 rule, computed
    # where the data lives, so only the uint8 picture crosses, without waiting (the image
    # op captures it). NaN, which the host path refuses (it would need the values now),
    # becomes 0.
    shape = tuple(int(d) for d in img.shape)
    if not is_real_dtype(img.dtype):
        raise TypeError(f"{where}: {arg!r} must hold real numbers, got dtype {img.dtype}")
    fmt = _check_format(dataformats, len(shape), where)
    ops = _DeviceOps(img)
    if len(fmt) == 4:
        nchw = ops.permute(img, [fmt.find(c) for c in "NCHW"])
        n, c, h, w = (int(d) for d in nchw.shape)
        if c not in (1, 3):
            raise _channels_error(where, arg, shape, fmt, (1, 3))
        if n == 0:
            raise ValueError(f"{where}: {arg!r} holds no images, got shape {shape}")
        if c == 1:
            nchw = ops.cat([nchw, nchw, nchw], 1)
        ncols = min(n, 8)
        nrows = -(-n // ncols)
        if nrows * ncols > n:
            nchw = ops.cat([nchw, ops.zeros(nchw, (nrows * ncols - n, 3, h, w))], 0)
        grid = ops.reshape(nchw, (nrows, ncols, 3, h, w))
        hwc = ops.reshape(ops.permute(grid, [0, 3, 1, 4, 2]), (nrows * h, ncols * w, 3))
    elif len(fmt) == 3:
        hwc = ops.permute(img, [fmt.find(c) for c in "HWC"])
        channels = int(hwc.shape[2])
        if channels == 1:
            hwc = ops.cat([hwc, hwc, hwc], 2)
        elif channels not in (3, 4):
            raise _channels_error(where, arg, shape, fmt, (1, 3, 4))
    else:
        hw = ops.permute(img, [fmt.find(c) for c in "HW"])
        hwc = ops.stack([hw, hw, hw], 2)
    if int(hwc.shape[0]) == 0 or int(hwc.shape[1]) == 0:
        raise ValueError(f"{where}: {arg!r} is empty, got shape {shape}")
    return ops.to_uint8(hwc)


class _DeviceOps:
    """The few array operations of :func:`_device_hwc`, for torch and JAX arrays."""

    def __init__(self, sample: Any) -> None:
        self.torch = device_kind(sample) == "torch"
        if self.torch:
            import torch

            self.xp: Any = torch
        else:
            import jax.numpy as jnp

            self.xp = jnp

    def permute(self, a: Any, axes: list[int]) -> Any:
        return a.permute(*axes) if self.torch else self.xp.transpose(a, axes)

    def cat(self, parts: list[Any], axis: int) -> Any:
        return self.xp.cat(parts, axis) if self.torch else self.xp.concatenate(parts, axis)

    def stack(self, parts: list[Any], axis: int) -> Any:
        return self.xp.stack(parts, axis)

    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        return a.reshape(shape)

    def float32(self, a: Any) -> Any:
        return a.float() if self.torch else a.astype(self.xp.float32)

    def zeros(self, like: Any, shape: tuple[int, ...]) -> Any:
        if self.torch:
            return self.xp.zeros(shape, dtype=like.dtype, device=like.device)
        return self.xp.zeros(shape, like.dtype)

    def to_uint8(self, a: Any) -> Any:
        # torch's rule: uint8 kept; anything else as float32 times 255, clipped, truncated.
        xp = self.xp
        if self.torch:
            if a.dtype == xp.uint8:
                return a
            scaled = xp.nan_to_num(a.float() * 255, nan=0.0).clamp(0, 255)
            return scaled.to(xp.uint8)
        if a.dtype == xp.uint8:
            return a
        scaled = xp.clip(xp.nan_to_num(a.astype(xp.float32) * 255, nan=0.0), 0, 255)
        return scaled.astype(xp.uint8)


def boxed_image(
    hwc: np.ndarray, boxes: Any, labels: list[str] | None, rescale: float, where: str
) -> np.ndarray:
    """``hwc`` (uint8) with ``boxes`` ``[K, 4]`` (xmin, ymin, xmax, ymax) drawn as torch does."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    box = as_array(boxes, where, "box_tensor")
    if box.ndim != 2 or box.shape[1] != 4:
        raise ValueError(f"{where}: 'box_tensor' must have shape [K, 4], got {box.shape}")
    if box.dtype.kind not in "biuf" or not np.isfinite(box.astype(np.float64)).all():
        raise ValueError(f"{where}: 'box_tensor' must hold finite numbers")
    if isinstance(rescale, bool) or not isinstance(rescale, (int, float)) or not rescale > 0:
        raise ValueError(f"{where}: 'rescale' must be a number > 0, got {rescale!r}")
    image = Image.fromarray(hwc)
    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    for i, (left, top, right, bottom) in enumerate(box.tolist()):
        draw.line(
            [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)],
            width=2, fill="Red",
        )
        label = None if labels is None else labels[i]
        if label:
            x0, y0, x1, y1 = font.getbbox(label)
            tw, th = x1 - x0, y1 - y0
            margin = np.ceil(0.05 * th)
            draw.rectangle([(left, bottom - th - 2 * margin), (left + tw, bottom)], fill="Red")
            draw.text((left + margin, bottom - th - margin), label, fill="black", font=font)
    h, w = hwc.shape[:2]
    image = image.resize((int(w * rescale), int(h * rescale)), Image.Resampling.LANCZOS)
    return np.asarray(image)


def video_frames(vid: Any, where: str, *, on_device: bool = False) -> np.ndarray:
    """``[N, T, C, H, W]`` video(s) as ``[T, H', W', C]`` uint8 frames, tiled as torch tiles.

    With ``on_device``, a device array (JAX, torch CUDA) is converted where it lives, with
    the same float32 arithmetic, and the result is a device array of that framework (no
    wait; NaN becomes 0).
    """
    import numpy as np

    if on_device and device_kind(vid) is not None:
        return _on_device(_device_video_frames, vid, where)  # type: ignore[no-any-return]
    arr = as_array(vid, where, "vid_tensor")
    if arr.ndim != 5:
        raise ValueError(
            f"{where}: 'vid_tensor' must have shape [N, T, C, H, W], got {arr.shape}"
        )
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: 'vid_tensor' must hold real numbers, got dtype {arr.dtype}")
    b, t, c, h, w = arr.shape
    if min(b, t, h, w) == 0 or c not in (1, 3, 4):
        raise ValueError(
            f"{where}: 'vid_tensor' must be non-empty with C in (1, 3, 4), got {arr.shape}"
        )
    v = arr.astype(np.float32) / 255.0 if arr.dtype == np.uint8 else arr
    if b & (b - 1):  # pad the batch to a power of two, as torch does
        extra = (1 << b.bit_length()) - b
        v = np.concatenate((v, np.zeros((extra, t, c, h, w))), axis=0)
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = v.shape[0] // rows
    v = v.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return _to_uint8(v.reshape(t, rows * h, cols * w, c))


def _device_video_frames(vid: Any, where: str) -> Any:
    # video_frames on the device: the same checks (from the shape and dtype), the same
    # float32 steps (uint8 / 255, zero padding, tiling, * 255, clip, truncate).
    shape = tuple(int(d) for d in vid.shape)
    if len(shape) != 5:
        raise ValueError(f"{where}: 'vid_tensor' must have shape [N, T, C, H, W], got {shape}")
    if not is_real_dtype(vid.dtype):
        raise TypeError(f"{where}: 'vid_tensor' must hold real numbers, got dtype {vid.dtype}")
    b, t, c, h, w = shape
    if min(b, t, h, w) == 0 or c not in (1, 3, 4):
        raise ValueError(
            f"{where}: 'vid_tensor' must be non-empty with C in (1, 3, 4), got {shape}"
        )
    ops = _DeviceOps(vid)
    v = ops.float32(vid)
    if str(vid.dtype) in ("uint8", "torch.uint8"):
        v = v / 255.0  # in float32, as the host path divides
    if b & (b - 1):
        v = ops.cat([v, ops.zeros(v, ((1 << b.bit_length()) - b, t, c, h, w))], 0)
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = int(v.shape[0]) // rows
    v = ops.permute(ops.reshape(v, (rows, cols, t, c, h, w)), [2, 0, 4, 1, 5, 3])
    return ops.to_uint8(ops.reshape(v, (t, rows * h, cols * w, c)))


def reorder_on_device(data: Any, dataformats: str, target: str, where: str) -> Any:
    """A device array's axes from ``dataformats`` to ``target`` order (checked names), on
    the device."""
    shape = tuple(int(d) for d in data.shape)
    if len(shape) != len(target):
        raise ValueError(f"{where}: 'vid_tensor' must have {len(target)} axes, got {shape}")
    return _DeviceOps(data).permute(data, [dataformats.index(c) for c in target])


def audio_on_device(snd: Any, where: str) -> Any:
    """torch's samples of one clip, on the device: ``[1, t, 1]`` float32 ``k / 32768``.

    ``snd`` squeezes to 1-D; clipped to [-1, 1], scaled by 32767 and truncated in its own
    dtype (low-precision floats as float32), as the host path of ``add_audio`` computes.
    """
    return _on_device(_device_audio, snd, where)


def _device_audio(snd: Any, where: str) -> Any:
    shape = tuple(int(d) for d in snd.shape)
    squeezed = tuple(d for d in shape if d != 1)
    if len(squeezed) != 1:
        raise ValueError(f"{where}: 'snd_tensor' must squeeze to 1-D, got {squeezed}")
    if not is_real_dtype(snd.dtype) or str(snd.dtype) in ("bool", "torch.bool"):
        raise TypeError(f"{where}: 'snd_tensor' must hold real numbers, got {snd.dtype}")
    ops = _DeviceOps(snd)
    x = ops.reshape(snd, squeezed)
    if ops.torch:
        if x.is_floating_point() and x.element_size() < 4 and x.dtype != ops.xp.float16:
            x = x.float()
        pcm = (x.clamp(-1, 1) * 32767).to(ops.xp.int16)
    else:
        from summarylib.encoding._arrays import is_extended_float

        if is_extended_float(x.dtype):
            x = x.astype(ops.xp.float32)
        pcm = (ops.xp.clip(x, -1, 1) * 32767).astype(ops.xp.int16)
    return ops.reshape(ops.float32(pcm) / 32768, (1, squeezed[0], 1))


def pr_curve_data(
    labels: Any, predictions: Any, num_thresholds: int, weights: Any, where: str
) -> np.ndarray:
    """torch's ``[6, T]`` float32 PR data (tp, fp, tn, fn, precision, recall).

    ``labels`` are booleans or 0/1; ``predictions`` in [0, 1], same size; ``weights``
    None, a number or an array of that size.
    """
    import numpy as np

    lab = as_array(labels, where, "labels")
    pred = as_array(predictions, where, "predictions")
    if lab.shape != pred.shape:
        raise ValueError(
            f"{where}: 'labels' and 'predictions' must have the same shape, "
            f"got {lab.shape} and {pred.shape}"
        )
    if pred.dtype.kind not in "biuf" or lab.dtype.kind not in "biuf":
        raise TypeError(f"{where}: 'labels' and 'predictions' must hold real numbers")
    p = pred.astype(np.float64)
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError(f"{where}: 'predictions' must be in [0, 1]")
    w: Any = 1.0
    if weights is not None:
        w = as_array(weights, where, "weights").astype(np.float64)
        if w.shape not in ((), lab.shape):
            raise ValueError(f"{where}: 'weights' must be a number or of shape {lab.shape}")
    t = num_thresholds
    # In the predictions' own dtype, as torch computes it (float32 stays float32).
    index = np.int32(np.floor(pred * (t - 1)))
    flabels = lab.astype(np.float64)
    tp_b, _ = np.histogram(index, bins=t, range=(0, t - 1), weights=flabels * w)
    fp_b, _ = np.histogram(index, bins=t, range=(0, t - 1), weights=(1.0 - flabels) * w)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall)).astype(np.float32)


def _channels_error(where: str, arg: str, shape: tuple[int, ...], fmt: str,
                    allowed: tuple[int, ...]) -> ValueError:
    """A wrong channel count, naming ``dataformats`` (the usual cause: the layout), and
    the layout the shape would fit when one does (channels first or last)."""
    counts = ", ".join(map(str, allowed[:-1])) + f" or {allowed[-1]}"
    message = (f"{where}: {arg!r} must have {counts} channels (the C axis of "
               f"dataformats={fmt!r}), got shape {tuple(shape)}")
    batch = "N" if fmt.startswith("N") else ""
    for other in (batch + "HWC", batch + "CHW"):
        if other != fmt and len(other) == len(shape) and shape[other.index("C")] in allowed:
            return ValueError(f"{message}; pass dataformats={other!r} if that is its layout")
    return ValueError(message)
