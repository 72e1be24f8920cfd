"""A framework-neutral dataflow graph, convertible to and from TensorFlow's ``GraphDef``.

Data contract (what TensorBoard's graph dashboard reads, graph-pipeline.md §2.2):

* ``Node.name`` is the full ``/``-scoped path (``layer1/0/conv1/Conv2D``) and is unique in
  its :class:`Graph` (``Graph.add`` raises on a duplicate). Scopes become the dashboard's
  nested groups.
* ``Node.inputs`` are data inputs ``"src"`` (output 0) or ``"src:k"`` (output k);
  ``Node.control_inputs`` are plain node names. In the GraphDef the control inputs become
  ``"^src"`` and are listed after the data inputs, as TensorFlow requires.
* ``Node.outputs`` holds one :class:`TensorSpec` per output slot, in slot order. It becomes
  the ``_output_shapes`` attr (edge labels and thickness). Output dtypes travel as attr
  ``T`` when every output has the same known dtype and the node has neither ``T`` nor
  ``dtype`` attrs, and as ``_output_types`` (a list of ``DataType``) when they differ.
  Reading a GraphDef reverses this (``T``, or a ``dtype`` attr, fills the dtypes).
* ``Node.attrs`` maps names to plain Python values: ``str``/``bytes`` (``s``), ``bool``
  (``b``), ``int`` (``i``, int64 range), ``float`` (``f``, stored as float32 and read back
  as the shortest decimal of that float32, so ``1e-5`` stays ``1e-05``),
  :class:`DType` (``type``), :class:`TensorSpec` (``shape``; its dtype is not stored), a
  small numpy array
  (``tensor``), or a homogeneous ``list``/``tuple`` of one of those. Reading back, ``s``
  comes back as ``str`` when it is valid UTF-8 and as ``bytes`` otherwise; lists come back
  as lists.
* Dtypes are numpy-style names (``"float32"``, ``"int64"``, ``"bool"``, ``"string"``...);
  an unknown name is written as ``DT_INVALID`` and reported by :func:`summarylib.graph.lint.check`.

:class:`Node`, :class:`TensorSpec` and :class:`DType` are defined in
:mod:`summarylib.graph.elements` and exported here with :class:`Graph`.
``GraphDef.library`` (function definitions) is not represented. The conversion itself is
:mod:`summarylib.graph.conversion`, which imports protobuf and numpy on first use; dtype
numbers come from the library's one registry, :mod:`summarylib.encoding._tensor`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

# One dtype registry for the library; the old names of its lookups stay importable here.
from summarylib.encoding._tensor import data_type as dtype_enum
from summarylib.encoding._tensor import data_type_name as dtype_name
from summarylib.graph.conversion import (
    GRAPH_DEF_PRODUCER,
    f32_shortest,
    graph_def_bytes,
    graph_def_message,
    nodes_from_graph_def,
)
from summarylib.graph.elements import DType, Node, TensorSpec, nodes_equal

if TYPE_CHECKING:
    from summarylib.proto import graph_pb2

__all__ = [
    "GRAPH_DEF_PRODUCER",
    "DType",
    "Graph",
    "Node",
    "TensorSpec",
    "dtype_enum",
    "dtype_name",
    "f32_shortest",
    "split_input",
]

def split_input(inp: str) -> tuple[str, int]:
    """``"a/b:2"`` -> ``("a/b", 2)``; ``"a/b"`` -> ``("a/b", 0)``; a leading ``^`` is kept."""
    name, sep, slot = inp.rpartition(":")
    if sep and slot.isdigit():
        return name, int(slot)
    return inp, 0


class Graph:
    """An ordered collection of uniquely named :class:`Node` objects.

    ``nodes`` is the list in insertion order (the GraphDef order). Use :meth:`add` to
    insert: it rejects duplicate names. ``g["a/b"]`` looks a node up by name. Appending to or
    deleting from ``nodes`` directly is noticed; after renaming nodes in place call
    :meth:`reindex` (``in`` and :meth:`add` use the index as it stands).
    """

    def __init__(self, nodes: Iterable[Node] = ()) -> None:
        self.nodes: list[Node] = []
        self._index: dict[str, Node] = {}
        for node in nodes:
            self.add(node)

    def add(self, node: Node) -> Node:
        """Append ``node``; ValueError if a node of that name is already in the graph."""
        if not isinstance(node, Node):
            raise TypeError(f"Graph.add: expected a Node, got {type(node).__name__}")
        if node.name in self:
            raise ValueError(f"Graph.add: a node named {node.name!r} is already in the graph")
        self.nodes.append(node)
        self._index[node.name] = node
        return node

    def reindex(self) -> None:
        """Rebuild the name index after editing ``nodes`` or node names directly."""
        self._index = {}
        for node in self.nodes:
            self._index.setdefault(node.name, node)

    def _lookup(self) -> dict[str, Node]:
        # ``nodes`` is a public list: appends and deletions made directly are noticed here.
        if len(self._index) != len(self.nodes):
            self.reindex()
        return self._index

    def __contains__(self, name: object) -> bool:
        node = self._lookup().get(name) if isinstance(name, str) else None
        return node is not None and node.name == name

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, name: str) -> Node:
        node = self._lookup().get(name)
        if node is None or node.name != name:  # maybe renamed in place: look again
            self.reindex()
            node = self._index.get(name)
        if node is None:
            raise KeyError(name)
        return node

    def __repr__(self) -> str:
        return f"Graph({len(self.nodes)} nodes)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and nodes_equal(self.nodes, other.nodes)

    __hash__ = None  # type: ignore[assignment]

    def to_graph_def(self) -> graph_pb2.GraphDef:
        """This graph as a ``GraphDef`` message (``versions.producer`` = GRAPH_DEF_PRODUCER;
        see :mod:`summarylib.graph.conversion`)."""
        return graph_def_message(self.nodes)

    def to_bytes(self) -> bytes:
        """The serialized ``GraphDef``: the message :meth:`to_graph_def` builds, encoded
        without building it (see :func:`summarylib.graph.conversion.graph_def_bytes`)."""
        return graph_def_bytes(self.nodes)

    @classmethod
    def from_graph_def(cls, gd: Any) -> Graph:
        """Read a ``GraphDef`` message (ours or TensorBoard's/TensorFlow's) or its bytes.

        Duplicate node names raise ValueError (use ``lint.check`` on the GraphDef to list
        them instead).
        """
        return cls(nodes_from_graph_def(gd))
