"""summarylib.hparams: the bytes of tensorboard's hparams helpers, the rules for values,
and the HParams dashboard reading a trial from the run that holds its curves."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib import hparams as hp
from tests.helpers import only_file, tb_events

tb = pytest.importorskip("tensorboard.plugins.hparams.summary_v2")


def normalized(summary: Any) -> bytes:
    """Serialized Summary with its plugin content re-serialized deterministically.

    Both libraries serialize the hparams map in the protobuf runtime's iteration order,
    which is not fixed; deterministic serialization sorts map entries by key.
    """
    from tensorboard.plugins.hparams import plugin_data_pb2

    copy = type(summary)()
    copy.CopyFrom(summary)
    for v in copy.value:
        data = plugin_data_pb2.HParamsPluginData.FromString(v.metadata.plugin_data.content)
        v.metadata.plugin_data.content = data.SerializeToString(deterministic=True)
    return copy.SerializeToString(deterministic=True)


names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
values = st.one_of(st.booleans(), st.integers(-2**53, 2**53),
                   st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))


@settings(max_examples=150, deadline=None)
@given(d=st.dictionaries(names, values, max_size=6), trial=st.none() | st.text(max_size=5),
       start=st.floats(0, 2e9))
def test_hparams_pb_bytes_equal_tensorboards(d: dict[str, Any], trial: str | None,
                                             start: float) -> None:
    ours = hp.hparams_pb(d, trial_id=trial, start_time_secs=start)
    theirs = tb.hparams_pb(d, trial_id=trial, start_time_secs=start)
    assert normalized(ours) == normalized(theirs)
    if len(d) <= 1:  # no map order to differ: the raw bytes are equal too
        assert ours.SerializeToString() == theirs.SerializeToString()


def domain_pairs() -> st.SearchStrategy[tuple[Any, Any]]:
    ints = st.lists(st.integers(-100, 100), min_size=1, max_size=4)
    floats = st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=4)
    strs = st.lists(st.text(max_size=4), min_size=1, max_size=4)
    bools = st.lists(st.booleans(), min_size=1, max_size=2)
    discrete = st.one_of(ints, floats, strs, bools).map(
        lambda v: (hp.Discrete(v), tb.Discrete(v)))
    interval = st.tuples(st.integers(-9, 9), st.integers(0, 9)).map(
        lambda t: (hp.IntInterval(t[0], t[0] + t[1]), tb.IntInterval(t[0], t[0] + t[1])))
    real = st.tuples(st.floats(-9, 9), st.floats(0, 9)).map(
        lambda t: (hp.RealInterval(t[0], t[0] + t[1]), tb.RealInterval(t[0], t[0] + t[1])))
    return st.one_of(st.just((None, None)), discrete, interval, real)


@settings(max_examples=100, deadline=None)
@given(hps=st.lists(st.tuples(names, domain_pairs(), st.none() | st.text(max_size=4)),
                    max_size=4),
       metrics=st.lists(st.tuples(names, st.none() | st.text(max_size=3),
                                  st.sampled_from([None, 1, 2])), max_size=3),
       created=st.none() | st.floats(0, 2e9))
def test_hparams_config_pb_bytes_equal_tensorboards(hps: list, metrics: list,
                                                    created: float | None) -> None:
    ours = hp.hparams_config_pb(
        [hp.HParam(n, d[0], description=desc) for n, d, desc in hps],
        [hp.Metric(t, group=g, dataset_type=k) for t, g, k in metrics], created)
    theirs = tb.hparams_config_pb(
        [tb.HParam(n, d[1], description=desc) for n, d, desc in hps],
        [tb.Metric(t, group=g, dataset_type=k) for t, g, k in metrics], created)
    assert ours.SerializeToString() == theirs.SerializeToString()


def test_session_end_pb_matches_tensorboards_layout() -> None:
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    summary = hp.session_end_pb("failure", 12.5)
    (value,) = summary.value
    assert value.tag == metadata.SESSION_END_INFO_TAG
    data = metadata.parse_session_end_info_plugin_data(value.metadata.plugin_data.content)
    assert data == plugin_data_pb2.SessionEndInfo(status=2, end_time_secs=12.5)
    with pytest.raises(ValueError, match="session_end_pb: 'status'"):
        hp.session_end_pb("done")


def test_ops_write_at_step_zero_with_literal_tags(tmp_path: Path) -> None:
    with sl.create_file_writer(tmp_path).as_default(step=5), sl.name_scope("scope"):
        assert hp.hparams({"lr": 0.1}, start_time_secs=1.0)
        assert hp.hparams_config([hp.HParam("lr")], [hp.Metric("loss")])
        assert hp.session_end("success", 2.0)
    events = [e for e in tb_events(only_file(tmp_path)) if e.summary.value]
    assert [(e.step, e.summary.value[0].tag) for e in events] == [
        (0, "_hparams_/session_start_info"), (0, "_hparams_/experiment"),
        (0, "_hparams_/session_end_info")]
    expected = tb.hparams_pb({"lr": 0.1}, start_time_secs=1.0)
    assert events[0].summary.SerializeToString() == expected.SerializeToString()
    assert hp.hparams({"lr": 0.1}) is False  # no default writer


class FakeTorchScalar:
    """What torch.tensor(3.0) offers: item() and numel()."""

    def item(self) -> float:
        return 3.0

    def numel(self) -> int:
        return 1

    def size(self) -> tuple[int, ...]:
        return ()


def test_value_rules() -> None:
    from summarylib.ops.hparams_plugin import coerce_hparams

    got = coerce_hparams({"a": np.float32(0.5), "b": np.int64(3), "c": np.bool_(True),
                          "d": np.array(2.5), hp.HParam("e"): "x", "f": FakeTorchScalar()}, "t")
    assert got == {"a": 0.5, "b": 3, "c": True, "d": 2.5, "e": "x", "f": 3.0}
    assert type(got["b"]) is int and type(got["c"]) is bool
    for bad in (None, [1, 2], {"x": 1}, np.array([1.0, 2.0]), object()):
        with pytest.raises(TypeError, match="t: hparam 'k' must be a bool, int, float or str"):
            coerce_hparams({"k": bad}, "t")
    with pytest.raises(TypeError, match="non-empty str"):
        coerce_hparams({"": 1}, "t")
    with pytest.raises(ValueError, match="several values for hparam 'a'"):
        coerce_hparams({"a": 1, hp.HParam("a"): 2}, "t")


def test_torch_scalars_are_values() -> None:
    torch = pytest.importorskip("torch")
    from summarylib.ops.hparams_plugin import coerce_hparams

    assert coerce_hparams({"lr": torch.tensor(0.5), "n": torch.tensor(3)}, "t") == {
        "lr": 0.5, "n": 3}
    with pytest.raises(TypeError, match="hparam 'v'"):
        coerce_hparams({"v": torch.tensor([1.0, 2.0])}, "t")


def test_domain_errors_name_the_argument() -> None:
    with pytest.raises(TypeError, match="IntInterval: 'min_value' must be an int"):
        hp.IntInterval(0.5, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="RealInterval"):
        hp.RealInterval(2.0, 1.0)
    with pytest.raises(TypeError, match="Discrete: value"):
        hp.Discrete([1, "a"])
    with pytest.raises(ValueError, match="HParam: 'name'"):
        hp.HParam("")


def test_add_hparams_domains_and_bad_domains(tmp_path: Path) -> None:
    from tensorboard.plugins.hparams import metadata

    with sl.SummaryWriter(tmp_path) as w:
        w.add_hparams({"opt": "adam", "lr": 0.1, "bn": True}, {"acc": 0.5},
                      hparam_domain_discrete={"opt": ["sgd", "adam"]})
        with pytest.raises(ValueError, match="'hparam_domain_discrete' names 'nope'"):
            w.add_hparams({"lr": 0.1}, {"acc": 1.0}, hparam_domain_discrete={"nope": [1]})
    exp = next(v for e in tb_events(only_file(tmp_path)) for v in e.summary.value
               if v.tag == "_hparams_/experiment")
    experiment = metadata.parse_experiment_plugin_data(exp.metadata.plugin_data.content)
    infos = {h.name: h for h in experiment.hparam_infos}
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert infos["lr"].type == 3 and not infos["lr"].HasField("domain_discrete")
    assert infos["bn"].type == 2
    assert [m.name.tag for m in experiment.metric_infos] == ["acc"]


def test_dashboard_reads_the_runs_own_metric(tmp_path: Path) -> None:
    """The trial's metric is the run's logged series: its last value, not a placeholder."""
    from tests.tbserver import TensorBoardServer

    losses = [1.0 / (1 + s) for s in range(10)]
    with sl.SummaryWriter(tmp_path / "trial") as w:
        w.add_hparams({"lr": 0.01, "opt": "adam", "bs": 32}, {"loss": -1.0})
        for step, loss in enumerate(losses):
            w.add_scalar("loss", loss, step)
    with sl.SummaryWriter(tmp_path / "other") as w:  # a second trial, metric logged first
        for step in range(3):
            w.add_scalar("loss", 5.0 - step, step)
        w.add_hparams({"lr": 0.1, "opt": "sgd", "bs": 32}, {"loss": 123.0})
    request = {"experimentName": "", "startIndex": 0, "sliceSize": 10,
               "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                   "STATUS_RUNNING"],
               "colParams": [{"hparam": "lr"}, {"metric": {"tag": "loss", "group": ""}}]}
    with TensorBoardServer(tmp_path) as server:
        groups = server.poll(
            lambda: server.post_json("/data/plugin/hparams/session_groups", request),
            lambda g: len(g.get("sessionGroups", [])) == 2)
        experiment = server.post_json("/data/plugin/hparams/experiment",
                                      {"experimentName": ""})
    assert sorted(h["name"] for h in experiment["hparamInfos"]) == ["bs", "lr", "opt"]
    by_run = {g["sessions"][0]["name"]: g for g in groups["sessionGroups"]}
    assert sorted(by_run) == ["other", "trial"]
    (metric,) = by_run["trial"]["metricValues"]
    assert metric["value"] == pytest.approx(losses[-1]) and metric["trainingStep"] == 9
    (metric,) = by_run["other"]["metricValues"]
    assert metric["value"] == 3.0 and metric["trainingStep"] == 2  # 123.0 was not written
    assert by_run["trial"]["sessions"][0]["status"] == "STATUS_SUCCESS"
    assert not math.isnan(by_run["trial"]["sessions"][0]["endTimeSecs"])
