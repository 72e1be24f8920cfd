"""pandas views of a logdir: ``read_dataframe`` (long or pivoted) and ``read_hparams``.

pandas is imported by these functions only; the rest of the reader never needs it.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

import numpy as np

from summarylib.reader.columns import Purge, read_columns

__all__ = ["hparams_table", "read_dataframe", "read_hparams"]

_HPARAMS_TAG = "_hparams_/session_start_info"
_EMPTY_DTYPES = (object, object, "int64", "float64", "float32")


def read_dataframe(
    logdir_or_file: str | os.PathLike[str],
    kinds: Collection[str] = ("scalars",),
    tags: Collection[str] | None = None,
    runs: Collection[str] | None = None,
    *,
    pivot: bool = False,
    purge: Purge = "eventaccumulator",
) -> Any:
    """A ``pandas.DataFrame`` of :func:`read_columns`' data.

    Long format (the default), one row per point, as tbparse users know it: columns
    ``run, tag, step, wall_time, value`` (``value`` float32 for scalars, objects for other
    kinds), runs and tags in sorted order, points in file order. With ``pivot=True`` (scalars
    only): one row per ``(run, step)`` and one column per tag, holding the last value logged
    at that step; ``wall_time`` is the latest of the row's points.
    """
    import pandas as pd

    data = read_columns(logdir_or_file, kinds, tags, runs, purge=purge)
    frames = []
    for run in sorted(data):
        for tag in sorted(data[run]):
            cols = data[run][tag]
            n = len(cols.step)
            value = (
                cols.value if isinstance(cols.value, np.ndarray) and cols.value.ndim == 1 else None
            )
            if value is None:
                value = pd.Series(list(cols.value), dtype=object)
            frames.append(
                pd.DataFrame(
                    {
                        "run": pd.Categorical([run] * n) if n else [],
                        "tag": pd.Categorical([tag] * n) if n else [],
                        "step": cols.step,
                        "wall_time": cols.wall_time,
                        "value": value,
                    }
                )
            )
    columns = ["run", "tag", "step", "wall_time", "value"]
    long = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(
            {
                c: pd.Series(dtype=d)
                for c, d in zip(columns, _EMPTY_DTYPES, strict=True)
            }
        )
    )
    long["run"] = long["run"].astype(str)
    long["tag"] = long["tag"].astype(str)
    if not pivot:
        return long
    if kinds != ("scalars",) and list(kinds) != ["scalars"]:
        raise ValueError("read_dataframe: pivot=True takes scalars only")
    values = long.pivot_table(index=["run", "step"], columns="tag", values="value", aggfunc="last")
    wall = long.groupby(["run", "step"])["wall_time"].max()
    out = values.join(wall).reset_index()
    out.columns.name = None
    return out


def read_hparams(logdir: str | os.PathLike[str]) -> Any:
    """A ``pandas.DataFrame`` of trials: one row per run that logged hparams.

    Columns: ``run``, one column per hyperparameter (strings, numbers or bools), then one
    column per scalar tag of the run holding its last value (the HParams dashboard's metric
    values).
    """
    import pandas as pd

    return pd.DataFrame(hparams_table(logdir))


def hparams_table(logdir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of :func:`read_hparams`, as plain dicts (no pandas needed)."""
    from summarylib.reader.events import iter_events
    from summarylib.reader.runs import list_runs

    rows = []
    scalars = read_columns(logdir)
    for run, files in list_runs(logdir).items():
        hparams = None
        for file in files:
            for event in iter_events(file):
                for value in event.summary.value:
                    if (
                        value.tag == _HPARAMS_TAG
                        and value.metadata.plugin_data.plugin_name == "hparams"
                    ):
                        hparams = _session_hparams(value.metadata.plugin_data.content)
                if hparams is not None:
                    break
            if hparams is not None:
                break
        if hparams is None:
            continue
        row: dict[str, Any] = {"run": run, **hparams}
        for tag, cols in sorted(scalars.get(run, {}).items()):
            if len(cols.value):
                row.setdefault(tag, float(cols.value[-1]))
        rows.append(row)
    return rows


def _session_hparams(content: bytes) -> dict[str, Any] | None:
    from google.protobuf.message import DecodeError

    from summarylib.proto import hparams_plugin_data_pb2

    try:
        data = hparams_plugin_data_pb2.HParamsPluginData.FromString(content)
    except DecodeError:
        return None
    if data.WhichOneof("data") != "session_start_info":
        return None
    out: dict[str, Any] = {}
    for name, value in sorted(data.session_start_info.hparams.items()):
        kind = value.WhichOneof("kind")
        if kind == "number_value":
            out[name] = value.number_value
        elif kind == "string_value":
            out[name] = value.string_value
        elif kind == "bool_value":
            out[name] = value.bool_value
    return out
