"""A training loop on an s3:// logdir that reports each step whose flush() returned.

Run in a child process that the test kills with SIGKILL at a random moment: every step
it reported must be in the bucket. Imported by the forkserver ahead of time, so each
child starts in milliseconds.
"""

from __future__ import annotations

import os
import time

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
