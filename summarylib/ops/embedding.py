"""Embeddings for TensorBoard's Projector: points, their labels and thumbnails, as files.

The projector reads no events: it reads ``projector_config.pbtxt`` (a text-format
``ProjectorConfig``) in the log directory and the files it names. :func:`embedding` lays
them out as torch's ``add_embedding`` does:

    <logdir>/projector_config.pbtxt              one entry per (tag, step)
    <logdir>/<step:05d>/<tag>/tensors.tsv        the points, one row per line
    <logdir>/<step:05d>/<tag>/metadata.tsv       labels (if given)
    <logdir>/<step:05d>/<tag>/sprite.png         thumbnails (if given)

and names the tensor ``<tag>:<step:05d>``. TensorBoard shows the log directory's own
config as run ``.``.

The one op that reads device arrays (JAX, torch CUDA) at the call, waiting for the
device: its files, named by the step, are written before it returns (its contract and
torch's), and it writes no event a writer thread could make later. It is meant for
checkpoints, not every step.

Data contract:
  * ``mat``: finite real numbers ``[N, D]`` (N, D >= 1; numpy, lists or anything with
    ``__array__``), written as float32 with 9 significant digits, which read back as
    exactly the same float32 values.
  * ``metadata``: N labels (one column, no header line), or N rows of equal length with
    ``metadata_header`` naming the columns (at least two: the projector takes a first line
    without a tab for a label, not a header). Labels are converted with ``str()`` (numpy
    and framework scalars through ``item()`` first: ``33.0``, not ``tensor(33.)``). Tab,
    line feed and carriage return, which would shift columns or rows, are written as the
    two characters ``\\t``, ``\\n``, ``\\r``. A row that would be a blank line (the
    projector skips those, shifting every later label) gets its first value as Python's
    ``repr``: ``''``, ``' '``.
  * ``label_img``: ``[N, C, H, W]`` thumbnails (torch's NCHW; C in 1, 3). uint8 is taken
    as 0..255; any other real dtype as 0..1, scaled by 255, clipped and truncated as
    torch does (NaN black). Tiled row by row into a sprite of ``ceil(sqrt(N))`` by
    ``ceil(sqrt(N))`` thumbnails (square for square thumbnails, as torch's); the projector
    needs as many thumbnails per column as per row, and at most 8192 px a side.
  * ``tag``: any non-empty name; it becomes one directory name under ``<step:05d>``,
    percent-encoded by :func:`summarylib.writer._path_safety.safe_component` (``/`` becomes
    ``%2f`` as in torch; ``..``, absolute paths, ``\\``, NUL, leading dots and Windows'
    reserved names cannot leave the logdir or name a special file). The tensor name keeps
    the tag as given.
  * Several embeddings (tags, steps) accumulate in the config, also across writers,
    threads, processes and restarts: every call that returned has its entry there; the
    same tag and step again replaces its entry. The config is read, changed and replaced
    atomically (temporary file, then ``os.replace``) under a lock: a lock of this process
    and, where the platform has ``fcntl``, an exclusive ``flock`` of the log directory
    (other processes, also other hosts on a file system whose locks are shared, as NFS).
    Files are created with the process's umask. A URL logdir (``s3://``, ...) gets the
    same files as objects, through fsspec; object stores offer no lock and no
    conditional replace through fsspec, so there the config is only safe from calls of
    one process: let one process (rank 0) write the embeddings of a run.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import as_array
from summarylib.writer._context import (
    Step,
    _local,
    check_step,
    condition_holds,
    no_default_writer,
)
from summarylib.writer._path_safety import safe_component

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CONFIG_FILE", "MAX_SPRITE_SIDE", "embedding", "metadata_tsv", "tsv_bytes"]

CONFIG_FILE = "projector_config.pbtxt"
MAX_SPRITE_SIDE = 8192  # the projector's frontend refuses larger sprite images
_ROWS_PER_CHUNK = 4096
_config_lock = threading.Lock()  # one read-modify-write of a config at a time per process
try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows
    _fcntl = None  # type: ignore[assignment]
_ESCAPES = str.maketrans({"\t": "\\t", "\n": "\\n", "\r": "\\r"})


def tsv_bytes(mat: np.ndarray) -> bytes:
    """``mat`` (float32 ``[N, D]``) as TSV whose values parse back to the same float32.

    9 significant digits identify every float32 (also through float64 first, as
    TensorBoard parses them). One bytes ``%`` formatting of a whole chunk of rows keeps
    the work in C: several times faster than formatting values one by one.
    """
    n, d = mat.shape
    row = b"\t".join([b"%.9g"] * d) + b"\n"
    parts = []
    for start in range(0, n, _ROWS_PER_CHUNK):
        chunk = mat[start:start + _ROWS_PER_CHUNK]
        parts.append((row * len(chunk)) % tuple(chunk.ravel().tolist()))
    return b"".join(parts)


def _cell(value: Any) -> str:
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 1) == 0:
        value = item()
    return str(value).translate(_ESCAPES)


def _blank(line: str) -> bool:
    # What the projector's line.trim() empties: Unicode spaces and the BOM.
    return not line.replace("\ufeff", "").strip()


def _line(cells: list[str]) -> str:
    if _blank("".join(cells)):
        cells[0] = repr(cells[0])
    return "\t".join(cells)


def _row(r: Any) -> list[Any] | None:
    if isinstance(r, (str, bytes)):
        return None
    try:
        return list(r)
    except TypeError:
        return None


def metadata_tsv(metadata: Any, header: Sequence[Any] | None, n: int,
                 where: str = "embedding") -> bytes:
    """The ``metadata.tsv`` of ``n`` points (see the module docstring), as UTF-8."""
    if isinstance(metadata, (str, bytes)):
        raise TypeError(f"{where}: 'metadata' must be a list of labels or rows, "
                        f"got {type(metadata).__name__}")
    try:
        rows = list(metadata)
    except TypeError:
        raise TypeError(f"{where}: 'metadata' must be a list of labels or rows, "
                        f"got {type(metadata).__name__}") from None
    if len(rows) != n:
        raise ValueError(f"{where}: 'metadata' has {len(rows)} entries for {n} points")
    if header is None:
        lines = [_line([_cell(v)]) for v in rows]
    else:
        names = _row(header)
        if names is None:
            raise TypeError(f"{where}: 'metadata_header' must be a list of column names")
        if len(names) < 2:
            raise ValueError(f"{where}: 'metadata_header' must name at least 2 columns, got "
                             f"{len(names)} (give one column as plain labels, no header)")
        width = len(names)
        lines = ["\t".join(_cell(h) for h in names)]
        for i, r in enumerate(rows):
            cells = _row(r)
            if cells is None or len(cells) != width:
                raise ValueError(f"{where}: 'metadata' row {i} must have {width} columns "
                                 f"like 'metadata_header', got {r!r:.60}")
            lines.append(_line([_cell(v) for v in cells]))
    # Lone surrogates cannot be UTF-8; TensorBoard would fail to decode the whole file.
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
        raise ValueError(f"{where}: 'label_img' must be non-empty real numbers, got dtype "
                         f"{imgs.dtype} and shape {imgs.shape}")
    _, _, h, w = imgs.shape
    per_row = math.ceil(n ** 0.5)
    if per_row * max(h, w) > MAX_SPRITE_SIDE:
        raise ValueError(f"{where}: 'label_img' would make a {per_row * w}x{per_row * h} px "
                         f"sprite; the projector shows at most {MAX_SPRITE_SIDE} px a side "
                         f"(use fewer or smaller thumbnails)")
    if imgs.dtype == np.uint8:
        pixels = imgs
    else:
        # torch's make_sprite: times 255 in float64, clipped, truncated.
        scaled = np.nan_to_num(imgs.astype(np.float64) * 255, nan=0.0)
        pixels = scaled.clip(0, 255).astype(np.uint8)
    # The frontend finds a thumbnail's row with index // (sprite height / H) and its column
    # with index % (sprite width / W): both counts must be per_row.
    tiles = np.zeros((per_row * per_row, h, w, 3), np.uint8)
    tiles[:n] = pixels.transpose(0, 2, 3, 1)  # a single channel broadcasts to RGB
    sheet = tiles.reshape(per_row, per_row, h, w, 3).transpose(0, 2, 1, 3, 4)
    buf = io.BytesIO()
    Image.fromarray(sheet.reshape(per_row * h, per_row * w, 3)).save(buf, format="PNG")
    return buf.getvalue(), w, h


class _Files:
    """Where the projector's files go: the local file system, or an fsspec URL (objects
    are written whole, so no temporary file is needed there)."""

    def __init__(self, logdir: str, storage_options: dict[str, Any] | None) -> None:
        self.remote = "://" in logdir and not logdir.startswith("file://")
        self.fs: Any = None
        if self.remote:
            from summarylib.writer._remote import filesystem

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

    @contextlib.contextmanager
    def locked(self, directory: str) -> Iterator[None]:
        """Exclusive use of ``directory``'s config among threads and processes.

        Local directories only, and only with ``fcntl`` (POSIX); elsewhere the
        process's own lock is all there is (see the module docstring).
        """
        with _config_lock:
            if self.remote or _fcntl is None:
                yield
                return
            # flock on the directory itself: no lock file to leave in the logdir.
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the flock

    def read_text(self, path: str) -> str | None:
        try:
            if self.remote:
                return bytes(self.fs.cat_file(self.fs._strip_protocol(path))).decode("utf-8")
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None


def _write_file(path: str, data: bytes) -> None:
    # Plain creation (0o666 & ~umask), then an atomic rename over the old file, if any:
    # a reader (TensorBoard) sees the old file or the new one, never half of one.
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
    with files.locked(logdir):
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
      mat: the points, ``[N, D]``.
      metadata: N labels, or N rows with ``metadata_header``; None: no labels.
      label_img: ``[N, C, H, W]`` thumbnails; None: no sprite.
      step: the step in the names; None: the default step (``as_default(step=...)`` or
        ``set_step``), else 0. Must be >= 0.
      tag: the embedding's name.
      metadata_header: the column names of multi-column ``metadata`` (ignored without it).
      logdir: the log directory (a local path or a URL); None: the default writer's
        ``logdir``. Returns False, writing nothing, if there is no default writer, it
        has no directory (a custom Output), or its recording condition is off.
      storage_options: the fsspec options of a URL ``logdir`` (None: the default writer's).

    Returns True once the files and the config entry are written. Raises TypeError or
    ValueError naming the bad argument (nothing written), OSError if a file cannot be.
    """
    import numpy as np

    where = "embedding" if logdir is None else "add_embedding"
    st = _local.state
    if logdir is None:
        writer = st.writer
        if writer is None:
            return no_default_writer(where)
        logdir = getattr(writer, "logdir", None)
        if logdir is None:
            return False
        if storage_options is None:
            settings = getattr(writer, "settings", None)
            storage_options = None if settings is None else settings.storage_options
    if st.condition is not True and not condition_holds(st.condition):
        return False
    if step is None:
        step = st.step if st.step is not None else 0
    step_ = check_step(step, where)
    if step_ < 0:
        raise ValueError(f"{where}: 'step' must be >= 0 for a directory name, got {step_}")
    component = safe_component(tag, where, "tag")
    arr = as_array(mat, where, "mat")
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"{where}: 'mat' must have shape [N, D] with N, D >= 1, got "
                         f"{arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: 'mat' must hold real numbers, got dtype {arr.dtype}")
    with np.errstate(over="ignore"):  # float64 beyond float32's range: refused just below
        points = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.isfinite(points).all():
        raise ValueError(f"{where}: 'mat' must be finite (as float32)")
    n = points.shape[0]
    meta = None if metadata is None else metadata_tsv(metadata, metadata_header, n, where)
    sprite = None if label_img is None else _sprite_png(label_img, n, where)

    from summarylib.proto import projector_config_pb2

    subdir = f"{step_:05d}/{component}"
    if logdir.startswith("file://"):  # a local path, as the event files take it
        logdir = logdir[len("file://"):]
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
