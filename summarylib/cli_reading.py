"""The reading commands of the CLI: ``export``, ``plot`` and ``tail``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

__all__ = ["add_follow_links", "add_reading_parsers", "missing", "run_reading_command"]

COMMANDS = ("export", "plot", "tail")


def add_follow_links(parser: argparse.ArgumentParser) -> None:
    """Add ``--follow-links``: symbolic links that lead out of the logdir are skipped
    unless it is given (a link to ``/`` in a logdir must not walk the whole host)."""
    parser.add_argument(
        "--follow-links",
        action="store_true",
        help="also follow symbolic links that lead outside LOGDIR (skipped by default)",
    )


def add_reading_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export``, ``plot`` and ``tail`` subcommands to ``sub``."""
    p = sub.add_parser("export", help="write every scalar as CSV, JSON Lines or Parquet")
    p.add_argument("logdir", metavar="LOGDIR_OR_FILE")
    p.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv")
    p.add_argument(
        "-o", "--output", help="output file, '-' for standard output (default: scalars.<format>)"
    )
    p.add_argument("--tag", action="append", dest="tags", help="only this tag (repeatable)")
    p.add_argument("--run", action="append", dest="runs", help="only this run (repeatable)")
    add_follow_links(p)
    p = sub.add_parser("plot", help="draw a tag's curves of one or more runs to a PNG")
    p.add_argument("logdir", metavar="LOGDIR_OR_FILE")
    p.add_argument("--tag", required=True)
    p.add_argument("--run", action="append", dest="runs", help="only this run (repeatable)")
    p.add_argument("-o", "--output", default=None, help="PNG file (default: <tag>.png)")
    p.add_argument("--smoothing", type=float, default=0.6, help="TensorBoard's smoothing, [0, 1)")
    p.add_argument("--log-y", action="store_true", help="logarithmic y axis")
    p.add_argument("--size", default="800x450", help="WIDTHxHEIGHT in pixels")
    add_follow_links(p)
    p = sub.add_parser("tail", help="print new scalars as they are written, with sparklines")
    p.add_argument("logdir", metavar="LOGDIR_OR_FILE")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    p.add_argument("--from-start", action="store_true", help="print what is there first")
    p.add_argument("--width", type=int, default=20, help="sparkline length")
    add_follow_links(p)


def missing(path: str) -> bool:
    """True when ``path`` is neither a URL nor anything on disk (a logdir or an event file)."""
    from summarylib.reader.runs import is_remote

    return not is_remote(path) and not os.path.lexists(path)


def run_reading_command(args: argparse.Namespace) -> int:
    """Run a subcommand added by :func:`add_reading_parsers`; return the exit status."""
    from summarylib.errors import DataLossError

    if missing(args.logdir):
        print(f"error: no such file or directory: {args.logdir}", file=sys.stderr)
        return 2
    try:
        if args.command == "export":
            return _export(args)
        if args.command == "plot":
            return _plot(args)
        return _tail(args)
    except DataLossError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _unwritable(out: str) -> str | None:
    # Checked before the logdir is read, so a typo costs no reading: why `out` cannot be
    # created, or None.
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        return f"cannot write {out}: no such directory: {parent}"
    if os.path.isdir(out):
        return f"cannot write {out}: it is a directory"
    return None


def _export(args: argparse.Namespace) -> int:
    from summarylib.progress import Progress
    from summarylib.reader.export import export_scalars

    out = args.output or f"scalars.{args.format}"
    to_stdout = out == "-"
    if not to_stdout and (why := _unwritable(out)):
        print(f"error: {why}", file=sys.stderr)
        return 2
    target = (sys.stdout.buffer if args.format == "parquet" else sys.stdout) if to_stdout else out
    bar = Progress("export")
    try:
        rows = export_scalars(
            args.logdir, target, args.format, tags=args.tags, runs=args.runs,
            progress=bar.update, follow_links=args.follow_links,
        )
    except ImportError as e:
        print(f"error: {args.format} needs pyarrow ({e})", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise
    except OSError as e:
        # An input that cannot be read names the input, not the output.
        name = getattr(e, "filename", None)
        if name is not None and (to_stdout or os.path.abspath(os.fspath(name)) !=
                                 os.path.abspath(out)):
            print(f"error: cannot read {os.fspath(name)}: {e.strerror or e}", file=sys.stderr)
        else:
            print(f"error: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    finally:
        bar.close()
    # With the data on stdout, the summary goes to stderr.
    print(f"wrote {rows} rows to {'standard output' if to_stdout else out}",
          file=sys.stderr if to_stdout else sys.stdout)
    return 0


def _plot(args: argparse.Namespace) -> int:
    from summarylib.reader.columns import read_columns
    from summarylib.reader.plotting import draw_chart

    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        print(f"error: --size must be WIDTHxHEIGHT, got {args.size!r}", file=sys.stderr)
        return 2
    data = read_columns(
        args.logdir, ("scalars",), [args.tag], args.runs, follow_links=args.follow_links
    )
    series = {
        run: (tags[args.tag].step, tags[args.tag].value) for run, tags in sorted(data.items())
    }
    if not series:
        print(f"error: no run has a scalar tag {args.tag!r}", file=sys.stderr)
        return 1
    out = args.output or args.tag.replace("/", "_") + ".png"
    if why := _unwritable(out):
        print(f"error: {why}", file=sys.stderr)
        return 2
    try:
        draw_chart(
            series,
            out,
            title=args.tag,
            smoothing=args.smoothing,
            log_y=args.log_y,
            size=(width, height),
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({len(series)} run(s))")
    return 0


def _tail(args: argparse.Namespace) -> int:
    from summarylib.reader.tailing import tail

    polls = 0

    def stop() -> bool:
        # Called before each poll: the second call means the first poll is done, and what
        # was there has been read; say so, so that a user (or a script) knows tail is live.
        nonlocal polls
        polls += 1
        if polls == 2:
            print(f"summarylib tail: following {args.logdir} (Ctrl-C stops)", file=sys.stderr,
                  flush=True)
        return False

    with contextlib.suppress(KeyboardInterrupt):
        tail(
            args.logdir,
            sys.stdout,
            interval=args.interval,
            width=args.width,
            from_start=args.from_start,
            stop=stop,
            follow_links=args.follow_links,
        )
    return 0
