"""DataFrames, hparams tables, export, plot, tail and progress bars.

The tbparse cases below re-create, in our own code, the cases of tbparse's test suite that
read scalars, tensors, histograms, text and hparams (a torch writer logging ``y=2x+C`` and
``y=3x+C`` in three runs, five steps each; TF2-style tensors; ...), and compare our tables
with what the installed tbparse returns for the same files.

Left out: tbparse's image, audio and figure cases (tbparse needs TensorFlow to decode
those, and TensorFlow is not installed here; our images are checked against TensorBoard's
own loader in test_columns.py instead).
"""

from __future__ import annotations

import io
import json
import math
import os
import pty
import select
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import summarylib as sl
from summarylib.reader import read_columns, read_dataframe, read_hparams
from summarylib.reader.plotting import PALETTE, draw_chart, smooth
from summarylib.reader.tailing import sparkline
from tests.helpers import only_file

REPO = Path(__file__).resolve().parent.parent
N_RUNS = 3
N_EVENTS = 5


def _quiet_torch_writer() -> Any:
    tb = pytest.importorskip("torch.utils.tensorboard")
    return tb.SummaryWriter


@pytest.fixture
def torch_runs(tmp_path: Path) -> Path:
    writer_cls = _quiet_torch_writer()
    log_dir = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(N_RUNS):
            w = writer_cls(str(log_dir / f"run{i}"))
            for j in range(N_EVENTS):
                w.add_scalar("y=2x+C", j * 2 + i, j)
                w.add_scalar("y=3x+C", j * 3 + i, j)
            w.close()
    return log_dir


