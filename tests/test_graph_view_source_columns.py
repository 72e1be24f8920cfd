"""``read_source``: an IR graph read column by column is what reading it node by node gives.

``ir_node`` reads one node as the view does (its display record and its inputs collapsed
as TensorBoard collapses them); ``read_source`` reads all nodes at once, making one record
per group of nodes that show the same record and parsing only the inputs that need it.
Every node must come out the same either way.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from summarylib.graph import DType, Graph, Node, TensorSpec
from summarylib.graph.view.normalize import ir_node
from summarylib.graph.view.source_columns import read_source
from tests.helpers import assert_columns_are_nodes

_SHARED = [DType("float32"), TensorSpec((2, None), "int32"), [1, 2], 0.5]
# Values equal across types (1, True, 1.0), equal but shown differently (0.0, -0.0),
# made afresh per node (equal by value), or one shared object.
_VALUE = st.one_of(
    st.sampled_from([1, True, 1.0, 0.0, -0.0, "float32", "", 3]),
    st.sampled_from(["float32", "int32"]).map(DType),
    st.sampled_from([(2, None), (), None]).map(TensorSpec),
    st.sampled_from(_SHARED))
# Output lists made afresh per node, few enough that nodes share them by value.
_OUTPUTS = st.sampled_from([[], [((8, 64), "float32")], [((8, 64), "int32")], [((), None)],
                            [(None, "float32"), ((None, 3), "float32")]]).map(
    lambda specs: [TensorSpec(*s) for s in specs])
# Names with the characters inputs are parsed by (":", "^"), non-ASCII, and empty.
_NAME = st.sampled_from(["a", "b/c", "é/x", "d", "", "^e", "f:g"])
_INPUT = st.tuples(_NAME, st.sampled_from(["", ":0", ":1", ":fn:2", ":x", "^"])).map(
    lambda t: "^" + t[0] if t[1] == "^" else t[0] + t[1])


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    nodes = []
    for i in range(draw(st.integers(1, 25))):
        attrs = dict(draw(st.lists(st.tuples(st.sampled_from(["T", "k", "_class"]), _VALUE),
                                   max_size=2)))
        nodes.append(Node(f"n{i}", draw(st.sampled_from(["Add", "Const", "NoOp"])),
                          draw(st.lists(_INPUT, max_size=4)),
                          draw(st.lists(_NAME.map(lambda x: x + draw(st.sampled_from(
                              ["", ":1"]))), max_size=2)),
                          attrs, draw(_OUTPUTS),
                          draw(st.sampled_from(["", "/cpu:0"]))))
    return Graph(nodes)


_TWINS = Graph([Node(f"n{i}", "Add", attrs={"k": v}, outputs=[TensorSpec((2,), "float32")])
                for i, v in enumerate([0.0, -0.0, 0.0, 1, True, 1.0, 1, DType("int32"),
                                       DType("int32"), "a", "a"])])


@settings(max_examples=150, deadline=None)
@given(graphs())
@example(_TWINS)  # values equal but shown differently, and equal values made afresh
def test_every_node_reads_as_ir_node_reads_it(g: Graph) -> None:
    assert_columns_are_nodes(read_source(g), [ir_node(j, node, {})
                                              for j, node in enumerate(g.nodes)])


def _assert_reads_as_ir_node(g: Graph) -> None:
    shape_cache: dict[object, object] = {}
    assert_columns_are_nodes(read_source(g), [ir_node(j, node, shape_cache)  # type: ignore[arg-type]
                                              for j, node in enumerate(g.nodes)])


@settings(max_examples=25, deadline=None)
@given(graphs(), st.integers(2_000, 3_300))
def test_a_graph_of_thousands_of_nodes_reads_as_ir_node_reads_it(g: Graph, size: int) -> None:
    # The IR reader takes big graphs a thousand or so nodes at a time: records and
    # inputs must come out the same across those rounds, with attribute values and
    # output specs shared between nodes far apart (the same objects) or equal by value,
    # and attribute names first seen in a later round.
    nodes = []
    for k in range(size):
        node = g.nodes[k % len(g.nodes)]
        fresh = k % 3 == 0  # equal by value only, not the same objects
        nodes.append(Node(f"r{k}/{node.name}", node.op, list(node.inputs),
                          list(node.control_inputs),
                          {(key + str(k // 512) if key == "k" else key):
                           (DType(v.name) if fresh and isinstance(v, DType) else v)
                           for key, v in node.attrs.items()},
                          [TensorSpec(s.shape, s.dtype) if fresh else s
                           for s in node.outputs], node.device))
    _assert_reads_as_ir_node(Graph(nodes))
