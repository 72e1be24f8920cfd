"""Compare our captured torch graphs with ``torch.utils.tensorboard``'s ``add_graph``.

Run: ``python bench/graph_compare.py [--big] [--reps N]``. Prints markdown tables:

1. For each model (built here), the ``GraphDef`` that ``add_graph`` writes
   (``torch.utils.tensorboard._pytorch_graph.graph(model, args)``, jit-traced) against the
   one ``summarylib.graph.capture`` builds (``torch.export``, falling back to jit): node
   count, bookkeeping nodes (``prim::*`` and ``getitem``), dangling inputs (inputs naming
   no node: TensorBoard drops those edges), nodes carrying ``_output_shapes``, parameters
   visible as named ``Const`` nodes, lint errors (``summarylib.graph.check``), nodes with a
   device, and the capture time.
2. With ``--big``: the time to capture and write a graph of about 10k nodes (a deep MLP),
   split into the framework's own tracing and our conversion + writing (median of
   ``--reps`` runs; writer ``close()`` included).

Both exporters see the model in eval mode (``add_graph`` switches to it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from torch import nn

import summarylib as sl
from summarylib.graph import check
from summarylib.graph.capturing import capture
from tests.torch_models import Branchy, ResNet, TransformerBlock

# --- models -----------------------------------------------------------------------------
# ResNet, TransformerBlock and Branchy are shared with the tests (tests/torch_models.py).


class TinyBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, 1, 1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.bn(self.conv(x)) + x)


class ResNet4(nn.Module):
    """The research note's model: a stem conv, 4 residual blocks, mean, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.blocks = nn.Sequential(*[TinyBlock(8) for _ in range(4)])
        self.fc = nn.Linear(8, 10)

    def forward(self, x: Any) -> Any:
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))




