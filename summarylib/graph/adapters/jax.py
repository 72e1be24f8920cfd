"""JAX graphs from ``jax.make_jaxpr`` -> IR.

Data contract of :func:`capture_jax` (graph-pipeline.md §3.4, §5.3):

* ``fn``: a function of arrays (jitted or not); ``example_inputs``: the positional
  arguments (a tuple; any other value is the single argument), arrays, pytrees of arrays,
  ``jax.ShapeDtypeStruct`` or Python numbers; arguments holding anything else (strings,
  None, callables) are treated as static. ``example_kwargs``: keyword arguments, traced
  like positional ones. Nothing is computed: only the jaxpr is traced.
* Array leaves of the arguments listed in ``params_argnums`` are ``Const`` nodes (model
  parameters, attr ``kind = "parameter"``, no value stored); the others are
  ``Placeholder`` nodes. Both are named by argument name and pytree path
  (``params/0/w``, ``x``). Literals and closed-over constants are ``Const`` nodes (with
  their value when at most 1 KB).
* One node per equation: op type and name the primitive (``dot_general``, ``add``); its
  params become attrs (dtypes as ``DType``, tuples as lists or text); multi-output
  equations are one node read through ``name:k``.
* Scopes: ``jax.named_scope`` / ``name_stack`` segments, and nested jaxprs: ``jit``
  calls open a scope named after the function (``mlp/encoder/dot_general``),
  ``custom_jvp_call``/``custom_vjp_call`` a scope named after the wrapped function
  (``relu/max``), ``checkpoint`` a ``checkpoint`` scope; their equations are drawn
  inline. ``cond``, ``while`` and ``scan`` keep a node of their own in a group with their
  bodies (``cond/branch_0/...``, ``while/body/...``, ``scan/body/...``); the bodies are fed
  by the operands and feed the node, so nothing dangles.
* Outputs are ``Identity`` nodes under ``output`` named by the result's pytree path
  (``output/0/logits``; ``output`` for a single array).
* Shapes and dtypes come from the avals; the device is the first example array's
  (``/device:CPU:0``), else JAX's default device, or ``device=``.
* jaxprs are not a stable public API; anything this version does not understand becomes
  a :class:`GraphCaptureWarning` naming it, and the equation is kept as a plain node.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Sequence
from typing import Any

from summarylib.graph.adapters import (
    PendingGraph,
    PendingNode,
    arg_names,
    const_attrs,
    gc_paused,
    plain_attr,
    sanitize,
    warn_capture,
)
from summarylib.graph.adapters.leaf_modules import merge_single_op_modules
from summarylib.graph.ir import DType, Graph, TensorSpec

__all__ = ["capture_jax", "from_jaxpr", "profile_jax"]

# Call-like primitives drawn inline, inside a scope, instead of as one opaque node.
_INLINE = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
}

_Ref = tuple[Hashable, int]


_DTYPE_NAMES: dict[Any, str] = {}


def _spec(aval: Any) -> TensorSpec:
    shape = getattr(aval, "shape", None)
    if shape is None:
        return TensorSpec(None)
    dtype = getattr(aval, "dtype", None)
    name = _DTYPE_NAMES.get(dtype) if dtype is not None else None
    if name is None and dtype is not None:
        name = _DTYPE_NAMES.setdefault(dtype, str(dtype))
    if all(type(d) is int for d in shape):
        return TensorSpec(tuple(shape), name)
    dims: list[int | None] = []
    for d in shape:
        try:
            dims.append(int(d))
        except Exception:  # a symbolic (shape-polymorphic) dim
            dims.append(None)
    return TensorSpec(tuple(dims), name)


def _attr(value: Any) -> tuple[bool, object]:
    import numpy as np

    if callable(value) and not isinstance(value, type):
        return False, None
    name = type(value).__name__
    if name in ("Jaxpr", "ClosedJaxpr"):
        return False, None
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return True, DType(np.dtype(value).name)
    if isinstance(value, (tuple, list)) and any(
        type(v).__name__ in ("Jaxpr", "ClosedJaxpr") for v in value
    ):
        return False, None
    return plain_attr(value)


def _func_name(closed: Any, default: str) -> str:
    jaxpr = getattr(closed, "jaxpr", closed)
    info = getattr(jaxpr, "debug_info", None)
    src = getattr(info, "func_src_info", None) or ""
    name = src.split(" ", 1)[0] if src else ""
    return name if name and name != "<lambda>" else default


class _JaxprWalker:
    def __init__(self, device: str) -> None:
        self.pending = PendingGraph()
        self.specs: dict[Hashable, list[TensorSpec]] = {}
        self.device = device
        self.count = 0
        self.scope_counts: dict[str, int] = {}
        self.unknown: set[str] = set()

    def key(self) -> Hashable:
        self.count += 1
        return self.count

    def add(self, p: PendingNode) -> _Ref:
        self.pending.add(p)
        self.specs[p.key] = p.outputs
        return (p.key, 0)

    def unique_scope(self, scope: str, name: str) -> str:
        """A fresh sub-scope ``name``, ``name_1``, ... (one group per call site)."""
        want = f"{scope}/{name}" if scope else name
        n = self.scope_counts.get(want, 0)
        self.scope_counts[want] = n + 1
        return want if n == 0 else f"{want}_{n}"

    def literal(self, value: Any, aval: Any, scope: str) -> _Ref:
        import numpy as np

        spec = _spec(aval)
        try:
            arr = np.asarray(value)
        except Exception:
            arr = None
        return self.add(PendingNode(self.key(), scope, "Const", "Const",
                                    attrs=const_attrs(spec, arr), outputs=[spec],
                                    device=self.device))

    def ref(self, env: dict[Any, _Ref], v: Any, scope: str) -> _Ref:
        if type(v).__name__ == "Literal":
            return self.literal(v.val, v.aval, scope)
        r = env.get(v)
        if r is None:  # an unbound variable: keep the graph whole with an unknown Const
            self.unknown.add(str(v))
            return self.literal(None, getattr(v, "aval", None), scope)
        return r

    def jaxpr(self, closed: Any, in_refs: Sequence[_Ref], scope: str, opened: str = "",
              plan: list[Any] | None = None) -> list[_Ref]:
        """Walk a (closed) jaxpr whose invars are ``in_refs``; returns its outputs' refs.

        ``opened`` is the label of the call that opened ``scope`` (a nested call with the
        same label, such as ``jax.nn.relu``'s jit inside its custom_jvp, shares the scope).
        ``plan`` (when given) gets one entry per equation, in order, saying how a profile
        evaluates it: ``("node", key)`` (bound as one op, timed as the node ``key``) or
        ``("inline", sub_jaxpr, sub_plan)`` (its equations evaluated one by one, as they
        are drawn). Bodies of cond/while/scan have no plan: their node is timed whole.
        """
        jaxpr = getattr(closed, "jaxpr", closed)
        consts = list(getattr(closed, "consts", []) or [])
        env: dict[Any, _Ref] = {}
        for i, cv in enumerate(jaxpr.constvars):
            value = consts[i] if i < len(consts) else None
            env[cv] = self.literal(value, cv.aval, scope)
        for v, r in zip(jaxpr.invars, in_refs, strict=False):
            env[v] = r
        for eqn in jaxpr.eqns:
            self.eqn(eqn, env, scope, opened, plan)
        return [self.ref(env, v, scope) for v in jaxpr.outvars]

    def eqn(self, eqn: Any, env: dict[Any, _Ref], scope: str, opened: str,
            plan: list[Any] | None = None) -> None:
        name = eqn.primitive.name
        stack = str(getattr(eqn.source_info, "name_stack", "") or "")
        segs = [sanitize(s) for s in stack.split("/") if s]
        if segs and segs[0] == opened:
            segs = segs[1:]  # the call that opened this scope named it already
        escope = "/".join([scope, *segs] if scope else segs)
        ins = [self.ref(env, v, escope) for v in eqn.invars]
        params = eqn.params
        sub_key = _INLINE.get(name)
        sub = params.get(sub_key) if sub_key else None
        if sub is not None and len(getattr(sub, "jaxpr", sub).invars) == len(ins):
            label = params.get("name") if name in ("jit", "pjit") else None
            if name.startswith("custom_"):
                label = _func_name(sub, name)
            label = sanitize(str(label or name))
            sub_plan: list[Any] | None = [] if plan is not None else None
            if segs or label != opened:
                outs = self.jaxpr(sub, ins, self.unique_scope(escope, label), label, sub_plan)
            else:
                outs = self.jaxpr(sub, ins, escope, opened, sub_plan)
            if plan is not None:
                plan.append(("inline", sub, sub_plan))
            for v, r in zip(eqn.outvars, outs, strict=False):
                env[v] = r
            return
        bodies = self.bodies(name, params, ins)
        group = escope
        if bodies:
            group = self.unique_scope(escope, name)
        extra: list[_Ref] = []
        for body_name, body, body_in in bodies:
            extra.extend(self.jaxpr(body, body_in, f"{group}/{body_name}"))
        if not bodies and any(type(v).__name__ in ("Jaxpr", "ClosedJaxpr")
                              for v in params.values()):
            warn_capture(f"capture(jax): the body of {name} is not drawn", 6)
        attrs: dict[str, object] = {}
        for k, v in params.items():
            ok, attr = _attr(v)
            if ok:
                attrs[k] = attr
        outputs = [_spec(v.aval) for v in eqn.outvars]
        key = self.key()
        self.add(PendingNode(key, group, name, name, inputs=ins + extra, attrs=attrs,
                             outputs=outputs, device=self.device))
        if plan is not None:
            plan.append(("node", key))
        for k, v in enumerate(eqn.outvars):
            env[v] = (key, k)

    def bodies(self, name: str, params: dict[str, Any], ins: list[_Ref]
               ) -> list[tuple[str, Any, list[_Ref]]]:
        """Sub-jaxprs of control-flow primitives and the refs that feed their inputs."""
        if name == "cond" and "branches" in params:
            return [(f"branch_{i}", b, ins[1:]) for i, b in enumerate(params["branches"])]
        if name == "while" and "body_jaxpr" in params:
            cn = int(params.get("cond_nconsts", 0))
            bn = int(params.get("body_nconsts", 0))
            carry = ins[cn + bn:]
            return [("cond", params["cond_jaxpr"], ins[:cn] + carry),
                    ("body", params["body_jaxpr"], ins[cn:cn + bn] + carry)]
        if name == "scan" and "jaxpr" in params:
            return [("body", params["jaxpr"], ins)]
        out = []
        for k, v in params.items():
            is_jaxpr = type(v).__name__ in ("Jaxpr", "ClosedJaxpr")
            if is_jaxpr and len(getattr(v, "jaxpr", v).invars) == len(ins):
                out.append((sanitize(k), v, ins))
        return out


def from_jaxpr(closed: Any, input_names: Sequence[str] = (), output_names: Sequence[str] = (),
               *, const_inputs: Sequence[bool] = (), device: str = "/device:CPU:0") -> Graph:
    """The graph of a ``ClosedJaxpr`` (see the module docstring).

    ``input_names``/``output_names`` name the flat invars/outvars (``"params/0/w"``;
    defaults ``input_i``/``output_i``); ``const_inputs[i]`` makes invar ``i`` a parameter
    ``Const`` instead of a ``Placeholder``.
    """
    return _from_jaxpr(closed, input_names, output_names, const_inputs, device)[0]


def _from_jaxpr(closed: Any, input_names: Sequence[str], output_names: Sequence[str],
                const_inputs: Sequence[bool], device: str
                ) -> tuple[Graph, list[Any], dict[Hashable, str]]:
    """:func:`from_jaxpr`, plus the evaluation plan of the top-level jaxpr and the node
    name of every walker key (for profiles)."""
    with gc_paused():  # see gc_paused: thousands of nodes
        return _walk(closed, input_names, output_names, const_inputs, device)


def _walk(closed: Any, input_names: Sequence[str], output_names: Sequence[str],
          const_inputs: Sequence[bool], device: str
          ) -> tuple[Graph, list[Any], dict[Hashable, str]]:
    jaxpr = getattr(closed, "jaxpr", closed)
    w = _JaxprWalker(device)
    plan: list[Any] = []
    in_refs: list[_Ref] = []
    for i, v in enumerate(jaxpr.invars):
        path = input_names[i] if i < len(input_names) else f"input_{i}"
        scope, _, base = path.rpartition("/")
        spec = _spec(v.aval)
        if i < len(const_inputs) and const_inputs[i]:
            attrs = const_attrs(spec, None, {"kind": "parameter"})
            op = "Const"
        else:
            attrs = {"shape": TensorSpec(spec.shape)}
            if spec.dtype:
                attrs["dtype"] = DType(spec.dtype)
            attrs = dict(sorted(attrs.items()))
            op = "Placeholder"
        in_refs.append(w.add(PendingNode(("in", i), scope, base or f"input_{i}", op,
                                         attrs=attrs, outputs=[spec], device=device)))
    outs = w.jaxpr(closed, in_refs, "", plan=plan)
    single = len(outs) == 1
    for i, r in enumerate(outs):
        path = output_names[i] if i < len(output_names) else str(i)
        full = "output" if single or not path else f"output/{path}"
        scope, _, base = full.rpartition("/")
        specs = w.specs.get(r[0], [])
        w.add(PendingNode(("out", i), scope, base, "Identity", inputs=[r],
                          outputs=specs[r[1]: r[1] + 1], device=device))
    if w.unknown:
        warn_capture(f"capture(jax): unbound variables drawn as unknown constants: "
                     f"{', '.join(sorted(w.unknown)[:5])}", 5)
    graph = w.pending.finish("capture(jax)")
    return graph, plan, w.pending.names


def _is_array_like(v: Any) -> bool:
    return (hasattr(v, "shape") and hasattr(v, "dtype")) or (
        isinstance(v, (int, float, complex)) and not isinstance(v, bool)
    ) or isinstance(v, bool)


def _paths(tree: Any, prefix: str) -> list[str]:
    jax = importlib.import_module("jax")

    out = []
    for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
        segs = []
        for k in path:
            for attr in ("key", "idx", "name"):
                if hasattr(k, attr):
                    segs.append(sanitize(str(getattr(k, attr))))
                    break
            else:
                segs.append(sanitize(str(k)))
        out.append("/".join([prefix, *segs] if prefix else segs))
    return out


def _device(leaves: Sequence[Any]) -> str:
    jax = importlib.import_module("jax")

    for leaf in leaves:
        devices = getattr(leaf, "devices", None)
        if callable(devices):
            try:
                d = next(iter(devices()))
                return f"/device:{d.platform.upper()}:{d.id}"
            except Exception:
                continue
    d = jax.devices()[0]
    return f"/device:{d.platform.upper()}:{d.id}"


def capture_jax(
    fn: Any,
    example_inputs: Any = (),
    example_kwargs: dict[str, Any] | None = None,
    *,
    params_argnums: Sequence[int] | int = (),
    device: str | None = None,
) -> Graph:
    """Capture the graph of a JAX function (see the module docstring).

    Raises TypeError/ValueError for bad arguments and JAX's own error when ``fn`` cannot
    be traced.
    """
    graph = _capture(fn, example_inputs, example_kwargs, params_argnums, device, False)[0]
    return merge_single_op_modules(graph, keep=_is_body_scope)[0]


def profile_jax(
    fn: Any,
    example_inputs: Any = (),
    example_kwargs: dict[str, Any] | None = None,
    *,
    params_argnums: Sequence[int] | int = (),
    device: str | None = None,
) -> tuple[Graph, list[Any]]:
    """:func:`capture_jax` plus a profile of one evaluation: ``(graph, node_stats)``.

    The jaxpr is evaluated on the example inputs equation by equation, as the graph draws
    it: each equation drawn as a node is bound on its own (``primitive.bind``), blocked on
    (``block_until_ready``) and timed, with its outputs' bytes (element count x itemsize);
    the equations of inlined calls (``jit``, ``custom_jvp``...) are evaluated one by one
    too, each timed as its own node; ``cond``/``while``/``scan`` are timed as their
    node, bodies included. The evaluation runs twice, the first untimed: JAX compiles each
    primitive on its first bind, which would otherwise be most of every time. Times
    include JAX's per-op dispatch and no fusion: they rank ops, they are not the times of
    the compiled function.
    """
    graph, stats = _capture(fn, example_inputs, example_kwargs, params_argnums, device, True)
    graph, stats = merge_single_op_modules(graph, stats, keep=_is_body_scope)
    return graph, stats or []


def _is_body_scope(scope: str) -> bool:
    # The bodies of cond/while/scan are scopes of the graph, not modules: never merged.
    leaf = scope.rpartition("/")[2]
    return leaf in ("cond", "body") or (leaf.startswith("branch_") and leaf[7:].isdigit())


def _capture(fn: Any, example_inputs: Any, example_kwargs: dict[str, Any] | None,
             params_argnums: Sequence[int] | int, device: str | None, profile: bool
             ) -> tuple[Graph, list[Any] | None]:
    jax = importlib.import_module("jax")

    if not callable(fn):
        raise TypeError(f"capture: 'fn' must be callable, got {type(fn).__name__}")
    if example_kwargs is not None and not isinstance(example_kwargs, dict):
        raise TypeError(f"capture: 'example_kwargs' must be a dict, got "
                        f"{type(example_kwargs).__name__}")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    kwargs = dict(example_kwargs or {})
    argnums = (params_argnums,) if isinstance(params_argnums, int) else tuple(params_argnums)
    for a in argnums:
        if not isinstance(a, int) or not -len(args) <= a < len(args):
            raise ValueError(f"capture: 'params_argnums' entry {a!r} is not a positional "
                             f"argument index (the function gets {len(args)})")
    argnums = tuple(a % len(args) for a in argnums)
    names = arg_names(fn, len(args))
    # Arguments with non-array leaves (strings, None, callables) are static.
    dynamic = [i for i, a in enumerate(args)
               if all(_is_array_like(leaf) for leaf in jax.tree_util.tree_leaves(a))]
    kw_keys = [k for k, v in kwargs.items()
               if all(_is_array_like(leaf) for leaf in jax.tree_util.tree_leaves(v))]
    static_kw = {k: v for k, v in kwargs.items() if k not in kw_keys}

    def flat_fn(*dyn: Any) -> Any:
        full = list(args)
        for i, v in zip(dynamic, dyn[: len(dynamic)], strict=True):
            full[i] = v
        kw = dict(static_kw)
        kw.update(zip(kw_keys, dyn[len(dynamic):], strict=True))
        return fn(*full, **kw)

    dyn_values = [args[i] for i in dynamic] + [kwargs[k] for k in kw_keys]
    closed, out_shape = jax.make_jaxpr(flat_fn, return_shape=True)(*dyn_values)
    in_names: list[str] = []
    const_flags: list[bool] = []
    for i in dynamic:
        p = _paths(args[i], sanitize(names[i]))
        in_names.extend(p)
        const_flags.extend([i in argnums] * len(p))
    for k in kw_keys:
        p = _paths(kwargs[k], sanitize(k))
        in_names.extend(p)
        const_flags.extend([False] * len(p))
    out_names = _paths(out_shape, "")
    leaves = jax.tree_util.tree_leaves(dyn_values)
    dev = device or _device(leaves)
    graph, plan, keys = _from_jaxpr(closed, in_names, out_names, const_flags, dev)
    if not profile:
        return graph, None
    return graph, _profile(closed, plan, keys, leaves)


def _profile(closed: Any, plan: list[Any], names: dict[Hashable, str], leaves: list[Any]
             ) -> list[Any]:
    import time

    from summarylib.graph.writers import NodeStats

    jnp = importlib.import_module("jax.numpy")
    args = [leaf if hasattr(leaf, "dtype") else jnp.asarray(leaf) for leaf in leaves]
    _evaluate(closed, plan, args, None)  # compiles every primitive once
    times: list[tuple[Hashable, int, int, int]] = []
    _evaluate(closed, plan, args, times)
    # perf_counter_ns has the resolution; time_ns the epoch TensorBoard wants.
    epoch = time.time_ns() - time.perf_counter_ns()
    return [NodeStats(names[key], (epoch + t0) // 1000, dt // 1000, size)
            for key, t0, dt, size in times if key in names]


def _evaluate(closed: Any, plan: list[Any], args: Sequence[Any],
              times: list[tuple[Hashable, int, int, int]] | None) -> list[Any]:
    """Evaluate a jaxpr as ``plan`` says (see :meth:`_JaxprWalker.jaxpr`), appending
    ``(key, start ns, duration ns, output bytes)`` per node when ``times`` is a list."""
    import contextlib
    import time

    jax = importlib.import_module("jax")
    jaxpr = getattr(closed, "jaxpr", closed)
    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.val if type(v).__name__ == "Literal" else env[v]

    for v, c in zip(jaxpr.constvars, getattr(closed, "consts", []) or [], strict=False):
        env[v] = c
    for v, a in zip(jaxpr.invars, args, strict=False):
        env[v] = a
    clock = time.perf_counter_ns
    for eqn, step in zip(jaxpr.eqns, plan, strict=True):
        invals = [read(v) for v in eqn.invars]
        if step[0] == "inline":
            outs = _evaluate(step[1], step[2], invals, times)
        else:
            prim = eqn.primitive
            get_params = getattr(prim, "get_bind_params", None)
            bound = get_params(eqn.params) if get_params is not None else eqn.params
            if isinstance(bound, tuple):  # older JAX: (subfuns, params)
                subfuns, bound = bound
                invals = [*subfuns, *invals]
            ctx = getattr(getattr(eqn, "ctx", None), "manager", None)
            with ctx if ctx is not None else contextlib.nullcontext():
                t0 = clock()
                ans = prim.bind(*invals, **bound)
                jax.block_until_ready(ans)  # dispatch is asynchronous: time the work
                dt = clock() - t0
            outs = list(ans) if prim.multiple_results else [ans]
            if times is not None:
                size = sum(int(o.size) * o.dtype.itemsize for o in outs
                           if hasattr(o, "size") and hasattr(o, "dtype"))
                times.append((step[1], t0, dt, size))
        for v, o in zip(eqn.outvars, outs, strict=False):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]
