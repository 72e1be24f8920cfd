"""Each plugin's metadata is defined once and equals TensorBoard's own.

``summarylib.encoding._plugins`` holds the name, version and metadata bytes of each kind;
the ops write those bytes, the ``*_pb`` functions and ``create_summary_metadata`` parse
them, and the readers classify tags by the same names. TensorBoard's per-plugin
``metadata.create_summary_metadata`` is the independent reference.
"""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib.encoding import _plugins as plugins
from summarylib.ops import audio, custom_scalars, figure, histogram, scalar, text, video
from summarylib.reader.columns import read_columns


def _tensorboard(kind: str) -> Callable[[str | None], Any]:
    from tensorboard.plugins.audio import metadata as audio_md
    from tensorboard.plugins.histogram import metadata as histogram_md
    from tensorboard.plugins.image import metadata as image_md
    from tensorboard.plugins.scalar import metadata as scalar_md
    from tensorboard.plugins.text import metadata as text_md

    return {
        "scalars": lambda d: scalar_md.create_summary_metadata(None, d),
        "histograms": lambda d: histogram_md.create_summary_metadata(None, d),
        "images": lambda d: image_md.create_summary_metadata(None, d),
        "audio": lambda d: audio_md.create_summary_metadata(None, d, audio_md.Encoding.WAV),
        "text": lambda d: text_md.create_summary_metadata(None, d),
    }[kind]


KINDS = [plugins.SCALARS, plugins.HISTOGRAMS, plugins.IMAGES, plugins.AUDIO, plugins.TEXT]
# The ops' create_summary_metadata, each the one of its plugin.
OPS = [
    (scalar.create_summary_metadata, plugins.SCALARS),
    (histogram.create_summary_metadata, plugins.HISTOGRAMS),
    (audio.create_summary_metadata, plugins.AUDIO),
    (text.create_summary_metadata, plugins.TEXT),
    (video.create_summary_metadata, plugins.IMAGES),
    (figure.create_summary_metadata, plugins.IMAGES),
]


@settings(max_examples=50, deadline=None)
@given(description=st.none() | st.text(max_size=30))
@pytest.mark.parametrize("plugin", KINDS, ids=lambda p: p.name)
def test_metadata_bytes_equal_tensorboards(plugin: plugins.Plugin, description: str | None) -> None:
    theirs = _tensorboard(plugin.name)(description or None)
    ours = plugin.metadata_bytes(description, "test")
    assert ours == theirs.SerializeToString()
    assert plugin.create_summary_metadata(description).SerializeToString() == ours
    assert plugin.parse(plugin.create_summary_metadata(description)) == 0


@pytest.mark.parametrize(("make", "plugin"), OPS, ids=lambda x: getattr(x, "__module__", ""))
def test_each_ops_metadata_is_its_plugins(make: Callable[..., Any], plugin: plugins.Plugin) -> None:
    for description in (None, "", "*d*"):
        assert make(description).SerializeToString() == plugin.metadata_bytes(description)


def test_custom_scalars_metadata_equals_tensorboards() -> None:
    from tensorboard.plugins.custom_scalar import metadata

    theirs = metadata.create_summary_metadata()
    ours = custom_scalars.create_summary_metadata().SerializeToString()
    assert ours == plugins.CUSTOM_SCALARS.plugin_data == theirs.SerializeToString()


@given(version=st.integers(0, 2**63 - 1))
def test_parse_reads_the_version_back(version: int) -> None:
    plugin = plugins.Plugin("p", version=version, extra=b"\x10\x0b")
    assert plugin.parse(plugin.create_summary_metadata("d")) == version


def test_parse_refuses_another_plugins_metadata() -> None:
    with pytest.raises(ValueError, match="'images', not 'scalars'"):
        plugins.SCALARS.parse(plugins.IMAGES.create_summary_metadata())


def test_bad_descriptions_name_the_call() -> None:
    with pytest.raises(TypeError, match=r"^scalar_pb: 'description' must be a str"):
        sl.scalar_pb("t", 1.0, description=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="create_summary_metadata: 'description' is not valid"):
        plugins.TEXT.create_summary_metadata("\ud800")


def test_the_reader_sorts_what_the_ops_write_by_the_same_names(tmp_path: Path) -> None:
    # Written by the ops with their plugins' metadata; read_columns tells the kinds
    # apart by the plugin names alone.
    w = sl.create_file_writer(tmp_path)
    with w.as_default(step=1):
        sl.scalar("s", 1.0)
        sl.histogram("h", np.arange(10.0))
        sl.image("i", np.zeros((1, 2, 2, 3), np.uint8))
        sl.audio("a", np.zeros((1, 8, 1), np.float32), 8000)
        sl.text("t", "hello")
    w.close()
    cols = read_columns(tmp_path, kinds=("scalars", "histograms", "images", "audio", "text"))
    assert sorted(cols["."]) == ["a", "h", "i", "s", "t"]
    assert cols["."]["t"].value == ["hello"]


@settings(max_examples=50, deadline=None)
@given(
    name=st.text(min_size=1, max_size=12),
    thresholds=st.integers(1, 2**31 - 1),
    description=st.none() | st.text(max_size=20),
)
def test_pr_curve_metadata_equals_tensorboards(
    name: str, thresholds: int, description: str | None
) -> None:
    from tensorboard.plugins.pr_curve import metadata

    from summarylib.ops import pr_curve

    theirs = metadata.create_summary_metadata(name, description or None, thresholds)
    ours = pr_curve.create_summary_metadata(name, thresholds, description)
    assert ours.SerializeToString() == theirs.SerializeToString()
    assert plugins.PR_CURVES.parse(ours) == 0


@settings(max_examples=50, deadline=None)
@given(
    name=st.text(min_size=1, max_size=12),
    content_type=st.sampled_from([1, 2, 3]),
    components=st.integers(1, 14),
    shape=st.lists(st.integers(1, 10**6), min_size=3, max_size=3),
    config=st.sampled_from(["{}", '{"camera": {"fov": 75}}']),
    description=st.none() | st.text(max_size=20),
)
def test_mesh_metadata_equals_tensorboards(
    name: str,
    content_type: int,
    components: int,
    shape: list[int],
    config: str,
    description: str | None,
) -> None:
    from tensorboard.plugins.mesh import metadata

    from summarylib.ops import mesh

    theirs = metadata.create_summary_metadata(
        name, None, content_type, components, shape, description or None, config
    )
    ours = mesh.create_summary_metadata(name, content_type, components, shape, config, description)
    assert ours.SerializeToString() == theirs.SerializeToString()
    assert plugins.MESH.parse(ours) == 0
