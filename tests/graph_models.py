"""The test models of the offline graph view, as IR graphs (``summarylib.graph.Graph``).

Shared by the view's tests, the TensorBoard comparison and ``bench/graph_view.py``:

* ``resnet_graph()``: a ResNet-style CNN (stem, three identical residual blocks each
  holding a squeeze-excitation sub-scope ``se``, a linear head), captured from torch;
  identical blocks that hold a group, so TensorBoard's template order shows.
* ``transformer_graph()``: one pre-norm transformer block (layer norms, multi-head
  attention, MLP), captured from torch; series such as ``attn/view_[1-6]``.
* ``jax_mlp_graph()``: a flax MLP of seven ``Dense`` layers under ``jax.jit``, captured
  with its parameters as ``Const`` nodes; the ``dense_k`` groups share a template and
  ``relu_[1-5]`` is a series.
* ``synthetic_graph(layers, heads)``, ``synthetic_10k()``, ``synthetic_100k()``: TF1-style
  training graphs built node by node: ``model/layer_k/{ln_1,attn/head_h,ln_2,mlp}`` with
  variables (``kernel`` VariableV2 beside ``kernel/read``, ``kernel/Assign``: renamed to
  ``kernel/(kernel)`` by the dashboard; ``Assign`` carries a reference edge), numbered
  series (``mlp/add, add_1 … add_9``; ``save/Assign_1 … Assign_N``), a ``global_step``
  read by every head, an attention mask feeding every layer (a high-degree node inside
  ``model``), a ``metrics`` scope of 26 ops (an ``AddN`` of 24 inputs, an ``Assert``
  with six control inputs), an ``init`` NoOp with a control input from every ``Assign``,
  a ``save`` scope whose ``SaveV2`` reads every variable, a summary op (an out-embedding),
  devices and ``_output_shapes`` on every node. Deterministic: the same call gives the same graph.

Every function is cached for the process (the torch and JAX captures take a second or
two, the 100k graph a few): the returned graphs are shared, so never mutate them. A model
whose framework is not installed raises ImportError; ``missing(name)`` says which one
(tests turn it into a skip).
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from summarylib.graph import DType, Graph, Node, TensorSpec

__all__ = [
    "MODELS",
    "jax_mlp_graph",
    "missing",
    "model_graph",
    "resnet_graph",
    "synthetic_10k",
    "synthetic_100k",
    "synthetic_graph",
    "transformer_graph",
]

#: Framework each model needs (None: built by hand).
_NEEDS = {"resnet": "torch", "transformer": "torch", "jax_mlp": "flax",
          "synthetic_10k": None, "synthetic_100k": None}


def missing(name: str) -> str | None:
    """Why model ``name`` cannot be built here (a missing package), or None."""
    need = _NEEDS[name]
    if need is None:
        return None
    for module in ("jax", "flax") if need == "flax" else (need,):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


# --- torch ------------------------------------------------------------------------------


def _torch_models() -> tuple[Any, Any]:
    import torch
    from torch import nn

    class SqueezeExcite(nn.Module):
        """Channel attention: a group of several ops inside every block."""

        def __init__(self, c: int) -> None:
            super().__init__()
            self.fc1 = nn.Linear(c, c // 4)
            self.relu = nn.ReLU()
            self.fc2 = nn.Linear(c // 4, c)

        def forward(self, x: Any) -> Any:
            s = torch.sigmoid(self.fc2(self.relu(self.fc1(x.mean((2, 3))))))
            return x * s[:, :, None, None]

    class Block(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.se = SqueezeExcite(c)

        def forward(self, x: Any) -> Any:
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.se(self.bn2(self.conv2(y)))
            return torch.relu(y + x)

    class ResNet(nn.Module):
        def __init__(self, c: int = 8) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(c), nn.ReLU())
            self.layer1, self.layer2, self.layer3 = Block(c), Block(c), Block(c)
            self.head = nn.Linear(c, 10)

        def forward(self, x: Any) -> Any:
            x = self.layer3(self.layer2(self.layer1(self.stem(x))))
            return self.head(x.mean((2, 3)))

    return torch, ResNet


def _capture_quietly(model: Any, args: Any, **options: Any) -> Graph:
    import summarylib.graph as sg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer deprecation chatter, not our subject
        return sg.capture(model, args, **options)


@functools.cache
def resnet_graph() -> Graph:
    """Stem + three identical residual blocks (each with an ``se`` sub-scope) + head."""
    torch, resnet = _torch_models()
    torch.manual_seed(0)
    return _capture_quietly(resnet().eval(), (torch.ones(1, 3, 16, 16),))


@functools.cache
def transformer_graph() -> Graph:
    """One pre-norm transformer block: ``ln1``, ``attn`` (multi-head), ``ln2``, ``mlp``."""
    import torch

    from tests.torch_models import TransformerBlock

    torch.manual_seed(0)
    return _capture_quietly(TransformerBlock(d=16, heads=2).eval(), (torch.ones(2, 5, 16),))


# --- JAX --------------------------------------------------------------------------------


@functools.cache
def jax_mlp_graph() -> Graph:
    """A flax MLP (seven ``Dense`` layers, ReLU between) under ``jax.jit``."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: Any) -> Any:
            widths = (16, 16, 16, 16, 16, 16, 4)
            for i, w in enumerate(widths):
                x = nn.Dense(w, name=f"dense_{i}")(x)
                if i < len(widths) - 1:
                    x = nn.relu(x)
            return x

    model = MLP()
    x = jnp.ones((2, 8), jnp.float32)
    params = model.init(jax.random.PRNGKey(0), x)
    return _capture_quietly(jax.jit(model.apply), (params, x), params_argnums=0)


