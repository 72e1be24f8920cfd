"""Crash safety: SIGKILL at random moments, exit paths, signals, fsync.

The kill harness forks logging children from a warm fork server
(tests/_crash_child.py) and SIGKILLs each at a random moment. After every
kill, every event acknowledged by a returned ``flush()`` must be in the file,
CRC-valid, in order, with nothing after the last whole record but a torn
tail; summarylib's reader, ``summarylib verify`` and TensorBoard's loader must
all read it. ``SUMMARYLIB_CRASH_ROUNDS`` (default 200) sets the number of
kills, ``SUMMARYLIB_CRASH_SEED`` the random seed.
"""

from __future__ import annotations

import io
import os
import random
import select
import signal
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import summarylib as sl
from summarylib import cli
from summarylib.reader import RecordReader, iter_events
from tests.helpers import record_payloads, tb_events

REPO = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("SUMMARYLIB_CRASH_ROUNDS", "200"))
SEED = int(os.environ.get("SUMMARYLIB_CRASH_SEED", "20261122"))
# Kills land between MIN_ and MAX_KILL_DELAY seconds after the fork, spread
# log-uniformly: as many kills before the writer exists or while it opens its
# file as late ones, when time-based flushes have run and the file is large.
MIN_KILL_DELAY = 0.0001
MAX_KILL_DELAY = 0.3
IO_TIMEOUT = 60.0


