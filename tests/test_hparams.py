"""summarylib.hparams: the bytes of tensorboard's hparams helpers, the rules for values,
errors that name the argument, and the HParams dashboard reading a trial from the run
that holds its curves."""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import summarylib as sl
from summarylib import hparams as hp
from summarylib.ops.hparams_plugin import coerce_hparams, write_trial
from tests.helpers import only_file, tb_events

tb = pytest.importorskip("tensorboard.plugins.hparams.summary_v2")
tb_metadata = pytest.importorskip("tensorboard.plugins.hparams.metadata")
tb_plugin_data = pytest.importorskip("tensorboard.plugins.hparams.plugin_data_pb2")

ALL_STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]

names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
python_values = st.one_of(st.booleans(), st.integers(-2**53, 2**53),
                          st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
# tensorboard turns numpy scalars into Python ones too (np.generic.item()).
numpy_values = st.one_of(st.integers(-2**31, 2**31 - 1).map(np.int64),
                         st.floats(-1e6, 1e6, width=32).map(np.float32),
                         st.booleans().map(np.bool_))
values = st.one_of(python_values, numpy_values)


def summary_events(logdir: Path) -> list[Any]:
    return [e for e in tb_events(only_file(logdir)) if e.HasField("summary")]


@settings(max_examples=200, deadline=None)
@given(d=st.dictionaries(names, values, max_size=8), trial=st.none() | st.text(max_size=5),
       start=st.floats(0, 2e9), as_hparam_keys=st.booleans())
def test_hparams_pb_bytes_equal_tensorboards(d: dict[str, Any], trial: str | None,
                                             start: float, as_hparam_keys: bool) -> None:
    ours_in: dict[Any, Any] = {hp.HParam(k) if as_hparam_keys else k: v for k, v in d.items()}
    theirs_in: dict[Any, Any] = {tb.HParam(k) if as_hparam_keys else k: v for k, v in d.items()}
    ours = hp.hparams_pb(ours_in, trial_id=trial, start_time_secs=start)
    theirs = tb.hparams_pb(theirs_in, trial_id=trial, start_time_secs=start)
    # Raw bytes, map entries included: the same insertion order and copies give the same
    # order of the map on the wire.
    assert ours.SerializeToString() == theirs.SerializeToString()


def domain_pairs() -> st.SearchStrategy[tuple[Any, Any]]:
    ints = st.lists(st.integers(-100, 100), max_size=4)
    floats = st.lists(st.floats(-1e3, 1e3), max_size=4)
    strs = st.lists(st.text(max_size=4), max_size=4)
    bools = st.lists(st.booleans(), max_size=2)
    discrete = st.one_of(
        *(lists.map(lambda v, t=t: (hp.Discrete(v, t), tb.Discrete(v, t)))  # type: ignore[misc]
          for lists, t in ((ints, int), (floats, float), (strs, str), (bools, bool))))
    interval = st.tuples(st.integers(-9, 9), st.integers(0, 9)).map(
        lambda t: (hp.IntInterval(t[0], t[0] + t[1]), tb.IntInterval(t[0], t[0] + t[1])))
    real = st.tuples(st.floats(-9, 9), st.floats(0, 9)).map(
        lambda t: (hp.RealInterval(t[0], t[0] + t[1]), tb.RealInterval(t[0], t[0] + t[1])))
    return st.one_of(st.just((None, None)), discrete, interval, real)


labels = st.none() | st.text(max_size=4)


@settings(max_examples=150, deadline=None)
@given(hps=st.lists(st.tuples(names, domain_pairs(), labels, labels), max_size=4),
       metrics=st.lists(st.tuples(names, labels, labels, labels,
                                  st.sampled_from([None, hp.Metric.TRAINING,
                                                   hp.Metric.VALIDATION])), max_size=3),
       created=st.none() | st.floats(0, 2e9))
def test_hparams_config_pb_bytes_equal_tensorboards(
        hps: list[tuple[Any, ...]], metrics: list[tuple[Any, ...]],
        created: float | None) -> None:
    ours = hp.hparams_config_pb(
        [hp.HParam(n, d[0], display_name=dn, description=de) for n, d, dn, de in hps],
        [hp.Metric(t, group=g, display_name=dn, description=de, dataset_type=k)
         for t, g, dn, de, k in metrics], created)
    theirs = tb.hparams_config_pb(
        [tb.HParam(n, d[1], display_name=dn, description=de) for n, d, dn, de in hps],
        [tb.Metric(t, group=g, display_name=dn, description=de, dataset_type=k)
         for t, g, dn, de, k in metrics], created)
    assert ours.SerializeToString() == theirs.SerializeToString()


def test_metric_dataset_types_are_tensorboards() -> None:
    assert (hp.Metric.TRAINING, hp.Metric.VALIDATION) == (tb.Metric.TRAINING,
                                                          tb.Metric.VALIDATION)


@pytest.mark.parametrize("status,code", [("unknown", 0), ("success", 1), ("failure", 2),
                                         ("running", 3), (2, 2)])
def test_session_end_pb_bytes_equal_tensorboards_layout(status: str | int, code: int) -> None:
    # tensorboard's session_end_pb needs TensorFlow; its summary_v2 builds every hparams
    # Summary with _summary_pb, which does not.
    theirs = tb._summary_pb(tb_metadata.SESSION_END_INFO_TAG, tb_plugin_data.HParamsPluginData(
        session_end_info=tb_plugin_data.SessionEndInfo(status=code, end_time_secs=12.5)))
    assert hp.session_end_pb(status, 12.5).SerializeToString() == theirs.SerializeToString()


@settings(max_examples=20, deadline=None)
@given(d=st.dictionaries(names, python_values, min_size=1, max_size=5),
       start=st.floats(0, 2e9), created=st.floats(0, 2e9))
def test_op_events_carry_tensorboards_summaries(d: dict[str, Any], start: float,
                                                created: float) -> None:
    """The ops write tensorboard's Summary verbatim, at step 0, whatever the default step
    and the name scope."""
    with tempfile.TemporaryDirectory() as tmp:
        logdir = Path(tmp)
        config = ([hp.HParam(k) for k in d], [hp.Metric("loss")])
        with sl.create_file_writer(logdir).as_default(step=7), sl.name_scope("scope"):
            assert hp.hparams_config(*config, time_created_secs=created)
            assert hp.hparams(d, start_time_secs=start)
            assert hp.session_end("running", end_time_secs=start + 1)
        events = summary_events(logdir)
    assert [e.step for e in events] == [0, 0, 0]
    expected = [
        tb.hparams_config_pb([tb.HParam(k) for k in d], [tb.Metric("loss")], created),
        tb.hparams_pb(d, start_time_secs=start),
        hp.session_end_pb("running", start + 1),
    ]
    assert [e.summary.SerializeToString() for e in events] == [
        s.SerializeToString() for s in expected]


def test_ops_record_nothing_without_a_writer_or_when_record_if_is_false(
        tmp_path: Path) -> None:
    assert hp.hparams({"lr": 0.1}) is False
    assert hp.hparams_config([hp.HParam("lr")], []) is False
    assert hp.session_end() is False
    assert write_trial({"lr": 0.1}, ["loss"]) is False
    with sl.create_file_writer(tmp_path).as_default(), sl.record_if(False):
        assert hp.hparams({"lr": 0.1}) is False
        assert write_trial({"lr": 0.1}, ["loss"]) is False
    assert summary_events(tmp_path) == []


def test_start_time_defaults_to_now() -> None:
    before = time.time()
    content = hp.hparams_pb({"a": 1}).value[0].metadata.plugin_data.content
    info = tb_metadata.parse_session_start_info_plugin_data(content)
    assert before <= info.start_time_secs <= time.time()
    # The group name is the hash of the hparams (TensorBoard's rule): equal hparams, one group.
    assert info.group_name == tb_metadata.parse_session_start_info_plugin_data(
        hp.hparams_pb({"a": np.int64(1)}).value[0].metadata.plugin_data.content).group_name


class FakeTorchScalar:
    """What a 0-d torch tensor offers: item(), ndim and numel()."""

    ndim = 0

    def item(self) -> float:
        return 3.0

    def numel(self) -> int:
        return 1


def test_value_rules() -> None:
    got = coerce_hparams({"a": np.float32(0.5), "b": np.int64(3), "c": np.bool_(True),
                          "d": np.array(2.5), hp.HParam("e"): "x", "f": FakeTorchScalar(),
                          "g": np.str_("s")}, "t")
    assert got == {"a": 0.5, "b": 3, "c": True, "d": 2.5, "e": "x", "f": 3.0, "g": "s"}
    assert [type(got[k]) for k in "abcd"] == [float, int, bool, float]
    for bad in (None, [1, 2], (1,), {"x": 1}, np.array([1.0, 2.0]), np.array([1.0]),
                np.bytes_(b"x"), object(), 1j):
        with pytest.raises(TypeError, match=r"^t: hparam 'k' must be a bool, int, float or str"):
            coerce_hparams({"k": bad}, "t")
    for key in ("", 3, None):
        with pytest.raises(TypeError, match=r"^t: 'hparams' keys must be non-empty str"):
            coerce_hparams({key: 1}, "t")
    with pytest.raises(ValueError, match=r"^t: several values for hparam 'a'"):
        coerce_hparams({"a": 1, hp.HParam("a"): 2}, "t")
    with pytest.raises(TypeError, match=r"^t: 'hparams' must be a dict"):
        coerce_hparams([("a", 1)], "t")  # type: ignore[arg-type]


def test_torch_scalars_are_values() -> None:
    torch = pytest.importorskip("torch")
    assert coerce_hparams({"lr": torch.tensor(0.5), "n": torch.tensor(3),
                           "b": torch.tensor(True)}, "t") == {"lr": 0.5, "n": 3, "b": True}
    for bad in (torch.tensor([1.0, 2.0]), torch.tensor([1.0])):
        with pytest.raises(TypeError, match="hparam 'v'"):
            coerce_hparams({"v": bad}, "t")


# The calls below pass wrong types on purpose; these handles keep the type checker quiet.
loose: Any = hp
loose_write_trial: Any = write_trial

BAD_CALLS: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: loose.IntInterval(0.5, 2), TypeError, "^IntInterval: 'min_value' must be an int"),
    (lambda: loose.IntInterval(0, True), TypeError, "^IntInterval: 'max_value' must be an int"),
    (lambda: loose.IntInterval(3, 2), ValueError, "^IntInterval: 'min_value' 3 > 'max_value' 2"),
    (lambda: loose.RealInterval(0, 1.0), TypeError, "^RealInterval: 'min_value' must be a float"),
    (lambda: loose.RealInterval(2.0, 1.0), ValueError, "^RealInterval: 'min_value'"),
    (lambda: loose.Discrete([1, "a"]), TypeError, "^Discrete: 'values' must all be int"),
    (lambda: loose.Discrete([]), ValueError, "^Discrete: an empty domain needs 'dtype'"),
    (lambda: loose.Discrete([1], dtype=list), ValueError, "^Discrete: 'dtype' must be"),
    (lambda: loose.HParam(""), ValueError, "^HParam: 'name' must be a non-empty str"),
    (lambda: loose.HParam("a", [1, 2]), TypeError, "^HParam: 'domain' must be a Domain"),
    (lambda: loose.HParam("a", description=3), TypeError, "^HParam: 'description'"),
    (lambda: loose.Metric(""), ValueError, "^Metric: 'tag' must be a non-empty str"),
    (lambda: loose.Metric("m", group=1), TypeError, "^Metric: 'group' must be a str"),
    (lambda: loose.Metric("m", dataset_type=7), ValueError, "^Metric: 'dataset_type' must be"),
    (lambda: loose.hparams_pb({"a": None}), TypeError, "^hparams_pb: hparam 'a' must be"),
    (lambda: loose.hparams_pb({"a": 1}, trial_id=5), TypeError, "^hparams_pb: 'trial_id'"),
    (lambda: loose.hparams_pb({"a": 1}, start_time_secs="now"), TypeError,
     "^hparams_pb: 'start_time_secs' must be a number"),
    (lambda: loose.hparams_config_pb(["lr"], []), TypeError,
     "^hparams_config_pb: 'hparams' must hold HParam, got 'lr'"),
    (lambda: loose.hparams_config_pb([], "loss"), TypeError,
     "^hparams_config_pb: 'metrics' must be a list of Metric"),
    (lambda: loose.hparams_config_pb([], [], time_created_secs="x"), TypeError,
     "^hparams_config_pb: 'time_created_secs'"),
    (lambda: loose.session_end_pb("done"), ValueError, "^session_end_pb: 'status' must be one of"),
    (lambda: loose.session_end_pb(True), ValueError, "^session_end_pb: 'status'"),
    (lambda: loose.session_end_pb(end_time_secs=[1]), TypeError,
     "^session_end_pb: 'end_time_secs'"),
]


