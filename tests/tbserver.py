"""Run the real TensorBoard (Rust data server, ``--load_fast=true``) on 127.0.0.1 in tests.

Polling is bounded and the process is always stopped, even when a test fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TensorBoardServer:
    """``with TensorBoardServer(logdir) as tb: tb.get_json("/data/runs")``."""

    def __init__(self, logdir: str | os.PathLike[str], *, load_fast: bool = True,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.logdir = os.fspath(logdir)
        self.load_fast = load_fast
        self.extra_args = extra_args
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        # A URL logdir (s3://...) has no local parent: the log goes to the temp directory.
        parent = Path(tempfile.gettempdir()) if "://" in self.logdir else Path(self.logdir).parent
        self.log_path = parent / f"tensorboard-{os.getpid()}-{id(self)}.log"

    def __enter__(self) -> TensorBoardServer:
        for _attempt in range(3):  # the port may be taken between probe and bind
            self.port = free_port()
            log = open(self.log_path, "wb")
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tensorboard.main", "--logdir", self.logdir,
                 f"--load_fast={'true' if self.load_fast else 'false'}",
                 "--host", "127.0.0.1", "--port", str(self.port), "--reload_interval", "1",
                 *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT,
            )
            log.close()
            if self._wait_listening(60):
                return self
            self.stop()
        raise RuntimeError(f"tensorboard did not start: {self.log_text()}")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def _wait_listening(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                self.get("/data/runs")
                return True
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        return False

    def get(self, path: str, **params: Any) -> bytes:
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()  # type: ignore[no-any-return]

    def get_json(self, path: str, **params: Any) -> Any:
        return json.loads(self.get(path, **params))

    def post_json(self, path: str, body: Any) -> Any:
        """POST ``body`` as JSON (the hparams plugin's API); the answer parsed."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())

    def poll(self, fetch: Callable[[], Any], ready: Callable[[Any], bool],
             timeout: float = 60.0) -> Any:
        """Call ``fetch`` until ``ready(result)``; bounded by ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = fetch()
                if ready(last):
                    return last
            except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                pass
            time.sleep(0.25)
        raise AssertionError(f"tensorboard never served the data; last answer: {last!r}\n"
                             f"{self.log_text()}")
