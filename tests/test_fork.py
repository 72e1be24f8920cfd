"""fork(): a child never writes its parent's buffered events and never shares its file.

Every scenario runs in a fresh interpreter (forking the pytest process, with
its threads, would be unsafe), which prints nothing but errors; the files are
then checked here with summarylib's reader and TensorBoard's loader.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

from summarylib.reader import iter_events
from tests.helpers import tb_events

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 120.0

_PRELUDE = """
import os, sys, threading, time
import summarylib as sl
logdir = sys.argv[1]

def wait_child(pid):
    for _ in range(6000):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, status
            return
        time.sleep(0.01)
    raise SystemExit("child did not finish")
"""


def run(code: str, logdir: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code), str(logdir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def files_by_pid(logdir: Path) -> dict[int, Path]:
    out = {}
    for p in sorted(logdir.iterdir()):
        m = re.match(r"events\.out\.tfevents\.\d{10}\..+\.(\d+)\.(\d|[a-z]\d{2,})\.v2$", p.name)
        assert m, p.name
        assert int(m[1]) not in out, "two files of one process"
        out[int(m[1])] = p
    return out


def series(path: Path) -> list[tuple[str, int]]:
    """(tag, step) of every value, read by our reader; TensorBoard agrees."""
    ours = [(v.tag, e.step) for e in iter_events(path) for v in e.summary.value]
    theirs = [(v.tag, e.step) for e in tb_events(path) for v in e.summary.value]
    assert ours == theirs
    return ours


def test_child_never_writes_the_parents_buffered_events(tmp_path: Path) -> None:
    # The parent has 100 events buffered (not written) when it forks. Two
    # children: one flushes and leaves through os._exit, one exits normally
    # (its exit hook closes the writer). Neither may write the parent's 100.
    out = run(
        """
        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        w.set_as_default()
        for i in range(100):
            sl.scalar("parent", float(i), step=i)
        for how in ("os._exit", "exit"):
            pid = os.fork()
            if pid == 0:
                for i in range(7):
                    sl.scalar("child", float(i), step=i)
                if how == "os._exit":
                    w.flush()
                    os._exit(0)
                sys.exit(0)
            wait_child(pid)
            print(pid)
        for i in range(100, 110):
            sl.scalar("parent", float(i), step=i)
        w.close()
        """,
        tmp_path,
    )
    child_pids = [int(x) for x in out.split()]
    files = files_by_pid(tmp_path)
    assert len(files) == 3
    parent = next(p for pid, p in files.items() if pid not in child_pids)
    assert series(parent) == [("parent", i) for i in range(110)]
    for pid in child_pids:
        assert series(files[pid]) == [("child", i) for i in range(7)]
        assert tb_events(files[pid])[0].file_version == "brain.Event:2"


def test_a_child_that_never_logs_creates_no_file_and_path_is_its_own(tmp_path: Path) -> None:
    out = run(
        """
        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        parent_path = w.path
        w.set_as_default()
        sl.scalar("parent", 1.0, step=0)
        pid = os.fork()
        if pid == 0:
            assert w.path is None, w.path  # no file of its own yet
            w.flush()
            w.close()  # closing an unused writer opens nothing
            os._exit(0)
        wait_child(pid)
        pid = os.fork()
        if pid == 0:
            sl.scalar("child", 2.0, step=0)
            w.flush()
            assert w.path != parent_path and f".{os.getpid()}." in w.path, w.path
            print(w.path)
            os._exit(0)
        wait_child(pid)
        w.close()
        assert w.path == parent_path
        """,
        tmp_path,
    )
    files = files_by_pid(tmp_path)
    assert len(files) == 2
    assert Path(out.strip()) in files.values()


def test_forks_during_heavy_logging_keep_every_file_intact(tmp_path: Path) -> None:
    # A logging thread keeps the writer thread busy (big batches, writes in
    # flight) while the main thread forks 10 children that log and exit.
    out = run(
        """
        w = sl.create_file_writer(logdir, max_queue=50, flush_millis=1)
        stop = threading.Event()
        def log():
            w.set_as_default()
            i = 0
            while not stop.is_set() or i < 20000:
                sl.scalar("parent", float(i), step=i)
                i += 1
            print(i)
        t = threading.Thread(target=log)
        t.start()
        for k in range(10):
            time.sleep(0.005)
            pid = os.fork()
            if pid == 0:
                w.set_as_default()
                for i in range(50):
                    sl.scalar(f"child{k}", float(i), step=i)
                sys.exit(0)
            wait_child(pid)
        stop.set()
        t.join(60)
        w.close()
        """,
        tmp_path,
    )
    n = int(out)
    files = files_by_pid(tmp_path)
    assert len(files) == 11
    by_tag = {}
    for path in files.values():
        values = series(path)
        tags = {tag for tag, _ in values}
        assert len(tags) == 1, (path, tags)
        by_tag[tags.pop()] = [step for _, step in values]
    assert by_tag.pop("parent") == list(range(n))
    assert by_tag == {f"child{k}": list(range(50)) for k in range(10)}


def test_grandchildren_each_get_their_own_file(tmp_path: Path) -> None:
    run(
        """
        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        w.set_as_default()
        sl.scalar("gen", 0.0, step=0)
        pid = os.fork()
        if pid == 0:
            sl.scalar("gen", 1.0, step=1)
            pid2 = os.fork()
            if pid2 == 0:
                sl.scalar("gen", 2.0, step=2)
                sys.exit(0)
            wait_child(pid2)
            sys.exit(0)
        wait_child(pid)
        w.close()
        """,
        tmp_path,
    )
    files = files_by_pid(tmp_path)
    assert sorted(series(p) for p in files.values()) == [
        [("gen", 0)],
        [("gen", 1)],
        [("gen", 2)],
    ]


def test_a_writer_closed_before_fork_stays_closed_in_the_child(tmp_path: Path) -> None:
    run(
        """
        w = sl.create_file_writer(logdir)
        w.close()
        pid = os.fork()
        if pid == 0:
            assert w.closed
            try:
                with w.as_default():
                    pass
            except sl.WriterClosedError:
                os._exit(0)
            os._exit(3)
        wait_child(pid)
        """,
        tmp_path,
    )
    assert len(files_by_pid(tmp_path)) == 1


def test_a_writer_to_a_custom_output_refuses_to_write_in_a_child(tmp_path: Path) -> None:
    # A custom Output cannot be reopened, and sharing it (a file descriptor,
    # a socket) with the parent would interleave records: the child gets a
    # clear error instead, and the parent's output is untouched.
    out = run(
        """
        from summarylib.writer._output import open_event_file
        fo = open_event_file(logdir, ".v2")
        w = sl.create_writer(fo, max_queue=10**6, flush_millis=10**9)
        w.set_as_default()
        sl.scalar("parent", 1.0, step=0)
        pid = os.fork()
        if pid == 0:
            try:
                sl.scalar("child", 2.0, step=0)
            except sl.WriterClosedError as e:
                print(e)
                w.flush()
                w.close()
                os._exit(0)
            os._exit(3)
        wait_child(pid)
        sl.scalar("parent", 3.0, step=1)
        w.close()
        """,
        tmp_path,
    )
    assert "fork" in out and "custom Output" in out
    (path,) = files_by_pid(tmp_path).values()
    assert series(path) == [("parent", 0), ("parent", 1)]


def test_fork_never_calls_close_of_a_custom_output_in_the_child(tmp_path: Path) -> None:
    # The writer thread is inside write(), holding the output's own lock,
    # when the main thread forks. In the child that lock stays held forever
    # (its owner does not exist there): a close() taking it would hang the
    # child inside os.fork(). The child must only drop its reference.
    out = run(
        """
        class Locked(sl.MemoryOutput):
            def __init__(self):
                super().__init__()
                self.lock = threading.Lock()
                self.gate = threading.Event()
                self.entered = threading.Event()
                self.calls = 0
            def write(self, data):
                with self.lock:
                    self.calls += 1
                    if self.calls > 1:  # the file version event passes
                        self.entered.set()
                        assert self.gate.wait(60)
                    super().write(data)
            def close(self):
                # Bounded stand-in for a deadlock, so a failing run ends.
                if not self.lock.acquire(timeout=10):
                    os.write(2, b"close() ran in the child and deadlocked\\n")
                    os._exit(4)
                self.lock.release()
                super().close()

        locked = Locked()
        w = sl.create_writer(locked, max_queue=0)
        w.set_as_default(step=0)
        sl.scalar("parent", 1.0)
        assert locked.entered.wait(60)  # the writer thread holds locked.lock
        pid = os.fork()
        if pid == 0:
            try:
                sl.scalar("child", 2.0)
            except sl.WriterClosedError:
                os._exit(0)
            os._exit(3)
        wait_child(pid)
        locked.gate.set()
        w.close()
        print(locked.closed, len(locked.getvalue()) > 0)
        """,
        tmp_path,
    )
    assert out.split() == ["True", "True"]


def test_a_writer_whose_close_timed_out_is_closed_in_the_child(tmp_path: Path) -> None:
    # The parent's close() timed out (its fsync hangs): the parent accepts
    # no new events, and neither may a child forked then (nor open a file).
    out = run(
        """
        from summarylib.writer import _output as output
        gate = threading.Event()
        real_sync = output.FileOutput.sync
        def hanging_sync(self):
            assert gate.wait(60)
            real_sync(self)
        output.FileOutput.sync = hanging_sync

        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        w.set_as_default()
        sl.scalar("parent", 1.0, step=0)
        try:
            w.close(timeout=0.2)
        except TimeoutError:
            print("timed out")
        pid = os.fork()
        if pid == 0:
            assert w.closed
            assert sl.scalar("child", 2.0, step=0) is False  # no default writer any more
            try:
                w.add_scalar("child", 2.0, 0)
            except sl.WriterClosedError:
                w.flush()
                w.close()  # nothing to do
                os._exit(0)
            os._exit(3)
        wait_child(pid)
        gate.set()
        w.close()
        """,
        tmp_path,
    )
    assert out == "timed out\n"
    (path,) = files_by_pid(tmp_path).values()
    assert series(path) == [("parent", 0)]


# An import finder that sees every module import (not those already loaded). While a
# thread imports a module it holds that module's import lock; a child forked meanwhile
# inherits the lock held by a thread that does not exist there, and any import of the
# module in the child waits forever. Threads of summarylib (the writer thread, its
# encoders) must therefore import nothing.
_IMPORT_SPY = """
import importlib.abc
imports_off_main = []
entered = threading.Event()
gate = threading.Event()
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if threading.current_thread() is not threading.main_thread():
            imports_off_main.append((threading.current_thread().name, name))
            if not entered.is_set():  # the first one waits, holding its import lock
                entered.set()
                gate.wait(GATE_SECS)
        return None