@pytest.mark.parametrize("call,exc,message", BAD_CALLS)
def test_bad_input_errors_name_the_function_and_argument(
        call: Callable[[], Any], exc: type[Exception], message: str) -> None:
    with pytest.raises(exc, match=message):
        call()


@pytest.mark.parametrize("call,message", [
    (lambda: loose.hparams({"a": [1]}), "^hparams: hparam 'a'"),
    (lambda: loose.hparams_config([loose.HParam("a")], [3]), "^hparams_config: 'metrics'"),
    (lambda: loose.session_end("ok"), "^session_end: 'status'"),
    (lambda: loose_write_trial({"a": 1, "b": None}, ["loss"]), "^add_hparams: hparam 'b'"),
    (lambda: loose_write_trial({"a": 1}, [""]), "^add_hparams: 'metric_dict' keys"),
    (lambda: loose_write_trial({"a": 1}, "loss"), "^add_hparams: metric names must be a list"),
    (lambda: loose_write_trial({"a": 1}, ["m", "m"]), "^add_hparams: metric names repeat"),
    (lambda: loose_write_trial({"a": 1}, ["m"], trial_id=3), "^add_hparams: 'trial_id'"),
    (lambda: loose_write_trial({"a": 1}, ["m"], hparam_domains={"b": [1]}),
     "^add_hparams: 'hparam_domain_discrete' names 'b'"),
    (lambda: loose_write_trial({"a": 1}, ["m"], hparam_domains={"a": [1, "x"]}),
     r"^add_hparams: 'hparam_domain_discrete\['a'\]' must hold values of one type"),
])
def test_rejected_ops_write_nothing(tmp_path: Path, call: Callable[[], Any],
                                    message: str) -> None:
    with sl.create_file_writer(tmp_path).as_default(), \
            pytest.raises((TypeError, ValueError), match=message):
        call()
    assert summary_events(tmp_path) == []


