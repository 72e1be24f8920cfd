"""diff_views: a model before and after a change names exactly that change."""

from __future__ import annotations

import json
import warnings
from html.parser import HTMLParser
from typing import Any

import pytest

from summarylib.graph import Graph, GraphBuilder, Node, TensorSpec
from summarylib.graph.view import build_view
from summarylib.graph.view.diff_rendering import diff_to_html, diff_to_json, diff_to_text
from summarylib.graph.view.diffing import (
    EdgeChange,
    GraphDiff,
    OpRef,
    ScopeDiff,
    diff_views,
)

F32 = "float32"


def _dense(b: GraphBuilder, x: Node, n_in: int, n_out: int, scope: str = "dense",
           act: str = "Relu") -> Node:
    """A TF1-style dense layer: kernel/bias variables (each with a ``read``), MatMul,
    BiasAdd, Relu. ``kernel`` beside ``kernel/read`` is renamed ``kernel/(kernel)``."""
    with b.name_scope(scope):
        k = b.op("VariableV2", [], name="kernel", outputs=TensorSpec((n_in, n_out), F32))
        kr = b.op("Identity", [k], name="kernel/read", outputs=TensorSpec((n_in, n_out), F32))
        bias = b.op("VariableV2", [], name="bias", outputs=TensorSpec((n_out,), F32))
        br = b.op("Identity", [bias], name="bias/read", outputs=TensorSpec((n_out,), F32))
        mm = b.op("MatMul", [x, kr], outputs=TensorSpec((None, n_out), F32))
        ba = b.op("BiasAdd", [mm, br], outputs=TensorSpec((None, n_out), F32))
        return b.op(act, [ba], name="Relu", outputs=TensorSpec((None, n_out), F32))


def mlp(widths: list[int], scopes: list[str] | None = None, act: str = "Relu") -> Graph:
    """input -> one dense layer per width step -> output (Identity)."""
    b = GraphBuilder()
    x = b.placeholder((None, widths[0]), F32, name="x")
    h = x
    for i in range(len(widths) - 1):
        scope = scopes[i] if scopes else "dense"
        h = _dense(b, h, widths[i], widths[i + 1], scope, act if i == 0 else "Relu")
    b.op("Identity", [h], name="output", outputs=TensorSpec((None, widths[-1]), F32))
    return b.graph


def summary(d: GraphDiff) -> dict[str, Any]:
    """Everything the diff says, flattened, for exact comparisons."""
    out: dict[str, Any] = {
        "added_scopes": [], "removed_scopes": [], "renamed": dict(d.renamed),
        "added_ops": [], "removed_ops": [], "changed_ops": {}, "added_edges": [],
        "removed_edges": [],
    }
    for s in d.scopes():
        if s.status == "added":
            out["added_scopes"].append((s.name, s.ops[1]))
        elif s.status == "removed":
            out["removed_scopes"].append((s.name, s.ops[0]))
        out["added_ops"] += [(o.name, o.op) for o in s.added_ops]
        out["removed_ops"] += [(o.name, o.op) for o in s.removed_ops]
        for ch in s.changed_ops:
            out["changed_ops"][ch.name] = {
                k: v for k, v in (("op", ch.op), ("attrs", ch.attrs), ("shapes", ch.shapes),
                                  ("device", ch.device), ("embeddings", ch.embeddings)) if v}
        out["added_edges"] += [(e.src, e.dst, e.slot, e.control) for e in s.added_edges]
        out["removed_edges"] += [(e.src, e.dst, e.slot, e.control) for e in s.removed_edges]
    for k in ("added_edges", "removed_edges"):
        out[k].sort()
    return out


EMPTY = {
    "added_scopes": [], "removed_scopes": [], "renamed": {}, "added_ops": [],
    "removed_ops": [], "changed_ops": {}, "added_edges": [], "removed_edges": [],
}


def test_identical_graphs() -> None:
    v = build_view(mlp([4, 8, 2]))
    d = diff_views(v, build_view(mlp([4, 8, 2])))
    assert d.identical
    assert summary(d) == EMPTY
    assert diff_to_text(d) == "graph diff: no differences\n"
    assert d.stats["ops_a"] == d.stats["ops_b"] == 16


