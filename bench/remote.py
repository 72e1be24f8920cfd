"""URL logdirs: what ``scalar()`` costs the caller on an ``s3://`` writer beside a local one,
and upload throughput beside a plain s3fs put of the same bytes, against moto's S3 server
on 127.0.0.1 (needs ``moto[server]`` and ``s3fs``).

    python bench/remote.py            # ~30 s
"""

from __future__ import annotations

import os
import socket
import statistics
import tempfile
import time


def main() -> None:
    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    import summarylib as sl

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    boto3.client("s3").create_bucket(Bucket="bench")
    try:
        local = sl.create_file_writer(tempfile.mkdtemp(), max_queue=1000)
        remote = sl.create_file_writer("s3://bench/run", max_queue=1000)

        def per_call(writer: object, n: int = 20_000) -> float:
            with writer.as_default():  # type: ignore[attr-defined]
                t0 = time.perf_counter()
                for i in range(n):
                    sl.scalar("loss", 0.5, step=i)
                return (time.perf_counter() - t0) / n * 1e6

        pairs = [(per_call(local), per_call(remote)) for _ in range(5)]
        local_us = statistics.median(a for a, _ in pairs)
        remote_us = statistics.median(b for _, b in pairs)
        ratio = statistics.median(b / a for a, b in pairs)

        # Upload throughput: 64 MiB of events through the writer (explicit flushes every
        # 4 MiB), beside s3fs putting the same 16 objects.
        payload = os.urandom(256)
        events = 64 * 4096
        writer = sl.create_file_writer("s3://bench/throughput", max_queue=100_000)
        output = writer._resource._output  # type: ignore[union-attr]
        t0 = time.perf_counter()
        with writer.as_default(step=0):
            for i in range(events):
                sl.text("t", payload, step=i)
                if i % 16384 == 16383:
                    writer.flush()
        writer.close()
        ours_s = time.perf_counter() - t0
        uploaded = output.bytes_uploaded
        fs = s3fs.S3FileSystem()
        chunk = os.urandom(4 << 20)
        t0 = time.perf_counter()
        for k in range(16):
            fs.pipe_file(f"bench/plain/part-{k}", chunk)
        plain_s = time.perf_counter() - t0
        from summarylib.writer._remote import open_object_output

        out = open_object_output("s3://bench/output", ".v2", None)
        t0 = time.perf_counter()
        for _ in range(16):
            out.write(chunk)
            out.push()
        output_s = time.perf_counter() - t0
        print(f"{'row':44} {'value':>12}")
        print(f"{'scalar() local, us/call':44} {local_us:12.2f}")
        print(f"{'scalar() s3://, us/call':44} {remote_us:12.2f}")
        print(f"{'s3:// / local (paired median)':44} {ratio:12.2f}")
        print(f"{'upload, summarylib output (16 x 4 MiB), MB/s':44} "
              f"{len(chunk) * 16 / 1e6 / output_s:12.1f}")
        print(f"{'upload, plain s3fs pipe_file (same), MB/s':44} "
              f"{len(chunk) * 16 / 1e6 / plain_s:12.1f}")
        print(f"{'end to end: 262k text events logged, MB/s':44} "
              f"{uploaded / 1e6 / ours_s:12.1f}")
        local.close()
        remote.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
