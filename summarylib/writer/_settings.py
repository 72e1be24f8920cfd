"""A writer's settings: one frozen, checked object shared by a writer, its sub-runs and
its pickled copies.

Every way of making a writer (``create_file_writer``, ``create_writer``,
``SummaryWriter(...)``) checks its arguments into a :class:`WriterSettings` once; the
writer, the sub-runs it opens (``add_scalars``, ``add_hparams``) and a copy unpickled in
another process are all built from that same object by one function
(:func:`summarylib.writer._file_writer.open_writer_resource`), so none can drift.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

__all__ = [
    "DEFAULT_FLUSH_MILLIS",
    "DEFAULT_MAX_BUFFER_BYTES",
    "DEFAULT_MAX_QUEUE",
    "WriterSettings",
    "check_int",
]

DEFAULT_MAX_QUEUE = 10
DEFAULT_FLUSH_MILLIS = 120_000
DEFAULT_MAX_BUFFER_BYTES = 16 << 20


# A NamedTuple, not a frozen dataclass: as immutable, and importing dataclasses (and
# inspect with it) would add about 15 ms to ``import summarylib``.
class WriterSettings(NamedTuple):
    """The checked settings of a writer (see :func:`summarylib.create_file_writer`).

    ``clock`` gives each event's wall time (seconds since the epoch) where the caller
    gives none; a fixed clock makes files byte-for-byte reproducible. A writer whose
    clock cannot be pickled (a lambda) cannot be pickled either. ``storage_options``
    may hold credentials: it is left out of the ``repr``.
    """

    max_queue: int = DEFAULT_MAX_QUEUE
    flush_millis: int = DEFAULT_FLUSH_MILLIS
    max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES
    on_error: Literal["raise", "warn"] = "raise"
    fsync: bool = False
    filename_suffix: str = ".v2"
    storage_options: dict[str, Any] | None = None
    sync_device_values: bool = False
    clock: Callable[[], float] = time.time
    compact_on_close: bool = False

    def __repr__(self) -> str:
        # Every field but storage_options, which may hold credentials.
        pairs = zip(self._fields, self, strict=True)
        shown = ", ".join(f"{name}={value!r}" for name, value in pairs
                          if name != "storage_options")
        return f"WriterSettings({shown})"

    @classmethod
    def checked(
        cls,
        where: str,
        *,
        max_queue: object = None,
        flush_millis: object = None,
        max_buffer_bytes: object = None,
        on_error: object = "raise",
        fsync: object = False,
        filename_suffix: str = ".v2",
        storage_options: object = None,
        sync_device_values: object = False,
        clock: object = None,
        compact_on_close: object = False,
    ) -> WriterSettings:
        """Settings from a constructor's arguments (None: the default), each checked;
        errors name ``where`` and the argument."""
        if on_error not in ("raise", "warn"):
            raise ValueError(f"{where}: 'on_error' must be 'raise' or 'warn', got {on_error!r}")
        if storage_options is not None and not isinstance(storage_options, dict):
            raise TypeError(f"{where}: 'storage_options' must be a dict or None")
        if clock is None:
            clock = time.time
        elif not callable(clock):
            raise TypeError(
                f"{where}: 'clock' must be a callable returning seconds since the epoch, "
                f"got {type(clock).__name__}"
            )
        return cls(
            max_queue=check_int(where, "max_queue", max_queue, DEFAULT_MAX_QUEUE, minimum=0),
            flush_millis=check_int(
                where, "flush_millis", flush_millis, DEFAULT_FLUSH_MILLIS, minimum=0
            ),
            max_buffer_bytes=check_int(
                where, "max_buffer_bytes", max_buffer_bytes, DEFAULT_MAX_BUFFER_BYTES, minimum=1
            ),
            on_error=on_error,
            fsync=bool(fsync),
            filename_suffix=filename_suffix,
            storage_options=None if storage_options is None else dict(storage_options),
            sync_device_values=_check_bool(where, "sync_device_values", sync_device_values),
            clock=clock,
            compact_on_close=_check_bool(where, "compact_on_close", compact_on_close),
        )


def check_int(where: str, name: str, value: object, default: int, *, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (None: ``default``), else raise naming ``name``."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: {name!r} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{where}: {name!r} must be >= {minimum}, got {value}")
    return value


def _check_bool(where: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name!r} must be a bool, got {type(value).__name__}")
    return value
