"""Build a :class:`~summarylib.graph.ir.Graph` by hand, with TensorFlow's naming rules.

Naming follows TF1 ``tf.Graph`` exactly, so hand-made graphs look like TensorFlow's:

* An op gets ``name`` (default: its op type) under the current scope, made unique by
  appending ``_1``, ``_2``, ... (``foo``, ``foo_1``, ``foo_2``). Uniqueness is
  case-insensitive (``Foo`` after ``foo`` becomes ``Foo_1``), and a generated name skips
  names already taken (``foo_1`` made explicitly earlier pushes the next ``foo`` to
  ``foo_2``).
* ``name_scope("block")`` opens ``block/`` under the current scope, uniquified with the same
  counter as op names (a second ``block`` scope is ``block_1/``; an op named ``block``
  pushes the scope to ``block_1/``, so no name is both an op and a scope). A name ending in
  ``/`` re-enters that exact scope (absolute, not uniquified); ``None`` or ``""`` is the root.
* ``control_dependencies([a, b])`` adds ``a`` and ``b`` as control inputs of every op made
  inside the block (blocks nest and accumulate; ``control_dependencies(None)`` clears them).
  A dependency that is already a data input of the op is not repeated, as in TF.
* ``device("/device:CPU:0")`` sets the device of ops made inside the block (innermost wins);
  the builder's ``device`` argument is the outermost default.

TensorBoard's series grouping (``add_1 … add_5`` drawn as one stack) needs five or more
siblings with numeric suffixes; with TF naming the unsuffixed first copy is left out of
the stack, exactly as it is for TensorFlow graphs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from summarylib.graph.ir import DType, Graph, Node, TensorSpec

__all__ = ["GraphBuilder", "Input"]

#: What ``op`` accepts as an input: a node (output 0) or an input string (``"n"``, ``"n:k"``).
Input = Node | str

# Serialized size above which TensorBoard's dashboard would hide an attr (graph-pipeline.md
# §2.2); Const values larger than this are not stored unless asked for.
_VALUE_LIMIT = 1024


class GraphBuilder:
    """Make nodes with scoped, unique names and add them to ``graph``.

    Example::

        b = GraphBuilder(device="/device:CPU:0")
        x = b.placeholder((None, 784), "float32", name="x")
        with b.name_scope("dense"):
            w = b.const(TensorSpec((784, 10), "float32"), name="kernel")
            y = b.op("MatMul", [x, w], outputs=TensorSpec((None, 10), "float32"))
        g = b.graph   # nodes x, dense/kernel, dense/MatMul
    """

    def __init__(self, graph: Graph | None = None, *, device: str = "") -> None:
        self.graph = graph if graph is not None else Graph()
        self._names_in_use: dict[str, int] = {}
        for node in self.graph:
            self._mark_used(node.name)
        self._scope = ""  # "" or a prefix ending in "/"
        self._control: list[str] = []
        self._device = device

    # --- naming ---------------------------------------------------------------------------

    def _mark_used(self, name: str) -> None:
        # Every prefix of an existing name is a scope in use, as TF records when
        # a graph is imported; this keeps new names off existing scopes.
        parts = name.lower().split("/")
        for i in range(1, len(parts) + 1):
            key = "/".join(parts[:i])
            self._names_in_use.setdefault(key, 1)

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current scope, made unique with ``_1``, ``_2``... (TF rules)."""
        if self._scope:
            name = self._scope + name
        key = name.lower()
        used = self._names_in_use
        i = used.get(key, 0)
        if mark_as_used:
            used[key] = i + 1
        if i > 0:
            base = key
            while key in used:
                key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                used[key] = 1
            name = f"{name}_{i - 1}"
        return name

    @property
    def scope(self) -> str:
        """The current scope prefix: ``""`` at the root, else a string ending in ``/``."""
        return self._scope

    @contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Open a (uniquified) scope; yields its prefix ending in ``/`` (``""`` for root)."""
        if name is not None and not isinstance(name, str):
            raise TypeError(
                f"GraphBuilder.name_scope: 'name' must be a str or None, got {type(name).__name__}"
            )
        saved = self._scope
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name
            self._mark_used(name[:-1])
        else:
            _check_segment(name, "GraphBuilder.name_scope")
            new = self.unique_name(name) + "/"
        self._scope = new
        try:
            yield new
        finally:
            self._scope = saved

    # --- context --------------------------------------------------------------------------

    @contextmanager
    def control_dependencies(self, deps: Iterable[Input] | None) -> Iterator[None]:
        """Ops made in the block get ``deps`` as control inputs (``None`` clears them)."""
        saved = self._control
        if deps is None:
            self._control = []
        else:
            names = [_node_name(_input_str(d, "GraphBuilder.control_dependencies")) for d in deps]
            merged = list(saved)
            merged.extend(n for n in names if n not in merged)
            self._control = merged
        try:
            yield
        finally:
            self._control = saved

    @contextmanager
    def device(self, device: str) -> Iterator[None]:
        """Ops made in the block are placed on ``device`` (e.g. ``/device:CUDA:0``)."""
        if not isinstance(device, str):
            raise TypeError(
                f"GraphBuilder.device: 'device' must be a str, got {type(device).__name__}"
            )
        saved = self._device
        self._device = device
        try:
            yield
        finally:
            self._device = saved

    # --- nodes ----------------------------------------------------------------------------

    def op(
        self,
        op_type: str,
        inputs: Sequence[Input] | Input = (),
        name: str | None = None,
        attrs: dict[str, object] | None = None,
        outputs: Sequence[TensorSpec] | TensorSpec | None = None,
        control_inputs: Sequence[Input] = (),
        device: str | None = None,
    ) -> Node:
        """Add a node of type ``op_type`` and return it.

        ``inputs`` are nodes (meaning output 0) or ``"name"``/``"name:k"`` strings (a single
        one needs no list);
        ``outputs`` is one :class:`TensorSpec` per output slot (a single spec means one
        output). ``name`` defaults to ``op_type`` and is scoped and uniquified; a name
        ending in ``/`` is used as the full name, unchanged. Use ``node.output(k)`` to feed
        output ``k`` to another op.
        """
        where = "GraphBuilder.op"
        if not isinstance(op_type, str) or not op_type:
            raise TypeError(f"{where}: 'op_type' must be a non-empty str, got {op_type!r}")
        if isinstance(inputs, (str, Node)):
            inputs = [inputs]
        data = [_input_str(i, where) for i in inputs]
        control = [_node_name(_input_str(c, where)) for c in control_inputs]
        sources = {_node_name(d) for d in data}
        for dep in self._control:
            if dep not in sources and dep not in control:
                control.append(dep)
        if isinstance(outputs, TensorSpec):
            specs = [outputs]
        elif outputs is None:
            specs = []
        else:
            specs = list(outputs)
            for s in specs:
                if not isinstance(s, TensorSpec):
                    raise TypeError(
                        f"{where}: 'outputs' must hold TensorSpec, got {type(s).__name__}"
                    )
        node = Node(
            name=self._full_name(name if name is not None else op_type, where),
            op=op_type,
            inputs=data,
            control_inputs=control,
            attrs=dict(attrs) if attrs else {},
            outputs=specs,
            device=self._device if device is None else device,
        )
        return self.graph.add(node)

    def _full_name(self, name: str, where: str) -> str:
        if not isinstance(name, str) or not name:
            raise TypeError(f"{where}: 'name' must be a non-empty str, got {name!r}")
        if name.endswith("/"):
            full = name[:-1]
            if full in self.graph:
                raise ValueError(f"{where}: a node named {full!r} already exists")
            self._mark_used(full)
            return full
        _check_segment(name, where)
        return self.unique_name(name)

    def const(
        self,
        value: Any,
        name: str = "Const",
        *,
        dtype: str | None = None,
        keep_value: bool | None = None,
        device: str | None = None,
        attrs: dict[str, object] | None = None,
    ) -> Node:
        """Add a ``Const`` node (drawn by TensorBoard as an icon inside its consumer).

        ``value`` is a number, nested list, numpy array or array-like (Python floats become
        float32 and ints int32, as in TF), or a :class:`TensorSpec` for a value known only
        by shape and dtype (model parameters). The node gets attrs ``dtype`` and, when
        ``keep_value`` is true or (default) the value's tensor is at most 1 KB, ``value``:
        larger values are left out because the dashboard ships every attr to the browser.
        """
        where = "GraphBuilder.const"
        node_attrs: dict[str, object] = {}
        if isinstance(value, TensorSpec):
            spec = value if dtype is None else TensorSpec(value.shape, dtype)
        else:
            arr = _const_array(value, dtype, where)
            kind = "string" if arr.dtype.kind in "OSU" else arr.dtype.name
            spec = TensorSpec(tuple(arr.shape), kind)
            if keep_value or (keep_value is None and _small(arr)):
                node_attrs["value"] = arr
        if spec.dtype is not None:
            node_attrs["dtype"] = DType(spec.dtype)
        if attrs:
            node_attrs.update(attrs)
        return self.op("Const", (), name=name, attrs=node_attrs, outputs=[spec], device=device)

    def placeholder(
        self,
        shape: Sequence[int | None] | None,
        dtype: str | None = "float32",
        name: str = "Placeholder",
        *,
        device: str | None = None,
    ) -> Node:
        """Add a ``Placeholder`` (a graph input) with attrs ``dtype`` and ``shape``."""
        spec = TensorSpec(None if shape is None else tuple(shape), dtype)
        attrs: dict[str, object] = {"shape": TensorSpec(spec.shape)}
        if dtype is not None:
            attrs = {"dtype": DType(dtype), "shape": TensorSpec(spec.shape)}
        return self.op("Placeholder", (), name=name, attrs=attrs, outputs=[spec], device=device)

    def no_op(self, name: str = "NoOp", control_inputs: Sequence[Input] = ()) -> Node:
        """Add a ``NoOp`` (TensorBoard moves these to the side panel), e.g. a group of deps."""
        return self.op("NoOp", (), name=name, control_inputs=control_inputs)


def _check_segment(name: str, where: str) -> None:
    if name.startswith("/") or "//" in name:
        raise ValueError(f"{where}: 'name' must not start with '/' or hold '//', got {name!r}")


def _input_str(inp: object, where: str) -> str:
    if isinstance(inp, Node):
        return inp.name
    if isinstance(inp, str) and inp:
        if inp.startswith("^"):
            raise ValueError(
                f"{where}: input {inp!r} starts with '^'; pass control inputs separately"
            )
        return inp
    raise TypeError(f"{where}: inputs must be Node or non-empty str, got {inp!r}")


def _node_name(inp: str) -> str:
    name, sep, slot = inp.rpartition(":")
    return name if sep and slot.isdigit() else inp


def _const_array(value: Any, dtype: str | None, where: str) -> Any:
    import numpy as np

    from summarylib.encoding.tensor import to_numeric_or_string_array

    arr = to_numeric_or_string_array(value, where, "value")
    if arr.dtype.kind == "O":
        bad = next((v for v in arr.reshape(-1) if not isinstance(v, (str, bytes))), None)
        if bad is not None:
            raise TypeError(
                f"{where}: 'value' must be numeric or hold only str/bytes, "
                f"found {type(bad).__name__}"
            )
    if dtype is not None and dtype != "string":
        arr = arr.astype(np.dtype(dtype))
    return arr


def _small(arr: Any) -> bool:
    if arr.dtype.kind in "OSU":
        return sum(len(str(v)) for v in arr.reshape(-1)) <= _VALUE_LIMIT
    return int(arr.nbytes) <= _VALUE_LIMIT
