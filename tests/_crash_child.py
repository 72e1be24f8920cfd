"""Child processes for the crash tests (tests/test_crash.py).

``python -m tests._crash_child server`` is a warm *fork server*: it imports
summarylib and numpy once, then for every command line on stdin

    run <logdir> <seed>     fork a logging child; reply ``pid <pid>``
    reap <pid>              wait for that child; reply ``status <pid> <wait status>``

A child logs events with step 0, 1, 2, ... (scalars, multi-value scalars and
large tensors that span several write blocks) and flushes at random points.
After each ``flush()`` returns it appends the number of events logged so far
to ``<logdir>/acks``: every event counted there must survive a SIGKILL.

The server reaps a child only when asked, so the parent can SIGKILL a pid
without any risk of it having been reused. A child stops logging by itself
after ``CHILD_LIFETIME_SECS`` (it then waits, unreaped, for the parent).
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time

import numpy as np

import summarylib as sl

CHILD_LIFETIME_SECS = 30.0
# Blobs up to 32 KB: several fill a 96 KiB write block, so a kill can land in
# the middle of a multi-block write (and of a single large write() call);
# bigger ones only slow down the pure-Python CRC of TensorBoard's loader.
MAX_BLOB_FLOATS = 8_000


def child(logdir: str, seed: int) -> None:
    """Log until killed; ack every completed flush in ``<logdir>/acks``."""
    rng = random.Random(seed)
    os.makedirs(logdir, exist_ok=True)
    ack = os.open(os.path.join(logdir, "acks"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    writer = sl.create_file_writer(
        logdir,
        max_queue=rng.choice([0, 1, 10, 100, 10**6]),
        flush_millis=rng.choice([1, 5, 50, 10**9]),
        max_buffer_bytes=rng.choice([4096, 1 << 16, 16 << 20]),
    )
    writer.set_as_default()
    flush_p = rng.choice([0.002, 0.02, 0.2])
    pause_p = rng.choice([0.0, 0.01, 0.05])
    blob_p = rng.choice([0.0, 0.005, 0.02])
    step = 0
    deadline = time.monotonic() + CHILD_LIFETIME_SECS
    while time.monotonic() < deadline:
        r = rng.random()
        if r < blob_p:
            n = rng.randint(1, MAX_BLOB_FLOATS)
            sl.write("blob", np.full(n, step, dtype=np.float32), step=step)
        elif r < 0.1:
            sl.scalars({"a": float(step), "b": -float(step)}, step=step)
        else:
            sl.scalar("x", float(step), step=step)
        step += 1
        if rng.random() < flush_p:
            writer.flush()
            os.write(ack, b"%d\n" % step)
        if rng.random() < pause_p:
            time.sleep(rng.random() * 0.002)
    # Never exit by ourselves before the parent kills us (see the docstring).
    time.sleep(CHILD_LIFETIME_SECS)
    os._exit(0)


def warm_up() -> None:
    """Load everything a child needs, and leave no thread running."""
    with tempfile.TemporaryDirectory() as d:
        w = sl.create_file_writer(d)
        with w.as_default(step=0):
            sl.scalar("x", 1.0)
            sl.scalars({"a": 1.0})
            sl.write("blob", np.zeros(3, dtype=np.float32))
        w.close()


def server() -> None:
    warm_up()
    out = sys.stdout
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "run":
            logdir, seed = args[0], int(args[1])
            pid = os.fork()
            if pid == 0:
                try:
                    child(logdir, seed)
                finally:
                    os._exit(1)
            print(f"pid {pid}", file=out, flush=True)
        elif cmd == "reap":
            pid = int(args[0])
            _, status = os.waitpid(pid, 0)
            print(f"status {pid} {status}", file=out, flush=True)
        else:
            print(f"error unknown command {cmd!r}", file=out, flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["server"]:
        server()
    else:
        sys.exit("usage: python -m tests._crash_child server")
