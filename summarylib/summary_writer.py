"""``SummaryWriter``: the one writer class, for tf.summary-style ops and torch-style ``add_*``.

``SummaryWriter(log_dir)`` takes the constructor of ``torch.utils.tensorboard`` (and
tensorboardX: ``logdir=``, ``write_to_disk=``); :func:`summarylib.create_file_writer` makes
the same class. Every ``add_*`` method is thin: it maps torch's arguments (and their input
conventions, :mod:`summarylib.torch_conventions`) onto the op of its kind, which it runs
with this writer as the target, whatever the thread's default writer is.

Shared rules of the ``add_*`` methods:
  * ``global_step=None`` is the thread's default step (``summarylib.set_step``,
    ``as_default(step=...)``) if one is set, else 0 as in torch.
  * ``walltime`` (seconds since the epoch) replaces the time of writing when given.
  * Tags pass through the current :func:`summarylib.name_scope`, and nothing is written
    while :func:`summarylib.record_if` is false; outside both, tags are torch's.
  * They return True when written, False when nothing is recording (torch returns None).
  * Bad input raises ``TypeError``/``ValueError`` naming the method and the argument, and
    writes nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from summarylib.encoding._arrays import shape_of
from summarylib.encoding._events import event_bytes
from summarylib.encoding._pending import device_kind, is_tracer, torch_compiling
from summarylib.encoding._wire import field_bytes
from summarylib.ops._replay import COMPILED_PLANS
from summarylib.ops._resolve import Caller, Sink, check_tag, check_wall_time, sink_for
from summarylib.ops._writer_methods import WriterMethod, in_compiled_code, record_method

# Imported with the writer, not at the first call: it registers add_histogram's counting
# inside compiled code, which a call traced by dynamo looks up (registered during the
# trace, it would change what dynamo just guarded on).
from summarylib.ops.histogram_proto import write_histogram_bins
from summarylib.ops.scalar import simple_scalar_to, write_simple_scalar
from summarylib.writer._context import (
    DeferredCondition,
    Step,
    _local,
    check_step,
    condition_holds,
)
from summarylib.writer._file_writer import WriterBase, check_logdir, open_writer_resource
from summarylib.writer._path_safety import check_name_text, safe_component
from summarylib.writer._registry import register_writer, registered_writer
from summarylib.writer._settings import WriterSettings

if TYPE_CHECKING:
    from summarylib.torch_file_writer import TorchFileWriter

__all__ = ["SummaryWriter"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class SummaryWriter(WriterBase):
    """Writes summaries to a new event file in a log directory.

    Construct it as torch's ``SummaryWriter`` (``add_*`` methods, ``with SummaryWriter()
    as w:``), or with :func:`summarylib.create_file_writer` and use it as ``tf.summary``'s
    default writer (``as_default()``, ``scalar(...)``): one class serves both.

    Args:
      log_dir: the directory (created if missing). Default
        ``runs/<Mon DD_HH-MM-SS>_<host><comment>``, as torch. ``logdir`` is tensorboardX's
        name for it.
      comment: appended to the default ``log_dir``; ignored when ``log_dir`` is given.
      purge_step: if given, the file starts with a ``SessionLog.START`` at this step:
        TensorBoard then drops the events of earlier files of the run at steps >= it (resume
        after a crash without a zig-zag curve).
      max_queue: write when more than this many events are pending (default 10).
      flush_secs: write pending events at most this many seconds after the last write.
      filename_suffix: appended verbatim to the file name (torch's rule; default "").
      write_to_disk: False makes a writer that records nothing (tensorboardX).
      comet_config: accepted for tensorboardX compatibility and ignored.
      storage_options: for a URL ``log_dir`` (``s3://...``), the fsspec filesystem's
        options (see :func:`summarylib.create_file_writer`).

    Raises:
      TypeError, ValueError: a bad argument, named in the message.
      WriteFailedError: the directory or event file cannot be created.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        *,
        logdir: str | os.PathLike[str] | None = None,
        write_to_disk: bool = True,
        comet_config: Any = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        del comet_config
        where = "SummaryWriter"
        if log_dir is not None and logdir is not None:
            raise TypeError(f"{where}: pass 'log_dir' or 'logdir', not both")
        chosen = log_dir if log_dir is not None else logdir
        if not isinstance(comment, str):
            raise TypeError(f"{where}: 'comment' must be a str, got {type(comment).__name__}")
        if not chosen:
            from summarylib.torch_conventions import default_log_dir

            chosen = default_log_dir(comment)
        path = check_logdir(where, "log_dir", chosen)
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)):
            raise TypeError(f"{where}: 'flush_secs' must be a number, got {flush_secs!r}")
        if not flush_secs >= 0:
            raise ValueError(f"{where}: 'flush_secs' must be >= 0, got {flush_secs!r}")
        settings = WriterSettings.checked(
            where, max_queue=max_queue, flush_millis=int(flush_secs * 1000),
            filename_suffix=_verbatim_suffix(filename_suffix, where),
            storage_options=storage_options,
        )
        if purge_step is not None:
            from summarylib.writer._context import check_step

            purge_step = check_step(purge_step, where)
        if not write_to_disk:
            self._setup(None, path, settings)
            return
        resource = open_writer_resource(path, settings)
        self._setup(resource, path, settings)
        if purge_step is not None:
            # Event.session_log (field 7) = SessionLog{status: START}: readers purge from here.
            resource.append(event_bytes(resource.clock(), purge_step, field_bytes(7, b"\x08\x01")))

    def _setup(self, resource: Any, logdir: str | None, settings: WriterSettings) -> None:
        super()._setup(resource, logdir, settings)
        # No reference to itself (a cycle would keep an unreferenced writer, and its
        # unwritten events, alive until the cyclic garbage collector runs).
        self._silent = resource is None  # write_to_disk=False: add_* write nothing
        self._children: dict[str, SummaryWriter] = {}  # sub-runs, by directory name
        self._scalar_runs: list[SummaryWriter] = []  # those of add_scalars, in order
        self._has_trial = False  # add_hparams wrote this run's trial
        self._trial_runs: set[str] = set()  # sub-runs of its further trials
        self._defaults: tuple[Step | None, float | None] | None = None  # use_metadata()
        self._exported: dict[str, int] = {}  # export_scalars_to_json(): points done per run
        # How compiled code that calls add_* names this writer (held weakly there).
        self._key = register_writer(self)

    def _record(self, method: WriterMethod, args: tuple[Any, ...]) -> bool:
        """Record ``method(self, *args)`` into the compiled code being traced (JAX or
        torch.compile): it writes to this writer each time the code runs, with that run's
        values (:mod:`summarylib.ops._writer_methods`)."""
        if self._silent:
            return False
        return record_method(self._key, method, args)

    # -- plumbing -------------------------------------------------------------
    def _sink(
        self, tag: Any, global_step: Step | None, walltime: Any, caller: Caller, *,
        scoped: bool = True, untagged: bool = False,
    ) -> Sink | None:
        """Where an ``add_*`` call writes: this writer, the tag in the current name scope,
        torch's step and the wall time; None when nothing is recording (a writer made with
        ``write_to_disk=False``, or a false ``record_if``).

        The op cores take the sink and name ``caller`` (the method and torch's argument
        names) in their errors; the thread's default writer is never touched.
        """
        if self._silent:
            return None
        return sink_for(self, tag, self._step(global_step, caller.where),
                        self._walltime(walltime), caller, scoped=scoped, untagged=untagged)

    def _step(self, global_step: Step | None, where: str) -> Step:
        """torch's step: ``global_step``, else ``use_metadata``'s, else the thread's
        default step, else 0; a float is written as ``int(step)``, as torch does."""
        if global_step is None:
            if self._defaults is not None and self._defaults[0] is not None:
                global_step = self._defaults[0]
            else:
                default = _local.state.step
                return 0 if default is None else default
        if type(global_step) is not int:
            from summarylib.torch_conventions import torch_step

            step: Step = torch_step(global_step, where)
            return step
        return global_step

    def _walltime(self, walltime: float | None) -> float | None:
        if walltime is None and self._defaults is not None:
            return self._defaults[1]
        return walltime

    @contextmanager
    def use_metadata(
        self, *, global_step: Step | None = None, walltime: float | None = None
    ) -> Iterator[SummaryWriter]:
        """Inside the block, ``add_*`` calls without a step or wall time use these
        (tensorboardX's method). Nested blocks replace the outer defaults."""
        saved = self._defaults
        self._defaults = (global_step, walltime)
        try:
            yield self
        finally:
            self._defaults = saved

    def _needs_dir(self, where: str) -> str:
        if self._logdir is None:
            raise ValueError(f"{where}: this writer has no log directory (a custom Output)")
        return self._logdir

    # -- torch's methods ------------------------------------------------------
    @property
    def file_writer(self) -> TorchFileWriter | None:
        """torch's ``FileWriter`` of this run (``get_logdir``, ``add_event``,
        ``add_summary``, ``add_graph``, ``flush``, ``close``), writing into this writer's
        event file; None once the writer is closed, as in torch."""
        if self.closed:
            return None
        from summarylib.torch_file_writer import TorchFileWriter

        return TorchFileWriter(self)

    @property
    def all_writers(self) -> dict[str, TorchFileWriter] | None:
        """torch's ``{log_dir: file_writer}`` (this run's only); None once closed."""
        fw = self.file_writer
        return None if fw is None else {str(self._logdir): fw}

    def get_logdir(self) -> str | None:
        """The log directory (torch's name for :attr:`logdir`)."""
        return self._logdir

    def add_scalar(
        self, tag: str, scalar_value: Any, global_step: Step | None = None,
        walltime: float | None = None, new_style: bool = False,
        double_precision: bool = False,
    ) -> bool:
        """A scalar (a number or 0-d tensor) under ``tag``, written as torch writes it.

        A ``Summary.Value.simple_value`` (float32, no plugin metadata): TensorBoard's
        ``EventAccumulator`` and tbparse list it under ``scalars``, as torch's.
        ``new_style=True`` writes torch's other form, a ``scalars``-plugin tensor with
        ``float_val`` (``double_val`` with ``double_precision=True``), listed under
        ``tensors``; ``double_precision`` without ``new_style`` is ignored, as in torch.
        """
        if self._silent:
            return False
        # Compiled code is asked about on the slow paths only (a value that is no Python
        # number, a step that is no int, a wall time, a recording condition), as scalar()
        # does: a host float at an int step pays nothing for it.
        if new_style:
            recorded = self._scalar_in_compiled_code(tag, scalar_value, global_step, walltime,
                                                     new_style, double_precision)
            if recorded is not None:
                return recorded
            return self._tensor_scalar(tag, scalar_value, global_step, walltime,
                                       double_precision)
        t = type(scalar_value)
        if t is not float and t is not int:
            recorded = self._scalar_in_compiled_code(tag, scalar_value, global_step, walltime,
                                                     new_style, double_precision)
            if recorded is not None:
                return recorded
            if getattr(scalar_value, "ndim", 0) != 0:
                scalar_value = _single(scalar_value)  # torch takes any one-element tensor
        if type(global_step) is not int or self._defaults is not None or not (
            _INT64_MIN <= global_step <= _INT64_MAX
        ):
            recorded = self._scalar_in_compiled_code(tag, scalar_value, global_step, walltime,
                                                     new_style, double_precision)
            if recorded is not None:
                return recorded
            # torch's step (a float becomes int(step)), use_metadata()'s defaults; checked.
            step = self._step(global_step, "add_scalar")
            if type(step) is not int and device_kind(step) is not None:  # read later
                sink = self._sink(tag, step, walltime, _ADD_SCALAR)
                return sink is not None and write_simple_scalar(sink, _single(scalar_value))
            global_step = check_step(step, "add_scalar")
            walltime = self._walltime(walltime)
        if walltime is not None:
            recorded = self._scalar_in_compiled_code(tag, scalar_value, global_step, walltime,
                                                     new_style, double_precision)
            if recorded is not None:
                return recorded
            walltime = check_wall_time(walltime, "add_scalar")
        # sink_for() inlined: add_scalar is a hot path, and a sink is an object per call.
        st = _local.state
        cond = st.condition
        if cond is not True:
            if type(cond) is DeferredCondition:  # traced for summarylib's jax jit
                return self._record(_M_ADD_SCALAR, (tag, scalar_value, global_step, walltime,
                                                    new_style, double_precision))
            if not condition_holds(cond):
                return False
        if type(tag) is not str:
            tag = check_tag(tag, "add_scalar", "tag")
        scope = st.scope
        return simple_scalar_to(self, scope + tag if scope else tag, global_step, walltime,
                                _ADD_SCALAR, scalar_value)

    def _scalar_in_compiled_code(self, tag: str, scalar_value: Any, global_step: Any,
                                 walltime: Any, new_style: bool,
                                 double_precision: bool) -> bool | None:
        """add_scalar inside compiled code (traceable()'s checks): recorded, and what
        recording returned; None outside compiled code."""
        if torch_compiling() or type(_local.state.condition) is DeferredCondition or (
            is_tracer(scalar_value) or is_tracer(global_step) or is_tracer(walltime)
        ):
            return self._record(_M_ADD_SCALAR, (tag, scalar_value, global_step, walltime,
                                                new_style, double_precision))
        return None

    def _tensor_scalar(self, tag: str, scalar_value: Any, global_step: Step | None,
                       walltime: float | None, double_precision: bool) -> bool:
        from summarylib.ops.scalar import write_tensor_scalar

        sink = self._sink(tag, global_step, walltime, _ADD_SCALAR)
        return sink is not None and write_tensor_scalar(sink, _single(scalar_value),
                                                        bool(double_precision))

    def add_scalars(
        self, main_tag: str, tag_scalar_dict: Mapping[str, Any],
        global_step: Step | None = None, walltime: float | None = None,
    ) -> bool:
        """Several scalars in one chart: ``tag_scalar_dict[k]`` goes to the sub-run
        ``<log_dir>/<main_tag>_<k>`` (``/`` in ``main_tag`` becomes ``_``) under the tag
        ``main_tag``, as torch lays it out. Sub-run names are made safe: path separators,
        characters a file name cannot hold, and a name of ``.`` or ``..`` are
        percent-escaped, so a sub-run never leaves ``log_dir``.
        """
        if in_compiled_code(tag_scalar_dict, global_step, walltime):
            return self._record(_M_ADD_SCALARS, (main_tag, tag_scalar_dict, global_step, walltime))
        where = "add_scalars"
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError(
                f"{where}: 'tag_scalar_dict' must be a dict, got {type(tag_scalar_dict).__name__}"
            )
        if not isinstance(main_tag, str) or not main_tag:
            raise ValueError(f"{where}: 'main_tag' must be a non-empty str, got {main_tag!r}")
        step = self._step(global_step, "add_scalars")
        walltime = self._walltime(walltime)
        if self._silent:
            return False
        logdir = self._needs_dir(where)
        children = []
        for key in tag_scalar_dict:
            if not isinstance(key, str) or not key:
                raise TypeError(f"{where}: 'tag_scalar_dict' keys must be non-empty str, "
                                f"got {key!r}")
            children.append(self._child(logdir, main_tag.replace("/", "_") + "_" + key, where,
                                        "tag_scalar_dict", scalar_run=True))
        # One scalar per sub-run: the per-value cost is the op's own (its cached per-tag
        # bytes in each sub-run's file).
        wrote = False
        for child, value in zip(children, tag_scalar_dict.values(), strict=True):
            sink = sink_for(child, main_tag, step, walltime, _ADD_SCALARS)
            if sink is None:
                return False
            t = type(value)
            if t is not float and t is not int and getattr(value, "ndim", 0) != 0:
                value = _single(value)
            wrote = write_simple_scalar(sink, value) or wrote
        return wrote

    def _child(self, logdir: str, name: str, where: str, arg: str, *,
               scalar_run: bool = False) -> SummaryWriter:
        child = self._children.get(name)
        if child is None:
            self._check_open(where)
            sub = os.path.join(logdir, safe_component(name, where, arg))
            resource = open_writer_resource(sub, self._settings)
            child = self._children[name] = SummaryWriter._wrap(resource, sub, self._settings)
            if scalar_run:
                self._scalar_runs.append(child)
        return child

    def add_tensor(self, tag: str, tensor: Any, global_step: Step | None = None,
                   walltime: float | None = None) -> bool:
        """Any numeric or string array as a tensor value (``write``), with torch's plugin
        metadata (``plugin_name="tensor"``) on the tag's first value in the file."""
        if in_compiled_code(tensor, global_step, walltime):
            return self._record(_M_ADD_TENSOR, (tag, tensor, global_step, walltime))
        from summarylib.ops.write import write_tensor

        # write() takes tags literally; add_* honour the name scope.
        sink = self._sink(tag, global_step, walltime, _ADD_TENSOR)
        return sink is not None and write_tensor(sink, tensor, _TENSOR_PLUGIN_METADATA)

    def add_histogram(
        self, tag: str, values: Any, global_step: Step | None = None,
        bins: Any = "tensorflow", walltime: float | None = None, max_bins: int | None = None,
    ) -> bool:
        """A histogram of ``values`` bucketed as torch buckets it.

        ``bins``: ``"tensorflow"`` (TensorFlow 1's exponential edges), a numpy bin rule,
        an int or an array of edges; ``max_bins`` merges neighbouring buckets. Values must
        be finite and non-empty (torch's rule). Inside compiled code, "tensorflow" and
        edges are counted there and only the counts leave it (docs/compiled.md).
        """
        if in_compiled_code(values, global_step, walltime):
            return self._record(_M_ADD_HISTOGRAM, (
                tag, values, global_step, bins, walltime, max_bins))
        sink = self._sink(tag, global_step, walltime, _ADD_HISTOGRAM)
        return sink is not None and write_histogram_bins(sink, values, bins, max_bins)

    def add_histogram_raw(
        self, tag: str, min: Any, max: Any, num: Any, sum: Any,
        sum_squares: Any, bucket_limits: Any, bucket_counts: Any,
        global_step: Step | None = None, walltime: float | None = None,
    ) -> bool:
        """A histogram given by its statistics and bucket right edges and counts."""
        if in_compiled_code(min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                            global_step, walltime):
            return self._record(_M_ADD_HISTOGRAM_RAW, (
                tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts, global_step,
                walltime))
        from summarylib.ops.histogram_proto import write_histogram_raw

        sink = self._sink(tag, global_step, walltime, _ADD_HISTOGRAM_RAW)
        return sink is not None and write_histogram_raw(
            sink, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)

    def _image(self, tag: str, hwc: Any, global_step: Step | None, walltime: Any,
               where: str) -> bool:
        from summarylib.ops.image import write_image

        sink = self._sink(tag, global_step, walltime, _image_caller(where))
        # hwc[None] is a new array (on a device: a new buffer), which no one else holds.
        return sink is not None and write_image(sink, hwc[None], 1, dataformats="NHWC",
                                                torch_form=True, own_data=True)

    def add_image(self, tag: str, img_tensor: Any, global_step: Step | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> bool:
        """One image; ``dataformats`` "CHW" (default), "HWC" or "HW".

        uint8 is taken as 0..255; other dtypes as 0..1, scaled by 255, clipped and
        truncated, as torch does. One channel is repeated to RGB.
        """
        if in_compiled_code(img_tensor, global_step, walltime):
            return self._record(_M_ADD_IMAGE, (tag, img_tensor, global_step, walltime, dataformats))
        from summarylib.torch_conventions import image_hwc

        hwc = image_hwc(img_tensor, dataformats, "add_image", tag=tag, on_device=True)
        return self._image(tag, hwc, global_step, walltime, "add_image")

    def add_images(self, tag: str, img_tensor: Any, global_step: Step | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> bool:
        """A batch of images tiled into one grid image (8 columns), as torch does.

        A list of single images (tensorboardX) is stacked first; ``dataformats`` then names
        the layout of one image ("CHW") or of the batch ("NCHW").
        """
        if in_compiled_code(img_tensor, global_step, walltime):
            return self._record(_M_ADD_IMAGES, (
                tag, img_tensor, global_step, walltime, dataformats))
        from summarylib.torch_conventions import image_hwc

        if isinstance(img_tensor, (list, tuple)) and isinstance(dataformats, str) and len(
            dataformats
        ) == 3:
            dataformats = "N" + dataformats

        hwc = image_hwc(img_tensor, dataformats, "add_images", tag=tag, on_device=True)
        return self._image(tag, hwc, global_step, walltime, "add_images")

    def add_image_with_boxes(
        self, tag: str, img_tensor: Any, box_tensor: Any, global_step: Step | None = None,
        walltime: float | None = None, rescale: float = 1, dataformats: str = "CHW",
        labels: Sequence[str] | str | None = None,
    ) -> bool:
        """An image with boxes ``[K, 4]`` (xmin, ymin, xmax, ymax in pixels) drawn in red.

        ``labels`` (one per box) are drawn on the boxes; a wrong count is ignored, as torch
        does. ``rescale`` resizes the result.
        """
        if in_compiled_code(img_tensor, box_tensor, global_step, walltime):
            return self._record(_M_ADD_IMAGE_WITH_BOXES, (
                tag, img_tensor, box_tensor, global_step, walltime, rescale, dataformats, labels))
        from summarylib.encoding._arrays import as_array
        from summarylib.torch_conventions import boxed_image, image_hwc

        where = "add_image_with_boxes"
        hwc = image_hwc(img_tensor, dataformats, where, tag=tag)
        boxes = as_array(box_tensor, where, "box_tensor")
        names = [labels] if isinstance(labels, str) else labels
        if names is not None and (boxes.ndim == 0 or len(names) != boxes.shape[0]):
            names = None  # torch drops labels whose count does not match the boxes
        boxed = boxed_image(hwc, boxes, None if names is None else [str(n) for n in names],
                            rescale, where)
        return self._image(tag, boxed, global_step, walltime, where)

    def add_figure(self, tag: str, figure: Any, global_step: Step | None = None,
                   close: bool = True, walltime: float | None = None) -> bool:
        """A matplotlib figure (or a list: one grid image) rendered with Agg."""
        from summarylib.ops.figure import figure_rgb

        where = "add_figure"
        rgb = figure_rgb(figure, close, where)  # [k, h, w, 3] uint8
        if rgb.shape[0] == 1:
            return self._image(tag, rgb[0], global_step, walltime, where)
        from summarylib.torch_conventions import image_hwc

        grid = image_hwc(rgb, "NHWC", where, "figure")
        return self._image(tag, grid, global_step, walltime, where)

    def add_video(self, tag: str, vid_tensor: Any, global_step: Step | None = None,
                  fps: float = 4, walltime: float | None = None,
                  dataformats: str = "NTCHW") -> bool:
        """Video ``[N, T, C, H, W]`` (uint8 0..255 or floats 0..1) as an animated GIF.

        A batch is tiled into one grid, as torch does. ``dataformats`` (tensorboardX)
        names another order of the five axes. Encoded with pillow (no moviepy).
        """
        if in_compiled_code(vid_tensor, global_step, walltime):
            return self._record(_M_ADD_VIDEO, (
                tag, vid_tensor, global_step, fps, walltime, dataformats))
        from summarylib.ops.video import write_video
        from summarylib.torch_conventions import video_frames

        where = "add_video"
        vid = _reorder(vid_tensor, dataformats, "NTCHW", where)
        frames = video_frames(vid, where, on_device=True)
        sink = self._sink(tag, global_step, walltime, _ADD_VIDEO)
        return sink is not None and write_video(sink, frames, fps, torch_form=True)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: Step | None = None,
                  sample_rate: int = 44100, walltime: float | None = None) -> bool:
        """One mono clip: samples in [-1, 1] (clipped), any shape that squeezes to 1-D."""
        if in_compiled_code(snd_tensor, global_step, walltime):
            return self._record(_M_ADD_AUDIO, (tag, snd_tensor, global_step, sample_rate, walltime))
        import numpy as np

        from summarylib.encoding._arrays import as_array
        from summarylib.encoding._pending import device_kind
        from summarylib.ops.audio import write_audio

        where = "add_audio"
        if device_kind(snd_tensor) is not None:  # the same samples, made on the device
            from summarylib.torch_conventions import audio_on_device

            data = audio_on_device(snd_tensor, where)
        else:
            clip = as_array(snd_tensor, where, "snd_tensor").squeeze()
            if clip.ndim != 1:
                raise ValueError(f"{where}: 'snd_tensor' must squeeze to 1-D, got {clip.shape}")
            if clip.dtype.kind not in "biuf":
                raise TypeError(f"{where}: 'snd_tensor' must hold real numbers, got {clip.dtype}")
            # torch's samples exactly: clip, scale by 32767 and truncate; as float32
            # k/32768, which the audio op's rounding maps back to the same 16-bit integers.
            pcm = (np.clip(clip, -1, 1) * np.iinfo(np.int16).max).astype("<i2")
            data = (pcm.astype(np.float32) / 32768).reshape(1, -1, 1)
        sink = self._sink(tag, global_step, walltime, _ADD_AUDIO)
        return sink is not None and write_audio(sink, data, sample_rate, 1, torch_form=True)

    def add_text(self, tag: str, text_string: str, global_step: Step | None = None,
                 walltime: float | None = None) -> bool:
        """Markdown text, under the tag ``<tag>/text_summary`` as torch writes it."""
        if in_compiled_code(global_step, walltime):
            return self._record(_M_ADD_TEXT, (tag, text_string, global_step, walltime))
        from summarylib.ops.text import write_text

        where = "add_text"
        if not isinstance(text_string, str):
            raise TypeError(
                f"{where}: 'text_string' must be a str, got {type(text_string).__name__}"
            )
        if not isinstance(tag, str):
            raise TypeError(f"{where}: 'tag' must be a str, got {type(tag).__name__}")
        sink = self._sink(tag + "/text_summary", global_step, walltime, _ADD_TEXT)
        return sink is not None and write_text(sink, [text_string])

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> bool:
        """The op graph of a torch module (or any callable summarylib.graph can capture).

        ``input_to_model`` is a tensor or a tuple of positional inputs. ``verbose`` and
        ``use_strict_trace`` are accepted; capture goes through ``summarylib.graph.capture``
        (torch.fx/export, module scopes kept), not TorchScript.
        """
        del verbose, use_strict_trace
        from summarylib.graph import capture
        from summarylib.graph.writers import write_graph_def

        if self._silent:
            return False
        inputs = () if input_to_model is None else input_to_model
        if not isinstance(inputs, tuple):
            inputs = tuple(inputs) if isinstance(inputs, list) else (inputs,)
        graph = capture(model, inputs)
        sink = self._sink(None, 0, None, _ADD_GRAPH, untagged=True)
        if sink is None or not write_graph_def(sink, graph):
            return False
        # torch's "step1" run metadata beside the graph (one CPU device, no node stats):
        # TensorBoard's graph dashboard then offers the run "step1" as torch's does.
        from summarylib.ops._emit import emit_event_field
        from summarylib.torch_file_writer import step1_run_metadata_field

        return emit_event_field(sink, step1_run_metadata_field(_TORCH_STEP1_RUN_METADATA))

    def add_onnx_graph(self, prototxt: Any) -> bool:
        """The graph of an ONNX model: ``prototxt`` is the path of an ``.onnx`` file (torch's
        argument; its bytes or an ``onnx.ModelProto`` too), written as torch writes it, at
        step 0. The ``onnx`` package is not needed (see
        :mod:`summarylib.graph.onnx_models` for what differs from torch, on purpose)."""
        from summarylib.graph.onnx_models import onnx_graph_def
        from summarylib.graph.writers import write_graph_def

        if self.events is None:
            return False
        graph = onnx_graph_def(prototxt, "add_onnx_graph", "prototxt")
        sink = self._sink(None, 0, None, _ADD_ONNX_GRAPH, untagged=True)
        return sink is not None and write_graph_def(sink, graph)

    def add_embedding(
        self, mat: Any, metadata: Sequence[Any] | None = None, label_img: Any = None,
        global_step: Step | None = None, tag: str = "default",
        metadata_header: Sequence[str] | None = None,
    ) -> bool:
        """Points ``[N, D]`` for the projector, with labels and a sprite of ``label_img``.

        Files go to ``<log_dir>/<step:05d>/<tag>/`` and an entry to
        ``<log_dir>/projector_config.pbtxt``, as torch lays them out.
        """
        if in_compiled_code(mat, label_img, global_step):
            return self._record(_M_ADD_EMBEDDING, (
                mat, metadata, label_img, global_step, tag, metadata_header))
        from summarylib.ops.embedding import embedding

        if self._silent:
            return False
        logdir = self._needs_dir("add_embedding")
        # The step names a directory: integers only (torch would name it "001.5").
        step = global_step if global_step is not None else self._step(None, "add_embedding")
        return embedding(mat, metadata, label_img, step, tag,
                         metadata_header, logdir=logdir,
                         storage_options=self._settings.storage_options)

    def add_pr_curve(
        self, tag: str, labels: Any, predictions: Any, global_step: Step | None = None,
        num_thresholds: int = 127, weights: Any = None, walltime: float | None = None,
    ) -> bool:
        """A precision-recall curve with torch's counting (predictions in [0, 1]).

        ``num_thresholds`` is capped at 127, as torch caps it; 1 writes a one-point
        curve, as tensorboardX does.
        """
        if in_compiled_code(labels, predictions, global_step, weights, walltime):
            return self._record(_M_ADD_PR_CURVE, (
                tag, labels, predictions, global_step, num_thresholds, weights, walltime))
        where = "add_pr_curve"
        t = _thresholds(num_thresholds, where)
        sink = self._sink(tag, global_step, walltime, _torch_caller(where, "tag"))
        return sink is not None and _torch_pr_curve(sink, labels, predictions, t, weights)

    def add_pr_curve_raw(
        self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
        true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
        global_step: Step | None = None, num_thresholds: int = 127, weights: Any = None,
        walltime: float | None = None,
    ) -> bool:
        """A precision-recall curve from counts (six vectors of one length).

        ``num_thresholds`` (capped at 127) goes into the plugin metadata, as torch writes
        it; the curve has the vectors' length. ``weights`` is ignored, as in torch.
        """
        if in_compiled_code(true_positive_counts, false_positive_counts, true_negative_counts,
                            false_negative_counts, precision, recall, global_step, walltime):
            return self._record(_M_ADD_PR_CURVE_RAW, (
                tag, true_positive_counts, false_positive_counts, true_negative_counts,
                false_negative_counts, precision, recall, global_step, num_thresholds, weights,
                walltime))
        del weights
        where = "add_pr_curve_raw"
        t = _thresholds(num_thresholds, where)
        data = (true_positive_counts, false_positive_counts, true_negative_counts,
                false_negative_counts, precision, recall)
        return self._pr_raw(tag, data, global_step, walltime, where, t)

    def _pr_raw(self, tag: str, data: Any, global_step: Step | None, walltime: Any,
                where: str, num_thresholds: int) -> bool:
        from summarylib.ops.pr_curve import write_pr_curve_counts

        sink = self._sink(tag, global_step, walltime, _torch_caller(where, "tag"))
        return sink is not None and write_pr_curve_counts(sink, *data,
                                                          torch_form=num_thresholds)

    def add_custom_scalars(self, layout: Any) -> bool:
        """The Custom Scalars layout: ``{category: {chart: ["Multiline", [tag regexes]] |
        ["Margin", [value, lower, upper]]}}`` or a ``Layout`` message; at step 0."""
        from summarylib.ops.custom_scalars import CONFIG_TAG, write_custom_scalars

        sink = self._sink(CONFIG_TAG, 0, None, _ADD_CUSTOM_SCALARS, scoped=False)
        return sink is not None and write_custom_scalars(sink, layout)

    def add_custom_scalars_multilinechart(self, tags: Sequence[str], category: str = "default",
                                          title: str = "untitled") -> bool:
        """A one-chart layout of several tags (regular expressions) in one chart."""
        return self.add_custom_scalars({category: {title: ["Multiline", list(tags)]}})

    def add_custom_scalars_marginchart(self, tags: Sequence[str], category: str = "default",
                                       title: str = "untitled") -> bool:
        """A one-chart layout of a value with a lower and an upper bound (three tags)."""
        if len(tags) != 3:
            raise ValueError(
                f"add_custom_scalars_marginchart: 'tags' must be 3 tags, got {len(tags)}"
            )
        return self.add_custom_scalars({category: {title: ["Margin", list(tags)]}})

    def add_mesh(
        self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
        config_dict: Mapping[str, Any] | None = None, global_step: Step | None = None,
        walltime: float | None = None,
    ) -> bool:
        """A 3-D mesh or point cloud: vertices ``[B, N, 3]``, colors ``[B, N, 3]`` (0..255),
        faces ``[B, F, 3]`` (vertex indices), for TensorBoard's Mesh dashboard; every
        component stored as float32, as torch stores them."""
        if in_compiled_code(vertices, colors, faces, global_step, walltime):
            return self._record(_M_ADD_MESH, (
                tag, vertices, colors, faces, config_dict, global_step, walltime))
        from summarylib.ops.mesh import write_mesh

        sink = self._sink(None, global_step, walltime, _ADD_MESH, untagged=True)
        return sink is not None and write_mesh(sink, tag, vertices, faces, colors, config_dict,
                                               torch_form=True)

    def add_hparams(
        self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
        hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
        run_name: str | None = None, global_step: Step | None = None, *,
        name: str | None = None,
    ) -> bool:
        """Record this run as one trial of the HParams dashboard.

        Unlike torch, the first trial is written into this writer's own run (torch makes a
        new ``<log_dir>/<time.time()>`` run), so the dashboard shows the run's own curves.
        Each metric of ``metric_dict`` is read by TensorBoard from the scalar series of that
        tag in this run: a metric already logged here keeps its logged values (the value
        passed is not written); one not logged yet is written as a scalar at
        ``global_step``. ``run_name`` (tensorboardX: ``name``) writes the trial into the
        sub-run ``<log_dir>/<run_name>`` instead, as torch does.

        A run holds one trial. Each later call on a run that already holds one (a sweep
        that logs every trial through one writer) writes its trial, with every metric value
        passed, into a new sub-run of that run named ``str(time.time())``, as torch names
        them; that sub-run is closed at once, its trial marked ended ("success").

        Values: bool, int, float, str and numpy/torch scalars; None, lists and other
        objects raise ``TypeError``.
        """
        from summarylib.ops.hparams_plugin import coerce_hparams

        where = "add_hparams"
        if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
            raise TypeError(f"{where}: 'hparam_dict' and 'metric_dict' must be dicts")
        if run_name is not None and name is not None:
            raise TypeError(f"{where}: pass 'run_name' or 'name', not both")
        run_name = run_name if run_name is not None else name
        values = coerce_hparams(dict(hparam_dict), where)
        metrics: dict[str, Any] = {}
        for key, value in metric_dict.items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"{where}: 'metric_dict' keys must be non-empty str, got {key!r}")
            metrics[key] = value
        if self._silent:
            return False
        target: SummaryWriter = self
        if run_name:
            target = self._child(self._needs_dir(where), run_name, where, "run_name")
        step = self._step(global_step, "add_hparams")
        if not target._has_trial:
            return target._write_trial(values, metrics, hparam_domain_discrete, step)
        # The run holds a trial already: this one goes to a sub-run of its own, which
        # nothing else writes to, so it is closed (and its trial ended) at once.
        sub = os.path.join(target._needs_dir(where), target._trial_run_name())
        trial = SummaryWriter._wrap(open_writer_resource(sub, self._settings), sub,
                                    self._settings)
        try:
            return trial._write_trial(values, metrics, hparam_domain_discrete, step)
        finally:
            trial.close()

    def _write_trial(self, values: dict[str, Any], metrics: dict[str, Any],
                     domains: Mapping[str, Sequence[Any]] | None, step: Step) -> bool:
        """Write a trial into this writer's run (see add_hparams)."""
        from summarylib.ops.hparams_plugin import write_trial_to

        sink = sink_for(self, None, 0, None, _ADD_HPARAMS, untagged=True)
        if sink is None:
            return False
        written = write_trial_to(sink, values, list(metrics), hparam_domains=domains)
        tags = self.events.tags  # type: ignore[union-attr]
        for key, value in metrics.items():
            # Metric tags are literal (no name scope), as the trial names them.
            metric = sink_for(self, key, step, None, _ADD_HPARAMS_METRIC, scoped=False)
            logged = not tags.needs_metadata(key) or tags.simple_prefix_of(key) is not None
            if metric is not None and not logged:
                write_simple_scalar(metric, value)
        if written:
            self._trial_started()
        return written

    def _trial_run_name(self) -> str:
        """A new sub-run name for a further trial: the time, as torch names it, unique."""
        name = str(time.time())
        while name in self._trial_runs:
            name = str(time.time())
        self._trial_runs.add(name)
        return name

    def _trial_started(self) -> None:
        """This run is a trial: its end (a session end) is written when the writer closes.

        ``close()`` marks it "success"; garbage collection and interpreter exit mark it
        "failure" after an uncaught exception, else "success".
        """
        self._has_trial = True
        self._last_words["session_end"] = _session_end_event

    def _end_trial(self, status: str) -> None:
        """Write the end of this run's trial now, with ``status``, and not again at close."""
        self._last_words.pop("session_end", None)
        if self.events is not None:
            self._append(_session_end_event(True, status))

    def export_scalars_to_json(self, path: str | os.PathLike[str]) -> None:
        """Write the scalars ``add_scalars`` logged since the last export to ``path`` as
        JSON ``{sub_run_dir: [[wall_time, step, value], ...]}`` (tensorboardX's method).

        The points are read back from the sub-runs' event files (nothing is kept in memory
        while logging), after a flush.
        """
        import json

        from summarylib.reader import read_columns

        self.flush()
        out: dict[str, list[list[float]]] = {}
        for child in self._scalar_runs:
            if child.path is None:
                continue
            series = read_columns(child.path, purge="none").get(".", {})
            rows = [[float(w), int(s), float(v)] for cols in series.values()
                    for w, s, v in zip(cols.wall_time, cols.step, cols.value, strict=False)]
            done = self._exported.get(child.path, 0)
            if len(rows) > done:
                out[str(child.logdir)] = rows[done:]
            self._exported[child.path] = len(rows)
        with open(path, "w") as f:
            json.dump(out, f)

    # -- lifecycle ------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> None:
        """Write every event logged so far, in this run and its sub-runs (see WriterBase)."""
        super().flush(timeout)
        for child in list(self._children.values()):
            child.flush(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Close the event file and those of sub-runs; a trial is marked finished first."""
        try:
            super().close(timeout)
        finally:
            for child in list(self._children.values()):
                child.close(timeout)


# Who calls the op cores, with torch's argument names (errors name them); an empty tag
# is accepted, as torch and tensorboardX accept it.
def _torch_caller(where: str, name: str = "name", data: str = "data") -> Caller:
    return Caller(where, name, data, empty_tag=True)


_ADD_SCALAR = _torch_caller("add_scalar", "tag", "scalar_value")
_ADD_SCALARS = _torch_caller("add_scalars", "main_tag", "tag_scalar_dict")
_ADD_TENSOR = _torch_caller("add_tensor", "tag", "tensor")
_ADD_HISTOGRAM = _torch_caller("add_histogram", "tag", "values")
_ADD_HISTOGRAM_RAW = _torch_caller("add_histogram_raw", "tag")
_ADD_VIDEO = _torch_caller("add_video", "tag", "vid_tensor")
_ADD_AUDIO = _torch_caller("add_audio", "tag", "snd_tensor")
_ADD_TEXT = _torch_caller("add_text", "tag", "text_string")
_ADD_GRAPH = _torch_caller("add_graph", data="model")
_ADD_ONNX_GRAPH = _torch_caller("add_onnx_graph", data="prototxt")
_ADD_CUSTOM_SCALARS = _torch_caller("add_custom_scalars", data="layout")
_ADD_MESH = _torch_caller("add_mesh", "tag", "vertices")
_ADD_HPARAMS = _torch_caller("add_hparams", data="hparam_dict")
_ADD_HPARAMS_METRIC = _torch_caller("add_hparams", "metric_dict", "metric_dict")


# The add_* methods that record themselves inside compiled code (ops._writer_methods).
_M_ADD_SCALAR = WriterMethod(SummaryWriter.add_scalar)
_M_ADD_SCALARS = WriterMethod(SummaryWriter.add_scalars)
_M_ADD_TENSOR = WriterMethod(SummaryWriter.add_tensor)
_M_ADD_HISTOGRAM = WriterMethod(SummaryWriter.add_histogram)
_M_ADD_HISTOGRAM_RAW = WriterMethod(SummaryWriter.add_histogram_raw)
_M_ADD_IMAGE = WriterMethod(SummaryWriter.add_image)
_M_ADD_IMAGES = WriterMethod(SummaryWriter.add_images)
_M_ADD_IMAGE_WITH_BOXES = WriterMethod(SummaryWriter.add_image_with_boxes)
_M_ADD_VIDEO = WriterMethod(SummaryWriter.add_video)
_M_ADD_AUDIO = WriterMethod(SummaryWriter.add_audio)
_M_ADD_TEXT = WriterMethod(SummaryWriter.add_text)
_M_ADD_EMBEDDING = WriterMethod(SummaryWriter.add_embedding)
_M_ADD_PR_CURVE = WriterMethod(SummaryWriter.add_pr_curve)
_M_ADD_PR_CURVE_RAW = WriterMethod(SummaryWriter.add_pr_curve_raw)
_M_ADD_MESH = WriterMethod(SummaryWriter.add_mesh)


def _compiled_add_scalar_plan(
    arguments: dict[str, Any], tensors: tuple[str, ...], scope: str, gated: bool,
) -> Callable[[list[Any], Any], bool | None] | None:
    """How to write an ``add_scalar`` call recorded inside ``torch.compile`` each time
    it runs without replaying the method (``ops._replay.COMPILED_PLANS``): the writer
    found by its key, the tag scoped once, and a rank-0 float32 CPU value at a CPU tensor
    or int step packed as ``add_scalar`` packs it (the same bytes). None (the replay) for
    a gated call, a tensor ``walltime``, ``new_style``, or a tag that is no str; the plan
    returns None for other values, and for a writer under ``use_metadata`` or made with
    ``write_to_disk=False``.
    """
    tag = arguments.get("tag")
    if (gated or type(tag) is not str or arguments.get("walltime") is not None
            or arguments.get("new_style", False) is not False
            or tensors not in (("scalar_value",), ("scalar_value", "global_step"))):
        return None
    static_step = arguments.get("global_step")
    if len(tensors) == 1 and type(static_step) is not int:
        return None
    key = arguments["self"]
    full = scope + tag if scope else tag
    torch = sys.modules["torch"]
    f32 = torch.float32
    # Integer steps: torch_step() passes them on unchanged, and check_step() reads them.
    integers = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)

    def write(values: list[Any], default_writer: Any) -> bool | None:
        writer = registered_writer(key)
        if writer is None or writer.closed:
            return False  # as the replay: the writer is gone, nothing written
        if writer._silent or writer._defaults is not None:
            return None
        data = values[0]
        if not data.is_cpu or data.dim() or data.dtype is not f32:
            return None
        if len(values) == 2:
            step = values[1]
            if not step.is_cpu:
                return None
            if step.dtype not in integers:
                step = writer._step(step, "add_scalar")
        else:
            step = static_step
        return simple_scalar_to(writer, full, check_step(step, "add_scalar"), None,
                                _ADD_SCALAR, data.item())

    return write


COMPILED_PLANS["SummaryWriter.add_scalar"] = _compiled_add_scalar_plan

# SummaryMetadata{plugin_data{plugin_name: "tensor"}}: torch's add_tensor metadata.
_TENSOR_PLUGIN_METADATA = field_bytes(1, field_bytes(1, b"tensor"))

# RunMetadata{step_stats{dev_stats{device: "/device:CPU:0"}}}: what torch's add_graph
# writes under "step1" (its trace records no node stats).
_TORCH_STEP1_RUN_METADATA = field_bytes(1, field_bytes(1, field_bytes(1, b"/device:CPU:0")))


def _image_caller(where: str) -> Caller:
    return _torch_caller(where, "tag", "figure" if where == "add_figure" else "img_tensor")


def _session_end_event(explicit: bool, status: str | None = None) -> bytes:
    """The Event that ends a run's trial (step 0, now), for the writer's last words."""
    import sys

    from summarylib.ops.hparams_plugin import session_end_pb

    if status is None:
        # At garbage collection or interpreter exit, an uncaught exception means failure.
        failed = not explicit and getattr(sys, "last_value", None) is not None
        status = "failure" if failed else "success"
    payload = session_end_pb(status).SerializeToString()
    return event_bytes(time.time(), 0, field_bytes(5, payload))


def _single(value: Any) -> Any:
    """A one-element array or tensor of any rank as rank 0; anything else unchanged."""
    shape = shape_of(value)  # None also for torch's nested tensors, refused later
    if shape is None:
        return value
    size = 1
    for d in shape:
        size *= d
    if size != 1 or not hasattr(value, "reshape"):
        return value
    return value.reshape(())


def _verbatim_suffix(suffix: Any, where: str) -> str:
    if not isinstance(suffix, str):
        raise TypeError(f"{where}: 'filename_suffix' must be a str, got {type(suffix).__name__}")
    if "/" in suffix or os.sep in suffix or "\x00" in suffix:
        raise ValueError(f"{where}: 'filename_suffix' must not hold a path separator or NUL")
    return check_name_text(suffix, where, "filename_suffix")


def _thresholds(num_thresholds: Any, where: str) -> int:
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int):
        raise TypeError(f"{where}: 'num_thresholds' must be an int, got {num_thresholds!r}")
    if num_thresholds < 1:  # one threshold: one point (everything predicted positive)
        raise ValueError(f"{where}: 'num_thresholds' must be >= 1, got {num_thresholds}")
    return min(num_thresholds, 127)


def _reorder(data: Any, dataformats: Any, target: str, where: str) -> Any:
    if not isinstance(dataformats, str) or sorted(dataformats.upper()) != sorted(target):
        raise ValueError(
            f"{where}: 'dataformats' must be an ordering of {target}, got {dataformats!r}"
        )
    fmt = dataformats.upper()
    if fmt == target:
        return data
    from summarylib.encoding._pending import device_kind

    if device_kind(data) is not None:  # permuted on the device, unread
        from summarylib.torch_conventions import reorder_on_device

        return reorder_on_device(data, fmt, target, where)
    from summarylib.encoding._arrays import as_array

    arr = as_array(data, where, "vid_tensor")
    if arr.ndim != len(target):
        raise ValueError(f"{where}: 'vid_tensor' must have {len(target)} axes, got {arr.shape}")
    return arr.transpose([fmt.index(c) for c in target])


def _torch_pr_curve(
    sink: Sink, labels: Any, predictions: Any, num_thresholds: int, weights: Any
) -> bool:
    """``SummaryWriter.add_pr_curve``'s write, as the op ``pr_curve_counts`` writes it:
    torch's counting (:func:`~summarylib.torch_conventions.pr_curve_data`) of the values
    at this call. Host values are counted now; with a device argument (and a writer that
    defers device values) the shapes and dtypes are checked now, each argument is kept
    (a device array's copy started, a host one copied) and the counting runs on the
    writer thread.
    """
    from summarylib.encoding._plugins import plugin_data_bytes
    from summarylib.encoding._values import read_values, values_of_arrays
    from summarylib.ops._device import defers_device_values
    from summarylib.ops._emit import emit_value, emit_value_deferred
    from summarylib.ops.pr_curve import PLUGIN_NAME, _tensor, check_pr_shapes, plugin_content
    from summarylib.torch_conventions import pr_curve_data

    where = sink.caller.where
    md = plugin_data_bytes(PLUGIN_NAME, plugin_content(num_thresholds))
    values = values_of_arrays(((labels, "labels"), (predictions, "predictions"),
                               (weights, "weights")),
                              defers_device_values(sink.writer), where, ("weights",))
    if all(v is None or v.at_hand for v in values):
        lab_, pred_, w_ = read_values(values)
        data = pr_curve_data(lab_, pred_, num_thresholds, w_, where)
        return emit_value(sink, _tensor(data, True), md)
    lab, pred, w = (None if v is None else v.stand_in() for v in values)
    assert lab is not None  # only the weights are optional
    check_pr_shapes(lab, pred, None, where)
    if w is not None and w.shape not in ((), lab.shape):
        raise ValueError(f"{where}: 'weights' must be a number or of shape {lab.shape}")
    kept = [None if v is None else v.keep() for v in values]

    def make_tensor() -> bytes:
        lab_, pred_, w_ = read_values(kept)
        return _tensor(pr_curve_data(lab_, pred_, num_thresholds, w_, where), True)

    size = sum(0 if k is None else k.nbytes for k in kept) + 24 * num_thresholds + 64
    return emit_value_deferred(sink, make_tensor, md, size)
