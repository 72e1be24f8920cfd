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
    assert "file_version: 1" in out


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
    assert "not a directory" in capsys.readouterr().err


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
