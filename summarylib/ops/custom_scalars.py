"""The Custom Scalars layout: charts that combine scalar tags, for TensorBoard's dashboard.

Data contract:
  * ``layout`` is a ``Layout`` message (ours or TensorBoard's, anything with a compatible
    ``SerializeToString``), or torch's dict form, in order:
    ``{category_title: {chart_title: ["Multiline", [tag_regex, ...]]
    | ["Margin", [value_tag, lower_tag, upper_tag]]}}``. Multiline tags are regular
    expressions matched against scalar tags; margin tags are exact tag names.
  * Stored as TensorBoard's ``custom_scalar`` summary writes it (format.md §5.10): tag
    ``custom_scalars__config__`` (literal, no name scope), metadata ``plugin_name
    "custom_scalars"`` with no content, a rank-0 DT_STRING tensor holding the serialized
    ``Layout``. The plugin takes each run's latest layout and merges runs' layouts by
    category title.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from summarylib.encoding.tensor import string_tensor_bytes
from summarylib.ops._emit import emit_value
from summarylib.ops._media import plugin_data_bytes
from summarylib.ops._resolve import resolve

if TYPE_CHECKING:
    from summarylib.proto import custom_scalar_pb2, summary_pb2
    from summarylib.writer.context import Step

__all__ = ["CONFIG_TAG", "PLUGIN_NAME", "custom_scalars", "custom_scalars_pb", "layout_pb"]

PLUGIN_NAME = "custom_scalars"
CONFIG_TAG = "custom_scalars__config__"
_METADATA = plugin_data_bytes(PLUGIN_NAME)


def _tags(value: Any, where: str, chart: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{where}: chart {chart!r} must list its tags, got {value!r:.60}")
    for t in value:
        if not isinstance(t, str) or not t:
            raise TypeError(f"{where}: chart {chart!r} has a tag that is not a non-empty "
                            f"str: {t!r}")
    return list(value)


def layout_pb(layout: Any, where: str = "layout_pb") -> custom_scalar_pb2.Layout:
    """``layout`` (a Layout message or torch's dict form) as our ``Layout`` message."""
    from summarylib.proto import custom_scalar_pb2

    if hasattr(layout, "SerializeToString") and not isinstance(layout, Mapping):
        try:
            return custom_scalar_pb2.Layout.FromString(layout.SerializeToString())
        except Exception as e:
            raise TypeError(f"{where}: 'layout' is not a Layout message: {e}") from None
    if not isinstance(layout, Mapping):
        raise TypeError(
            f"{where}: 'layout' must be a dict or a Layout message, got {type(layout).__name__}")
    out = custom_scalar_pb2.Layout()
    for category, charts in layout.items():
        if not isinstance(category, str):
            raise TypeError(f"{where}: category titles must be str, got {category!r}")
        if not isinstance(charts, Mapping):
            raise TypeError(f"{where}: category {category!r} must map chart titles to "
                            f"charts, got {type(charts).__name__}")
        cat = out.category.add(title=category)
        for title, spec in charts.items():
            if not isinstance(title, str):
                raise TypeError(f"{where}: chart titles must be str, got {title!r}")
            if not isinstance(spec, (list, tuple)) or len(spec) != 2:
                raise ValueError(f"{where}: chart {title!r} must be [kind, tags], got {spec!r}")
            kind, tags = spec
            names = _tags(tags, where, title)
            if kind == "Multiline":
                cat.chart.add(title=title).multiline.tag.extend(names)
            elif kind == "Margin":
                if len(names) != 3:
                    raise ValueError(f"{where}: margin chart {title!r} needs 3 tags (value, "
                                     f"lower, upper), got {len(names)}")
                series = cat.chart.add(title=title).margin.series.add()
                series.value, series.lower, series.upper = names
            else:
                raise ValueError(f"{where}: chart {title!r} kind must be 'Multiline' or "
                                 f"'Margin', got {kind!r}")
    return out


def create_summary_metadata() -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` of the layout value (protobuf API)."""
    from summarylib.proto import summary_pb2

    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME))


def custom_scalars_pb(layout: Any) -> summary_pb2.Summary:
    """A ``Summary`` holding the layout value; no writer needed."""
    from summarylib.proto import summary_pb2

    serialized = layout_pb(layout, "custom_scalars_pb").SerializeToString()
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=CONFIG_TAG)
    value.metadata.CopyFrom(create_summary_metadata())
    value.tensor.ParseFromString(string_tensor_bytes((), [serialized]))
    return summary


def custom_scalars(layout: Any, step: Step | None = None) -> bool:
    """Write the layout to the default writer, at ``step`` (default 0, as torch writes it).

    Returns True if written, False if nothing is recording. Raises TypeError/ValueError
    for a malformed layout (nothing written).
    """
    resolved = resolve(CONFIG_TAG, 0 if step is None else step, "custom_scalars",
                       scoped=False)
    if resolved is None:
        return False
    writer, tag, step_ = resolved
    serialized = layout_pb(layout, "custom_scalars").SerializeToString()
    return emit_value(writer, tag, step_, string_tensor_bytes((), [serialized]), _METADATA)
