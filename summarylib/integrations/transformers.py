"""``TensorBoardCallback`` for Hugging Face's ``Trainer``, writing through summarylib.

A drop-in for ``transformers.integrations.TensorBoardCallback`` (which needs tensorboard or
tensorboardX): the same run directory (``$TENSORBOARD_LOGGING_DIR``, else
``<output_dir>/runs/<date>_<host>``, a trial's name under it during hyperparameter search),
the same tags (``train/loss``, ``train/learning_rate``, ``train/grad_norm``, ``eval/*``,
strings as text) at ``state.global_step``, and the ``args`` and ``model_config`` texts::

    from summarylib.integrations.transformers import TensorBoardCallback

    trainer = Trainer(model, args, ..., callbacks=[TensorBoardCallback()])
    trainer.remove_callback(transformers.integrations.TensorBoardCallback)  # if reported

Differences, on purpose:
  * The run is also a trial of the HParams dashboard: the scalar ``TrainingArguments``
    (learning rate, batch sizes, epochs, seed, ...) are its hparams, and its metric columns
    are the run's own logged scalars (``eval/loss``, ``train/loss``, ...).
  * ``on_log`` does not force a disk write per call (transformers' callback flushes each
    time): the writer flushes at most ``flush_secs`` (default 10) seconds after a write,
    at the end of training, and at exit.
  * Only the main process (``state.is_world_process_zero``) writes.
  * The trial is marked ended ("success") when training ends.
"""

from __future__ import annotations

import os
from typing import Any

from transformers import TrainerCallback

__all__ = ["TensorBoardCallback"]

_SKIPPED_ARGS = ("logging_dir", "output_dir", "hub_token", "push_to_hub_token")


def _rewrite_logs(logs: dict[str, Any]) -> dict[str, Any]:
    """transformers' tag names: ``eval_*`` and ``test_*`` to ``eval/*``, ``test/*``; the
    rest under ``train/``."""
    out = {}
    for key, value in logs.items():
        for prefix in ("eval_", "test_"):
            if key.startswith(prefix):
                out[prefix[:-1] + "/" + key[len(prefix):]] = value
                break
        else:
            out["train/" + key] = value
    return out


class TensorBoardCallback(TrainerCallback):
    """transformers' TensorBoard callback over summarylib (see the module docstring).

    Args:
      tb_writer: a :class:`summarylib.SummaryWriter` to use instead of making one.
      flush_secs: the longest a logged value waits before it is written to disk.
    """

    def __init__(self, tb_writer: Any = None, flush_secs: float = 10) -> None:
        self.tb_writer = tb_writer
        self.flush_secs = flush_secs
        self.logging_dir = os.getenv("TENSORBOARD_LOGGING_DIR")
        if self.logging_dir is not None:
            self.logging_dir = os.path.expanduser(self.logging_dir)

    def _writer(self, args: Any) -> Any:
        if self.tb_writer is None:
            from summarylib.summary_writer import SummaryWriter
            from summarylib.torch_conventions import default_log_dir

            if self.logging_dir is None:
                self.logging_dir = os.path.join(args.output_dir, default_log_dir())
            self.tb_writer = SummaryWriter(self.logging_dir, flush_secs=self.flush_secs)
        return self.tb_writer

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        if state.is_hyper_param_search and state.trial_name is not None:
            from summarylib.torch_conventions import default_log_dir

            self.logging_dir = os.path.join(args.output_dir, default_log_dir(), state.trial_name)
            if self.tb_writer is not None:
                self.tb_writer.close()
                self.tb_writer = None
        writer = self._writer(args)
        writer.add_text("args", args.to_json_string())
        model = kwargs.get("model")
        config = getattr(model, "config", None)
        if config is not None:
            writer.add_text("model_config", config.to_json_string())
        self._write_trial(args, writer)

    @staticmethod
    def _write_trial(args: Any, writer: Any) -> None:
        from summarylib import hparams as hp

        values = {k: v for k, v in args.to_sanitized_dict().items()
                  if isinstance(v, (bool, int, float, str)) and k not in _SKIPPED_ARGS}
        with writer.as_default():
            hp.hparams(values)
        # Closing the writer (end of training, or of a search trial) ends the trial, so
        # the HParams dashboard shows it finished, not "unknown".
        writer._trial_started()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        writer = self._writer(args)
        step = state.global_step
        for key, value in _rewrite_logs(logs).items():
            if isinstance(value, (int, float)):
                writer.add_scalar(key, value, step)
            elif isinstance(value, str):
                writer.add_text(key, value, step)
            # anything else is dropped, as transformers' callback drops it (with a warning)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.tb_writer is not None:
            self.tb_writer.close()
            self.tb_writer = None
