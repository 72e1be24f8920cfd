"""The ``graph`` commands of the CLI: view a graph offline, or compare two.

``summarylib graph INPUT`` writes the graph as TensorBoard's graph dashboard would show it:
an HTML viewer (default, to ``graph.html``), the view as JSON, Graphviz DOT or a static SVG
(to standard output unless ``-o`` is given). ``summarylib graph diff A B`` (also spelled
``graph-diff``) compares two graphs: text to standard output by default, HTML or JSON.

From a logdir or an event file, the HTML page also carries the run's training statistics
joined to the graph (``summarylib.graph.view.statistics``; ``--no-statistics`` leaves them
out, ``--statistics-run`` reads another run, ``--compare LOGDIR`` adds a second run of the
same graph).

INPUT is a logdir (local or a URL), an event file, a binary or text GraphDef (``.pb``,
``.pbtxt``), a ``.meta`` MetaGraphDef or a SavedModel's ``saved_model.pb``. Because
``graph diff`` always means the comparison, a path named ``diff`` is written ``./diff``.

Exit status: 0 success (for ``diff``: the graphs are the same); 1 (``diff`` only): the
graphs differ; 2: bad usage or input (no graph, several graphs and no ``--run``/``--tag``,
unreadable file, unwritable output), with a message on standard error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from summarylib.graph.view.model import GraphView
    from summarylib.graph.view.sources import LoadedGraph

__all__ = ["COMMANDS", "add_graph_parsers", "rewrite_argv", "run_graph_command"]

COMMANDS = ("graph", "graph-diff")
VIEW_FORMATS = ("html", "json", "dot", "svg")
DIFF_FORMATS = ("text", "html", "json")
_SUFFIX_FORMATS = {".html": "html", ".htm": "html", ".json": "json", ".dot": "dot",
                   ".gv": "dot", ".svg": "svg", ".txt": "text"}

_INPUT_HELP = ("a logdir or URL, an event file, a GraphDef (.pb binary, .pbtxt text), "
               "a .meta MetaGraphDef or a SavedModel's saved_model.pb")
_TAG_HELP = ("the tagged graph to use, or a session run (tagged run metadata) whose profile "
             "goes with the run-level graph; 'Default' selects the run-level graph")


class _UsageError(Exception):
    """A command-line problem reported with exit status 2."""


def rewrite_argv(argv: Sequence[str]) -> list[str]:
    """``graph diff ...`` becomes ``graph-diff ...`` (argparse has no optional subcommand
    next to a positional path)."""
    args = list(argv)
    if len(args) >= 2 and args[0] == "graph" and args[1] == "diff":
        return ["graph-diff", *args[2:]]
    return args


def _add_view_options(p: argparse.ArgumentParser, diff: bool) -> None:
    g = p.add_argument_group("view options")
    g.add_argument("--hide-op", action="append", default=[], metavar="TYPE",
                   help="remove ops of this type (a regex on the op type; repeatable)")
    if diff:
        return
    g.add_argument("--no-series", action="store_true",
                   help="do not collapse numbered siblings into series (add_[1-7])")
    g.add_argument("--no-group-series", action="store_true",
                   help="do not collapse numbered identical groups (layer_[0-47])")
    g.add_argument("--no-extract", action="store_true",
                   help="do not move high-degree nodes to the side panel automatically")
    g.add_argument("--side-panel", action="append", default=[], metavar="NAME",
                   help="move this node or group to its parent's side panel (repeatable)")
    g.add_argument("--tensorboard", action="store_true",
                   help="exactly TensorBoard's view (no group series, its template order)")
    g.add_argument("--rankdir", choices=("BT", "TB", "LR", "RL"), default=None,
                   help="layout direction (default BT: inputs at the bottom, as TensorBoard)")
    g.add_argument("--depth", type=int, default=1,
                   help="dot/svg: levels of groups drawn open (1: the top level, collapsed)")


def add_graph_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``graph`` and ``graph-diff`` to ``sub``."""
    p = sub.add_parser(
        "graph", help="write a graph as HTML, JSON, DOT or SVG; 'graph diff A B' compares two",
        description="Write the op graph of INPUT as TensorBoard's graph dashboard shows it. "
        "'summarylib graph diff A B' compares two graphs (see 'summarylib graph-diff -h'); "
        "write a path named diff as ./diff.",
        epilog="Output: html goes to graph.html unless -o is given; json, dot and svg go to "
        "standard output unless -o is given ('-o -' is standard output for every format). "
        "Without --format, the format follows the -o suffix (.html .json .dot/.gv .svg). "
        "Exit status: 0 ok, 2 bad usage or input.")
    p.add_argument("input", metavar="INPUT", help=_INPUT_HELP)
    p.add_argument("--run", help="the run of a logdir (default: the only run with a graph; "
                   "ignored for files)")
    p.add_argument("--tag", help=_TAG_HELP)
    p.add_argument("--list", action="store_true", help="list the graphs found and exit")
    p.add_argument("-o", "--output", help="output file (see below)")
    p.add_argument("--format", choices=VIEW_FORMATS, default=None)
    p.add_argument("--title", help="html: the page title (default: where the graph came from)")
    st = p.add_argument_group(
        "training statistics (html; INPUT a logdir or an event file)",
        "the run's watch() histograms and any summary whose tag names a node or group "
        "colour the graph (docs/graph-view.md)")
    st.add_argument("--no-statistics", action="store_true",
                    help="leave the run's summaries out of the page")
    st.add_argument("--statistics-run", metavar="RUN",
                    help="read the statistics from this run (default: the graph's run)")
    st.add_argument("--compare", metavar="LOGDIR",
                    help="a second run of the same graph: its statistics and the difference")
    st.add_argument("--compare-run", metavar="RUN",
                    help="the run of --compare (default: its only run with a graph)")
    _add_view_options(p, diff=False)

    d = sub.add_parser(
        "graph-diff", help="compare two graphs (also 'graph diff A B')",
        description="Compare graph A with graph B: scopes added, removed or renamed; ops "
        "added, removed or changed (op type, attrs, shapes, device); edges; op counts.",
        epilog="Output: text to standard output; html to graph-diff.html unless -o is given; "
        "json to standard output unless -o is given ('-o -': standard output). "
        "Exit status: 0 the graphs are the same, 1 they differ, 2 bad usage or input.")
    d.add_argument("a", metavar="A", help="the old graph: " + _INPUT_HELP)
    d.add_argument("b", metavar="B", help="the new graph (same kinds as A)")
    d.add_argument("--run", help="the run to use in both A and B")
    d.add_argument("--tag", help="the tag to use in both A and B: " + _TAG_HELP)
    d.add_argument("--run-a", help="the run of A (overrides --run)")
    d.add_argument("--tag-a", help="the tag of A (overrides --tag)")
    d.add_argument("--run-b", help="the run of B (overrides --run)")
    d.add_argument("--tag-b", help="the tag of B (overrides --tag)")
    d.add_argument("-o", "--output", help="output file (see below)")
    d.add_argument("--format", choices=DIFF_FORMATS, default=None)
    _add_view_options(d, diff=True)


