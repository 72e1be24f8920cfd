"""``read_source`` on a ``GraphDef``: its wire-format reader gives what reading each
NodeDef as a parsed message gives.

The reader scans every node's fields with numpy (the long tail of a node with many
fields in Python), decodes the strings from slices, and makes one display record per
distinct attr-map bytes (one per node for big attr maps). The reference is the
record-per-node reader (``_AttrMemo`` over parsed NodeDefs), node by node.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylib.graph.view.normalize import _source_nodes
from summarylib.graph.view.source_columns import SourceColumns, read_source
from summarylib.proto import graph_pb2, node_def_pb2
from tests.helpers import assert_columns_are_nodes

# Names with the characters inputs are parsed by (":", "^"), non-ASCII, and empty.
_NAME = st.sampled_from(["a", "b/c", "é/x", "d", "", "^e", "f:g", "h:1", "日本"])
_INPUT = st.tuples(_NAME, st.sampled_from(["", ":0", ":1", ":fn:2", ":x", "^"])).map(
    lambda t: "^" + t[0] if t[1] == "^" else t[0] + t[1])


@st.composite
def _node(draw: st.DrawFn, i: int) -> bytes:
    nd = node_def_pb2.NodeDef(name=draw(st.sampled_from([f"n{i}", f"é{i}", "" if i else "z"])),
                              op=draw(st.sampled_from(["Add", "Const", "", "Ünï"])),
                              device=draw(st.sampled_from(["", "/cpu:0", "/gpu:ü"])))
    # Few inputs mostly, sometimes many (the scan's long tail), sometimes long names
    # (lengths of two and three varint bytes).
    k = draw(st.sampled_from([0, 1, 2, 3, 40, 300]))
    nd.input.extend(draw(st.lists(_INPUT, min_size=k, max_size=k)))
    if draw(st.booleans()):
        nd.input.append("x" * draw(st.sampled_from([130, 17000])))
    for key in draw(st.lists(st.sampled_from(["T", "k", "_class", "value", "s",
                                              "_output_shapes", "_XlaCluster"]),
                             max_size=3, unique=True)):
        av = nd.attr[key]
        kind = draw(st.sampled_from(["type", "i", "s", "big", "shape", "list"]))
        if key == "_output_shapes" or kind == "shape":
            for dims in draw(st.lists(st.sampled_from([[], [2], [-1, 3]]), max_size=2)):
                sh = av.list.shape.add() if key == "_output_shapes" else av.shape
                for d in dims:
                    sh.dim.add(size=d)
        elif kind == "type":
            av.type = draw(st.sampled_from([1, 3]))
        elif kind == "i":
            av.i = draw(st.sampled_from([0, 1, -5]))
        elif kind == "s":
            av.s = draw(st.sampled_from(["", "cluster_0", "ü"])).encode()
        elif kind == "big":  # a constant's tensor: at least 4096 bytes of attr map
            av.tensor.dtype = 1
            av.tensor.tensor_content = bytes(draw(st.sampled_from([4096, 5000])))
        else:
            av.list.i.extend(draw(st.lists(st.integers(-3, 3), max_size=3)))
    if draw(st.booleans()):
        nd.experimental_debug_info.original_node_names.append(f"orig{i}")
    data = nd.SerializeToString()
    if draw(st.integers(0, 9)) == 0:
        data += b"\xa0\x06\x07"  # field 100 (varint 7): unknown, a tag of two bytes
    return data


@st.composite
def graph_defs(draw: st.DrawFn) -> graph_pb2.GraphDef:
    gd = graph_pb2.GraphDef()
    for i in range(draw(st.integers(0, 40))):
        gd.node.add().ParseFromString(draw(_node(i)))
    # Nodes that repeat another's attrs (they share a record).
    for j in draw(st.lists(st.integers(0, max(len(gd.node) - 1, 0)), max_size=5)):
        if len(gd.node):
            extra = gd.node.add()
            extra.CopyFrom(gd.node[j])
            extra.name = f"copy{len(gd.node)}"
    if draw(st.booleans()):
        gd.versions.producer = 27
    return gd


def _assert_reads_as_parsed(cols: SourceColumns, gd: graph_pb2.GraphDef) -> None:
    """Every node of ``cols`` is what the record-per-node reader makes of ``gd``'s."""
    raws = list(_source_nodes(gd))
    assert len(raws) == len(gd.node)
    assert_columns_are_nodes(cols, raws)


