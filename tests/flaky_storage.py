"""A randomized check of the loss promise against storage that fails now and then.

Threads log scalars and flush at random while the output's writes fail at random. The
promise checked, for every op that returned True:

* its event is in the output exactly once, or
* the first ``flush()``/``close()`` of every thread that began after the op returned raised,
  unless that thread had been told already, by a call of its own that raised after the op
  began.

Used by tests/test_durability.py (a few trials) and bench/flaky_storage.py (hundreds).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import summarylib as sl
from summarylib.proto import event_pb2
from summarylib.reader.records import RecordReader


class FlakyOutput(sl.MemoryOutput):
    """Writes fail with probability ``p`` (nothing of a failed write is kept)."""

    def __init__(self, p: float, seed: int) -> None:
        super().__init__(name="/flaky/events.out.tfevents.test")
        self._random = random.Random(seed)
        self._p = p
        self.failures = 0

    def write(self, data: bytes) -> None:
        if self.getvalue() and self._random.random() < self._p:
            self.failures += 1
            raise OSError(5, "injected failure")
        super().write(data)


@dataclass
class Call:
    """One op, flush or close of a thread, with when it began and ended."""

    kind: str  # "op", "flush", "close"
    began: int
    ended: int
    raised: bool
    event: tuple[str, int] | None = None  # an acknowledged op's (tag, step)


@dataclass
class TrialResult:
    acknowledged: int = 0
    lost: int = 0  # acknowledged, not in the file, and covered by a raise as promised
    hidden: list[str] = field(default_factory=list)  # promise broken
    duplicates: int = 0
    failures: int = 0


def timed(kind: str, call: Callable[[], object]) -> Call:
    """Run a flush or close and note when it began and ended, and whether it raised."""
    began = time.monotonic_ns()
    try:
        call()
    except sl.SummaryError:
        return Call(kind, began, time.monotonic_ns(), True)
    return Call(kind, began, time.monotonic_ns(), False)


def _events_in(data: bytes) -> list[tuple[str, int]]:
    import tempfile

    out = []
    with tempfile.NamedTemporaryFile(suffix=".tfevents") as f:
        f.write(data)
        f.flush()
        for record in RecordReader(f.name):
            event = event_pb2.Event.FromString(record.payload)
            for value in event.summary.value:
                out.append((value.tag, event.step))
    return out


def run_trial(seed: int, *, threads: int = 4, steps: int = 60, p: float = 0.15) -> TrialResult:
    rng = random.Random(seed)
    output = FlakyOutput(p, seed)
    writer = sl.create_writer(output, max_queue=rng.choice([0, 1, 5, 50]), on_error="raise")
    calls: dict[int, list[Call]] = {i: [] for i in range(threads + 1)}
    start = threading.Barrier(threads)

    def work(index: int) -> None:
        local = random.Random(seed * 100 + index)
        mine = calls[index]
        writer.set_as_default(step=0)
        start.wait()
        for step in range(steps):
            began = time.monotonic_ns()
            try:
                ok = sl.scalar(f"t{index}", float(step), step=step)
                mine.append(Call("op", began, time.monotonic_ns(), False,
                                 (f"t{index}", step) if ok else None))
            except sl.SummaryError:
                mine.append(Call("op", began, time.monotonic_ns(), True))
            if local.random() < 0.2:
                mine.append(timed("flush", writer.flush))
            if local.random() < 0.3:
                time.sleep(local.random() / 2000)
        mine.append(timed("flush", writer.flush))

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60)
    calls[threads].append(timed("close", writer.close))

    written = _events_in(output.getvalue())
    result = TrialResult(failures=output.failures)
    result.duplicates = len(written) - len(set(written))
    present = set(written)
    for thread_calls in calls.values():
        for call in thread_calls:
            if call.event is None:
                continue
            result.acknowledged += 1
            if call.event in present:
                continue
            result.lost += 1
            for other, other_calls in calls.items():
                # The first flush/close of `other` that began after the op returned covers
                # the event: it must raise, unless `other` was told in between, by a call
                # that raised and ended after the op began (an event is appended at some
                # moment inside its op's call, so only these bounds are known).
                told = False
                for later in other_calls:
                    if later.raised and later.ended > call.began:
                        told = True
                    if later.began <= call.ended or later.kind == "op":
                        continue
                    if not later.raised and not told:
                        result.hidden.append(
                            f"seed {seed}: {call.event} lost, but thread {other}'s "
                            f"{later.kind} returned normally")
                    break
    return result
