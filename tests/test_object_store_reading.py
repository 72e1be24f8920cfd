"""Reading URL logdirs as the store is now, and the command line on object stores: a process
re-reads a logdir that another client merged or added to, ``tail`` follows a run that
another client writes, errors are one line, storage options reach every command (moto's S3
server on 127.0.0.1)."""

from __future__ import annotations

import io
import re
import socket
import threading

import pytest

import summarylib as sl
from summarylib.reader import read_columns
from tests import test_remote
from tests.test_compaction import log_flushed
from tests.test_compaction_safety import finished_file

s3 = test_remote.s3
memory_logdir = test_remote.memory_logdir

# Another client than this process's readers use: what another process sees and does.
OTHER_CLIENT = {"skip_instance_cache": True}


def test_a_process_rereads_an_s3_logdir_after_a_merge_and_a_new_run(
    s3: str, capsys: pytest.CaptureFixture[str],
) -> None:
    import s3fs

    from summarylib.cli import main
    from summarylib.writer._compaction import compact_file

    path = finished_file("s3://logs/poll/run", events=5)
    assert read_columns("s3://logs/poll")["run"]["loss"].step.tolist() == list(range(5))
    assert main(["inspect", "s3://logs/poll"]) == 0
    # Seven objects (header, five flushes, end): one event file.
    assert "run 'run': 1 file(s), 6 record(s)" in capsys.readouterr().out
    other = s3fs.S3FileSystem(skip_instance_cache=True)
    compact_file(other, path.removeprefix("s3://"), path, grace_secs=0)
    assert read_columns("s3://logs/poll")["run"]["loss"].step.tolist() == list(range(5))
    with sl.create_file_writer("s3://logs/poll/run2", storage_options=OTHER_CLIENT) as w, \
            w.as_default():
        sl.scalar("loss", 1.0, step=0)
    assert sorted(read_columns("s3://logs/poll")) == ["run", "run2"]
    assert main(["verify", "s3://logs/poll"]) == 0
    assert "OK: 2 file(s), 8 valid record(s)" in capsys.readouterr().out


def test_tail_follows_an_s3_run_that_another_client_writes(s3: str) -> None:
    from summarylib.reader.tailing import tail

    writer = sl.create_file_writer("s3://logs/live/run", storage_options=OTHER_CLIENT)
    with writer.as_default():
        sl.scalar("loss", 0.0, step=0)
    writer.flush()

    def write_the_rest() -> None:
        with writer.as_default():
            for step in range(1, 60):
                sl.scalar("loss", float(step), step=step)
                writer.flush()  # one object per step
        writer.close()

    thread = threading.Thread(target=write_the_rest)
    calls = 0
    after_close = 0

    def stop() -> bool:
        nonlocal calls, after_close
        calls += 1
        if calls == 2:  # tail has read what was there (step 0): the run goes on
            thread.start()
        if calls > 2 and not thread.is_alive():
            after_close += 1
        return after_close > 1 or calls > 2000

    out = io.StringIO()
    tail("s3://logs/live", out, interval=0.02, stop=stop)
    thread.join()
    steps = [int(line.split()[2]) for line in out.getvalue().splitlines()]
    assert steps == list(range(1, 60))


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_cli_url_errors_are_one_line_and_storage_options_reach_every_command(
    s3: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import s3fs

    from summarylib.cli import main

    def error_of(args: list[str]) -> str:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err  # no traceback
        return err

    for command in (["inspect"], ["verify"], ["tail"], ["compact"],
                    ["export", "-o", "-"], ["plot", "--tag", "loss"]):
        err = error_of([command[0], "s3://nosuchbucket/logs", *command[1:]])
        assert "the bucket 'nosuchbucket' of s3://nosuchbucket/logs does not exist" in err
    assert "nothing at s3://logs/nothing" in error_of(["inspect", "s3://logs/nothing"])

    with sl.create_file_writer("s3://logs/ep/run") as w, w.as_default():
        sl.scalar("loss", 1.0, step=0)
    # Without the environment's endpoint: the command line's.
    for name in ("AWS_ENDPOINT_URL", "S3_ENDPOINT"):
        monkeypatch.delenv(name)
    s3fs.S3FileSystem.clear_instance_cache()
    for option in (["--endpoint-url", s3], ["--storage-option", f"endpoint_url={s3}"]):
        assert main(["inspect", "s3://logs/ep", *option]) == 0
        assert re.search(r"loss\s+scalars\s+1", capsys.readouterr().out)
    assert main(["compact", "s3://logs/ep", "--grace", "0", "--endpoint-url", s3]) == 0
    assert "3 objects -> 2" in capsys.readouterr().out  # header and step merged; the end

    # An endpoint where nothing answers: said so, not "the bucket does not exist".
    dead = _closed_port()
    once = ["--storage-option", 'config_kwargs={"retries": {"max_attempts": 1}}']
    for command in ("inspect", "tail", "compact"):
        err = error_of([command, "s3://logs/ep", "--endpoint-url", dead, *once])
        assert "could not reach the object store of 's3://logs/ep'" in err
        assert "does not exist" not in err
    with pytest.raises(OSError, match="could not reach the object store of 's3://logs/x'"):
        sl.create_file_writer("s3://logs/x", storage_options={
            "endpoint_url": dead, "config_kwargs": {"retries": {"max_attempts": 1}}})
    assert "KEY=VALUE" in error_of(["inspect", "s3://logs/ep", "--storage-option", "oops"])


def test_compact_on_close_says_what_it_left(memory_logdir: str) -> None:
    url = f"{memory_logdir}/short"
    writer = sl.create_file_writer(url, compact_on_close=True)
    for _ in log_flushed(writer, range(3)):
        pass
    with pytest.warns(RuntimeWarning, match=(
            r"compact_on_close merged nothing: left 4 objects of memory://\S+short\S+ as they "
            r"are: they were uploaded less than 60 s before close")):
        writer.close()
    assert read_columns(url)["."]["loss"].step.tolist() == [0, 1, 2]


def test_a_read_that_a_merge_overtakes_reads_the_merged_object(memory_logdir: str) -> None:
    """A merge deletes the objects a reader listed, after it listed them: the reader lists the
    run again and reads the merged object instead (every event once, no error)."""
    from summarylib.writer._compaction import compact
    from tests.faulty_fsspec import FaultyMemoryFileSystem

    finished_file(f"{memory_logdir}/run", events=6)
    FaultyMemoryFileSystem.before_download = lambda: compact(memory_logdir, grace_secs=0)
    try:
        faulty = memory_logdir.replace("memory://", "faultymem://")
        assert read_columns(faulty)["run"]["loss"].step.tolist() == list(range(6))
    finally:
        FaultyMemoryFileSystem.disarm()
