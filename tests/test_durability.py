"""Nothing acknowledged is lost without a report: flaky storage, several threads."""

from __future__ import annotations

import os
import threading

import pytest

import summarylib as sl
from tests.flaky_storage import run_trial


def test_a_flush_reports_a_loss_that_another_thread_was_told_first() -> None:
    # Thread B logs; thread A logs and flushes and is told that the batch with both events
    # failed. B's flush() and close() both cover B's lost event: neither returns normally.
    from tests.test_threads import GateOutput

    out = GateOutput()
    w = sl.create_writer(out, max_queue=10**6)
    logged_b = threading.Event()
    a_reported = threading.Event()
    outcome: dict[str, object] = {}

    def thread_b() -> None:
        w.set_as_default(step=0)
        sl.scalar("b", 1.0)
        logged_b.set()
        assert a_reported.wait(10)
        for call in ("flush", "close"):
            try:
                getattr(w, call)()
                outcome[call] = None
            except sl.WriteFailedError as e:
                outcome[call] = e

    b = threading.Thread(target=thread_b)
    b.start()
    assert logged_b.wait(10)
    w.set_as_default(step=0)
    sl.scalar("a", 1.0)
    out.fail_with = 5
    out.gate.set()
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    a_reported.set()
    b.join(10)
    assert isinstance(outcome.get("flush"), sl.WriteFailedError), outcome
    # B was told by its flush; its close covers nothing new.
    assert outcome.get("close") is None, outcome


def test_a_thread_hears_of_a_loss_recorded_after_its_last_report() -> None:
    # The thread is told of one loss; a second batch of its own events is lost while the
    # first error is still parked. Its next flush() covers the second loss and raises.
    from tests.test_threads import GateOutput

    out = GateOutput()
    w = sl.create_writer(out, max_queue=0)  # every event written at once
    w.set_as_default(step=0)
    out.fail_with = 5
    out.gate.set()
    sl.scalar("first", 1.0)
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    assert sl.scalar("second", 2.0)  # acknowledged, then its write fails too
    with pytest.raises(sl.WriteFailedError):
        w.flush()
    out.fail_with = None
    assert sl.scalar("third", 3.0)
    w.flush()  # nothing new was lost: returns normally
    w.close()


TRIALS = int(os.environ.get("SUMMARYLIB_FLAKY_TRIALS", "12"))


@pytest.mark.parametrize("seed", range(TRIALS))
def test_flaky_storage_never_hides_a_loss(seed: int) -> None:
    result = run_trial(seed)
    assert result.duplicates == 0
    assert not result.hidden, result.hidden[:5]
    assert result.acknowledged > 0