def run_graph_command(args: argparse.Namespace) -> int:
    """Run ``graph`` or ``graph-diff``; return the exit status (see the module docstring)."""
    from summarylib.graph.view.sources import GraphSourceError

    try:
        if args.command == "graph-diff":
            return _diff(args)
        return _view(args)
    except GraphSourceError as e:
        print(f"error: {e}", file=sys.stderr)
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
    except ValueError as e:  # not a graph, bad option value
        print(f"error: {e}", file=sys.stderr)
    return 2


def _format(args: argparse.Namespace, choices: tuple[str, ...], default: str) -> str:
    if args.format is not None:
        return str(args.format)
    out = args.output
    if out and out != "-":
        fmt = _SUFFIX_FORMATS.get(os.path.splitext(out)[1].lower())
        if fmt in choices:
            return fmt
    return default


def _build(loaded: LoadedGraph, args: argparse.Namespace, diff: bool) -> GraphView:
    from summarylib.graph.view import build_view
    from summarylib.graph.view.sources import apply_compute_times

    view = build_view(loaded.graph_def, _options(args, diff))
    if loaded.compute_times:
        apply_compute_times(view, loaded.compute_times)
    return view


def _options(args: argparse.Namespace, diff: bool) -> Any:
    """The ViewOptions the command line asks for."""
    from summarylib.graph.view import TENSORBOARD, ViewOptions

    overrides: dict[str, Any] = {"hidden_ops": tuple(args.hide_op)}
    base = ViewOptions()
    if not diff:
        base = TENSORBOARD if args.tensorboard else base
        if args.no_series:
            overrides["series"] = False
        if args.no_group_series:
            overrides["group_series"] = False
        if args.no_extract:
            overrides["auto_extract"] = False
        overrides["side_panel"] = tuple(args.side_panel)
        if args.rankdir:
            overrides["rankdir"] = args.rankdir
    return base.with_overrides(**overrides)


def _write(text: str, output: str | None, default_file: str | None) -> str | None:
    """Write ``text`` to ``output`` (``-``: stdout), else to ``default_file``, else stdout.
    Returns the file written, or None for stdout."""
    target = output if output is not None else default_file
    if target is None or target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return None
    try:
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise _UsageError(f"cannot write {target}: {e}") from None
    return target


