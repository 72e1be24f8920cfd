"""matplotlib figures as images, for TensorBoard's Images dashboard.

Data contract:
  * ``figure``: a ``matplotlib.figure.Figure`` or a non-empty list (or tuple) of them, all
    of one size in pixels; several figures make one image value of k images (the Images
    dashboard's sample slider), in order. Anything else raises ``TypeError``.
  * Each figure is drawn on a private Agg canvas
    (``matplotlib.backends.backend_agg.FigureCanvasAgg``) at its own size and dpi, then
    the figure's own canvas is put back; the global backend is never touched. The pixels
    are the canvas's RGBA with alpha dropped (RGB), as torch's ``add_figure`` writes them.
  * ``close=True`` closes the figures (``pyplot.close``) once drawn, and also when nothing
    is recording, so loops that make a figure per step do not pile them up.
  * matplotlib is imported only when a figure is passed. Drawing happens on the caller's
    thread (matplotlib is not thread-safe); the PNG encoding on the writer's.
  * Stored exactly as :func:`summarylib.image` stores ``[k, h, w, 3]`` uint8 images
    (format.md §5.4): plugin ``"images"``, DT_STRING ``[str(w), str(h), png_0, ...]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from summarylib.encoding._plugins import IMAGES
from summarylib.encoding._png import encode_png
from summarylib.encoding._tensor import string_tensor_bytes
from summarylib.ops._emit import emit_value_deferred
from summarylib.ops._resolve import Caller, Sink, check_tag, resolve
from summarylib.ops.image import image_pb
from summarylib.writer._context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = [
    "PLUGIN_NAME",
    "create_summary_metadata",
    "figure",
    "figure_pb",
    "figure_rgb",
    "write_figure",
]

PLUGIN_NAME = IMAGES.name


def create_summary_metadata(description: str | None = None) -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` of a figure value: the image plugin's (protobuf API)."""
    return IMAGES.create_summary_metadata(description)


def _is_figure(obj: Any) -> bool:
    # Duck-typed first, so that a non-figure never imports matplotlib.
    if not hasattr(obj, "canvas") or not hasattr(obj, "get_size_inches"):
        return False
    from matplotlib.figure import Figure

    return isinstance(obj, Figure)


def _items(figures: Any) -> list[Any]:
    return list(figures) if isinstance(figures, (list, tuple)) else [figures]


def _close(figures: list[Any]) -> None:
    import matplotlib.pyplot as plt

    for f in figures:
        plt.close(f)


def _render(fig: Any) -> np.ndarray:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    own = fig.canvas
    try:
        canvas = FigureCanvasAgg(fig)  # attaches itself to the figure...
        canvas.draw()  # type: ignore[no-untyped-call]
        rgba = np.asarray(canvas.buffer_rgba())  # type: ignore[no-untyped-call]
        return np.array(rgba[:, :, :3])  # a copy: the buffer belongs to the canvas
    finally:
        fig.set_canvas(own)  # ...so the figure gets its own (GUI) canvas back


def figure_rgb(figures: Any, close: bool, where: str) -> np.ndarray:
    """Draw a figure or a list of figures as uint8 ``[k, h, w, 3]`` (see the module doc)."""
    import numpy as np

    items = _items(figures)
    if not items:
        raise ValueError(f"{where}: 'figure' is an empty list")
    for f in items:
        if not _is_figure(f):
            raise TypeError(f"{where}: 'figure' must be a matplotlib Figure or a list of "
                            f"them, got {type(f).__name__}")
    try:
        rendered = [_render(f) for f in items]
    finally:
        if close:
            _close(items)
    sizes = [r.shape[1::-1] for r in rendered]
    if len(set(sizes)) != 1:
        raise ValueError(f"{where}: the figures in 'figure' must have one size in pixels, "
                         f"got (width, height) {sizes}")
    return np.stack(rendered)


def figure(
    name: str,
    figure: Any,
    step: Step | None = None,
    close: bool = True,
    description: str | None = None,
) -> bool:
    """Write a matplotlib figure (or several, as one value of k images) to the default writer.

    Args:
      name: the series name; the tag is ``name`` inside the current name scope.
      figure: a ``Figure`` or a list of them (see the module docstring).
      step: an int64 step; defaults to the thread's default step.
      close: close the figures with ``pyplot.close`` afterwards.
      description: Markdown shown in TensorBoard (kept from the first event).

    Returns:
      True if queued for writing, False if nothing is recording (then nothing is drawn).

    Raises:
      TypeError, ValueError: bad arguments, naming the argument (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    sink = resolve(name, step, _CALLER)
    if sink is None:
        figures = [f for f in _items(figure) if _is_figure(f)] if close else []
        if figures:
            _close(figures)
        return False
    return write_figure(sink, figure, close, description)


_CALLER = Caller("figure")


def write_figure(
    sink: Sink, figure: Any, close: bool = True, description: str | None = None
) -> bool:
    """The core of :func:`figure`: write the rendered figures to ``sink``."""
    where = sink.caller.where
    md = IMAGES.metadata_bytes(description, where)
    pixels = figure_rgb(figure, close, where)
    k, h, w, _ = pixels.shape

    def make_tensor() -> bytes:
        return string_tensor_bytes(
            (2 + k,), [str(w).encode(), str(h).encode(), *map(encode_png, pixels)])

    # Figures compress well; the raw size bounds the PNG size.
    return emit_value_deferred(sink, make_tensor, md, pixels.nbytes + 64 * k + 32)


def figure_pb(
    tag: str, figure: Any, close: bool = True, description: str | None = None
) -> summary_pb2.Summary:
    """A ``Summary`` with the figure(s) as one image value, with metadata; no writer needed.

    Same data contract as :func:`figure`; ``tag`` is used as is (no name scope).
    """
    tag = check_tag(tag, "figure_pb", "tag")
    IMAGES.metadata_bytes(description, "figure_pb")  # the same checks as figure()
    pixels = figure_rgb(figure, close, "figure_pb")
    return image_pb(tag, pixels, max_outputs=len(pixels), description=description,
                    dataformats="NHWC")
