"""The device paths of the ops that take arrays: audio, PR curves, meshes, tensors.

Each function here is called by its op core with its sink (writer, tag, step) when an
argument is an array on an accelerator (:func:`~summarylib.encoding.pending.device_kind`)
and the writer defers device values. It follows one pattern:

1. On the caller's thread, everything that needs no value is checked from the arrays'
   shapes and dtypes (the op's own checks, run on a
   :func:`~summarylib.encoding.pending.stand_in` where they can be, so the messages are
   the op's), and the device arrays' copies to the host start
   (:mod:`summarylib.encoding.pending`); host arguments are copied, so the caller may
   change them at once.
2. The event is queued with :func:`~summarylib.ops._emit.emit_value_deferred`: on the
   writer thread, in file order, ``make_tensor`` waits for the values and runs the op's
   host encoding on them, checks of values (labels all 0 or 1, finite vertices, ...)
   included. A check that fails there, or a framework error while reading, loses that
   event only and is reported like a failed write, naming the tag.

They return None when a device argument is of a kind the capture does not take (a
sparse torch tensor): the op then runs its ordinary path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from summarylib.encoding.device_reductions import pr_bucket_table
from summarylib.encoding.pending import capture, device_kind, host_dtype, stand_in
from summarylib.ops._emit import emit_value_deferred

if TYPE_CHECKING:
    import numpy as np

    from summarylib.ops._resolve import Sink

__all__ = [
    "any_on_device",
    "audio_deferred",
    "mesh_deferred",
    "pr_curve_deferred",
    "torch_pr_curve",
    "write_deferred",
]

_Read = Callable[[], Any]


def _reader(value: Any, copy: Callable[[Any], Any]) -> tuple[_Read, int] | None:
    """A zero-argument reader of ``value`` at this call, and its size in bytes.

    A device array is captured (read later); anything else is converted by ``copy`` now,
    into memory the caller does not hold. None: a device array the capture does not take.
    """
    if value is None:
        return (lambda: None), 0
    if device_kind(value) is not None:
        pending = capture(value)
        if pending is None:
            return None
        return pending.result, pending.nbytes
    host = copy(value)
    return (lambda: host), int(getattr(host, "nbytes", 0))


def _host_copy(where: str, arg: str) -> Callable[[Any], Any]:
    def copy(value: Any) -> Any:
        import numpy as np

        from summarylib.encoding.arrays import as_array

        return np.array(as_array(value, where, arg))  # a copy, even of a numpy array

    return copy


# ---------------------------------------------------------------------------
# audio
# ---------------------------------------------------------------------------
def audio_deferred(
    sink: Sink, data: Any, keep: int, rate: int, md: bytes
) -> bool | None:
    """:func:`summarylib.audio` of a device array (see the module docstring)."""
    from summarylib.encoding.tensor import string_tensor_bytes
    from summarylib.ops.audio import _tensor_values, prepare

    where, arg = sink.caller.where, sink.caller.data
    # The op's checks of shape, dtype, channels and sizes (and its warning about a
    # [t, c] clip), on a stand-in: no clip is kept, so nothing is converted.
    prepare(stand_in(data), 0, rate, where, arg)
    kept = data[:keep]
    if len(kept.shape) == 2:
        kept = kept[:, :, None]  # as prepare() reshapes it (and warns once, above)
    pending = capture(kept)
    if pending is None:
        return None

    def make_tensor() -> bytes:
        pcm = prepare(pending.result(), keep, rate, where, arg)
        return string_tensor_bytes((len(pcm), 2), _tensor_values(pcm, rate))

    return emit_value_deferred(sink, make_tensor, md, pending.nbytes + 48 * keep + 32)


# ---------------------------------------------------------------------------
# pr_curve
# ---------------------------------------------------------------------------
def pr_curve_deferred(
    sink: Sink, labels: Any, predictions: Any, weights: Any, t: int, md: bytes,
) -> bool | None:
    """:func:`summarylib.pr_curve` with device labels or predictions, written under the
    sink's tag.

    Unweighted counts of two device arrays are made on the device
    (:func:`~summarylib.encoding.device_reductions.pr_bucket_table`): only the per-bucket
    counts cross. Otherwise the arrays cross whole and are counted on the writer thread.
    """
    import numpy as np

    from summarylib.ops.pr_curve import _tensor, pr_data, pr_from_buckets, prepare

    where = sink.caller.where
    _check_pr_shapes(labels, predictions, weights, where)
    table = None
    if weights is None and device_kind(labels) is not None and (
        device_kind(predictions) is not None
    ):
        table = pr_bucket_table(labels, predictions, t)
    if table is not None:
        pending = table

        def make_from_table() -> bytes:
            counts = pending.result().astype(np.int64)
            if counts[-1]:
                raise ValueError(
                    f"{where}: 'labels' must be bool, or numbers that are all 0 or 1")
            return _tensor(pr_from_buckets(counts[:-1].reshape(t, 2)))

        return emit_value_deferred(sink, make_from_table, md, 16 * t + 64)
    reads = [_reader(v, _host_copy(where, arg)) for v, arg in
             ((labels, "labels"), (predictions, "predictions"), (weights, "weights"))]
    if any(r is None for r in reads):
        return None
    (lab_r, n1), (pred_r, n2), (w_r, n3) = reads  # type: ignore[misc]

    def make_tensor() -> bytes:
        lab, pred, w = prepare(lab_r(), pred_r(), w_r(), where)
        return _tensor(pr_data(lab, pred, w, t))

    return emit_value_deferred(sink, make_tensor, md, n1 + n2 + n3 + 24 * t + 64)


def _check_pr_shapes(labels: Any, predictions: Any, weights: Any, where: str) -> None:
    # prepare()'s checks that need no value: dtypes, equal shapes, weights that broadcast.
    import numpy as np

    from summarylib.encoding.arrays import as_array

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


def any_on_device(*values: Any) -> bool:
    """True if one of ``values`` is an array on an accelerator."""
    return any(device_kind(v) is not None for v in values)


def torch_pr_curve(
    sink: Sink, labels: Any, predictions: Any, num_thresholds: int, weights: Any
) -> bool:
    """``SummaryWriter.add_pr_curve``'s write, as the op ``pr_curve_counts`` writes it, of
    device labels, predictions or weights: torch's counting
    (:func:`~summarylib.torch_conventions.pr_curve_data`) runs on the writer thread, on
    the values at this call (read at once with ``sync_device_values=True``).
    """
    from summarylib.encoding.plugins import plugin_data_bytes
    from summarylib.ops._device import defers_device_values
    from summarylib.ops._emit import emit_value
    from summarylib.ops.pr_curve import PLUGIN_NAME, _tensor, plugin_content
    from summarylib.torch_conventions import pr_curve_data

    where = sink.caller.where
    md = plugin_data_bytes(PLUGIN_NAME, plugin_content(num_thresholds))
    if not defers_device_values(sink.writer):
        data = pr_curve_data(labels, predictions, num_thresholds, weights, where)
        return emit_value(sink, _tensor(data), md)
    _check_pr_shapes(labels, predictions, None, where)
    if weights is not None:
        wshape = tuple(int(d) for d in getattr(weights, "shape", ()))
        lshape = tuple(int(d) for d in labels.shape) if hasattr(labels, "shape") else None
        if device_kind(weights) is not None and wshape not in ((), lshape):
            raise ValueError(f"{where}: 'weights' must be a number or of shape {lshape}")
    reads = [_reader(v, _host_copy(where, arg)) for v, arg in
             ((labels, "labels"), (predictions, "predictions"), (weights, "weights"))]
    if any(r is None for r in reads):
        data = pr_curve_data(labels, predictions, num_thresholds, weights, where)
        return emit_value(sink, _tensor(data), md)
    (lab_r, n1), (pred_r, n2), (w_r, n3) = reads  # type: ignore[misc]

    def make_tensor() -> bytes:
        return _tensor(pr_curve_data(lab_r(), pred_r(), num_thresholds, w_r(), where))

    size = n1 + n2 + n3 + 24 * num_thresholds + 64
    return emit_value_deferred(sink, make_tensor, md, size)


# ---------------------------------------------------------------------------
# mesh
# ---------------------------------------------------------------------------
def mesh_deferred(
    sink: Sink, name: str, vertices: Any, faces: Any, colors: Any, config: str,
    description: str | None,
) -> bool | None:
    """:func:`summarylib.mesh` with device components: one event per component, made
    on the writer thread from the values read once (a bad value loses all of them)."""
    from summarylib.encoding.plugins import metadata_bytes, plugin_data_bytes
    from summarylib.ops.mesh import (
        COLOR,
        FACE,
        PLUGIN_NAME,
        VERTEX,
        _plugin_content,
        _values,
        prepare,
    )

    where = sink.caller.where
    shapes = _check_mesh_shapes(vertices, faces, colors, where)
    reads = [_reader(v, _host_copy(where, arg)) for v, arg in
             ((vertices, "vertices"), (faces, "faces"), (colors, "colors"))]
    if any(r is None for r in reads):
        return None
    kinds = [kind for kind, shape in zip((VERTEX, FACE, COLOR), shapes, strict=True)
             if shape is not None]
    mask = 0
    for kind in kinds:
        mask |= 1 << kind
    name_b, config_b = name.encode("utf-8"), config.encode("utf-8")
    got: list[list[tuple[str, bytes, bytes]]] = []

    def values() -> list[tuple[str, bytes, bytes]]:
        # Read and checked once, by the first component's event (all run in file order).
        if not got:
            v, f, c = (read() for read, _ in reads)  # type: ignore[misc]
            parts = prepare(v, f, c, where)
            got.append(_values(name, parts, config, description, where))
        return got[0]

    from summarylib.ops.mesh import _SUFFIX

    nbytes = sum(n for _, n in reads)  # type: ignore[misc]
    wrote = []
    for i, kind in enumerate(kinds):
        shape = shapes[(VERTEX, FACE, COLOR).index(kind)]
        assert shape is not None
        content = _plugin_content(name_b, kind, mask, shape, config_b)
        md = metadata_bytes(plugin_data_bytes(PLUGIN_NAME, content), description, where)
        tag = f"{name}_{_SUFFIX[kind]}"

        def make_tensor(i: int = i) -> bytes:
            return values()[i][1]

        wrote.append(emit_value_deferred(sink._replace(tag=tag), make_tensor, md,
                                         nbytes if i == 0 else 64))
    return all(wrote)


def _check_mesh_shapes(
    vertices: Any, faces: Any, colors: Any, where: str
) -> list[tuple[int, ...] | None]:
    # prepare()'s checks that need no value, in its order and words.
    from summarylib.ops.mesh import _shape

    def meta(value: Any, arg: str, kinds: str, what: str) -> np.ndarray:
        # A stand-in (no memory) of a device array; a host array as it is.
        from summarylib.encoding.arrays import as_array

        arr = stand_in(value) if device_kind(value) is not None else as_array(value, where, arg)
        if arr.dtype.kind not in kinds:
            raise TypeError(f"{where}: {arg!r} must hold {what}, got dtype {arr.dtype}")
        return arr

    verts = meta(vertices, "vertices", "iuf", "real numbers")
    _shape(verts, "vertices", where, "[B, N, 3]")
    b, n = verts.shape[:2]
    if b == 0:
        raise ValueError(f"{where}: 'vertices' must hold at least one mesh, got shape "
                         f"{verts.shape}")
    out: list[tuple[int, ...] | None] = [tuple(verts.shape), None, None]
    if faces is not None:
        f = meta(faces, "faces", "iu", "integers (vertex indices)")
        _shape(f, "faces", where, f"[{b}, F, 3] (B = {b} as in 'vertices')")
        if f.shape[0] != b:
            raise ValueError(f"{where}: 'faces' must have shape [{b}, F, 3] (B = {b} as in "
                             f"'vertices'), got {f.shape}")
        out[1] = tuple(f.shape)
    if colors is not None:
        c = meta(colors, "colors", "iu", "integers in [0, 255] (uint8 RGB)")
        if c.shape != (b, n, 3):
            raise ValueError(f"{where}: 'colors' must have shape [{b}, {n}, 3] (one RGB per "
                             f"vertex), got {c.shape}")
        out[2] = tuple(c.shape)
    return out


# ---------------------------------------------------------------------------
# write (generic tensors)
# ---------------------------------------------------------------------------
def write_deferred(sink: Sink, tensor: Any, md: bytes | None) -> bool | None:
    """:func:`summarylib.write` of a device array: stored in its own dtype, as the host
    path stores it (JAX's bfloat16 as DT_BFLOAT16; torch's as float32, which is what its
    host conversion gives)."""
    import numpy as np

    from summarylib.encoding.tensor import _NUMERIC, array_tensor_bytes

    where, arg = sink.caller.where, sink.caller.data
    kind = device_kind(tensor)
    exact = np.dtype(tensor.dtype) if kind in ("jax", "cupy") else host_dtype(tensor.dtype)
    if exact.name not in _NUMERIC:
        raise TypeError(f"{where}: {arg!r} has dtype {exact}, which TensorBoard cannot store")
    pending = capture(tensor)
    if pending is None:
        return None

    def make_tensor() -> bytes:
        arr = pending.result()
        if arr.dtype != exact:
            arr = arr.astype(exact)  # bfloat16 read as float32: back, exactly
        return array_tensor_bytes(arr, where, arg)

    return emit_value_deferred(sink, make_tensor, md, pending.nbytes + 64)
