"""HParams summaries: the experiment, and each trial's hyperparameters and end status.

Written as TensorBoard's ``hparams`` plugin reads them (format.md §5.8): plugin
``"hparams"``, the ``HParamsPluginData`` message (version 0) as the metadata content, the
null tensor (DT_FLOAT, shape ``[0]``) as the value, at step 0 whatever the default step,
under the literal tags ``_hparams_/experiment``, ``_hparams_/session_start_info`` and
``_hparams_/session_end_info`` (no name scope). ``hparams_pb`` and ``hparams_config_pb``
return the bytes of tensorboard's functions of those names (``summary_v2``);
``session_end_pb`` the message tensorboard's ``session_end_pb`` builds.

Data contract:
  * hparam names are non-empty str (or :class:`HParam` objects, which stand for their
    name). Values are bool, int, float or str. numpy scalars, 0-d numpy arrays and 0-d
    framework tensors (torch, jax: anything 0-d with ``item()``) become the Python scalar
    ``item()`` returns. None, lists, dicts, arrays with dimensions and other objects raise
    ``TypeError`` naming the hparam: the dashboard shows only those four types, and a
    silent ``str(value)`` would make ``[1, 2]`` and ``"[1, 2]"`` the same trial.
    :func:`coerce_hparams` applies this rule (``SummaryWriter.add_hparams`` uses it too).
  * The session group name is ``trial_id`` if given, else the SHA-256 of the hparams as
    JSON with sorted keys and separators ``(",", ":")`` (TensorBoard's rule), so trials
    with equal hparams group together. Times are seconds since the epoch; None means now
    (``hparams_config_pb`` leaves an unset ``time_created_secs`` unset).
  * A :class:`Discrete` domain's values are sorted; ints and floats are DATA_TYPE_FLOAT64
    (TensorBoard has no int type), bools BOOL, strs STRING. An hparam without a domain
    has no type (``write_trial`` types each from its value).
  * Session status: "success", "failure", "running", "unknown" (or the ``Status`` code).
  * Bad input raises before anything is written; with no default writer (or a false
    ``record_if``) the ops return False without looking at their arguments, like every op.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from summarylib.ops._emit import emit_summary
from summarylib.ops._resolve import Caller, Sink, resolve

if TYPE_CHECKING:
    from summarylib.proto import hparams_api_pb2, hparams_plugin_data_pb2, summary_pb2

__all__ = [
    "EXPERIMENT_TAG",
    "PLUGIN_NAME",
    "SESSION_END_INFO_TAG",
    "SESSION_START_INFO_TAG",
    "Discrete",
    "HParam",
    "IntInterval",
    "Metric",
    "RealInterval",
    "coerce_hparams",
    "hparams",
    "hparams_config",
    "hparams_config_pb",
    "hparams_pb",
    "session_end",
    "session_end_pb",
    "write_trial",
    "write_trial_to",
]

PLUGIN_NAME = "hparams"
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"
# TensorProto{dtype: DT_FLOAT, tensor_shape {dim {size: 0}}}: the null tensor.
_NULL_TENSOR = b"\x08\x01\x12\x04\x12\x02\x08\x00"
_STATUSES = {"unknown": 0, "success": 1, "failure": 2, "running": 3}


class Domain:
    """A set of values an hparam may take (base of the three domains)."""

    dtype: type

    def update_hparam_info(self, info: hparams_api_pb2.HParamInfo) -> None:
        raise NotImplementedError


class IntInterval(Domain):
    """Integers in ``[min_value, max_value]`` (shown as FLOAT64, TensorBoard's only number)."""

    dtype = int

    def __init__(self, min_value: int, max_value: int) -> None:
        for arg, v in (("min_value", min_value), ("max_value", max_value)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"IntInterval: {arg!r} must be an int, got {v!r}")
        if min_value > max_value:
            raise ValueError(f"IntInterval: 'min_value' {min_value} > 'max_value' {max_value}")
        self.min_value, self.max_value = min_value, max_value

    def update_hparam_info(self, info: hparams_api_pb2.HParamInfo) -> None:
        info.type = cast(Any, 3)  # DATA_TYPE_FLOAT64
        info.domain_interval.min_value = self.min_value
        info.domain_interval.max_value = self.max_value

    def __repr__(self) -> str:
        return f"IntInterval({self.min_value!r}, {self.max_value!r})"


class RealInterval(Domain):
    """Floats in ``[min_value, max_value]``."""

    dtype = float

    def __init__(self, min_value: float, max_value: float) -> None:
        for arg, v in (("min_value", min_value), ("max_value", max_value)):
            if not isinstance(v, float):
                raise TypeError(f"RealInterval: {arg!r} must be a float, got {v!r}")
        if not min_value <= max_value:
            raise ValueError(
                f"RealInterval: 'min_value' {min_value} must be <= 'max_value' {max_value}"
            )
        self.min_value, self.max_value = min_value, max_value

    def update_hparam_info(self, info: hparams_api_pb2.HParamInfo) -> None:
        info.type = cast(Any, 3)  # DATA_TYPE_FLOAT64
        info.domain_interval.min_value = self.min_value
        info.domain_interval.max_value = self.max_value

    def __repr__(self) -> str:
        return f"RealInterval({self.min_value!r}, {self.max_value!r})"


class Discrete(Domain):
    """A finite set of values of one type (int, float, bool or str); kept sorted."""

    def __init__(self, values: Iterable[Any], dtype: type | None = None) -> None:
        self.values = list(values)
        if dtype is None:
            if not self.values:
                raise ValueError("Discrete: an empty domain needs 'dtype'")
            dtype = type(self.values[0])
        if dtype not in (int, float, bool, str):
            raise ValueError(f"Discrete: 'dtype' must be int, float, bool or str, got {dtype!r}")
        for v in self.values:
            if not isinstance(v, dtype):
                raise TypeError(
                    f"Discrete: 'values' must all be {dtype.__name__} (the 'dtype'), got {v!r}")
        self.dtype = dtype
        self.values.sort()

    def update_hparam_info(self, info: hparams_api_pb2.HParamInfo) -> None:
        info.type = cast(Any, {int: 3, float: 3, bool: 2, str: 1}[self.dtype])
        info.ClearField("domain_discrete")
        info.domain_discrete.extend(self.values)

    def __repr__(self) -> str:
        return f"Discrete({self.values!r})"


def _check_label(value: object, where: str, arg: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{where}: {arg!r} must be a str or None, got {value!r}")


class HParam:
    """A hyperparameter of the experiment: a name, and optionally its domain and labels."""

    def __init__(self, name: str, domain: Domain | None = None,
                 display_name: str | None = None, description: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"HParam: 'name' must be a non-empty str, got {name!r}")
        if domain is not None and not isinstance(domain, Domain):
            raise TypeError(f"HParam: 'domain' must be a Domain or None, got {domain!r}")
        _check_label(display_name, "HParam", "display_name")
        _check_label(description, "HParam", "description")
        self.name, self.domain = name, domain
        self.display_name, self.description = display_name, description

    def __repr__(self) -> str:
        return f"HParam({self.name!r}, {self.domain!r})"


class Metric:
    """A metric of the experiment: the scalar series ``tag`` in run ``<session>/<group>``."""

    TRAINING = 1
    VALIDATION = 2

    def __init__(self, tag: str, group: str | None = None, display_name: str | None = None,
                 description: str | None = None, dataset_type: int | None = None) -> None:
        if not isinstance(tag, str) or not tag:
            raise ValueError(f"Metric: 'tag' must be a non-empty str, got {tag!r}")
        if isinstance(dataset_type, bool) or dataset_type not in (
                None, Metric.TRAINING, Metric.VALIDATION):
            raise ValueError(
                f"Metric: 'dataset_type' must be Metric.TRAINING, Metric.VALIDATION or None, "
                f"got {dataset_type!r}")
        for arg, v in (("group", group), ("display_name", display_name),
                       ("description", description)):
            _check_label(v, "Metric", arg)
        self.tag, self.group = tag, group
        self.display_name, self.description = display_name, description
        self.dataset_type = dataset_type

    def as_proto(self) -> hparams_api_pb2.MetricInfo:
        from summarylib.proto import hparams_api_pb2

        return hparams_api_pb2.MetricInfo(
            name=hparams_api_pb2.MetricName(group=self.group, tag=self.tag),
            display_name=self.display_name, description=self.description,
            dataset_type=cast(Any, self.dataset_type),
        )


def _scalar_value(value: Any, where: str, name: str) -> bool | int | float | str:
    if isinstance(value, (bool, int, float, str)):
        return value
    # numpy scalars and 0-d arrays, and the 0-d tensors of torch/jax/tf: item() gives the
    # Python scalar. An array of one element is refused like any other array: [0.1] and
    # 0.1 are different hparams.
    item = getattr(value, "item", None)
    ndim = getattr(value, "ndim", 0)
    if callable(ndim):
        ndim = ndim()
    if callable(item) and ndim == 0 and not isinstance(value, (list, tuple, dict)):
        try:
            out = item()
        except (TypeError, ValueError, RuntimeError):  # e.g. a tensor without data
            out = None
        if isinstance(out, (bool, int, float, str)):
            return out
    raise TypeError(
        f"{where}: hparam {name!r} must be a bool, int, float or str (or a numpy/framework "
        f"scalar), got {type(value).__name__} {value!r:.60}"
    )


def coerce_hparams(hparams: Mapping[Any, Any], where: str) -> dict[str, Any]:
    """``hparams`` with HParam keys as their names and values as Python scalars.

    The module's rules; errors start with ``where`` (the public function called) and name
    the hparam. Raises ``TypeError`` for a bad key or value, ``ValueError`` when a name
    is given twice (as a str and as an HParam).
    """
    if not isinstance(hparams, Mapping):
        raise TypeError(f"{where}: 'hparams' must be a dict, got {type(hparams).__name__}")
    out: dict[str, Any] = {}
    for key, value in hparams.items():
        name = key.name if isinstance(key, HParam) else key
        if not isinstance(name, str) or not name:
            raise TypeError(
                f"{where}: 'hparams' keys must be non-empty str or HParam, got {key!r}")
        if name in out:
            raise ValueError(f"{where}: several values for hparam {name!r}")
        out[name] = _scalar_value(value, where, name)
    return out


def _summary(tag: str, data: hparams_plugin_data_pb2.HParamsPluginData) -> summary_pb2.Summary:
    from summarylib.proto import hparams_plugin_data_pb2, summary_pb2

    # Serialize a copy, as tensorboard does: the runtime emits a map in its hash table's
    # order, and a copied table can order the hparams differently from the one that was
    # filled, so only the same sequence of copies gives the same bytes.
    content = hparams_plugin_data_pb2.HParamsPluginData()
    content.CopyFrom(data)
    content.version = 0
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=tag)
    value.metadata.plugin_data.plugin_name = PLUGIN_NAME
    value.metadata.plugin_data.content = content.SerializeToString()
    value.tensor.ParseFromString(_NULL_TENSOR)
    return summary


def _seconds(value: float | None, where: str, arg: str) -> float:
    """A time in seconds since the epoch; None means now."""
    if value is None:
        return time.time()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {arg!r} must be a number of seconds or None, got {value!r}")
    return float(value)


def _start_summary(hparams: Mapping[Any, Any], trial_id: str | None,
                   start_time_secs: float | None, where: str) -> summary_pb2.Summary:
    from summarylib.proto import hparams_plugin_data_pb2

    values = coerce_hparams(hparams, where)
    if trial_id is not None and not isinstance(trial_id, str):
        raise TypeError(f"{where}: 'trial_id' must be a str or None, got {trial_id!r}")
    start = _seconds(start_time_secs, where, "start_time_secs")
    # Equal hparams give the same group, whatever the dict order (TensorBoard's rule).
    group = trial_id if trial_id is not None else hashlib.sha256(
        json.dumps(values, sort_keys=True, separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    info = hparams_plugin_data_pb2.SessionStartInfo(group_name=group, start_time_secs=start)
    for name in sorted(values):  # tensorboard's insertion order: it decides the map's bytes
        v = values[name]
        if isinstance(v, bool):
            info.hparams[name].bool_value = v
        elif isinstance(v, (int, float)):
            info.hparams[name].number_value = v
        else:
            info.hparams[name].string_value = v
    return _summary(SESSION_START_INFO_TAG,
                    hparams_plugin_data_pb2.HParamsPluginData(session_start_info=info))


def _experiment_summary(hparams: Sequence[HParam], metrics: Sequence[Metric],
                        time_created_secs: float | None, where: str) -> summary_pb2.Summary:
    from summarylib.proto import hparams_api_pb2, hparams_plugin_data_pb2

    for arg, seq, kind in (("hparams", hparams, HParam), ("metrics", metrics, Metric)):
        if isinstance(seq, (str, bytes, Mapping)) or not isinstance(seq, Iterable):
            raise TypeError(f"{where}: {arg!r} must be a list of {kind.__name__}, got {seq!r}")
    hparams, metrics = list(hparams), list(metrics)
    for arg, seq, kind in (("hparams", hparams, HParam), ("metrics", metrics, Metric)):
        for item in seq:
            if not isinstance(item, kind):
                raise TypeError(f"{where}: {arg!r} must hold {kind.__name__}, got {item!r}")
    infos = []
    for hp in hparams:
        info = hparams_api_pb2.HParamInfo(name=hp.name, description=hp.description,
                                          display_name=hp.display_name)
        if hp.domain is not None:
            hp.domain.update_hparam_info(info)
        infos.append(info)
    created = None if time_created_secs is None else _seconds(
        time_created_secs, where, "time_created_secs")  # None stays unset, as in tensorboard
    experiment = hparams_api_pb2.Experiment(
        hparam_infos=infos, metric_infos=[m.as_proto() for m in metrics],
        time_created_secs=created)
    return _summary(EXPERIMENT_TAG,
                    hparams_plugin_data_pb2.HParamsPluginData(experiment=experiment))


def _end_summary(status: str | int, end_time_secs: float | None,
                 where: str) -> summary_pb2.Summary:
    from summarylib.proto import hparams_plugin_data_pb2

    code = _STATUSES.get(status) if isinstance(status, str) else status
    if isinstance(code, bool) or code not in _STATUSES.values():
        raise ValueError(
            f"{where}: 'status' must be one of {sorted(_STATUSES)} (or its Status code), "
            f"got {status!r}")
    end = _seconds(end_time_secs, where, "end_time_secs")
    info = hparams_plugin_data_pb2.SessionEndInfo(status=cast(Any, code), end_time_secs=end)
    return _summary(SESSION_END_INFO_TAG,
                    hparams_plugin_data_pb2.HParamsPluginData(session_end_info=info))


def hparams_pb(hparams: Mapping[Any, Any], trial_id: str | None = None,
               start_time_secs: float | None = None) -> summary_pb2.Summary:
    """The ``session_start_info`` Summary of one trial (tensorboard's ``hparams_pb``).

    ``hparams`` maps names (or :class:`HParam`) to values (module rules); ``trial_id``
    names the session group (default: a hash of the hparams); ``start_time_secs``
    defaults to now.
    """
    return _start_summary(hparams, trial_id, start_time_secs, "hparams_pb")


def hparams_config_pb(hparams: Sequence[HParam], metrics: Sequence[Metric],
                      time_created_secs: float | None = None) -> summary_pb2.Summary:
    """The ``experiment`` Summary: hparams with domains, and metrics (``hparams_config_pb``).

    ``time_created_secs`` None leaves the field unset, as tensorboard does.
    """
    return _experiment_summary(hparams, metrics, time_created_secs, "hparams_config_pb")


def session_end_pb(status: str | int = "success",
                   end_time_secs: float | None = None) -> summary_pb2.Summary:
    """The ``session_end_info`` Summary.

    ``status`` is "success", "failure", "running" or "unknown", or the ``Status`` code
    (1, 2, 3, 0); ``end_time_secs`` defaults to now.
    """
    return _end_summary(status, end_time_secs, "session_end_pb")


def _write(make: Callable[[], summary_pb2.Summary], where: str) -> bool:
    """Write ``make()`` at step 0 to the default writer; False when not recording.

    Tags stay literal (no name scope) and the default step is ignored: TensorBoard reads
    these summaries only by their fixed tags, at step 0.
    """
    sink = resolve(None, 0, Caller(where), untagged=True)
    if sink is None:
        return False
    return emit_summary(sink, make().SerializeToString())


def hparams(hparams: Mapping[Any, Any], trial_id: str | None = None,
            start_time_secs: float | None = None) -> bool:
    """Record the default writer's run as one trial with these hparams (step 0)."""
    return _write(lambda: _start_summary(hparams, trial_id, start_time_secs, "hparams"),
                  "hparams")


def hparams_config(hparams: Sequence[HParam], metrics: Sequence[Metric],
                   time_created_secs: float | None = None) -> bool:
    """Write the experiment (hparams with domains, metrics) to the default writer (step 0)."""
    return _write(lambda: _experiment_summary(hparams, metrics, time_created_secs,
                                              "hparams_config"), "hparams_config")


def session_end(status: str | int = "success", end_time_secs: float | None = None) -> bool:
    """Mark the default writer's trial as ended with ``status`` (step 0)."""
    return _write(lambda: _end_summary(status, end_time_secs, "session_end"), "session_end")


class _TypeOnly(Domain):
    """No domain, only the type: what torch writes for an hparam without a discrete domain."""

    def __init__(self, dtype: type) -> None:
        self.dtype = dtype

    def update_hparam_info(self, info: hparams_api_pb2.HParamInfo) -> None:
        info.type = cast(Any, {int: 3, float: 3, bool: 2, str: 1}[self.dtype])


def _domain_of(name: str, value: Any, values: Sequence[Any] | None) -> Domain:
    if values is None:
        return _TypeOnly(type(value))
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise TypeError(
            f"add_hparams: 'hparam_domain_discrete[{name!r}]' must be a non-empty list")
    kinds = {type(v) for v in values}
    if len(kinds) != 1 or not kinds <= {int, float, bool, str}:
        raise TypeError(
            f"add_hparams: 'hparam_domain_discrete[{name!r}]' must hold values of one type "
            "among int, float, bool, str")
    return Discrete(values)


def write_trial(hparam_dict: Mapping[str, Any], metric_names: Sequence[str], *,
                trial_id: str | None = None, start_time_secs: float | None = None,
                hparam_domains: Mapping[str, Sequence[Any]] | None = None) -> bool:
    """Make the default writer's run one trial of its own experiment (what add_hparams
    does); see :func:`write_trial_to`. False when nothing is recording."""
    sink = resolve(None, 0, _TRIAL_CALLER, untagged=True)
    if sink is None:
        return False
    return write_trial_to(sink, hparam_dict, metric_names, trial_id=trial_id,
                          start_time_secs=start_time_secs, hparam_domains=hparam_domains)


_TRIAL_CALLER = Caller("add_hparams")


def write_trial_to(sink: Sink, hparam_dict: Mapping[str, Any], metric_names: Sequence[str], *,
                   trial_id: str | None = None, start_time_secs: float | None = None,
                   hparam_domains: Mapping[str, Sequence[Any]] | None = None) -> bool:
    """The core of :func:`write_trial`: make the run of ``sink`` (an untagged sink at
    step 0) one trial of its own experiment.

    Writes, at step 0 with literal tags, an experiment listing exactly the hparams of
    ``hparam_dict`` (each typed by its value; a discrete domain where ``hparam_domains``
    gives one) and the metrics ``metric_names`` (empty group: TensorBoard reads each from
    this run's own scalar series of that tag), then the trial's session start info.
    Error messages name the sink's caller and ``add_hparams``'s arguments. Everything
    is validated before anything is written.
    """
    where = sink.caller.where
    values = coerce_hparams(hparam_dict, where)
    domains = dict(hparam_domains or {})
    for name in domains:
        if name not in values:
            raise ValueError(f"{where}: 'hparam_domain_discrete' names {name!r}, not an hparam")
    if isinstance(metric_names, (str, bytes)):
        raise TypeError(f"{where}: metric names must be a list of str, got {metric_names!r}")
    tags = list(metric_names)
    for tag in tags:
        if not isinstance(tag, str) or not tag:
            raise TypeError(f"{where}: 'metric_dict' keys must be non-empty str, got {tag!r}")
    if len(set(tags)) != len(tags):
        raise ValueError(f"{where}: metric names repeat: {tags!r}")
    infos = [HParam(name, _domain_of(name, v, domains.get(name))) for name, v in values.items()]
    config = _experiment_summary(infos, [Metric(tag) for tag in tags], time.time(), where)
    start = _start_summary(values, trial_id, start_time_secs, where)
    return (emit_summary(sink, config.SerializeToString())
            and emit_summary(sink, start.SerializeToString()))
