"""Each TensorBoard plugin's summary metadata, defined once.

A :class:`Plugin` is what TensorBoard's per-plugin ``metadata.py`` holds: the plugin's
name, the version of its content, :meth:`Plugin.create_summary_metadata` and
:meth:`Plugin.parse`. The serialized ``SummaryMetadata`` (:meth:`Plugin.metadata_bytes`)
is the one definition: the ops write it as it is on their hot paths, the ``*_pb``
functions and ``create_summary_metadata`` parse the same bytes into a message, and the
readers tell kinds apart by the same names. Tests prove the bytes equal TensorBoard's own
``create_summary_metadata``.

``SummaryMetadata`` is ``plugin_data`` (field 1: ``plugin_name`` = 1, ``content`` = 2)
plus an optional ``summary_description`` (field 3), with ``display_name`` and
``data_class`` unset, as TensorFlow 2 writes them for the built-in plugins (their readers
infer the data class from the name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from summarylib.encoding._wire import field_bytes, field_varint

if TYPE_CHECKING:
    from summarylib.proto import summary_pb2

__all__ = [
    "AUDIO",
    "CUSTOM_SCALARS",
    "HISTOGRAMS",
    "IMAGES",
    "MESH",
    "PR_CURVES",
    "SCALARS",
    "TEXT",
    "Plugin",
    "metadata_bytes",
    "plugin_data_bytes",
]


def plugin_data_bytes(plugin_name: str, content: bytes = b"") -> bytes:
    """The ``SummaryMetadata.plugin_data`` field (1), key and length included."""
    inner = field_bytes(1, plugin_name.encode("ascii"))
    if content:  # proto3: empty bytes are not serialized
        inner += field_bytes(2, content)
    return field_bytes(1, inner)


def metadata_bytes(plugin_data: bytes, description: str | None, where: str) -> bytes:
    """Serialized ``SummaryMetadata``: ``plugin_data`` plus the description, if any.

    Raises:
      TypeError: ``description`` is neither a str nor None (``where`` names the call).
      ValueError: it is not valid Unicode text (a lone surrogate).
    """
    if description is None:
        return plugin_data
    if not isinstance(description, str):
        raise TypeError(
            f"{where}: 'description' must be a str or None, got {type(description).__name__}"
        )
    if not description:
        return plugin_data
    try:
        encoded = description.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: 'description' is not valid Unicode text: {e}") from None
    return plugin_data + field_bytes(3, encoded)


class Plugin:
    """One plugin's metadata: ``name``, ``version`` and the ``content`` it implies.

    ``content`` is the serialized plugin data (``<Name>PluginData``): ``version`` as its
    field 1 (left out when 0, as proto3 does) followed by ``extra``, the fields after it.
    """

    __slots__ = ("content", "name", "plugin_data", "version")

    def __init__(self, name: str, version: int = 0, extra: bytes = b"") -> None:
        self.name = name
        self.version = version
        self.content = (field_varint(1, version) if version else b"") + extra
        #: The ``plugin_data`` field, key and length included: metadata without a description.
        self.plugin_data = plugin_data_bytes(name, self.content)

    def __repr__(self) -> str:
        return f"Plugin({self.name!r}, version={self.version})"

    def metadata_bytes(self, description: str | None = None, where: str = "metadata") -> bytes:
        """Serialized ``SummaryMetadata`` of this plugin (see :func:`metadata_bytes`)."""
        return metadata_bytes(self.plugin_data, description, where)

    def create_summary_metadata(
        self, description: str | None = None, where: str = "create_summary_metadata"
    ) -> summary_pb2.SummaryMetadata:
        """The ``SummaryMetadata`` message of :meth:`metadata_bytes` (protobuf API)."""
        from summarylib.proto import summary_pb2

        data = self.metadata_bytes(description, where)
        return summary_pb2.SummaryMetadata.FromString(data)

    def parse(self, metadata: summary_pb2.SummaryMetadata) -> int:
        """The content version of ``metadata`` written for this plugin.

        Raises:
          ValueError: ``metadata`` names another plugin, or its content is not this
            plugin's data (TensorBoard would not read it either).
        """
        got = metadata.plugin_data.plugin_name
        if got != self.name:
            raise ValueError(f"parse: metadata of plugin {got!r}, not {self.name!r}")
        content = metadata.plugin_data.content
        if not content or content[0] != 0x08:  # field 1, varint: the version
            return 0
        version = 0
        for i, b in enumerate(content[1:11]):
            version |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return version
        raise ValueError(f"parse: {self.name} plugin content has a malformed version field")


SCALARS = Plugin("scalars")
HISTOGRAMS = Plugin("histograms")
IMAGES = Plugin("images")  # images, figures and videos alike
# AudioPluginData: encoding (field 2) WAV (11).
AUDIO = Plugin("audio", extra=field_varint(2, 11))
TEXT = Plugin("text")
# The layout's value: no content at all.
CUSTOM_SCALARS = Plugin("custom_scalars")
# Content that differs from value to value (PrCurvePluginData's num_thresholds,
# MeshPluginData's name, shape and components): the ops join it to the name with
# plugin_data_bytes().
PR_CURVES = Plugin("pr_curves")
MESH = Plugin("mesh")
