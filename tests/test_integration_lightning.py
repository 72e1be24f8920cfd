"""summarylib.integrations.lightning.TensorBoardLogger beside Lightning's own logger."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.observe import assert_same_observations, observe
from tests.tbserver import TensorBoardServer

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")


class TinyModule(pl.LightningModule):
    def __init__(self, lr: float = 0.1, hidden: int = 8, tags: tuple = ("a", "b")) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, 1))
        self.example_input_array = torch.zeros(2, 4)

    def forward(self, x: Any) -> Any:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        self.log_dict({"stats/a": loss * 2, "stats/b": loss * 3})
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self(x), y))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loaders() -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=g)
    y = x.sum(1, keepdim=True)
    ds = torch.utils.data.TensorDataset(x, y)
    return (torch.utils.data.DataLoader(ds, batch_size=8),
            torch.utils.data.DataLoader(ds, batch_size=16))


def fit(logger: Any, epochs: int = 2, ckpt_path: str | None = None,
        default_root_dir: str | None = None) -> Any:
    pl.seed_everything(0, verbose=False)
    model = TinyModule()
    trainer = pl.Trainer(max_epochs=epochs, logger=logger, log_every_n_steps=2,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", devices=1, default_root_dir=default_root_dir,
                         enable_checkpointing=default_root_dir is not None)
    train, val = loaders()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's hints about workers and log steps
        trainer.fit(model, train, val, ckpt_path=ckpt_path)
    return trainer


def test_same_runs_tags_and_values_as_lightnings_logger(tmp_path: Path) -> None:
    from lightning.pytorch.loggers import TensorBoardLogger as TheirLogger

    from summarylib.integrations.lightning import TensorBoardLogger

    fit(TheirLogger(tmp_path / "theirs"))
    ours_logger = TensorBoardLogger(tmp_path / "ours", log_graph=True)
    fit(ours_logger)
    assert ours_logger.log_dir == str(tmp_path / "ours" / "lightning_logs" / "version_0")
    ours, theirs = observe(tmp_path / "ours"), observe(tmp_path / "theirs")
    hp = frozenset({"hp_metric", "_hparams_/experiment", "_hparams_/session_start_info",
                    "_hparams_/session_end_info", "__graph__", "__run_graph__",
                    "step1"})  # torch's add_graph run metadata: only ours logs the graph
    assert_same_observations(ours, theirs, skip_tags=hp)
    run = "lightning_logs/version_0"
    assert "hp_metric" in theirs[run] and "hp_metric" not in ours[run]
    assert ours[run]["__graph__"].values[0] > 0
    assert (tmp_path / "ours" / run / "hparams.yaml").read_text() == (
        tmp_path / "theirs" / run / "hparams.yaml").read_text()
    request = {"experimentName": "", "startIndex": 0, "sliceSize": 10,
               "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                   "STATUS_RUNNING"], "colParams": []}
    with TensorBoardServer(tmp_path / "ours") as tb:
        groups = tb.poll(lambda: tb.post_json("/data/plugin/hparams/session_groups", request),
                         lambda g: g.get("sessionGroups"))
        val = tb.get_json("/data/plugin/scalars/scalars", run=run, tag="val_loss")
    (group,) = groups["sessionGroups"]
    assert group["hparams"] == {"lr": 0.1, "hidden": 8.0, "tags": "('a', 'b')"}
    metrics = {m["name"]["tag"]: m["value"] for m in group["metricValues"]}
    assert "hp_metric" not in metrics
    assert metrics["val_loss"] == pytest.approx(val[-1][2])  # the run's real last value
    assert group["sessions"][0]["status"] == "STATUS_SUCCESS"


def test_versions_prefix_and_sub_dir(tmp_path: Path) -> None:
    from summarylib.integrations.lightning import TensorBoardLogger

    first = TensorBoardLogger(tmp_path, name="exp")
    first.log_metrics({"x": 1.0}, 0)
    first.finalize("success")
    second = TensorBoardLogger(tmp_path, name="exp", prefix="fold1", sub_dir="train")
    second.log_metrics({"x": torch.tensor(2.0), "grp": {"a": 1.0, "b": 2.0}}, 3)
    second.finalize("success")
    assert second.version == 1
    assert second.log_dir == os.path.join(tmp_path, "exp", "version_1", "train")
    obs = observe(tmp_path / "exp")
    assert obs["version_1/train"]["fold1-x"].values == [2.0]
    assert obs["version_1/train/fold1-grp_a"]["fold1-grp"].values == [1.0]
    named = TensorBoardLogger(tmp_path, name="", version="custom")
    assert named.log_dir == os.path.join(tmp_path, "custom")


def test_resume_appends_to_the_same_version(tmp_path: Path) -> None:
    """Resuming from a checkpoint into version_0: TensorBoard shows one curve, the points
    of the interrupted attempt after the checkpoint replaced by the resumed ones."""
    from summarylib.integrations.lightning import TensorBoardLogger

    fit(TensorBoardLogger(tmp_path / "logs"), epochs=1, default_root_dir=str(tmp_path))
    (ckpt,) = (tmp_path / "logs" / "lightning_logs" / "version_0" / "checkpoints").glob("*")
    # A second attempt that logged further before dying: steps past the checkpoint.
    stale = TensorBoardLogger(tmp_path / "logs", version=0)
    stale.log_metrics({"train_loss": 99.0}, 9)
    stale.log_metrics({"train_loss": 99.0}, 13)
    stale.finalize("failed")
    import time

    time.sleep(1.05)  # the resumed file is named after a later second
    fit(TensorBoardLogger(tmp_path / "logs", version=0), epochs=2, ckpt_path=str(ckpt),
        default_root_dir=str(tmp_path))
    with TensorBoardServer(tmp_path / "logs") as tb:
        points = tb.poll(lambda: tb.get_json("/data/plugin/scalars/scalars",
                                             run="lightning_logs/version_0", tag="train_loss"),
                         lambda p: len(p) >= 8)
    steps = [p[1] for p in points]
    assert steps == sorted(steps) and 99.0 not in [p[2] for p in points]
    assert len(os.listdir(tmp_path / "logs" / "lightning_logs")) == 1


DDP_SCRIPT = '''
import os, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {root!r})
import torch
import lightning.pytorch as pl
from tests.test_integration_lightning import TinyModule, loaders
from summarylib.integrations.lightning import TensorBoardLogger

if __name__ == "__main__":
    pl.seed_everything(0, verbose=False)
    logger = TensorBoardLogger({logdir!r})
    trainer = pl.Trainer(max_epochs=2, logger=logger, log_every_n_steps=1,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False, accelerator="cpu", devices=2,
                         strategy="ddp")
    train, val = loaders()
    trainer.fit(TinyModule(), train, val)
    print("rank", trainer.global_rank, "done")
'''


def test_ddp_only_rank_zero_writes(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "ddp_fit.py"
    script.write_text(DDP_SCRIPT.format(root=str(Path(__file__).resolve().parents[1]),
                                        logdir=str(tmp_path / "logs")))
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "PL_DISABLE_FORK": "1"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rank 0 done" in done.stdout
    files = [p for p in (tmp_path / "logs").rglob("*") if p.is_file()]
    event_files = [p for p in files if "tfevents" in p.name]
    assert len(event_files) == 1, files  # rank 1 wrote nothing
    assert sorted(p.name for p in files if "tfevents" not in p.name) == ["hparams.yaml"]
    obs = observe(tmp_path / "logs")
    assert obs["lightning_logs/version_0"]["train_loss"].steps
