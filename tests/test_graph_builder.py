"""GraphBuilder: TensorFlow naming parity, scopes, constants, control deps, devices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import graph_pb2 as tb_graph_pb2
from tensorboard.compat.proto import types_pb2 as tb_types

from summarylib.graph import DType, Graph, GraphBuilder, Node, TensorSpec, check


def names(b: GraphBuilder) -> list[str]:
    return [n.name for n in b.graph]


def test_op_names_follow_tensorflow() -> None:
    # Expected names are what TF1's tf.Graph.unique_name produces for the same calls.
    b = GraphBuilder()
    b.op("Add")
    b.op("Add")
    b.op("Add", name="Add")
    b.op("Relu", name="foo_1")
    b.op("Relu", name="foo")
    b.op("Relu", name="foo")  # foo_1 is taken, so foo_2
    b.op("Relu", name="foo_1")  # foo_1 is taken twice over: foo_1_1
    b.op("Relu", name="FOO")  # case-insensitive
    assert names(b) == ["Add", "Add_1", "Add_2", "foo_1", "foo", "foo_2", "foo_1_1", "FOO_3"]


def test_scopes_follow_tensorflow() -> None:
    b = GraphBuilder()
    with b.name_scope("block") as s:
        assert s == "block/" and b.scope == "block/"
        b.op("Conv2D")
        with b.name_scope("inner") as inner:
            assert inner == "block/inner/"
            b.op("Relu")
        with b.name_scope(None) as root:
            assert root == ""
            b.op("Relu")
    with b.name_scope("block") as s2:
        assert s2 == "block_1/"
        b.op("Conv2D")
    with b.name_scope("block/") as again:  # absolute: re-enter, not uniquified
        assert again == "block/"
        b.op("Conv2D")
    b.op("Identity", name="block")  # an op cannot take a scope's name
    with b.name_scope("Identity"):  # nor a scope an op's name
        b.op("Relu")
    with b.name_scope("") as empty:
        assert empty == ""
    assert b.scope == ""
    assert names(b) == [
        "block/Conv2D",
        "block/inner/Relu",
        "Relu",
        "block_1/Conv2D",
        "block/Conv2D_1",
        "block_2",
        "Identity/Relu",
    ]
    assert check(b.graph) == [
        i for i in check(b.graph) if i.code in ("missing-shapes", "no-device")
    ]


def test_explicit_full_name_and_existing_graph() -> None:
    b = GraphBuilder()
    with b.name_scope("s"):
        n = b.op("X", name="exact/name/")
    assert n.name == "exact/name"
    with pytest.raises(ValueError, match="'exact/name' already exists"):
        b.op("X", name="exact/name/")
    # A builder over an existing graph keeps clear of its names and scopes.
    g = Graph([Node("a/b", "X"), Node("c", "Y")])
    b2 = GraphBuilder(g)
    assert b2.op("Z", name="c").name == "c_1"
    assert b2.op("Z", name="a").name == "a_1"
    with b2.name_scope("a") as s:
        assert s == "a_2/"
    assert b2.graph is g and len(g) == 4


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["op", "scope", "exit"]), st.sampled_from(["a", "A", "a_1", "b"])
        ),
        max_size=40,
    )
)
def test_generated_names_are_unique_and_never_a_scope(calls: list[tuple[str, str]]) -> None:
    b = GraphBuilder()
    stack = []
    for kind, name in calls:
        if kind == "op":
            b.op("X", name=name, outputs=TensorSpec(()))
        elif kind == "scope":
            cm = b.name_scope(name)
            cm.__enter__()
            stack.append(cm)
        elif stack:
            stack.pop().__exit__(None, None, None)
    lowered = [n.lower() for n in names(b)]
    assert len(set(lowered)) == len(lowered)
    # Names only: repeated scopes holding scopes rightly draw a nested-template warning.
    assert not [i for i in check(b.graph)
                if i.severity != "info" and i.code != "nested-template"]


def test_names_tensorflow_accepts() -> None:
    b = GraphBuilder()
    ok = ["a", "0a", ".a", "a.b-c>d/e_f", "A9"]
    assert [b.op("X", name=n).name for n in ok] == ok
    with b.name_scope("s"):
        # Only the first character of the full name is restricted: a scoped '_x' is fine.
        assert b.op("X", name="_x").name == "s/_x"
    # A default name comes from the op type, without what the rule forbids.
    assert b.op("aten::linear").name == "linear"
    assert b.op("my op").name == "my_op"
    assert b.op("_Recv").name == "op_Recv"
    assert not [i for i in check(b.graph) if i.code == "bad-name"]


def test_unique_names_series_and_error() -> None:
    series = GraphBuilder(unique_names="series")
    for _ in range(6):
        series.op("Add")
    series.op("Add", name="conv2")
    series.op("Add", name="conv2")  # after a trailing digit the underscore stays
    with series.name_scope("block"):
        pass
    with series.name_scope("block") as s:
        assert s == "block1/"
    assert names(series) == ["Add", "Add1", "Add2", "Add3", "Add4", "Add5", "conv2", "conv2_1"]
    # TensorBoard's series rule (last segment ^(\D*)(\d+)$, a bare name as index 0): all
    # six copies share the prefix, so the first one joins the stack too.
    import re

    prefixes = {
        (m.group(1) if (m := re.match(r"^(\D*)(\d+)$", n)) else n) for n in names(series)[:6]
    }
    assert prefixes == {"Add"}

    strict = GraphBuilder(unique_names="error")
    strict.op("Add")
    with pytest.raises(ValueError, match=r"the name 'add' is already in use \(unique_names="
                                         r"'error'; names are compared ignoring case"):
        strict.op("Relu", name="add")
    with strict.name_scope("block"):
        strict.op("Conv")
    with pytest.raises(ValueError, match="'block' is already in use"):
        strict.name_scope("block").__enter__()
    with strict.name_scope("block/"):  # re-entering a scope explicitly is not a duplicate
        with pytest.raises(ValueError, match="'block/Conv' is already in use"):
            strict.op("Conv")
        strict.op("Relu")
    assert names(strict) == ["Add", "block/Conv", "block/Relu"]
    assert GraphBuilder().unique_names == "tf"


def test_const_small_large_and_spec() -> None:
    b = GraphBuilder(device="/device:CPU:0")
    small = b.const(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    assert small.op == "Const" and small.outputs == [TensorSpec((2, 3), "float32")]
    assert small.attrs["dtype"] == DType("float32")
    np.testing.assert_array_equal(small.attrs["value"], np.arange(6).reshape(2, 3))
    py = b.const(1.5)
    assert py.outputs == [TensorSpec((), "float32")] and py.name == "Const"
    ints = b.const([1, 2, 3])
    assert ints.outputs == [TensorSpec((3,), "int32")] and ints.name == "Const_1"
    cast = b.const([1, 2], dtype="int64")
    assert cast.outputs == [TensorSpec((2,), "int64")]
    big = b.const(np.zeros((64, 64), np.float32), name="big")
    assert "value" not in big.attrs and big.outputs == [TensorSpec((64, 64), "float32")]
    kept = b.const(np.zeros((64, 64), np.float32), name="kept", keep_value=True)
    assert kept.attrs["value"].shape == (64, 64)  # type: ignore[attr-defined]
    dropped = b.const(1, name="dropped", keep_value=False)
    assert "value" not in dropped.attrs
    text = b.const(["a", "b"], name="text")
    assert text.outputs == [TensorSpec((2,), "string")]
    spec = b.const(TensorSpec((3, 3), "float16"), name="param", attrs={"target": "fc.weight"})
    assert spec.attrs == {"dtype": DType("float16"), "target": "fc.weight"}
    assert b.const(TensorSpec((1,)), name="nodtype").attrs == {}
    gd = tb_graph_pb2.GraphDef.FromString(b.graph.to_bytes())
    w = gd.node[0]
    assert (
        w.attr["dtype"].type == tb_types.DT_FLOAT
        and w.attr["value"].tensor.dtype == tb_types.DT_FLOAT
    )
    assert "T" not in w.attr and w.device == "/device:CPU:0"


def test_control_dependencies_nest_clear_and_skip_data_inputs() -> None:
    b = GraphBuilder()
    a = b.op("A")
    c = b.op("C")
    with b.control_dependencies([a]):
        x = b.op("X")
        with b.control_dependencies([c, "A"]):
            y = b.op("Y", [a])  # 'A' is already a data input: not repeated
            z = b.op("Z", control_inputs=["C"])
            with b.control_dependencies(None):
                free = b.op("F")
        w = b.op("W", ["A:1"])
    assert x.control_inputs == ["A"]
    assert y.inputs == ["A"] and y.control_inputs == ["C"]
    assert z.control_inputs == ["C", "A"]
    assert free.control_inputs == []
    assert w.control_inputs == []
    gd = tb_graph_pb2.GraphDef.FromString(b.graph.to_bytes())
    assert list(gd.node[3].input) == ["A", "^C"]


def test_devices_and_op_arguments() -> None:
    b = GraphBuilder(device="/device:CPU:0")
    p = b.placeholder((None, 4), "int64", name="ids")
    assert p.attrs == {"dtype": DType("int64"), "shape": TensorSpec((None, 4))}
    assert p.outputs == [TensorSpec((None, 4), "int64")]
    assert b.placeholder(None, None).attrs == {"shape": TensorSpec(None)}
    with b.device("/device:CUDA:0"):
        g = b.op("Gather", p, outputs=[TensorSpec((None, 4, 8), "float32")])
        h = b.op("H", device="/device:CUDA:1")
    assert g.device == "/device:CUDA:0" and g.inputs == ["ids"] and h.device == "/device:CUDA:1"
    assert b.op("After").device == "/device:CPU:0"
    n = b.no_op("group_deps", control_inputs=[g, h])
    assert n.op == "NoOp" and n.control_inputs == ["Gather", "H"]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda b: b.op(""), TypeError, "GraphBuilder.op: 'op_type' must be a non-empty str"),
        (lambda b: b.op("X", [3]), TypeError, "inputs must be Node or non-empty str, got 3"),
        (lambda b: b.op("X", ["^a"]), ValueError, "starts with '\\^'"),
        (lambda b: b.op("X", name="/abs"), ValueError, "must not start with '/'"),
        (lambda b: b.op("X", name="a//b"), ValueError, "'//'"),
        (lambda b: b.op("X", name=""), TypeError, "'name' must be a non-empty str"),
        (lambda b: b.op("X", outputs=[(2, 3)]), TypeError, "'outputs' must hold TensorSpec"),
        (lambda b: b.name_scope(3).__enter__(), TypeError, "name_scope: 'name' must be a str"),
        (lambda b: b.device(None).__enter__(), TypeError, "'device' must be a str"),
        (lambda b: b.const(object()), TypeError, "GraphBuilder.const"),
        # TensorFlow's node-name rule: a ':' would be read as an output slot.
        (lambda b: b.op("X", name="a:1"), ValueError,
         r"GraphBuilder.op: 'name' 'a:1' breaks TensorFlow's node-name rule .*holds ':', "
         r"which the dashboard reads as an output slot"),
        (lambda b: b.op("X", name="a b"), ValueError, r"'name' 'a b' .*holds ' '"),
        (lambda b: b.op("X", name="_x"), ValueError, r"'name' '_x' .*starts with '_'"),
        (lambda b: b.op("X", name="caf\u00e9"), ValueError, "holds '\u00e9'"),
        (lambda b: b.op("X", name="s:0/"), ValueError, r"'name' 's:0' .*holds ':'"),
        (lambda b: b.const(1, name="c:0"), ValueError, r"GraphBuilder.const: 'name' 'c:0'"),
        (lambda b: b.placeholder(None, name="p(0)"), ValueError,
         r"GraphBuilder.placeholder: 'name' 'p\(0\)' .*holds '\(', '\)'"),
        (lambda b: b.no_op(name="n:1"), ValueError, r"GraphBuilder.no_op: 'name' 'n:1'"),
        (lambda b: b.name_scope("blk:1").__enter__(), ValueError,
         r"GraphBuilder.name_scope: 'name' 'blk:1' .*holds ':'"),
        (lambda b: b.name_scope("a:b/").__enter__(), ValueError,
         r"GraphBuilder.name_scope: 'name' 'a:b' .*holds ':'"),
        (lambda b: GraphBuilder(unique_names="numbered"), ValueError,
         r"'unique_names' must be one of \('tf', 'series', 'error'\)"),
    ],
)
def test_bad_input_raises_and_adds_nothing(
    call: object, error: type[Exception], match: str
) -> None:
    b = GraphBuilder()
    b.op("Keep")
    with pytest.raises(error, match=match):
        call(b)  # type: ignore[operator]
    assert names(b) == ["Keep"]
