"""Merging a URL event file's objects never loses or repeats an event: not when a request
fails anywhere in the merge (a partial merged object is never visible, and the next run
finishes the job), and not when two merges run at once (threads and processes, on
``memory://`` and on S3 through moto's server on 127.0.0.1).

Faults come from ``faultymem://`` (tests/faulty_fsspec.py), a real fsspec filesystem that
shares ``memory://``'s objects and fails the request a test arms.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time

import pytest

import summarylib as sl
from summarylib.reader import read_columns
from tests import test_remote
from tests.test_compaction import log_flushed, object_names

fsspec = pytest.importorskip("fsspec")
from tests.faulty_fsspec import FaultyMemoryFileSystem  # noqa: E402

s3 = test_remote.s3
memory_logdir = test_remote.memory_logdir

EVENTS = 20


def finished_file(url: str, events: int = EVENTS) -> str:
    """A finished event file at the run ``url``, one object per event; its URL."""
    writer = sl.create_file_writer(url)
    for _ in log_flushed(writer, range(events)):
        pass
    writer.close()
    return writer.path  # type: ignore[return-value]


def loss_steps(url: str) -> list[int]:
    return read_columns(url)["."]["loss"].step.tolist()  # type: ignore[no-any-return]


@pytest.mark.parametrize(("fault", "after", "only", "visible"), [
    ("cat_file", 6, "", False),  # a download fails midway
    ("write", 0, "", False),  # the upload fails midway
    ("copy", 0, "", False),  # making the merged object visible fails
    ("info", 1, ".compacted", True),  # the merged object is visible; the check after fails
    ("rm", 0, "", True),  # the delete fails after deleting half the objects
])
def test_a_merge_failing_anywhere_loses_nothing_and_the_rerun_converges(
    memory_logdir: str, fault: str, after: int, only: str, visible: bool,
) -> None:
    from summarylib.reader.tailing import follow_scalars
    from summarylib.writer._compaction import compact

    url = f"{memory_logdir}/run"
    finished_file(url)
    follower = follow_scalars(memory_logdir, interval=0.0, from_start=True)
    seen = [p[2] for p in next(follower)]  # a `tail` that read the run before the merge
    faulty = memory_logdir.replace("memory://", "faultymem://")
    FaultyMemoryFileSystem.arm(fault, after=after, only=only)
    try:
        with pytest.raises(OSError, match="injected"):
            compact(faulty, grace_secs=0)
    finally:
        FaultyMemoryFileSystem.disarm()
    steps = loss_steps(url)
    assert sorted(set(steps)) == list(range(EVENTS))  # nothing lost
    if not visible:
        assert steps == list(range(EVENTS))  # and no partial merged object to read twice
        assert not any(n.endswith(".compacted") for n in object_names(url))
    seen += [p[2] for p in next(follower)]
    (report,) = compact(faulty, grace_secs=0)  # the re-run
    assert not isinstance(report, Exception) and report.status == "compacted"
    assert loss_steps(url) == list(range(EVENTS))
    assert [n.rsplit(".", 1)[1] for n in object_names(url)] == ["compacted", "end"]
    fs = fsspec.filesystem("memory")
    assert sorted(fs.find(fs._strip_protocol(url))) == sorted(  # no temporary, no lease
        fs._strip_protocol(f"{url}/{n}") for n in object_names(url))
    seen += [p[2] for p in next(follower)]
    assert seen == list(range(EVENTS))  # the follower read each event once


def test_an_older_partial_merged_object_is_removed_not_trusted(memory_logdir: str) -> None:
    """A merged object that holds only the start of what its numbered objects hold (what a
    failed merge of an earlier version left): its objects are all there, so it goes."""
    from summarylib.writer._compaction import compact
    from summarylib.writer._remote import merged_object_name, object_parts

    url = f"{memory_logdir}/run"
    path = finished_file(url)
    fs = fsspec.filesystem("memory")
    base = fs._strip_protocol(path)
    objects = sorted(p for p in fs.find(fs._strip_protocol(url)) if object_parts(p))
    partial = b"".join(fs.cat_file(p) for p in objects[:7])
    fs.pipe_file(merged_object_name(base, len(objects) - 1), partial)
    (report,) = compact(memory_logdir, grace_secs=0)
    assert not isinstance(report, Exception) and report.status == "compacted"
    assert loss_steps(url) == list(range(EVENTS))


def _race(merges: list[dict[str, object]], fs: object, base: str, path: str) -> int:
    """Run the merges at once, one thread each; how many found the file busy."""
    from summarylib.writer._compaction import CompactionBusy, compact_file

    barrier = threading.Barrier(len(merges))
    busy: list[int] = []
    errors: list[BaseException] = []

    def merge(kwargs: dict[str, object]) -> None:
        barrier.wait()
        try:
            compact_file(fs, base, path, **kwargs)  # type: ignore[arg-type]
        except CompactionBusy:
            busy.append(1)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=merge, args=(m,)) for m in merges]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return len(busy)


def _two_merges_trials(logdir: str, fs: object, strip: object, trials: int) -> int:
    """Trials of two merges of one file at once, one of them taking only the objects of
    ten minutes ago (a cron job) and one every object (``compact_on_close`` without grace):
    after them no event lost or twice, and a later merge leaves one merged object."""
    from summarylib.writer._compaction import compact_file

    rng = random.Random(1)
    busy = 0
    for trial in range(trials):
        url = f"{logdir}/t{trial}"
        path = finished_file(url)
        base = strip(path)  # type: ignore[operator]
        paths = sorted(strip(f"{url}/{n}") for n in object_names(url))  # type: ignore[operator]
        now = time.time()
        cut = rng.randint(3, EVENTS - 2)
        old = {p: now - 600 if i < cut else now for i, p in enumerate(paths)}
        merges: list[dict[str, object]] = [{"modified": old, "now": now}, {"grace_secs": 0}]
        rng.shuffle(merges)
        busy += _race(merges, fs, base, path)
        assert loss_steps(url) == list(range(EVENTS)), trial
        compact_file(fs, base, path, grace_secs=0)  # type: ignore[arg-type]
        assert loss_steps(url) == list(range(EVENTS)), trial
        assert object_names(url)[-1].endswith(".end")
        assert not any(n.rsplit(".", 1)[1].isdigit() for n in object_names(url))
    return busy


def test_two_merges_at_once_on_memory(memory_logdir: str) -> None:
    FaultyMemoryFileSystem.delay = 0.001  # each download waits: the merges overlap
    try:
        fs = fsspec.filesystem("faultymem")
        busy = _two_merges_trials(memory_logdir, fs, fsspec.filesystem("memory")._strip_protocol,
                                  trials=25)
    finally:
        FaultyMemoryFileSystem.disarm()
    assert busy >= 1  # the lease turned one merge away at least once


def test_two_merges_at_once_on_s3_threads_and_processes(s3: str) -> None:
    import s3fs

    fs = s3fs.S3FileSystem()
    # The lease is one conditional PUT (If-None-Match: *), which moto's server honours.
    assert _two_merges_trials("s3://logs/race", fs, fs._strip_protocol, trials=6) >= 1
    # Two `summarylib compact` processes on one logdir (a cron job and a second one).
    for trial in range(2):
        url = f"s3://logs/race-cli{trial}/run"
        finished_file(url)
        child = [sys.executable, "-m", "summarylib", "compact", url.rpartition("/")[0],
                 "--grace", "0"]
        procs = [subprocess.Popen(child, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=dict(os.environ), text=True) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode in (0, 1) for p in procs), outs
        assert loss_steps(url) == list(range(EVENTS)), outs
        assert [n.rsplit(".", 1)[1] for n in object_names(url)] == ["compacted", "end"], outs


def test_overlapping_merged_objects_are_repaired(memory_logdir: str) -> None:
    """Two merges that both started from the same listing (on a store without an exclusive
    create, both can take the lease) leave two merged objects, the later holding the earlier
    whole: readers read its events twice until the next merge removes the earlier one."""
    from summarylib.writer._compaction import compact
    from summarylib.writer._remote import merged_object_name, object_parts

    url = f"{memory_logdir}/run"
    path = finished_file(url, events=8)
    fs = fsspec.filesystem("memory")
    base = fs._strip_protocol(path)
    objects = sorted(p for p in fs.find(fs._strip_protocol(url)) if object_parts(p))
    data = [fs.cat_file(p) for p in objects]
    fs.pipe_file(merged_object_name(base, 3), b"".join(data[:4]))  # merge A: objects 0..3
    fs.pipe_file(merged_object_name(base, 6), b"".join(data[:7]))  # merge B: objects 0..6
    fs.rm(objects[:7])
    assert loss_steps(url) == [0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7]  # read twice
    (report,) = compact(memory_logdir, grace_secs=0)
    assert not isinstance(report, Exception) and report.merged_objects_removed == 1
    assert loss_steps(url) == list(range(8))


def test_a_merge_killed_between_copy_and_delete_is_finished_once_its_lease_expires(
    memory_logdir: str,
) -> None:
    """What a merge killed (SIGKILL) after making its merged object visible leaves: its
    lease (JSON: token and expiry, Unix time), a temporary object and every numbered object.
    The next merge waits for the lease to expire, then finishes the job."""
    import json

    from summarylib.writer._compaction import CompactionBusy, compact, side_object_name
    from summarylib.writer._remote import merged_object_name, object_parts

    url = f"{memory_logdir}/run"
    path = finished_file(url, events=6)
    fs = fsspec.filesystem("memory")
    base = fs._strip_protocol(path)
    objects = sorted(p for p in fs.find(fs._strip_protocol(url)) if object_parts(p))
    whole = b"".join(fs.cat_file(p) for p in objects)
    fs.pipe_file(side_object_name(base, "lease"),
                 json.dumps({"token": "killed", "expires": time.time() + 0.5}).encode())
    fs.pipe_file(side_object_name(base, f"{len(objects) - 1:012d}.merging-killed"), whole[:9])
    fs.pipe_file(merged_object_name(base, len(objects) - 1), whole)
    (busy,) = compact(memory_logdir, grace_secs=0)
    assert isinstance(busy, CompactionBusy) and "being merged by another" in str(busy)
    time.sleep(0.6)
    (report,) = compact(memory_logdir, grace_secs=0)
    assert not isinstance(report, Exception) and report.merged == len(objects)
    assert report.bytes_uploaded == 0  # the merged object was whole: nothing uploaded again
    assert loss_steps(url) == list(range(6))
    assert sorted(fs.find(fs._strip_protocol(url))) == sorted(  # lease and temporary gone
        fs._strip_protocol(f"{url}/{n}") for n in object_names(url))
