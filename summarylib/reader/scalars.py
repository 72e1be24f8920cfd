"""``read_scalars``: every scalar series of a logdir, as TensorBoard would show it."""

from __future__ import annotations

import os

from summarylib.reader.events import iter_summary_values
from summarylib.reader.runs import list_runs

__all__ = ["read_scalars"]

ScalarSeries = dict[str, list[tuple[int, float, float]]]


def read_scalars(logdir: str | os.PathLike[str]) -> dict[str, ScalarSeries]:
    """Return ``{run: {tag: [(step, wall_time, value), ...]}}`` for a logdir.

    A tag is a scalar series when the first metadata seen for it in the run
    names the ``scalars`` plugin, or when it holds legacy ``simple_value``
    data. Points are in file order; nothing is deduplicated or re-sorted
    (TensorBoard's fast loader would keep only the last point per step).
    """
    from summarylib.encoding.tensor import make_ndarray

    out: dict[str, ScalarSeries] = {}
    for run, files in list_runs(logdir).items():
        plugin_of: dict[str, str] = {}
        series: ScalarSeries = {}
        for file in files:
            for event, value in iter_summary_values(file):
                tag = value.tag
                if tag not in plugin_of and value.HasField("metadata"):
                    plugin_of[tag] = value.metadata.plugin_data.plugin_name
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    number = float(value.simple_value)
                elif kind == "tensor" and plugin_of.get(tag) == "scalars":
                    number = float(make_ndarray(value.tensor).reshape(-1)[0])
                else:
                    continue
                series.setdefault(tag, []).append((event.step, event.wall_time, number))
        if series:
            out[run] = series
    return out
