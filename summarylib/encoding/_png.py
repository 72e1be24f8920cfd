"""uint8 pixels to PNG bytes with Pillow: 8 bits per channel, the same channel count.

Channels map to PNG colour types: 1 -> grayscale (``L``), 2 -> grayscale +
alpha (``LA``), 3 -> RGB, 4 -> RGBA, which is what ``tf.image.encode_png``
writes. The bytes need not equal TensorFlow's; the decoded pixels do.

Pillow's PNG codec (its ``"zip"`` encoder: per-row adaptive filtering, then
deflate) makes the image data; the three chunks around it (IHDR, one IDAT,
IEND) are written here. That skips ``Image.save``'s plugin dispatch and
chunk-by-chunk Python writes, about 20 us of the ~400 us a noisy 64x64 RGB
image costs. The result equals ``Image.save``'s bytes, except that large
images keep their data in one IDAT chunk where Pillow cuts 64 KiB pieces
(tests check both). Should a Pillow version refuse the codec arguments, the
encoder falls back to ``Image.save``.

Compression level 1 (zlib's fastest real compression) rather than Pillow's
default 6, measured on this project's 2-core VM with Pillow 13: the same size
and time on incompressible 64x64 noise (~400 us at any level); on a 256x256
natural-looking image 7.0 ms and 125 KB against 14 ms and 109 KB; on 512x512
9 ms and 134 KB against 37 ms and 112 KB. Level 0 would be faster still but
leaves real images uncompressed (4-6x larger files). Encoding runs on the
writer's background thread.

Small images (up to ``SMALL_IMAGE_BYTES`` of pixels: thumbnails, MNIST digits, 64x64
samples) are filtered here with numpy instead: each row gets the PNG filter (None, Sub or
Up) with the smallest sum of absolute values, libpng's heuristic, and zlib compresses the
rows. For them Pillow's codec costs most of its time per row and per call: a 64x64 RGB
image took 609 us there and 202 us here, at the same size (2026-11-24, this project's VM).
Larger images keep Pillow's codec, whose five filters compress natural images better.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import TYPE_CHECKING

# Imported with this module, on the thread of the op that needs it, never by the encoder
# on the writer thread: a thread that is importing holds the module's import lock, and a
# child forked meanwhile would wait for that lock forever (see summarylib/__init__.py).
from PIL import Image

if TYPE_CHECKING:
    import numpy as np

__all__ = ["COMPRESS_LEVEL", "SMALL_IMAGE_BYTES", "encode_png"]

COMPRESS_LEVEL = 1
#: Images with at most this many bytes of pixels are filtered with numpy (see above).
SMALL_IMAGE_BYTES = 64 * 1024
_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
_COLOR_TYPES = {"L": 0, "LA": 4, "RGB": 2, "RGBA": 6}
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_IHDR = struct.Struct(">IIBBBBB")  # width, height, bit depth, colour type, 0, 0, 0
_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"
_fast = True  # cleared if this Pillow's "zip" codec refuses our arguments


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def encode_png(image: np.ndarray) -> bytes:
    """Encode one C-contiguous uint8 ``[h, w, c]`` image (c in 1..4, h and w >= 1)."""
    global _fast
    h, w, c = image.shape
    mode = _MODES[c]
    if h * w * c <= SMALL_IMAGE_BYTES:
        header = _IHDR.pack(w, h, 8, _COLOR_TYPES[mode], 0, 0, 0)
        idat = zlib.compress(_filtered_rows(image.reshape(h, w * c), c), COMPRESS_LEVEL)
        return b"".join((_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _IEND))
    im = Image.frombuffer(mode, (w, h), image, "raw", mode, 0, 1)
    if _fast:
        try:
            # zip codec arguments: raw mode, optimize, level, strategy, dictionary
            idat = im.tobytes("zip", (mode, False, COMPRESS_LEVEL, -1, b""))
        except (TypeError, ValueError, OSError):
            _fast = False
        else:
            header = _IHDR.pack(w, h, 8, _COLOR_TYPES[mode], 0, 0, 0)
            return b"".join((_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _IEND))
    out = io.BytesIO()
    im.save(out, "PNG", compress_level=COMPRESS_LEVEL)
    return out.getvalue()


def _filtered_rows(rows: np.ndarray, bpp: int) -> bytes:
    """PNG scanlines: each row behind its filter byte, with the filter among None (0), Sub
    (1) and Up (2) whose output has the smallest sum of absolute values (as signed bytes)."""
    import numpy as np

    h, n = rows.shape
    sub = rows.copy()
    sub[:, bpp:] -= rows[:, :-bpp]  # uint8 arithmetic wraps, as PNG's does
    up = rows.copy()
    up[1:] -= rows[:-1]
    candidates = np.stack((rows, sub, up))
    scores = np.abs(candidates.view(np.int8).astype(np.int16)).sum(axis=2)
    choice = scores.argmin(axis=0)
    out = np.empty((h, n + 1), np.uint8)
    out[:, 0] = choice
    out[:, 1:] = candidates[choice, np.arange(h)]
    return out.tobytes()
