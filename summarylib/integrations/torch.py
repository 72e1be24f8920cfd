"""``watch(model)``: histograms of a torch model's weights and gradients every N steps.

What ``wandb.watch`` does, for TensorBoard::

    import summarylib as sl
    from summarylib.integrations.torch import watch, unwatch

    writer = sl.create_file_writer("logs/run1")
    handle = watch(model, log="all", log_freq=100, writer=writer)
    for batch in loader:
        loss = model(batch).sum(); loss.backward(); optimizer.step()
    unwatch(model)

A step is one forward call of ``model`` in training mode (``model.training``). On every
``log_freq``-th step the weights (``log="parameters"``) and the gradients of that step's
backward pass (``log="gradients"``) are written as histograms under
``parameters/<name>`` and ``gradients/<name>``, at that step (or the writer's default
step, when ``summarylib.set_step`` set one on the thread that calls the model). On the
steps in between the hooks only count: no tensor is read, so nothing waits for the device.
On logging steps nothing waits either: CUDA tensors are captured without a sync (large
ones bucketed on the device, so only bucket tables cross to the host) and written once
ready; the writer is not flushed.

The writer is the one passed, else the default writer of the thread calling ``watch``
(hooks can run on autograd's threads, which have no default writer of their own).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Watch", "unwatch", "watch"]

_LOG_CHOICES = ("gradients", "parameters", "all")
_WATCHES: dict[int, Watch] = {}
_lock = threading.Lock()


class Watch:
    """The hooks of one ``watch()``; ``remove()`` takes them off (``unwatch`` does)."""

    def __init__(self, model: Any, log: str, log_freq: int, writer: Any, prefix: str) -> None:
        self.model = model
        self.log = log
        self.log_freq = log_freq
        self.writer = writer
        self.prefix = prefix
        self.step = 0  # forward calls in training mode so far
        self.logged_step = 0  # the step written with this step's histograms
        self._logged_grads: dict[str, int] = {}
        self._handles: list[Any] = []
        self._grad_handles: list[Any] = []

    # The hooks: integer arithmetic only, unless this is a logging step.
    def _forward(self, module: Any, args: Any, output: Any) -> None:
        if not module.training:
            return
        self.step += 1
        if self._grad_handles:  # the previous logging step's one-shot hooks are done
            for handle in self._grad_handles:
                handle.remove()
            self._grad_handles = []
        if self._logging_now():
            from summarylib.writer._context import _local

            default = _local.state.step  # the forward's thread, where set_step() applies
            self.logged_step = self.step - 1 if default is None else int(default)
        if self._logging_now():
            if self.log in ("parameters", "all"):
                self._write("parameters", {n: p for n, p in module.named_parameters()})
            if self.log in ("gradients", "all"):
                self._hook_gradients()

    def _hook_gradients(self) -> None:
        # Hooks for this step's backward only (removed by the next forward): steps that
        # log nothing run no hook but the forward counter.
        self._grad_handles = [param.register_hook(self._gradient_hook(name))
                              for name, param in self.model.named_parameters()
                              if param.requires_grad]

    def _gradient_hook(self, name: str) -> Any:
        step = self.step

        def hook(grad: Any) -> None:
            if self.step != step or self._logged_grads.get(name) == step:
                return
            self._logged_grads[name] = self.step
            self._write("gradients", {name: grad})

        return hook

    def _logging_now(self) -> bool:
        return self.step > 0 and (self.step - 1) % self.log_freq == 0

    def _write(self, kind: str, tensors: dict[str, Any]) -> None:
        from summarylib.ops._resolve import Caller, sink_for
        from summarylib.ops.histogram import write_histogram

        caller = Caller("watch", data="model")

        # Straight to the writer (no as_default(): its exit asks for a write). CUDA tensors
        # are captured without waiting (large ones bucketed on the device); the writer
        # thread writes them once ready.
        if self.writer.events is None:
            return
        for name, tensor in tensors.items():
            sink = sink_for(self.writer, f"{self.prefix}{kind}/{name}", self.logged_step,
                            None, caller)
            if sink is not None:
                write_histogram(sink, tensor.detach())

    def attach(self) -> None:
        self._handles.append(self.model.register_forward_hook(self._forward))

    def remove(self) -> None:
        for handle in self._handles + self._grad_handles:
            handle.remove()
        self._handles, self._grad_handles = [], []


def watch(model: Any, log: str = "gradients", log_freq: int = 100, *, writer: Any = None,
          prefix: str = "") -> Watch:
    """Log histograms of ``model``'s parameters and/or gradients every ``log_freq`` steps.

    Args:
      model: a ``torch.nn.Module``.
      log: ``"gradients"`` (default), ``"parameters"`` or ``"all"``.
      log_freq: an int >= 1; steps 0, log_freq, 2 * log_freq, ... are logged.
      writer: a summarylib writer; None: the calling thread's default writer.
      prefix: put before the ``parameters/`` and ``gradients/`` tags.

    Returns:
      The :class:`Watch` (``unwatch(model)`` or ``.remove()`` detaches it).

    Raises:
      TypeError, ValueError: a bad argument, or no writer; the model is already watched.
    """
    from summarylib.writer._context import _local
    from summarylib.writer._file_writer import WriterBase

    if not (hasattr(model, "register_forward_hook") and hasattr(model, "named_parameters")):
        raise TypeError(f"watch: 'model' must be a torch.nn.Module, got {type(model).__name__}")
    if log not in _LOG_CHOICES:
        raise ValueError(f"watch: 'log' must be one of {_LOG_CHOICES}, got {log!r}")
    if isinstance(log_freq, bool) or not isinstance(log_freq, int) or log_freq < 1:
        raise ValueError(f"watch: 'log_freq' must be an int >= 1, got {log_freq!r}")
    if not isinstance(prefix, str):
        raise TypeError(f"watch: 'prefix' must be a str, got {type(prefix).__name__}")
    if writer is None:
        writer = _local.state.writer
        if writer is None:
            raise ValueError("watch: no writer: pass writer=... or call it inside "
                             "writer.as_default()")
    elif not isinstance(writer, WriterBase):
        raise TypeError(f"watch: 'writer' must be a summarylib writer, got "
                        f"{type(writer).__name__}")
    with _lock:
        if id(model) in _WATCHES:
            raise ValueError("watch: this model is already watched; unwatch(model) first")
        handle = Watch(model, log, log_freq, writer, prefix)
        handle.attach()
        _WATCHES[id(model)] = handle
    return handle


def unwatch(model: Any = None) -> None:
    """Remove the hooks of ``watch(model)`` (of every watched model if None)."""
    with _lock:
        targets = list(_WATCHES) if model is None else [id(model)]
        for key in targets:
            handle = _WATCHES.pop(key, None)
            if handle is not None:
                handle.remove()
