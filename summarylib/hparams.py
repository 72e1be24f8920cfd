"""TensorBoard's HParams vocabulary (``tensorboard.plugins.hparams.api``), without TensorFlow.

    from summarylib import hparams as hp

    with sl.create_file_writer("logs/trial-1").as_default():
        hp.hparams({"lr": 0.01, "optimizer": "adam"})     # this run is one trial
        ... sl.scalar("accuracy", acc, step=step) ...
        hp.session_end("success")

    with sl.create_file_writer("logs").as_default():      # optional: domains, metrics
        hp.hparams_config([hp.HParam("lr", hp.RealInterval(1e-4, 1e-1))],
                          [hp.Metric("accuracy")])

The ``*_pb`` functions return the same bytes as tensorboard's helpers of those names; the
others write them to the default writer at step 0. ``SummaryWriter.add_hparams`` does both
in the writer's own run. See :mod:`summarylib.ops.hparams_plugin` for the data contract.
"""

from __future__ import annotations

from summarylib.ops.hparams_plugin import (
    Discrete,
    HParam,
    IntInterval,
    Metric,
    RealInterval,
    hparams,
    hparams_config,
    hparams_config_pb,
    hparams_pb,
    session_end,
    session_end_pb,
)

__all__ = [
    "Discrete",
    "HParam",
    "IntInterval",
    "Metric",
    "RealInterval",
    "hparams",
    "hparams_config",
    "hparams_config_pb",
    "hparams_pb",
    "session_end",
    "session_end_pb",
]
