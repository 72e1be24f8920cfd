"""A run's training statistics joined to a graph's hierarchy, for the page's overlay.

:func:`read_statistics` reads a run's scalars and histograms and :func:`join_statistics`
attaches them to the nodes and groups of a :class:`~summarylib.graph.view.GraphView` by
their path. The rule (also in docs/graph-view.md):

* **watch() histograms.** A histogram tag ``{prefix}parameters/{param}`` or
  ``{prefix}gradients/{param}`` (what :func:`summarylib.integrations.torch.watch` writes;
  ``param`` is a dotted torch parameter name such as ``blocks.0.fc.weight``) belongs to the
  module that owns the parameter: ``param`` without its last component, dots turned into
  slashes (``blocks/0/fc``), the way :func:`summarylib.graph.capture` names a module's op
  or group. Its statistics are called ``{prefix}parameters`` / ``{prefix}gradients``.
* **Any other tag** whose path names a node: the tag's ``/``-separated components are
  tried as a node path, longest proper prefix first (``blocks/0/fc/grad_norm`` → node
  ``blocks/0/fc``, statistic ``grad_norm``), then longest proper suffix
  (``grad_norm/blocks/0/fc`` → the same). A component is tried as written and, if that
  names nothing, with its dots as slashes (``grad_norm/blocks.0.fc``). A tag that is
  itself a node's name (``blocks/0/fc``) names no statistic and is not matched. Tags
  matching no node are listed in :attr:`GraphStatistics.unmatched`.
* A scalar tag gives one statistic; a histogram tag gives six: ``norm`` (the L2 norm),
  ``mean``, ``std`` (the spread), ``min``, ``max`` and ``absmax``, named ``"{name} norm"``
  and so on. ``min``, ``max`` and ``absmax`` are exact (the buckets' outer edges); the
  others take every value at its bucket's centre. Several histograms of one node and name
  (a module's weight and bias) are pooled as one set of values: the norm of all of them,
  their mean and spread together. Two scalar tags of one node and name: the first tag (in
  sorted order) wins.
* **No finite value.** A step where a scalar is NaN or infinite, or where one of the pooled
  histograms counts no value (its data was all NaN or infinite, which histograms leave out;
  an empty tensor reads the same), has the value ``+inf`` in every statistic of it: the
  page draws it in a colour of its own, outside the scale (exploding gradients show as
  such, not as the last finite value or a norm of 0).

Groups get no values of their own here: the page aggregates a group's descendants (see
:func:`statistics_to_json`), and a range of a big group (``ranges``) the descendants of
its children, by the same rule.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from summarylib.graph.view.model import GraphView
    from summarylib.graph.view.page_tree import PageTree

__all__ = [
    "HISTOGRAM_STATISTICS",
    "GraphStatistics",
    "StatisticSeries",
    "check_graphs_match",
    "join_statistics",
    "read_statistics",
    "read_summaries",
    "statistics_to_json",
]

#: The statistics a histogram tag gives, in the page's order.
HISTOGRAM_STATISTICS = ("norm", "mean", "std", "min", "max", "absmax")
_WATCH_KINDS = ("parameters", "gradients")
#: Above this many values in all, the page's values are quantized to 16 bits per series.
QUANTIZE_ABOVE = 1_000_000


@dataclass
class StatisticSeries:
    """One statistic of one node: ``values[i]`` at ``steps[i]``, steps increasing."""

    steps: np.ndarray  # int64
    values: np.ndarray  # float64


@dataclass
class GraphStatistics:
    """Statistics by name, then by node name (a name of the view the join used).

    ``kinds`` says where each statistic came from (``"histogram"`` or ``"scalar"``);
    ``tags`` lists the tags that fed each (node, statistic); ``unmatched`` the tags that
    named no node; ``run`` the run they were read from (``None`` when not read from disk).
    """

    series: dict[str, dict[str, StatisticSeries]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    tags: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    run: str | None = None

    @property
    def names(self) -> list[str]:
        """The statistics' names, sorted."""
        return sorted(self.series)

    def value(self, statistic: str, node: str, step: int) -> float | None:
        """The value of ``statistic`` for ``node`` shown at ``step``: its last point at or
        before ``step`` (the page's rule), or None when there is none; ``inf`` where that
        point had no finite value."""
        s = self.series.get(statistic, {}).get(node)
        if s is None:
            return None
        import numpy as np

        i = int(np.searchsorted(s.steps, step, side="right")) - 1
        return None if i < 0 else float(s.values[i])


# --- the join ----------------------------------------------------------------------------


def _resolver(view: GraphView | PageTree) -> Any:
    names = view.nodes

    def resolve(path: str) -> str | None:
        if not path:
            return None
        if path in names:
            return path
        dotted = path.replace(".", "/")
        return dotted if dotted in names else None

    return resolve