def test_layer_added() -> None:
    a = build_view(mlp([4, 8, 2]))
    b = build_view(mlp([4, 8, 2, 2]))
    d = diff_views(a, b)
    assert not d.identical
    # The new layer, and the three edges that wire it in: nothing else.
    assert summary(d) == {
        **EMPTY,
        "added_scopes": [("dense_2", 7)],
        "added_edges": sorted([
            ("dense_1/Relu", "dense_2/MatMul", 0, False),
            ("dense_2/Relu", "output", 0, False),
        ]),
        "removed_edges": [("dense_1/Relu", "output", 0, False)],
    }
    assert d.stats["ops_added"] == 7 and d.stats["ops_removed"] == 0
    assert d.root.histogram == {"BiasAdd": (2, 3), "Identity": (5, 7), "MatMul": (2, 3),
                                "Relu": (2, 3), "VariableV2": (4, 6)}
    text = diff_to_text(d)
    assert "+ dense_2/  (added scope, 7 ops" in text
    assert "+ edge dense_1/Relu -> dense_2/MatMul" in text
    assert "- edge dense_1/Relu -> output" in text
    # Only the root block and its lines: no other scope is mentioned.
    assert [ln.split()[1] for ln in text.splitlines()[1:] if ln.lstrip()[:1] in "+-~"
            and not ln.lstrip()[2:].startswith(("edge", "op"))] == ["(root)", "dense_2/"]


def test_shape_changed() -> None:
    a = build_view(mlp([4, 8, 2]))
    b = build_view(mlp([6, 8, 2]))  # a wider input: x and dense's kernel change shape
    d = diff_views(a, b)
    assert summary(d) == {
        **EMPTY,
        "changed_ops": {
            "x": {"attrs": {"shape": ("[?,4]", "[?,6]")}, "shapes": ([(None, 4)], [(None, 6)])},
            "dense/kernel": {"shapes": ([(4, 8)], [(6, 8)])},
            "dense/kernel/read": {"shapes": ([(4, 8)], [(6, 8)])},
        },
    }
    (scope,) = [s for s in d.scopes() if s.name == "dense"]
    assert [c.name for c in scope.changed_ops] == ["dense/kernel"]
    assert [s.name for s in d.scopes()] == ["", "x", "dense", "dense/kernel"] or \
        [s.name for s in d.scopes()] == ["", "dense", "dense/kernel"]
    text = diff_to_text(d)
    assert "~ op dense/kernel: shapes [(4, 8)] -> [(6, 8)]" in text
    assert "~ op x: shapes [(?, 4)] -> [(?, 6)]" in text


def test_layer_added_and_shape_changed_together() -> None:
    a = build_view(mlp([4, 8, 2]))
    b = build_view(mlp([6, 8, 2, 2]))
    s = summary(diff_views(a, b))
    assert s["added_scopes"] == [("dense_2", 7)]
    assert set(s["changed_ops"]) == {"x", "dense/kernel", "dense/kernel/read"}
    assert len(s["added_edges"]) == 2 and len(s["removed_edges"]) == 1
    assert s["added_ops"] == s["removed_ops"] == s["removed_scopes"] == []


def test_rename_with_identical_structure() -> None:
    a = build_view(mlp([4, 8, 2], ["encoder", "head"]))
    b = build_view(mlp([4, 8, 2], ["enc", "head"]))
    d = diff_views(a, b)
    assert summary(d) == {**EMPTY, "renamed": {"encoder": "enc"}}
    assert not d.identical
    (scope,) = [s for s in d.scopes() if s.renamed]
    assert (scope.old_name, scope.name, scope.ops) == ("encoder", "enc", (7, 7))
    assert "~ enc/  (renamed from encoder/)" in diff_to_text(d)


def test_rename_with_a_change_inside() -> None:
    # Renamed and its activation changed: still a rename (similar enough), plus the change.
    a = build_view(mlp([4, 8, 2], ["encoder", "head"]))
    b = build_view(mlp([4, 8, 2], ["enc", "head"], act="Tanh"))
    s = summary(diff_views(a, b))
    assert s == {**EMPTY, "renamed": {"encoder": "enc"},
                 "changed_ops": {"enc/Relu": {"op": ("Relu", "Tanh")}}}
    # Renamed and wider (every shape inside changes): a rename too.
    b = build_view(mlp([4, 9, 2], ["enc", "head"]))
    s = summary(diff_views(a, b))
    assert s["renamed"] == {"encoder": "enc"}
    assert s["added_scopes"] == s["removed_scopes"] == s["added_ops"] == []
    assert set(s["changed_ops"]) == {
        f"enc/{op}" for op in ("kernel", "kernel/read", "bias", "bias/read", "MatMul",
                               "BiasAdd", "Relu")
    } | {"head/kernel", "head/kernel/read"}
    assert s["added_edges"] == s["removed_edges"] == []


