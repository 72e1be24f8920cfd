"""Writers and the life of the process: exit, garbage collection, fork, multiprocessing.

* Every open writer is registered here (:func:`live_writers`), weakly.
* At interpreter exit and when a writer object is collected, its owner closes it through
  :func:`close_at_exit` (bounded by :data:`EXIT_TIMEOUT_SECS`; failures become warnings:
  an exit hook has nobody to raise to).
* A ``multiprocessing`` child started by fork or forkserver ends with ``os._exit()``: only
  multiprocessing's own finalizers run there, so a writer used in such a child registers
  one (:func:`close_at_multiprocessing_exit`).
* After ``os.fork()`` every live writer is reset in the child
  (:meth:`Forkable.after_fork_in_child`).
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "EXIT_TIMEOUT_SECS",
    "Forkable",
    "close_at_exit",
    "close_at_multiprocessing_exit",
    "forget",
    "live_writers",
    "register",
]

#: How long an exit hook (interpreter exit, garbage collection, the end of a
#: multiprocessing child) waits for a writer to finish before giving up.
EXIT_TIMEOUT_SECS = 30.0


class Forkable(Protocol):
    """What the process hooks need of a writer."""

    @property
    def name(self) -> str: ...

    def close_at_exit(self, timeout: float) -> None: ...

    def after_fork_in_child(self) -> None: ...


_live: weakref.WeakSet[Forkable] = weakref.WeakSet()
# Writers that registered a multiprocessing finalizer, by the pid that registered it.
_mp_hooked: weakref.WeakKeyDictionary[Forkable, int] = weakref.WeakKeyDictionary()


def register(writer: Forkable) -> None:
    """``writer`` is open: reset it after fork, list it in :func:`live_writers`."""
    _live.add(writer)


def forget(writer: Forkable) -> None:
    """``writer`` is closed."""
    _live.discard(writer)


def live_writers() -> list[Forkable]:
    """Every writer of this process that is not closed yet."""
    return list(_live)


def close_at_exit(ref: Callable[[], Forkable | None]) -> None:
    """Close the writer ``ref()`` refers to, if any, for an exit hook; never raises."""
    writer = ref()
    if writer is None:
        return
    try:
        writer.close_at_exit(EXIT_TIMEOUT_SECS)
    except Exception as e:
        message = f"summarylib: closing {writer.name} failed: {e}"
        warnings.warn(message, RuntimeWarning, stacklevel=1)


def close_at_multiprocessing_exit(writer: Forkable) -> None:
    """In a multiprocessing child, close ``writer`` when the child ends (once per process)."""
    mp = sys.modules.get("multiprocessing")
    if mp is None or mp.parent_process() is None:
        return
    pid = os.getpid()
    if _mp_hooked.get(writer) == pid:
        return
    _mp_hooked[writer] = pid
    from multiprocessing import util

    util.Finalize(writer, close_at_exit, args=(weakref.ref(writer),), exitpriority=0)


def _reset_after_fork() -> None:
    for w in list(_live):
        w.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