def match_tag(view: GraphView | PageTree, tag: str) -> tuple[str, str] | None:
    """``(node, statistic name)`` for ``tag`` by the module docstring's rule, or None."""
    return _match(_resolver(view), tag)


def _match(resolve: Any, tag: str) -> tuple[str, str] | None:
    parts = tag.split("/")
    # watch(): {prefix}parameters/{param} or {prefix}gradients/{param}
    if len(parts) >= 2 and parts[-2] in _WATCH_KINDS and "." in parts[-1]:
        module = parts[-1].rsplit(".", 1)[0].replace(".", "/")
        node = resolve(module)
        if node is not None:
            return node, "/".join(parts[:-1])
    n = len(parts)
    if resolve(tag) is not None:  # the tag is a node's own name: no statistic in it
        return None
    for k in range(n - 1, 0, -1):  # longest proper prefix
        node = resolve("/".join(parts[:k]))
        if node is not None:
            return node, "/".join(parts[k:])
    for k in range(1, n):  # longest proper suffix
        node = resolve("/".join(parts[k:]))
        if node is not None:
            return node, "/".join(parts[:k])
    return None


def join_statistics(view: GraphView | PageTree, scalars: Mapping[str, Any] | None = None,
                    histograms: Mapping[str, Any] | None = None,
                    run: str | None = None) -> GraphStatistics:
    """Attach ``scalars`` and ``histograms`` (``{tag: Columns}`` as
    :func:`summarylib.reader.read_columns` returns them for one run) to ``view``'s nodes
    (a view, or the :class:`~summarylib.graph.view.page_tree.PageTree` of a page made
    straight from the source: the same names).

    Returns a :class:`GraphStatistics` (see the module docstring for the rule).
    """
    import numpy as np

    resolve = _resolver(view)
    out = GraphStatistics(run=run)
    pooled: dict[tuple[str, str], list[Any]] = {}
    for tag in sorted(histograms or {}):
        hit = _match(resolve, tag)
        if hit is None:
            out.unmatched.append(tag)
            continue
        pooled.setdefault(hit, []).append(histograms[tag])  # type: ignore[index]
        out.tags.setdefault(hit, []).append(tag)
    for (node, name), cols in pooled.items():
        steps, moments = _pool(cols)
        for stat in HISTOGRAM_STATISTICS:
            key = f"{name} {stat}"
            out.kinds[key] = "histogram"
            out.series.setdefault(key, {})[node] = StatisticSeries(steps, moments[stat])
    for tag in sorted(scalars or {}):
        hit = _match(resolve, tag)
        if hit is None:
            out.unmatched.append(tag)
            continue
        node, name = hit
        if out.kinds.get(name, "scalar") != "scalar" or node in out.series.get(name, {}):
            continue
        col = scalars[tag]  # type: ignore[index]
        steps, values = _sorted_last(np.asarray(col.step, dtype=np.int64),
                                     np.asarray(col.value, dtype=np.float64))
        values[~np.isfinite(values)] = np.inf  # no finite value (see the module docstring)
        out.kinds[name] = "scalar"
        out.series.setdefault(name, {})[node] = StatisticSeries(steps, values)
        out.tags.setdefault(hit, []).append(tag)
    out.unmatched.sort()
    return out