def test_write_trial_lists_exactly_the_given_hparams_and_metrics(tmp_path: Path) -> None:
    with sl.create_file_writer(tmp_path).as_default(step=3), sl.name_scope("s"):
        assert write_trial({"opt": "adam", "lr": np.float32(0.5), "bn": True, "bs": 32},
                           ["acc", "loss"], trial_id="t1", start_time_secs=5.0,
                           hparam_domains={"opt": ["sgd", "adam"]})
    exp, start = summary_events(tmp_path)
    assert (exp.step, start.step) == (0, 0)
    assert [exp.summary.value[0].tag, start.summary.value[0].tag] == [
        "_hparams_/experiment", "_hparams_/session_start_info"]
    experiment = tb_metadata.parse_experiment_plugin_data(
        exp.summary.value[0].metadata.plugin_data.content)
    infos = {h.name: h for h in experiment.hparam_infos}
    assert list(infos) == ["opt", "lr", "bn", "bs"]
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert (infos["opt"].type, infos["lr"].type, infos["bn"].type, infos["bs"].type) == (
        1, 3, 2, 3)  # STRING, FLOAT64, BOOL, FLOAT64
    assert not infos["lr"].HasField("domain_discrete")
    assert [(m.name.group, m.name.tag) for m in experiment.metric_infos] == [
        ("", "acc"), ("", "loss")]
    assert start.summary.SerializeToString() == tb.hparams_pb(
        {"opt": "adam", "lr": 0.5, "bn": True, "bs": 32}, trial_id="t1",
        start_time_secs=5.0).SerializeToString()