class ForkServer:
    """Talks to ``python -m tests._crash_child server`` with bounded waits."""

    def __init__(self, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests._crash_child", "server"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._buf = b""

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return self._read_line()

    def _read_line(self) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + IO_TIMEOUT
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, remaining))
            if not ready:
                raise TimeoutError(f"fork server silent for {IO_TIMEOUT} s: {self.stderr()}")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise EOFError(f"fork server exited: {self.stderr()}")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(IO_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(IO_TIMEOUT)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    server = ForkServer(tmp_path_factory.mktemp("server") / "stderr.txt")
    try:
        yield server
    finally:
        server.close()


def _acked(logdir: Path) -> int:
    try:
        text = (logdir / "acks").read_text()
    except FileNotFoundError:
        return 0
    return max((int(x) for x in text.split()), default=0)


def check_after_kill(logdir: Path, context: str) -> int:
    """Check a killed child's logdir; return the number of events recovered."""
    acked = _acked(logdir)
    files = [p for p in logdir.iterdir() if "tfevents" in p.name] if logdir.exists() else []
    assert len(files) <= 1, (context, files)
    if not files:
        assert acked == 0, context
        return 0
    path = files[0]
    reader = RecordReader(path)
    records = list(reader)  # checks both CRCs of every record; raises DataLossError
    # Only a torn last record may follow the last whole record.
    assert reader.truncated_at in (None, reader.end), context
    assert (reader.truncated_at is not None) == (path.stat().st_size > reader.end), context
    if not records:
        assert acked == 0, context
        return 0
    events = list(iter_events(path))
    assert events[0].file_version == "brain.Event:2", context
    steps = [e.step for e in events[1:]]
    # In order, no gaps, no duplicates, and every acknowledged event is there.
    assert steps == list(range(len(steps))), context
    assert len(steps) >= acked, (context, len(steps), acked)
    for e in events[1:]:
        for v in e.summary.value:
            if v.tag == "x":
                assert struct.unpack("<f", v.tensor.tensor_content) == (e.step,), context
    # TensorBoard's own loader reads exactly the same events.
    theirs = tb_events(path)
    assert [e.step for e in theirs[1:]] == steps, context
    assert [e.wall_time for e in theirs] == [e.wall_time for e in events], context
    assert cli.verify([str(path)], io.StringIO()) == 0, context
    return len(steps)


def test_sigkill_at_random_moments_loses_nothing_acknowledged(
    fork_server: ForkServer, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    recovered = acked_total = torn = 0
    for i in range(ROUNDS):
        logdir = tmp_path / f"r{i}"
        seed = rng.randrange(2**32)
        context = f"round {i}, child seed {seed} (SUMMARYLIB_CRASH_SEED={SEED})"
        reply = fork_server.ask(f"run {logdir} {seed}")
        kind, pid_text = reply.split()
        assert kind == "pid", (reply, fork_server.stderr())
        pid = int(pid_text)
        time.sleep(MIN_KILL_DELAY * (MAX_KILL_DELAY / MIN_KILL_DELAY) ** rng.random())
        os.kill(pid, signal.SIGKILL)  # safe: the server has not reaped it
        reply = fork_server.ask(f"reap {pid}")
        _, _, status_text = reply.split()
        status = int(status_text)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
            context,
            reply,
            fork_server.stderr(),
        )
        recovered += check_after_kill(logdir, context)
        acked_total += _acked(logdir)
        files = list(logdir.glob("*tfevents*")) if logdir.exists() else []
        torn += any(_torn(p) for p in files)
    # The harness really exercised something: events were acknowledged (and
    # a few kills may cut a record in half; -s shows how many: torn tails are
    # checked deterministically by test_a_record_cut_anywhere_is_read_...).
    print(f"{ROUNDS} kills: {acked_total} events acked, {recovered} recovered, {torn} torn tails")
    assert acked_total > 0
    assert recovered >= acked_total


def test_a_record_cut_anywhere_is_read_as_the_end_of_the_file(tmp_path: Path) -> None:
    # Kills rarely land inside a write() (the harness prints how often), so
    # the torn-tail case is also made on purpose: a real file like the
    # children's, cut inside a record's length, its length CRC, its payload
    # and its footer, for the first event, a 32 KB blob and the last
    # record. check_after_kill (our reader, TensorBoard's loader, `verify`)
    # must read every whole record before the cut, and nothing else.
    import numpy as np

    src = tmp_path / "src"
    w = sl.create_file_writer(src, max_queue=50)
    w.set_as_default()
    blob_steps = []
    for step in range(300):
        if step % 50 == 7:
            sl.write("blob", np.full(8000, step, dtype=np.float32), step=step)
            blob_steps.append(step)
        elif step % 10 == 3:
            sl.scalars({"a": float(step), "b": -float(step)}, step=step)
        else:
            sl.scalar("x", float(step), step=step)
    w.close()
    (path,) = src.glob("*tfevents*")
    data = path.read_bytes()
    offsets = [r.offset for r in RecordReader(path)] + [len(data)]
    last = len(offsets) - 2
    blob = 1 + blob_steps[2]  # record k holds step k - 1
    assert {"blob"} == {v.tag for v in list(iter_events(path))[blob].summary.value}
    for k in (1, blob, last):
        start, end = offsets[k], offsets[k + 1]
        for cut in (start + 3, start + 10, start + 14, (start + end) // 2, end - 2):
            logdir = tmp_path / f"cut{cut}"
            logdir.mkdir()
            (logdir / path.name).write_bytes(data[:cut])
            assert _torn(logdir / path.name)
            assert check_after_kill(logdir, f"cut at {cut}, in record {k}") == k - 1


def _torn(path: Path) -> bool:
    reader = RecordReader(path)
    for _ in reader:
        pass
    return reader.truncated_at is not None


# -- normal exits flush (atexit) ------------------------------------------------------


def _run_python(code: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _steps(logdir: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for path in sorted(logdir.glob("*tfevents*")):
        for e in iter_events(path):
            for v in e.summary.value:
                out.setdefault(v.tag, []).append(e.step)
        assert [e.step for e in tb_events(path)[1:]] == [e.step for e in iter_events(path)][1:]
    return out


@pytest.mark.parametrize(
    ("ending", "returncode"),
    [
        ("pass", 0),
        ("sys.exit(3)", 3),
        ("raise RuntimeError('training crashed')", 1),
        ("raise KeyboardInterrupt", -signal.SIGINT),  # what Ctrl-C does by default
        ("threading.Thread(target=lambda: time.sleep(0.2)).start()", 0),
    ],
    ids=["end-of-script", "sys.exit", "uncaught-exception", "ctrl-c", "non-daemon-thread"],
)
def test_normal_interpreter_exit_flushes_every_writer(
    tmp_path: Path, ending: str, returncode: int
) -> None:
    # Nothing is flushed or closed: the writers never reach max_queue or
    # flush_millis, so only the exit hook can write the events.
    proc = _run_python(
        f"""
        import sys, threading, time
        import summarylib as sl
        a = sl.create_file_writer({str(tmp_path / "a")!r}, max_queue=10**6, flush_millis=10**9)
        b = sl.create_file_writer({str(tmp_path / "b")!r}, max_queue=10**6, flush_millis=10**9)
        for i in range(300):
            a.set_as_default()
            sl.scalar("loss", 1.0 / (i + 1), step=i)
            b.set_as_default()
            sl.scalar("acc", i / 300, step=i)
        {ending}
        """
    )
    assert proc.returncode == returncode, proc.stderr
    assert _steps(tmp_path / "a") == {"loss": list(range(300))}
    assert _steps(tmp_path / "b") == {"acc": list(range(300))}


def test_a_thread_still_logging_at_exit_gets_false_quietly(tmp_path: Path) -> None:
    # A daemon thread logs every kind in a loop while the main thread ends the script: the
    # exit hook closes the writer under it. Its ops then return False (one warning), never
    # WriterClosedError into a thread that cannot handle it; what came before is in the file.
    proc = _run_python(
        f"""
        import threading, warnings
        import numpy as np
        import summarylib as sl
        w = sl.create_file_writer({str(tmp_path)!r})
        results = []
        started = threading.Event()
        def log():
            with w.as_default():
                step = 0
                while True:
                    ok = sl.scalar("loss", 1.0, step=step)
                    ok = sl.scalars({{"a": 1.0, "b": 2.0}}, step=step) and ok
                    ok = sl.histogram("h", np.arange(10.0), step=step) and ok
                    ok = sl.text("t", "x", step=step) and ok
                    ok = sl.image("i", np.zeros((1, 2, 2, 3)), step=step) and ok
                    results.append(ok)
                    step += 1
                    if step == 50:
                        started.set()
        threading.Thread(target=log, daemon=True).start()
        started.wait()
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception in thread" not in proc.stderr, proc.stderr
    assert proc.stderr.count("closed at interpreter exit") <= 1, proc.stderr
    steps = _steps(tmp_path)
    n = len(steps["loss"])
    assert n >= 50
    assert steps["loss"] == list(range(n))  # every event before the close, in order


def test_explicit_close_still_raises_for_late_writes(tmp_path: Path) -> None:
    w = sl.create_file_writer(str(tmp_path))
    with w.as_default():
        sl.scalar("loss", 1.0, step=0)
        w.close()
        assert sl.scalar("loss", 1.0, step=1) is False  # no longer the default writer
        with pytest.raises(sl.WriterClosedError):
            w.add_scalar("loss", 1.0, 1)


def test_a_close_that_timed_out_is_finished_at_exit(tmp_path: Path) -> None:
    # close(timeout) gave up (the output was stuck); the program then ends.
    # The exit hook still closes the writer once the output recovers.
    out = tmp_path / "out.bin"
    proc = _run_python(
        f"""
        import atexit, threading
        import summarylib as sl

        class Stuck(sl.MemoryOutput):
            gate = threading.Event()
            def write(self, data):
                if self.getvalue():
                    self.gate.wait(60)
                super().write(data)
            def close(self):
                open({str(out)!r}, "wb").write(self.getvalue())

        w = sl.create_writer(Stuck(), max_queue=10**6, flush_millis=10**9)
        w.set_as_default()
        for i in range(20):
            sl.scalar("x", float(i), step=i)
        try:
            w.close(timeout=0.2)
        except TimeoutError:
            print("timed out")
        atexit.register(Stuck.gate.set)  # runs before summarylib's exit hook
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "timed out\n"
    assert len(record_payloads(out.read_bytes())) == 21  # file version + 20 events


def test_interpreter_exit_gives_up_on_an_fsync_that_hangs() -> None:
    # The exit hook closes every writer with a deadline: a stuck fsync makes
    # it warn and give up, never hang the end of the program.
    proc = _run_python(
        """
        import threading
        import summarylib as sl
        from summarylib.writer import _file_writer as file_writer
        file_writer.EXIT_TIMEOUT_SECS = 0.5  # the hook's deadline, shortened for the test

        class Hung(sl.MemoryOutput):
            def sync(self):
                threading.Event().wait(600)  # an fsync that never returns

        w = sl.create_writer(Hung("hung-output"), max_queue=10**6, flush_millis=10**9)
        w.set_as_default(step=0)
        sl.scalar("x", 1.0)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "closing hung-output failed" in proc.stderr and "took longer than 0.5 s" in proc.stderr


def test_os_exit_keeps_what_flush_acknowledged(tmp_path: Path) -> None:
    # os._exit skips every exit hook: only flushed events survive, and they do.
    proc = _run_python(
        f"""
        import os
        import summarylib as sl
        w = sl.create_file_writer({str(tmp_path)!r}, max_queue=10**6, flush_millis=10**9)
        w.set_as_default()
        for i in range(100):
            sl.scalar("x", float(i), step=i)
        w.flush()
        for i in range(100, 150):
            sl.scalar("x", float(i), step=i)
        os._exit(0)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert _steps(tmp_path)["x"][:100] == list(range(100))


# -- opt-in flush on SIGTERM / SIGINT ------------------------------------------------------

# Each child sets the dispositions the tests rely on: a shell that starts pytest in the
# background (`cmd &`, nohup) hands its children SIGINT ignored, Python keeps an inherited
# ignored SIGINT ignored, and flush_on_signals() rightly leaves an ignored signal ignored.
_LOG_300 = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
import summarylib as sl
from summarylib.writer._signals import flush_on_signals
a = sl.create_file_writer(sys.argv[1] + "/a", max_queue=10**6, flush_millis=10**9)
b = sl.create_file_writer(sys.argv[1] + "/b", max_queue=10**6, flush_millis=10**9)
"""
_LOG = """
for i in range(300):
    a.set_as_default()
    sl.scalar("loss", float(i), step=i)
    b.set_as_default()
    sl.scalar("acc", float(i), step=i)
"""
# "ready" tells the test to send the signal: every child prints it only once
# it is where the signal must find it (handlers installed, inside any try:
# that has to catch what the signal raises).
_READY = _LOG + 'print("ready", flush=True)\n'
_WAIT = """
for _ in range(600):
    time.sleep(0.05)
os._exit(99)  # the signal never came: fail the test
"""


def _signalled_child(tmp_path: Path, body: str, sig: int) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a child; once it prints "ready", send it ``sig``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(body), str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], IO_TIMEOUT)
        assert ready, "child never got ready"
        line = proc.stdout.readline()
        assert line == "ready\n", (line, proc.stderr.read() if proc.stderr else "")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=IO_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=IO_TIMEOUT)
    return subprocess.CompletedProcess(proc.args, proc.returncode, line + out, err)


def _all_300(tmp_path: Path) -> bool:
    return _steps(tmp_path / "a") == {"loss": list(range(300))} and _steps(tmp_path / "b") == {
        "acc": list(range(300))
    }


def test_without_opt_in_sigterm_loses_unwritten_events(tmp_path: Path) -> None:
    # The default, documented in the guarantees: SIGTERM's default action
    # runs no exit hook, so events still in memory are lost.
    proc = _signalled_child(tmp_path, _LOG_300 + _READY + _WAIT, signal.SIGTERM)
    assert proc.returncode == -signal.SIGTERM
    assert _steps(tmp_path / "a") == {}


def test_sigterm_flushes_every_writer_then_dies_as_before(tmp_path: Path) -> None:
    body = _LOG_300 + "flush_on_signals()\n" + _READY + _WAIT
    proc = _signalled_child(tmp_path, body, signal.SIGTERM)
    assert proc.returncode == -signal.SIGTERM, proc.stderr  # the default action still ran
    assert _all_300(tmp_path)


def test_sigterm_chains_to_the_previous_python_handler(tmp_path: Path) -> None:
    body = (
        _LOG_300
        + """
def previous(signum, frame):
    print("previous handler ran", flush=True)
    os._exit(5)  # skips exit hooks: the data can only come from our flush
signal.signal(signal.SIGTERM, previous)
flush_on_signals()
"""
        + _READY
        + _WAIT
    )
    proc = _signalled_child(tmp_path, body, signal.SIGTERM)
    assert proc.returncode == 5, proc.stderr
    assert "previous handler ran" in proc.stdout
    assert _all_300(tmp_path)


def test_sigint_flushes_then_raises_keyboard_interrupt(tmp_path: Path) -> None:
    body = (
        _LOG_300
        + "flush_on_signals()\n"
        + _LOG
        + """
try:
    print("ready", flush=True)  # inside the try: the KeyboardInterrupt cannot miss it
    for _ in range(600):
        time.sleep(0.05)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    os._exit(7)
os._exit(99)
"""
    )
    proc = _signalled_child(tmp_path, body, signal.SIGINT)
    assert proc.returncode == 7, proc.stderr
    assert "KeyboardInterrupt" in proc.stdout
    assert _all_300(tmp_path)


def test_ignored_signal_is_still_ignored_after_the_flush(tmp_path: Path) -> None:
    body = (
        _LOG_300
        + """
from summarylib.reader import iter_records
signal.signal(signal.SIGTERM, signal.SIG_IGN)
flush_on_signals()
"""
        + _READY
        + """
for _ in range(600):  # the handler flushes; nothing else would
    if len(list(iter_records(a.path))) == 301 and len(list(iter_records(b.path))) == 301:
        print("flushed and alive", flush=True)
        a.set_as_default()
        sl.scalar("after", 1.0, step=0)
        a.close()
        os._exit(0)
    time.sleep(0.05)
os._exit(99)
"""
    )
    proc = _signalled_child(tmp_path, body, signal.SIGTERM)
    assert proc.returncode == 0, proc.stderr
    assert "flushed and alive" in proc.stdout


def test_sigterm_inside_a_writer_call_flushes_after_it_then_dies_as_before(
    tmp_path: Path,
) -> None:
    # SIGTERM lands inside append() while it holds the writer's lock (raised
    # from the len() that the byte count takes of a payload too large for the
    # lock-free path). The handler defers: the call completes, every event
    # (that one included) is flushed, and the process then dies of SIGTERM as
    # it would have without us.
    body = (
        _LOG_300
        + "flush_on_signals()\n"
        + _LOG
        + """
from summarylib.writer._buffered import Deferred
class Interrupting(Deferred):
    armed = True
    def __len__(self):
        if Interrupting.armed and a._resource.lock._is_owned():
            Interrupting.armed = False
            signal.raise_signal(signal.SIGTERM)
        return self.size
a._resource.append(Interrupting(lambda: b"\\x10\\x07", 1 << 16, "an event with step 7"))
assert not Interrupting.armed  # the signal was raised under the lock
for _ in range(600):  # the signal takes effect in here (or at any bytecode before)
    time.sleep(0.05)
os._exit(99)
"""
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(body), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=IO_TIMEOUT,
    )
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert _all_300(tmp_path)
    (path,) = (tmp_path / "a").glob("*tfevents*")
    # The interrupted call completed before the flush: its event is there.
    assert [e.step for e in iter_events(path)][-1] == 7


def test_a_handler_that_cannot_get_a_writer_lock_still_acts_within_its_timeout(
    tmp_path: Path,
) -> None:
    # The main thread holds writer a's lock and never lets go (as if stuck
    # inside a call). The handler cannot flush a: it gives up after its
    # timeout, says so, flushes b, and still does what the signal did before.
    body = (
        _LOG_300
        + """
def previous(signum, frame):
    print("previous handler ran", flush=True)
    os._exit(5)  # skips exit hooks: b's data can only come from our flush
signal.signal(signal.SIGTERM, previous)
flush_on_signals(timeout=1)
"""
        + _LOG
        + """
with a._resource.lock:
    print("ready", flush=True)
    for _ in range(600):
        time.sleep(0.05)
os._exit(99)
"""
    )
    proc = _signalled_child(tmp_path, body, signal.SIGTERM)
    assert proc.returncode == 5, proc.stderr
    assert "previous handler ran" in proc.stdout
    assert "could not flush" in proc.stderr and "took longer than" in proc.stderr
    assert _steps(tmp_path / "b") == {"acc": list(range(300))}


def test_a_handler_python_cannot_call_falls_back_to_the_default_action(tmp_path: Path) -> None:
    # signal.getsignal() returns None for a handler installed outside Python
    # (by C code before the interpreter started). Python can neither call it
    # nor put it back, so after the flush the default action happens.
    body = (
        _LOG_300
        + """
real_getsignal = signal.getsignal
signal.getsignal = lambda s: None if s == signal.SIGUSR1 else real_getsignal(s)
flush_on_signals([signal.SIGUSR1])
"""
        + _READY
        + _WAIT
    )
    proc = _signalled_child(tmp_path, body, signal.SIGUSR1)
    assert proc.returncode == -signal.SIGUSR1, proc.stderr  # SIGUSR1's default: terminate
    assert _all_300(tmp_path)


def test_a_signal_inside_a_writer_call_flushes_after_the_call() -> None:
    # A handler runs on the main thread between two bytecodes, here inside
    # append() while it holds the writer's lock (raised from the len() that the
    # byte count takes of a payload too large for the lock-free path, under the
    # lock). A flush waiting there would release that
    # lock under the interrupted call and let the writer thread take the
    # pending list from under it. Instead the flush and the chain to the
    # previous handler happen once the call has returned.
    from summarylib.writer._buffered import Deferred
    from summarylib.writer._signals import flush_on_signals

    inside = [False]
    writes_while_inside: list[bool] = []

    class Recording(sl.MemoryOutput):
        def write(self, data: bytes) -> None:
            writes_while_inside.append(inside[0])
            super().write(data)

    out = Recording()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    res = w._resource
    assert res is not None

    class Interrupting(Deferred):
        armed = True

        def __len__(self) -> int:
            if Interrupting.armed and res.lock._is_owned():  # type: ignore[attr-defined]
                Interrupting.armed = False
                inside[0] = True
                signal.raise_signal(signal.SIGUSR1)  # the Python handler runs in here
                inside[0] = False
            return self.size

    chained: list[int] = []
    old = signal.signal(signal.SIGUSR1, lambda signum, frame: chained.append(len(out.getvalue())))
    restore = flush_on_signals([signal.SIGUSR1], timeout=IO_TIMEOUT)
    try:
        w.set_as_default(step=0)
        for i in range(5):
            sl.scalar("x", float(i))
        # 64 KiB counted: above the lock-free path's payload limit, so append() takes the lock.
        res.append(Interrupting(lambda: b"\x10\x07", 1 << 16, "an event with step 7"))
        assert not Interrupting.armed and not inside[0]
        deadline = time.monotonic() + IO_TIMEOUT
        while not chained and time.monotonic() < deadline:
            time.sleep(0.01)  # the handler runs again on the main thread, in here
    finally:
        restore()
        signal.signal(signal.SIGUSR1, old)
    assert writes_while_inside and not any(writes_while_inside), writes_while_inside
    # The previous handler ran once, after the flush had written all 7 events.
    assert chained == [len(out.getvalue())]
    w.close()
    assert [e.step for e in _memory_events(out.getvalue())] == [0] * 6 + [7]


def test_a_signal_inside_the_lock_free_append_flushes_at_once() -> None:
    # The common append takes no lock: a handler that lands in it (here from the
    # len() it takes of the payload, which is queued by then) may flush at once,
    # inside the call, and that flush already writes the interrupted event.
    from summarylib.writer._buffered import Deferred
    from summarylib.writer._signals import flush_on_signals

    out = sl.MemoryOutput()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    res = w._resource
    assert res is not None
    seen_by_handler: list[int] = []

    class Interrupting(Deferred):
        armed = True

        def __len__(self) -> int:
            if Interrupting.armed and not res.lock._is_owned():  # type: ignore[attr-defined]
                Interrupting.armed = False
                signal.raise_signal(signal.SIGUSR1)  # our handler, then the chained one
            return self.size

    old = signal.signal(
        signal.SIGUSR1, lambda signum, frame: seen_by_handler.append(len(out.getvalue()))
    )
    restore = flush_on_signals([signal.SIGUSR1], timeout=IO_TIMEOUT)
    try:
        w.set_as_default(step=0)
        for i in range(5):
            sl.scalar("x", float(i))
        assert res.append(Interrupting(lambda: b"\x10\x07", 2, "an event with step 7"))
        assert not Interrupting.armed
    finally:
        restore()
        signal.signal(signal.SIGUSR1, old)
    # The chained handler ran inside the call, after a flush that wrote all 6 events.
    assert len(seen_by_handler) == 1
    steps = [e.step for e in _memory_events(out.getvalue()[: seen_by_handler[0]])]
    assert steps == [0] * 6 + [7]
    w.close()


def _memory_events(data: bytes) -> list:
    from summarylib.proto import event_pb2

    return [event_pb2.Event.FromString(p) for p in record_payloads(data)]


def test_flush_on_signals_restore_and_validation() -> None:
    import threading

    from summarylib.writer._signals import flush_on_signals

    before = signal.getsignal(signal.SIGUSR1)
    restore = flush_on_signals([signal.SIGUSR1])
    try:
        ours = signal.getsignal(signal.SIGUSR1)
        assert ours is not before
        restore_again = flush_on_signals([signal.SIGUSR1])  # already installed: no-op
        assert signal.getsignal(signal.SIGUSR1) is ours
        restore_again()
        assert signal.getsignal(signal.SIGUSR1) is ours
    finally:
        restore()
    assert signal.getsignal(signal.SIGUSR1) == before
    with pytest.raises(TypeError, match="'signals'"):
        flush_on_signals(["SIGTERM"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="'signals'"):
        flush_on_signals([100000])
    with pytest.raises(ValueError, match="'timeout'"):
        flush_on_signals(timeout=0)
    errors: list[BaseException] = []

    def from_thread() -> None:
        try:
            flush_on_signals()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=from_thread)
    t.start()
    t.join(30)
    assert len(errors) == 1 and isinstance(errors[0], ValueError)
    assert "main thread" in str(errors[0])


# -- fsync: when data is durable against power loss ------------------------------------------


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths summarylib's file output fsyncs, in order (Linux /proc)."""
    import types

    from summarylib.writer import _output as output_module

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to name the fsynced descriptors")
    calls: list[str] = []
    proxy = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})

    def fsync(fd: int) -> None:
        calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fsync(fd)

    proxy.fsync = fsync
    monkeypatch.setattr(output_module, "os", proxy)
    return calls


def test_default_fsyncs_only_at_close_file_and_directory(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    w = sl.create_file_writer(tmp_path, max_queue=2)
    w.set_as_default()
    for i in range(100):  # many background flushes
        sl.scalar("x", float(i), step=i)
    w.flush()
    assert fsyncs == []  # safe from a crash of the process, not from power loss
    w.close()
    assert fsyncs == [w.path, str(tmp_path)]  # durable once close() returns


def test_fsync_true_syncs_every_flush_and_the_directory_once(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    w = sl.create_file_writer(tmp_path, fsync=True, max_queue=10**6, flush_millis=10**9)
    w.set_as_default()
    sl.scalar("x", 1.0, step=0)
    w.flush()
    assert fsyncs == [w.path, str(tmp_path)]  # durable once flush() returns
    sl.scalar("x", 2.0, step=1)
    w.flush()
    assert fsyncs == [w.path, str(tmp_path), w.path]
    w.flush()  # nothing new: nothing to sync
    assert fsyncs == [w.path, str(tmp_path), w.path]
    w.close()
    assert fsyncs[-1] == w.path and fsyncs.count(str(tmp_path)) == 1


def test_fsync_true_syncs_background_flushes_too(tmp_path: Path, fsyncs: list[str]) -> None:
    from tests.helpers import wait_until

    w = sl.create_file_writer(tmp_path, fsync=True, max_queue=1)
    w.set_as_default()
    for i in range(10):  # the thread writes (and syncs) without being asked
        sl.scalar("x", float(i), step=i)
    assert wait_until(lambda: fsyncs.count(str(w.path)) >= 1)
    w.close()


def test_signal_tests_pass_when_pytest_runs_in_the_background() -> None:
    # A shell's background job (`cmd &`, nohup) starts with SIGINT and SIGQUIT ignored, and
    # the ignored disposition survives exec into every child. The signal tests must set the
    # dispositions they rely on instead of inheriting them from whoever started pytest.
    tests = [
        f"{__file__}::test_sigint_flushes_then_raises_keyboard_interrupt",
        f"{__file__}::test_sigterm_flushes_every_writer_then_dies_as_before",
        f"{__file__}::test_sigterm_chains_to_the_previous_python_handler",
    ]
    launcher = (
        "import os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGQUIT, signal.SIG_IGN)\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',"
        " *sys.argv[1:]])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", launcher, *tests],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "3 passed" in proc.stdout


def test_a_flush_in_a_signal_handler_while_the_writer_thread_starts() -> None:
    # A user's handler calls flush() and lands inside the first append, while that
    # append starts the writer thread (Thread.start, before the thread runs). The
    # flush must not report the thread as dead, nor raise into the interrupted call.
    import threading

    out = sl.MemoryOutput()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    handled: list[int] = []

    def handler(signum: int, frame: object) -> None:
        w.flush()
        handled.append(signum)

    def profile(frame: object, event: str, arg: object) -> None:
        code = frame.f_code  # type: ignore[attr-defined]
        if event == "call" and code.co_name == "start" and code.co_filename == threading.__file__:
            thread = frame.f_locals.get("self")  # type: ignore[attr-defined]
            if thread is not None and thread.name.startswith("summarylib-writer"):
                sys.setprofile(None)
                signal.raise_signal(signal.SIGUSR1)  # the handler runs inside start()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        w.set_as_default(step=0)
        sys.setprofile(profile)
        try:
            assert sl.scalar("x", 1.0)
        finally:
            sys.setprofile(None)
        assert handled == [signal.SIGUSR1]
        sl.scalar("x", 2.0, step=1)
        w.flush()
    finally:
        signal.signal(signal.SIGUSR1, old)
    w.close()
    assert [e.step for e in _memory_events(out.getvalue())] == [0, 0, 1]


def test_signals_that_keep_interrupting_flushes_in_their_handler() -> None:
    # A handler that logs and flushes, and a signal for every write: each signal lands
    # while the main thread waits inside a flush (the previous handler's, or its own).
    # Handlers must not nest without bound (RecursionError), and nothing is lost.
    import threading

    rounds = 1500
    main = threading.main_thread().ident
    assert main is not None
    sent = [0]

    class Signalling(sl.MemoryOutput):
        def write(self, data: bytes) -> None:
            super().write(data)
            if 0 < sent[0] < rounds:
                sent[0] += 1
                signal.pthread_kill(main, signal.SIGUSR1)

    out = Signalling()
    w = sl.create_writer(out, max_queue=10**6, flush_millis=10**9)
    handled = [0]

    def handler(signum: int, frame: object) -> None:
        handled[0] += 1
        sl.scalar("handler", float(handled[0]), step=handled[0])
        w.flush()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        w.set_as_default(step=0)
        sl.scalar("main", 0.0)
        sent[0] = 1
        w.flush()
        deadline = time.monotonic() + IO_TIMEOUT
        while handled[0] < rounds - 1 and time.monotonic() < deadline:
            w.flush()  # every handler's flush has returned by now: write what they logged
        assert handled[0] == rounds - 1
    finally:
        signal.signal(signal.SIGUSR1, old)
    w.close()
    steps = [e.step for e in _memory_events(out.getvalue()) if e.HasField("summary")]
    assert steps == list(range(rounds))
