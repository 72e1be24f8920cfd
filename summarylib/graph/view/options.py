"""Options of the offline graph view: which of TensorBoard's transformations run, and how.

:class:`ViewOptions` defaults reproduce the graph dashboard (its ``DefaultBuildParams``,
``DefaultHierarchyParams`` and render ``PARAMS``) plus two improvements that are on by
default and can be turned off to compare with TensorBoard exactly:

* ``group_series``: sibling groups named ``layer_0 … layer_47`` that share a template are
  collapsed into one series group ``layer_[0-47]`` (TensorBoard only collapses ops);
* ``template_order="height"``: templates are found smallest subtree first, so nested
  identical blocks share one template (TensorBoard handles parents first and misses them;
  ``template_order="tensorboard"`` reproduces that).

``ViewOptions(group_series=False, template_order="tensorboard")`` is TensorBoard's view.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = ["TENSORBOARD", "ViewOptions"]

_ORDERS = ("height", "tensorboard")
_RANKDIRS = ("BT", "TB", "LR", "RL")


@dataclass(frozen=True)
class ViewOptions:
    """How :func:`~summarylib.graph.view.build_view` transforms a graph.

    * ``embed_in`` / ``embed_out``: regexes (``re.search``, like TensorBoard's unanchored
      ``RegExp``) on the op type; matching ops are drawn as icons on their consumer
      (constants, in) or producer (summaries, out). A tuple means "any of".
    * ``series``: collapse numbered op siblings (``add_[1-7]``); ``series_min_size`` is the
      shortest run collapsed (TensorBoard: 5).
    * ``group_series``: also collapse numbered sibling groups sharing a template.
    * ``hidden_ops``: op types (regexes, ``re.fullmatch``) removed before anything else; edges
      into or out of a hidden op are dropped.
    * ``side_panel``: full names of nodes as shown (ops, groups, series; an op that is also
      a scope is ``A/(A)``) forced into their parent group's side panel, as the
      dashboard's "Remove from main graph" does.
    * ``auto_extract``: TensorBoard's "Auto-extract high-degree nodes" (on by default).
    * ``template_order``: ``"height"`` (smallest subtree first) or ``"tensorboard"``.
    * ``rankdir``: the layout direction the exports use (``"BT"``: inputs at the bottom).
    """

    embed_in: str | tuple[str, ...] = "Const"
    embed_out: str | tuple[str, ...] = r"^[a-zA-Z]+Summary$"
    series: bool = True
    group_series: bool = True
    series_min_size: int = 5
    hidden_ops: tuple[str, ...] = ()
    side_panel: tuple[str, ...] = ()
    auto_extract: bool = True
    template_order: str = "height"
    rankdir: str = "BT"

    def __post_init__(self) -> None:
        for name in ("hidden_ops", "side_panel"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"ViewOptions.{name} must be a sequence of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        for name in ("embed_in", "embed_out"):
            value = getattr(self, name)
            if isinstance(value, list):
                value = tuple(value)
                object.__setattr__(self, name, value)
            patterns = (value,) if isinstance(value, str) else value
            if not isinstance(patterns, tuple) or not all(isinstance(v, str) for v in patterns):
                raise ValueError(f"ViewOptions.{name} must be a regex string, got {value!r}")
            for p in patterns:
                _compile(name, p)
        for p in self.hidden_ops:
            _compile("hidden_ops", p)
        if self.template_order not in _ORDERS:
            raise ValueError(
                f"ViewOptions.template_order must be one of {_ORDERS}, got {self.template_order!r}")
        if self.rankdir not in _RANKDIRS:
            raise ValueError(
                f"ViewOptions.rankdir must be one of {_RANKDIRS}, got {self.rankdir!r}")
        if isinstance(self.series_min_size, bool) or not isinstance(self.series_min_size, int) \
                or self.series_min_size < 1:
            raise ValueError(
                f"ViewOptions.series_min_size must be a positive int, got {self.series_min_size!r}")

    def embed_patterns(self, which: str) -> tuple[str, ...]:
        """``embed_in`` or ``embed_out`` as a tuple of regexes."""
        value = self.embed_in if which == "in" else self.embed_out
        return (value,) if isinstance(value, str) else tuple(value)

    def to_json(self) -> dict[str, Any]:
        """The options as a JSON-ready dict (tuples become lists)."""
        out = asdict(self)
        for k, v in out.items():
            if isinstance(v, tuple):
                out[k] = list(v)
        return out

    def with_overrides(self, **overrides: Any) -> ViewOptions:
        """A copy with the given fields replaced; unknown names raise TypeError."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown view option(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(known))}")
        return replace(self, **overrides)


def _compile(field_name: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"ViewOptions.{field_name}: bad regex {pattern!r}: {e}") from None


#: TensorBoard's own view: no group series, TensorBoard's template order.
TENSORBOARD = ViewOptions(group_series=False, template_order="tensorboard")
