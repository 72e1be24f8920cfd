"""``TensorBoard`` callback for Keras 3 on any backend (JAX, torch, TensorFlow), no TensorFlow
needed: a drop-in for ``keras.callbacks.TensorBoard``, which imports ``tensorflow.summary``.

    os.environ["KERAS_BACKEND"] = "jax"       # or "torch"
    from summarylib.integrations.keras import TensorBoard

    model.fit(x, y, validation_split=0.2, epochs=10,
              callbacks=[TensorBoard("logs", histogram_freq=1, update_freq=10)])

It writes what Keras's callback writes, where it writes it:
  * runs ``<log_dir>/train`` and ``<log_dir>/validation``;
  * ``epoch_<metric>`` per epoch (validation metrics without their ``val_`` prefix, in the
    validation run), ``epoch_learning_rate`` (``epoch_learning_rate_<name>`` per optimizer
    of a multi-optimizer), ``epoch_steps_per_second`` and ``batch_steps_per_second`` with
    ``write_steps_per_second``;
  * ``batch_<metric>`` every ``update_freq`` training batches when it is an int
    (``"batch"`` is 1), at the global batch number;
  * ``evaluation_<metric>_vs_iterations`` at the optimizer's iteration after each
    evaluation, in the validation run;
  * with ``histogram_freq``: ``<weight path>/histogram`` per weight (``:`` made ``_``), and
    with ``write_images`` also ``<weight path>/image``, every ``histogram_freq`` epochs;
  * with ``write_graph``: the conceptual graph (``keras``: ``model.to_json()`` of a
    Functional or Sequential model) at step 0, and, on the torch backend, the op graph
    captured from the first training batch's shapes by ``summarylib.graph.capture``
    (Keras's callback writes an op graph on TensorFlow only).

Differences, on purpose: ``embeddings_freq`` writes each ``Embedding`` layer's matrix for
the Projector directly (``<log_dir>/<epoch:05d>/<layer name>/``, see
``summarylib.embedding``; ``embeddings_metadata`` is a TSV file of labels, or a dict of
them by layer name) instead of a TensorFlow checkpoint the projector cannot read without
TensorFlow. Weight images are scaled to [0, 1] per weight (Keras passes raw weights, which
TensorFlow clips to black and white). ``profile_batch`` is accepted and ignored (a warning
says so when it is not 0): profiling needs TensorFlow's or JAX's profiler, not a summary
writer.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

from keras.callbacks import Callback

from summarylib.ops._resolve import Caller, sink_for
from summarylib.ops.scalar import write_scalar

__all__ = ["TensorBoard"]


class TensorBoard(Callback):  # type: ignore[misc]
    """Keras 3's TensorBoard callback over summarylib (see the module docstring)."""

    def __init__(self, log_dir: str | os.PathLike[str] = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False,
                 write_steps_per_second: bool = False, update_freq: str | int = "epoch",
                 profile_batch: int | tuple[int, int] = 0, embeddings_freq: int = 0,
                 embeddings_metadata: str | dict[str, str] | None = None) -> None:
        super().__init__()
        if update_freq != "epoch" and update_freq != "batch" and (
            isinstance(update_freq, bool) or not isinstance(update_freq, int) or update_freq < 1
        ):
            raise ValueError("TensorBoard: 'update_freq' must be 'epoch', 'batch' or an int "
                             f">= 1, got {update_freq!r}")
        for arg, value in (("histogram_freq", histogram_freq),
                           ("embeddings_freq", embeddings_freq)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"TensorBoard: {arg!r} must be an int >= 0, got {value!r}")
        if profile_batch not in (0, None, (0, 0), "0"):
            warnings.warn("TensorBoard: 'profile_batch' is ignored: summarylib writes no "
                          "profiles (use the backend's profiler)", UserWarning, stacklevel=2)
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq: str | int = 1 if update_freq == "batch" else update_freq
        self.profile_batch = profile_batch
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers: dict[str, Any] = {}
        self._global_train_batch = 0
        self._batch_start = 0.0
        self._epoch_start = 0.0
        self._epoch_start_iterations = 0.0
        self._should_write_op_graph = False

    # -- writers ------------------------------------------------------------------
    def _writer(self, run: str) -> Any:
        writer = self._writers.get(run)
        if writer is None:
            from summarylib.creation import create_file_writer

            writer = self._writers[run] = create_file_writer(os.path.join(self.log_dir, run))
        return writer

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    # -- Keras hooks -----------------------------------------------------------------
    def set_model(self, model: Any) -> None:
        super().set_model(model)
        self._writers = {}
        self._should_write_op_graph = False
        if self.write_graph:
            self._write_conceptual_graph()
            self._should_write_op_graph = True

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._global_train_batch = 0

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._close_writers()

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start = time.time()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._should_write_op_graph:
            self._should_write_op_graph = False
            self._write_op_graph()
        if self.update_freq == "epoch" or self._global_train_batch % int(self.update_freq):
            return
        writer = self._writer("train")
        step = self._global_train_batch
        if self.write_steps_per_second:
            elapsed = time.time() - self._batch_start
            _scalar(writer, "batch_steps_per_second", 1.0 / elapsed if elapsed else 0.0,
                    step)
        for name, value in (logs or {}).items():
            _scalar(writer, f"batch_{name}", value, step)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "iterations") or not logs:
            return
        step = int(_numpy(optimizer.iterations))
        writer = self._writer("validation")
        for name, value in logs.items():
            _scalar(writer, f"evaluation_{name}_vs_iterations", value, step)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.write_steps_per_second:
            self._epoch_start = time.time()
            self._epoch_start_iterations = float(_numpy(self.model.optimizer.iterations))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._log_epoch_metrics(epoch, logs or {})
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self._log_embeddings(epoch)

    # -- what is written ------------------------------------------------------------
    def _log_epoch_metrics(self, epoch: int, logs: dict[str, Any]) -> None:
        if not logs:
            return
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        train.update(self._learning_rates())
        if self.write_steps_per_second:
            iterations = float(_numpy(self.model.optimizer.iterations))
            elapsed = time.time() - self._epoch_start
            train["steps_per_second"] = (iterations - self._epoch_start_iterations) / max(
                elapsed, 1e-9)
        for run, values in (("train", train), ("validation", val)):
            if values:
                writer = self._writer(run)
                for name, value in values.items():
                    _scalar(writer, f"epoch_{name}", value, epoch)

    def _learning_rates(self) -> dict[str, float]:
        from keras.optimizers import Optimizer

        optimizer: Any = getattr(self.model, "optimizer", None)
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if hasattr(optimizer, "optimizers"):
            return {f"learning_rate_{o.name}": float(_numpy(o.learning_rate))
                    for o in optimizer.optimizers}
        if isinstance(optimizer, Optimizer):
            return {"learning_rate": float(_numpy(optimizer.learning_rate))}
        return {}

    def _log_weights(self, epoch: int) -> None:
        writer = self._writer("train")
        for layer in self.model.layers:
            for weight in layer.weights:
                name = weight.path.replace(":", "_")
                values = _numpy(weight)
                with writer.as_default(step=epoch):
                    import summarylib as sl

                    sl.histogram(f"{name}/histogram", values)
                    if self.write_images:
                        image = _weight_image(values)
                        if image is not None:
                            sl.image(f"{name}/image", image, max_outputs=3,
                                     dataformats="NHWC")

    def _write_conceptual_graph(self) -> None:
        if type(self.model).__name__ not in ("Functional", "Sequential"):
            return
        import summarylib as sl
        from summarylib.graph.writers import PLUGIN_KERAS_MODEL, graph_metadata_bytes

        try:
            text = self.model.to_json()
        except Exception as e:  # an unbuilt or unserializable model: no conceptual graph
            warnings.warn(f"TensorBoard: no conceptual graph: {e}", UserWarning, stacklevel=2)
            return
        with self._writer("train").as_default(step=0):
            sl.write("keras", text, metadata=graph_metadata_bytes(PLUGIN_KERAS_MODEL))

    def _write_op_graph(self) -> None:
        from keras import backend

        if backend.backend() != "torch":
            return  # see the module docstring
        shapes = getattr(self.model, "inputs", None)
        if not shapes:
            return
        import torch

        from summarylib.graph import GraphCaptureWarning, capture

        try:
            example = tuple(torch.zeros([1 if d is None else d for d in t.shape])
                            for t in shapes)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", GraphCaptureWarning)
                graph = capture(self.model, example)
        except Exception as e:
            warnings.warn(f"TensorBoard: no op graph: {e}", UserWarning, stacklevel=2)
            return
        import summarylib as sl

        with self._writer("train").as_default():
            sl.write_graph(graph, step=0)

    def _log_embeddings(self, epoch: int) -> None:
        from keras.layers import Embedding

        from summarylib.ops.embedding import embedding

        for layer in self.model.layers:
            if not isinstance(layer, Embedding):
                continue
            matrix = _numpy(layer.embeddings)
            labels = self._metadata_for(layer.name, len(matrix))
            embedding(matrix, labels, step=epoch, tag=layer.name, logdir=self.log_dir)

    def _metadata_for(self, layer: str, n: int) -> list[str] | None:
        path = self.embeddings_metadata
        if isinstance(path, dict):
            path = path.get(layer)
        if path is None:
            return None
        with open(path, encoding="utf-8") as f:
            labels = f.read().splitlines()
        return labels if len(labels) == n else None


