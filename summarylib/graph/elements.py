"""The values a graph is made of: :class:`Node`, :class:`TensorSpec`, :class:`DType`.

Their meaning (the data contract) is in :mod:`summarylib.graph.ir`, which exports them with
:class:`~summarylib.graph.ir.Graph`; they live here so that the ``GraphDef`` conversion
(:mod:`summarylib.graph.conversion`) and ``Graph`` can both use them without importing each
other in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DType", "Node", "TensorSpec", "nodes_equal"]


@dataclass(frozen=True)
class TensorSpec:
    """Static shape and dtype of one tensor.

    ``shape`` None means unknown rank; a None dimension means unknown size (written as -1).
    ``()`` is a scalar. ``dtype`` is a numpy-style name or None (unknown).
    """

    shape: tuple[int | None, ...] | None
    dtype: str | None = None

    def __post_init__(self) -> None:
        # Accept lists (and numpy ints) from adapters, but store a hashable tuple.
        if self.shape is not None and not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(self.shape))
        if self.shape is not None and any(d is not None and type(d) is not int for d in self.shape):
            dims = tuple(None if d is None else int(d) for d in self.shape)
            object.__setattr__(self, "shape", dims)


@dataclass(frozen=True)
class DType:
    """An attr value that is a dtype (GraphDef ``AttrValue.type``), e.g. ``DType("float32")``."""

    name: str


@dataclass(eq=False)
class Node:
    """One op of the graph; see the module docstring for the meaning of each field.

    Nodes compare equal when every field is equal (numpy attrs by dtype and content).
    """

    name: str
    op: str
    inputs: list[str] = field(default_factory=list)
    control_inputs: list[str] = field(default_factory=list)
    attrs: dict[str, object] = field(default_factory=dict)
    outputs: list[TensorSpec] = field(default_factory=list)
    device: str = ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and _node_equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def output(self, k: int = 0) -> str:
        """The input string that refers to output ``k`` of this node (``name`` or ``name:k``)."""
        return self.name if k == 0 else f"{self.name}:{k}"


def nodes_equal(a: list[Node], b: list[Node]) -> bool:
    """Whether two node lists are equal node by node (numpy attrs by dtype and content)."""
    if len(a) != len(b):
        return False
    return all(_node_equal(x, y) for x, y in zip(a, b, strict=True))


def _node_equal(x: Node, y: Node) -> bool:
    if (x.name, x.op, x.inputs, x.control_inputs, x.outputs, x.device) != (
        y.name,
        y.op,
        y.inputs,
        y.control_inputs,
        y.outputs,
        y.device,
    ):
        return False
    if x.attrs.keys() != y.attrs.keys():
        return False
    return all(_attr_equal(x.attrs[k], y.attrs[k]) for k in x.attrs)


def _attr_equal(a: object, b: object) -> bool:
    # numpy arrays do not compare with ==; compare dtype, shape and content.
    if type(a).__module__ == "numpy" or type(b).__module__ == "numpy":
        import numpy as np

        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return (
                isinstance(a, np.ndarray)
                and isinstance(b, np.ndarray)
                and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
            )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_attr_equal(p, q) for p, q in zip(a, b, strict=True))
    return a == b
