"""Read event files back: records, events, runs, scalars, numpy columns and DataFrames.

Files are treated as untrusted input: both CRCs of every record are checked, a
length is never trusted beyond what the file holds, a torn last record (a file
still being written) ends iteration quietly (the record and event iterators of
one file resume there as it grows), and anything else that is wrong raises
:class:`~summarylib.errors.DataLossError` naming the file and offset.

    >>> from summarylib.reader import read_scalars
    >>> read_scalars("logs")            # doctest: +SKIP
    {'.': {'loss': [(0, 1700000000.1, 0.9), (1, 1700000000.2, 0.7)]}}
"""

from summarylib.reader.columns import KINDS, Columns, read_columns
from summarylib.reader.events import iter_events, iter_run_events, iter_summary_values
from summarylib.reader.records import Record, RecordReader, iter_records
from summarylib.reader.runs import event_files, list_runs
from summarylib.reader.scalars import read_scalars

__all__ = [
    "KINDS",
    "Columns",
    "Record",
    "RecordReader",
    "event_files",
    "iter_events",
    "iter_records",
    "iter_run_events",
    "iter_summary_values",
    "list_runs",
    "read_columns",
    "read_dataframe",
    "read_hparams",
    "read_scalars",
]


def __getattr__(name: str) -> object:
    # pandas views load on first use: the reader itself never needs pandas.
    if name in ("read_dataframe", "read_hparams"):
        from summarylib.reader import frames

        return getattr(frames, name)
    raise AttributeError(f"module 'summarylib.reader' has no attribute {name!r}")
