"""Latency of ``scalar()`` while the output stalls, and what happens when the buffer fills.

A custom :class:`summarylib.Output` sleeps on every ``write`` (200 ms: a slow
network file system, a stuck disk). The writer's background thread is the
only one that writes, so the caller should not notice while the buffer has
room. The buffer is bounded in bytes (``max_buffer_bytes``, default 16 MiB);
when it is full the caller waits for the thread, and no event is dropped.
Both halves are measured: per-call latency with room, and a deliberately
tiny buffer to show the waits and count every record that reached the output.
"""

from __future__ import annotations

import statistics
import struct
import time
from typing import Any


def _make_output(stall_s: float) -> Any:
    import summarylib as sl

    class StalledOutput(sl.Output):
        """Keeps records in memory, after sleeping ``stall_s`` on every write."""

        name = "<stalled output>"

        def __init__(self) -> None:
            self.buf = bytearray()
            self.writes = 0

        def write(self, data: bytes) -> None:
            time.sleep(stall_s)
            self.buf += data
            self.writes += 1

    return StalledOutput()


def count_records(data: bytes | bytearray) -> int:
    """Whole TFRecords in ``data`` (lengths only; CRCs are the reader's job)."""
    pos = count = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += n + 16
        if pos > len(data):
            break
        count += 1
    return count


def percentile(sorted_ns: list[int], q: float) -> float:
    """The q-quantile (0..1) of sorted values, nearest rank, in µs."""
    i = min(len(sorted_ns) - 1, max(0, round(q * len(sorted_ns)) - 1))
    return sorted_ns[i] / 1000.0


def _timed_calls(n: int, out: Any, **writer_kw: Any) -> tuple[list[int], float, int, Any]:
    import summarylib as sl

    w = sl.create_writer(out, **writer_kw)
    scalar = sl.scalar
    clock = time.perf_counter_ns
    lat = [0] * n
    with w.as_default():
        scalar("loss", 0.0, 0)  # first event of the tag (metadata), not timed
        t0 = time.perf_counter()
        for i in range(n):
            a = clock()
            scalar("loss", i * 0.001, i)
            lat[i] = clock() - a
        loop_s = time.perf_counter() - t0
        res = w._resource
        assert res is not None
        bound = res._max_buffer_bytes  # the bound in force
    c0 = time.perf_counter()
    w.close()
    return lat, loop_s, bound, time.perf_counter() - c0


def run(n: int = 50_000, stall_s: float = 0.2, reps: int = 5) -> dict[str, Any]:
    """Median over ``reps`` of p50/p99/max per ``scalar()`` with a stalling output."""
    from summarylib.writer._settings import DEFAULT_MAX_BUFFER_BYTES

    runs = []
    for _ in range(reps):
        out = _make_output(stall_s)
        lat, loop_s, _bound, close_s = _timed_calls(n, out)
        lat.sort()
        runs.append(
            {
                "p50_us": percentile(lat, 0.50),
                "p99_us": percentile(lat, 0.99),
                "p999_us": percentile(lat, 0.999),
                "max_us": lat[-1] / 1000.0,
                "loop_s": loop_s,
                "close_s": close_s,
                "stalled_writes": out.writes,
                "records": count_records(out.buf),
                "expected_records": n + 2,  # file version, first scalar, n timed
            }
        )
    result: dict[str, Any] = {
        "n": n,
        "stall_ms": stall_s * 1000,
        "reps": reps,
        "max_buffer_bytes": DEFAULT_MAX_BUFFER_BYTES,
        "runs": runs,
    }
    for k in ("p50_us", "p99_us", "p999_us", "max_us", "loop_s", "close_s"):
        result[k] = statistics.median(r[k] for r in runs)
    result["all_records_written"] = all(r["records"] == r["expected_records"] for r in runs)
    result["full_buffer"] = full_buffer()
    return result


def full_buffer(n: int = 5_000, stall_s: float = 0.05, bound: int = 32 * 1024) -> dict[str, Any]:
    """A tiny buffer and a stalling output: the caller waits; every event lands."""
    out = _make_output(stall_s)
    lat, loop_s, bound_used, close_s = _timed_calls(n, out, max_buffer_bytes=bound)
    waits = sum(1 for x in lat if x > stall_s * 1e9 / 4)
    lat.sort()
    return {
        "n": n,
        "stall_ms": stall_s * 1000,
        "max_buffer_bytes": bound_used,
        "calls_that_waited": waits,
        "p50_us": percentile(lat, 0.50),
        "max_us": lat[-1] / 1000.0,
        "loop_s": loop_s,
        "close_s": close_s,
        "records": count_records(out.buf),
        "expected_records": n + 2,
        "nothing_dropped": count_records(out.buf) == n + 2,
    }
