"""Meshes and point clouds, shown by TensorBoard's Mesh dashboard.

Data contract (each array may be a numpy array, a nested sequence, anything with
``__array__`` such as a torch tensor (the framework is never imported), or a
zero-argument callable returning one):
  * ``vertices``: real numbers (not bool), shape ``[B, N, 3]``: B >= 1 meshes of N points
    (x, y, z); stored as float32 and finite there (NaN, ±inf, or a value too large for
    float32 is refused). bfloat16/float8 count as their float32 values.
  * ``faces`` (optional): integers (not bool, not floats), shape ``[B, F, 3]`` (one
    triangle of vertex indices per row, F may be 0), every index in ``[0, N)``; stored as
    int32.
  * ``colors`` (optional): integers in ``[0, 255]`` (not floats: pass
    ``(c * 255).round().astype("uint8")`` for floats in [0, 1]), shape ``[B, N, 3]`` (RGB
    per vertex); stored as uint8.
  * B is the same in every component. Without faces the mesh is drawn as a point cloud.
  * ``config_dict`` (optional): a dict of three.js settings (camera, lights, material),
    stored as ``json.dumps(config_dict, sort_keys=True)`` (``"{}"`` when None); it must be
    JSON-serializable with str keys and without NaN or infinities (the browser's JSON parser
    refuses them).

Stored as TensorBoard's mesh summary writes it (format.md §5.11): one value (and, from
:func:`mesh`, one event) per component under ``<name>_VERTEX``, ``<name>_FACE``,
``<name>_COLOR``; ``name`` is used literally, without the name scope, as TensorFlow does
(the plugin groups the components by ``MeshPluginData.name``). Each value's metadata is
``plugin_name "mesh"`` with a ``MeshPluginData``: version 0, the name, the component
(``content_type``: VERTEX 1, FACE 2, COLOR 3), the JSON config, the tensor's shape, and the
bitmask of the components present (``1 << content_type`` OR-ed: 2, 4, 8).

Device arrays (JAX arrays, torch CUDA tensors, CuPy arrays) are not read on the caller's
thread: shapes and dtypes are checked, the copies started, and the writer thread checks
the values (finite vertices, face indices, colour range) and encodes the components once
the device is done; a bad value then loses the mesh's events, reported like a failed
write naming the tag.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import (
    as_array,
    evaluate,
    is_extended_float,
    widen_extended_float,
)
from summarylib.encoding._plugins import MESH, metadata_bytes, plugin_data_bytes
from summarylib.encoding._tensor import DT_FLOAT, DT_INT32, DT_UINT8, tensor_bytes
from summarylib.encoding._values import Value, read_values, values_of_arrays
from summarylib.encoding._wire import field_bytes, field_varint, varint
from summarylib.ops._compiled import traceable
from summarylib.ops._device import defers_device_values
from summarylib.ops._emit import emit_value, emit_value_deferred
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "PLUGIN_NAME",
    "create_summary_metadata",
    "mesh",
    "mesh_pb",
    "write_mesh",
]

PLUGIN_NAME = MESH.name
VERTEX, FACE, COLOR = 1, 2, 3  # MeshPluginData.ContentType
_SUFFIX = {VERTEX: "VERTEX", FACE: "FACE", COLOR: "COLOR"}
# content type -> (TF DataType, little-endian numpy dtype of the stored tensor)
_STORED = {VERTEX: (DT_FLOAT, "<f4"), FACE: (DT_INT32, "<i4"), COLOR: (DT_UINT8, "u1")}

_Parts = list[tuple[int, "np.ndarray"]]  # (content type, array in its stored dtype)


def create_summary_metadata(
    name: str,
    content_type: int,
    components: int,
    shape: tuple[int, ...] | list[int],
    json_config: str = "{}",
    description: str | None = None,
) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` of one component (protobuf API)."""
    from summarylib.proto import summary_pb2

    config = json_config.encode("utf-8")
    content = _plugin_content(name.encode("utf-8"), content_type, components, tuple(shape), config)
    where = "create_summary_metadata"
    data = metadata_bytes(plugin_data_bytes(PLUGIN_NAME, content), description, where)
    return summary_pb2.SummaryMetadata.FromString(data)