# --- synthetic TF1-style graphs ---------------------------------------------------------

_F32 = DType("float32")


class _Synth:
    """Appends nodes to a Graph; every node gets ``_output_shapes`` (``outputs``)."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.variables: list[str] = []
        self.assigns: list[str] = []
        self.device = "/device:CPU:0"

    def node(self, name: str, op: str, inputs: Sequence[str] = (),
             shape: tuple[int | None, ...] | None = (8, 64), *,
             control: Sequence[str] = (), attrs: dict[str, object] | None = None,
             outputs: list[TensorSpec] | None = None) -> str:
        outs = outputs if outputs is not None else [TensorSpec(shape, "float32")]
        self.graph.add(Node(name, op, list(inputs), list(control),
                            attrs if attrs is not None else {"T": _F32}, outs, self.device))
        return name

    def const(self, name: str, shape: tuple[int, ...] = ()) -> str:
        return self.node(name, "Const", (), shape, attrs={"dtype": _F32})

    def variable(self, name: str, shape: tuple[int, ...]) -> str:
        """TF1's variable: ``name`` (VariableV2), ``name/Initializer/Const``,
        ``name/Assign`` (reference edge from the variable), ``name/read``; returns read."""
        self.node(name, "VariableV2", (), shape, attrs={"dtype": _F32, "shape":
                                                       TensorSpec(shape, "float32")})
        init = self.const(f"{name}/Initializer/Const", shape)
        self.assigns.append(self.node(f"{name}/Assign", "Assign", (name, init), shape))
        self.variables.append(name)
        return self.node(f"{name}/read", "Identity", (name,), shape)

    def dense(self, scope: str, x: str, cin: int, cout: int, bias: bool = False) -> str:
        kernel = self.variable(f"{scope}/kernel", (cin, cout))
        y = self.node(f"{scope}/MatMul", "MatMul", (x, kernel), (8, cout))
        if bias:
            b = self.variable(f"{scope}/bias", (cout,))
            y = self.node(f"{scope}/BiasAdd", "BiasAdd", (y, b), (8, cout))
        return y

    def layer_norm(self, scope: str, x: str) -> str:
        gamma = self.variable(f"{scope}/gamma", (64,))
        beta = self.variable(f"{scope}/beta", (64,))
        m = f"{scope}/moments"
        mean = self.node(f"{m}/mean", "Mean", (x, self.const(f"{m}/mean/reduction_indices")),
                         (8, 1))
        sq = self.node(f"{m}/SquaredDifference", "SquaredDifference", (x, mean))
        var = self.node(f"{m}/variance", "Mean",
                        (sq, self.const(f"{m}/variance/reduction_indices")), (8, 1))
        b = f"{scope}/batchnorm"
        eps = self.node(f"{b}/add", "AddV2", (var, self.const(f"{b}/add/y")), (8, 1))
        rs = self.node(f"{b}/Rsqrt", "Rsqrt", (eps,), (8, 1))
        scale = self.node(f"{b}/mul", "Mul", (rs, gamma))
        xs = self.node(f"{b}/mul_1", "Mul", (x, scale))
        ms = self.node(f"{b}/mul_2", "Mul", (mean, scale))
        shift = self.node(f"{b}/sub", "Sub", (beta, ms))
        return self.node(f"{b}/add_1", "AddV2", (xs, shift))

    def attention(self, scope: str, x: str, mask: str, step: str, heads: int) -> str:
        q = self.dense(f"{scope}/q", x, 64, 64)
        k = self.dense(f"{scope}/k", x, 64, 64)
        v = self.dense(f"{scope}/v", x, 64, 64)
        outs = []
        for h in range(heads):
            s = f"{scope}/head_{h}"
            sc = self.node(f"{s}/scores", "BatchMatMul", (q, k), (8, 8))
            sc = self.node(f"{s}/scale", "Mul", (sc, self.const(f"{s}/scale/y")), (8, 8))
            sc = self.node(f"{s}/mask", "AddV2", (sc, mask), (8, 8))
            p = self.node(f"{s}/softmax", "Softmax", (sc,), (8, 8))
            seed = self.node(f"{s}/dropout/seed", "AddV2",
                             (step, self.const(f"{s}/dropout/seed/y")), (), attrs={"T": _F32})
            p = self.node(f"{s}/dropout/mul", "Mul", (p, seed), (8, 8))
            outs.append(self.node(f"{s}/context", "BatchMatMul", (p, v), (8, 64)))
        cat = self.node(f"{scope}/concat", "ConcatV2",
                        (*outs, self.const(f"{scope}/concat/axis")), (8, 64 * heads))
        return self.dense(f"{scope}/o", cat, 64 * heads, 64)

    def mlp(self, scope: str, x: str) -> str:
        h = self.dense(f"{scope}/fc1", x, 64, 256, bias=True)
        g = f"{scope}/gelu"
        t = self.node(f"{g}/Tanh", "Tanh", (h,), (8, 256))
        h = self.node(f"{g}/mul", "Mul", (h, t), (8, 256))
        y = self.dense(f"{scope}/fc2", h, 256, 64, bias=True)
        # TF's numbering: add, add_1 ... add_9 (the dashboard stacks add_[1-9]).
        for i in range(10):
            name = f"{scope}/add" if i == 0 else f"{scope}/add_{i}"
            y = self.node(name, "AddV2", (y, self.const(f"{name}/y")))
        return y


def synthetic_graph(layers: int, heads: int = 4) -> Graph:
    """A TF1-style transformer training graph (see the module docstring): ``121 + 9 *
    heads`` nodes per layer, its variables' restores in ``save`` included (157 with four
    heads, 193 with eight), and about 20 more. Not cached: tests use
    ``synthetic_10k()`` (64 layers, 4 heads) and ``synthetic_100k()`` (518 layers, 8)."""
    s = _Synth()
    x = s.node("input/x", "Placeholder", (), (8, 64), attrs={"dtype": _F32})
    step = s.variable("global_step", ())
    mask = s.node("model/attention_mask", "Placeholder", (), (8, 8), attrs={"dtype": _F32})
    outputs = []
    for i in range(layers):
        s.device = f"/device:GPU:{i % 2}"
        scope = f"model/layer_{i}"
        h = s.layer_norm(f"{scope}/ln_1", x)
        a = s.attention(f"{scope}/attn", h, mask, step, heads)
        x = s.node(f"{scope}/add", "AddV2", (x, a))
        h = s.layer_norm(f"{scope}/ln_2", x)
        m = s.mlp(f"{scope}/mlp", h)
        x = s.node(f"{scope}/add_1", "AddV2", (x, m))
        outputs.append(x)
    s.device = "/device:CPU:0"
    # A wide group with a high in-degree node (AddN) and a node with more than four
    # control inputs: the side-panel rules beyond NoOp hubs. Letters, not numbers, so the
    # norms stay single ops (a numbered run would become a series).
    norms = [s.node(f"metrics/norm_{chr(97 + k)}", "EuclideanNorm", (out,), ())
             for k, out in enumerate(outputs[:24])]
    s.node("metrics/total", "AddN", norms, ())
    s.node("metrics/check", "Assert", (norms[0],), None, control=norms[1:7], attrs={},
           outputs=[])
    y = s.node("model/output", "Identity", (x,))
    sq = s.node("loss/Square", "Square", (y,))
    loss = s.node("loss/Mean", "Mean", (sq, s.const("loss/Const", (2,))), ())
    s.node("loss/summary", "ScalarSummary", (s.const("loss/summary/tags"), loss), (),
           attrs={"T": _F32}, outputs=[TensorSpec((), "string")])
    s.node("init", "NoOp", (), None, control=list(s.assigns), attrs={}, outputs=[])
    variables = list(s.variables)
    filename = s.const("save/Const")
    names = s.const("save/SaveV2/tensor_names", (len(variables),))
    s.node("save/SaveV2", "SaveV2", (filename, names, *variables), None, attrs={},
           outputs=[])
    restore = s.node("save/RestoreV2", "RestoreV2", (filename, names), attrs={},
                     outputs=[s.graph[v].outputs[0] for v in variables])
    restores = []
    for k, v in enumerate(variables):
        name = "save/Assign" if k == 0 else f"save/Assign_{k}"
        restores.append(s.node(name, "Assign", (v, f"{restore}:{k}" if k else restore),
                               s.graph[v].outputs[0].shape))
    s.node("save/restore_all", "NoOp", (), None, control=restores, attrs={}, outputs=[])
    return s.graph


def _layers_for(target: int, heads: int) -> int:
    per_layer = len(synthetic_graph(2, heads)) - len(synthetic_graph(1, heads))
    fixed = len(synthetic_graph(1, heads)) - per_layer
    return max(1, round((target - fixed) / per_layer))


@functools.cache
def synthetic_10k() -> Graph:
    """About 10,000 nodes: 4 heads per layer."""
    return synthetic_graph(_layers_for(10_000, 4), 4)


@functools.cache
def synthetic_100k() -> Graph:
    """About 100,000 nodes: 8 heads per layer."""
    return synthetic_graph(_layers_for(100_000, 8), 8)


#: name -> builder, in the order the tests and the bench use them.
MODELS: dict[str, Callable[[], Graph]] = {
    "resnet": resnet_graph,
    "transformer": transformer_graph,
    "jax_mlp": jax_mlp_graph,
    "synthetic_10k": synthetic_10k,
    "synthetic_100k": synthetic_100k,
}


def model_graph(name: str) -> Graph:
    """The (cached, shared) graph of model ``name`` (a key of ``MODELS``)."""
    return MODELS[name]()