@settings(max_examples=80, deadline=None)
@given(graph_defs())
def test_every_node_reads_as_its_parsed_node_def_reads(gd: graph_pb2.GraphDef) -> None:
    cols = read_source(gd)
    _assert_reads_as_parsed(cols, gd)
    # Records are numbered in order of first use.
    firsts = [int(r) for r in cols.rec]
    assert sorted(set(firsts)) == list(range(len(cols.records)))
    assert [firsts.index(r) for r in range(len(cols.records))] == sorted(
        firsts.index(r) for r in range(len(cols.records)))


def test_a_node_with_thousands_of_inputs_reads_in_order() -> None:
    gd = graph_pb2.GraphDef()
    for i in range(100):
        gd.node.add(name=f"v{i}", op="Var", input=[f"v{i - 1}:{i % 3}"] if i else [])
    gd.node.add(name="init", op="NoOp", input=[f"^v{i}" for i in range(100)] * 30)
    cols = read_source(gd)
    assert cols.inputs(100) == [(f"v{i}", 0, True) for i in range(100)] * 30
    assert cols.inputs(5) == [("v4", 2, False)]


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    """The varint at ``data[i]`` and the offset after it."""
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 127) << shift
        shift += 7
        if b < 128:
            return value, i


def _chunks(data: bytes) -> list[tuple[int, bytes]]:
    """A message's fields as (field number, the field's bytes), in order (the varint and
    length-delimited wire types: all a NodeDef holds)."""
    out, i = [], 0
    while i < len(data):
        start = i
        key, i = _read_varint(data, i)
        value, i = _read_varint(data, i)  # the varint value, or the length
        if key & 7 == 2:
            i += value
        out.append((key >> 3, data[start:i]))
    return out


@st.composite
def scrambled(draw: st.DrawFn) -> bytes:
    """A serialized GraphDef whose NodeDefs have their fields in another order (fields of
    one number keep theirs: inputs and attr entries are ordered) and sometimes a name
    given twice (a parser keeps the last): bytes no serializer writes, that parse to the
    same message."""
    gd = draw(graph_defs())
    out = b""
    for nd in gd.node:
        chunks = _chunks(nd.SerializeToString())
        if draw(st.booleans()):
            chunks.insert(0, (1, b"\x0a\x05bogus"))
        # Any interleaving of the fields that keeps each number's fields in order.
        taken: dict[int, Any] = {}
        for f, c in chunks:
            taken.setdefault(f, []).append(c)
        taken = {f: iter(cs) for f, cs in taken.items()}
        order = draw(st.permutations([f for f, _ in chunks]))
        body = b"".join(next(taken[f]) for f in order)
        out += b"\x0a" + _varint(len(body)) + body
    if gd.HasField("versions"):
        out += b"\x22" + _varint(gd.versions.ByteSize()) + gd.versions.SerializeToString()
    return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 127
        n >>= 7
        out.append(b | (128 if n else 0))
        if not n:
            return bytes(out)


@settings(max_examples=60, deadline=None)
@given(scrambled())
def test_bytes_in_any_field_order_read_as_they_parse(data: bytes) -> None:
    gd = graph_pb2.GraphDef.FromString(data)
    cols = read_source(gd, data)
    _assert_reads_as_parsed(cols, gd)
    if not gd.HasField("library"):  # the bytes alone, checked by the caller
        _assert_reads_as_parsed(read_source(None, data), gd)


def test_bytes_alone_need_the_bytes() -> None:
    with pytest.raises(TypeError, match="serialized bytes are needed"):
        read_source(None)


def test_a_serialized_graph_def_gives_the_views_page() -> None:
    from summarylib.graph.view import build_view
    from summarylib.graph.view.page_columns import source_to_page_data
    from summarylib.graph.view.page_data import view_to_page_data

    gd = graph_pb2.GraphDef()
    for i in range(30):
        gd.node.add(name=f"layer_{i // 10}/op{i}", op="Add" if i % 3 else "Const",
                    input=[f"layer_{(i - 1) // 10}/op{i - 1}"] if i else [])
    # The same graph, each NodeDef's fields reversed and its name given twice.
    data = b"".join(
        b"\x0a" + _varint(len(body)) + body for body in (
            b"\x0a\x05bogus" + b"".join(c for _, c in reversed(_chunks(n.SerializeToString())))
            for n in gd.node))
    assert graph_pb2.GraphDef.FromString(data) == gd
    page = source_to_page_data(data)
    assert page is not None
    assert page == view_to_page_data(build_view(gd)) == source_to_page_data(gd)
    # An empty function library: its bytes read through the parsed message.
    gd.library.SetInParent()
    data = gd.SerializeToString()
    assert page == source_to_page_data(data) == view_to_page_data(build_view(data))