def _tbparse(path: Path, view: str, **kw: Any) -> Any:
    """tbparse's ``view`` (``scalars``, ``tensors``, ...) of ``path`` (its pandas warns)."""
    tbparse = pytest.importorskip("tbparse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(tbparse.SummaryReader(str(path), **kw), view)


def _rows(df: Any, value: str = "value") -> list[tuple[Any, ...]]:
    return sorted(
        zip(df["run"], df["tag"], df["step"], df[value].astype(float), df["wall_time"], strict=True)
    )


def test_tbparse_scalars_from_a_logdir_a_run_and_a_file(torch_runs: Path) -> None:
    theirs = _tbparse(torch_runs, "scalars", extra_columns={"wall_time", "dir_name"})
    theirs = theirs.rename(columns={"dir_name": "run"})
    ours = read_dataframe(torch_runs)
    assert list(ours.columns) == ["run", "tag", "step", "wall_time", "value"]
    assert _rows(ours) == _rows(theirs)
    assert len(ours) == N_RUNS * N_EVENTS * 2
    run_dir = torch_runs / "run1"
    for path in (run_dir, only_file(run_dir)):
        theirs = _tbparse(path, "scalars", extra_columns={"wall_time"}).assign(run=".")
        assert _rows(read_dataframe(path)) == _rows(theirs)
    mine = read_dataframe(run_dir)
    assert mine["value"].tolist()[:N_EVENTS] == [j * 2 + 1 for j in range(N_EVENTS)]


def test_tbparse_pivot(torch_runs: Path) -> None:
    theirs = _tbparse(torch_runs, "scalars", pivot=True, extra_columns={"dir_name"})
    ours = read_dataframe(torch_runs, pivot=True)
    assert list(ours.columns) == ["run", "step", "y=2x+C", "y=3x+C", "wall_time"]
    assert ours["run"].tolist() == theirs["dir_name"].tolist()
    assert ours["step"].tolist() == theirs["step"].tolist()
    for tag in ("y=2x+C", "y=3x+C"):
        assert ours[tag].astype(float).tolist() == theirs[tag].astype(float).tolist()


def test_tbparse_tensors_are_our_scalars(tmp_path: Path) -> None:
    # TF2-style scalars are tensors: tbparse lists them under .tensors only (its .scalars
    # view is empty, a trap); read_dataframe counts them as scalars, as TensorBoard does.
    for i in range(N_RUNS):
        w = sl.create_file_writer(str(tmp_path / f"run{i}"))
        with w.as_default():
            for j in range(N_EVENTS):
                sl.scalar("y=2x+C", j * 2 + i, step=j)
                sl.scalar("y=3x+C", j * 3 + i, step=j)
        w.close()
    kw: dict[str, Any] = {"extra_columns": {"wall_time", "dir_name"}}
    assert _tbparse(tmp_path, "scalars", **kw).empty
    theirs = _tbparse(tmp_path, "tensors", **kw).rename(columns={"dir_name": "run"})
    assert _rows(read_dataframe(tmp_path)) == _rows(theirs)


def test_tbparse_text(tmp_path: Path) -> None:
    writer_cls = _quiet_torch_writer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = writer_cls(str(tmp_path / "torch"))
        for j in range(N_EVENTS):
            w.add_text("note", f"torch {j}", j)
        w.close()
    ours_writer = sl.create_file_writer(str(tmp_path / "ours"))
    with ours_writer.as_default():
        for j in range(N_EVENTS):
            sl.text("note", f"ours **{j}**", step=j)
    ours_writer.close()
    theirs = _tbparse(tmp_path, "text", extra_columns={"dir_name"})
    ours = read_dataframe(tmp_path, kinds=("text",))
    # tbparse names torch's tag "note/text_summary" by its plugin-less prefix "note".
    got = sorted((r, t.removesuffix("/text_summary"), s, v) for r, t, s, v in
                 zip(ours["run"], ours["tag"], ours["step"], ours["value"], strict=True))
    want = sorted(zip(theirs["dir_name"], theirs["tag"], theirs["step"], theirs["value"],
                      strict=True))
    assert got == want


def test_tbparse_histograms(tmp_path: Path) -> None:
    writer_cls = _quiet_torch_writer()
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = writer_cls(str(tmp_path))
        for j in range(N_EVENTS):
            w.add_histogram("dist", rng.normal(j, 1, 300), j)
        w.close()
    theirs = _tbparse(tmp_path, "histograms")
    ours = read_columns(tmp_path, ("histograms",))["."]["dist"]
    assert ours.step.tolist() == theirs["step"].tolist()
    for buckets, counts in zip(ours.value, theirs["counts"], strict=True):
        # TensorBoard (and so we) drop the empty buckets at both ends of a legacy histogram.
        nonzero = np.flatnonzero(counts)
        np.testing.assert_array_equal(buckets[:, 2], counts[nonzero[0] : nonzero[-1] + 1])
        assert buckets[:, 2].sum() == 300


def test_tbparse_hparams_and_our_trials_table(tmp_path: Path) -> None:
    writer_cls = _quiet_torch_writer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = writer_cls(str(tmp_path))
        w.add_scalar("loss", 0.5, 0)
        w.add_hparams({"lr": 0.1, "opt": "adam", "bs": 32}, {"hparam/acc": 0.9})
        w.close()
    theirs = _tbparse(tmp_path, "hparams", extra_columns={"dir_name"})
    rows = read_hparams(tmp_path)
    assert len(rows) == 1
    row = rows.iloc[0].to_dict()
    trial = theirs["dir_name"].iloc[0]
    assert row["run"] == trial
    assert {t: row[t] for t in theirs["tag"]} == dict(
        zip(theirs["tag"], theirs["value"], strict=True)
    )
    assert row["hparam/acc"] == pytest.approx(0.9)


# -- export ---------------------------------------------------------------------------------


def _small_logdir(path: Path) -> None:
    for run in ("a", "b"):
        w = sl.create_file_writer(str(path / run))
        with w.as_default():
            for s in range(20):
                sl.scalars({"loss": 1.0 / (s + 1), "odd": math.inf if s == 3 else s}, step=s)
            sl.scalar("odd", math.nan, step=20)
        w.close()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_round_trips(tmp_path: Path, fmt: str) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    import pandas as pd

    _small_logdir(tmp_path / "logs")
    out = tmp_path / f"out.{fmt}"
    proc = subprocess.run(
        [sys.executable, "-m", "summarylib", "export", str(tmp_path / "logs"), "--format", fmt,
         "-o", str(out)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress bar when stderr is not a terminal
    assert "wrote 82 rows" in proc.stdout
    if fmt == "csv":
        got = pd.read_csv(out)
    elif fmt == "jsonl":
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert {"run", "tag", "step", "wall_time", "value"} == set(lines[0])
        got = pd.DataFrame(lines).replace({"NaN": math.nan, "Infinity": math.inf})
    else:
        got = pd.read_parquet(out)
        assert str(got["value"].dtype) == "float32" and str(got["step"].dtype) == "int64"
    want = read_dataframe(tmp_path / "logs")
    assert got["run"].astype(str).tolist() == want["run"].tolist()
    assert got["tag"].astype(str).tolist() == want["tag"].tolist()
    assert got["step"].tolist() == want["step"].tolist()
    assert got["wall_time"].tolist() == want["wall_time"].tolist()
    np.testing.assert_array_equal(
        got["value"].astype(np.float64).to_numpy(), want["value"].astype(np.float64).to_numpy()
    )


# -- plot -----------------------------------------------------------------------------------


def test_smoothing_is_tensorboards() -> None:
    # TensorBoard: last = last * w + (1 - w) * v; debiased by 1 - w ** n over finite values.
    values = [1.0, 2.0, math.nan, 4.0]
    got = smooth(values, 0.5)
    assert got[0] == 1.0 and got[1] == pytest.approx((0.25 + 1.0) / 0.75)
    assert math.isnan(got[2])
    assert got[3] == pytest.approx((0.5 * 1.25 + 0.5 * 4.0) / (1 - 0.5**3))
    assert smooth([3.0] * 5, 0.9).tolist() == pytest.approx([3.0] * 5)


def _near(image: Any, xy: tuple[int, int], colour: tuple[int, int, int], r: int = 2) -> bool:
    x0, y0 = xy
    for dx in range(-r, r + 1):
        for dy in range(-r, r + 1):
            if image.getpixel((x0 + dx, y0 + dy))[:3] == colour:
                return True
    return False


def test_plot_draws_each_run_where_its_curve_is(tmp_path: Path) -> None:
    from PIL import Image

    logdir = tmp_path / "logs"
    for run, slope in (("up", 1.0), ("down", -1.0)):
        w = sl.create_file_writer(str(logdir / run))
        with w.as_default():
            for s in range(50):
                sl.scalar("loss", 100 + slope * s, step=s)
        w.close()
    out = tmp_path / "loss.png"
    proc = subprocess.run(
        [sys.executable, "-m", "summarylib", "plot", str(logdir), "--tag", "loss",
         "--smoothing", "0", "-o", str(out)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    image = Image.open(out).convert("RGB")
    assert image.size == (800, 450)
    data = read_columns(logdir)
    series = {run: (t["loss"].step, t["loss"].value) for run, t in sorted(data.items())}
    # The same chart again, for its geometry (the CLI titles it with the tag).
    chart = draw_chart(series, tmp_path / "again.png", smoothing=0, title="loss")
    colours = dict(zip(sorted(data), PALETTE, strict=False))
    for s in (5, 17, 33, 49):  # not 0: both curves start at 100 there
        assert _near(image, chart.pixel(s, 100 - s), colours["down"])
        assert _near(image, chart.pixel(s, 100 + s), colours["up"])
    # Where neither curve is, the background shows.
    assert image.getpixel(chart.pixel(25, 100 + 40)) == (255, 255, 255)


def test_plot_draws_a_long_series_as_one_polyline(tmp_path: Path) -> None:
    # A series far longer than the chart is wide, drawn a slice at a time: the picture is
    # the one a single polyline call through every point draws. Drawing those single
    # polylines again over it (raw, then smoothed, in the chart's colours) changes nothing.
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(5)
    steps = np.arange(50_000)
    values = np.cumsum(rng.normal(size=len(steps)))
    out = tmp_path / "long.png"
    chart = draw_chart({"r": (steps, values)}, out, smoothing=0.6)
    image = Image.open(out).convert("RGB")
    again = image.copy()
    draw = ImageDraw.Draw(again)
    colour = PALETTE[0]
    faint = tuple(int(c + (255 - c) * 0.7) for c in colour)
    draw.line([chart.pixel(a, b) for a, b in zip(steps.tolist(), values.tolist(), strict=True)],
              fill=faint, width=1)
    smoothed = smooth(values, 0.6).tolist()
    draw.line([chart.pixel(a, b) for a, b in zip(steps.tolist(), smoothed, strict=True)],
              fill=colour, width=2)
    assert again.tobytes() == image.tobytes()


_FIXED_BYTES = 4 << 20


def _peak_bytes(run: Any) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_export_and_plot_of_a_large_file_stream(tmp_path: Path) -> None:
    # A file of 150,000 points: exporting it or plotting a tag holds the points as arrays
    # and turns a slice at a time into text or pixels, so the peak stays under 1.5x the
    # file's size (Python numbers for every point at once took 2.5x to 4x), give or take
    # the fixed cost of reading (1 MiB chunks) and of a slice of rows.
    from summarylib.cli import main
    from summarylib.reader.export import export_scalars

    logdir = tmp_path / "logs"
    w = sl.create_file_writer(logdir, max_queue=10_000)
    with w.as_default():
        for i in range(120_000):
            sl.scalar("loss", 1.0 / (i + 1), step=i)
            if i % 4 == 0:
                sl.scalar("accuracy", i * 1e-6, step=i)
    w.close()
    size = only_file(logdir).stat().st_size
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        peak = _peak_bytes(lambda: export_scalars(logdir, out, fmt))  # noqa: B023
        assert peak <= 1.5 * size + _FIXED_BYTES, (fmt, peak / size)
    assert len(pd_rows := (tmp_path / "out.csv").read_text().splitlines()) == 150_001
    assert pd_rows[1].startswith(".,accuracy,0,")
    png = tmp_path / "loss.png"
    code: list[int] = []
    peak = _peak_bytes(lambda: code.append(main(["plot", str(logdir), "--tag", "loss",
                                                 "-o", str(png)])))
    assert code == [0] and png.stat().st_size > 0
    assert peak <= 1.5 * size + _FIXED_BYTES, ("plot", peak / size)


def test_plot_log_scale_and_errors(tmp_path: Path) -> None:
    from PIL import Image

    series = {"r": (np.arange(4), np.array([1.0, 10.0, 100.0, 1000.0]))}
    chart = draw_chart(series, tmp_path / "log.png", smoothing=0, log_y=True)
    image = Image.open(tmp_path / "log.png").convert("RGB")
    # On a log scale, 10 ** k sit on a straight line: the midpoint of 1 and 100 is 10.
    assert chart.pixel(1, 10.0)[1] == pytest.approx(
        (chart.pixel(0, 1.0)[1] + chart.pixel(2, 100.0)[1]) / 2, abs=1
    )
    assert _near(image, chart.pixel(1.5, 10**1.5), PALETTE[0])
    with pytest.raises(ValueError, match="log scale needs y > 0"):
        draw_chart({"r": (np.arange(2), np.array([-1.0, 0.0]))}, tmp_path / "x.png", log_y=True)
    with pytest.raises(ValueError, match="'smoothing' must be in"):
        draw_chart(series, tmp_path / "x.png", smoothing=1.0)
    _small_logdir(tmp_path / "logs")
    proc = subprocess.run(
        [sys.executable, "-m", "summarylib", "plot", str(tmp_path / "logs"), "--tag", "nope"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert proc.returncode == 1 and "no run has a scalar tag 'nope'" in proc.stderr


# -- tail and progress, through a pseudo-terminal --------------------------------------------


def test_sparkline() -> None:
    assert sparkline([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == "▁▂▃▄▅▆▇█"
    assert sparkline([1.0, math.nan, 1.0]) == "▅ ▅"


def _read_until(fd: int, needle: str, timeout: float) -> str:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if needle in out.decode("utf-8", "replace"):
                break
    return out.decode("utf-8", "replace")


def test_tail_prints_new_scalars_as_they_arrive(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    w = sl.create_file_writer(str(logdir / "train"), max_queue=1000)
    with w.as_default():
        sl.scalar("old", 1.0, step=0)  # there before tail starts: not printed
    w.flush()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "summarylib", "tail", str(logdir), "--interval", "0.1"],
        stdin=slave, stdout=slave, stderr=slave, cwd=REPO, close_fds=True,
    )
    os.close(slave)
    try:
        # Its first poll reads what is there (printing none of it), then it says it follows.
        assert "following" in _read_until(master, "following", 60)
        with w.as_default():
            for s in range(1, 9):
                sl.scalar("loss", float(s), step=s)
        w.flush()
        screen = _read_until(master, "▁▂▃▄▅▆▇█", 30)
    finally:
        proc.terminate()
        proc.wait(10)
        os.close(master)
        w.close()
    lines = [line for line in screen.splitlines() if "loss" in line]
    assert len(lines) == 8, screen
    assert lines[-1].split()[:4] == ["train", "loss", "8", "8"]
    assert lines[-1].rstrip().endswith("▁▂▃▄▅▆▇█")
    assert "old" not in screen


def test_progress_bar_only_on_a_terminal() -> None:
    import io

    from summarylib.progress import Progress

    piped = io.StringIO()
    bar = Progress("verify", stream=piped, delay=0, every=0)
    bar.update(1, 4)
    bar.close()
    assert piped.getvalue() == ""
    master, slave = pty.openpty()
    with os.fdopen(slave, "w", encoding="utf-8") as tty:
        bar = Progress("verify", stream=tty, delay=0, every=0)
        bar.update(2, 4)
        bar.close()
    screen = _read_until(master, "\x1b[K", 5)
    os.close(master)
    assert "verify [" in screen and "2/4" in screen and "#" * 15 in screen


def test_tail_of_a_run_already_written_prints_its_new_points(tmp_path: Path) -> None:
    from summarylib.reader.tailing import tail

    logdir = tmp_path / "logs"
    w = sl.create_file_writer(str(logdir / "train"))
    with w.as_default():
        for s in range(4):  # the tag's first record (with its metadata) is among these
            sl.scalar("loss", float(s), step=s)
    w.flush()
    polls = 0

    def stop() -> bool:
        nonlocal polls
        polls += 1
        if polls == 2:  # after tail's first poll: the run goes on
            with w.as_default():
                for s in range(4, 8):
                    sl.scalar("loss", float(s), step=s)
            w.flush()
        return polls > 2

    out = io.StringIO()
    tail(logdir, out, interval=0, width=8, stop=stop)
    w.close()
    lines = out.getvalue().splitlines()
    assert [line.split()[:4] for line in lines] == [
        ["train", "loss", str(s), str(s)] for s in range(4, 8)
    ]
    # The sparklines start with the values that were already there.
    assert lines[-1].rstrip().endswith("▁▂▃▄▅▆▇█")
