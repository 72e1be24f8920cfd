"""multiprocessing: fork, forkserver and spawn children; pickled writers; distributed patterns.

Children leave without flushing or closing: a "fork" or "forkserver" child
ends with ``os._exit()`` (no atexit), so what reaches its file shows that
summarylib closes writers at the end of a multiprocessing child too.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import re
import signal
from pathlib import Path

import pytest

import summarylib as sl
from summarylib.reader import iter_events, read_scalars
from tests import _mp_children as children
from tests.helpers import tb_events

TIMEOUT = 120.0


def _files(logdir: Path) -> list[Path]:
    return sorted(p for p in logdir.iterdir() if "tfevents" in p.name)


def _pid_of(path: Path) -> int:
    m = re.search(r"\.(\d+)\.[a-z]?\d+\.v2$", path.name)  # pid, then the counter (a64: two digits)
    assert m, path.name
    return int(m[1])


def _series(path: Path) -> list[tuple[str, int]]:
    ours = [(v.tag, e.step) for e in iter_events(path) for v in e.summary.value]
    assert ours == [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value]
    return ours


def _run(ctx: mp.context.BaseContext, target: object, args: tuple[object, ...]) -> None:
    p = ctx.Process(target=target, args=args)  # type: ignore[attr-defined]
    p.start()
    p.join(TIMEOUT)
    if p.is_alive():
        p.kill()
        p.join(TIMEOUT)
    assert p.exitcode == 0


def test_fork_child_logging_to_the_inherited_default_writer(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    with w.as_default():
        sl.scalar("parent", 1.0, step=0)  # buffered in the parent when it forks
        _run(mp.get_context("fork"), children.log_with_default_writer, ("child", 50))
        sl.scalar("parent", 2.0, step=1)
    w.close()
    files = _files(logdir)
    assert len(files) == 2
    parent = next(p for p in files if p == Path(str(w.path)))
    (child,) = (p for p in files if p != parent)
    assert _series(parent) == [("parent", 0), ("parent", 1)]
    assert _series(child) == [("child", i) for i in range(50)]


def test_fork_pool_workers_each_write_their_own_file(logdir: Path) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    with w.as_default():
        sl.scalar("parent", 1.0, step=0)
        with mp.get_context("fork").Pool(2) as pool:
            pids = pool.starmap(
                children.log_with_default_writer, [("worker", 10)] * 6, chunksize=1
            )
            pool.close()
            pool.join()
    w.close()
    by_pid = {_pid_of(p): _series(p) for p in _files(logdir)}
    assert by_pid.pop(_pid_of(Path(str(w.path)))) == [("parent", 0)]
    assert set(by_pid) == set(pids)
    # Each task's 10 events went to its worker's file, in order, once.
    for pid, values in by_pid.items():
        assert values == [("worker", i) for i in range(10)] * pids.count(pid)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_pickled_writer_reopens_in_the_child(logdir: Path, method: str) -> None:
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    _run(mp.get_context(method), children.log_with_writer, (w, "child", 30))
    w.close()
    files = _files(logdir)
    assert len(files) == 2
    (child,) = (p for p in files if p != Path(str(w.path)))
    assert _series(child) == [("child", i) for i in range(30)]
    assert _series(Path(str(w.path))) == []


def test_unpickled_writer_keeps_the_settings_in_a_new_file(logdir: Path) -> None:
    w = sl.create_file_writer(
        logdir, max_queue=7, flush_millis=1234, filename_suffix="x", on_error="warn", fsync=True
    )
    with mp.get_context("spawn").Pool(1) as pool:
        got = pool.apply_async(children.writer_settings, (w,)).get(TIMEOUT)
    w.close()
    assert got["max_queue"] == 7
    assert got["flush_millis"] == 1234
    assert got["filename_suffix"] == ".x"
    assert got["on_error"] == "warn"
    assert got["fsync"] is True
    assert got["path"] != w.path
    assert f".{got['pid']}." in str(got["path"])


def test_pickling_custom_output_and_noop_writers() -> None:
    w = sl.create_writer(sl.MemoryOutput())
    with pytest.raises(TypeError, match="custom Output"):
        pickle.dumps(w)
    w.close()
    noop = pickle.loads(pickle.dumps(sl.create_noop_writer()))
    with noop.as_default():
        assert not sl.scalar("x", 1.0, step=0)


@pytest.mark.parametrize("pattern", ["rank0", "run-per-rank"])
def test_distributed_patterns_with_real_processes(tmp_path: Path, pattern: str) -> None:
    # docs/distributed.md: only rank 0 writes, or one run (subdirectory) per
    # rank. All ranks start at once on a logdir that does not exist yet.
    logdir = tmp_path / "logs"
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=children.train, args=(rank, 3, str(logdir), pattern))
        for rank in range(3)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(TIMEOUT)
        if p.is_alive():
            p.kill()
            p.join(TIMEOUT)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    runs = read_scalars(logdir)
    ranks = [0] if pattern == "rank0" else [0, 1, 2]
    names = ["."] if pattern == "rank0" else [f"rank{r}" for r in ranks]
    assert sorted(runs) == names
    for name, rank in zip(names, ranks, strict=True):
        points = runs[name]["loss"]
        assert [s for s, _, _ in points] == list(range(20))
        assert [v for _, _, v in points] == pytest.approx([1 / (s + 1) + rank for s in range(20)])
    assert len(list(logdir.rglob("*tfevents*"))) == len(ranks)


def test_ranks_sharing_one_run_directory_never_share_a_file(tmp_path: Path) -> None:
    # Several processes racing to create the same new logdir (makedirs) and
    # a writer in it: no FileExistsError, one file each.
    logdir = tmp_path / "shared" / "run"
    ctx = mp.get_context("fork")
    procs = [
        ctx.Process(target=children.train, args=(0, 4, str(logdir), "rank0")) for _ in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(TIMEOUT)
    assert [p.exitcode for p in procs] == [0] * 4
    files = _files(logdir)
    assert len(files) == 4
    for f in files:
        assert [step for _, step in _series(f)] == list(range(20))


# `with Pool(...)` ends with terminate(): SIGTERM to every worker, whose default action runs no
# exit code. docs/distributed.md shows the two ways to keep the workers' events.
def _worker_series(logdir: Path, parent: sl.SummaryWriter) -> dict[int, list[tuple[str, int]]]:
    return {_pid_of(p): _series(p) for p in _files(logdir) if p != Path(str(parent.path))}


def _pool_of_waiting_workers(logdir: Path, finish: bool) -> tuple[sl.SummaryWriter, set[int]]:
    """Two pool workers log 10 events each to their inherited default writer, then wait.

    The writer flushes neither by count nor by time, so what reaches a worker's file is what
    its exit wrote. With ``finish``, the tasks are released and the pool closed and joined
    inside the ``with``; without, the block ends while both workers are still in their task.
    """
    ctx = mp.get_context("fork")
    logged, release = ctx.Queue(), ctx.Event()
    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    with w.as_default(), ctx.Pool(2, children.keep_sync, (logged, release)) as pool:
        pool.starmap_async(children.log_then_wait, [("worker", 10)] * 2, chunksize=1)
        pids = {logged.get(timeout=TIMEOUT) for _ in range(2)}  # both have logged
        if finish:
            release.set()
            pool.close()
            pool.join()
    w.close()
    assert _series(Path(str(w.path))) == []
    return w, pids


def test_with_pool_kills_its_workers_and_loses_their_unflushed_events(logdir: Path) -> None:
    # Leaving the block calls terminate(): SIGTERM reaches both workers inside their task.
    # (Idle workers race it with their normal exit: see docs/distributed.md.)
    # The workers inherit this process's SIGTERM disposition: the default one, no handler.
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    w, pids = _pool_of_waiting_workers(logdir, finish=False)
    workers = _worker_series(logdir, w)
    # Nothing of the 20 events: a killed worker's file, if it got as far as creating one,
    # holds no scalar.
    assert set(workers) <= pids
    assert all(events == [] for events in workers.values()), workers


def test_pool_close_and_join_inside_with_keeps_the_workers_events(logdir: Path) -> None:
    w, pids = _pool_of_waiting_workers(logdir, finish=True)
    workers = _worker_series(logdir, w)
    assert set(workers) == pids
    for events in workers.values():
        assert events == [("worker", i) for i in range(10)]


def test_pool_tasks_that_close_their_writer_keep_events_without_join(logdir: Path) -> None:
    with mp.get_context("fork").Pool(2) as pool:
        pids = pool.starmap(children.log_to_own_writer, [(str(logdir), "worker", 10)] * 4,
                            chunksize=1)
    files = _files(logdir)
    assert len(files) == 4 and {_pid_of(p) for p in files} == set(pids)
    for path in files:
        assert _series(path) == [("worker", i) for i in range(10)]


def test_process_pool_executor_exit_keeps_the_workers_events(logdir: Path) -> None:
    # concurrent.futures waits for its workers to exit normally (shutdown(wait=True)).
    from concurrent.futures import ProcessPoolExecutor

    w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
    with w.as_default(), ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as ex:
        pids = list(ex.map(children.log_with_default_writer, ["worker"] * 4, [10] * 4))
    w.close()
    workers = _worker_series(logdir, w)
    assert set(workers) == set(pids)
    for pid, events in workers.items():
        assert events == [("worker", i) for i in range(10)] * pids.count(pid)
