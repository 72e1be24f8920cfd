"""The exceptions summarylib raises.

Every exception summarylib raises on purpose derives from :class:`SummaryError`
and, where one fits, from the matching builtin, so existing ``except`` clauses
keep working::

    SummaryError(Exception)
     ├── ArgumentError(SummaryError, TypeError, ValueError)  see below
     ├── DataLossError(SummaryError, OSError)       corrupt or unreadable event data
     │    └── SummaryDecodeError(DataLossError, ValueError)  bytes that are not a Summary
     ├── WriterClosedError(SummaryError, RuntimeError)  use of a closed writer
     └── WriteFailedError(SummaryError, OSError)    background I/O failed (names the file)

Bad arguments raise plain ``TypeError``/``ValueError`` whose message names the
function, the argument and what was wrong, e.g.
``ValueError: scalar: 'data' must be rank 0, got shape (3,)``. Where the
argument's type is wrong and ``tf.summary`` raises ``ValueError`` for it
(string data to ``scalar``, a ``writer`` that is not one), the error is an
:class:`ArgumentError`, both a ``TypeError`` and a ``ValueError``, so code
written for either catches it.
"""

from __future__ import annotations

import sys
import warnings

__all__ = [
    "ArgumentError",
    "DataLossError",
    "NoDefaultWriterWarning",
    "NonFiniteError",
    "SummaryDecodeError",
    "SummaryError",
    "WriteFailedError",
    "WriterClosedError",
    "warn_user",
]


class SummaryError(Exception):
    """Base class of every error summarylib raises on purpose."""


class ArgumentError(SummaryError, TypeError, ValueError):
    """An argument of the wrong type, where TensorFlow raises ``ValueError`` for it.

    Both a ``TypeError`` (what Python code expects for a wrong type) and a
    ``ValueError`` (what ``tf.summary`` raises), so ``except`` clauses written
    for either keep working. The message names the function and the argument.
    """


class NoDefaultWriterWarning(UserWarning):
    """An op wrote nothing because its thread has no default writer, while one is open.

    Issued once per process. Ops without a default writer return False by
    design (library code may log unconditionally); when a writer is open that
    is usually a forgotten ``set_as_default()``/``as_default()``, or logging
    from a thread other than the one that set it (the default is per thread).
    Silence it with ``warnings.filterwarnings("ignore",
    category=summarylib.NoDefaultWriterWarning)``.
    """


class DataLossError(SummaryError, OSError):
    """An event file holds a corrupt record.

    Attributes:
      path: the file that holds the record.
      offset: byte offset of the start of the bad record.
    """

    def __init__(self, path: str, offset: int, reason: str) -> None:
        super().__init__(f"{path}: {reason} at offset {offset}")
        self.path = path
        self.offset = offset
        self.reason = reason

    def __reduce__(self) -> tuple[type[DataLossError], tuple[str, int, str]]:
        return (type(self), (self.path, self.offset, self.reason))


class SummaryDecodeError(DataLossError, ValueError):
    """Bytes handed over as a serialized ``Summary`` (``write_raw_pb``) do not parse.

    TensorFlow raises its ``DataLossError`` here; this is our :class:`DataLossError`,
    and a ``ValueError`` too (a bad argument), so ``except`` clauses written for either
    catch it. ``path`` names the function and argument, ``offset`` is 0.
    """

    def __init__(self, where: str, offset: int, reason: str) -> None:
        super().__init__(where, offset, reason)
        self.args = (f"{where} {reason}",)

    def __str__(self) -> str:
        return f"{self.path} {self.reason}"


class WriterClosedError(SummaryError, RuntimeError):
    """A summary was written to, or a context entered on, a closed writer."""


class WriteFailedError(SummaryError, OSError):
    """Writing events to their output failed in the background.

    Raised on the next summary call, ``flush()`` or ``close()`` after the
    failure. The events of the failed batch are lost (they were never
    acknowledged by a ``flush()``); events written before stay intact.

    Attributes:
      path: the output (file) that failed.
    """

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(f"summarylib could not write to {path}: {cause}")
        # The usual OSError attributes, so `except OSError as e: e.errno` works.
        self.errno = getattr(cause, "errno", None)
        self.strerror = getattr(cause, "strerror", None) or str(cause)
        self.path = path
        self.filename = path

    def __str__(self) -> str:
        # OSError.__str__ would render "[Errno 28] <strerror>: '<path>'" from the
        # attributes; our message already names the file and the whole cause.
        return str(self.args[0])


class NonFiniteError(SummaryError, ValueError):
    """A value written with ``check_finite=True`` was NaN or ±inf.

    Found on the writer thread (the check crosses from the device with the value, so the
    caller never waits for it) and raised on the next summary call, ``flush()`` or
    ``close()``, like a background write failure. The value itself was written.

    Attributes:
      tag: the summary's tag.
      step: the step of the write that carried the check.
    """

    def __init__(self, tag: str, step: int, message: str) -> None:
        super().__init__(message)
        self.tag = tag
        self.step = step


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn with the location of the first caller outside summarylib (the user's line).

    However deep the library's own frames are (an op, its core, ``SummaryWriter.add_*``),
    the warning points at the line that called into the library.
    """
    frame = sys._getframe(1)
    level = 2  # stacklevel 2 is warn_user's caller
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
        "summarylib."
    ):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