def _sorted_last(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps increasing, one point per step (the last written wins)."""
    import numpy as np

    order = np.argsort(steps, kind="stable")
    steps, values = steps[order], values[order]
    keep = np.ones(len(steps), dtype=bool)
    keep[:-1] = steps[1:] != steps[:-1]
    return steps[keep], values[keep]


def _moments(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """One histogram series as (steps, [n, 6] table of count, sum, sum of squares, min,
    max, no finite value (1.0: buckets but no count)): steps increasing, a repeated
    step's last histogram winning."""
    import numpy as np

    value = col.value
    if isinstance(value, np.ndarray) and value.ndim == 3:
        tables = [value]
    else:  # events with different bucket counts: one table each
        tables = [np.asarray(v, dtype=np.float64).reshape(1, -1, 3) for v in value]
    rows = []
    for h in tables:
        counts = h[:, :, 2]
        centres = (h[:, :, 0] + h[:, :, 1]) / 2
        filled = counts > 0
        rows.append(np.stack([
            counts.sum(axis=1), (counts * centres).sum(axis=1),
            (counts * centres * centres).sum(axis=1),
            np.where(filled, h[:, :, 0], np.inf).min(axis=1, initial=np.inf),
            np.where(filled, h[:, :, 1], -np.inf).max(axis=1, initial=-np.inf),
            ((h.shape[1] > 0) & ~filled.any(axis=1)).astype(np.float64),
        ], axis=1))
    table = np.concatenate(rows) if rows else np.zeros((0, 6))
    steps = np.asarray(col.step, dtype=np.int64)
    order = np.argsort(steps, kind="stable")
    steps, table = steps[order], table[order]
    keep = np.ones(len(steps), dtype=bool)
    keep[:-1] = steps[1:] != steps[:-1]
    return steps[keep], table[keep]


def _pool(cols: Sequence[Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The pooled statistics of several histogram series, on the union of their steps."""
    import numpy as np

    parts = [_moments(col) for col in cols]
    steps = np.unique(np.concatenate([p[0] for p in parts])) if parts else np.zeros(0, np.int64)
    acc = np.zeros((len(steps), 6))
    acc[:, 3], acc[:, 4] = np.inf, -np.inf
    for st, table in parts:
        at = np.searchsorted(steps, st)
        acc[at, :3] += table[:, :3]
        acc[at, 3] = np.minimum(acc[at, 3], table[:, 3])
        acc[at, 4] = np.maximum(acc[at, 4], table[:, 4])
        acc[at, 5] = np.maximum(acc[at, 5], table[:, 5])
    n, s1, s2, lo, hi, bad = acc.T
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s1 / n, np.nan)
        var = np.where(n > 0, np.maximum(s2 / n - mean * mean, 0.0), np.nan)
    lo = np.where(n > 0, lo, np.nan)
    hi = np.where(n > 0, hi, np.nan)
    out = {
        "norm": np.where(n > 0, np.sqrt(s2), np.nan), "mean": mean, "std": np.sqrt(var),
        "min": lo, "max": hi, "absmax": np.maximum(np.abs(lo), np.abs(hi)),
    }
    if bad.any():  # a pooled tensor with no finite value: the step has none
        for values in out.values():
            values[bad > 0] = np.inf
    return steps, out


def read_statistics(logdir: str | os.PathLike[str], view: GraphView,
                    run: str | None = None) -> GraphStatistics:
    """Read ``run``'s scalars and histograms from ``logdir`` and join them to ``view``.

    ``run`` is a run of the logdir as :func:`summarylib.reader.read_columns` names them
    (``"."`` for the logdir itself); None: the only run, else ``"."`` when it exists.

    Raises:
      ValueError: ``run`` is not in the logdir, or it has several runs and none was chosen.
    """
    chosen, scalars, histograms = read_summaries(logdir, run)
    return join_statistics(view, scalars, histograms, run=chosen)


def read_summaries(logdir: str | os.PathLike[str], run: str | None = None
                   ) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """What :func:`read_statistics` joins, read without a view: ``(the run chosen, its
    scalars, its histograms)``, each ``{tag: Columns}`` as
    :func:`summarylib.reader.read_columns` gives them (``run`` and the errors: as
    :func:`read_statistics`). Both empty: no statistic can join, whatever the graph."""
    from summarylib.reader.columns import read_columns
    from summarylib.reader.runs import is_logdir, list_runs

    path = os.fspath(logdir)
    if is_logdir(path):
        runs = sorted(list_runs(path))
        if run is None:
            if len(runs) == 1:
                run = runs[0]
            elif "." in runs:
                run = "."
            else:
                raise ValueError(f"statistics: {path} has several runs ({', '.join(runs)}); "
                                 "pass run=...")
        elif run not in runs:
            raise ValueError(f"statistics: no run {run!r} in {path} "
                             f"(runs: {', '.join(runs) or 'none'})")
    else:
        run = "."
    data = read_columns(path, kinds=("scalars", "histograms"), runs=[run]).get(run, {})
    # read_columns gives one dict per run for all kinds: tell them apart by the value.
    scalars = {t: c for t, c in data.items() if getattr(c.value, "ndim", 0) == 1}
    histograms = {t: c for t, c in data.items() if t not in scalars}
    return run, scalars, histograms


def check_graphs_match(a: GraphView | PageTree, b: GraphView | PageTree) -> None:
    """Raise ``ValueError`` unless ``a`` and ``b`` (views, or the trees of pages made
    straight from the source) have the same nodes: the same names, each of the same kind
    (and, for ops, the same op type). Shapes may differ."""
    from summarylib.graph.view.model import GraphView

    def signature(v: GraphView | PageTree) -> dict[str, str]:
        if not isinstance(v, GraphView):
            return dict(zip(v.names, v.kinds, strict=True))
        return {name: n.op if n.kind == "op" else n.kind
                for name, n in v.nodes.items()}

    sa, sb = signature(a), signature(b)
    if sa == sb:
        return
    only_a = sorted(set(sa) - set(sb))
    only_b = sorted(set(sb) - set(sa))
    changed = sorted(k for k in set(sa) & set(sb) if sa[k] != sb[k])
    parts = []
    for what, names in (("only in the first", only_a), ("only in the second", only_b),
                        ("of another kind or op", changed)):
        if names:
            parts.append(f"{len(names)} {what} (e.g. {names[0]!r})")
    raise ValueError("the two runs' graphs do not match: " + "; ".join(parts))


# --- what the page embeds ----------------------------------------------------------------


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(array.tobytes()).decode("ascii")


def statistics_to_json(view: GraphView | PageTree, runs: Sequence[GraphStatistics],
                       labels: Sequence[str] | None = None,
                       quantize_above: int | None = None) -> dict[str, Any]:
    """The page's statistics block: compact, for one run or two (a comparison).

    ``{"format": "summarylib-graph-statistics", "version": 1, "runs": [labels],
    "steps": [[step, ...], ...]`` (each distinct steps array once), ``"nodes": [name, ...]``
    (the nodes with values), ``"groups": [[name, [node index, ...]], ...]`` (every group
    above them, with the nodes beneath it; the ranges of a group of more than 1,000
    children, ``summarylib.graph.view.ranges``, are groups here too),
    ``"statistics": [{"name", "kind", "series":
    [[run index, node index, steps index, values], ...]}, ...]}``. ``values`` is
    little-endian float32 in base64, or, when the block holds more than ``quantize_above``
    (None: :data:`QUANTIZE_ABOVE`) values, ``{"u16": base64, "lo": lo, "hi": hi}``:
    ``lo + q * (hi - lo) / 65534``, ``q`` = 65535 for a missing value (NaN), and, when some
    values are ``+inf`` (no finite value at that step), ``"inf": base64`` of their indexes
    (little-endian uint32; their code is 65535 too). Missing values are NaN in float32,
    no finite value ``+inf``.
    """
    import numpy as np

    labels = list(labels) if labels is not None else [s.run or f"run {i + 1}"
                                                       for i, s in enumerate(runs)]
    nodes: list[str] = []
    node_index: dict[str, int] = {}
    steps_list: list[list[int]] = []
    steps_index: dict[bytes, int] = {}
    names = sorted({name for s in runs for name in s.series})
    total = sum(len(ser.values) for s in runs for per in s.series.values() for ser in per.values())
    quantize = total > (QUANTIZE_ABOVE if quantize_above is None else quantize_above)
    statistics = []
    for name in names:
        entries = []
        kind = next(s.kinds[name] for s in runs if name in s.kinds)
        for r, s in enumerate(runs):
            for node, ser in sorted(s.series.get(name, {}).items()):
                if node not in node_index:
                    node_index[node] = len(nodes)
                    nodes.append(node)
                key = ser.steps.astype(np.int64).tobytes()
                if key not in steps_index:
                    steps_index[key] = len(steps_list)
                    steps_list.append([int(x) for x in ser.steps.tolist()])
                entries.append([r, node_index[node], steps_index[key],
                                _values(ser.values, quantize)])
        statistics.append({"name": name, "kind": kind, "series": entries})
    below: dict[str, list[int]] = {}
    # The groups as drawn: a range of a big group aggregates the nodes beneath it too.
    parent_of = _drawn_parent(view)
    for node, i in node_index.items():
        parent = parent_of(node)
        while parent:  # the root ("") is never drawn as a node
            below.setdefault(parent, []).append(i)
            parent = parent_of(parent)
    return {
        "format": "summarylib-graph-statistics",
        "version": 1,
        "runs": labels,
        "steps": steps_list,
        "nodes": nodes,
        "groups": [[g, sorted(ix)] for g, ix in sorted(below.items())],
        "statistics": statistics,
    }


def _drawn_parent(view: GraphView | PageTree) -> Any:
    """A function of a node's (or a range's) name: the name of the group it is drawn in
    (ranges included, ``summarylib.graph.view.ranges``; ``""``: the root)."""
    from summarylib.graph.view.model import GraphView
    from summarylib.graph.view.ranges import with_ranges

    if not isinstance(view, GraphView):
        return view.drawn_parent
    drawn = with_ranges(view)
    return lambda name: drawn.nodes[name].parent


def _values(values: np.ndarray, quantize: bool) -> Any:
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    if not quantize:
        return _b64(v.astype("<f4"))
    finite = np.isfinite(v)
    lo = float(v[finite].min()) if finite.any() else 0.0
    hi = float(v[finite].max()) if finite.any() else 0.0
    span = hi - lo
    q = np.full(len(v), 65535, dtype="<u2")
    if span > 0:
        q[finite] = np.rint((v[finite] - lo) / span * 65534).astype("<u2")
    else:
        q[finite] = 0
    out: dict[str, Any] = {"u16": _b64(q), "lo": lo, "hi": hi}
    infinite = np.flatnonzero(np.isposinf(v))
    if infinite.size:
        out["inf"] = _b64(infinite.astype("<u4"))
    return out