def test_names_shifted_by_an_inserted_layer() -> None:
    # TF naming: a layer inserted in front renames the old dense -> dense_1 -> dense_2.
    a = build_view(mlp([4, 8, 2]))
    b = build_view(mlp([4, 3, 8, 2]))  # new first layer 4->3; old layers now 3->8, 8->2
    d = diff_views(a, b)
    s = summary(d)
    # dense_1 (8->2) is identical and renamed dense_2; dense keeps its name (a partner of
    # the same name wins over a merely similar one) and changes shapes; dense_1 is new.
    assert s["renamed"] == {"dense_1": "dense_2"}
    assert s["removed_scopes"] == []
    assert s["added_scopes"] == [("dense_1", 7)]
    assert set(s["changed_ops"]) == {f"dense/{op}" for op in (
        "kernel", "kernel/read", "bias", "bias/read", "MatMul", "BiasAdd", "Relu")}


def test_unchanged_name_keeps_its_partner() -> None:
    # A copy of the encoder is added and the original changed: 'encoder' stays 'encoder'.
    a = build_view(mlp([4, 8, 2], ["encoder", "head"]))
    b = build_view(mlp([4, 8, 8, 2], ["encoder", "encoder_copy", "head"]))
    s = summary(diff_views(a, b))
    assert s["renamed"] == {}
    assert s["added_scopes"] == [("encoder_copy", 7)]


def test_scope_removed_and_op_changes() -> None:
    b1 = GraphBuilder()
    x = b1.placeholder((None, 4), F32, name="x")
    y = b1.op("Relu", [x], name="act", outputs=TensorSpec((None, 4), F32))
    with b1.name_scope("aux"):
        b1.op("Square", [y], outputs=TensorSpec((None, 4), F32))
    b1.op("Identity", [y], name="out", outputs=TensorSpec((None, 4), F32), device="/cpu:0")

    b2 = GraphBuilder()
    x = b2.placeholder((None, 4), F32, name="x")
    y = b2.op("Tanh", [x], name="act", outputs=TensorSpec((None, 4), F32))
    b2.op("Identity", [y], name="out", outputs=TensorSpec((None, 4), F32), device="/gpu:0",
          attrs={"note": "new"})
    b2.op("NoOp", [], name="extra", control_inputs=[y])
    d = diff_views(build_view(b1.graph), build_view(b2.graph))
    s = summary(d)
    assert s["removed_scopes"] == [("aux", 1)]
    assert s["added_ops"] == [("extra", "NoOp")]
    assert s["changed_ops"]["act"] == {"op": ("Relu", "Tanh")}
    assert s["changed_ops"]["out"]["device"] == ("/cpu:0", "/gpu:0")
    assert set(s["changed_ops"]["out"]["attrs"]) == {"note"}
    assert s["changed_ops"]["out"]["attrs"]["note"][0] is None
    # The edge into the removed scope is listed (it is a rewiring at the root); the
    # control edge into the new op too.
    assert s["removed_edges"] == [("act", "aux/Square", 0, False)]
    assert s["added_edges"] == [("act", "extra", 0, True)]
    text = diff_to_text(d)
    assert "- aux/  (removed scope, 1 ops: Square 1->0)" in text
    assert "+ edge act -> extra (control)" in text
    assert "~ op act: op Relu -> Tanh" in text


def test_renaming_by_normalisation_is_not_a_change() -> None:
    # 'A' becomes 'A/(A)' in B only because B adds 'A/x': A itself did not move.
    g1 = Graph([Node("A", "Placeholder"), Node("B", "Relu", inputs=["A"])])
    g2 = Graph([Node("A", "Placeholder"), Node("A/x", "Relu", inputs=["A"]),
                Node("B", "Relu", inputs=["A"])])
    va, vb = build_view(g1), build_view(g2)
    assert vb.renamed == {"A": "A/(A)"}
    s = summary(diff_views(va, vb))
    assert s == {**EMPTY, "added_scopes": [("A", 1)], "added_edges": [("A", "A/x", 0, False)]}


