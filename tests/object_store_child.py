"""A training loop on an s3:// logdir that reports each step whose flush() returned.

Run in a child process that the test kills with SIGKILL at a random moment: every step
it reported must be in the bucket. Imported by the forkserver ahead of time, so each
child starts in milliseconds.
"""

from __future__ import annotations

import os
import time
from typing import Literal

import summarylib as sl


def train(url: str, endpoint: str, report: str) -> None:
    options = {"key": "testing", "secret": "testing",
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    writer = sl.create_file_writer(url, max_queue=5, flush_millis=100,
                                   storage_options=options)
    with writer.as_default():
        for step in range(100_000):
            for k in range(12):
                sl.scalar(f"metric{k}", float(step), step=step)
            time.sleep(0.02)  # the step's work: the policy moves events meanwhile
            writer.flush()
            os.write(fd, f"{step}\n".encode())


def flush_through_outages(url: str, endpoint: str, report: str, kill_after: int,
                          on_error: Literal["raise", "warn"]) -> None:
    """Thread B logs and flushes each step while thread A logs all the time; every other
    pair of steps the store is down (a proxy answers 503, after a moment). A flush() that
    returns normally, with no warning to its thread, is reported as ``step outage`` (and
    each call of A that raised or warned as a line of ``report + ".a"``); the
    ``kill_after``-th one, or one that returned while the store was down (its bytes can
    only be held back), is followed at once by SIGKILL of this process.

    Thread A's op calls take the parked upload error as the next call of any thread
    does; B's flush() was served by the failed round all the same and must say so.
    """
    import signal
    import threading
    import warnings

    from summarylib.writer import _remote as remote
    from tests.s3_proxy import FlakyProxy

    remote.DEFAULT_RETRIES = 0  # a failed upload is reported at once, not retried
    proxy = FlakyProxy(endpoint, delay=0.02)
    options = {"key": "testing", "secret": "testing",
               "client_kwargs": {"endpoint_url": proxy.url, "region_name": "us-east-1"},
               "config_kwargs": {"retries": {"max_attempts": 1}}}
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    warned = threading.local()

    def show(*args: object, **kwargs: object) -> None:  # warnings reach the calling thread
        warned.any = True

    warnings.simplefilter("always")
    warnings.showwarning = show
    writer = sl.create_file_writer(url, max_queue=10**6, flush_millis=10**9,
                                   storage_options=options, on_error=on_error)
    writer.flush()  # the file's first record

    told_a = os.open(report + ".a", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def log() -> None:  # thread A, until the process is killed
        with writer.as_default():
            for i in range(10**9):
                warned.any = False
                try:
                    sl.scalar("a", float(i), step=i)
                except sl.WriteFailedError:
                    warned.any = True
                if warned.any:  # this call took a report: one line each
                    os.write(told_a, b"a\n")
                time.sleep(0.0002)

    a = threading.Thread(target=log, daemon=True)
    a.start()
    returned = 0
    with writer.as_default():  # thread B
        for step in range(10**9):
            outage = step % 4 >= 2
            proxy.failing = outage
            sl.scalar("b", float(step), step=step)
            warned.any = False
            try:
                writer.flush()
            except sl.WriteFailedError:
                continue
            if warned.any:
                continue
            os.write(fd, f"{step} {int(outage)}\n".encode())
            returned += 1
            if returned == kill_after or outage:  # a return while down: the worst moment
                os.kill(os.getpid(), signal.SIGKILL)
