"""``faultymem://``: fsspec's memory filesystem (the same objects as ``memory://``) whose
requests fail where a test says, for the fault tests of object-store compaction.

It is a real fsspec filesystem, registered under its own protocol: the code under test
opens it by URL, as it opens ``s3://``. A test arms one fault at a time::

    FaultyMemoryFileSystem.arm("cat_file", after=3)   # the 4th download raises OSError

Faults: ``cat_file`` (a download), ``write`` (an upload that fails midway: the bytes
written so far stay in the file object, which fsspec uploads as the block exits),
``copy``, ``rm`` (a bulk delete that deletes half its objects, then fails), ``info``.
``delay`` seconds are slept before each download (to make concurrent merges overlap), and
``before_download`` runs before the next one (another client acting in the middle of a read).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

import fsspec
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

PROTOCOL = "faultymem"


class InjectedFault(OSError):
    """The failure a test asked for."""


class FaultyMemoryFileSystem(MemoryFileSystem):  # type: ignore[misc]
    protocol = PROTOCOL
    _lock = threading.Lock()
    _armed: ClassVar[dict[str, int]] = {}
    _only = ""
    delay = 0.0
    #: Called (once, then cleared) before the next download: another client's action.
    before_download: ClassVar[Callable[[], None] | None] = None

    @classmethod
    def arm(cls, what: str, *, after: int = 0, only: str = "") -> None:
        """Fail the ``after + 1``-th request of kind ``what`` (once), counting only the
        requests on paths that contain ``only``."""
        with cls._lock:
            cls._armed = {what: after}
            cls._only = only

    @classmethod
    def disarm(cls) -> None:
        with cls._lock:
            cls._armed = {}
        cls.delay = 0.0
        cls.before_download = None

    @classmethod
    def _fires(cls, what: str, path: object = "") -> bool:
        with cls._lock:
            left = cls._armed.get(what)
            if left is None or cls._only not in str(path):
                return False
            if left > 0:
                cls._armed[what] = left - 1
                return False
            del cls._armed[what]
            return True

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, str):
            path = path.removeprefix(f"{PROTOCOL}://")
        return super()._strip_protocol(path)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None,
                 **kwargs: Any) -> bytes:
        if self.delay:
            time.sleep(self.delay)
        action = FaultyMemoryFileSystem.before_download
        FaultyMemoryFileSystem.before_download = None
        if action is not None:
            action()
        if self._fires("cat_file", path):
            raise InjectedFault(5, "injected download failure", path)
        return super().cat_file(path, start=start, end=end, **kwargs)  # type: ignore[no-any-return]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        f = super()._open(path, mode, **kwargs)
        if "w" in mode and self._fires("write", path):
            failing = _FailingFile(self, self._strip_protocol(path))
            failing.commit()  # what fsspec's file uploads as the block exits
            return failing
        return f

    def copy(self, path1: str, path2: str, **kwargs: Any) -> None:
        if self._fires("copy", path2):
            raise InjectedFault(5, "injected copy failure", path2)
        super().copy(path1, path2, **kwargs)

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        if self._fires("info", path):
            raise InjectedFault(5, "injected failure", path)
        return super().info(path, **kwargs)  # type: ignore[no-any-return]

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        if isinstance(path, list) and len(path) > 1 and self._fires("rm", path[0]):
            super().rm(path[: len(path) // 2])
            raise InjectedFault(5, "injected failure after deleting half")
        super().rm(path, recursive=recursive, maxdepth=maxdepth)


class _FailingFile(MemoryFile):  # type: ignore[misc]
    """Takes one write, then fails: what an upload cut off midway leaves behind."""

    writes = 0

    def write(self, data: Any) -> int:
        self.writes += 1
        if self.writes > 1:
            raise InjectedFault(5, "injected upload failure", self.path)
        return super().write(data)  # type: ignore[no-any-return]


fsspec.register_implementation(PROTOCOL, FaultyMemoryFileSystem, clobber=True)