def _view(args: argparse.Namespace) -> int:
    from summarylib.graph.view.sources import list_graphs, load_graph

    if args.list:
        return _list(args.input, list_graphs)
    if isinstance(args.depth, int) and args.depth < 1:
        raise _UsageError(f"--depth must be >= 1, got {args.depth}")
    fmt = _format(args, VIEW_FORMATS, "html")
    loaded = load_graph(args.input, run=args.run, tag=args.tag)
    summaries = None
    if fmt == "html" and not loaded.compute_times and (
            not args.compare or _summaries_here(args, loaded)):
        if _summaries_here(args, loaded):
            # The run's summaries, read before any view: they join to the tree of the
            # page made straight from the source as they would to the view's nodes.
            summaries = _read_summaries(loaded.path, args.statistics_run or loaded.run)
        if summaries is not None or not _may_have_statistics(args, loaded):
            got = _page_from_source(args, loaded, summaries)
            if got is not None:
                text, ops, stats_note = got
                written = _write(text, args.output, "graph.html")
                if written is not None:
                    print(f"wrote {written} ({fmt}, {ops} ops{stats_note}) from "
                          f"{loaded.description}")
                return 0
    view = _build(loaded, args, diff=False)
    stats_note = ""
    if fmt == "html":
        from summarylib.graph.view.html_export import view_to_html

        statistics, compare = _statistics(args, loaded, view, summaries)
        text = view_to_html(view, title=args.title or loaded.description,
                            statistics=statistics, compare=compare)
        if statistics is not None:
            nodes = {n for per in statistics.series.values() for n in per}
            stats_note = f", {len(statistics.series)} statistics on {len(nodes)} nodes"
            if compare is not None:
                stats_note += ", compared"
    elif args.compare:
        raise _UsageError("--compare needs the html format")
    elif fmt == "json":
        from summarylib.graph.view.json_export import json_text, view_to_json

        text = json_text(view_to_json(view), separators=(", ", ": ")) + "\n"
    elif fmt == "dot":
        from summarylib.graph.view.dot_export import view_to_dot

        text = view_to_dot(view, depth=args.depth)
    else:
        from summarylib.graph.view.dot_export import view_to_svg

        text = view_to_svg(view, depth=args.depth)
    written = _write(text, args.output, "graph.html" if fmt == "html" else None)
    if written is not None:
        ops = sum(1 for n in view.nodes.values() if n.kind == "op")
        print(f"wrote {written} ({fmt}, {ops} ops{stats_note}) from {loaded.description}")
    return 0


def _page_from_source(args: argparse.Namespace, loaded: LoadedGraph,
                      summaries: tuple[str, dict[str, Any], dict[str, Any]] | None
                      ) -> tuple[str, int, str] | None:
    """The HTML page straight from the GraphDef (``page_columns``: no view, many times
    faster on big graphs, the same text as through the view), with the statistics of
    ``summaries`` joined to its tree: ``(text, ops, the statistics' note)``; None when
    the graph needs the view for its statistics."""
    from summarylib.graph.view.html_export import page_to_html, source_page_data
    from summarylib.graph.view.page_columns import source_to_page_and_tree, source_to_page_tree
    from summarylib.graph.view.sources import load_graph
    from summarylib.graph.view.statistics import check_graphs_match, join_statistics

    title = args.title or loaded.description
    options = _options(args, diff=False)
    if not args.compare and (summaries is None or not (summaries[1] or summaries[2])):
        page = source_page_data(loaded.graph_def, options)
        return page_to_html(page, title=title), page["stats"]["ops"], ""
    if summaries is None:  # (--compare with summaries turned off: the view's route says so)
        return None
    got = source_to_page_and_tree(loaded.graph_def, options)
    if got is None:
        return None
    page, tree = got
    run, scalars, histograms = summaries
    stats = join_statistics(tree, scalars, histograms, run=run)
    compare = None
    if args.compare:
        # The other run's graph must match (its tree, made without its page), and its
        # statistics join to this page's tree.
        other = load_graph(args.compare, run=args.compare_run, tag=args.tag)
        other_tree = source_to_page_tree(other.graph_def, options)
        if other_tree is None:
            return None
        check_graphs_match(tree, other_tree)
        other_run, other_scalars, other_histograms = _read_summaries(
            args.compare, args.compare_run or other.run)
        compare = join_statistics(tree, other_scalars, other_histograms, run=other_run)
        _label_runs(args, stats, compare)
    elif not stats.series:
        return page_to_html(page, title=title), page["stats"]["ops"], ""
    nodes = {n for per in stats.series.values() for n in per}
    note = f", {len(stats.series)} statistics on {len(nodes)} nodes"
    return (page_to_html(page, title=title, statistics=stats, tree=tree, compare=compare),
            page["stats"]["ops"], note + (", compared" if compare is not None else ""))