def test_add_hparams_domains_and_bad_domains(tmp_path: Path) -> None:
    with sl.SummaryWriter(tmp_path) as w:
        w.add_hparams({"opt": "adam", "lr": 0.1, "bn": True}, {"acc": 0.5},
                      hparam_domain_discrete={"opt": ["sgd", "adam"]})
        with pytest.raises(ValueError, match="'hparam_domain_discrete' names 'nope'"):
            w.add_hparams({"lr": 0.1}, {"acc": 1.0}, hparam_domain_discrete={"nope": [1]})
    exp = next(v for e in tb_events(only_file(tmp_path)) for v in e.summary.value
               if v.tag == "_hparams_/experiment")
    experiment = tb_metadata.parse_experiment_plugin_data(exp.metadata.plugin_data.content)
    infos = {h.name: h for h in experiment.hparam_infos}
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert infos["lr"].type == 3 and not infos["lr"].HasField("domain_discrete")
    assert infos["bn"].type == 2
    assert [m.name.tag for m in experiment.metric_infos] == ["acc"]


def session_groups_request(*col_hparams: str) -> dict[str, Any]:
    """A ListSessionGroupsRequest as the dashboard sends it (JSON of the api proto)."""
    return {"experimentName": "", "allowedStatuses": ALL_STATUSES,
            "colParams": [{"hparam": h} for h in col_hparams]
            + [{"metric": {"group": "", "tag": "loss"}}],
            "startIndex": 0, "sliceSize": 100}


