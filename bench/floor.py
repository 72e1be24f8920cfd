"""The floor every system is measured against: Event bytes encoded by hand, written
synchronously to a buffered file. No thread, no argument checks, no queue: the least work
that produces a file TensorBoard reads the same way.

* ``Floor`` writes scalars as legacy ``simple_value`` values (the smallest scalar event) and
  everything else in TensorFlow 2's tensor layout, plugin metadata on a tag's first event.
* ``FloorTensor`` writes scalars in TensorFlow 2's layout too (a DT_FLOAT tensor), which is
  what summarylib writes.

Written for this benchmark; it shares no code with summarylib's writer.
"""

from __future__ import annotations

import io
import os
import socket
import struct
import time
import wave
from typing import Any

import crc32c
import numpy as np

__all__ = ["Floor", "FloorTensor", "RecordFile", "length_delimited", "tensor_bytes", "varint"]

DT_FLOAT, DT_DOUBLE, DT_STRING = 1, 2, 7
_double = struct.Struct("<d").pack
_float = struct.Struct("<f").pack
_u64 = struct.Struct("<Q").pack
_u32 = struct.Struct("<I").pack


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(key: bytes, payload: bytes) -> bytes:
    """A length-delimited protobuf field: its key byte, the length, the payload."""
    return key + varint(len(payload)) + payload


def tensor_bytes(dtype: int, dims: tuple[int, ...], content: bytes = b"",
                 strings: tuple[bytes, ...] = ()) -> bytes:
    """A TensorProto: dtype, shape, then tensor_content or string_val."""
    shape = b"".join(length_delimited(b"\x12", b"\x08" + varint(d)) for d in dims)
    out = b"\x08" + varint(dtype) + length_delimited(b"\x12", shape)
    if content:
        out += length_delimited(b"\x22", content)
    return out + b"".join(length_delimited(b"\x42", s) for s in strings)


def _metadata(plugin: str, content: bytes = b"") -> bytes:
    plugin_data = length_delimited(b"\x0a", plugin.encode())
    if content:
        plugin_data += length_delimited(b"\x12", content)
    return length_delimited(b"\x4a", length_delimited(b"\x0a", plugin_data))


def _masked(data: bytes) -> int:
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class RecordFile:
    """An event file: TFRecord framing with masked CRC-32C, written as it comes."""

    def __init__(self, logdir: str) -> None:
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.0.floor")
        self.f = open(os.path.join(logdir, name), "wb")  # noqa: SIM115 (closed by close())
        self.write(b"\x09" + _double(time.time()) + length_delimited(b"\x1a", b"brain.Event:2"))

    def write(self, event: bytes) -> None:
        header = _u64(len(event))
        self.f.write(header + _u32(_masked(header)) + event + _u32(_masked(event)))

    def close(self) -> None:
        self.f.close()


