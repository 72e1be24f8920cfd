"""The data model of the offline graph view: what the transformations build.

A :class:`GraphView` is the hierarchy TensorBoard's graph dashboard builds from a GraphDef
(its ``tf_graph_common``: ``graph.ts``, ``hierarchy.ts``, ``template.ts``, ``render.ts``),
computed in Python so that it can be exported (JSON, DOT, SVG, HTML), diffed and linted.

Vocabulary (the dashboard's):

* an **op node** is one NodeDef that survived normalisation (embedded constants and
  summaries hang off their host as ``in_embeddings``/``out_embeddings``);
* a **metanode** is a name scope (``layer1/conv``); the root metanode has the name ``""``;
* a **series** node stands for a run of similar siblings (``add_[1-7]``); it is a group
  whose children are its members;
* a **metaedge** bundles every base edge between two children of one group (the lowest
  common ancestor of the edge's ends), with counts and the tensor size it carries;
* a **template** is a set of groups with the same inner structure (one colour);
* the **side panel** of a group lists the children TensorBoard's ``extractHighDegrees``
  takes out of the group's main layout (``"in"`` and ``"out"`` extract lists).

Every name is a full path (``/``-separated); labels are the last segment. Children of a
group keep a deterministic order: the order of first appearance in the GraphDef.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "BaseEdge",
    "Embedding",
    "GraphView",
    "GroupNode",
    "Metaedge",
    "OpNode",
    "ViewNode",
]

#: A tensor shape: dims with None for unknown (-1); None for an unknown rank.
Shape = tuple[int | None, ...] | None


@dataclass(slots=True)
class Embedding:
    """A constant (in) or summary (out) drawn as a small icon on its host op."""

    name: str
    op: str
    shapes: list[Shape] = field(default_factory=list)


@dataclass(slots=True)
class OpNode:
    """One op after normalisation."""

    name: str
    op: str
    device: str = ""
    #: Attributes for display, ``_output_shapes`` removed; values as short strings.
    attrs: dict[str, str] = field(default_factory=dict)
    #: Output shapes from ``_output_shapes`` (empty when the node declares none).
    shapes: list[Shape] = field(default_factory=list)
    in_embeddings: list[Embedding] = field(default_factory=list)
    out_embeddings: list[Embedding] = field(default_factory=list)
    xla_cluster: str | None = None
    #: Compute time in microseconds from a profile (RunMetadata step stats), when given.
    compute_time_us: float | None = None
    #: The full name of the group (metanode or series) this op is a direct child of.
    parent: str = ""
    kind: Literal["op"] = "op"


@dataclass(slots=True)
class BaseEdge:
    """One input of ``dst``: ``src`` output ``slot`` (``control`` for ``^src`` inputs)."""

    src: str
    dst: str
    slot: int = 0
    control: bool = False
    ref: bool = False


@dataclass(slots=True)
class Metaedge:
    """Every base edge from child ``v`` to child ``w`` of one group, bundled."""

    v: str
    w: str
    regular: int = 0
    control: int = 0
    ref: int = 0
    #: Sum over the bundled base edges of the element count of the source op's outputs
    #: (all its outputs, unknown dims as 1; 1 per edge without shapes): TensorBoard's
    #: ``totalSize``, which sets the edge's width.
    size: int = 0
    #: Shapes of the bundled tensors (source output at the edge's slot), in edge order,
    #: deduplicated; drawn as the edge label.
    shapes: list[Shape] = field(default_factory=list)


@dataclass(slots=True)
class GroupNode:
    """A metanode (``kind="meta"``) or a series (``kind="series"``)."""

    name: str
    kind: Literal["meta", "series"] = "meta"
    #: Direct children's full names, in order (ops, metanodes, series).
    children: list[str] = field(default_factory=list)
    metaedges: list[Metaedge] = field(default_factory=list)
    #: Height of the subtree: 1 when only ops are inside (TensorBoard's ``depth``).
    depth: int = 1
    #: Number of ops inside, at any depth (embedded ones not counted).
    cardinality: int = 0
    op_histogram: dict[str, int] = field(default_factory=dict)
    device_histogram: dict[str, int] = field(default_factory=dict)
    #: Template id shared with structurally identical groups, or None when unique.
    template: str | None = None
    #: Children taken to the side panel: ``{"in": [...], "out": [...]}``.
    side_panel: dict[str, list[str]] = field(
        default_factory=lambda: {"in": [], "out": []})
    #: Series only: the op type of the members (or ``"group"`` for a series of groups),
    #: the numeric ids in order, and whether members connect to each other (drawn as a
    #: vertical stack) or not (horizontal).
    series_op: str | None = None
    series_ids: list[int] = field(default_factory=list)
    series_vertical: bool = False
    parent: str | None = None


ViewNode = OpNode | GroupNode


@dataclass
class GraphView:
    """The whole hierarchy: ``nodes`` maps every full name to its node; root is ``""``."""

    nodes: dict[str, ViewNode]
    edges: list[BaseEdge]
    #: template id -> member group names (only templates with two or more members).
    templates: dict[str, list[str]]
    #: The options the view was built with (see ``ViewOptions``), for the exports.
    options: dict[str, object] = field(default_factory=dict)
    #: Names renamed by normalisation: original -> shown (``A`` -> ``A/(A)``).
    renamed: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> GroupNode:
        node = self.nodes[""]
        assert isinstance(node, GroupNode)
        return node
