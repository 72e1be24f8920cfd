"""Runs as TensorBoard defines them: directories that directly hold event files."""

from __future__ import annotations

import os

__all__ = ["event_files", "is_event_file", "list_runs"]


def is_event_file(basename: str) -> bool:
    """TensorBoard reads any file whose name contains ``tfevents``."""
    return "tfevents" in basename


def event_files(directory: str | os.PathLike[str]) -> list[str]:
    """The event files directly in ``directory``, sorted by name (= creation order)."""
    d = os.fspath(directory)
    names = sorted(n for n in os.listdir(d) if is_event_file(n))
    return [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n))]


def list_runs(logdir: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Map each run name to its event files.

    A run is every directory under ``logdir`` (itself included) that directly
    holds an event file; its name is the path relative to ``logdir`` with
    ``/`` separators, and ``"."`` for ``logdir`` itself.
    """
    root = os.fspath(logdir)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"list_runs: 'logdir' is not a directory: {root!r}")
    runs: dict[str, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        names = sorted(n for n in filenames if is_event_file(n))
        if names:
            rel = os.path.relpath(dirpath, root)
            run = "." if rel == "." else rel.replace(os.sep, "/")
            runs[run] = [os.path.join(dirpath, n) for n in names]
    return runs
