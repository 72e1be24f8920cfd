"""URL logdirs against moto's S3 server on 127.0.0.1 (needs ``moto[server]`` and ``s3fs``):

* what ``scalar()`` costs the caller on an ``s3://`` writer beside a local one, and upload
  throughput beside a plain s3fs put of the same bytes;
* objects per run-hour at default settings: a training loop logs to a writer with today's
  policy and one with the former 5 s policy for the same ``--window`` seconds;
* TensorBoard's load time (``--load_fast=false``, the loader that reads ``s3://``) of
  1,500 scalars written by 300 flushes: as the 302 objects the writer made, once merged by
  ``summarylib compact``, and as one object holding the same bytes; with the bytes the
  merge uploaded.

    python bench/remote.py                  # ~4 minutes
    python bench/remote.py --skip-pieces    # without the slow 302-object load (~1 minute)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import time


def objects_per_hour(window: float) -> tuple[float, float]:
    """Objects per run-hour of a loop logging 5 scalars every 10 ms for ``window`` seconds
    at default settings, and with the former policy (an upload at most every 5 s)."""
    import summarylib as sl
    from summarylib.writer._remote import open_object_output

    now = sl.create_file_writer("s3://bench/hour-now")
    before = sl.create_writer(open_object_output("s3://bench/hour-before", ".v2", None,
                                                 min_upload_secs=5.0))
    t0 = time.monotonic()
    step = 0
    while time.monotonic() - t0 < window:
        for writer in (now, before):
            with writer.as_default(step=step):
                for k in range(5):
                    sl.scalar(f"metric{k}", float(step))
        step += 1
        time.sleep(0.01)
    elapsed = time.monotonic() - t0
    # Objects made while the run went on: the header's and the final ones' excluded.
    counts = [writer._resource.output.objects - 1  # type: ignore[union-attr]
              for writer in (now, before)]
    now.close()
    before.close()
    return counts[0] / elapsed * 3600, counts[1] / elapsed * 3600


def tensorboard_load_secs(logdirs: list[str], tags: int, steps: int,
                          repeats: int) -> list[float]:
    """Median seconds TensorBoard's loader (the multiplexer its server runs, here in this
    process) takes to load each run from nothing, the runs taken in turn (so that a busy
    machine slows them alike); checks it saw every point exactly once."""
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    times: list[list[float]] = [[] for _ in logdirs]
    for _ in range(repeats):
        for logdir, took in zip(logdirs, times, strict=True):
            mux = plugin_event_multiplexer.EventMultiplexer(
                tensor_size_guidance={"scalars": 0})
            t0 = time.perf_counter()
            mux.AddRunsFromDirectory(logdir)
            mux.Reload()
            took.append(time.perf_counter() - t0)
            seen = [e.step for k in range(tags) for e in mux.Tensors(".", f"metric{k}")]
            assert sorted(seen) == sorted(list(range(steps)) * tags), logdir
    return [statistics.median(took) for took in times]


def loading(skip_pieces: bool, steps_per_flush: int = 1,
            repeats: int = 9) -> dict[str, float]:
    """TensorBoard's load time of one run as objects, merged, and as one object: 300
    flushes of ``steps_per_flush`` steps of 5 scalars."""
    import s3fs

    import summarylib as sl
    from summarylib.writer._compaction import compact

    fs = s3fs.S3FileSystem()
    top = f"bench/load{steps_per_flush}"
    steps = 300 * steps_per_flush
    writer = sl.create_file_writer(f"s3://{top}/pieces")
    with writer.as_default():
        for step in range(steps):
            for k in range(5):
                sl.scalar(f"metric{k}", float(step), step=step)
            if step % steps_per_flush == steps_per_flush - 1:
                writer.flush()
    writer.close()
    pieces = sorted(fs.find(f"{top}/pieces"))
    written = sum(fs.size(p) for p in pieces)
    for run in ("merged", "single"):  # the same objects in runs of their own, to merge
        for p in pieces:
            fs.pipe_file(p.replace("/pieces/", f"/{run}/"), fs.cat_file(p))
    one = b"".join(fs.cat_file(p) for p in pieces)
    fs.pipe_file(f"{top}/one/" + pieces[0].rpartition("/")[2].rsplit(".", 1)[0], one)
    (report,) = compact(f"s3://{top}/merged", grace_secs=0)
    compact(f"s3://{top}/single", grace_secs=0, keep_end=False)
    out = {"objects": float(len(pieces)), "written": float(written),
           "merge_uploaded": float(report.bytes_uploaded),  # type: ignore[union-attr]
           "merged_objects": float(len(fs.find(f"{top}/merged"))),
           "single_objects": float(len(fs.find(f"{top}/single"))),
           "scalars": float(steps * 5)}
    runs = ("one", "merged", "single")
    secs = tensorboard_load_secs([f"s3://{top}/{run}" for run in runs], 5, steps, repeats)
    out.update({f"{run}_s": t for run, t in zip(runs, secs, strict=True)})
    if not skip_pieces:
        (out["pieces_s"],) = tensorboard_load_secs([f"s3://{top}/pieces"], 5, steps, 1)
    return out


def print_loading(load: dict[str, float]) -> None:
    print(f"{'scalars in the run':44} {load['scalars']:12.0f}")
    print(f"{'objects of 300 flushes (header, end)':44} {load['objects']:12.0f}")
    print(f"{'objects once merged':44} {load['merged_objects']:12.0f}")
    print(f"{'bytes uploaded, writer + merge / events':44} "
          f"{(load['written'] + load['merge_uploaded']) / load['written']:12.2f}")
    print(f"{'TensorBoard load, one object, s':44} {load['one_s']:12.2f}")
    print(f"{'TensorBoard load, merged (+ empty end), s':44} {load['merged_s']:12.2f}")
    print(f"{'  merged / one object':44} {load['merged_s'] / load['one_s']:12.2f}")
    print(f"{'TensorBoard load, --no-live-readers, s':44} {load['single_s']:12.2f}")
    print(f"{'  (objects)':44} {load['single_objects']:12.0f}")
    print(f"{'  --no-live-readers / one object':44} "
          f"{load['single_s'] / load['one_s']:12.2f}")
    if "pieces_s" in load:
        print(f"{'TensorBoard load, 302 objects, s':44} {load['pieces_s']:12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=130.0,
                        help="seconds of logging for the objects-per-hour rows")
    parser.add_argument("--skip-pieces", action="store_true",
                        help="skip TensorBoard's load of the unmerged 302 objects")
    parser.add_argument("--only-load", action="store_true",
                        help="only the merge and TensorBoard load rows")
    args = parser.parse_args()
    import boto3
    import s3fs
    from moto.server import ThreadedMotoServer

    import summarylib as sl

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint,
                      # TensorBoard's own S3 client (boto3) reads these.
                      S3_ENDPOINT=endpoint, S3_USE_HTTPS="0", S3_VERIFY_SSL="0")
    boto3.client("s3").create_bucket(Bucket="bench")
    try:
        if args.only_load:
            print_loading(loading(args.skip_pieces))
            print_loading(loading(True, steps_per_flush=50, repeats=3))
            return
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
        output = writer._resource.output  # type: ignore[union-attr]
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
        per_hour_now, per_hour_before = objects_per_hour(args.window)
        print(f"{'objects per run-hour, defaults (60 s)':44} {per_hour_now:12.0f}")
        print(f"{'objects per run-hour, former 5 s policy':44} {per_hour_before:12.0f}")
        print_loading(loading(args.skip_pieces))
        print_loading(loading(True, steps_per_flush=50, repeats=3))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
