"""The ``summarylib`` command line: inspect and verify."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import summarylib as sl
from summarylib.cli import main
from summarylib.reader import iter_records
from tests.helpers import only_file


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    with sl.create_file_writer(tmp_path / "train"):
        for step in range(5, 15):
            sl.scalar("loss", 1.0 / step, step=step)
    with sl.create_file_writer(tmp_path / "eval"):
        sl.scalar("acc", 0.9, step=7)
    return tmp_path


def test_inspect_text(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", os.fspath(logdir)]) == 0
    out = capsys.readouterr().out
    assert "run 'train': 1 file(s), 11 record(s)" in out
    assert "run 'eval': 1 file(s), 2 record(s)" in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("loss"))
    assert "scalars" in line and " 10 " in line and "5..14" in line
    assert "file_version: brain.Event:2\n" in out  # the version, not a count


def test_inspect_json(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json", os.fspath(logdir)]) == 0
    data = json.loads(capsys.readouterr().out)
    loss = data["train"]["tags"]["loss"]
    assert (loss["plugin"], loss["count"], loss["min_step"], loss["max_step"]) == (
        "scalars", 10, 5, 14,
    )
    assert loss["first_wall_time"] <= loss["last_wall_time"]
    assert data["eval"]["tags"]["acc"]["count"] == 1
    assert data["train"]["problems"] == []


def test_inspect_missing_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", os.fspath(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_verify_ok(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", os.fspath(logdir)]) == 0
    assert "OK: 2 file(s), 13 valid record(s), 0 corrupt file(s)" in capsys.readouterr().out


def test_verify_names_file_and_offset_of_corruption(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = only_file(logdir / "train")
    offsets = [r.offset for r in iter_records(path)]
    data = bytearray(path.read_bytes())
    data[offsets[4] + 14] ^= 0xFF
    path.write_bytes(bytes(data))
    assert main(["verify", os.fspath(logdir)]) == 1
    out = capsys.readouterr().out
    assert f"CORRUPT {path}" in out and f"offset {offsets[4]}" in out
    assert "FAILED" in out and "1 corrupt file(s)" in out


def test_verify_notes_truncated_tail_but_passes(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = only_file(logdir / "eval")
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    assert main(["verify", os.fspath(path)]) == 0
    out = capsys.readouterr().out
    assert "truncated last record" in out and "OK: 1 file(s), 1 valid record(s)" in out


def test_verify_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", os.fspath(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().out


def test_python_dash_m_entry_point(logdir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "summarylib", "verify", os.fspath(logdir)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OK")


def test_console_script_verifies_and_fails_on_corruption(logdir: Path) -> None:
    script = Path(sys.executable).with_name("summarylib")
    if not script.exists():
        pytest.skip("the package is not installed: no summarylib script beside this Python")
    ok = subprocess.run(
        [script, "verify", os.fspath(logdir)], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK")
    path = only_file(logdir / "eval")
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # inside the last record's payload: its CRC no longer matches
    path.write_bytes(bytes(data))
    bad = subprocess.run(
        [script, "verify", os.fspath(logdir)], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1
    assert os.fspath(path) in bad.stdout + bad.stderr


def _cli(*args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "summarylib", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, **kwargs,
    )


def _first_lines_then_close(proc: subprocess.Popen[bytes], n: int) -> tuple[int, str]:
    # What `... | head -n` does: read n lines, close the pipe, leave the writer to it.
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(n):
        assert proc.stdout.readline()
    proc.stdout.close()
    with proc:
        err = proc.stderr.read().decode()
        return proc.wait(120), err


def test_a_closed_pipe_ends_tail_and_inspect_quietly(tmp_path: Path) -> None:
    # More output than a pipe holds, so the writer is still writing when the reader goes.
    with sl.create_file_writer(tmp_path / "run"):
        for step in range(3000):
            sl.scalar("loss", 1.0 / (step + 1), step=step)
    for i in range(1500):
        with sl.create_file_writer(tmp_path / f"run{i}"):
            sl.scalar(f"a_rather_long_tag_name_{i}", 1.0, step=0)
    tail = _cli("tail", "--from-start", "--interval", "0.05", os.fspath(tmp_path / "run"))
    status, err = _first_lines_then_close(tail, 2)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert status == 141
    inspect = _cli("inspect", os.fspath(tmp_path))
    status, err = _first_lines_then_close(inspect, 1)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert status == 141


def test_export_to_a_missing_directory_is_a_clear_error(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "nonexistent" / "x.csv"
    assert main(["export", os.fspath(logdir), "-o", os.fspath(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {target}: no such directory")
    assert main(["plot", os.fspath(logdir), "--tag", "loss", "-o", os.fspath(target)]) == 2
    assert "error: cannot write" in capsys.readouterr().err
    assert main(["export", os.fspath(logdir), "-o", os.fspath(tmp_path)]) == 2
    assert "it is a directory" in capsys.readouterr().err


def test_export_dash_writes_standard_output(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["export", os.fspath(logdir), "-o", "-", "--format", "jsonl"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert len(rows) == 11 and {r["run"] for r in rows} == {"train", "eval"}
    assert "wrote 11 rows to standard output" in captured.err
    assert not (tmp_path / "-").exists()
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    with _cli("export", os.fspath(logdir), "-o", "-", "--format", "parquet", cwd=tmp_path) as proc:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    table = pq.read_table(pa.BufferReader(out))
    assert table.num_rows == 11
    assert not (tmp_path / "-").exists()


def test_inspect_export_and_plot_take_one_event_file(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = os.fspath(only_file(logdir / "train"))
    assert main(["inspect", path]) == 0
    out = capsys.readouterr().out
    assert "run '.': 1 file(s), 11 record(s)" in out and "5..14" in out
    assert main(["export", path, "-o", os.fspath(tmp_path / "x.csv")]) == 0
    lines = (tmp_path / "x.csv").read_text().splitlines()
    assert len(lines) == 11 and lines[1].startswith(".,loss,5,")
    assert main(["plot", path, "--tag", "loss", "-o", os.fspath(tmp_path / "x.png")]) == 0
    assert (tmp_path / "x.png").stat().st_size > 0
    capsys.readouterr()
    assert main(["inspect", "--json", path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["."]["file_versions"] == {"brain.Event:2": 1}
    assert "file_version" not in data["."]["other"]


def test_inspect_escapes_control_characters_of_tags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A tag from an untrusted file must not clear the terminal or forge a line.
    with sl.create_file_writer(tmp_path) as w, w.as_default():
        sl.scalar("evil\x1b[2Jtag\nforged", 1.0, step=0)
    assert main(["inspect", os.fspath(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "evil\\x1b[2Jtag\\nforged" in out
    assert not any(line.startswith("forged") for line in out.splitlines())


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc")
def test_export_names_an_unreadable_input_not_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.csv"
    # /proc/self/mem cannot be read from its start (EIO): an input that fails mid-read.
    assert main(["export", "/proc/self/mem", "-o", os.fspath(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot read /proc/self/mem" in err
    assert "cannot write" not in err
