"""What TensorBoard's Python loader makes of a logdir, decoded for comparisons.

``observe(logdir)`` reads every run (directories holding event files) with TensorBoard's
``EventFileLoader`` (the loader its multiplexer uses: legacy values migrated to tensors) and
returns ``{run: {tag: Series}}``, values decoded by plugin: scalars as floats, images as
pixel arrays, audio as 16-bit samples, text as strings, everything else as numpy arrays.
Wall times are kept apart so that comparisons of two writers can leave them out.
"""

from __future__ import annotations

import io
import os
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class Series:
    plugin: str
    steps: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)
    content: bytes = b""


def _decode(plugin: str, tensor: Any) -> Any:
    from PIL import Image
    from tensorboard.util import tensor_util

    arr = tensor_util.make_ndarray(tensor)
    if plugin == "scalars":
        return float(arr.item())
    if plugin == "images":
        flat = arr.reshape(-1)
        return [np.asarray(Image.open(io.BytesIO(b)).convert("RGBA")) for b in flat[2:]]
    if plugin == "audio":
        clips = []
        for wav in arr.reshape(-1, arr.shape[-1])[:, 0]:
            with wave.open(io.BytesIO(wav)) as f:
                clips.append((f.getframerate(), np.frombuffer(f.readframes(f.getnframes()),
                                                              "<i2")))
        return clips
    if plugin == "text":
        return [x.decode() if isinstance(x, bytes) else x for x in arr.reshape(-1).tolist()]
    if plugin == "custom_scalars":
        from tensorboard.plugins.custom_scalar import layout_pb2

        return layout_pb2.Layout.FromString(arr.item())
    return arr


def event_files(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.iterdir() if p.is_file() and "tfevents" in p.name)


def observe(logdir: str | os.PathLike[str]) -> dict[str, dict[str, Series]]:
    from tensorboard.backend.event_processing import event_file_loader

    root = Path(logdir)
    out: dict[str, dict[str, Series]] = {}
    for run_dir in sorted([root, *[p for p in root.rglob("*") if p.is_dir()]]):
        files = event_files(run_dir) if run_dir.is_dir() else []
        if not files:
            continue
        run = os.path.relpath(run_dir, root)
        tags = out.setdefault(run, {})
        for path in files:
            for ev in event_file_loader.EventFileLoader(str(path)).Load():
                if ev.HasField("graph_def"):
                    s = tags.setdefault("__graph__", Series("graph"))
                    s.steps.append(ev.step)
                    s.values.append(len(ev.graph_def))
                for v in ev.summary.value:
                    s = tags.get(v.tag)
                    if s is None:
                        s = tags[v.tag] = Series(v.metadata.plugin_data.plugin_name,
                                                 content=v.metadata.plugin_data.content)
                    s.steps.append(ev.step)
                    s.wall_times.append(ev.wall_time)
                    s.values.append(_decode(s.plugin, v.tensor))
    return out


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Deep equality for decoded values (arrays compared exactly, NaN equal to NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_same_observations(ours: dict[str, dict[str, Series]],
                             theirs: dict[str, dict[str, Series]],
                             skip_tags: frozenset[str] = frozenset()) -> None:
    """Same runs, tags, plugins, steps and values (wall times aside)."""
    assert sorted(ours) == sorted(theirs), (sorted(ours), sorted(theirs))
    for run in ours:
        mine = {t: s for t, s in ours[run].items() if t not in skip_tags}
        other = {t: s for t, s in theirs[run].items() if t not in skip_tags}
        assert sorted(mine) == sorted(other), (run, sorted(mine), sorted(other))
        for tag, s in mine.items():
            o = other[tag]
            where = f"{run}/{tag}"
            assert s.plugin == o.plugin, (where, s.plugin, o.plugin)
            assert s.steps == o.steps, (where, s.steps, o.steps)
            assert_same(s.values, o.values, where)
