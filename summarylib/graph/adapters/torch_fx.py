"""PyTorch graphs from ``torch.export`` (op level) or ``torch.fx`` (module level) -> IR.

Data contract of :func:`capture_torch` (graph-pipeline.md §3.3, §5.3):

* ``model``: a ``torch.nn.Module`` or a function of tensors; ``example_inputs``: the
  positional arguments (a tuple; any other value is the single argument) and
  ``example_kwargs`` the keyword arguments. Tensors, nested tuples/lists/dicts of them and
  non-tensor values (ints, bools, strings, None) are accepted. Capture never changes the
  model: export runs on fake tensors; the fx shape pass and the jit tracer run the model
  once for real and then restore every buffer (BatchNorm statistics) and the RNG state.
* ``method="export"`` (op level): one node per aten op, op type ``aten::<op>``
  (``aten::conv2d``), named ``<module path>/<op>`` from ``nn_module_stack``
  (``layer1/0/conv1/conv2d``). ``method="fx"`` (module level): one node per leaf module
  call, op type the module class (``Conv2d``), named ``<module path>/<Class>``, plus
  ``torch.*`` function and tensor-method calls. ``method="auto"`` (default) tries export
  and, if the model cannot be exported (data-dependent control flow), falls back to
  ``torch.jit.trace`` with a :class:`GraphCaptureWarning` saying why (the jit graph holds
  only the branches taken for the example inputs).
* Parameters, buffers and lifted constants are ``Const`` nodes named by their qualified
  names (``layer1/0/conv1/weight``) with attrs ``dtype``, ``target`` (the dotted name) and
  ``kind`` (``parameter``/``buffer``/``constant``); parameter values are not stored.
  Small constant tensors keep their value.
* Tensor inputs are ``Placeholder`` nodes named by argument and key path (``x``,
  ``batch/image``); non-tensor inputs the trace was specialised on are ``Const`` nodes
  holding the value (None inputs are left out). Outputs are ``Identity`` nodes under
  ``output`` (``output`` for a single tensor, ``output/logits`` for a dict key,
  ``output/0`` for a tuple element); None outputs are left out; non-tensor outputs are
  ``Const``. In-place updates of buffers (BatchNorm statistics in training mode) are
  ``Assign`` nodes (drawn as reference edges).
* ``getitem`` on a multi-output op becomes the output slot ``op:k``; non-tensor op
  arguments become attrs named after the op schema's arguments (``stride``, ``padding``).
* Shapes and dtypes come from ``meta["val"]`` (export) or one real run of the fx graph on
  the example inputs (fx; a fake-tensor ``ShapeProp`` if that run fails); symbolic sizes
  are unknown dims (-1). The device is the one the tensors live on (``/device:CPU:0``,
  ``/device:CUDA:0``), or ``device=`` when given.
* :func:`profile_torch` also times the graph's nodes (export and fx; not the jit
  fallback, see there).

The code is split by concept: :mod:`~summarylib.graph.adapters.torch_dispatch` (the entry
points: arguments, tracer choice, fallback), :mod:`~summarylib.graph.adapters.torch_export`
and :mod:`~summarylib.graph.adapters.torch_fx_graph` (the two translations, over the
shared :mod:`~summarylib.graph.adapters.torch_walk`) and
:mod:`~summarylib.graph.adapters.torch_interpreter` (running a graph: shapes, profiles).
This module keeps the names it always exported.
"""

from __future__ import annotations

from summarylib.graph.adapters import GraphCaptureWarning
from summarylib.graph.adapters.torch_common import (
    arg_names,
    device_string,
    dtype_string,
    module_path,
    spec_of,
)
from summarylib.graph.adapters.torch_dispatch import capture_torch, profile_torch
from summarylib.graph.adapters.torch_export import from_exported_program
from summarylib.graph.adapters.torch_fx_graph import from_fx

__all__ = [
    "GraphCaptureWarning",
    "arg_names",
    "capture_torch",
    "device_string",
    "dtype_string",
    "from_exported_program",
    "from_fx",
    "module_path",
    "profile_torch",
    "spec_of",
]
