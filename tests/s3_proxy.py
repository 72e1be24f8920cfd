"""An HTTP proxy in front of moto's S3 server that can play an outage.

Used by tests/test_remote.py and by the child processes of tests/object_store_child.py
(which start their own, so that the outage is timed by the code under test's thread).
"""

from __future__ import annotations

import http.client
import http.server
import threading
import time
import urllib.parse


class FlakyProxy:
    """An HTTP proxy to the S3 server that answers 503 while ``failing`` is set.

    ``delay`` seconds pass before a 503 is sent: an upload that fails takes a while, as
    one to a store that is down does, so other threads run meanwhile.
    """

    def __init__(self, target: str, delay: float = 0.0) -> None:
        self.failing = False
        self.refused = 0
        proxy = self
        host, port = urllib.parse.urlsplit(target).netloc.split(":")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # answers botocore's "Expect: 100-continue"

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.failing:
                    proxy.refused += 1
                    if delay:
                        time.sleep(delay)
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "expect"}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
