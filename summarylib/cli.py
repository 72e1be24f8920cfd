"""``python -m summarylib`` / ``summarylib``: inspect and verify logdirs.

``export``, ``plot`` and ``tail`` read scalars (see :mod:`summarylib.cli_reading`);
``graph`` views a graph offline and ``graph diff`` compares two (see
:mod:`summarylib.cli_graph`). ``compact URL`` merges the objects of finished event files on
an object store (README: "URL logdirs").
``inspect LOGDIR`` lists runs, their tags (with plugin, number of values,
step range and first/last wall time) and other events; ``verify LOGDIR``
checks every record of every event file and exits non-zero on corruption,
naming the file and offset.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TextIO

from summarylib.cli_graph import COMMANDS as GRAPH_COMMANDS
from summarylib.cli_graph import add_graph_parsers, rewrite_argv, run_graph_command
from summarylib.cli_reading import COMMANDS as READING_COMMANDS
from summarylib.cli_reading import add_follow_links, add_reading_parsers, run_reading_command
from summarylib.errors import DataLossError

__all__ = ["main"]


@dataclass
class TagStats:
    plugin: str
    count: int = 0
    min_step: int | None = None
    max_step: int | None = None
    first_wall_time: float | None = None
    last_wall_time: float | None = None

    def add(self, step: int, wall_time: float) -> None:
        self.count += 1
        self.min_step = step if self.min_step is None else min(self.min_step, step)
        self.max_step = step if self.max_step is None else max(self.max_step, step)
        if self.first_wall_time is None:
            self.first_wall_time = wall_time
        self.last_wall_time = wall_time


@dataclass
class RunStats:
    files: int = 0
    records: int = 0
    tags: dict[str, TagStats] = field(default_factory=dict)
    #: Each file version string (``brain.Event:2``) and how many events state it.
    file_versions: dict[str, int] = field(default_factory=dict)
    #: Events other than summaries and file versions, counted by kind.
    other: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _legacy_plugin(kind: str | None) -> str:
    return {
        "simple_value": "scalars (legacy simple_value)",
        "histo": "histograms (legacy)",
        "image": "images (legacy)",
        "audio": "audio (legacy)",
    }.get(kind or "", "(no metadata)")


def inspect_logdir(logdir: str, *, follow_links: bool = True) -> dict[str, RunStats]:
    """Summarize every run of ``logdir`` (or one event file, as run ``"."``).

    Corrupt files are noted, not raised.
    """
    from google.protobuf.message import DecodeError

    from summarylib.progress import Progress
    from summarylib.proto import event_pb2
    from summarylib.reader.records import RecordReader
    from summarylib.reader.runs import event_file_count, is_logdir, list_runs

    out: dict[str, RunStats] = {}
    bar = Progress("inspect")
    all_runs = (
        list_runs(logdir, follow_links=follow_links) if is_logdir(logdir) else {".": [logdir]}
    )
    for done, (run, files) in enumerate(all_runs.items()):
        bar.update(done, len(all_runs))
        stats = out[run] = RunStats(files=event_file_count(files))
        for path in files:
            reader = RecordReader(path)
            try:
                for offset, payload in reader:
                    stats.records += 1
                    event = event_pb2.Event()
                    try:
                        event.ParseFromString(payload)
                    except DecodeError:
                        stats.problems.append(f"{path}: record at offset {offset} is not an Event")
                        continue
                    what = event.WhichOneof("what")
                    if what == "file_version":
                        version = event.file_version
                        stats.file_versions[version] = stats.file_versions.get(version, 0) + 1
                        continue
                    if what != "summary":
                        key = what or "empty"
                        stats.other[key] = stats.other.get(key, 0) + 1
                        continue
                    for value in event.summary.value:
                        tag = stats.tags.get(value.tag)
                        if tag is None:
                            plugin = value.metadata.plugin_data.plugin_name or _legacy_plugin(
                                value.WhichOneof("value")
                            )
                            tag = stats.tags[value.tag] = TagStats(plugin)
                        tag.add(event.step, event.wall_time)
            except DataLossError as e:
                stats.problems.append(str(e))
            except OSError as e:  # vanished or unreadable since it was listed
                stats.problems.append(f"{path}: cannot read: {e}")
            if reader.truncated_at is not None:
                stats.problems.append(
                    f"{path}: truncated last record at offset {reader.truncated_at} "
                    "(still being written?)"
                )
    bar.close()
    return out


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t % 1 * 1000):03d}"


def _printable(text: str) -> str:
    """``text`` with control characters escaped (``\\x1b``, ``\\n``): a tag from an
    untrusted file must not move the terminal's cursor or forge lines of the listing."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _print_inspect(stats: dict[str, RunStats], out: TextIO) -> None:
    if not stats:
        print("no event files found", file=out)
        return
    for run, rs in stats.items():
        print(f"run {run!r}: {rs.files} file(s), {rs.records} record(s)", file=out)
        for version, n in sorted(rs.file_versions.items()):
            times = "" if n == 1 else f" ({n} files)"
            print(f"  file_version: {version}{times}", file=out)
        for key, n in sorted(rs.other.items()):
            print(f"  {key}: {n}", file=out)
        shown = {name: _printable(name) for name in rs.tags}
        width = max([len(t) for t in shown.values()] + [3])
        if rs.tags:
            print(
                f"  {'tag':<{width}}  {'plugin':<12} {'count':>7}  {'steps':<21}"
                f"  first / last wall time",
                file=out,
            )
        for name, t in sorted(rs.tags.items()):
            steps = f"{t.min_step}..{t.max_step}"
            print(
                f"  {shown[name]:<{width}}  {_printable(t.plugin):<12} {t.count:>7}  {steps:<21}"
                f"  {_fmt_time(t.first_wall_time)} / {_fmt_time(t.last_wall_time)}",
                file=out,
            )
        for p in rs.problems:
            print(f"  ! {p}", file=out)


