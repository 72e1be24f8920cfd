"""One self-contained HTML file showing a :class:`GraphView`: opens from disk, offline.

The page holds three things, all inline: the view's compact data
(``page_data.view_to_page_data``: compressed columns, not one object per node), our
scripts (``assets/layout.js``, the port of ``layout.layout_group``; ``assets/viewer.js``;
the plugins) and style sheets. The data is in a ``<script type="application/json">``
block before the scripts, but for its compressed blobs (the near part, the first levels of
the tree; the tree; the chunks of the other columns; the edges), which are in
``<script type="application/octet-stream">`` blocks
after them (the statistics' block too): the browser runs the viewer, which draws the top
level from the data's head, before it parses the megabytes of the blobs, and reads the near
part (small) as soon as its block is parsed. No geometry is embedded: the page lays out a group
when it is first opened (the top level at once), small groups in the page and big ones in
a Web Worker made from a Blob URL of ``layout.js``'s text, so that the page never freezes
and the file stays the size of the structure (about 8 bytes a node for the synthetic
graphs of the benchmarks).
Nothing is fetched: no fonts, no scripts, no images, and a Content-Security-Policy that
allows only the two inline blocks by hash enforces it.

The graph is untrusted input (names, op types and attribute values come from whoever
wrote the GraphDef). The JSON block escapes ``<``, ``>`` and ``&`` (and every non-ASCII
character) so that no text in it can close the block or open markup, and the viewer builds
the page with ``textContent`` and ``setAttribute`` only. The CSP is a second line: even
markup that got through could not run a script.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from summarylib.graph._gc import gc_paused
from summarylib.graph.view.json_export import json_text
from summarylib.graph.view.layout import CHAR_W, HEADER, PAD, PANEL_GAP, PANEL_VGAP
from summarylib.graph.view.model import GraphView
from summarylib.graph.view.page_data import view_to_page_data

if TYPE_CHECKING:
    from summarylib.graph.view.options import ViewOptions
    from summarylib.graph.view.page_tree import PageTree
    from summarylib.graph.view.statistics import GraphStatistics

__all__ = ["COLOUR_MODES", "embed_json", "page_to_html", "source_page_data", "source_to_html",
           "view_to_html"]

#: The colour modes of the viewer's selector.
COLOUR_MODES = ("structure", "device", "compute_time", "none")
#: The page data's compressed blobs (page_data.py), each in a block ``graph-<key>`` after the
#: scripts, in this order: the near part first (the page reads it as soon as its block is
#: parsed), then the first blob (the tree), the chunks of the other columns, the second blob.
BLOB_KEYS = ("near", "blob", "chunks", "later")
#: Scripts and style sheets loaded after the viewer's own: they use its plugin interface.
PLUGIN_SCRIPTS = ("stats.js", "export.js")
PLUGIN_STYLES = ("plugins.css",)


def _asset(name: str) -> str:
    # One joinpath per segment: namespace-package paths take a single argument.
    path = resources.files("summarylib.graph.view").joinpath("assets").joinpath(name)
    return path.read_text(encoding="utf-8")


def embed_json(obj: Any) -> str:
    """``obj`` as JSON that is safe between ``<script type="application/json">`` tags.

    ASCII only (so U+2028/U+2029 and lone surrogates are escapes), and ``<``, ``>``, ``&``
    as ``\\u00XX`` escapes: these can only occur inside JSON strings, where the escape
    means the same character, so ``JSON.parse`` gets the original text back while the
    HTML parser never sees ``</script>`` or ``<!--``.
    """
    text = json_text(obj, nan="null")  # JSON has no NaN or infinities
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def view_to_html(view: GraphView, title: str | None = None, colour: str = "structure",
                 statistics: GraphStatistics | None = None,
                 compare: GraphStatistics | None = None) -> str:
    """A self-contained HTML page showing ``view`` (see the module docstring).

    ``colour`` is the colour mode selected at first: ``"structure"`` (groups of one
    template share a colour, unique groups are grey), ``"device"``, ``"compute_time"``
    (when ops have ``compute_time_us``) or ``"none"``. The layout direction is
    ``view.options["rankdir"]`` (``"BT"``: inputs at the bottom).

    ``statistics`` (from :func:`~summarylib.graph.view.statistics.read_statistics` on
    this view) adds the statistics overlay: colour by a statistic at a step, a step
    slider, a sparkline per selected node; ``compare``, a second run's statistics on the
    same graph, adds its values and the difference.
    """
    if colour not in COLOUR_MODES:
        raise ValueError(f"colour must be one of {COLOUR_MODES}, not {colour!r}")
    if compare is not None and statistics is None:
        raise ValueError("compare needs statistics (the first run) too")
    with gc_paused():
        stats_json = None
        if statistics is not None:
            from summarylib.graph.view.statistics import statistics_to_json

            runs = [statistics] if compare is None else [statistics, compare]
            stats_json = statistics_to_json(view, runs)
        return _html(view, title, colour, stats_json)


def source_to_html(source: Any, options: ViewOptions | Mapping[str, Any] | None = None,
                   title: str | None = None, colour: str = "structure") -> str:
    """``view_to_html(build_view(source, options), title, colour)``, the same text, made
    without the view's objects when ``page_columns.source_to_page_data`` takes the graph
    (many times faster on big graphs); otherwise through the view.

    ``source``: an IR :class:`~summarylib.graph.Graph`, a ``GraphDef`` message or its
    bytes, or a path (as ``build_view`` reads it). For statistics overlays or compute
    times, build the view and use :func:`view_to_html`.
    """
    if colour not in COLOUR_MODES:
        raise ValueError(f"colour must be one of {COLOUR_MODES}, not {colour!r}")
    return page_to_html(source_page_data(source, options), title, colour)


def source_page_data(source: Any, options: ViewOptions | Mapping[str, Any] | None = None,
                     ) -> dict[str, Any]:
    """The page data of ``source`` (``view_to_page_data(build_view(source, options))``),
    through ``page_columns`` when it takes the graph."""
    import os

    from summarylib.graph.view.building import build_view
    from summarylib.graph.view.page_columns import source_to_page_data

    if isinstance(source, (str, os.PathLike)):
        from summarylib.graph.view.sources import load_graph_source

        source = load_graph_source(source)
    page = source_to_page_data(source, options)
    if page is None:
        page = view_to_page_data(build_view(source, options))
    return page


def page_to_html(page: dict[str, Any], title: str | None = None,
                 colour: str = "structure", statistics: GraphStatistics | None = None,
                 tree: PageTree | None = None, compare: GraphStatistics | None = None) -> str:
    """The page of ``page`` (``view_to_page_data``'s or ``source_to_page_data``'s
    result): what :func:`view_to_html` writes for the view it was made from.

    ``statistics`` (joined to ``tree``, the page's
    :class:`~summarylib.graph.view.page_tree.PageTree` from
    ``page_columns.source_to_page_and_tree``) adds the statistics overlay and
    ``compare`` a second run's, as :func:`view_to_html` does: the same page as through
    the view."""
    if colour not in COLOUR_MODES:
        raise ValueError(f"colour must be one of {COLOUR_MODES}, not {colour!r}")
    if compare is not None and statistics is None:
        raise ValueError("compare needs statistics (the first run) too")
    if statistics is not None and tree is None:
        raise ValueError("statistics on a page need its tree (source_to_page_and_tree)")
    with gc_paused():
        stats_json = None
        if statistics is not None and tree is not None:
            from summarylib.graph.view.statistics import statistics_to_json

            runs = [statistics] if compare is None else [statistics, compare]
            stats_json = statistics_to_json(tree, runs)
        return _page_html(page, title, colour, stats_json)


def _html(view: GraphView, title: str | None, colour: str,
          stats_json: dict[str, Any] | None = None) -> str:
    return _page_html(view_to_page_data(view), title, colour, stats_json)


def _page_html(page: dict[str, Any], title: str | None, colour: str,
               stats_json: dict[str, Any] | None = None) -> str:
    page_title = title if title is not None else "Graph"
    graph = dict(page)  # the caller's page is not changed
    # The blobs go in blocks of their own after the scripts: the browser draws the top
    # level (from the graph's head) before it has parsed them.
    blobs = {key: graph.pop(key) for key in BLOB_KEYS}
    payload = {
        "title": page_title,
        "colour": colour,
        "graph": graph,
        # The viewer's composition mirrors layout.compose; it needs the same constants.
        "constants": {
            "PAD": PAD,
            "HEADER": HEADER,
            "PANEL_GAP": PANEL_GAP,
            "PANEL_VGAP": PANEL_VGAP,
            "CHAR_W": CHAR_W,
        },
    }
    layout_js = _asset("layout.js")
    script = _asset("viewer.js")
    style = _asset("viewer.css")
    plugins = [_asset(name) for name in PLUGIN_SCRIPTS]
    plugin_styles = [_asset(name) for name in PLUGIN_STYLES]
    script_hashes = " ".join(f"'sha256-{_sha256(s)}'" for s in [layout_js, script, *plugins])
    style_hashes = " ".join(f"'sha256-{_sha256(s)}'" for s in [style, *plugin_styles])
    csp = (
        "default-src 'none'; "
        f"script-src {script_hashes}; "
        f"style-src {style_hashes}; "
        # The layout worker is made from a Blob URL of the layout script's text.
        "worker-src blob:; img-src data:; base-uri 'none'; form-action 'none'"
    )
    return "".join(
        [
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
            # Our own text (hashes are base64): nothing to escape inside the quotes.
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f"<title>{html.escape(page_title)}</title>\n",
            f"<style>{style}</style>\n",
            *[f"<style>{s}</style>\n" for s in plugin_styles],
            "</head>\n<body>\n",
            '<script type="application/json" id="graph-data">',
            embed_json(payload),
            "</script>\n",
            # The layout code runs here, and its text is the worker's (a Blob URL).
            f'<script id="graph-layout">{layout_js}</script>\n',
            f"<script>{script}</script>\n",
            *[f"<script>{s}</script>\n" for s in plugins],
            # Base64 only (no "<", ">" or "&"): nothing in them can leave the block.
            *[f'<script type="application/octet-stream" id="graph-{key}">{text}</script>\n'
              for key, text in blobs.items()],
            *(['<script type="application/json" id="graph-statistics">',
               embed_json(stats_json), "</script>\n"] if stats_json is not None else []),
            "</body>\n</html>\n",
        ]
    )
