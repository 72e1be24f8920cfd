"""HParams summaries: the experiment, and each trial's hyperparameters and end status.

Written as TensorBoard's ``hparams`` plugin reads them (format.md §5.8): plugin
``"hparams"``, the ``HParamsPluginData`` message (version 0) as the metadata content, the
null tensor (DT_FLOAT, shape ``[0]``) as the value, at step 0, under the literal tags
``_hparams_/experiment``, ``_hparams_/session_start_info`` and ``_hparams_/session_end_info``
(no name scope). The ``*_pb`` encoders give the bytes of tensorboard's ``hparams_pb``,
``hparams_config_pb`` and ``session_end_pb``.

Data contract:
  * hparam names are non-empty str (or :class:`HParam` objects, which stand for their
    name); values are bool, int, float or str. numpy scalars, 0-d arrays and framework
    scalars (anything with ``item()`` and no elements but one) become the Python scalar
    they hold. None, lists, dicts and other objects raise ``TypeError`` naming the hparam:
    TensorBoard's dashboard can show only those four types, and a silent ``str(value)``
    would turn ``[1, 2]`` and ``"[1, 2]"`` into the same trial.
  * The session group name is ``trial_id`` if given, else the SHA-256 of the hparams as
    sorted, compact JSON (TensorBoard's rule), so equal hparams group together.
  * A :class:`Discrete` domain's values are sorted; ints and floats are FLOAT64 (TensorBoard
    has no int type), bools BOOL, strs STRING. An hparam without a domain has no type.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from summarylib.encoding.events import summary_event
from summarylib.writer.context import _local, condition_holds

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
                raise TypeError(f"Discrete: value {v!r} is not of dtype {dtype.__name__}")
        self.dtype = dtype
        self.values.sort()

    def update_hparam_info(self, info: hparams_api_pb2.HParamInfo) -> None:
        info.type = cast(Any, {int: 3, float: 3, bool: 2, str: 1}[self.dtype])
        info.ClearField("domain_discrete")
        info.domain_discrete.extend(self.values)

    def __repr__(self) -> str:
        return f"Discrete({self.values!r})"


class HParam:
    """A hyperparameter of the experiment: a name, and optionally its domain and labels."""

    def __init__(self, name: str, domain: Domain | None = None,
                 display_name: str | None = None, description: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"HParam: 'name' must be a non-empty str, got {name!r}")
        if domain is not None and not isinstance(domain, Domain):
            raise TypeError(f"HParam: 'domain' must be a Domain or None, got {domain!r}")
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
        if dataset_type not in (None, Metric.TRAINING, Metric.VALIDATION):
            raise ValueError(f"Metric: invalid 'dataset_type' {dataset_type!r}")
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
    item = getattr(value, "item", None)
    size = getattr(value, "size", None)
    if callable(size):  # torch: size() is a method; numel() is the count
        size = value.numel() if hasattr(value, "numel") else None
    if callable(item) and size in (None, 1) and not isinstance(value, (list, tuple, dict)):
        try:
            out = item()
        except (TypeError, ValueError):
            out = None
        if isinstance(out, (bool, int, float, str)):
            return out
    raise TypeError(
        f"{where}: hparam {name!r} must be a bool, int, float or str (or a numpy/framework "
        f"scalar), got {type(value).__name__} {value!r:.60}"
    )


def coerce_hparams(hparams: Mapping[Any, Any], where: str) -> dict[str, Any]:
    """``hparams`` with HParam keys as names and values as Python scalars (module rules)."""
    if not isinstance(hparams, Mapping):
        raise TypeError(f"{where}: hparams must be a dict, got {type(hparams).__name__}")
    out: dict[str, Any] = {}
    for key, value in hparams.items():
        name = key.name if isinstance(key, HParam) else key
        if not isinstance(name, str) or not name:
            raise TypeError(f"{where}: hparam names must be non-empty str, got {key!r}")
        if name in out:
            raise ValueError(f"{where}: several values for hparam {name!r}")
        out[name] = _scalar_value(value, where, name)
    return out


def _summary(tag: str, data: hparams_plugin_data_pb2.HParamsPluginData) -> summary_pb2.Summary:
    from summarylib.proto import summary_pb2

    data.version = 0
    summary = summary_pb2.Summary()
    value = summary.value.add(tag=tag)
    value.metadata.plugin_data.plugin_name = PLUGIN_NAME
    value.metadata.plugin_data.content = data.SerializeToString()
    value.tensor.ParseFromString(_NULL_TENSOR)
    return summary


def hparams_pb(hparams: Mapping[Any, Any], trial_id: str | None = None,
               start_time_secs: float | None = None) -> summary_pb2.Summary:
    """The ``session_start_info`` Summary of one trial (tensorboard's ``hparams_pb``)."""
    from summarylib.proto import hparams_plugin_data_pb2

    values = coerce_hparams(hparams, "hparams_pb")
    if trial_id is not None and not isinstance(trial_id, str):
        raise TypeError(f"hparams_pb: 'trial_id' must be a str or None, got {trial_id!r}")
    if start_time_secs is None:
        start_time_secs = time.time()
    group = trial_id if trial_id is not None else hashlib.sha256(
        json.dumps(values, sort_keys=True, separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    info = hparams_plugin_data_pb2.SessionStartInfo(
        group_name=group, start_time_secs=start_time_secs)
    for name in sorted(values):
        v = values[name]
        if isinstance(v, bool):
            info.hparams[name].bool_value = v
        elif isinstance(v, (int, float)):
            info.hparams[name].number_value = v
        else:
            info.hparams[name].string_value = v
    return _summary(SESSION_START_INFO_TAG,
                    hparams_plugin_data_pb2.HParamsPluginData(session_start_info=info))


def hparams_config_pb(hparams: Sequence[HParam], metrics: Sequence[Metric],
                      time_created_secs: float | None = None) -> summary_pb2.Summary:
    """The ``experiment`` Summary: hparams with domains, and metrics (``hparams_config_pb``)."""
    from summarylib.proto import hparams_api_pb2, hparams_plugin_data_pb2

    infos = []
    for hp in hparams:
        if not isinstance(hp, HParam):
            raise TypeError(f"hparams_config_pb: 'hparams' must hold HParam, got {hp!r}")
        info = hparams_api_pb2.HParamInfo(name=hp.name, description=hp.description,
                                          display_name=hp.display_name)
        if hp.domain is not None:
            hp.domain.update_hparam_info(info)
        infos.append(info)
    for m in metrics:
        if not isinstance(m, Metric):
            raise TypeError(f"hparams_config_pb: 'metrics' must hold Metric, got {m!r}")
    experiment = hparams_api_pb2.Experiment(
        hparam_infos=infos, metric_infos=[m.as_proto() for m in metrics],
        time_created_secs=time_created_secs)
    return _summary(EXPERIMENT_TAG,
                    hparams_plugin_data_pb2.HParamsPluginData(experiment=experiment))


def session_end_pb(status: str | int = "success",
                   end_time_secs: float | None = None) -> summary_pb2.Summary:
    """The ``session_end_info`` Summary: "success", "failure", "running" or "unknown"."""
    from summarylib.proto import hparams_plugin_data_pb2

    code = _STATUSES.get(status) if isinstance(status, str) else status
    if code not in _STATUSES.values() or isinstance(code, bool):
        raise ValueError(
            f"session_end_pb: 'status' must be one of {sorted(_STATUSES)}, got {status!r}")
    if end_time_secs is None:
        end_time_secs = time.time()
    info = hparams_plugin_data_pb2.SessionEndInfo(status=cast(Any, code),
                                                  end_time_secs=end_time_secs)
    return _summary(SESSION_END_INFO_TAG,
                    hparams_plugin_data_pb2.HParamsPluginData(session_end_info=info))


def _write(summary: summary_pb2.Summary) -> bool:
    """Write at step 0 to the default writer (tags literal); False when not recording."""
    st = _local.state
    writer = st.writer
    if writer is None:
        return False
    if st.condition is not True and not condition_holds(st.condition):
        return False
    res = writer._resource
    assert res is not None
    ok: bool = res.append(summary_event(time.time(), 0, summary.SerializeToString()))
    return ok


def hparams(hparams: Mapping[Any, Any], trial_id: str | None = None,
            start_time_secs: float | None = None) -> bool:
    """Record the default writer's run as one trial with these hparams (step 0)."""
    return _write(hparams_pb(hparams, trial_id, start_time_secs))


def hparams_config(hparams: Sequence[HParam], metrics: Sequence[Metric],
                   time_created_secs: float | None = None) -> bool:
    """Write the experiment (hparams with domains, metrics) to the default writer."""
    return _write(hparams_config_pb(hparams, metrics, time_created_secs))


def session_end(status: str | int = "success", end_time_secs: float | None = None) -> bool:
    """Mark the default writer's trial as ended with ``status``."""
    return _write(session_end_pb(status, end_time_secs))


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
    """Make the default writer's run one trial of its own experiment.

    Writes an experiment listing exactly these hparams (domains from
    ``hparam_domains`` where given, else from the values) and metrics (each the scalar
    series of that tag in this same run), then the trial's hparams. Step 0, literal tags.
    """
    values = coerce_hparams(hparam_dict, "add_hparams")
    domains = dict(hparam_domains or {})
    for name in domains:
        if name not in values:
            raise ValueError(
                f"add_hparams: 'hparam_domain_discrete' names {name!r}, not an hparam")
    infos = [HParam(name, _domain_of(name, v, domains.get(name))) for name, v in values.items()]
    metrics = [Metric(tag) for tag in metric_names]
    config = hparams_config_pb(infos, metrics, time_created_secs=time.time())
    start = hparams_pb(values, trial_id, start_time_secs)
    return _write(config) and _write(start)
