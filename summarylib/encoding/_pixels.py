"""Image batches to uint8 NHWC pixels, converted as ``tf.image.convert_image_dtype`` does.

Conversion (``saturate=True``, as ``tf.summary.image`` calls it; format.md §5.4):

* ``uint8``: unchanged.
* floats (nominal range [0, 1]): ``x * 255.5`` computed in the input's own
  float type, clamped to [0, 255], truncated toward zero. So 1.0 -> 255,
  0.5 -> 127, negatives -> 0. NaN -> 0, +inf -> 255, -inf -> 0 (TensorFlow
  leaves NaN to an undefined cast; we pick black).
* ``bfloat16`` (ml_dtypes): as a float, but 255.5 rounds to 256 in bfloat16,
  which is what TensorFlow multiplies by.
* wider integers: floor division by ``(max + 1) // 256`` (a right shift,
  since every max + 1 is a power of two), then clamped: uint16 -> ``// 256``,
  int16 -> ``// 128``, int32 -> ``// 2**23``; negatives -> 0.
* ``int8``: negatives -> 0, then times 2 (so 127 -> 254).
* ``bool`` (an extension; TensorFlow refuses it): False -> 0, True -> 255,
  as 0.0 and 1.0 would convert.

The result is always a fresh C-contiguous array: callers may hand it to
another thread while the caller's data keeps changing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DATAFORMATS", "SUSPECT_FLOAT_PIXEL", "float_pixel_max", "is_pixel_dtype", "to_nhwc",
           "to_uint8"]

#: Float pixels are read as 0..1: a value above this is almost surely 0..255 data.
SUSPECT_FLOAT_PIXEL = 2.0
# float_pixel_max looks at about this many values at most, so that checking every image
# costs a few microseconds whatever its size.
_MAX_SAMPLE = 1 << 16

# dataformats -> (axes of NHWC in the input, or None to add the axis; shape text)
DATAFORMATS: dict[str, tuple[tuple[int | None, ...], str]] = {
    "NHWC": ((0, 1, 2, 3), "[k, h, w, c]"),
    "NCHW": ((0, 2, 3, 1), "[k, c, h, w]"),
    "HWC": ((None, 0, 1, 2), "[h, w, c]"),
    "CHW": ((None, 1, 2, 0), "[c, h, w]"),
    "HW": ((None, 0, 1, None), "[h, w]"),
}


def is_pixel_dtype(dtype: np.dtype) -> bool:
    """True for dtypes :func:`to_uint8` converts: bool, integers, floats, bfloat16."""
    return dtype.kind in "biuf" or dtype.name == "bfloat16"


def to_nhwc(arr: np.ndarray, dataformats: str) -> np.ndarray:
    """A view of ``arr`` as ``[k, h, w, c]``; ``arr.ndim`` must match the format."""
    transpose, index = _VIEWS[dataformats]
    if transpose is not None:
        arr = arr.transpose(transpose)
    return arr if index is None else arr[index]


def _view(axes: tuple[int | None, ...]) -> tuple[tuple[int, ...] | None, tuple[Any, ...] | None]:
    # (input axes in NHWC order if a transpose is needed, index adding missing axes)
    present = tuple(a for a in axes if a is not None)
    transpose = present if list(present) != sorted(present) else None
    index = tuple(None if a is None else slice(None) for a in axes) if None in axes else None
    return transpose, index


_VIEWS = {fmt: _view(axes) for fmt, (axes, _) in DATAFORMATS.items()}


def float_pixel_max(images: np.ndarray) -> float:
    """The largest value of float pixel data (any rank; 0.0 if empty; NaN if NaN leads).

    Arrays of more than about 65,536 values are sampled: every s-th index of the
    outermost axis longer than 4 (images of a batch, or rows of one image), a view
    whose inner blocks stay contiguous, so the cost stays a few microseconds for data
    of any size. 0..255 data has pixels above 2 in nearly every row, so the sample
    finds them.
    """
    size = images.size
    if size == 0:
        return 0.0
    if size > _MAX_SAMPLE:
        for axis, length in enumerate(images.shape):
            if length > 4:
                step = 1
                while -(-size // step) > _MAX_SAMPLE and step < length:
                    step *= 2
                index = [slice(None)] * images.ndim
                index[axis] = slice(None, None, step)
                images = images[tuple(index)]
                break
    return float(images.max())


def to_uint8(images: np.ndarray) -> np.ndarray:
    """Convert pixel values to uint8 as TensorFlow does (see the module docstring)."""
    import numpy as np

    dtype = images.dtype
    kind = dtype.kind
    if dtype == np.uint8:
        return np.array(images, order="C")  # always a copy
    if kind == "b":
        out = images.astype(np.uint8, order="C")
        out *= 255
        return out
    if kind in "iu":
        if dtype.itemsize == 1:  # int8: scale up by 256 // 128
            doubled: np.ndarray = np.maximum(images, 0).astype(np.uint8, order="C")
            doubled <<= 1
            return doubled
        # Scale down: (max + 1) // 256 is 2 ** shift.
        shift = dtype.itemsize * 8 - 8 - (1 if kind == "i" else 0)
        shifted: np.ndarray = np.right_shift(images, shift)  # floor division, even for negatives
        if kind == "i":
            np.maximum(shifted, 0, out=shifted)
        return shifted.astype(np.uint8, order="C")
    scaled: np.ndarray
    if dtype.name == "bfloat16":
        # 255.5 is 256 in bfloat16; x * 256 is exact in float32.
        scaled = images.astype(np.float32) * np.float32(256.0)
    else:
        with np.errstate(over="ignore"):  # huge finite values become inf -> 255
            scaled = np.multiply(images, dtype.type(255.5))
    # fmax drops NaN in favour of 0 and clamps negatives; then the top.
    np.fmax(scaled, 0, out=scaled)
    np.minimum(scaled, 255, out=scaled)
    return scaled.astype(np.uint8, order="C")
