"""``TensorBoardLogger`` for Lightning, writing through summarylib (no tensorboard needed).

A drop-in for ``lightning.pytorch.loggers.TensorBoardLogger``: the same arguments, the same
``<save_dir>/<name>/version_<N>[/<sub_dir>]`` directories, ``hparams.yaml``, tags and steps::

    from summarylib.integrations.lightning import TensorBoardLogger

    trainer = Trainer(logger=TensorBoardLogger("logs"), max_epochs=10)

Where it differs, on purpose:
  * hparams are the run's own: ``log_hyperparams(params)`` records the run as a trial of
    the HParams dashboard, whose metric columns are the scalars the run really logs
    (TensorBoard infers them when no experiment names them). No ``hp_metric = -1``
    placeholder is written; ``default_hp_metric`` is accepted for compatibility. Metrics
    passed to ``log_hyperparams(params, metrics)`` are logged as scalars, as Lightning does.
    The trial is marked finished (success or failure) by ``finalize``.
  * ``log_graph=True`` captures the graph with ``summarylib.graph.capture`` (torch.fx /
    export), from ``model.example_input_array``.
  * Resuming into an existing ``version`` (pass ``version=N``): the first metrics logged
    start with a ``SessionLog.START`` at their step, so TensorBoard drops the points the
    interrupted attempt logged at that step and later, instead of drawing both.
  * Only global rank 0 writes (Lightning's ``rank_zero_only``); other ranks create no files.

Extra keyword arguments go to :class:`summarylib.SummaryWriter` (``max_queue``,
``flush_secs``, ``filename_suffix``).
"""

from __future__ import annotations

import os
import time
from argparse import Namespace
from collections.abc import Mapping
from typing import Any

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.fabric.utilities.logger import (
    _add_prefix,
    _convert_params,
    _flatten_dict,
    _sanitize_params,
)
from lightning.pytorch.loggers.logger import Logger
from lightning.pytorch.utilities import rank_zero_only, rank_zero_warn

__all__ = ["TensorBoardLogger"]