def test_dashboard_reads_write_trial_and_the_runs_last_loss(tmp_path: Path) -> None:
    """write_trial plus scalar("loss") in one writer: the experiment lists the hparams and
    the metric, and the session's metric value is the last loss logged (as float32)."""
    from tests.tbserver import TensorBoardServer

    losses = [0.9 ** s + 0.01 * s for s in range(10)]  # not float32-representable
    with sl.create_file_writer(tmp_path / "trial").as_default():
        assert write_trial({"lr": 0.01, "opt": "adam", "bs": 32}, ["loss"])
        for step, loss in enumerate(losses):
            assert sl.scalar("loss", loss, step=step)
    with TensorBoardServer(tmp_path) as server:
        groups = server.poll(
            lambda: server.post_json("/data/plugin/hparams/session_groups",
                                     session_groups_request("lr", "opt", "bs")),
            lambda g: len(g.get("sessionGroups", [])) == 1
            and g["sessionGroups"][0].get("metricValues"))
        experiment = server.post_json("/data/plugin/hparams/experiment",
                                      {"experimentName": ""})
    infos = {h["name"]: h for h in experiment["hparamInfos"]}
    assert sorted(infos) == ["bs", "lr", "opt"]
    assert (infos["lr"]["type"], infos["opt"]["type"], infos["bs"]["type"]) == (
        "DATA_TYPE_FLOAT64", "DATA_TYPE_STRING", "DATA_TYPE_FLOAT64")
    assert [m["name"]["tag"] for m in experiment["metricInfos"]] == ["loss"]
    assert experiment["metricInfos"][0]["name"].get("group", "") == ""
    (group,) = groups["sessionGroups"]
    assert group["hparams"] == {"lr": 0.01, "opt": "adam", "bs": 32}
    (session,) = group["sessions"]
    assert session["name"] == "trial"
    (metric,) = group["metricValues"]
    assert metric["name"]["tag"] == "loss"
    assert metric["value"] == float(np.float32(losses[-1])) != losses[-1]
    assert metric["trainingStep"] == 9


def test_dashboard_reads_the_runs_own_metric(tmp_path: Path) -> None:
    """add_hparams: the trial's metric is the run's logged series, not a placeholder."""
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
    with TensorBoardServer(tmp_path) as server:
        groups = server.poll(
            lambda: server.post_json("/data/plugin/hparams/session_groups",
                                     session_groups_request("lr")),
            lambda g: len(g.get("sessionGroups", [])) == 2)
        experiment = server.post_json("/data/plugin/hparams/experiment",
                                      {"experimentName": ""})
    assert sorted(h["name"] for h in experiment["hparamInfos"]) == ["bs", "lr", "opt"]
    by_run = {g["sessions"][0]["name"]: g for g in groups["sessionGroups"]}
    assert sorted(by_run) == ["other", "trial"]
    (metric,) = by_run["trial"]["metricValues"]
    assert metric["value"] == float(np.float32(losses[-1])) and metric["trainingStep"] == 9
    (metric,) = by_run["other"]["metricValues"]
    assert metric["value"] == 3.0 and metric["trainingStep"] == 2  # 123.0 was not written
    assert by_run["trial"]["sessions"][0]["status"] == "STATUS_SUCCESS"
    assert not math.isnan(by_run["trial"]["sessions"][0]["endTimeSecs"])


