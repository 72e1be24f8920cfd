"""Fallback PyTorch capture through ``torch.jit.trace`` -> IR.

Used for models ``torch.export`` cannot trace (data-dependent control flow). It runs the
model once on the example inputs, so the graph holds **only the branches taken** for them;
every ``TracerWarning`` torch emits (a branch on a tensor value, a tensor turned into a
Python number) is re-issued as a :class:`GraphCaptureWarning` so this is never silent.
Buffers the run changes (BatchNorm statistics in training mode) and the CPU RNG state
(dropout) are restored afterwards.

Unlike ``torch.utils.tensorboard.add_graph`` (same tracer, graph-pipeline.md §3.1):

* ``prim::GetAttr`` chains become one ``Const`` per parameter/buffer named by its
  qualified name (``layer1/0/conv1/weight``) instead of dangling bookkeeping nodes;
* ``prim::Constant`` and constant ``prim::ListConstruct`` values become attrs of their
  consumer (named after the op schema's arguments); tensor lists feed their consumer
  directly; ``ListUnpack``/``TupleUnpack``/``TupleIndex`` become output slots ``op:k``;
* one node per op (not per output value), named ``<module path>/<op>`` from the tracer's
  scope, with ``_output_shapes`` and the device from the traced tensor types.

``torch.jit.trace`` itself accepts only tensors (and lists, tuples and dicts of one value
type) as inputs and outputs, so the model is traced through a wrapper: tensor leaves of the
arguments are the traced inputs (``Placeholder`` nodes named by argument and key path,
``batch/a``), the other leaves are bound as constants (``Const`` nodes holding the value,
None left out, as on the export path), and the result is flattened (``torch.utils._pytree``)
to a tuple of its tensors. The output nodes get their names back from that structure
(``output/logits`` for a dict key, ``output/aux/0`` in a tuple); non-tensor outputs are
``Const`` nodes, None outputs are left out.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Hashable
from typing import Any

from summarylib.graph.adapters import (
    PendingGraph,
    PendingNode,
    const_attrs,
    plain_attr,
    sanitize,
    warn_capture,
)
from summarylib.graph.adapters.torch_common import (
    arg_names,
    device_string,
    key_segments,
    module_path,
    op_attr,
    scope_path,
    small_numpy,
    spec_of,
    torch_module,
)
from summarylib.graph.ir import DType, Graph, TensorSpec

__all__ = ["capture_jit"]

# c10 ScalarType names (TensorType.scalarType()) -> numpy-style names.
_SCALAR_TYPES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
    "UInt16": "uint16",
    "UInt32": "uint32",
    "UInt64": "uint64",
}

# What a traced value is: a node output, a module, a Python literal, or a list of those.
_Ref = tuple[str, Hashable, int]


def _type_spec(t: Any) -> TensorSpec:
    kind = t.kind()
    if kind == "TensorType":
        sizes = t.sizes()
        scalar = t.scalarType()
        dtype = _SCALAR_TYPES.get(scalar) if scalar else None
        if sizes is None:
            return TensorSpec(None, dtype)
        return TensorSpec(tuple(int(s) for s in sizes), dtype)
    if kind == "IntType":
        return TensorSpec((), "int64")
    if kind == "FloatType":
        return TensorSpec((), "float64")
    if kind == "BoolType":
        return TensorSpec((), "bool")
    return TensorSpec(None)


def _type_device(t: Any) -> str:
    if t.kind() != "TensorType":
        return ""
    try:
        return device_string(t.device())
    except Exception:
        return ""


class _JitWalker:
    def __init__(self, root: Any, device: str) -> None:
        self.root = root
        self.device = device
        self.pending = PendingGraph()
        self.vals: dict[int, Any] = {}
        self.specs: dict[Hashable, list[TensorSpec]] = {}
        self.count = 0

    def add(self, p: PendingNode) -> None:
        self.pending.add(p)
        self.specs[p.key] = p.outputs

    def param(self, path: str, t: Any) -> _Ref:
        key = ("param", path)
        if key not in self.pending:
            try:
                obj: Any = self.root
                for part in path.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                obj = None
            kind = "parameter" if type(obj).__name__ == "Parameter" else "buffer"
            spec = _type_spec(t)
            if obj is not None and hasattr(obj, "shape"):

                spec = spec_of(obj) or spec
            parent, _, leaf = path.rpartition(".")
            dev = device_string(getattr(obj, "device", None)) or self.device
            self.add(PendingNode(key, scope_path(parent), leaf, "Const",
                                 attrs=const_attrs(spec, None, {"target": path, "kind": kind}),
                                 outputs=[spec], device=dev))
        return ("ref", key, 0)

    def const_tensor(self, value: Any, scope: str) -> _Ref:
        self.count += 1
        key = ("const", self.count)

        spec = spec_of(value) or TensorSpec(None)
        self.add(PendingNode(key, scope, "Const", "Const",
                             attrs=const_attrs(spec, small_numpy(value)), outputs=[spec],
                             device=device_string(value.device) or self.device))
        return ("ref", key, 0)


def _literal(value: Any) -> Any:
    return ("lit", value)


def _refs(v: Any) -> list[_Ref]:
    if isinstance(v, tuple) and v and v[0] == "ref":
        return [v]
    if isinstance(v, tuple) and v and v[0] == "list":
        return [r for item in v[1] for r in _refs(item)]
    return []


def _plain(v: Any) -> Any:
    if isinstance(v, tuple) and v and v[0] == "lit":
        return v[1]
    if isinstance(v, tuple) and v and v[0] == "list":
        return [_plain(x) for x in v[1]]
    if isinstance(v, tuple) and v and v[0] == "ref":
        return f"%{v[1]}"
    return None


def _scope_name(node: Any) -> str:
    name = node.scopeName() or ""
    last = name.split("/")[-1]
    return scope_path(module_path(last))


class _Flat:
    """What the wrapper traced: its tensor inputs and the structure of the model's result."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], forward: Any) -> None:
        torch = torch_module("torch")
        pytree = torch_module("torch.utils._pytree")

        flat, self.in_spec = pytree.tree_flatten_with_path((args, kwargs))
        self.in_leaves = [leaf for _, leaf in flat]
        self.in_paths = _arg_paths([path for path, _ in flat], forward, len(args))
        self.tensor_pos = [
            i for i, leaf in enumerate(self.in_leaves) if isinstance(leaf, torch.Tensor)
        ]
        # Filled by the traced call: (output path, leaf) for every leaf of the result.
        self.out: list[tuple[str, Any]] = []

    def wrap(self, module: Any) -> Any:
        """A module that calls ``module`` with the non-tensor leaves bound and returns the
        result's tensors as a flat tuple (all ``torch.jit.trace`` accepts)."""
        torch = torch_module("torch")
        pytree = torch_module("torch.utils._pytree")
        flat = self

        base: Any = torch.nn.Module

        class _FlatModule(base):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                # Share the model's parameters, buffers and submodules (not the model
                # itself as a child): the tracer then names them as for the model alone
                # (fc.weight and scope fc, not inner.fc.weight), and the model's own
                # hooks run once, from module(...) below.
                self.__dict__["_parameters"] = module._parameters
                self.__dict__["_buffers"] = module._buffers
                self.__dict__["_modules"] = module._modules
                self.__dict__["_non_persistent_buffers_set"] = (
                    module._non_persistent_buffers_set
                )

            def forward(self, *tensors: Any) -> Any:
                values = list(flat.in_leaves)
                for i, t in zip(flat.tensor_pos, tensors, strict=True):
                    values[i] = t
                args, kwargs = pytree.tree_unflatten(values, flat.in_spec)
                result = module(*args, **kwargs)
                leaves = pytree.tree_flatten_with_path(result)[0]
                flat.out = [("/".join(key_segments(path)), leaf) for path, leaf in leaves]
                return tuple(leaf for _, leaf in leaves if isinstance(leaf, torch.Tensor))

        return _FlatModule()