def _numpy(value: Any) -> Any:
    import numpy as np
    from keras import ops

    return np.asarray(ops.convert_to_numpy(value))


def _weight_image(w: Any) -> Any:
    """Keras's weight-as-image layout: [k, h, w, 1] from a bias, kernel or conv kernel."""
    import numpy as np
    from keras import backend

    img = np.squeeze(w)
    if img.ndim == 1:
        img = img.reshape(1, img.shape[0], 1, 1)
    elif img.ndim == 2:
        if img.shape[0] > img.shape[1]:
            img = img.T
        img = img.reshape(1, img.shape[0], img.shape[1], 1)
    elif img.ndim == 3:
        if backend.image_data_format() == "channels_last":
            img = np.transpose(img, [2, 0, 1])
        img = img.reshape(img.shape[0], img.shape[1], img.shape[2], 1)
    else:
        return None
    lo, hi = float(img.min()), float(img.max())
    return (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)


def _scalar(writer: Any, tag: str, value: Any, step: int) -> None:
    # Keras' own callback writes through tf.summary: TensorFlow 2's tensor scalars (the
    # SummaryWriter's add_scalar writes torch's simple_value instead).
    sink = sink_for(writer, tag, step, None, _KERAS_SCALAR)
    if sink is not None:
        write_scalar(sink, value)


_KERAS_SCALAR = Caller("TensorBoard", "name", "value")
