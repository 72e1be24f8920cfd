"""Running an fx graph node by node: output specs, and the profiler of torch graphs.

:func:`run_nodes` is the one interpreter (and timer) for both fx and export graphs:
``perf_counter_ns`` around each call node, after a CUDA synchronisation when the inputs
live on a GPU (kernels are asynchronous), and the bytes of its tensor outputs;
:func:`node_stats` turns those times into ``NodeStats`` with wall-clock start times.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from typing import Any

from summarylib.graph.adapters import warn_capture
from summarylib.graph.adapters.torch_common import spec_of, torch_module
from summarylib.graph.adapters.torch_walk import flat_values, modules_by_name
from summarylib.graph.ir import TensorSpec

__all__ = ["Run", "node_stats", "run_nodes", "shape_prop", "uses_cuda"]


def uses_cuda(values: Sequence[Any]) -> Any:
    """``torch.cuda`` if a value in ``values`` lives on a CUDA device (the timer then
    synchronises after each op), else None."""
    torch = torch_module("torch")
    if any(getattr(getattr(v, "device", None), "type", "") == "cuda" for v in values):
        return torch.cuda
    return None


def node_stats(times: list[tuple[str, int, int, int]], names: dict[Hashable, str]
                ) -> list[Any]:
    """``NodeStats`` for timed fx nodes that are graph nodes (a ``getitem`` that became an
    output slot is not), with wall-clock start times in microseconds."""
    import time

    from summarylib.graph.writers import NodeStats

    # perf_counter_ns has the resolution; time_ns the epoch TensorBoard wants.
    epoch = time.time_ns() - time.perf_counter_ns()
    stats = []
    for key, t0, dt, size in times:
        name = names.get(key)
        if name is not None:
            stats.append(NodeStats(name, (epoch + t0) // 1000, dt // 1000, size))
    return stats



class Run:
    """What one real run of an fx graph found: output specs and, if timed, op times."""

    def __init__(self) -> None:
        #: node name -> output specs (None: the result held no tensor); None if the real
        #: run failed and fake tensors filled ``meta["tensor_meta"]`` instead.
        self.specs: dict[str, list[TensorSpec] | None] | None = {}
        #: (node name, start perf_counter_ns, duration ns, output bytes) per timed node.
        self.times: list[tuple[str, int, int, int]] = []


def _result_specs(result: Any, tensor: Any) -> list[TensorSpec] | None:
    """Output specs of a node's real result, as ``ShapeProp``'s ``tensor_meta`` gives them
    (a tensor, or a tuple/list holding tensors; None for a result without tensors)."""
    if isinstance(result, tensor):
        return [spec_of(result) or TensorSpec(None)]
    if isinstance(result, (tuple, list)) and any(
            isinstance(v, tensor) for v in flat_values(result)):
        return [spec_of(v) or TensorSpec(None) for v in result]
    return None


def _nbytes(result: Any, tensor: Any) -> int:
    if isinstance(result, tensor):
        return int(result.nelement() * result.element_size())
    if isinstance(result, (tuple, list, dict)):
        return sum(_nbytes(v, tensor) for v in flat_values(result) if isinstance(v, tensor))
    return 0


_NO_ARG = object()


def run_nodes(gm: Any, args: Sequence[Any], specs: dict[str, list[TensorSpec] | None],
               times: list[tuple[str, int, int, int]] | None, cuda: Any) -> None:
    """Run ``gm``'s graph node by node, as ``torch.fx.Interpreter.run`` does, keeping each
    node's output specs in ``specs`` and, if ``times`` is a list, appending
    ``(node name, start perf_counter_ns, duration ns, output bytes)`` per call node.

    The Interpreter's own per-node work (a progress bar, a context manager, argument
    fetching through several methods) cost as much as the model itself on a 10k-node
    graph; what it does is kept: placeholders (``*args``, defaults), ``get_attr``, the
    three kinds of call, and each value freed after its last use.
    """
    import time

    torch = torch_module("torch")
    map_arg = torch.fx.node.map_arg
    tensor = torch.Tensor
    graph = gm.graph
    nodes = list(graph.nodes)
    last_user: dict[Any, Any] = {}
    for n in reversed(nodes):
        for i in n.all_input_nodes:
            last_user.setdefault(i, n)
    frees: dict[Any, list[Any]] = {}
    for i, n in last_user.items():
        frees.setdefault(n, []).append(i)
    env: dict[Any, Any] = {}
    get = env.__getitem__
    args_iter = iter(graph.process_inputs(*args))
    modules: dict[str, Any] | None = None
    clock = time.perf_counter_ns
    value: Any
    for n in nodes:
        op = n.op
        if op == "placeholder":
            target = str(n.target)
            if target.startswith("*"):
                value = list(args_iter)
            else:
                value = next(args_iter, _NO_ARG)
                if value is _NO_ARG:
                    if not n.args:
                        raise RuntimeError(f"no example input for placeholder {target!r}")
                    value = n.args[0]  # the parameter's default
        elif op == "get_attr":
            value = gm
            for part in str(n.target).split("."):
                value = getattr(value, part)
        elif op == "output":
            break
        else:
            a = map_arg(n.args, get)
            k = map_arg(n.kwargs, get)
            t0 = clock()
            if op == "call_function":
                value = n.target(*a, **k)
            elif op == "call_method":
                value = getattr(a[0], n.target)(*a[1:], **k)
            else:
                if modules is None:
                    modules = modules_by_name(gm)
                value = modules[n.target](*a, **k)
            if times is not None:
                if cuda is not None:
                    cuda.synchronize()  # kernels are asynchronous: time them, not the launch
                times.append((n.name, t0, clock() - t0, _nbytes(value, tensor)))
        env[n] = value
        specs[n.name] = _result_specs(value, tensor)
        for dead in frees.get(n, ()):
            del env[dead]


def shape_prop(gm: Any, example_inputs: Sequence[Any], timed: bool = False) -> Run:
    """Run ``gm`` once on the example inputs for its output shapes (and, if ``timed``,
    each op's wall time and output bytes).

    The run is real (fast: about 10x faster than fake tensors per node) but leaves no
    trace: ``no_grad``, the RNG state and every buffer are restored afterwards. It keeps
    only shapes and dtypes (``ShapeProp`` also computes strides, memory format and
    quantization metadata per node, which the graph does not use) and runs the nodes
    itself (see :func:`run_nodes`). If it fails (inputs on a meta device, ...)
    ``ShapeProp`` on fake tensors fills ``meta["tensor_meta"]`` (``specs`` None); if that
    fails too, the graph keeps unknown shapes and a warning says so.
    """
    torch = torch_module("torch")
    run = Run()
    specs: dict[str, list[TensorSpec] | None] = {}
    cuda = uses_cuda(example_inputs)
    buffers = [(b, b.detach().clone()) for b in gm.buffers()]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            run_nodes(gm, example_inputs, specs, run.times if timed else None, cuda)
        run.specs = specs
        return run
    except Exception:
        pass
    finally:
        with torch.no_grad():
            for b, copy in buffers:
                b.copy_(copy)
    run.specs = None
    run.times = []
    ShapeProp = torch_module("torch.fx.passes.shape_prop").ShapeProp
    FakeTensorMode = torch_module("torch._subclasses.fake_tensor").FakeTensorMode
    pytree = torch_module("torch.utils._pytree")
    try:
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        fake = pytree.tree_map(
            lambda v: mode.from_tensor(v) if hasattr(v, "dtype") and hasattr(v, "shape")
            else v, list(example_inputs))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ShapeProp(gm, fake_mode=mode).propagate(*fake)
    except Exception as e:  # shapes are optional: the structure is still right
        warn_capture(f"capture(torch.fx): shape propagation failed ({type(e).__name__}: "
                     f"{str(e)[:200]}); shapes are unknown", 6)
    return run