def sweep(SummaryWriter: Any, logdir: str) -> None:
    """torch's own docstring example of add_hparams: five trials through one writer."""
    with SummaryWriter(logdir) as w:
        for i in range(5):
            w.add_hparams({"lr": 0.1 * i, "bsize": i}, {"hparam/accuracy": 10 * i})


def sweep_request() -> dict[str, Any]:
    return {"experimentName": "", "allowedStatuses": ALL_STATUSES, "startIndex": 0,
            "sliceSize": 100,
            "colParams": [{"hparam": "lr"}, {"hparam": "bsize"},
                          {"metric": {"group": "", "tag": "hparam/accuracy"}}]}


def trials_seen(server: Any, count: int) -> list[tuple[float, float, float, str, str]]:
    """(lr, bsize, accuracy, status, run) of each trial the HParams dashboard lists."""
    groups = server.poll(
        lambda: server.post_json("/data/plugin/hparams/session_groups", sweep_request()),
        lambda g: len(g.get("sessionGroups", [])) >= count and all(
            x.get("metricValues") for x in g["sessionGroups"]))
    out = []
    for g in groups["sessionGroups"]:
        (session,) = g["sessions"]
        (metric,) = g["metricValues"]
        out.append((g["hparams"]["lr"], g["hparams"]["bsize"], metric["value"],
                    session["status"], session["name"]))
    return sorted(out)


def values_of(trials: list[Any]) -> list[float]:
    """lr, bsize, accuracy of each trial, in a row."""
    return [float(x) for t in trials for x in t[:3]]


def test_a_sweep_through_one_writer_keeps_every_trial(tmp_path: Path) -> None:
    """Every add_hparams call on one writer is a trial of the dashboard, with its metric
    value: the first in the run itself, each later one in a sub-run, as many as torch."""
    from tests.tbserver import TensorBoardServer

    sweep(sl.SummaryWriter, str(tmp_path / "ours"))
    expected = [(0.1 * i, float(i), 10.0 * i) for i in range(5)]
    with TensorBoardServer(tmp_path / "ours") as server:
        ours = trials_seen(server, 5)
    assert values_of(ours) == pytest.approx(values_of(expected))
    assert {t[3] for t in ours} == {"STATUS_SUCCESS"}
    runs = [t[4] for t in ours]
    assert runs[0] == "."  # the first trial is the run itself
    assert all(float(r) > 0 for r in runs[1:])  # sub-runs named str(time.time()), as torch
    assert len(set(runs)) == 5
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    sweep(torch_tb.SummaryWriter, str(tmp_path / "torch"))
    with TensorBoardServer(tmp_path / "torch") as server:
        theirs = trials_seen(server, 5)
    assert values_of(theirs) == pytest.approx(values_of(ours))


def test_later_trials_of_a_named_run_go_to_its_sub_runs(tmp_path: Path) -> None:
    """run_name: the first trial is that run, a second one with the same name a sub-run
    of it; nothing is lost."""
    from tests.tbserver import TensorBoardServer

    with sl.SummaryWriter(tmp_path) as w:
        assert w.add_hparams({"lr": 0.1, "bsize": 1}, {"hparam/accuracy": 1.0}, run_name="a")
        assert w.add_hparams({"lr": 0.2, "bsize": 2}, {"hparam/accuracy": 2.0}, run_name="a")
        assert w.add_hparams({"lr": 0.3, "bsize": 3}, {"hparam/accuracy": 3.0})
    with TensorBoardServer(tmp_path) as server:
        seen = trials_seen(server, 3)
    assert values_of(seen) == pytest.approx([0.1, 1, 1.0, 0.2, 2, 2.0, 0.3, 3, 3.0])
    assert seen[0][4] == "a" and seen[1][4].startswith("a/") and seen[2][4] == "."
