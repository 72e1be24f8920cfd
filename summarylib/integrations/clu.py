"""``MetricWriter`` for JAX / Flax training loops: clu's interface, without TensorFlow.

clu's own ``metric_writers`` package cannot be imported without TensorFlow (its
``SummaryWriter`` is TensorFlow's); this writer implements the same interface with
summarylib's ops, so ``write_scalars``, ``write_images``, ... land where clu's TensorFlow
writer puts them (the key is the tag, at ``step``):

    from summarylib.integrations.clu import MetricWriter

    writer = MetricWriter("logs/run1")
    writer.write_hparams({"learning_rate": 1e-3, "model": {"depth": 4}})
    for step in range(steps):
        state, metrics = train_step(state, batch)        # metrics: JAX arrays
        writer.write_scalars(step, metrics)
    writer.close()

When ``clu.metric_writers.interface`` can be imported (TensorFlow installed, or the module
already loaded), the class is a subclass of clu's ``MetricWriter``; otherwise it has the
same methods (duck typing is all clu's ``AsyncWriter`` and ``MultiWriter`` need).

Values may be JAX arrays on any device, numpy arrays or Python numbers. With
``asynchronous=True`` (the default) a call starts the device-to-host copy of JAX arrays
(``copy_to_host_async``) and returns; a single background thread waits for the values and
writes them in call order, so the training step never waits for the device. An error on
that thread is raised by the next call, ``flush()`` or ``close()``.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from summarylib.encoding._pending import keep_jax_value, own_arrays, restore_own_arrays

__all__ = ["MetricWriter", "flatten_hparams"]


def _clu_base() -> type:
    module: Any = sys.modules.get("clu.metric_writers.interface")
    if module is None:
        try:
            module = importlib.import_module("clu.metric_writers.interface")
        except Exception:  # clu missing, or its package needs TensorFlow
            return object
    base: type = module.MetricWriter
    return base


def flatten_hparams(hparams: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """Nested hparams as clu flattens them: keys joined with ".", lists by index, None as ""."""
    out: dict[str, Any] = {}
    for key, value in hparams.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) or hasattr(value, "items"):
            out.update(flatten_hparams(value, path))
        elif isinstance(value, (list, tuple)):
            out.update(flatten_hparams({str(i): v for i, v in enumerate(value)}, path))
        else:
            out[".".join(path)] = "" if value is None else value
    return out




class MetricWriter(_clu_base()):  # type: ignore[misc]
    """clu's ``MetricWriter`` interface over one summarylib event file.

    Args:
      logdir: the run directory (created if missing).
      asynchronous: write from a background thread (see the module docstring).
      max_queue, flush_millis: the writer's flush policy (see ``create_file_writer``).
    """

    def __init__(self, logdir: str | os.PathLike[str], *, asynchronous: bool = True,
                 max_queue: int | None = None, flush_millis: int | None = None) -> None:
        from summarylib.creation import create_file_writer

        self._writer = create_file_writer(logdir, max_queue=max_queue,
                                          flush_millis=flush_millis)
        self._pool = ThreadPoolExecutor(1, "summarylib-clu") if asynchronous else None
        self._pending: list[Future[None]] = []
        self._lock = threading.Lock()
        self._error: BaseException | None = None

    # -- plumbing -------------------------------------------------------------
    def _submit(self, write: Callable[[], None], items: dict[str, Any] | None = None) -> None:
        # items: the values write() writes, as _values() kept them.
        self._raise_pending_error()
        if self._pool is None:
            write()
            return
        if items:
            kept = list(items.values())
            write_values = write

            def write() -> None:
                # What _values() kept is out of the caller's reach already: the ops keep
                # it without copying it again.
                token = own_arrays(kept)
                try:
                    write_values()
                finally:
                    restore_own_arrays(token)

        future = self._pool.submit(write)
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(future)
        future.add_done_callback(self._keep_error)

    def _sink(self, key: str | None, step: int, where: str, arg: str = "values") -> Any:
        """Where one value of a write goes: this writer, the key as its literal tag (clu's
        keys are tags: no name scope), ``step``. None while ``record_if`` is false."""
        from summarylib.ops._resolve import Caller, sink_for

        return sink_for(self._writer, key, step, None, Caller(where, "key", arg),
                        scoped=False, untagged=key is None)

    def _keep_error(self, future: Future[None]) -> None:
        error = future.exception()
        if error is not None and self._error is None:
            self._error = error

    def _raise_pending_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _values(self, values: Mapping[str, Any], where: str) -> dict[str, Any]:
        if not isinstance(values, Mapping):
            raise TypeError(f"{where}: expected a mapping of names to values, got "
                            f"{type(values).__name__}")
        for key in values:
            if not isinstance(key, str) or not key:
                raise TypeError(f"{where}: keys must be non-empty str, got {key!r}")
        if self._pool is None:
            return dict(values)  # written now: the ops keep what they need
        # Written later, on the pool's thread: a JAX array the caller donates or deletes
        # meanwhile must not take its value with it (a view or a private copy, its copy
        # to the host started).
        return {k: keep_jax_value(v) for k, v in values.items()}

    # -- clu's interface ------------------------------------------------------
    def write_summaries(self, step: int, values: Mapping[str, Any],
                        metadata: Mapping[str, Any] | None = None) -> None:
        """Arbitrary tensors with optional ``SummaryMetadata`` per key (``write``)."""
        items = self._values(values, "write_summaries")

        from summarylib.ops.write import write_tensor

        def write() -> None:
            for key, value in items.items():
                sink = self._sink(key, step, "write_summaries")
                if sink is not None:
                    write_tensor(sink, value, None if metadata is None else metadata.get(key))

        self._submit(write, items)

    def write_scalars(self, step: int, scalars: Mapping[str, Any]) -> None:
        """Scalars, one tag per key."""
        from summarylib.ops.scalar import write_scalars

        items = self._values(scalars, "write_scalars")

        def write() -> None:
            write_scalars(self._writer, items, step)

        self._submit(write, items)

    def write_images(self, step: int, images: Mapping[str, Any]) -> None:
        """Images ``[N, H, W, C]`` or ``[H, W, C]`` per key; all N are kept."""
        import numpy as np

        items = self._values(images, "write_images")

        from summarylib.ops.image import write_image

        def write() -> None:
            for key, value in items.items():
                arr = np.asarray(value)
                if arr.ndim == 3:
                    arr = arr[None]
                sink = self._sink(key, step, "write_images", "images")
                if sink is not None:
                    write_image(sink, arr, arr.shape[0], dataformats="NHWC")

        self._submit(write, items)

    def write_videos(self, step: int, videos: Mapping[str, Any]) -> None:
        """Videos ``[N, T, H, W, C]`` or ``[T, H, W, C]`` per key, as animated GIFs (a
        batch tiled into one grid). clu's TensorFlow writer skips videos."""
        import numpy as np

        from summarylib.torch_conventions import video_frames

        items = self._values(videos, "write_videos")

        from summarylib.ops.video import write_video

        def write() -> None:
            for key, value in items.items():
                arr = np.asarray(value)
                if arr.ndim == 5:
                    arr = video_frames(arr.transpose(0, 1, 4, 2, 3), "write_videos")
                sink = self._sink(key, step, "write_videos", "videos")
                if sink is not None:
                    write_video(sink, arr)

        self._submit(write, items)

    def write_audios(self, step: int, audios: Mapping[str, Any], *, sample_rate: int) -> None:
        """Clips ``[N, T, C]`` in [-1, 1] per key; all N are kept."""
        import numpy as np

        items = self._values(audios, "write_audios")

        from summarylib.ops.audio import write_audio

        def write() -> None:
            for key, value in items.items():
                arr = np.asarray(value)
                sink = self._sink(key, step, "write_audios", "audios")
                if sink is not None:
                    write_audio(sink, arr, sample_rate, arr.shape[0])

        self._submit(write, items)

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """Markdown text per key."""
        from summarylib.ops.text import write_text

        items = self._values(texts, "write_texts")

        def write() -> None:
            for key, value in items.items():
                sink = self._sink(key, step, "write_texts", "texts")
                if sink is not None:
                    write_text(sink, value)

        self._submit(write, items)

    def write_histograms(self, step: int, arrays: Mapping[str, Any],
                         num_buckets: Mapping[str, int] | None = None) -> None:
        """Histograms per key (30 buckets unless ``num_buckets[key]`` says otherwise)."""
        items = self._values(arrays, "write_histograms")

        from summarylib.ops.histogram import write_histogram

        def write() -> None:
            for key, value in items.items():
                buckets = None if num_buckets is None else num_buckets.get(key)
                sink = self._sink(key, step, "write_histograms", "arrays")
                if sink is not None:
                    write_histogram(sink, value, buckets)

        self._submit(write, items)

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """This run's hyperparameters (nested dicts flattened as clu flattens them)."""
        from summarylib.ops._emit import emit_summary
        from summarylib.ops.hparams_plugin import coerce_hparams, hparams_pb

        if not isinstance(hparams, Mapping):
            raise TypeError(f"write_hparams: expected a mapping, got {type(hparams).__name__}")
        values = coerce_hparams(flatten_hparams(hparams), "write_hparams")

        def write() -> None:
            sink = self._sink(None, 0, "write_hparams", "hparams")
            if sink is not None:
                emit_summary(sink, hparams_pb(values).SerializeToString())

        self._submit(write)
        # The run is a trial now: close() (or dropping the writer) ends it, so the HParams
        # dashboard shows it finished, not "unknown".
        self._writer._trial_started()

    def flush(self) -> None:
        """Wait for pending writes and write everything to the file."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.exception()  # wait; errors are kept by _keep_error
        self._raise_pending_error()
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the file (a later call does nothing); a trial of
        ``write_hparams`` is marked ended ("success") first."""
        try:
            self.flush()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self._writer.close()
