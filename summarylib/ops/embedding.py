"""Embeddings for TensorBoard's Projector: points, their labels and thumbnails, as files.

The projector reads no events: it reads ``projector_config.pbtxt`` (a text-format
``ProjectorConfig``) in the log directory and the files it names. :func:`embedding` lays
them out as torch's ``add_embedding`` does:

    <logdir>/projector_config.pbtxt              one entry per (tag, step)
    <logdir>/<step:05d>/<tag>/tensors.tsv        the points, one row per line
    <logdir>/<step:05d>/<tag>/metadata.tsv       labels (if given)
    <logdir>/<step:05d>/<tag>/sprite.png         thumbnails (if given)

and names the tensor ``<tag>:<step:05d>``.

Data contract:
  * ``mat``: finite real numbers ``[N, D]`` (N, D >= 1), written as float32 with 9
    significant digits, which read back as exactly the same float32 values.
  * ``metadata``: N labels (one column, no header line), or N rows of equal length with
    ``metadata_header`` naming the columns (a header line first). Labels are converted with
    ``str()`` (numpy and framework scalars through ``item()`` first: ``33.0``, not
    ``tensor(33.)``); tabs and line breaks in them are replaced by spaces, since they would
    shift columns or rows.
  * ``label_img``: ``[N, C, H, W]`` thumbnails (C in 1, 3), uint8 0..255 or floats in
    [0, 1]; tiled into one square sprite, ``ceil(sqrt(N))`` per row.
  * ``tag``: any non-empty name; it becomes one directory name under ``<step:05d>``, made
    safe by :func:`summarylib.writer.path_safety.safe_component` (``/`` becomes ``%2f`` as
    in torch; ``..``, absolute paths, NUL and reserved names cannot leave the logdir).
  * Several embeddings (tags, steps) accumulate in the config, also across writers and
    restarts; the same tag and step again replaces its entry. A URL logdir (``s3://``,
    ...) gets the same files as objects, through fsspec. The config is replaced
    atomically; files are created with the process's umask.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from summarylib.encoding.arrays import as_array
from summarylib.writer.context import Step, _local, check_step, condition_holds
from summarylib.writer.path_safety import safe_component

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CONFIG_FILE", "embedding", "tsv_bytes"]

CONFIG_FILE = "projector_config.pbtxt"
_ROWS_PER_CHUNK = 4096
_config_lock = threading.Lock()  # one read-modify-write of a config at a time per process


def tsv_bytes(mat: np.ndarray) -> bytes:
    """``mat`` (float32 ``[N, D]``) as TSV whose values parse back to the same float32.

    9 significant digits identify every float32; one ``%`` formatting per chunk of rows
    keeps the work in C.
    """
    n, d = mat.shape
    row = "\t".join(["%.9g"] * d) + "\n"
    parts = []
    for start in range(0, n, _ROWS_PER_CHUNK):
        chunk = mat[start:start + _ROWS_PER_CHUNK]
        parts.append(((row * len(chunk)) % tuple(chunk.ravel().tolist())).encode("ascii"))
    return b"".join(parts)


def _label(value: Any) -> str:
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 1) == 0:
        value = item()
    return " ".join(str(value).replace("\t", " ").splitlines()) or ""


def _metadata_bytes(metadata: Any, header: Sequence[str] | None, n: int, where: str) -> bytes:
    rows = list(metadata)
    if len(rows) != n:
        raise ValueError(f"{where}: 'metadata' has {len(rows)} entries for {n} points")
    if header is None:
        lines = [_label(v) for v in rows]
    else:
        if isinstance(header, str) or not isinstance(header, Sequence) or not header:
            raise TypeError(f"{where}: 'metadata_header' must be a list of column names")
        width = len(header)
        lines = ["\t".join(_label(h) for h in header)]
        for i, r in enumerate(rows):
            if isinstance(r, str) or not isinstance(r, Sequence) or len(r) != width:
                raise ValueError(f"{where}: 'metadata' row {i} must have {width} columns "
                                 f"like 'metadata_header', got {r!r:.60}")
            lines.append("\t".join(_label(v) for v in r))
    return ("\n".join(lines) + "\n").encode("utf-8", "replace")


def _sprite_png(label_img: Any, n: int, where: str) -> tuple[bytes, int, int]:
    import io

    import numpy as np
    from PIL import Image

    imgs = as_array(label_img, where, "label_img")
    if imgs.ndim != 4 or imgs.shape[0] != n or imgs.shape[1] not in (1, 3):
        raise ValueError(f"{where}: 'label_img' must have shape [{n}, C, H, W] with C in "
                         f"(1, 3), got {imgs.shape}")
    if imgs.dtype.kind not in "biuf" or 0 in imgs.shape[2:]:
        raise ValueError(f"{where}: 'label_img' must be non-empty real numbers")
    if imgs.dtype == np.uint8:
        pixels = imgs
    else:
        pixels = (imgs.astype(np.float64) * 255).clip(0, 255).astype(np.uint8)
    if pixels.shape[1] == 1:
        pixels = np.repeat(pixels, 3, axis=1)
    _, _, h, w = pixels.shape
    per_row = math.ceil(n ** 0.5)
    rows = math.ceil(n / per_row)
    side = max(per_row * w, rows * h)
    sheet = np.zeros((side, side, 3), np.uint8)
    for i in range(n):
        y, x = divmod(i, per_row)
        sheet[y * h:(y + 1) * h, x * w:(x + 1) * w] = pixels[i].transpose(1, 2, 0)
    buf = io.BytesIO()
    Image.fromarray(sheet).save(buf, format="PNG")
    return buf.getvalue(), w, h


class _Files:
    """Where the projector's files go: the local file system, or an fsspec URL (objects
    are written whole, so no temporary file is needed there)."""

    def __init__(self, logdir: str, storage_options: dict[str, Any] | None) -> None:
        self.remote = "://" in logdir and not logdir.startswith("file://")
        self.fs: Any = None
        if self.remote:
            from summarylib.writer.remote import filesystem

            self.fs = filesystem(logdir, storage_options)

    def join(self, *parts: str) -> str:
        return "/".join(p.rstrip("/") for p in parts) if self.remote else os.path.join(*parts)

    def makedirs(self, path: str) -> None:
        if not self.remote:
            os.makedirs(path, exist_ok=True)

    def write(self, path: str, data: bytes) -> None:
        if self.remote:
            self.fs.pipe_file(self.fs._strip_protocol(path), data)
        else:
            _write_file(path, data)

    def read_text(self, path: str) -> str | None:
        try:
            if self.remote:
                return bytes(self.fs.cat_file(self.fs._strip_protocol(path))).decode("utf-8")
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None


def _write_file(path: str, data: bytes) -> None:
    # Plain creation (0o666 & ~umask), then an atomic rename over the old file, if any.
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0),
                 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        finally:
            raise


def _update_config(files: _Files, logdir: str, info: Any) -> None:
    from google.protobuf import text_format

    from summarylib.proto import projector_config_pb2

    path = files.join(logdir, CONFIG_FILE)
    with _config_lock:
        config = projector_config_pb2.ProjectorConfig()
        text = files.read_text(path)
        if text is not None:
            text_format.Parse(text, config)
        kept = [e for e in config.embeddings if e.tensor_name != info.tensor_name]
        del config.embeddings[:]
        config.embeddings.extend([*kept, info])
        files.write(path, text_format.MessageToString(config).encode("utf-8"))


def embedding(
    mat: Any, metadata: Sequence[Any] | None = None, label_img: Any = None,
    step: Step | None = None, tag: str = "default",
    metadata_header: Sequence[str] | None = None, *, logdir: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> bool:
    """Write an embedding for the projector (see the module docstring).

    Args:
      logdir: the log directory (a local path or a URL); None: the default writer's
        (False if there is none, it records nothing, or it writes to a custom Output).
      storage_options: the fsspec options of a URL ``logdir`` (None: the default writer's).
      step: the step in the names; None: the default step, else 0.

    Returns True once the files and the config entry are written. Raises TypeError or
    ValueError naming the bad argument (nothing written), OSError if a file cannot be.
    """
    import numpy as np

    where = "embedding" if logdir is None else "add_embedding"
    st = _local.state
    if logdir is None:
        writer = st.writer
        if writer is None:
            return False
        logdir = getattr(writer, "logdir", None)
        if logdir is None:
            return False
        if storage_options is None:
            storage_options = getattr(writer, "_settings", {}).get("storage_options")
    if st.condition is not True and not condition_holds(st.condition):
        return False
    if step is None:
        step = st.step if st.step is not None else 0
    step_ = check_step(step, where)
    if step_ < 0:
        raise ValueError(f"{where}: 'step' must be >= 0 for a directory name, got {step_}")
    if not isinstance(tag, str):
        raise TypeError(f"{where}: 'tag' must be a str, got {type(tag).__name__}")
    component = safe_component(tag, where, "tag")
    arr = as_array(mat, where, "mat")
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"{where}: 'mat' must have shape [N, D] with N, D >= 1, got "
                         f"{arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: 'mat' must hold real numbers, got dtype {arr.dtype}")
    points = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.isfinite(points).all():
        raise ValueError(f"{where}: 'mat' must be finite (as float32)")
    n = points.shape[0]
    meta = None if metadata is None else _metadata_bytes(metadata, metadata_header, n, where)
    sprite = None if label_img is None else _sprite_png(label_img, n, where)

    from summarylib.proto import projector_config_pb2

    subdir = f"{step_:05d}/{component}"
    files = _Files(logdir, storage_options)
    directory = files.join(logdir, f"{step_:05d}", component)
    files.makedirs(directory)
    info = projector_config_pb2.EmbeddingInfo(
        tensor_name=f"{tag}:{step_:05d}", tensor_path=f"{subdir}/tensors.tsv")
    files.write(files.join(directory, "tensors.tsv"), tsv_bytes(points))
    if meta is not None:
        files.write(files.join(directory, "metadata.tsv"), meta)
        info.metadata_path = f"{subdir}/metadata.tsv"
    if sprite is not None:
        png, w, h = sprite
        files.write(files.join(directory, "sprite.png"), png)
        info.sprite.image_path = f"{subdir}/sprite.png"
        info.sprite.single_image_dim.extend([w, h])
    _update_config(files, logdir, info)
    return True
