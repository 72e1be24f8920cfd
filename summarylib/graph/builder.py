"""Build a :class:`~summarylib.graph.ir.Graph` by hand, with TensorFlow's naming rules.

Names must follow TensorFlow's node-name rule, ``[A-Za-z0-9.][A-Za-z0-9_./>-]*`` for the
full scoped name: a ``:`` would be read by the dashboard as an output slot (``a:1`` is
output 1 of ``a``), so a name or scope breaking the rule raises ValueError naming the
argument. An op's default name is its op type with the forbidden characters replaced
(``aten::linear`` -> ``linear``: the part after the last ``::``).

``unique_names`` chooses what happens to a name already in use:

* ``"tf"`` (default): TF1 ``tf.Graph`` parity, so hand-made graphs look like TensorFlow's
  (the rules below);
* ``"series"``: the same, but suffixes without the underscore (``add``, ``add1``,
  ``add2``; ``_1`` after a name ending in a digit). TensorBoard stacks five or more
  siblings ``name<k>`` into one series node, and reads an unsuffixed ``add`` as ``add0``,
  so with this mode the first copy joins the stack (``add[0-5]``); with TF naming it stays
  outside (``add`` next to ``add_[1-5]``);
* ``"error"``: no renaming: a name (or scope) already in use raises ValueError. Re-enter a
  scope with a trailing ``/`` (``name_scope("block/")``).

With ``"tf"``:

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
the stack, exactly as it is for TensorFlow graphs (``unique_names="series"`` includes it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from summarylib.graph.ir import DType, Graph, Node, TensorSpec

__all__ = ["NAME_RULE", "UNIQUE_NAMES", "GraphBuilder", "Input"]

#: TensorFlow's node-name rule (tensorflow/python/framework/ops.py, node_def_util.cc),
#: applied to full scoped names.
NAME_RULE = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*\Z")
_FORBIDDEN = re.compile(r"[^A-Za-z0-9_./>-]")
# NAME_RULE without empty segments ('//', a trailing '/'): the one check a valid name
# needs (the builder names every node; errors are diagnosed separately).
_GOOD_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.>-]*(?:/[A-Za-z0-9_.>-]+)*\Z")
#: The ``unique_names`` modes of :class:`GraphBuilder`.
UNIQUE_NAMES = ("tf", "series", "error")

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

    def __init__(
        self, graph: Graph | None = None, *, device: str = "", unique_names: str = "tf"
    ) -> None:
        if unique_names not in UNIQUE_NAMES:
            raise ValueError(
                f"GraphBuilder: 'unique_names' must be one of {UNIQUE_NAMES}, "
                f"got {unique_names!r}"
            )
        self.unique_names = unique_names
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
        """``name`` under the current scope, made unique with ``_1``, ``_2``... (TF rules).

        With ``unique_names="series"`` the suffixes are ``1``, ``2``...; with ``"error"`` a
        name in use raises ValueError.
        """
        if self._scope:
            name = self._scope + name
        key = name.lower()
        used = self._names_in_use
        i = used.get(key, 0)
        if i > 0 and self.unique_names == "error":
            raise ValueError(
                f"GraphBuilder: the name {name!r} is already in use (unique_names='error'; "
                "names are compared ignoring case, as TensorFlow does)"
            )
        # "series": add, add1, add2 (TensorBoard's series pattern); after a trailing digit
        # the underscore stays, or conv2's copies would read as conv21, conv22.
        sep = "" if self.unique_names == "series" and not name[-1:].isdigit() else "_"
        if mark_as_used:
            used[key] = i + 1
        if i > 0:
            base = key
            while key in used:
                key = f"{base}{sep}{i}"
                i += 1
            if mark_as_used:
                used[key] = 1
            name = f"{name}{sep}{i - 1}"
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
            _check_name(name[:-1], "GraphBuilder.name_scope", "name")
            new = name
            self._mark_used(name[:-1])
        else:
            _check_name(self._scope + name, "GraphBuilder.name_scope", "name", name)
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
        output ``k`` to another op. A name breaking TensorFlow's node-name rule (see the
        module docstring) raises ValueError.
        """
        return self._make(
            "GraphBuilder.op", op_type, inputs, name, attrs, outputs, control_inputs, device
        )

    def _make(
        self,
        where: str,
        op_type: str,
        inputs: Sequence[Input] | Input = (),
        name: str | None = None,
        attrs: dict[str, object] | None = None,
        outputs: Sequence[TensorSpec] | TensorSpec | None = None,
        control_inputs: Sequence[Input] = (),
        device: str | None = None,
    ) -> Node:
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
            name=self._full_name(name if name is not None else _default_name(op_type), where),
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
            _check_name(full, where, "name")
            if full in self.graph:
                raise ValueError(f"{where}: a node named {full!r} already exists")
            self._mark_used(full)
            return full
        _check_name(self._scope + name, where, "name", name)
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
        return self._make(where, "Const", (), name, node_attrs, [spec], (), device)

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
        return self._make(
            "GraphBuilder.placeholder", "Placeholder", (), name, attrs, [spec], (), device
        )

    def no_op(self, name: str = "NoOp", control_inputs: Sequence[Input] = ()) -> Node:
        """Add a ``NoOp`` (TensorBoard moves these to the side panel), e.g. a group of deps."""
        return self._make("GraphBuilder.no_op", "NoOp", (), name, None, None, control_inputs)


def _check_name(full: str, where: str, arg: str, given: str | None = None) -> None:
    """ValueError naming ``arg`` unless ``full`` (the scoped name) follows TF's rule."""
    if _GOOD_NAME.match(full):
        return
    given = full if given is None else given
    if given.startswith("/") or "//" in full or full.endswith("/"):
        raise ValueError(f"{where}: {arg!r} must not start with '/' or hold '//', got {given!r}")
    if NAME_RULE.match(full):
        return
    bad = sorted(set(_FORBIDDEN.findall(full)))
    if ":" in bad:
        why = ("it holds ':', which the dashboard reads as an output slot "
               "('a:1' is output 1 of 'a')")
    elif bad:
        why = f"it holds {', '.join(repr(c) for c in bad)}"
    else:
        why = f"it starts with {full[0]!r}"
    raise ValueError(
        f"{where}: {arg!r} {given!r} breaks TensorFlow's node-name rule "
        f"[A-Za-z0-9.][A-Za-z0-9_./>-]*: {why}"
    )


_DEFAULT_NAMES: dict[str, str] = {}


def _default_name(op_type: str) -> str:
    """An op's default name: its type, after the last ``::`` (``aten::linear`` -> ``linear``),
    with characters TensorFlow's node-name rule forbids replaced by ``_``."""
    name = _DEFAULT_NAMES.get(op_type)
    if name is None:
        name = _DEFAULT_NAMES[op_type] = _make_default_name(op_type)
    return name


def _make_default_name(op_type: str) -> str:
    base = op_type.rpartition("::")[2] or op_type
    base = _FORBIDDEN.sub("_", base)
    return base if NAME_RULE.match(base) else f"op{base}"


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

    from summarylib.encoding._tensor import to_numeric_or_string_array

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