class TensorBoardLogger(Logger):
    """Lightning's TensorBoard logger over summarylib's writer (see the module docstring).

    Args:
      save_dir: the root directory.
      name: the experiment's directory under ``save_dir`` ("" or None: none).
      version: an int (directory ``version_<N>``) or a str (the directory name); None:
        the next free ``version_<N>``.
      log_graph: write the model's graph at the start of fit.
      default_hp_metric: accepted; no placeholder metric is ever written.
      prefix: put before every metric name, joined with "-".
      sub_dir: a directory under the version directory for the event files.
    """

    NAME_HPARAMS_FILE = "hparams.yaml"
    LOGGER_JOIN_CHAR = "-"

    def __init__(self, save_dir: str | os.PathLike[str], name: str | None = "lightning_logs",
                 version: int | str | None = None, log_graph: bool = False,
                 default_hp_metric: bool = True, prefix: str = "",
                 sub_dir: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._save_dir = os.fspath(save_dir)
        self._name = name or ""
        self._version = version
        self._log_graph = log_graph
        self._default_hp_metric = default_hp_metric
        self._prefix = prefix
        self._sub_dir = None if sub_dir is None else os.fspath(sub_dir)
        self._kwargs = kwargs
        self._experiment: Any = None
        self._resumed = False  # the log directory held event files before us
        self._trial = False
        self.hparams: dict[str, Any] = {}

    # -- where ------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> int | str:
        if self._version is None:
            self._version = self._next_version()
        return self._version

    @property
    def save_dir(self) -> str:
        return self._save_dir

    @property
    def root_dir(self) -> str:
        return os.path.join(self._save_dir, self._name)

    @property
    def log_dir(self) -> str:
        version = self.version if isinstance(self.version, str) else f"version_{self.version}"
        path = os.path.join(self.root_dir, version)
        if self._sub_dir is not None:
            path = os.path.join(path, self._sub_dir)
        return os.path.expanduser(os.path.expandvars(path))

    @property
    def sub_dir(self) -> str | None:
        return self._sub_dir

    def _next_version(self) -> int:
        try:
            names = os.listdir(self.root_dir)
        except OSError:
            return 0
        versions = [int(n[len("version_"):]) for n in names
                    if n.startswith("version_") and n[len("version_"):].isdigit()
                    and os.path.isdir(os.path.join(self.root_dir, n))]
        return max(versions) + 1 if versions else 0

    # -- the writer ----------------------------------------------------------------
    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The run's :class:`summarylib.SummaryWriter` (a dummy on ranks other than 0)."""
        if self._experiment is None:
            from summarylib.summary_writer import SummaryWriter

            log_dir = self.log_dir
            self._resumed = os.path.isdir(log_dir) and any(
                "tfevents" in n for n in os.listdir(log_dir))
            self._experiment = SummaryWriter(log_dir, **self._kwargs)
        return self._experiment

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        metrics = _add_prefix(metrics, self._prefix, self.LOGGER_JOIN_CHAR)
        writer = self.experiment
        if self._resumed and step is not None:
            # Once: later points of the interrupted attempt are dropped by TensorBoard.
            self._resumed = False
            from summarylib.encoding._events import event_bytes
            from summarylib.encoding._wire import field_bytes

            writer._append(event_bytes(time.time(), int(step), field_bytes(7, b"\x08\x01")))
        for key, value in metrics.items():
            if hasattr(value, "item") and callable(value.item):
                value = value.item()
            if isinstance(value, dict):
                writer.add_scalars(key, value, step)
            else:
                try:
                    writer.add_scalar(key, value, step)
                except (TypeError, ValueError) as e:
                    raise ValueError(f"log_metrics: cannot log {key!r} = {value!r:.60}: {e}. "
                                     "Log a number, a one-element tensor or a dict of them."
                                     ) from e

    @rank_zero_only
    def log_hyperparams(self, params: dict[str, Any] | Namespace,
                        metrics: dict[str, Any] | Any | None = None,
                        step: int | None = None) -> None:
        from summarylib import hparams as hp

        params = _convert_params(params)
        self.hparams.update(params)
        flat = _sanitize_params(_flatten_dict(params))
        values = {k: ("None" if v is None else v) for k, v in flat.items()}
        for key, value in list(values.items()):
            if not isinstance(value, (bool, int, float, str)):
                values[key] = str(value)  # what Lightning's own logger shows for them
        if metrics is not None and not isinstance(metrics, dict):
            metrics = {"hp_metric": metrics}
        if metrics:
            self.log_metrics(metrics, step)
        writer = self.experiment
        with writer.as_default():
            hp.hparams(values)
        self._trial = True

    @rank_zero_only
    def log_graph(self, model: Any, input_array: Any = None) -> None:
        if not self._log_graph:
            return
        input_array = getattr(model, "example_input_array", None) if input_array is None \
            else input_array
        if input_array is None:
            rank_zero_warn("Could not log the computational graph: `model.example_input_array`"
                           " is not set and no `input_array` was given.")
            return
        self.experiment.add_graph(model, input_array)

    @rank_zero_only
    def save(self) -> None:
        super().save()
        if self._experiment is not None:
            self._experiment.flush()
        path = os.path.join(self.log_dir, self.NAME_HPARAMS_FILE)
        if os.path.isdir(self.log_dir) and not os.path.isfile(path):
            from lightning.pytorch.core.saving import save_hparams_to_yaml

            save_hparams_to_yaml(path, self.hparams)

    @rank_zero_only
    def finalize(self, status: str) -> None:
        if self._experiment is not None:
            if self._trial:
                self._experiment._end_trial("success" if status == "success" else "failure")
                self._trial = False
            self._experiment.flush()
            self._experiment.close()
            self._experiment = None
        if status == "success":
            self.save()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_experiment"] = None  # a writer belongs to its process
        return state
