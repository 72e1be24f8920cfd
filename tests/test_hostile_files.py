"""Event files are untrusted input: fuzz the reader, read_scalars and the CLI.

Whatever the bytes (random, bit-flipped, truncated, lengths up to 2**64-1,
well-framed records holding nonsense Events), reading ends cleanly or raises
DataLossError naming the file and an offset inside it: never another
exception, never a hang (every example runs under an alarm), never an
allocation beyond the file's size (measured with tracemalloc) and so never
a MemoryError. Hostile directories (symlink loops, FIFOs, dangling links)
neither hang nor crash the tools either.

A deeper run: ``HYPOTHESIS_PROFILE=thorough pytest tests/test_hostile_files.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import struct
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib import cli
from summarylib.encoding._tfrecord import frame, masked_crc32c
from summarylib.errors import DataLossError
from summarylib.reader import RecordReader, iter_events, list_runs, read_scalars
from tests.helpers import tb_events

# Memory a read may use whatever the file: buffers, parsed messages, numpy.
SLACK = 3 << 20
# A hang never ends; a loaded CI machine can take several times a read's usual second.
ALARM_SECS = 60

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@contextlib.contextmanager
def alarm(seconds: int = ALARM_SECS) -> Iterator[None]:
    """Fail (instead of hanging) if the block takes longer than ``seconds``."""

    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"reading took longer than {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _valid_file(tmp: Path) -> bytes:
    import numpy as np

    logdir = tmp / "valid"
    w = sl.create_file_writer(logdir)
    with w.as_default(step=0):
        for i in range(5):
            sl.scalar("loss", 1.0 / (i + 1), step=i)
        sl.scalars({"a": 1.0, "b": 2.0}, step=5)
        sl.write("vec", np.arange(10, dtype=np.float32), step=6)
        sl.write("words", np.array([b"x", b"yz"]), step=7)
    w.close()
    (path,) = list(logdir.iterdir())
    data = path.read_bytes()
    path.unlink()
    logdir.rmdir()
    return data


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _valid_file(tmp_path_factory.mktemp("valid"))


def read_everything(path: Path) -> None:
    """Every reading entry point on ``path``; only DataLossError may escape."""
    size = path.stat().st_size
    tracemalloc.start()
    try:
        with alarm():
            _check(lambda: list(RecordReader(path)), path, size)
            _check(lambda: list(iter_events(path)), path, size)
            _check(lambda: read_scalars(path.parent), path, size)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = cli.main(["verify", str(path)])
            assert status in (0, 1), out.getvalue()
            for line in out.getvalue().splitlines():
                if line.startswith("CORRUPT"):
                    offset = int(line.rsplit(" at offset ", 1)[1])
                    assert 0 <= offset <= size, line
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli.main(["inspect", str(path.parent)]) == 0
                assert cli.main(["inspect", "--json", str(path.parent)]) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 2 * size + SLACK, f"{peak} bytes allocated for a {size}-byte file"


def _check(fn: object, path: Path, size: int) -> None:
    try:
        fn()  # type: ignore[operator]
    except DataLossError as e:
        assert e.path == str(path)
        assert 0 <= e.offset <= size
        assert str(path) in str(e) and str(e.offset) in str(e)


def _put(tmp: Path, data: bytes) -> Path:
    d = tmp / "run"
    d.mkdir(exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    path = d / "events.out.tfevents.0000000001.fuzz.1.0.v2"
    path.write_bytes(data)
    return path


@FUZZ
@given(data=st.binary(max_size=2048))
def test_random_bytes(tmp_path: Path, data: bytes) -> None:
    read_everything(_put(tmp_path, data))


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 7)), min_size=1, max_size=8))
def test_flipped_bits(tmp_path: Path, valid: bytes, flips: list[tuple[int, int]]) -> None:
    data = bytearray(valid)
    for pos, bit in flips:
        data[pos % len(data)] ^= 1 << bit
    read_everything(_put(tmp_path, bytes(data)))


def test_every_truncation(tmp_path: Path, valid: bytes) -> None:
    for cut in range(len(valid) + 1):
        path = _put(tmp_path, valid[:cut])
        if cut % 17 == 0 or cut == len(valid):  # every tool on a sample of cuts
            read_everything(path)
        # A cut is a torn tail: never an error, and every whole record stays.
        reader = RecordReader(path)
        n = len(list(reader))
        assert reader.end <= cut and (reader.truncated_at is None) == (reader.end == cut)
        # TensorBoard's own loader reads the same whole records and stops there.
        ours = [(e.step, e.wall_time) for e in iter_events(path)]
        assert len(ours) == n and [(e.step, e.wall_time) for e in tb_events(path)] == ours, cut
        assert n == len(list(RecordReader(_put(tmp_path, valid[: reader.end]))))


@FUZZ
@given(
    length=st.one_of(
        st.integers(0, 2**64 - 1),
        st.sampled_from([2**64 - 1, 2**63, 2**32, 2**31 - 1, 10**12]),
    ),
    good_length_crc=st.booleans(),
    body=st.binary(max_size=256),
    prefix_records=st.integers(0, 3),
)
def test_any_length_up_to_2_64(
    tmp_path: Path,
    valid: bytes,
    length: int,
    good_length_crc: bool,
    body: bytes,
    prefix_records: int,
) -> None:
    head = b"".join(frame(b"\x08\x01") for _ in range(prefix_records))
    length_bytes = struct.pack("<Q", length)
    crc = masked_crc32c(length_bytes) if good_length_crc else 0x12345678
    data = head + length_bytes + struct.pack("<I", crc) + body
    read_everything(_put(tmp_path, data))


def _event_strategy() -> st.SearchStrategy[bytes]:
    """Well-framed records whose Events hold hostile tensors and metadata."""
    from summarylib.proto import event_pb2

    def build(
        plugin: str,
        dtype: int,
        dims: list[int],
        content: bytes,
        floats: list[float],
        ints: list[int],
        strings: list[bytes],
        simple: float | None,
    ) -> bytes:
        e = event_pb2.Event(wall_time=1.0, step=3)
        v = e.summary.value.add(tag="t")
        v.metadata.plugin_data.plugin_name = plugin
        if simple is not None:
            v.simple_value = simple
        else:
            v.tensor.dtype = dtype  # type: ignore[assignment]
            for d in dims:
                v.tensor.tensor_shape.dim.add(size=d)
            v.tensor.tensor_content = content
            v.tensor.float_val.extend(floats)
            v.tensor.int_val.extend(ints)
            v.tensor.string_val.extend(strings)
        return e.SerializeToString()

    return st.builds(
        build,
        plugin=st.sampled_from(["scalars", "histograms", "images", "text", ""]),
        dtype=st.integers(0, 30),
        dims=st.lists(
            st.one_of(st.integers(-2, 4), st.sampled_from([2**31, 2**40, 2**62, 2**63 - 1])),
            max_size=4,
        ),
        content=st.binary(max_size=64),
        floats=st.lists(st.floats(width=32), max_size=4),
        ints=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4),
        strings=st.lists(st.binary(max_size=8), max_size=3),
        simple=st.one_of(st.none(), st.floats(width=32)),
    )


@FUZZ
@given(payloads=st.lists(st.one_of(_event_strategy(), st.binary(max_size=64)), max_size=6))
def test_well_framed_nonsense(tmp_path: Path, valid: bytes, payloads: list[bytes]) -> None:
    data = valid + b"".join(frame(p) for p in payloads)
    read_everything(_put(tmp_path, data))


def test_scalar_tensor_claiming_a_huge_shape_is_not_allocated(tmp_path: Path) -> None:
    # A "scalars" value whose tensor claims 2**40 elements but holds one:
    # decoding it the TensorFlow way would fill a 4 TiB array.
    from summarylib.proto import event_pb2

    e = event_pb2.Event(wall_time=1.0, step=0)
    v = e.summary.value.add(tag="loss")
    v.metadata.plugin_data.plugin_name = "scalars"
    v.tensor.dtype = 1  # type: ignore[assignment]
    v.tensor.tensor_shape.dim.add(size=2**40)
    v.tensor.float_val.append(0.5)
    path = _put(tmp_path, frame(e.SerializeToString()))
    read_everything(path)
    assert read_scalars(path.parent) == {}  # not a scalar: skipped


def test_scalar_tensor_with_content_of_the_wrong_size_is_skipped(tmp_path: Path) -> None:
    from summarylib.proto import event_pb2

    e = event_pb2.Event(wall_time=1.0, step=0)
    v = e.summary.value.add(tag="loss")
    v.metadata.plugin_data.plugin_name = "scalars"
    v.tensor.dtype = 1  # type: ignore[assignment]
    v.tensor.tensor_content = b"\x00\x00\x80"  # 3 bytes for a float32
    ok = event_pb2.Event(wall_time=2.0, step=1)
    w = ok.summary.value.add(tag="loss")
    w.tensor.dtype = 2  # type: ignore[assignment]
    w.tensor.double_val.append(0.25)
    path = _put(tmp_path, frame(e.SerializeToString()) + frame(ok.SerializeToString()))
    read_everything(path)
    assert read_scalars(path.parent) == {".": {"loss": [(1, 2.0, 0.25)]}}


# -- hostile directories ------------------------------------------------------------------


def test_symlink_loops_neither_hang_nor_multiply_runs(tmp_path: Path, valid: bytes) -> None:
    run = tmp_path / "logs" / "run"
    run.mkdir(parents=True)
    (run / "events.out.tfevents.1.h.1.0.v2").write_bytes(valid)
    # Two loops per directory: following them naively visits 2**40 paths.
    (run / "loop1").symlink_to(run, target_is_directory=True)
    (run / "loop2").symlink_to(tmp_path / "logs", target_is_directory=True)
    with alarm():
        assert list(list_runs(tmp_path / "logs")) == ["run"]
        assert list(read_scalars(tmp_path / "logs")) == ["run"]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli.main(["verify", str(tmp_path / "logs")]) == 0
    assert "OK: 1 file(s)" in out.getvalue()


def test_fifos_devices_and_dangling_links_are_not_event_files(
    tmp_path: Path, valid: bytes
) -> None:
    run = tmp_path / "logs"
    run.mkdir()
    (run / "events.out.tfevents.1.h.1.0.v2").write_bytes(valid)
    os.mkfifo(run / "events.out.tfevents.2.fifo.1.0.v2")  # opening it would block forever
    (run / "events.out.tfevents.3.dangling.1.0.v2").symlink_to(tmp_path / "nowhere")
    (run / "events.out.tfevents.4.zero.1.0.v2").symlink_to("/dev/zero")
    with alarm():
        assert [Path(p).name for p in list_runs(run)["."]] == ["events.out.tfevents.1.h.1.0.v2"]
        assert list(read_scalars(run)) == ["."]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli.main(["verify", str(run)]) == 0
            assert cli.main(["inspect", str(run)]) == 0
        for name in ("events.out.tfevents.2.fifo.1.0.v2", "events.out.tfevents.4.zero.1.0.v2"):
            # Named explicitly: an error, not a hang.
            with pytest.raises(DataLossError, match="not a regular file"):
                list(RecordReader(run / name))
            with contextlib.redirect_stdout(io.StringIO()) as out:
                assert cli.main(["verify", str(run / name)]) != 0
    assert "OK" not in out.getvalue()


@pytest.fixture
def deep_chain() -> Iterator[Path]:
    """``<tmp>/logs/d/d/.../d``, 1000 deep (past Python's recursion limit); yields
    ``<tmp>``. Made outside pytest's ``tmp_path``, whose cleanup recurses and would fail on
    it, and removed bottom-up afterwards."""
    base = Path(tempfile.mkdtemp(prefix="summarylib-deep-"))
    deepest = base / "logs"
    try:
        deepest.mkdir()
        for _ in range(1000):
            deepest = deepest / "d"
            deepest.mkdir()
        yield base
    finally:
        d = deepest
        while True:
            for f in d.iterdir():
                if f.is_symlink() or not f.is_dir():
                    f.unlink()
            d.rmdir()
            if d == base:
                break
            d = d.parent


def test_a_chain_of_a_thousand_directories_is_walked_not_recursed(deep_chain: Path) -> None:
    from summarylib.reader import iter_run_events
    from summarylib.reader.tailing import tail

    tmp_path = deep_chain
    logdir = tmp_path / "logs"
    deepest = logdir.joinpath(*["d"] * 1000)
    with sl.create_file_writer(deepest):
        sl.scalar("loss", 0.5, step=3)
    run = "/".join(["d"] * 1000)
    with alarm(60):
        assert list(list_runs(logdir)) == [run]
        assert read_scalars(logdir)[run]["loss"][0][::2] == (3, 0.5)
        assert [r for r, _ in iter_run_events(logdir)] == [run, run]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli.main(["inspect", str(logdir)]) == 0
            assert cli.main(["verify", str(logdir)]) == 0
            assert cli.main(["export", str(logdir), "-o", str(tmp_path / "x.csv")]) == 0
            assert cli.main(
                ["plot", str(logdir), "--tag", "loss", "-o", str(tmp_path / "x.png")]
            ) == 0
        assert "OK: 1 file(s), 2 valid record(s)" in out.getvalue()
        assert (tmp_path / "x.csv").read_text().splitlines()[1].startswith(f"{run},loss,3,")
        polls = iter(range(2))
        printed = io.StringIO()
        tail(logdir, printed, interval=0, from_start=True, stop=lambda: next(polls) > 0)
        assert printed.getvalue().split()[:4] == [run, "loss", "3", "0.5"]


# -- hostile files on the command line ------------------------------------------------------

# The child's own peak RSS after running commands: python, numpy, protobuf and pillow take
# well under this; the failures it guards against took gigabytes.
RSS_BOUND = 400 << 20
_PEAK_RSS = """
import contextlib, io, sys
# The child's own peak: a child forked from a large parent starts with the parent's pages
# counted (ru_maxrss survives exec), so reset the high-water mark first (Linux).
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
from summarylib import cli
from summarylib.reader import RecordReader
from summarylib.errors import DataLossError
logdir, file, out = sys.argv[1:4]
with contextlib.suppress(DataLossError):
    for _ in RecordReader(file):
        pass
for args in (["verify", logdir], ["inspect", logdir], ["export", logdir, "-o", out + ".csv"],
             ["plot", logdir, "--tag", "loss", "-o", out + ".png"]):
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        status = cli.main(args)
    print(args[0], status, printed.getvalue().replace(chr(10), " | "))
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print("peak", hwm * 1024)
"""


def _peak_rss(logdir: Path, file: Path, out: Path) -> tuple[int, str]:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, str(logdir), str(file), str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    peak = int(proc.stdout.rsplit("peak ", 1)[1])
    return peak, proc.stdout + proc.stderr


def _huge_header(length: int) -> bytes:
    header = struct.pack("<Q", length)
    return header + struct.pack("<I", masked_crc32c(header))


def test_a_sparse_file_claiming_a_gigabyte_record_costs_no_gigabyte(
    tmp_path: Path, valid: bytes
) -> None:
    # A whole record, length CRC and all, whose payload is a hole: 1 GiB of zeros that take
    # no disk. Its data CRC is wrong, which can only be known by reading it: streamed.
    path = _put(tmp_path, valid + _huge_header(1 << 30))
    with open(path, "r+b") as f:
        f.truncate(len(valid) + 12 + (1 << 30) + 4)
    peak, printed = _peak_rss(path.parent, path, tmp_path / "out")
    assert peak < RSS_BOUND, printed
    assert f"CORRUPT {path}: corrupted record (bad data checksum) at offset {len(valid)}" in (
        printed
    )


def test_a_torn_record_claiming_hundreds_of_megabytes_is_not_read(
    tmp_path: Path, valid: bytes
) -> None:
    path = _put(tmp_path, valid + _huge_header(300 << 20))
    with open(path, "ab") as f:
        f.write(b"\1" * (200 << 20))  # only 200 MB of its 300 arrived: a torn tail
    peak, printed = _peak_rss(path.parent, path, tmp_path / "out")
    assert peak < RSS_BOUND, printed
    assert "export 0" in printed and "plot 0" in printed and "verify 0" in printed
    assert (tmp_path / "out.csv").read_text().count("loss") == 5


@settings(max_examples=200, deadline=None)
@given(
    dims=st.lists(st.one_of(st.integers(0, 4), st.integers(0, 2**63 - 1)), max_size=4),
    dtype=st.sampled_from([1, 2, 3, 7, 9, 19]),
    values=st.integers(0, 2),
)
# Empty, but its other dims' product of bytes is past what numpy can describe.
@example(dims=[0, 386949, 1321118, 2255301], dtype=2, values=0)
@example(dims=[0, 386949, 1321118, 2255301], dtype=2, values=1)
def test_tensor_shapes_are_never_trusted(dims: list[int], dtype: int, values: int) -> None:
    from summarylib.proto import tensor_pb2
    from summarylib.reader.tensors import tensor_array, tensor_strings

    tensor = tensor_pb2.TensorProto(dtype=dtype)
    for d in dims:
        tensor.tensor_shape.dim.add(size=d)
    if dtype == 7:
        tensor.string_val.extend([b"x"] * values)
    elif dtype == 9:
        tensor.int64_val.extend([1] * values)
    elif dtype == 2:
        tensor.double_val.extend([1.0] * values)
    elif dtype == 3:
        tensor.int_val.extend([1] * values)
    elif dtype == 19:
        tensor.half_val.extend([1] * values)
    else:
        tensor.float_val.extend([1.0] * values)
    tracemalloc.start()
    try:
        with alarm():
            array = tensor_array(tensor)
            strings = tensor_strings(tensor)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (1 << 24) * 8 + SLACK
    if array is not None:
        assert list(array.shape) == dims
    if strings is not None:
        assert dtype == 7


def test_scalars_and_histograms_claiming_huge_shapes_are_skipped_by_every_command(
    tmp_path: Path, valid: bytes
) -> None:
    from summarylib.proto import event_pb2
    from summarylib.reader import KINDS, read_columns

    events = []
    for tag, plugin, dims in (
        ("loss", "scalars", [2**62, 4]),
        ("h", "histograms", [2**32, 2**32]),
        ("t", "text", [2**62, 0, 5]),
    ):
        event = event_pb2.Event(step=9, wall_time=1.0)
        value = event.summary.value.add(tag=tag)
        value.metadata.plugin_data.plugin_name = plugin
        value.tensor.dtype = 7 if plugin == "text" else 1
        for d in dims:
            value.tensor.tensor_shape.dim.add(size=d)
        events.append(frame(event.SerializeToString()))
    path = _put(tmp_path, valid + b"".join(events))
    with alarm(60):
        data = read_columns(path, KINDS)
        assert list(data["."]["loss"].step) == list(range(5))
        for args in (
            ["verify", str(path)],
            ["inspect", str(path)],
            ["export", str(path), "-o", str(tmp_path / "x.csv")],
            ["plot", str(path), "--tag", "loss", "-o", str(tmp_path / "x.png")],
        ):
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli.main(args) == 0, args


def test_links_out_of_the_logdir_are_followed_only_when_asked(
    tmp_path: Path, valid: bytes
) -> None:
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    (logdir / "run" / "events.out.tfevents.1.h.1.0.v2").write_bytes(valid)
    elsewhere = tmp_path / "elsewhere" / "run"
    elsewhere.mkdir(parents=True)
    (elsewhere / "events.out.tfevents.1.h.1.0.v2").write_bytes(valid)
    (logdir / "host").symlink_to("/", target_is_directory=True)  # the whole machine
    (logdir / "other").symlink_to(elsewhere, target_is_directory=True)
    (logdir / "zz").symlink_to(logdir / "run", target_is_directory=True)  # inside: followed
    with alarm(30):
        assert sorted(list_runs(logdir, follow_links=False)) == ["run"]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli.main(["verify", str(logdir)]) == 0
        assert "OK: 1 file(s)" in out.getvalue()
        (logdir / "host").unlink()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli.main(["verify", "--follow-links", str(logdir)]) == 0
            assert cli.main(["inspect", "--follow-links", str(logdir)]) == 0
            assert cli.main(["export", str(logdir), "-o", str(tmp_path / "x.csv")]) == 0
        assert "OK: 2 file(s)" in out.getvalue()
        assert "run 'other'" in out.getvalue()
        rows = (tmp_path / "x.csv").read_text().splitlines()[1:]
        assert {line.split(",")[0] for line in rows} == {"run"}
        # The library keeps TensorBoard's way by default: every link is followed.
        assert sorted(list_runs(logdir)) == ["other", "run"]


def test_names_that_are_not_utf8_are_printed_as_they_are(tmp_path: Path, valid: bytes) -> None:
    import subprocess
    import sys

    logdir = tmp_path / "logs"
    run = os.path.join(os.fsencode(logdir), b"run\xff")
    os.makedirs(run)
    name = b"events.out.tfevents.1.h\xfe.1.0.v2"
    with open(os.path.join(run, name), "wb") as f:
        f.write(valid[:-3])  # torn: verify names the file
    # What a UTF-8 locale gives (this machine may lack one, and Python then escapes).
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    verify = subprocess.run(
        [sys.executable, "-m", "summarylib", "verify", str(logdir)],
        capture_output=True, timeout=120, env=env,
    )
    assert verify.returncode == 0, verify.stderr
    assert os.path.join(run, name) in verify.stdout and b"Traceback" not in verify.stderr
    with subprocess.Popen(
        [sys.executable, "-m", "summarylib", "tail", "--from-start", str(logdir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    ) as tail:
        assert tail.stdout is not None and tail.stderr is not None
        first = tail.stdout.readline()
        tail.terminate()
        err = tail.stderr.read()
    assert first.split()[:2] == [b"run\xff", b"loss"], (first, err)
    assert b"Traceback" not in err