def _plugin_content(name: bytes, content_type: int, components: int,
                    shape: tuple[int, ...], json_config: bytes) -> bytes:
    # MeshPluginData by hand: version (1) is 0 and so absent; name 2, content_type 3,
    # json_config 5, shape 6 (packed int32), components 7.
    out = field_bytes(2, name) if name else b""
    out += field_varint(3, content_type)
    if json_config:
        out += field_bytes(5, json_config)
    if shape:
        out += field_bytes(6, b"".join(varint(d) for d in shape))
    if components:
        out += field_varint(7, components)
    return out


def _array(data: Any, arg: str, where: str, kinds: str, what: str) -> np.ndarray:
    arr = as_array(data, where, arg)
    if is_extended_float(arr.dtype) and "f" in kinds:
        arr = widen_extended_float(arr)
    if arr.dtype.kind not in kinds:
        raise TypeError(f"{where}: {arg!r} must hold {what}, got dtype {arr.dtype}")
    return arr


def _shape(arr: np.ndarray, arg: str, where: str, expected: str) -> None:
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"{where}: {arg!r} must have shape {expected}, got {arr.shape}")


def prepare(vertices: Any, faces: Any, colors: Any, where: str) -> _Parts:
    """Validate the components; return them as fresh arrays in their stored dtypes."""
    import numpy as np

    verts = _array(vertices, "vertices", where, "iuf", "real numbers")
    _shape(verts, "vertices", where, "[B, N, 3]")
    b, n = verts.shape[:2]
    if b == 0:
        raise ValueError(f"{where}: 'vertices' must hold at least one mesh, got shape "
                         f"{verts.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        stored = verts.astype(np.float32)  # a copy, even of float32
    if not np.isfinite(stored).all():
        raise ValueError(f"{where}: 'vertices' must be finite in float32 (no NaN, inf, or "
                         f"magnitude above 3.4e38)")
    parts: _Parts = [(VERTEX, stored)]
    if faces is not None:
        f = _array(faces, "faces", where, "iu", "integers (vertex indices)")
        _shape(f, "faces", where, f"[{b}, F, 3] (B = {b} as in 'vertices')")
        if f.shape[0] != b:
            raise ValueError(f"{where}: 'faces' must have shape [{b}, F, 3] (B = {b} as in "
                             f"'vertices'), got {f.shape}")
        if f.size and (f.min() < 0 or f.max() >= n):
            raise ValueError(f"{where}: 'faces' must hold vertex indices in [0, {n}), got "
                             f"values in [{f.min()}, {f.max()}]")
        parts.append((FACE, f.astype(np.int32)))
    if colors is not None:
        c = _array(colors, "colors", where, "iu", "integers in [0, 255] (uint8 RGB)")
        if c.shape != (b, n, 3):
            raise ValueError(f"{where}: 'colors' must have shape [{b}, {n}, 3] (one RGB per "
                             f"vertex), got {c.shape}")
        if c.size and (c.min() < 0 or c.max() > 255):
            raise ValueError(f"{where}: 'colors' must be in [0, 255], got values in "
                             f"[{c.min()}, {c.max()}]")
        parts.append((COLOR, c.astype(np.uint8)))
    return parts


def json_config(config_dict: Any, where: str) -> str:
    """``config_dict`` as TensorBoard stores it: sorted-key JSON, ``"{}"`` for None."""
    if config_dict is None:
        return "{}"
    if not isinstance(config_dict, Mapping):
        raise TypeError(f"{where}: 'config_dict' must be a dict or None, got "
                        f"{type(config_dict).__name__}")
    try:
        return json.dumps(dict(config_dict), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where}: 'config_dict' must be JSON-serializable (no NaN or "
                        f"infinity): {e}") from None


def _components(parts: _Parts) -> int:
    mask = 0
    for kind, _ in parts:
        mask |= 1 << kind
    return mask


def _values(name: str, parts: _Parts, config: str, description: str | None,
            where: str, torch_form: bool = False) -> list[tuple[str, bytes, bytes]]:
    """(instance tag, serialized tensor, serialized metadata) per component; with
    ``torch_form`` every component is stored as float32, as torch stores them."""
    import numpy as np

    name_b, config_b, mask = name.encode("utf-8"), config.encode("utf-8"), _components(parts)
    out = []
    for kind, arr in parts:
        content = _plugin_content(name_b, kind, mask, arr.shape, config_b)
        md = metadata_bytes(plugin_data_bytes(PLUGIN_NAME, content), description, where)
        dtype, le = _STORED[VERTEX if torch_form else kind]
        tensor = tensor_bytes(dtype, arr.shape, np.ascontiguousarray(arr, le).tobytes())
        out.append((f"{name}_{_SUFFIX[kind]}", tensor, md))
    return out


def _check_name(name: Any, where: str, arg: str) -> str:
    checked = check_tag(name, where, arg)
    try:
        checked.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: {arg!r} is not valid Unicode text: {e}") from None
    return checked


@traceable
def mesh(
    name: str,
    vertices: Any,
    faces: Any = None,
    colors: Any = None,
    config_dict: Mapping[str, Any] | None = None,
    step: Step | None = None,
    description: str | None = None,
) -> bool:
    """Write a mesh (or a point cloud: no faces) to the default writer.

    Args:
      name: the mesh's name, used literally (no name scope); the tags are
        ``<name>_VERTEX``, ``<name>_FACE`` and ``<name>_COLOR``.
      vertices, faces, colors: see the module docstring.
      config_dict: three.js scene settings, or None.
      step: an int64 step; defaults to the thread's default step.
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if every component was written, False if nothing is recording (the
      data is then not looked at).

    Raises:
      TypeError, ValueError: bad arguments, naming the argument (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(None, step, _CALLER, untagged=True)
    if sink is None:
        return False
    return write_mesh(sink, name, vertices, faces, colors, config_dict, description)


_CALLER = Caller("mesh")


def write_mesh(
    sink: Sink,
    name: str,
    vertices: Any,
    faces: Any = None,
    colors: Any = None,
    config_dict: Mapping[str, Any] | None = None,
    description: str | None = None,
    *,
    torch_form: bool = False,
) -> bool:
    """The core of :func:`mesh`: write the mesh ``name`` (its tags' literal prefix) to
    ``sink``, an untagged sink. ``torch_form``: faces and colors stored as float32, as
    torch's ``SummaryWriter.add_mesh`` stores them (TensorFlow's op: int32 and uint8)."""
    where = sink.caller.where
    name = _check_name(name, where, sink.caller.name)
    metadata_bytes(b"", description, where)  # the description's checks, before any work
    defer = defers_device_values(sink.writer)
    # Faces and colors may be None (left out); vertices may not (prepare() says so).
    values = values_of_arrays(((evaluate(vertices), "vertices"), (evaluate(faces), "faces"),
                               (evaluate(colors), "colors")), defer, where, ("faces", "colors"))
    if any(v is not None and not v.at_hand for v in values):
        return _mesh_deferred(sink, name, values, json_config(config_dict, where),
                              description, torch_form)
    vertices_, faces_, colors_ = read_values(values)
    parts = prepare(vertices_, faces_, colors_, where)
    values_bytes = _values(name, parts, json_config(config_dict, where), description, where,
                           torch_form)
    # One event per component, as TensorFlow writes them; all were validated above.
    return all([emit_value(sink, tensor, md, tag) for tag, tensor, md in values_bytes])


def mesh_pb(
    tag: str,
    vertices: Any,
    faces: Any = None,
    colors: Any = None,
    config_dict: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> summary_pb2.Summary:
    """A ``Summary`` with one value per component, with metadata; no writer needed.

    Same data contract as :func:`mesh`; ``tag`` is the mesh's name.
    """
    import numpy as np

    from summarylib.proto import summary_pb2

    tag = _check_name(tag, "mesh_pb", "tag")
    metadata_bytes(b"", description, "mesh_pb")
    parts = prepare(vertices, faces, colors, "mesh_pb")
    config = json_config(config_dict, "mesh_pb")
    mask = _components(parts)
    summary = summary_pb2.Summary()
    for kind, arr in parts:
        v = summary.value.add()
        v.tag = f"{tag}_{_SUFFIX[kind]}"
        dtype, le = _STORED[kind]
        v.tensor.dtype = dtype  # type: ignore[assignment]
        for d in arr.shape:
            v.tensor.tensor_shape.dim.add().size = d
        v.tensor.tensor_content = np.ascontiguousarray(arr, le).tobytes()
        v.metadata.CopyFrom(
            create_summary_metadata(tag, kind, mask, arr.shape, config, description))
    return summary


def _mesh_deferred(
    sink: Sink, name: str, values: list[Value[np.ndarray] | None], config: str,
    description: str | None, torch_form: bool = False,
) -> bool:
    """:func:`summarylib.mesh` with device components: one event per component, made
    on the writer thread from the values read once (a bad value loses all of them)."""
    where = sink.caller.where
    vertices, faces, colors = (None if v is None else v.stand_in() for v in values)
    assert vertices is not None
    shapes = _check_shapes(vertices, faces, colors, where)
    # Device components' copies start; host ones are copied (the caller may change them).
    kept = [None if v is None else v.keep() for v in values]
    kinds = [kind for kind, shape in zip((VERTEX, FACE, COLOR), shapes, strict=True)
             if shape is not None]
    mask = 0
    for kind in kinds:
        mask |= 1 << kind
    name_b, config_b = name.encode("utf-8"), config.encode("utf-8")
    got: list[list[tuple[str, bytes, bytes]]] = []

    def components() -> list[tuple[str, bytes, bytes]]:
        # Read and checked once, by the first component's event (all run in file order).
        if not got:
            vertices_, faces_, colors_ = read_values(kept)
            parts = prepare(vertices_, faces_, colors_, where)
            got.append(_values(name, parts, config, description, where, torch_form))
        return got[0]

    nbytes = sum(0 if k is None else k.nbytes for k in kept)
    wrote = []
    for i, kind in enumerate(kinds):
        shape = shapes[(VERTEX, FACE, COLOR).index(kind)]
        assert shape is not None
        content = _plugin_content(name_b, kind, mask, shape, config_b)
        md = metadata_bytes(plugin_data_bytes(PLUGIN_NAME, content), description, where)
        tag = f"{name}_{_SUFFIX[kind]}"

        def make_tensor(i: int = i) -> bytes:
            return components()[i][1]

        wrote.append(emit_value_deferred(sink._replace(tag=tag), make_tensor, md,
                                         nbytes if i == 0 else 64))
    return all(wrote)


def _check_shapes(
    verts: np.ndarray, faces: np.ndarray | None, colors: np.ndarray | None, where: str
) -> list[tuple[int, ...] | None]:
    # prepare()'s checks that need no value, in its order and words, on host arrays or
    # stand-ins of device ones.
    def meta(arr: np.ndarray, arg: str, kinds: str, what: str) -> np.ndarray:
        if arr.dtype.kind not in kinds:
            raise TypeError(f"{where}: {arg!r} must hold {what}, got dtype {arr.dtype}")
        return arr

    verts = meta(verts, "vertices", "iuf", "real numbers")
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