def _arg_paths(keypaths: list[Any], forward: Any, n_args: int) -> list[str]:
    """``(args, kwargs)`` key paths as names: ``x``, ``batch/a`` (args by parameter name),
    ``mask`` (kwargs)."""
    names = arg_names(forward, n_args)
    out = []
    for path in keypaths:
        segs = key_segments(path)
        if len(segs) >= 2 and segs[0] == "0":
            segs = [sanitize(names[int(segs[1])]), *segs[2:]]
        else:
            segs = segs[1:]
        out.append("/".join(segs) or "input")
    return out


def capture_jit(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None,
                *, device: str = "/device:CPU:0") -> Graph:
    """The graph of ``module(*args, **kwargs)`` traced by ``torch.jit.trace``."""
    torch = torch_module("torch")

    forward = getattr(module, "forward", module)
    fn = getattr(module, "fn", None)  # torch_dispatch._as_module's wrapper of a plain function
    flat = _Flat(args, dict(kwargs or {}), fn if callable(fn) else forward)
    buffers = {name: b.detach().clone() for name, b in module.named_buffers()}
    with warnings.catch_warnings(record=True) as caught, torch.random.fork_rng(devices=[]):
        warnings.simplefilter("always")
        try:
            traced = torch.jit.trace(
                flat.wrap(module),
                example_inputs=tuple(flat.in_leaves[i] for i in flat.tensor_pos),
                strict=False,
                check_trace=False,
            )
        finally:
            with torch.no_grad():
                for name, b in module.named_buffers():
                    if name in buffers:
                        b.copy_(buffers[name])
    torch_dir = os.path.dirname(torch.__file__)
    for w in caught:
        # torch's own size checks (batch_norm's) warn too; only the model's code matters.
        if issubclass(w.category, torch.jit.TracerWarning) and not str(w.filename).startswith(
            torch_dir
        ):
            text = str(w.message).strip().splitlines()[0][:300]
            warn_capture(f"capture(torch.jit): {text} (at {w.filename}:{w.lineno})", 3)
    graph = traced.graph
    torch._C._jit_pass_inline(graph)
    walker = _JitWalker(module, device)
    inputs = list(graph.inputs())
    if inputs and inputs[0].type().kind() == "ClassType":
        walker.vals[inputs[0].unique()] = ("module", "")
        inputs = inputs[1:]
    paths = [flat.in_paths[i] for i in flat.tensor_pos]
    for i, value in enumerate(inputs):
        scope, _, base = (paths[i] if i < len(paths) else value.debugName()).rpartition("/")
        spec = _type_spec(value.type())
        key = ("input", i)
        attrs: dict[str, object] = {"shape": TensorSpec(spec.shape)}
        if spec.dtype:
            attrs["dtype"] = DType(spec.dtype)
        walker.add(PendingNode(key, scope, base, "Placeholder",
                               attrs=dict(sorted(attrs.items())), outputs=[spec],
                               device=_type_device(value.type()) or device))
        walker.vals[value.unique()] = ("ref", key, 0)
    # Non-tensor arguments were bound as constants: shown as Consts holding the value.
    tensor_pos = set(flat.tensor_pos)
    for i, leaf in enumerate(flat.in_leaves):
        if i not in tensor_pos and leaf is not None:
            _literal_node(walker, ("input", flat.in_paths[i]), flat.in_paths[i], leaf, device)
    for node in graph.nodes():
        _walk_node(walker, node)
    traced_outs: list[Any] = []
    for o in graph.outputs():
        _flatten_out(walker.vals.get(o.unique()), "", traced_outs)
    shown = [(p, leaf) for p, leaf in flat.out if leaf is not None]  # None: left out
    n_tensors = sum(isinstance(leaf, torch.Tensor) for _, leaf in shown)
    if n_tensors != len(traced_outs):  # not expected; keep the outputs, lose the names
        warn_capture(f"capture(torch.jit): {len(traced_outs)} traced outputs for "
                     f"{n_tensors} tensors in the result; outputs named by position", 3)
        shown = [(str(i), None) for i in range(len(traced_outs))]  # None: a traced output
    single = len(shown) == 1
    traced_iter = iter(traced_outs)
    for i, (path, leaf) in enumerate(shown):
        full = "output" if single or not path else f"output/{path}"
        scope, _, base = full.rpartition("/")
        if leaf is not None and not isinstance(leaf, torch.Tensor):
            _literal_node(walker, ("output", i), full, leaf, device)
            continue
        _, v = next(traced_iter)
        ref = v if isinstance(v, tuple) and v and v[0] == "ref" else None
        if ref is None:  # an output the tracer folded into a constant: nothing to point at
            continue
        specs = walker.specs.get(ref[1], [])
        walker.add(PendingNode(("output", i), scope, base, "Identity", inputs=[(ref[1], ref[2])],
                               outputs=specs[ref[2]: ref[2] + 1], device=device))
    return walker.pending.finish("capture(torch.jit)")


