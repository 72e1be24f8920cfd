"""matplotlib figures as images, for TensorBoard's Images dashboard.

Data contract:
  * ``figure``: a ``matplotlib.figure.Figure`` or a list of them, all of one size in
    pixels. Each is rendered with a private Agg canvas (the global backend and the
    figure's own canvas are left alone), at the figure's size and dpi, as RGB (alpha
    dropped): the pixels torch's ``add_figure`` writes.
  * ``close=True`` closes the figures (``pyplot.close``) once rendered, so loops that make
    a figure per step do not pile them up.
  * matplotlib is imported only when a figure is passed; rendering happens on the caller's
    thread (matplotlib is not thread-safe), the PNG encoding on the writer's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from summarylib.ops.image import image, image_pb
from summarylib.writer.context import Step

if TYPE_CHECKING:
    import numpy as np

    from summarylib.proto import summary_pb2

__all__ = ["figure", "figure_pb", "figure_rgb"]


def _is_figure(obj: Any) -> bool:
    # Checked by duck type first, so that a non-figure never imports matplotlib.
    if not hasattr(obj, "canvas") or not hasattr(obj, "get_size_inches"):
        return False
    from matplotlib.figure import Figure

    return isinstance(obj, Figure)


def figure_rgb(figures: Any, close: bool, where: str) -> np.ndarray:
    """Render a figure or a list of figures as uint8 ``[k, h, w, 3]``."""
    import numpy as np

    many = isinstance(figures, (list, tuple))
    items = list(figures) if many else [figures]
    if not items:
        raise ValueError(f"{where}: 'figure' is an empty list")
    for f in items:
        if not _is_figure(f):
            raise TypeError(f"{where}: 'figure' must be a matplotlib Figure or a list of them, "
                            f"got {type(f).__name__}")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rendered = []
    for f in items:
        canvas = FigureCanvasAgg(f)
        canvas.draw()  # type: ignore[no-untyped-call]
        rgba = np.asarray(canvas.buffer_rgba())  # type: ignore[no-untyped-call]
        rendered.append(np.array(rgba[:, :, :3]))
    if close:
        import matplotlib.pyplot as plt

        for f in items:
            plt.close(f)
    if len({r.shape for r in rendered}) != 1:
        raise ValueError(f"{where}: the figures must have one size in pixels, got "
                         f"{sorted({r.shape[:2] for r in rendered})}")
    return np.stack(rendered)


def figure(name: str, figure: Any, step: Step | None = None, close: bool = True,
           description: str | None = None) -> bool:
    """Write a figure (or several, as one image value of k images) to the default writer."""
    from summarylib.writer.context import _local

    if _local.state.writer is None:
        # Nothing recording: no rendering, but the figures are still closed as asked.
        if close and any(_is_figure(f) for f in
                         (figure if isinstance(figure, (list, tuple)) else [figure])):
            import matplotlib.pyplot as plt

            for f in figure if isinstance(figure, (list, tuple)) else [figure]:
                if _is_figure(f):
                    plt.close(f)
        return False
    pixels = figure_rgb(figure, close, "figure")
    return image(name, pixels, step, max_outputs=len(pixels), description=description)


def figure_pb(tag: str, figure: Any, close: bool = True,
              description: str | None = None) -> summary_pb2.Summary:
    """A ``Summary`` with the rendered figure(s) as one image value; no writer needed."""
    pixels = figure_rgb(figure, close, "figure_pb")
    return image_pb(tag, pixels, max_outputs=len(pixels), description=description)