def _summaries_here(args: argparse.Namespace, loaded: LoadedGraph) -> bool:
    """Whether the input holds summaries to join (a logdir or an event file) and they
    are not turned off."""
    from summarylib.reader.runs import is_event_file, is_logdir

    return not args.no_statistics and bool(
        is_logdir(loaded.path) or is_event_file(os.path.basename(loaded.path)))


def _read_summaries(path: str, run: str | None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    from summarylib.graph.view.statistics import read_summaries

    try:
        return read_summaries(path, run)
    except ValueError as e:
        raise _UsageError(str(e)) from None


def _may_have_statistics(args: argparse.Namespace, loaded: LoadedGraph) -> bool:
    """Whether the page may carry statistics: the input is a logdir or an event file and
    statistics are not turned off, or statistics are asked for (``--compare``,
    ``--statistics-run``: ``_statistics`` reports the misuses)."""
    from summarylib.reader.runs import is_event_file, is_logdir

    if args.compare or args.statistics_run:
        return True
    if args.no_statistics:
        return False
    return bool(is_logdir(loaded.path) or is_event_file(os.path.basename(loaded.path)))


def _statistics(args: argparse.Namespace, loaded: LoadedGraph, view: GraphView,
                summaries: tuple[str, dict[str, Any], dict[str, Any]] | None = None
                ) -> tuple[Any, Any]:
    """The page's statistics (None without any) and the compared run's (None without);
    ``summaries``: the input's, already read (``_read_summaries``)."""
    from summarylib.graph.view.sources import load_graph
    from summarylib.graph.view.statistics import (
        check_graphs_match,
        join_statistics,
        read_statistics,
    )
    from summarylib.reader.runs import is_event_file, is_logdir

    if args.no_statistics:
        if args.compare:
            raise _UsageError("--compare and --no-statistics exclude each other")
        return None, None
    if not (is_logdir(loaded.path) or is_event_file(os.path.basename(loaded.path))):
        # a GraphDef file: no summaries in it
        if args.compare or args.statistics_run:
            raise _UsageError("statistics need a logdir or an event file as INPUT")
        return None, None
    if summaries is None:
        summaries = _read_summaries(loaded.path, args.statistics_run or loaded.run)
    run, scalars, histograms = summaries
    stats = join_statistics(view, scalars, histograms, run=run)
    if not args.compare:
        return (stats if stats.series else None), None
    other = load_graph(args.compare, run=args.compare_run, tag=args.tag)
    other_view = _build(other, args, diff=False)
    check_graphs_match(view, other_view)
    try:
        compare = read_statistics(args.compare, view, run=args.compare_run or other.run)
    except ValueError as e:
        raise _UsageError(str(e)) from None
    _label_runs(args, stats, compare)
    return stats, compare


def _label_runs(args: argparse.Namespace, stats: Any, compare: Any) -> None:
    # The page names the two runs by the inputs given (and the run inside each).
    stats.run = f"{args.input}" + (f" ({stats.run})" if stats.run not in (None, ".") else "")
    compare.run = f"{args.compare}" + (f" ({compare.run})" if compare.run not in (None, ".")
                                       else "")


def _list(path: str, list_graphs: Any) -> int:
    from summarylib.graph.view.sources import GraphSourceError

    try:
        refs = list_graphs(path)
    except (OSError, ImportError, ValueError) as e:
        raise GraphSourceError(f"cannot read {path}: {e}", "unreadable") from None
    if not refs:
        print(f"no graph in {path}")
        return 0
    for ref in refs:
        print(ref.describe())
    return 0


def _diff(args: argparse.Namespace) -> int:
    from summarylib.graph.view.diff_rendering import diff_to_html, diff_to_json, diff_to_text
    from summarylib.graph.view.diffing import diff_views
    from summarylib.graph.view.sources import load_graph

    fmt = _format(args, DIFF_FORMATS, "text")
    la = load_graph(args.a, run=args.run_a or args.run, tag=args.tag_a or args.tag)
    lb = load_graph(args.b, run=args.run_b or args.run, tag=args.tag_b or args.tag)
    va, vb = _build(la, args, diff=True), _build(lb, args, diff=True)
    d = diff_views(va, vb)
    if fmt == "text":
        text = f"--- {la.description}\n+++ {lb.description}\n" + diff_to_text(d)
        default = None
    elif fmt == "json":
        data = diff_to_json(d)
        data["a"], data["b"] = la.description, lb.description
        from summarylib.graph.view.json_export import json_text

        text = json_text(data, separators=(",", ": "), indent=1) + "\n"
        default = None
    else:
        text = diff_to_html(d, va, vb, names=(la.description, lb.description))
        default = "graph-diff.html"
    written = _write(text, args.output, default)
    if written is not None:
        verdict = "no differences" if d.identical else "the graphs differ"
        print(f"wrote {written} ({fmt}): {verdict}")
    return 0 if d.identical else 1

