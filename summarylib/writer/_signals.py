"""Opt-in: flush every open writer when the process gets SIGTERM or SIGINT.

By default a process killed by a signal loses the events its writers had not
written yet (interpreter exit hooks do not run on SIGTERM's default action).
:func:`flush_on_signals` installs handlers that first flush every open
summarylib writer (bounded by a timeout), then do what the signal did before:

* a previous Python handler is called (``signal.default_int_handler`` for
  SIGINT raises ``KeyboardInterrupt`` as usual; a framework's handler runs);
* ``SIG_IGN`` keeps ignoring the signal (the process goes on);
* ``SIG_DFL`` is restored and the signal re-raised, so the process ends
  exactly as it would have, exit status included;
* a handler installed outside Python (``signal.getsignal`` returns None:
  Python can neither call nor reinstall it) is not run: the default action
  happens instead, as for ``SIG_DFL``.

Handlers run on the main thread between bytecodes, possibly while that
thread is inside a writer call, holding that writer's lock. Flushing there
would mean waiting for the writer thread, which needs the lock: the wait
would release it under the interrupted call, and the writer thread would
change the pending events while that call is halfway through them. So when
the handler finds a writer lock held by its own thread it returns at once,
and a helper thread flushes every writer (waiting for the call to release
the lock, within the timeout), then sends the signal to the main thread
again; that second delivery does what the signal did before. The previous
handler or default action then runs a moment later, after the interrupted
call has returned.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

from summarylib.writer._buffered import live_writers

__all__ = ["flush_all", "flush_on_signals"]

_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

#: Default bound on the time a signal handler spends flushing all writers.
DEFAULT_TIMEOUT_SECS = 10.0


def flush_all(timeout: float = DEFAULT_TIMEOUT_SECS, *, sync: bool = False) -> list[str]:
    """Flush every open writer of this process; never raise.

    Args:
      timeout: total seconds to spend; writers not done by then are skipped.
      sync: also ``fsync`` each file (durable against power loss).

    Returns:
      One message per writer that could not be flushed (empty when all were).
    """
    deadline = time.monotonic() + timeout
    problems = []
    writers = live_writers()
    # Every writer thread starts writing at once, so one writer that uses up
    # the time (storage that hangs) does not leave the others unwritten.
    for writer in writers:
        writer.start_flush(sync=sync)
    for writer in writers:
        try:
            # With no time left this still succeeds for a writer that is done.
            writer.flush_quietly(max(0.0, deadline - time.monotonic()), sync=sync)
        except Exception as e:
            problems.append(f"summarylib: could not flush {writer.name}: {e}")
    return problems


def flush_on_signals(
    signals: Iterable[int] = (signal.SIGTERM, signal.SIGINT),
    *,
    timeout: float = DEFAULT_TIMEOUT_SECS,
    sync: bool = False,
) -> Callable[[], None]:
    """Flush every open writer when one of ``signals`` arrives, then chain.

    Call it once, from the main thread, early in the program (after a
    framework that installs its own handlers, so that those are chained to).
    Calling it again for a signal it already handles changes nothing.

    Args:
      signals: the signals to handle (default SIGTERM and SIGINT).
      timeout: seconds a handler may spend flushing all writers.
      sync: also ``fsync`` the files, for data that must survive a machine
        shutdown that follows the signal, not only the end of the process.

    Returns:
      A function that restores the previous handlers (of the signals whose
      handler is still the one installed here).

    Raises:
      ValueError: not called from the main thread, or not a valid signal.
      TypeError: a signal is not an int.
    """
    if threading.current_thread() is not threading.main_thread():
        raise ValueError("flush_on_signals: must be called from the main thread")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"flush_on_signals: 'timeout' must be a number > 0, got {timeout!r}")
    sigs = list(signals)
    for sig in sigs:
        if isinstance(sig, bool) or not isinstance(sig, int):
            raise TypeError(
                f"flush_on_signals: 'signals' must hold signal numbers, got {type(sig).__name__}"
            )
        if sig not in signal.valid_signals():
            raise ValueError(f"flush_on_signals: 'signals' holds an invalid signal {sig}")
    installed: list[tuple[int, _Handler, Callable[[int, FrameType | None], None]]] = []
    for sig in sigs:
        previous = signal.getsignal(sig)
        if getattr(previous, "_summarylib_flush", False):
            continue  # already ours: chaining to ourselves would flush twice
        handler = _make_handler(previous, timeout, sync)
        signal.signal(sig, handler)
        installed.append((sig, previous, handler))

    def restore() -> None:
        for sig, previous, handler in installed:
            if signal.getsignal(sig) is handler:
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)

    return restore


def _make_handler(
    previous: _Handler, timeout: float, sync: bool
) -> Callable[[int, FrameType | None], None]:
    # Set by the helper thread: the next delivery was sent by it, after it
    # flushed, and only has to do what the signal did before.
    flushed = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if flushed.is_set():
            flushed.clear()
        elif any(w.held_by_this_thread() for w in live_writers()):
            # Interrupted inside a writer call (see the module docstring).
            threading.Thread(
                target=flush_then_redeliver,
                args=(signum,),
                name="summarylib-signal-flush",
                daemon=True,
            ).start()
            return
        else:
            for problem in flush_all(timeout, sync=sync):
                _report(problem)
        _chain(previous, handler, signum, frame)

    def flush_then_redeliver(signum: int) -> None:
        for problem in flush_all(timeout, sync=sync):
            _report(problem)
        flushed.set()
        _redeliver(signum)

    handler._summarylib_flush = True  # type: ignore[attr-defined]
    return handler


def _redeliver(signum: int) -> None:
    # From a helper thread: Python runs the handler on the main thread, at
    # its next bytecode (a blocking call there is interrupted, as for any
    # signal). Nothing to do if the main thread is gone: the process is ending.
    main = threading.main_thread()
    try:
        if hasattr(signal, "pthread_kill") and main.ident is not None:
            signal.pthread_kill(main.ident, signum)
        else:  # pragma: no cover - Windows: Python handles it on the main thread
            signal.raise_signal(signum)
    except (OSError, ValueError):
        pass


def _chain(
    previous: _Handler,
    ours: Callable[[int, FrameType | None], None],
    signum: int,
    frame: FrameType | None,
) -> None:
    if callable(previous):
        previous(signum, frame)
        return
    if previous == signal.SIG_IGN:
        return
    # SIG_DFL, or a handler Python does not know (None): let the default
    # action happen, exactly as without us.
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    # Still alive: the default action is to ignore this signal. Stay installed.
    signal.signal(signum, ours)


def _report(message: str) -> None:
    # Not warnings.warn: under -W error it would raise inside the handler.
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # nothing else can be done from a handler
        pass
