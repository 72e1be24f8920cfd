"""Single-op leaf modules are one op node named after the module, so repeated blocks look
repeated: TensorBoard's graph dashboard (in a real browser) gives identical blocks one
colour, and check() warns where it cannot."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import summarylib as sl
import summarylib.graph as sg
from summarylib.graph import Graph, Node, NodeStats, TensorSpec
from summarylib.graph.adapters.leaf_modules import merge_single_op_modules
from tests.browser import chromium_page
from tests.tbserver import TensorBoardServer

F = TensorSpec((2,), "float32")


def _graph(*nodes: Node) -> Graph:
    g = Graph()
    for n in nodes:
        g.add(n)
    return g


def test_merge_names_the_op_after_its_module_and_its_params_beside_it() -> None:
    g = _graph(
        Node("x", "Placeholder", outputs=[F]),
        Node("blk/conv/weight", "Const", outputs=[F]),
        Node("blk/conv/conv2d", "Conv2D", ["x", "blk/conv/weight"], outputs=[F, F]),
        Node("blk/bn/weight", "Const", outputs=[F]),
        Node("blk/bn/mul", "Mul", ["blk/conv/conv2d:1", "blk/bn/weight"], outputs=[F]),
        Node("blk/bn/add", "Add", ["blk/bn/mul"], control_inputs=["blk/conv/conv2d"],
             outputs=[F]),
        Node("out/a", "Identity", ["blk/bn/add"], outputs=[F]),
    )
    stats = [NodeStats("blk/conv/conv2d", 1, 2), NodeStats("blk/bn/mul", 3, 4)]
    merged, new_stats = merge_single_op_modules(g, stats)
    assert [n.name for n in merged] == [
        "x", "blk/conv.weight", "blk/conv", "blk/bn/weight", "blk/bn/mul", "blk/bn/add", "out/a"
    ]
    assert merged["blk/conv"].inputs == ["x", "blk/conv.weight"]
    assert merged["blk/bn/mul"].inputs == ["blk/conv:1", "blk/bn/weight"]  # two ops: kept
    assert merged["blk/bn/add"].control_inputs == ["blk/conv"]
    assert merged["out/a"].op == "Identity"  # outputs and inputs are never merged
    assert [s.node_name for s in new_stats or []] == ["blk/conv", "blk/bn/mul"]
    assert [n.name for n in g][2] == "blk/conv/conv2d"  # the input graph is unchanged
    assert sg.check(merged) == sg.check(merged)  # still a valid graph
    assert not [i for i in sg.check(merged) if i.severity == "error"]


def test_merge_leaves_names_that_would_collide_or_nest() -> None:
    g = _graph(
        Node("a/relu/relu", "Relu", outputs=[F]),
        Node("a/relu.x", "Const", outputs=[F]),  # taken: merging a/relu would need it
        Node("b/c/d/op", "Relu", outputs=[F]),  # b/c holds a scope: only b/c/d merges
        Node("b/c/e", "Relu", ["b/c/d/op"], outputs=[F]),
    )
    merged, _ = merge_single_op_modules(g)
    names = [n.name for n in merged]
    assert "a/relu/relu" not in names and "a/relu" in names  # no collision for the op
    g2 = _graph(
        Node("a/relu/relu", "Relu", outputs=[F]),
        Node("a/relu/x", "Const", outputs=[F]),
        Node("a/relu.x", "Const", outputs=[F]),
    )
    assert [n.name for n in merge_single_op_modules(g2)[0]] == [n.name for n in g2]
    assert names[2:] == ["b/c/d", "b/c/e"]


def _three_blocks(batch_norm: bool) -> Any:
    torch = pytest.importorskip("torch")
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(8, 8, 3, 1, 1)
            self.bn = nn.BatchNorm2d(8) if batch_norm else nn.Identity()
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(8, 8, 3, 1, 1)

        def forward(self, x: Any) -> Any:
            return torch.relu(self.conv2(self.relu(self.bn(self.conv1(x)))) + x)

    class Three(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, 1, 1)
            self.layer1, self.layer2, self.layer3 = Block(), Block(), Block()
            self.head = nn.Linear(8, 2)

        def forward(self, x: Any) -> Any:
            y = self.layer3(self.layer2(self.layer1(self.stem(x))))
            return self.head(y.mean((2, 3)))

    return Three(), torch.ones(1, 3, 8, 8)


@pytest.mark.parametrize("method", ["export", "jit", "fx"])
def test_captured_blocks_hold_plain_ops(method: str) -> None:
    model, x = _three_blocks(batch_norm=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = sg.capture(model.eval(), (x,), method=method)
    names = {n.name for n in g}
    for block in ("layer1", "layer2", "layer3"):
        inside = {n[len(block) + 1:] for n in names if n.startswith(block + "/")}
        assert not any("/" in n for n in inside), (method, sorted(inside))  # no nested group
        assert {"conv1", "conv2"} <= inside, (method, sorted(inside))
    assert [i for i in sg.check(g) if i.code == "nested-template"] == []


def test_check_warns_when_repeated_blocks_hold_groups() -> None:
    # In training mode BatchNorm also counts its batches (two ops): each block then holds
    # a group, and the dashboard colours the three blocks differently.
    model, x = _three_blocks(batch_norm=True)
    g = sg.capture(model.train(), (x,))
    (issue,) = [i for i in sg.check(g) if i.code == "nested-template"]
    assert issue.severity == "warning" and issue.node == "layer1"
    assert "3 groups" in issue.message and "bn" in issue.message


def _block_colours(logdir: Path) -> dict[str, str]:
    with TensorBoardServer(logdir) as tb, chromium_page() as page:
        page.goto(f"http://127.0.0.1:{tb.port}/#graphs&run=.")
        page.wait_for_selector('g.node[data-name="layer3"]', timeout=90_000)
        page.wait_for_timeout(500)  # structure colours are set after the first layout
        return dict(
            page.eval_on_selector_all(
                "g.node",
                "els => els.map(e => [e.getAttribute('data-name'),"
                " getComputedStyle(e.querySelector('.nodeshape rect')"
                " || e.querySelector('.nodeshape')).fill])",
            )
        )


@pytest.mark.parametrize("layout", ["merged", "nested"])
def test_the_dashboard_colours_identical_blocks_alike(tmp_path: Path, layout: str) -> None:
    from summarylib.graph.capturing import _scoped

    model, x = _three_blocks(batch_norm=False)
    model.eval()
    g = sg.capture(model, (x,))
    if layout == "nested":
        # What the adapters wrote before: every leaf module a group of its own.
        g = _scoped(g, {p.replace(".", "/") for p, _ in model.named_modules() if p})
    with sl.create_file_writer(str(tmp_path)).as_default():
        sl.write_graph(g)
    colours = _block_colours(tmp_path)
    blocks = {colours[b] for b in ("layer1", "layer2", "layer3")}
    if layout == "merged":
        assert len(blocks) == 1, colours
        assert blocks != {colours["x"]}  # coloured by structure, not plain white
    else:
        assert len(blocks) == 3, colours  # TensorBoard's template pass misses them
