"""The Custom Scalars layout: charts that combine scalar tags, for TensorBoard's dashboard.

Data contract:
  * ``layout`` is either a ``Layout`` message (``summarylib.proto.custom_scalar_pb2.Layout``
    or TensorBoard's ``tensorboard.plugins.custom_scalar.layout_pb2.Layout``; any other
    message is refused), copied as is, or torch's dict form::

        {category_title: {chart_title: ["Multiline", [tag_regex, ...]]
                                     | ["Margin", [value_tag, lower_tag, upper_tag]]}}

    Categories and charts keep the dict's order. Titles are str (may be empty); the kind
    is exactly ``"Multiline"`` or ``"Margin"`` (a list or a tuple of two items). Multiline
    tags are one or more regular expressions (Python ``re`` syntax, as the plugin matches
    them) against scalar tags; margin tags are exactly three exact tag names. Tags are
    non-empty str. Anything else raises ``TypeError``/``ValueError`` naming ``'layout'``
    and the category/chart at fault. The dict form cannot set ``Category.closed``; pass a
    message for that.
  * Stored as TensorBoard's ``custom_scalar`` summary writes it (format.md §5.10): tag
    ``custom_scalars__config__`` (literal: no name scope), metadata ``plugin_name
    "custom_scalars"`` with no content, a rank-0 ``DT_STRING`` tensor holding the serialized
    ``Layout``. The plugin takes each run's latest layout and merges runs' layouts by
    category title.
  * The step is ``step``, else the default step, else 0 (torch writes it at 0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from summarylib.encoding._plugins import CUSTOM_SCALARS
from summarylib.encoding._tensor import string_tensor_bytes
from summarylib.ops._emit import emit_value
from summarylib.ops._resolve import Caller, Sink, resolve
from summarylib.writer._context import get_step

if TYPE_CHECKING:
    from summarylib.proto import custom_scalar_pb2, summary_pb2
    from summarylib.writer._context import Step

__all__ = [
    "CONFIG_TAG",
    "PLUGIN_NAME",
    "create_summary_metadata",
    "custom_scalars",
    "custom_scalars_pb",
    "layout_pb",
    "write_custom_scalars",
]

PLUGIN_NAME = CUSTOM_SCALARS.name
CONFIG_TAG = "custom_scalars__config__"
_LAYOUT_MESSAGES = ("summarylib.Layout", "tensorboard.Layout")


def create_summary_metadata() -> summary_pb2.SummaryMetadata:
    """The ``SummaryMetadata`` of the layout value (protobuf API)."""
    return CUSTOM_SCALARS.create_summary_metadata()


def _title(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where}: 'layout' {what} must be a str, got {type(value).__name__} "
                        f"{value!r:.60}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: 'layout' {what} is not valid Unicode text: {e}") from None
    return value


def _tags(value: Any, where: str, chart: str) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{where}: 'layout' {chart} must list its tags in a list, got "
                        f"{type(value).__name__} {value!r:.60}")
    out = []
    for t in value:
        _title(t, where, f"{chart} tag")
        if not t:
            raise ValueError(f"{where}: 'layout' {chart} has an empty tag")
        out.append(t)
    return out


def _from_message(layout: Any, where: str) -> custom_scalar_pb2.Layout:
    from summarylib.proto import custom_scalar_pb2

    name = getattr(getattr(layout, "DESCRIPTOR", None), "full_name", None)
    if name not in _LAYOUT_MESSAGES:
        raise TypeError(f"{where}: 'layout' must be a dict or a Layout message, got a "
                        f"{name} message")
    return custom_scalar_pb2.Layout.FromString(layout.SerializeToString())


def layout_pb(layout: Any, where: str = "layout_pb") -> custom_scalar_pb2.Layout:
    """``layout`` (a ``Layout`` message or torch's dict form) as summarylib's ``Layout``.

    See the module docstring for the accepted forms. ``where`` names the caller in errors.
    """
    from summarylib.proto import custom_scalar_pb2

    if not isinstance(layout, Mapping):
        if hasattr(layout, "SerializeToString") and hasattr(layout, "DESCRIPTOR"):
            return _from_message(layout, where)
        raise TypeError(f"{where}: 'layout' must be a dict {{category: {{chart: [kind, tags]}}}}"
                        f" or a Layout message, got {type(layout).__name__}")
    out = custom_scalar_pb2.Layout()
    for category, charts in layout.items():
        _title(category, where, "category title")
        if not isinstance(charts, Mapping):
            raise TypeError(f"{where}: 'layout' category {category!r} must be a dict of chart "
                            f"title to [kind, tags], got {type(charts).__name__}")
        cat = out.category.add(title=category)
        for title, spec in charts.items():
            _title(title, where, f"category {category!r} chart title")
            chart = f"chart {title!r} (category {category!r})"
            if not isinstance(spec, (list, tuple)) or len(spec) != 2:
                raise ValueError(f"{where}: 'layout' {chart} must be [kind, tags], got "
                                 f"{spec!r:.60}")
            kind, tags = spec
            names = _tags(tags, where, chart)
            if kind == "Multiline":
                if not names:
                    raise ValueError(f"{where}: 'layout' {chart} needs at least one tag")
                for regex in names:
                    try:
                        re.compile(regex)
                    except re.error as e:
                        raise ValueError(f"{where}: 'layout' {chart} tag {regex!r} is not a "
                                         f"valid regular expression: {e}") from None
                cat.chart.add(title=title).multiline.tag.extend(names)
            elif kind == "Margin":
                if len(names) != 3:
                    raise ValueError(f"{where}: 'layout' margin {chart} needs 3 tags (value, "
                                     f"lower, upper), got {len(names)}")
                series = cat.chart.add(title=title).margin.series.add()
                series.value, series.lower, series.upper = names
            else:
                raise ValueError(f"{where}: 'layout' {chart} kind must be 'Multiline' or "
                                 f"'Margin', got {kind!r:.60}")
    return out


def custom_scalars_pb(layout: Any) -> summary_pb2.Summary:
    """A ``Summary`` holding the layout value, with metadata; no writer needed."""
    from summarylib.proto import summary_pb2, types_pb2

    serialized = layout_pb(layout, "custom_scalars_pb").SerializeToString()
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=CONFIG_TAG)
    value.tensor.dtype = types_pb2.DT_STRING
    value.tensor.tensor_shape.SetInParent()  # rank 0, present as TensorFlow writes it
    value.tensor.string_val.append(serialized)
    value.metadata.CopyFrom(create_summary_metadata())
    return summary


def custom_scalars(layout: Any, step: Step | None = None) -> bool:
    """Write the Custom Scalars layout to the default writer.

    Args:
      layout: a ``Layout`` message or torch's dict form (see the module docstring).
      step: an int64 step; defaults to the thread's default step, else 0.

    Returns:
      True if written, False if nothing is recording (``layout`` is then not looked at).

    Raises:
      TypeError, ValueError: a malformed layout or step (nothing is written).
      WriterClosedError, WriteFailedError: see :class:`~summarylib.SummaryWriter`.
    """
    if step is None:
        default = get_step()
        step = 0 if default is None else default
    sink = resolve(CONFIG_TAG, step, _CALLER, scoped=False)
    if sink is None:
        return False
    return write_custom_scalars(sink, layout)


_CALLER = Caller("custom_scalars")


def write_custom_scalars(sink: Sink, layout: Any) -> bool:
    """The core of :func:`custom_scalars`: write ``layout`` to ``sink`` (its tag is
    :data:`CONFIG_TAG`)."""
    serialized = layout_pb(layout, sink.caller.where).SerializeToString()
    tensor = string_tensor_bytes((), [serialized])
    return emit_value(sink, tensor, CUSTOM_SCALARS.plugin_data)
