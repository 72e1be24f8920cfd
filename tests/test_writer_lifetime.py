"""A writer's lifetime follows its references, as TensorFlow's does: dropping the last
reference closes its file at once (everything written, the descriptor closed) without a
garbage collection, and the eager ``with create_file_writer(d).as_default():`` loop leaves
no Python objects behind."""

from __future__ import annotations

import collections
import gc
import os
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

import summarylib as sl
from tests.helpers import only_file, tb_events, tb_scalar_points, wait_until

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"),
                                reason="needs /proc/self/fd to see open descriptors")


@pytest.fixture
def no_gc() -> Iterator[None]:
    """No garbage collection during the test: what happens is due to reference counts."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def open_paths() -> set[str]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
    return out


def writer_threads_ended() -> bool:
    """Wait for the writers' own threads to end (the encoder pool's threads stay)."""
    return wait_until(lambda: not any(
        t.name.startswith(("summarylib-writer", "summarylib-close"))
        for t in threading.enumerate()))


def test_del_closes_the_file_at_once(tmp_path: Path, no_gc: None) -> None:
    w = sl.create_file_writer(tmp_path)
    path = w.path
    assert path in open_paths()
    with w.as_default():
        for step in range(5):
            sl.scalar("loss", 1.0 / (1 + step), step=step)
    sl.scalar("never", 1.0, step=0)  # no default writer now: nothing written
    ref = weakref.ref(w)
    assert w.add_scalar("late", 7.0, 9)  # pending (no flush yet): del must write it
    del w
    assert ref() is None
    assert path not in open_paths()
    points = tb_scalar_points(path)
    assert [s for s, _, _ in points["loss"]] == [0, 1, 2, 3, 4]
    assert [(s, v) for s, _, v in points["late"]] == [(9, 7.0)]
    assert "never" not in points


def test_del_of_a_torch_style_writer_closes_its_sub_runs(tmp_path: Path, no_gc: None) -> None:
    w = sl.SummaryWriter(tmp_path)
    w.add_scalar("x", 1.0, 0)
    w.add_scalars("run", {"a": 1.0, "b": 2.0}, 0)
    w.add_hparams({"lr": 0.1}, {"m": 1.0})  # a trial in this run: its end is written
    files = [only_file(tmp_path / "run_a"), only_file(tmp_path / "run_b"), Path(w.path)]
    del w
    assert not {str(f) for f in files} & open_paths()
    assert writer_threads_ended()
    tags = {v.tag for e in tb_events(files[2]) if e.HasField("summary")
            for v in e.summary.value}
    assert {"x", "m", "_hparams_/session_start_info", "_hparams_/session_end_info"} <= tags
    for f in files[:2]:
        assert [v.tag for e in tb_events(f) if e.HasField("summary")
                for v in e.summary.value] == ["run"]


def test_as_default_loop_leaves_no_objects_behind(tmp_path: Path, no_gc: None) -> None:
    """TensorFlow's eager idiom, never closed explicitly: no type of object grows."""
    def loop(n: int) -> None:
        for i in range(n):
            with sl.create_file_writer(tmp_path).as_default():
                sl.scalar("x", i, step=i)
                sl.write("t", [1.0, 2.0], step=i)
                sl.histogram("h", [1.0, 2.0, 3.0], step=i)

    def counts() -> collections.Counter[str]:
        assert writer_threads_ended()
        return collections.Counter(type(o).__qualname__ for o in gc.get_objects())

    loop(5)  # caches, the encoder pool, first-use imports
    counts()
    loop(5)
    # A leak grows in every round of 20 writers. Another thread of the test process (a
    # framework's worker left by an earlier test in this worker) may allocate an object
    # once meanwhile, so a round without growth settles it; three rounds with growth fail.
    rounds = []
    for _ in range(3):
        before = counts()
        loop(20)
        after = counts()
        grown = {k: after[k] - before[k] for k in after
                 if after[k] > before[k] and k != "Counter"}  # "before" itself is one
        rounds.append(grown)
        if not grown:
            break
    assert rounds[-1] == {}, rounds
    assert not any(p.startswith(str(tmp_path)) for p in open_paths())
    assert len(os.listdir(tmp_path)) == 10 + 20 * len(rounds)


@pytest.mark.parametrize(("ending", "status"), [
    ("pass", "STATUS_SUCCESS"),
    ("raise RuntimeError('crashed')", "STATUS_FAILURE"),
])
def test_a_trial_never_closed_is_ended_at_exit(tmp_path: Path, ending: str,
                                               status: str) -> None:
    """A writer left open at interpreter exit ends its trial: failure after an uncaught
    exception, else success (read with TensorBoard's hparams metadata parser)."""
    import subprocess
    import sys

    from tensorboard.plugins.hparams import api_pb2, metadata

    script = (f"import summarylib as sl\nw = sl.SummaryWriter({str(tmp_path)!r})\n"
              f"w.add_hparams({{'lr': 0.1}}, {{'m': 1.0}})\n{ending}\n")
    subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                   check=False)
    ends = [metadata.parse_session_end_info_plugin_data(v.metadata.plugin_data.content)
            for e in tb_events(only_file(tmp_path)) if e.HasField("summary")
            for v in e.summary.value if v.tag == metadata.SESSION_END_INFO_TAG]
    assert len(ends) == 1
    assert api_pb2.Status.Name(ends[0].status) == status
