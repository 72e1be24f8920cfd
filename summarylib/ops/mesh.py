"""Meshes and point clouds, shown by TensorBoard's Mesh dashboard.

Data contract:
  * ``vertices``: real numbers of shape ``[B, N, 3]`` (B meshes of N points, x y z),
    finite; stored as float32.
  * ``faces`` (optional): integers of shape ``[B, F, 3]``, vertex indices in ``[0, N)``
    (one triangle per row); stored as int32.
  * ``colors`` (optional): integers in ``[0, 255]`` of shape ``[B, N, 3]`` (RGB per
    vertex); stored as uint8.
  * ``config_dict`` (optional): a JSON-serializable dict of three.js settings (camera,
    lights, material), stored as ``json.dumps(config_dict, sort_keys=True)``.
  * Inputs may be numpy arrays, sequences or framework tensors (through ``__array__``).

Stored as TensorBoard's mesh summary writes it (format.md §5.11): one value per component
under ``<name>_VERTEX``, ``<name>_FACE``, ``<name>_COLOR`` (the name used literally: the
plugin groups the three by ``MeshPluginData.name``), each with metadata ``plugin_name
"mesh"`` and a ``MeshPluginData`` (version 0, the name, the component, the JSON config,
the tensor's shape and the bitmask of the components present).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from summarylib.encoding.arrays import as_array
from summarylib.encoding.tensor import array_tensor_bytes
from summarylib.ops._emit import emit_value
from summarylib.ops._media import metadata_bytes, plugin_data_bytes
from summarylib.ops._resolve import check_tag, resolve
from summarylib.writer.context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = ["PLUGIN_NAME", "create_summary_metadata", "mesh", "mesh_pb"]

PLUGIN_NAME = "mesh"
VERTEX, FACE, COLOR = 1, 2, 3
_SUFFIX = {VERTEX: "VERTEX", FACE: "FACE", COLOR: "COLOR"}


def create_summary_metadata(
    name: str, content_type: int, components: int, shape: tuple[int, ...],
    json_config: str = "{}", description: str | None = None,
) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` of one component (protobuf API)."""
    from summarylib.proto import mesh_plugin_data_pb2, summary_pb2

    content = mesh_plugin_data_pb2.MeshPluginData(
        version=0, name=name, content_type=cast(Any, content_type), components=components,
        shape=list(shape), json_config=json_config).SerializeToString()
    return summary_pb2.SummaryMetadata(
        summary_description=description,
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME,
                                                           content=content))


def _component(data: Any, arg: str, where: str, kind: str) -> np.ndarray:
    import numpy as np

    arr = as_array(data, where, arg)
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"{where}: {arg!r} must have shape [B, N, 3], got {arr.shape}")
    if arr.dtype.kind not in ("biuf" if kind == "f" else "biu"):
        what = "real numbers" if kind == "f" else "integers"
        raise TypeError(f"{where}: {arg!r} must hold {what}, got dtype {arr.dtype}")
    return arr if kind != "f" else arr.astype(np.float32)


def _prepare(
    where: str, vertices: Any, faces: Any, colors: Any, config_dict: Any
) -> tuple[list[tuple[int, np.ndarray]], str]:
    import numpy as np

    verts = _component(vertices, "vertices", where, "f")
    if not np.isfinite(verts).all():
        raise ValueError(f"{where}: 'vertices' must be finite")
    parts = [(VERTEX, verts)]
    b, n = verts.shape[:2]
    if faces is not None:
        f = _component(faces, "faces", where, "i")
        if f.shape[0] != b:
            raise ValueError(f"{where}: 'faces' has {f.shape[0]} meshes, 'vertices' {b}")
        if f.size and (f.min() < 0 or f.max() >= n):
            raise ValueError(f"{where}: 'faces' must index vertices in [0, {n})")
        parts.append((FACE, f.astype(np.int32)))
    if colors is not None:
        c = _component(colors, "colors", where, "i")
        if c.shape[:2] != (b, n):
            raise ValueError(
                f"{where}: 'colors' must have shape [{b}, {n}, 3] like 'vertices', got {c.shape}")
        if c.size and (c.min() < 0 or c.max() > 255):
            raise ValueError(f"{where}: 'colors' must be in [0, 255]")
        parts.append((COLOR, c.astype(np.uint8)))
    if config_dict is None:
        config = "{}"
    elif not isinstance(config_dict, Mapping):
        raise TypeError(f"{where}: 'config_dict' must be a dict or None, got "
                        f"{type(config_dict).__name__}")
    else:
        try:
            config = json.dumps(config_dict, sort_keys=True)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{where}: 'config_dict' is not JSON-serializable: {e}") from None
    return parts, config


def _values(name: str, parts: list[tuple[int, np.ndarray]], config: str,
            description: str | None, where: str) -> list[tuple[str, bytes, bytes]]:
    from summarylib.proto import mesh_plugin_data_pb2

    components = 0
    for kind, _ in parts:
        components |= 1 << kind
    out = []
    for kind, arr in parts:
        content = mesh_plugin_data_pb2.MeshPluginData(
            version=0, name=name, content_type=cast(Any, kind), components=components,
            shape=list(arr.shape), json_config=config).SerializeToString()
        md = metadata_bytes(plugin_data_bytes(PLUGIN_NAME, content), description, where)
        out.append((f"{name}_{_SUFFIX[kind]}", array_tensor_bytes(arr, where), md))
    return out


def mesh(
    name: str, vertices: Any, faces: Any = None, colors: Any = None,
    config_dict: Mapping[str, Any] | None = None, step: Step | None = None,
    description: str | None = None,
) -> bool:
    """Write a mesh (or a point cloud: no faces) to the default writer.

    Returns True if written, False if nothing is recording. Raises TypeError/ValueError
    naming the bad argument (nothing written). ``name`` is used literally (no name scope).
    """
    resolved = resolve(name, step, "mesh", scoped=False)
    if resolved is None:
        return False
    writer, tag, step_ = resolved
    parts, config = _prepare("mesh", vertices, faces, colors, config_dict)
    values = _values(tag, parts, config, description, "mesh")
    wrote = False
    for instance_tag, tensor, md in values:
        wrote = emit_value(writer, instance_tag, step_, tensor, md) or wrote
    return wrote


def mesh_pb(
    tag: str, vertices: Any, faces: Any = None, colors: Any = None,
    config_dict: Mapping[str, Any] | None = None, description: str | None = None,
) -> summary_pb2.Summary:
    """A ``Summary`` with the mesh's values, with metadata; no writer needed."""
    from summarylib.encoding.events import value_bytes
    from summarylib.encoding.wire import field_bytes
    from summarylib.proto import summary_pb2

    tag = check_tag(tag, "mesh_pb", "tag")
    parts, config = _prepare("mesh_pb", vertices, faces, colors, config_dict)
    values = _values(tag, parts, config, description, "mesh_pb")
    return summary_pb2.Summary.FromString(b"".join(
        field_bytes(1, value_bytes(t, tensor, md)) for t, tensor, md in values))
