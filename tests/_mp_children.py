"""Targets for multiprocessing children (tests/test_multiprocessing.py).

Kept apart from the test module so that "spawn" and "forkserver" children,
which import the target's module, load nothing but summarylib.
"""

from __future__ import annotations

import os
from typing import Any

import summarylib as sl


def log_with_default_writer(tag: str, n: int) -> int:
    """Log ``n`` scalars to the inherited default writer; never flush or close."""
    for i in range(n):
        assert sl.scalar(tag, float(i), step=i)
    return os.getpid()


def log_to_own_writer(logdir: str, tag: str, n: int) -> int:
    """Log ``n`` scalars to a writer of this call's own, closed before returning."""
    with sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9):
        for i in range(n):
            assert sl.scalar(tag, float(i), step=i)
    return os.getpid()


_sync: tuple[Any, Any] | None = None


def keep_sync(logged: Any, release: Any) -> None:
    """Pool initializer: keep a queue and an event (they pass to workers only this way)."""
    global _sync
    _sync = (logged, release)


def log_then_wait(tag: str, n: int) -> int:
    """Log ``n`` scalars to the inherited default writer, report, then wait to be released."""
    assert _sync is not None
    logged, release = _sync
    for i in range(n):
        assert sl.scalar(tag, float(i), step=i)
    logged.put(os.getpid())
    release.wait(120)
    return os.getpid()


def log_with_writer(writer: sl.SummaryWriter, tag: str, n: int) -> None:
    """Log ``n`` scalars to ``writer`` (unpickled: a new file); never flush or close."""
    with_default = writer.as_default()
    with_default.__enter__()  # no exit: that would flush
    for i in range(n):
        assert sl.scalar(tag, float(i), step=i)


def writer_settings(writer: sl.SummaryWriter) -> dict[str, object]:
    """What an unpickled writer looks like in the child."""
    assert not writer.closed
    settings = writer.settings
    out: dict[str, object] = {
        name: getattr(settings, name)
        for name in ("max_queue", "flush_millis", "filename_suffix", "on_error", "fsync")
    }
    out["path"] = writer.path
    out["pid"] = os.getpid()
    writer.close()
    return out


def train(rank: int, world_size: int, logdir: str, pattern: str) -> None:
    """A stand-in for one rank of a distributed job (see docs/distributed.md)."""
    del world_size
    if pattern == "rank0":
        writer = sl.create_file_writer(logdir) if rank == 0 else sl.create_noop_writer()
    else:
        writer = sl.create_file_writer(os.path.join(logdir, f"rank{rank}"))
    with writer.as_default():
        for step in range(20):
            loss = 1.0 / (step + 1) + rank  # each rank's own number
            sl.scalar("loss", loss, step=step)
    writer.close()