sys.meta_path.insert(0, Spy())
"""


def with_import_spy(gate_secs: float, code: str) -> str:
    """``code`` after the spy, whose first import off the main thread waits up to
    ``gate_secs`` (or until ``gate`` is set)."""
    return f"GATE_SECS = {gate_secs}\n" + _IMPORT_SPY + textwrap.dedent(code)


def test_summarylib_threads_import_nothing(tmp_path: Path) -> None:
    # Every op whose encoding runs on the writer thread (or its encoder pool), each
    # twice in one batch so that the pool runs too, small and large images included.
    out = run(
        with_import_spy(
            0,
            """
        import numpy as np
        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        w.set_as_default(step=0)
        rng = np.random.default_rng(0)
        for k in range(2):
            sl.image("small", rng.random((2, 8, 8, 3)), max_outputs=2)
            sl.image("large", rng.random((1, 300, 300, 3)))
            sl.audio("audio", rng.random((1, 800, 1)) * 2 - 1, sample_rate=8000)
            sl.video("video", rng.random((3, 8, 8, 3)))
            sl.histogram("histogram", rng.random(1000))
            sl.histogram_raw("raw", 0, 1, 10, 5, 5, [1, 2], [3, 2])
            sl.pr_curve("pr", rng.random(50) > 0.5, rng.random(50))
            sl.text("text", "hello")
            sl.scalar("scalar", 1.0)
        w.flush()
        w.close()
        print(sorted({name for _, name in imports_off_main}))
        """,
        ),
        tmp_path,
    )
    assert out.strip() == "[]"
    (path,) = files_by_pid(tmp_path).values()
    tags = {tag for tag, _ in series(path)}
    assert {"small", "large", "audio", "video", "histogram", "text", "scalar"} <= tags


def test_a_fork_while_the_writer_thread_encodes_the_first_image(tmp_path: Path) -> None:
    # The child is forked at the worst moment: if the writer thread imports anything
    # for the first image, the fork happens while it holds that import's lock.
    # The child must still log images and finish its flush.
    run(
        with_import_spy(
            60,
            """
        import numpy as np
        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        w.set_as_default(step=0)
        flushed = threading.Event()
        sl.image("parent", np.zeros((1, 4, 4, 3)))
        def flush():
            w.flush()
            flushed.set()
        threading.Thread(target=flush, daemon=True).start()
        for _ in range(2000):  # until the writer thread imports, or is done
            if entered.is_set() or flushed.is_set():
                break
            time.sleep(0.01)
        pid = os.fork()
        if pid == 0:
            # Threads that take the stacks (and so the thread ids) of the parent's
            # threads: the writer thread started here must not happen to get the id of
            # the thread that held the import lock, which would pass the lock to it.
            hold = threading.Event()
            for _ in range(8):
                threading.Thread(target=hold.wait, daemon=True).start()
            sl.image("child", np.ones((1, 4, 4, 3)), step=1)
            try:
                w.flush(timeout=20)
            except TimeoutError:
                os.write(2, b"the child's flush hangs\\n")
                os._exit(5)
            os._exit(0)
        try:
            wait_child(pid)
        finally:
            gate.set()
        w.close()
        """,
        ),
        tmp_path,
    )
    files = files_by_pid(tmp_path)
    assert sorted(series(p) for p in files.values()) == [[("child", 1)], [("parent", 0)]]


def test_a_fork_while_another_thread_loads_an_op_lazily(tmp_path: Path) -> None:
    # summarylib loads its ops on first use (sl.image): a thread forks while another
    # one is inside that import. The child must be able to use the op.
    run(
        with_import_spy(
            1,
            """
        import signal
        w = sl.create_file_writer(logdir, max_queue=10**6, flush_millis=10**9)
        w.set_as_default(step=0)
        loader = threading.Thread(target=lambda: sl.text, daemon=True)
        loader.start()
        assert entered.wait(60)  # the loader is inside the import now
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)  # ends a child that hangs
            sl.text("child", "hello", step=1)
            w.flush()
            os._exit(0)
        wait_child(pid)  # fails if SIGALRM ended the child
        loader.join(60)
        sl.text("parent", "hi")
        w.close()
        """,
        ),
        tmp_path,
    )
    files = files_by_pid(tmp_path)
    assert sorted(series(p) for p in files.values()) == [[("child", 1)], [("parent", 0)]]


def test_forks_at_many_moments_after_a_process_s_first_image(tmp_path: Path) -> None:
    # For each delay, a fresh worker (forked before anything loaded Pillow) logs its
    # first image and forks a child that much later; the child logs an image and must
    # finish its flush (SIGALRM ends one that hangs, and its worker reports it).
    out = run(
        """
        import signal
        assert "PIL" not in sys.modules
        for k in range(40):
            worker = os.fork()
            if worker == 0:
                import numpy as np
                w = sl.create_file_writer(logdir, max_queue=0)
                w.set_as_default(step=0)
                sl.image("worker", np.zeros((1, 8, 8, 3)))
                time.sleep(k / 1000)
                pid = os.fork()
                if pid == 0:
                    signal.alarm(20)
                    sl.image("child", np.ones((1, 8, 8, 3)), step=1)
                    w.flush()
                    os._exit(0)
                wait_child(pid)
                w.close()
                os._exit(0)
            wait_child(worker)
            print(k)
        """,
        tmp_path,
    )
    assert out.split() == [str(k) for k in range(40)]
    files = files_by_pid(tmp_path)
    assert len(files) == 80
    assert sorted(map(series, files.values())) == [[("child", 1)]] * 40 + [[("worker", 0)]] * 40
