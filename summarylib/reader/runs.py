"""Runs as TensorBoard defines them: directories that directly hold event files.

Directories are untrusted too: symbolic links are followed (unless asked to
leave links that lead outside the logdir alone), but each real directory is
visited once (a link loop cannot multiply runs or recurse forever), and only
regular files count as event files (a FIFO would block a reader forever; a
dangling link or a device holds no events).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

__all__ = ["event_file_count", "event_files", "is_event_file", "list_runs"]


def is_event_file(basename: str) -> bool:
    """TensorBoard reads any file whose name contains ``tfevents``."""
    return "tfevents" in basename


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False  # dangling link, vanished, unreadable


def event_files(directory: str | os.PathLike[str]) -> list[str]:
    """The event files directly in ``directory``, sorted by name (= creation order)."""
    d = os.fspath(directory)
    names = sorted(n for n in os.listdir(d) if is_event_file(n))
    return [os.path.join(d, n) for n in names if _is_regular(os.path.join(d, n))]


def list_runs(
    logdir: str | os.PathLike[str], *, follow_links: bool = True
) -> dict[str, list[str]]:
    """Map each run name to its event files.

    A run is every directory under ``logdir`` (itself included) that directly
    holds an event file; its name is the path relative to ``logdir`` with
    ``/`` separators, and ``"."`` for ``logdir`` itself. A directory reached
    twice through symbolic links is listed once, under the first name found.
    With ``follow_links`` False, a link to a directory outside ``logdir`` is not
    followed (a link to ``/`` would otherwise walk the whole host); links that
    stay inside are.
    """
    root = os.fspath(logdir)
    if "://" in root and not root.startswith("file://"):
        return _list_remote_runs(root)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"list_runs: 'logdir' is not a directory: {root!r}")
    runs: dict[str, list[str]] = {}
    for dirpath, filenames in _walk(root, follow_links):
        paths = [os.path.join(dirpath, n) for n in sorted(filenames) if is_event_file(n)]
        paths = [p for p in paths if _is_regular(p)]
        if paths:
            rel = os.path.relpath(dirpath, root)
            run = "." if rel == "." else rel.replace(os.sep, "/")
            runs[run] = paths
    return runs


def _walk(root: str, follow_links: bool = True) -> Iterator[tuple[str, list[str]]]:
    """``(directory, names of its files)`` for ``root`` and every directory under it.

    Top-down, subdirectories by name (``os.walk``'s order), following links
    to directories, each real directory once. A stack, not recursion: a
    chain of directories of any depth is walked. Unreadable directories are
    skipped, as ``os.walk`` skips them. With ``follow_links`` False, links to
    directories outside ``root`` are skipped.
    """
    real_root = os.path.realpath(root)
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        dirpath = stack.pop()
        try:
            st = os.stat(dirpath)
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue  # a loop, or a second link to a directory: done already
        seen.add(key)
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(dirpath) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                        if is_dir and not follow_links and entry.is_symlink():
                            is_dir = _inside(os.path.realpath(entry.path), real_root)
                            if not is_dir:
                                continue  # outside the logdir: neither a run nor a file
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError:
            continue
        yield dirpath, files
        # Reversed onto the stack, so the first name is walked next.
        stack.extend(os.path.join(dirpath, d) for d in sorted(dirs, reverse=True))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _list_remote_runs(url: str) -> dict[str, list[str]]:
    # Object stores have no directories: every prefix holding an event object is a run.
    from summarylib.writer._remote import reading_filesystem, split_url

    fs = reading_filesystem(url)
    protocol = split_url(url)[0]
    root = fs._strip_protocol(url).rstrip("/")
    runs: dict[str, list[str]] = {}
    for path in sorted(fs.find(root)):
        directory, _, name = path.rpartition("/")
        if not is_event_file(name):
            continue
        rel = directory[len(root):].strip("/")
        runs.setdefault(rel or ".", []).append(f"{protocol}://{path}")
    return runs


def is_remote(path: str) -> bool:
    """True for a URL that is not a plain ``file://`` path."""
    return "://" in path and not path.startswith("file://")


def event_file_count(paths: list[str]) -> int:
    """How many event files ``paths`` (a run's, from :func:`list_runs`) are: on an object
    store, the objects of one event file (numbered, merged and end) count once."""
    from summarylib.writer._remote import END_SUFFIX, object_parts

    files = set()
    for path in paths:
        if is_remote(path):
            parts = object_parts(path)
            path = parts[0] if parts is not None else path.removesuffix(END_SUFFIX)
        files.add(path)
    return len(files)


def is_logdir(path: str) -> bool:
    """True if ``path`` (local or URL) is a directory of runs rather than one event file."""
    if is_remote(path):
        from summarylib.writer._remote import reading_filesystem

        fs = reading_filesystem(path)
        return bool(fs.isdir(fs._strip_protocol(path)))
    return os.path.isdir(path)