def verify(paths: Sequence[str], out: TextIO, *, follow_links: bool = True) -> int:
    """Check every record of the given files/logdirs; return the exit status."""
    from google.protobuf.message import DecodeError

    from summarylib.proto import event_pb2
    from summarylib.reader.records import RecordReader
    from summarylib.reader.runs import event_file_count, is_logdir, is_remote, list_runs

    files: list[str] = []
    for p in paths:
        if is_logdir(p):
            for run_files in list_runs(p, follow_links=follow_links).values():
                files.extend(run_files)
        elif is_remote(p) or os.path.lexists(p):
            files.append(p)  # not a regular file? the reader says so
        else:
            print(f"error: no such file or directory: {p}", file=out)
            return 2
    from summarylib.progress import Progress

    bad = 0
    records = 0
    bar = Progress("verify")
    for done, path in enumerate(files):
        bar.update(done, len(files))
        reader = RecordReader(path)
        try:
            for offset, payload in reader:
                try:
                    event_pb2.Event.FromString(payload)
                except DecodeError:
                    raise DataLossError(path, offset, "record is not an Event") from None
                records += 1
        except DataLossError as e:
            bad += 1
            print(f"CORRUPT {e.path}: {e.reason} at offset {e.offset}", file=out)
            continue
        except OSError as e:
            bad += 1
            print(f"UNREADABLE {path}: {e}", file=out)
            continue
        if reader.truncated_at is not None:
            print(
                f"note {path}: truncated last record at offset {reader.truncated_at} "
                "(a file still being written looks like this)",
                file=out,
            )
    bar.close()
    status = "FAILED" if bad else "OK"
    print(f"{status}: {event_file_count(files)} file(s), {records} valid record(s), {bad} "
          "corrupt file(s)", file=out)
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    A reader that closes the pipe early (``summarylib tail logs | head -2``) ends the
    command quietly with status 141, as a program killed by SIGPIPE reports it.
    """
    for stream in (sys.stdout, sys.stderr):
        # File, run and tag names come from untrusted files and directories: print them
        # whatever the locale, never fail on them (see _unencodable).
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=_UNENCODABLE)
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, not at exit, where a closed pipe would print a traceback
        return status
    except BrokenPipeError:
        _drop_stdout()
        return 141


def compact_command(url: str, out: TextIO, *, grace: float | None = None,
                    assume_finished: bool = False, live_readers: bool = True,
                    storage_options: dict[str, object] | None = None) -> int:
    """``summarylib compact URL``: one line per event file; exit status 1 if any file could
    not be merged (not finished, objects missing), 2 if ``url`` cannot be compacted at all.

    Credentials come from the environment or ``storage_options`` (``--storage-option``, as
    for the other commands): nothing but the URL is ever printed. ``live_readers`` False:
    ``--no-live-readers`` (no grace, and the end object deleted too).
    """
    from summarylib.writer._compaction import (
        DEFAULT_GRACE_SECS,
        CompactionError,
        compact,
    )

    if grace is not None and not grace >= 0:
        print(f"error: --grace must be >= 0, got {grace}", file=sys.stderr)
        return 2
    if grace is None:
        grace = DEFAULT_GRACE_SECS if live_readers else 0.0
    try:
        results = compact(url, grace_secs=grace, assume_finished=assume_finished,
                          keep_end=live_readers, storage_options=storage_options)
    except (CompactionError, ValueError, FileNotFoundError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    status = 0
    for r in results:
        if isinstance(r, CompactionError):
            print(f"skipped: {r}", file=out)
            status = 1
        elif r.status == "compacted":
            kept = f", {r.kept_recent} recent kept" if r.kept_recent else ""
            print(f"compacted {r.url}: {r.objects_before} objects -> {r.objects_after} "
                  f"({r.bytes_uploaded} bytes re-uploaded{kept})", file=out)
        else:
            kept = f" ({r.kept_recent} recent objects kept)" if r.kept_recent else ""
            print(f"unchanged {r.url}: {r.objects_before} objects, nothing to merge{kept}",
                  file=out)
    return status


def _unencodable(error: UnicodeError) -> tuple[str | bytes, int]:
    # A file name that is not valid in the file system's encoding reaches Python as
    # surrogate escapes: write its own bytes back, as `ls` does, so that the name printed
    # is the name on disk. Anything else the locale cannot encode becomes a backslash
    # escape.
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    if all(0xDC80 <= ord(c) <= 0xDCFF for c in text):
        return bytes(ord(c) - 0xDC00 for c in text), error.end
    return codecs.backslashreplace_errors(error)


_UNENCODABLE = "summarylib.names"
codecs.register_error(_UNENCODABLE, _unencodable)


def _drop_stdout() -> None:
    # Whatever is still buffered for the closed pipe would fail again when Python flushes
    # stdout at exit: point the descriptor at /dev/null so that last flush succeeds.
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="summarylib",
        description="Inspect, verify, export, plot and follow TensorBoard event files; "
        "view and compare graphs.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="list runs, tags, counts, steps and times")
    p_inspect.add_argument("logdir", metavar="LOGDIR_OR_FILE")
    p_inspect.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_follow_links(p_inspect)
    p_verify = sub.add_parser("verify", help="check every record; exit 1 on corruption")
    p_verify.add_argument("paths", nargs="+", metavar="LOGDIR_OR_FILE")
    add_follow_links(p_verify)
    p_compact = sub.add_parser(
        "compact", help="merge the objects of finished event files on an object store")
    p_compact.add_argument("url", metavar="URL",
                           help="a logdir, run or event file URL (s3://bucket/run, ...)")
    p_compact.add_argument(
        "--grace", type=float, default=None, metavar="SECS",
        help="merge an object only once the one after it is this old, so that a live "
        "TensorBoard has moved past it (default 60)")
    p_compact.add_argument(
        "--assume-finished", action="store_true",
        help="also merge files without the end object that close() uploads (their "
        "writer crashed); never use it on a file still being written")
    p_compact.add_argument(
        "--no-live-readers", action="store_true",
        help="no TensorBoard that loaded these files before is still running: merge every "
        "object at once and delete the end object too, leaving one object per file (such "
        "a TensorBoard would stop reloading)")
    add_reading_parsers(sub)
    add_graph_parsers(sub)
    for command in sub.choices.values():
        _add_storage_arguments(command)
    args = parser.parse_args(rewrite_argv(sys.argv[1:] if argv is None else argv))
    try:
        options = _storage_options(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from summarylib.writer._remote import reading_storage_options

    urls = [u for u in _url_arguments(args) if "://" in u and not u.startswith("file://")]
    with reading_storage_options(options):
        if urls:
            return _run_on_urls(args, urls, options)
        return _run(args, options)


def _run(args: argparse.Namespace, options: dict[str, object] | None) -> int:
    if args.command in READING_COMMANDS:
        return run_reading_command(args)
    if args.command in GRAPH_COMMANDS:
        return run_graph_command(args)
    if args.command == "compact":
        return compact_command(args.url, sys.stdout, grace=args.grace,
                               assume_finished=args.assume_finished,
                               live_readers=not args.no_live_readers,
                               storage_options=options)
    if args.command == "inspect":
        from summarylib.cli_reading import missing

        if missing(args.logdir):
            print(f"error: no such file or directory: {args.logdir}", file=sys.stderr)
            return 2
        stats = inspect_logdir(args.logdir, follow_links=args.follow_links)
        if args.json:
            json.dump({run: asdict(rs) for run, rs in stats.items()}, sys.stdout, indent=2)
            print()
        else:
            _print_inspect(stats, sys.stdout)
        return 0
    return verify(args.paths, sys.stdout, follow_links=args.follow_links)


def _add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "object stores (s3://, gs://, ...; see docs/object-stores.md)")
    g.add_argument(
        "--storage-option", action="append", default=[], metavar="KEY=VALUE",
        help="an fsspec option of the URL's filesystem (repeatable); VALUE is JSON if it "
        "parses as JSON (true, 3, {...}), else text. E.g. endpoint_url=http://127.0.0.1:9000")
    g.add_argument("--endpoint-url", metavar="URL",
                   help="s3://: the S3-compatible endpoint (MinIO, R2, ...); the same as "
                   "--storage-option endpoint_url=URL (default: AWS_ENDPOINT_URL)")
    g.add_argument("--profile", metavar="NAME",
                   help="s3://: the AWS profile whose credentials to use (default: "
                   "AWS_PROFILE)")


def _storage_options(args: argparse.Namespace) -> dict[str, object] | None:
    """The fsspec options given on the command line (None: none given), which every
    reader and ``compact`` of this run use."""
    options: dict[str, object] = {}
    for item in args.storage_option:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--storage-option must be KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(text)
        except ValueError:
            options[key] = text
    if args.endpoint_url is not None:
        options["endpoint_url"] = args.endpoint_url
    if args.profile is not None:
        options["profile"] = args.profile
    return options or None


def _url_arguments(args: argparse.Namespace) -> list[str]:
    # The logdirs and files the command reads (the graph commands report their own).
    if args.command == "verify":
        return list(args.paths)
    if args.command == "compact":
        return [args.url]
    logdir = getattr(args, "logdir", None)
    return [logdir] if isinstance(logdir, str) else []


def _run_on_urls(args: argparse.Namespace, urls: list[str],
                 options: dict[str, object] | None) -> int:
    """:func:`_run` for URLs: a missing bucket, nothing at the URL or a store that cannot be
    reached is one ``error:`` line and status 2, before and while reading."""
    from summarylib.writer._remote import url_problem

    for url in urls:
        problem = url_problem(url, options)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    try:
        return _run(args, options)
    except Exception as e:
        from summarylib.writer._remote import unreachable

        # The store went away while reading (botocore's connection errors are no OSError).
        if isinstance(e, BrokenPipeError) or not (
                isinstance(e, (OSError, ImportError)) or unreachable(e)):
            raise
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"error: {', '.join(urls)}: {type(e).__name__}: {text}", file=sys.stderr)
        return 2
