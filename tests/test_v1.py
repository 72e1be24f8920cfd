"""summarylib.v1: TensorFlow 1's FileWriter workflow (``*_pb`` + merge + add_summary)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib import v1
from summarylib.proto import event_pb2, summary_pb2
from tests.helpers import tb_events, wait_until
from tests.observe import observe
from tests.tbserver import TensorBoardServer


def files(logdir: Path) -> list[Path]:
    return sorted(p for p in logdir.iterdir() if "tfevents" in p.name)


def test_visualizing_learning_workflow(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=100) for _ in range(3)]
    with v1.FileWriter(tmp_path) as writer:
        for step in range(3):
            merged = v1.merge([
                sl.scalar_pb("loss", 1.0 / (step + 1)),
                sl.histogram_pb("weights", weights[step]),
                sl.image_pb("input", np.full((1, 4, 4, 3), step * 50, dtype=np.uint8)),
                sl.text_pb("note", f"step {step}"),
            ])
            writer.add_summary(merged, global_step=step)
    obs = observe(tmp_path)["."]
    assert obs["loss"].steps == [0, 1, 2]
    assert obs["loss"].values == [1.0, 0.5, pytest.approx(1 / 3)]
    assert obs["note"].values == [["step 0"], ["step 1"], ["step 2"]]
    assert [v[0][0, 0, 0] for v in obs["input"].values] == [0, 50, 100]
    assert obs["weights"].plugin == "histograms"
    # Verbatim, as TensorFlow 1 writes: every event carries the metadata.
    events = [e for e in tb_events(files(tmp_path)[0]) if e.summary.value]
    assert all(v.metadata.plugin_data.plugin_name for e in events for v in e.summary.value)


def test_tensorboard_protos_and_bytes_are_accepted(tmp_path: Path) -> None:
    from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2

    theirs = tb_summary_pb2.Summary(value=[tb_summary_pb2.Summary.Value(tag="a",
                                                                        simple_value=2.5)])
    with v1.FileWriter(tmp_path) as writer:
        writer.add_summary(theirs, 1)
        writer.add_summary(sl.scalar_pb("b", 3.0).SerializeToString(), 2)
        writer.add_summary(sl.scalar_pb("c", 4.0))  # no step: 0, as TensorFlow 1
    obs = observe(tmp_path)["."]
    assert (obs["a"].steps, obs["a"].values) == ([1], [2.5])
    assert (obs["b"].steps, obs["b"].values) == ([2], [3.0])
    assert obs["c"].steps == [0]


def test_add_event_is_verbatim(tmp_path: Path) -> None:
    event = event_pb2.Event(wall_time=123.25, step=7, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="x", simple_value=1.0)]))
    with v1.FileWriter(tmp_path) as writer:
        writer.add_event(event)
    (written,) = [e for e in tb_events(files(tmp_path)[0]) if e.summary.value]
    assert written.SerializeToString() == event.SerializeToString()


def test_session_log_start_purges_in_tensorboard(tmp_path: Path) -> None:
    with v1.FileWriter(tmp_path) as writer:
        for step in range(6):
            writer.add_summary(sl.scalar_pb("loss", float(step)), step)
    time.sleep(1.05)  # a restart: a later file
    with v1.FileWriter(tmp_path) as writer:
        writer.add_session_log(event_pb2.SessionLog(status=event_pb2.SessionLog.START), 3)
        for step in range(3, 5):
            writer.add_summary(sl.scalar_pb("loss", 10.0 + step), step)
    expected = [[0, 0.0], [1, 1.0], [2, 2.0], [3, 13.0], [4, 14.0]]
    with TensorBoardServer(tmp_path) as tb:
        tb.poll(lambda: [p[1:] for p in tb.get_json("/data/plugin/scalars/scalars", run=".",
                                                      tag="loss")],
                lambda got: got == expected)


def test_add_graph_and_run_metadata(tmp_path: Path) -> None:
    from summarylib.graph import GraphBuilder, TensorSpec
    from summarylib.proto import run_metadata_pb2

    b = GraphBuilder()
    x = b.placeholder((1, 3), "float32", name="x")
    b.op("Relu", [x], name="relu", outputs=TensorSpec((1, 3), "float32"))
    with v1.FileWriter(tmp_path, graph=b.graph) as writer:
        writer.add_run_metadata(run_metadata_pb2.RunMetadata(), "step_1", 1)
    events = tb_events(files(tmp_path)[0])
    assert sum(1 for e in events if e.graph_def) == 1
    (tagged,) = [e for e in events if e.HasField("tagged_run_metadata")]
    assert (tagged.step, tagged.tagged_run_metadata.tag) == (1, "step_1")
    with TensorBoardServer(tmp_path) as tb:
        graph = tb.poll(lambda: tb.get("/data/plugin/graphs/graph", run=".", conceptual="false"),
                        lambda body: b"relu" in body)
    assert b"Relu" in graph


def test_reopen_starts_a_new_file(tmp_path: Path) -> None:
    writer = v1.FileWriter(tmp_path, filename_suffix=".v1test")
    writer.add_summary(sl.scalar_pb("a", 1.0), 0)
    writer.close()
    with pytest.raises(sl.WriterClosedError, match="reopen"):
        writer.add_summary(sl.scalar_pb("a", 2.0), 1)
    writer.reopen()
    writer.add_summary(sl.scalar_pb("a", 3.0), 2)
    writer.close()
    written = files(tmp_path)
    assert len(written) == 2 and all(p.name.endswith(".v1test") for p in written)
    assert writer.get_logdir() == str(tmp_path)


def test_flush_secs(tmp_path: Path) -> None:
    writer = v1.FileWriter(tmp_path, flush_secs=0.2)
    writer.add_summary(sl.scalar_pb("a", 1.0), 0)
    assert wait_until(lambda: len(tb_events(files(tmp_path)[0])) == 2, 5)
    writer.close()


@pytest.mark.parametrize("call,exc,msg", [
    (lambda w: w.add_summary(3), TypeError, "add_summary: 'summary'"),
    (lambda w: w.add_summary(b"\xff\xff\xff"), ValueError, "not a serialized Summary"),
    (lambda w: w.add_summary(sl.scalar_pb("a", 1.0), 2**63), ValueError, "add_summary"),
    (lambda w: w.add_summary(sl.scalar_pb("a", 1.0), "1"), TypeError, "add_summary"),
    (lambda w: w.add_event("x"), TypeError, "add_event: 'event'"),
    (lambda w: w.add_run_metadata(b"", ""), ValueError, "add_run_metadata: 'tag'"),
    (lambda w: w.add_graph(3), TypeError, "add_graph: 'graph'"),
])
def test_bad_input_names_the_argument_and_writes_nothing(tmp_path: Path, call: object,
                                                         exc: type, msg: str) -> None:
    with v1.FileWriter(tmp_path) as writer, pytest.raises(exc, match=msg):
        call(writer)  # type: ignore[operator]
    assert len(tb_events(files(tmp_path)[0])) == 1  # the file version only


def test_merge_rejects_non_summaries() -> None:
    with pytest.raises(TypeError, match="merge: 'summaries'"):
        v1.merge(sl.scalar_pb("a", 1.0))
    with pytest.raises(TypeError, match=r"merge: 'summaries\[1\]'"):
        v1.merge([sl.scalar_pb("a", 1.0), 5])


@settings(max_examples=50, deadline=None)
@given(groups=st.lists(st.lists(st.tuples(st.text(min_size=1, max_size=5),
                                          st.floats(allow_nan=False, width=32)),
                                max_size=4), max_size=5),
       as_bytes=st.booleans())
def test_merge_keeps_every_value_in_order(groups: list[list[tuple[str, float]]],
                                          as_bytes: bool) -> None:
    summaries = []
    for group in groups:
        s = summary_pb2.Summary()
        for tag, value in group:
            s.value.add(tag=tag, simple_value=value)
        summaries.append(s.SerializeToString() if as_bytes else s)
    merged = v1.merge(summaries)
    assert [(v.tag, v.simple_value) for v in merged.value] == [
        pair for group in groups for pair in group]
