"""Export a logdir's scalars as CSV, JSON Lines or Parquet (``summarylib export``).

Rows are the long format of :func:`~summarylib.reader.frames.read_dataframe`:
``run, tag, step, wall_time, value``. CSV and JSON Lines are written without pandas;
Parquet needs pyarrow (imported only for it).
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable, Collection
from typing import IO

from summarylib.reader.columns import Columns, read_columns

__all__ = ["FORMATS", "export_scalars"]

FORMATS = ("csv", "jsonl", "parquet")


def export_scalars(
    logdir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    format: str = "csv",
    *,
    tags: Collection[str] | None = None,
    runs: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write every scalar point of ``logdir`` to ``out``; return the number of rows.

    ``format`` is ``"csv"`` (a header row; floats as Python's shortest round-trip text, NaN
    and infinities as ``nan``/``inf``), ``"jsonl"`` (one object per line; NaN and infinities
    as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, since JSON has no such
    numbers) or ``"parquet"`` (pyarrow; ``step`` int64, ``wall_time`` float64, ``value``
    float32, ``run``/``tag`` dictionary-encoded). ``progress(done, total)`` is called per run.

    Raises:
      ValueError: an unknown format.
      ImportError: parquet without pyarrow.
    """
    if format not in FORMATS:
        raise ValueError(f"export_scalars: 'format' must be one of {FORMATS}, got {format!r}")
    data = read_columns(logdir, ("scalars",), tags, runs)
    path = os.fspath(out)
    if format == "parquet":
        return _parquet(data, path)
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        write = _csv_writer(f) if format == "csv" else _jsonl_writer(f)
        for i, run in enumerate(sorted(data)):
            for tag in sorted(data[run]):
                rows += write(run, tag, data[run][tag])
            if progress is not None:
                progress(i + 1, len(data))
    return rows


def _csv_writer(f: IO[str]) -> Callable[[str, str, Columns], int]:
    w = csv.writer(f)
    w.writerow(["run", "tag", "step", "wall_time", "value"])

    def write(run: str, tag: str, cols: Columns) -> int:
        steps = cols.step.tolist()
        walls = cols.wall_time.tolist()
        values = cols.value.astype(float).tolist()
        rows = zip(steps, walls, values, strict=True)
        w.writerows((run, tag, s, repr(t), repr(v)) for s, t, v in rows)
        return len(steps)

    return write


def _json_number(x: float) -> float | str:
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _jsonl_writer(f: IO[str]) -> Callable[[str, str, Columns], int]:
    def write(run: str, tag: str, cols: Columns) -> int:
        head = '{"run": ' + json.dumps(run) + ', "tag": ' + json.dumps(tag)
        steps = cols.step.tolist()
        walls = cols.wall_time.tolist()
        values = cols.value.astype(float).tolist()
        f.writelines(
            f'{head}, "step": {s}, "wall_time": {json.dumps(_json_number(t))}, '
            f'"value": {json.dumps(_json_number(v))}}}\n'
            for s, t, v in zip(steps, walls, values, strict=True)
        )
        return len(steps)

    return write


def _parquet(data: dict[str, dict[str, Columns]], path: str) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs, tags, steps, walls, values = [], [], [], [], []
    for run in sorted(data):
        for tag in sorted(data[run]):
            cols = data[run][tag]
            n = len(cols.step)
            runs.append(np.full(n, run, dtype=object))
            tags.append(np.full(n, tag, dtype=object))
            steps.append(cols.step)
            walls.append(cols.wall_time)
            values.append(cols.value)
    if not steps:
        table = pa.table(
            {
                "run": pa.array([], pa.string()),
                "tag": pa.array([], pa.string()),
                "step": pa.array([], pa.int64()),
                "wall_time": pa.array([], pa.float64()),
                "value": pa.array([], pa.float32()),
            }
        )
    else:
        table = pa.table(
            {
                "run": pa.array(np.concatenate(runs), pa.string()).dictionary_encode(),
                "tag": pa.array(np.concatenate(tags), pa.string()).dictionary_encode(),
                "step": pa.array(np.concatenate(steps), pa.int64()),
                "wall_time": pa.array(np.concatenate(walls), pa.float64()),
                "value": pa.array(np.concatenate(values), pa.float32()),
            }
        )
    pq.write_table(table, path)
    return int(table.num_rows)