class DictOut(nn.Module):
    """Dict output with a tuple, a None and a second output of max()."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(8, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        h = torch.relu(self.enc(x))
        top, idx = h.max(dim=1)
        return {"logits": self.head(h), "aux": (top, None), "best": idx}




def models() -> list[tuple[str, nn.Module, tuple[Any, ...]]]:
    torch.manual_seed(0)
    return [
        ("ResNet-4 (research note)", ResNet4().eval(), (torch.randn(2, 3, 16, 16),)),
        ("ResNet (nested, downsample)", ResNet(width=16).eval(), (torch.randn(2, 3, 16, 16),)),
        ("Transformer block", TransformerBlock(d=32, heads=4).eval(), (torch.randn(2, 7, 32),)),
        ("Dict outputs", DictOut().eval(), (torch.randn(2, 8),)),
        ("Data-dependent branch", Branchy(features=8).eval(), (torch.ones(2, 8),)),
    ]


# --- metrics ----------------------------------------------------------------------------


def _source(inp: str) -> str:
    inp = inp[1:] if inp.startswith("^") else inp
    name, _, slot = inp.rpartition(":")
    return name if slot.isdigit() else inp


def metrics(gd: Any, n_params: int) -> dict[str, Any]:
    names = {n.name for n in gd.node}
    dangling = sum(1 for n in gd.node for i in n.input if _source(i) not in names)
    bookkeeping = sum(
        1 for n in gd.node if n.op.startswith("prim::") or n.op in ("getitem", "operator.getitem")
    )
    shaped = sum(1 for n in gd.node if len(n.attr["_output_shapes"].list.shape) > 0)
    params = sum(
        1 for n in gd.node if n.op == "Const" and n.attr["kind"].s == b"parameter"
    )
    errors = [i for i in check(gd) if i.severity == "error"]
    return {
        "nodes": len(gd.node),
        "bookkeeping": bookkeeping,
        "dangling": dangling,
        "shapes": f"{shaped} / {len(gd.node)}",
        "params": f"{params} / {n_params}",
        "lint errors": len(errors),
        "device": sum(1 for n in gd.node if n.device),
    }


def torch_add_graph(model: nn.Module, args: tuple[Any, ...]) -> Any:
    from torch.utils.tensorboard import _pytorch_graph

    with contextlib.redirect_stdout(io.StringIO()):  # it prints errors before raising
        return _pytorch_graph.graph(model, args)[0]


def ours(model: nn.Module, args: tuple[Any, ...]) -> Any:
    return capture(model, args).to_graph_def()


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def warm_up() -> None:
    """One tiny capture per exporter first, so the table's times exclude import costs."""
    tiny, args = nn.Linear(2, 2).eval(), (torch.ones(1, 2),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_add_graph(tiny, args)
        ours(tiny, args)


def comparison_table() -> str:
    warm_up()
    cols = ["nodes", "bookkeeping", "dangling", "shapes", "params", "lint errors", "device"]
    head = ["model", "exporter", *cols, "capture s", "warnings"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, model, args in models():
        n_params = sum(1 for _ in model.parameters())
        for label, fn in (("torch add_graph", torch_add_graph), ("summarylib", ours)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    gd, secs = timed(lambda fn=fn, model=model, args=args: fn(model, args))
                    row = metrics(gd, n_params)
                    cells = [str(row[c]) for c in cols] + [f"{secs:.2f}"]
                except Exception as e:
                    msg = str(e).strip().splitlines()[0][:70].replace("|", "/")
                    cells = [f"fails: {type(e).__name__}: {msg}"] + [""] * len(cols)
            notes = sorted(
                {
                    w.category.__name__
                    for w in caught
                    if "TracerWarning" in w.category.__name__
                    or "GraphCapture" in w.category.__name__
                }
            )
            lines.append(
                "| " + " | ".join([name, label, *cells, ", ".join(notes) or "-"]) + " |"
            )
    return "\n".join(lines)


# --- ~10k-node timing -------------------------------------------------------------------


def _write(graph: Any) -> None:
    d = tempfile.mkdtemp(prefix="graph_bench_")
    w = sl.create_file_writer(d)
    with w.as_default():
        sl.graph.write_graph(graph)
    w.close()


def big_table(reps: int) -> str:
    from summarylib.graph.adapters.torch_fx import from_exported_program, from_fx

    layers = 2500  # Linear + ReLU per layer: 4 nodes each (op, weight, bias, relu)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(layers)])
    x = torch.randn(2, 8)
    rows: dict[str, list[float]] = {}
    nodes: dict[str, int] = {}

    def add(key: str, secs: float) -> None:
        rows.setdefault(key, []).append(secs)

    for _ in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep, t = timed(lambda: torch.export.export(model, (x,), strict=False))
        add("torch.export: torch.export.export (framework)", t)
        g, t = timed(lambda ep=ep: from_exported_program(ep))
        add("torch.export: convert to IR (ours)", t)
        _, t = timed(lambda g=g: _write(g))
        add("torch.export: write + close (ours)", t)
        nodes["torch.export"] = len(g)
        gm, t = timed(lambda: torch.fx.symbolic_trace(model))
        add("torch.fx: symbolic_trace (framework)", t)
        g2, t = timed(lambda gm=gm: from_fx(gm, (x,), root=model))
        add("torch.fx: shapes (one real run) + convert (ours)", t)
        _, t = timed(lambda g2=g2: _write(g2))
        add("torch.fx: write + close (ours)", t)
        nodes["torch.fx"] = len(g2)
        gd, t = timed(lambda: torch_add_graph(model, (x,)))
        add("torch add_graph: _pytorch_graph.graph (jit trace + parse)", t)
        nodes["torch add_graph"] = len(gd.node)
    lines = _step_lines(rows, ("torch.export", "torch.fx"))
    lines.append("")
    lines.append(
        "nodes: " + ", ".join(f"{k} {v}" for k, v in nodes.items()) + f"; {reps} runs"
    )
    try:
        lines.append("")
        lines.append(_jax_big(reps))
    except ImportError:
        pass
    return "\n".join(lines)


def _jax_big(reps: int) -> str:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from summarylib.graph.adapters.jax import from_jaxpr

    layers = 1500  # 7 nodes each: dot_general, broadcast, add, max, literal, w, b
    params = [
        {"w": np.ones((8, 8), np.float32), "b": np.zeros(8, np.float32)} for _ in range(layers)
    ]

    def mlp(params: Any, x: Any) -> Any:
        for p in params:
            x = jnp.maximum(x @ p["w"] + p["b"], 0.0)
        return x

    x = jnp.ones((2, 8))
    rows: dict[str, list[float]] = {}
    n = 0
    for _ in range(reps):
        cj, t = timed(lambda: jax.make_jaxpr(lambda p, x: mlp(p, x))(params, x))
        rows.setdefault("jax: make_jaxpr (framework)", []).append(t)
        g, t = timed(lambda cj=cj: from_jaxpr(cj, const_inputs=[True] * (2 * layers)))
        rows.setdefault("jax: convert to IR (ours)", []).append(t)
        _, t = timed(lambda g=g: _write(g))
        rows.setdefault("jax: write + close (ours)", []).append(t)
        n = len(g)
    lines = _step_lines(rows, ("jax",))
    return "\n".join(lines) + f"\n\nnodes: jax {n}; {reps} runs"


def _step_lines(rows: dict[str, list[float]], paths: tuple[str, ...]) -> list[str]:
    """Median per step, then per path the median over runs of our steps' sum and of all
    steps' sum (the 'capture and write' time a user waits for)."""
    lines = ["| step | median s |", "|---|---|"]
    for key, vals in rows.items():
        lines.append(f"| {key} | {statistics.median(vals):.3f} |")
    for path in paths:
        keys = [k for k in rows if k.startswith(f"{path}:")]
        ours = [sum(v) for v in zip(*(rows[k] for k in keys if "(ours)" in k), strict=True)]
        total = [sum(v) for v in zip(*(rows[k] for k in keys), strict=True)]
        med_ours, med_total = statistics.median(ours), statistics.median(total)
        lines.append(f"| **{path}: ours (sum of our steps)** | **{med_ours:.3f}** |")
        lines.append(f"| **{path}: total (framework + ours)** | **{med_total:.3f}** |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also time a ~10k-node graph")
    parser.add_argument("--reps", type=int, default=3)
    opts = parser.parse_args()
    print(f"torch {torch.__version__}")
    print()
    print(comparison_table())
    if opts.big:
        print()
        print(big_table(opts.reps))


if __name__ == "__main__":
    main()