def _literal_node(w: _JitWalker, key: Hashable, path: str, value: Any, device: str) -> None:
    """A non-tensor argument or result as a ``Const`` named by its path (sanitized segments
    joined by ``/``), holding its value."""

    scope, _, base = path.rpartition("/")
    spec = TensorSpec((), "string") if isinstance(value, str) else spec_of(value) or TensorSpec(())
    attrs: dict[str, object] = {"dtype": DType(spec.dtype)} if spec.dtype else {}
    ok, attr = op_attr(value)
    if ok:
        attrs["value"] = attr
    w.add(PendingNode(key, scope, base, "Const", attrs=attrs, outputs=[spec], device=device))


def _flatten_out(v: Any, path: str, out: list[tuple[str, Any]]) -> None:
    if isinstance(v, tuple) and v and v[0] == "list":
        for i, item in enumerate(v[1]):
            _flatten_out(item, f"{path}/{i}" if path else str(i), out)
    elif isinstance(v, tuple) and v and v[0] == "dict":
        for k, item in zip(v[1], v[2], strict=True):
            _flatten_out(item, f"{path}/{k}" if path else str(k), out)
    elif v is not None:
        out.append((path, v))


def _walk_node(w: _JitWalker, node: Any) -> None:
    kind = node.kind()
    ins = [w.vals.get(v.unique()) for v in node.inputs()]
    outs = list(node.outputs())
    if kind == "prim::GetAttr":
        src = ins[0]
        name = node.s("name")
        if not (isinstance(src, tuple) and src[0] == "module"):
            w.vals[outs[0].unique()] = None
            return
        path = f"{src[1]}.{name}" if src[1] else name
        t = outs[0].type()
        if t.kind() == "ClassType":
            w.vals[outs[0].unique()] = ("module", path)
        elif t.kind() == "TensorType":
            w.vals[outs[0].unique()] = w.param(path, t)
        else:
            obj: Any = w.root
            try:
                for part in path.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                obj = None
            w.vals[outs[0].unique()] = _literal(obj)
        return
    if kind == "prim::Constant":
        try:
            value = outs[0].toIValue()
        except Exception:
            value = None
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            w.vals[outs[0].unique()] = w.const_tensor(value, _scope_name(node))
        else:
            w.vals[outs[0].unique()] = _literal(value)
        return
    if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
        w.vals[outs[0].unique()] = ("list", ins)
        return
    if kind == "prim::DictConstruct":
        keys = [str(_plain(k)) for k in ins[0::2]]
        w.vals[outs[0].unique()] = ("dict", keys, ins[1::2])
        return
    if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
        src = ins[0]
        if isinstance(src, tuple) and src[0] == "list":
            for o, item in zip(outs, src[1], strict=False):
                w.vals[o.unique()] = item
            return
        if isinstance(src, tuple) and src[0] == "ref" and src[2] == 0:
            # A list-returning op (split, unbind): its elements are its output slots.
            w.specs[src[1]][:] = [_type_spec(o.type()) for o in outs]
            for k, o in enumerate(outs):
                w.vals[o.unique()] = ("ref", src[1], k)
            return
    if kind in ("prim::TupleIndex", "prim::ListIndex", "aten::__getitem__") and len(ins) == 2:
        src, idx = ins
        i = idx[1] if isinstance(idx, tuple) and idx[0] == "lit" else None
        if isinstance(i, int) and isinstance(src, tuple) and src[0] == "list" and i < len(src[1]):
            w.vals[outs[0].unique()] = src[1][i]
            return
    _op_node(w, node, kind, ins, outs)