def test_torch_models_before_and_after() -> None:
    torch = pytest.importorskip("torch")
    from summarylib.graph import capture

    class Net(torch.nn.Module):
        def __init__(self, width: int = 8, extra: bool = False) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(4, width)
            self.fc2 = torch.nn.Linear(width, 2)
            self.fc3 = torch.nn.Linear(2, 2) if extra else None

        def forward(self, x: Any) -> Any:
            y = self.fc2(torch.relu(self.fc1(x)))
            return self.fc3(y) if self.fc3 is not None else y

    x = torch.zeros(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = build_view(capture(Net(), (x,)))
        more = build_view(capture(Net(extra=True), (x,)))
        wider = build_view(capture(Net(width=16), (x,)))
    s = summary(diff_views(base, more))
    assert s["added_ops"] == [("fc3", "aten::linear")]
    assert s["added_edges"] == [("fc2", "fc3", 0, False), ("fc3", "output", 0, False)]
    assert s["removed_edges"] == [("fc2", "output", 0, False)]
    assert s["changed_ops"] == {} and s["removed_ops"] == []
    s = summary(diff_views(base, wider))
    assert set(s["changed_ops"]) == {"fc1", "relu", "fc2"}
    assert s["changed_ops"]["relu"] == {"shapes": ([(3, 8)], [(3, 16)])}
    assert s["changed_ops"]["fc1"]["embeddings"]["fc1.weight"] == (
        "Const [(8, 4)]", "Const [(16, 4)]")
    assert s["added_edges"] == s["removed_edges"] == s["added_ops"] == []


def test_json_has_everything() -> None:
    d = diff_views(build_view(mlp([4, 8, 2])), build_view(mlp([6, 8, 2, 2])))
    data = json.loads(json.dumps(diff_to_json(d)))
    assert data["format"] == "summarylib.graph.diff" and data["version"] == 1
    assert data["identical"] is False
    assert data["stats"]["scopes_added"] == 1
    kids = {c["name"]: c for c in data["root"]["children"]}
    assert kids["dense_2"]["status"] == "added"
    assert kids["dense"]["changed_ops"][0]["shapes"] == [[[4, 8]], [[6, 8]]]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.classes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            if k == "class" and v:
                self.classes.update(v.split())

    def handle_data(self, data: str) -> None:
        self.text.append(data)


EVIL = '<script>alert("x")<\\script>'


def _hostile(op: str, extra: bool, scope: str = "s") -> Graph:
    nodes = [Node(f"{scope}/{EVIL}", op), Node("out&amp;", "Relu", inputs=[f"{scope}/{EVIL}"])]
    if extra:
        nodes.append(Node("t<b>/x", "Relu", inputs=[f"s/{EVIL}"]))
    return Graph(nodes)


def test_html_escapes_and_colours() -> None:
    a = build_view(_hostile("Placeholder", False))
    b = build_view(_hostile("<i>Op</i>", True))
    d = diff_views(a, b)
    page = diff_to_html(d, a, b, names=("<old>", "new"))
    assert "<script" not in page
    assert "&lt;script&gt;" in page and "&lt;old&gt;" in page
    p = _Tags()
    p.feed(page)
    assert "script" not in p.tags and "img" not in p.tags
    assert {"details", "summary", "style"} <= set(p.tags)
    text = "".join(p.text)
    assert EVIL in text and "<i>Op</i>" in text  # shown as text (the parser unescapes)
    assert "t<b>" in text
    assert "http" not in page.replace("http-equiv", "")  # no network
    # A renamed scope whose old name holds markup and an entity.
    renamed = diff_to_html(diff_views(build_view(_hostile("P", False, "a&<b>")),
                                      build_view(_hostile("P", False, "c"))))
    assert "renamed from a&amp;&lt;b&gt;/" in renamed and "<b>" not in renamed
    d2 = diff_views(build_view(mlp([4, 8, 2])), build_view(mlp([6, 8, 2, 2])))
    p2 = _Tags()
    p2.feed(diff_to_html(d2))
    assert {"add", "rem", "chg"} <= p2.classes


def test_text_limit() -> None:
    b1 = GraphBuilder()
    x = b1.placeholder((None,), F32, name="x")
    b2 = GraphBuilder()
    x2 = b2.placeholder((None,), F32, name="x")
    for i in range(30):
        b2.op("Relu", [x2], name=f"r{i}")
    del x
    d = diff_views(build_view(b1.graph, series=False), build_view(b2.graph, series=False))
    text = diff_to_text(d, limit=5)
    assert text.count("+ op r") == 5 and "+ ... and 25 more ops" in text
    assert "+ ... and 25 more edges" in text
    assert diff_to_text(d, limit=None).count("+ op r") == 30


def test_text_escapes_control_characters() -> None:
    a = build_view(Graph([Node("x", "Placeholder")]))
    b = build_view(Graph([Node("x", "Placeholder"),
                          Node("evil\x1b[2J\nline", "Relu\x07", inputs=["x"])]))
    text = diff_to_text(diff_views(a, b))
    assert "\x1b" not in text and "\x07" not in text
    assert "+ op evil\\x1b[2J\\x0aline (Relu\\x07)" in text
    assert len(text.splitlines()) == 4  # summary, root, the op, its edge


def test_dataclasses_are_plain() -> None:
    s = ScopeDiff("a", None, "added")
    assert not s.renamed and not s.has_direct_changes
    assert list(s.walk()) == [s]
    assert OpRef("a", "B") == OpRef("a", "B")
    assert EdgeChange("a", "b").slot == 0