class Floor:
    """Hand-encoded events, written synchronously."""

    def __init__(self, logdir: str, *, thresholds: int = 127, sample_rate: int = 16000) -> None:
        self.out = RecordFile(logdir)
        self.thresholds = thresholds
        self.sample_rate = sample_rate
        self._prefixes: dict[str, bytes] = {}
        self._seen: set[str] = set()

    def scalar(self, step: int, value: float, tag: str = "loss") -> None:
        prefix = self._prefixes.get(tag)
        if prefix is None:
            value_head = length_delimited(b"\x0a", tag.encode()) + b"\x15"
            summary_head = b"\x0a" + varint(len(value_head) + 4) + value_head
            prefix = self._prefixes[tag] = b"\x2a" + varint(len(summary_head) + 4) + summary_head
        self.out.write(b"\x09" + _double(time.time()) + b"\x10" + varint(step) + prefix
                       + _float(value))

    def tensor_event(self, step: int, tag: str, tensor: bytes, plugin: str,
                     content: bytes = b"") -> None:
        value = length_delimited(b"\x0a", tag.encode()) + length_delimited(b"\x42", tensor)
        if tag not in self._seen:
            self._seen.add(tag)
            value += _metadata(plugin, content)
        summary = length_delimited(b"\x0a", value)
        self.out.write(b"\x09" + _double(time.time()) + b"\x10" + varint(step)
                       + length_delimited(b"\x2a", summary))

    def hist(self, step: int, values: np.ndarray, tag: str = "hist", buckets: int = 30) -> None:
        # TensorFlow 2's layout: [buckets, 3] float64 (left edge, right edge, count).
        x = values.reshape(-1)
        lo, hi = float(x.min()), float(x.max())
        table = np.empty((buckets, 3), np.float64)
        if lo == hi:
            table[:, 0], table[:, 1], table[:, 2] = lo, hi, 0
            table[-1, 2] = x.size
        else:
            counts, edges = np.histogram(x, bins=buckets, range=(lo, hi))
            table[:, 0], table[:, 1], table[:, 2] = edges[:-1], edges[1:], counts
        self.tensor_event(step, tag, tensor_bytes(DT_DOUBLE, (buckets, 3), table.tobytes()),
                          "histograms")

    def image(self, step: int, pixels: np.ndarray, tag: str = "img") -> None:
        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="PNG")
        h, w = pixels.shape[:2]
        strings = (str(w).encode(), str(h).encode(), buf.getvalue())
        self.tensor_event(step, tag, tensor_bytes(DT_STRING, (3,), strings=strings), "images")

    def pr(self, step: int, labels: np.ndarray, predictions: np.ndarray, tag: str = "pr") -> None:
        n = self.thresholds
        bucket = np.floor(predictions * (n - 1)).astype(np.int32)
        positive = labels.astype(np.float64)
        tp = np.cumsum(np.bincount(bucket, weights=positive, minlength=n)[::-1])[::-1]
        fp = np.cumsum(np.bincount(bucket, weights=1.0 - positive, minlength=n)[::-1])[::-1]
        tn, fn = fp[0] - fp, tp[0] - tp
        precision = tp / np.maximum(1e-7, tp + fp)
        recall = tp / np.maximum(1e-7, tp + fn)
        data = np.stack((tp, fp, tn, fn, precision, recall)).astype(np.float32)
        self.tensor_event(step, tag + "/pr_curves",
                          tensor_bytes(DT_FLOAT, data.shape, data.tobytes()),
                          "pr_curves", b"\x10" + varint(n))

    def audio(self, step: int, clip: np.ndarray, tag: str = "audio") -> None:
        pcm = np.clip(np.rint(clip * 32768.0), -32768, 32767).astype("<i2")
        buf = io.BytesIO()
        with wave.open(buf, "wb") as wf:
            wf.setnchannels(1)
            wf.setsampwidth(2)
            wf.setframerate(self.sample_rate)
            wf.writeframes(pcm.tobytes())
        tensor = tensor_bytes(DT_STRING, (1, 2), strings=(buf.getvalue(), b""))
        self.tensor_event(step, tag, tensor, "audio", b"\x10\x0b")

    def text(self, step: int, text: str, tag: str = "text") -> None:
        self.tensor_event(step, tag, tensor_bytes(DT_STRING, (), strings=(text.encode(),)),
                          "text")

    def close(self) -> None:
        self.out.close()


class FloorTensor(Floor):
    """Scalars as DT_FLOAT tensors (TensorFlow 2's and summarylib's layout)."""

    _TENSOR_HEAD = b"\x42\x0a\x08\x01\x12\x00\x22\x04"  # Tensor{DT_FLOAT, shape {}, 4 bytes}

    def scalar(self, step: int, value: float, tag: str = "loss") -> None:
        prefix = self._prefixes.get(tag)
        first = prefix is None
        if prefix is None:
            prefix = self._prefixes[tag] = (length_delimited(b"\x0a", tag.encode())
                                            + self._TENSOR_HEAD)
        value_bytes = prefix + _float(value)
        if first:
            value_bytes += _metadata("scalars")
        self.out.write(b"\x09" + _double(time.time()) + b"\x10" + varint(step)
                       + length_delimited(b"\x2a", length_delimited(b"\x0a", value_bytes)))


def floor_writer(logdir: str, tensor_scalars: bool = False, **options: Any) -> Floor:
    return (FloorTensor if tensor_scalars else Floor)(logdir, **options)
