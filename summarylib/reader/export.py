"""Export a logdir's scalars as CSV, JSON Lines or Parquet (``summarylib export``).

Rows are the long format of :func:`~summarylib.reader.frames.read_dataframe`:
``run, tag, step, wall_time, value``. CSV and JSON Lines are written without pandas;
Parquet needs pyarrow (imported only for it).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from collections.abc import Callable, Collection, Iterator
from typing import IO, Any

from summarylib.reader.columns import Columns, iter_columns, read_columns

__all__ = ["FORMATS", "export_scalars"]

FORMATS = ("csv", "jsonl", "parquet")


def export_scalars(
    logdir: str | os.PathLike[str],
    out: str | os.PathLike[str] | IO[Any],
    format: str = "csv",
    *,
    tags: Collection[str] | None = None,
    runs: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    follow_links: bool = True,
) -> int:
    """Write every scalar point of ``logdir`` to ``out``; return the number of rows.

    ``format`` is ``"csv"`` (a header row; floats as Python's shortest round-trip text, NaN
    and infinities as ``nan``/``inf``), ``"jsonl"`` (one object per line; NaN and infinities
    as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, since JSON has no such
    numbers) or ``"parquet"`` (pyarrow; ``step`` int64, ``wall_time`` float64, ``value``
    float32, ``run``/``tag`` dictionary-encoded). ``progress(done, total)`` is called per run.
    ``logdir`` may be one event file (run ``"."``). ``out`` is a path, or an open stream
    (text for CSV and JSON Lines, binary for Parquet), written to and left open.
    ``follow_links`` as in :func:`~summarylib.reader.read_columns`.

    Raises:
      ValueError: an unknown format.
      ImportError: parquet without pyarrow.
    """
    if format not in FORMATS:
        raise ValueError(f"export_scalars: 'format' must be one of {FORMATS}, got {format!r}")
    target: str | IO[Any] = os.fspath(out) if isinstance(out, (str, os.PathLike)) else out
    if format == "parquet":
        return _parquet(logdir, target, tags, runs, progress, follow_links)
    try:
        data = read_columns(logdir, ("scalars",), tags, runs, follow_links=follow_links)
    except OSError as e:
        if e.filename is None:  # say which side failed: the input, not the output
            e.filename = os.fspath(logdir)
        raise
    rows = 0
    with (
        open(target, "w", newline="", encoding="utf-8") if isinstance(target, str)
        else contextlib.nullcontext(target)
    ) as f:
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
        for steps, walls, values in _chunks(cols):
            rows = zip(steps, walls, values, strict=True)
            w.writerows((run, tag, s, repr(t), repr(v)) for s, t, v in rows)
        return len(cols.step)

    return write


# Rows turned into Python objects at a time: a series of millions of points never exists
# as Python floats all at once (they take several times the file's size).
_CHUNK_ROWS = 1 << 14


def _chunks(cols: Columns) -> Iterator[tuple[list[int], list[float], list[float]]]:
    """``cols`` as lists of Python numbers (steps, wall times, values), a slice at a time."""
    for start in range(0, len(cols.step), _CHUNK_ROWS):
        end = start + _CHUNK_ROWS
        yield (cols.step[start:end].tolist(), cols.wall_time[start:end].tolist(),
               cols.value[start:end].astype(float).tolist())


def _json_number(x: float) -> float | str:
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _jsonl_writer(f: IO[str]) -> Callable[[str, str, Columns], int]:
    def write(run: str, tag: str, cols: Columns) -> int:
        head = '{"run": ' + json.dumps(run) + ', "tag": ' + json.dumps(tag)
        for steps, walls, values in _chunks(cols):
            f.writelines(
                f'{head}, "step": {s}, "wall_time": {json.dumps(_json_number(t))}, '
                f'"value": {json.dumps(_json_number(v))}}}\n'
                for s, t, v in zip(steps, walls, values, strict=True)
            )
        return len(cols.step)

    return write


def _parquet(logdir: str | os.PathLike[str], path: str | IO[Any], tags: Collection[str] | None,
             runs: Collection[str] | None, progress: Callable[[int, int], None] | None,
             follow_links: bool) -> int:
    """One row group per run, sorted by run then tag. The next run is read while pyarrow
    (which releases the GIL) compresses and writes the previous one."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([
        ("run", pa.dictionary(pa.int32(), pa.string())),
        ("tag", pa.dictionary(pa.int32(), pa.string())),
        ("step", pa.int64()), ("wall_time", pa.float64()), ("value", pa.float32()),
    ])
    from summarylib.reader.runs import list_runs

    total = 1
    if progress is not None and os.path.isdir(logdir):
        total = len(list_runs(logdir, follow_links=follow_links))

    def table(run: str, series: dict[str, Columns]) -> pa.Table:
        # run and tag as dictionary columns from int32 indices: no Python string per row.
        names = sorted(series)
        cols = [series[t] for t in names]
        sizes = [len(c.step) for c in cols]
        n = sum(sizes)
        tag_ids = np.repeat(np.arange(len(names), dtype=np.int32), sizes)
        return pa.table({
            "run": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                                  pa.array([run], pa.string())),
            "tag": pa.DictionaryArray.from_arrays(pa.array(tag_ids),
                                                  pa.array(names, pa.string())),
            "step": pa.array(np.concatenate([c.step for c in cols]), pa.int64()),
            "wall_time": pa.array(np.concatenate([c.wall_time for c in cols]), pa.float64()),
            "value": pa.array(np.concatenate([c.value for c in cols]), pa.float32()),
        }, schema=schema)

    rows = 0
    with pq.ParquetWriter(path, schema) as writer, ThreadPoolExecutor(1) as pool:
        pending = None
        for i, (run, series) in enumerate(iter_columns(logdir, ("scalars",), tags, runs,
                                                             follow_links=follow_links)):
            t = table(run, series)
            rows += t.num_rows
            if pending is not None:
                pending.result()
            pending = pool.submit(writer.write_table, t)
            if progress is not None:
                progress(i + 1, max(total, i + 1))
        if pending is not None:
            pending.result()
    return rows