def _op_node(w: _JitWalker, node: Any, kind: str, ins: list[Any], outs: list[Any]) -> None:
    torch = torch_module("torch")

    names: list[str] = []
    schema_text = node.schema() if kind.startswith("aten::") else "(no schema)"
    if schema_text != "(no schema)":
        try:
            names = [a.name for a in torch._C.parse_schema(schema_text).arguments]
        except Exception:
            names = []
    inputs: list[tuple[Hashable, int]] = []
    attrs: dict[str, object] = {}
    for i, v in enumerate(ins):
        name = names[i] if i < len(names) else f"arg{i}"
        refs = _refs(v) if v is not None else []
        if refs:
            inputs.extend((r[1], r[2]) for r in refs)
            if isinstance(v, tuple) and v[0] == "list" and len(refs) != len(v[1]):
                attrs[name] = str(_plain(v))[:256]
            continue
        if isinstance(v, tuple) and v[0] in ("lit", "list"):
            value = _plain(v)
            if type(value).__name__ == "dtype":
                attrs[name] = str(value)
                continue
            ok, attr = plain_attr(value)
            if ok:
                attrs[name] = attr
    w.count += 1
    key = ("op", w.count)
    outputs = [_type_spec(o.type()) for o in outs]
    dev = next((d for d in (_type_device(o.type()) for o in outs) if d), w.device)
    ns, _, base = kind.partition("::")
    w.add(PendingNode(key, _scope_name(node), base or ns, kind, inputs=inputs, attrs=attrs,
                      outputs=outputs, device=dev))
    for k, o in enumerate(outs):
        w.vals[o.unique()] = ("ref", key, k)


_ = inspect  # kept for type checkers of callers that pass bound methods
