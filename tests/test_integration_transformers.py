"""summarylib.integrations.transformers.TensorBoardCallback beside transformers' own."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.observe import assert_same_observations, observe
from tests.tbserver import TensorBoardServer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# Depend on the clock, so differ between any two runs.
TIMED = frozenset({"train/train_runtime", "train/train_samples_per_second",
                   "train/train_steps_per_second", "eval/runtime", "eval/samples_per_second",
                   "eval/steps_per_second"})
HPARAMS = frozenset({"_hparams_/experiment", "_hparams_/session_start_info",
                     "_hparams_/session_end_info"})


class Dataset(torch.utils.data.Dataset):  # type: ignore[misc]
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(0, 50, (n, 8), generator=g)
        self.labels = (self.ids.sum(1) % 2).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def train(output_dir: Path, callback: Any) -> None:
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    transformers.set_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(output_dir=str(output_dir), num_train_epochs=2,
                             per_device_train_batch_size=8, logging_steps=2,
                             eval_strategy="epoch", report_to="none", save_strategy="no",
                             seed=0, use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Dataset(32),
                      eval_dataset=Dataset(16), callbacks=[callback])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()


def test_same_tags_and_values_as_transformers_callback(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.integrations import TensorBoardCallback as TheirCallback

    from summarylib.integrations.transformers import TensorBoardCallback

    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(tmp_path / "theirs"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train(tmp_path / "out", TheirCallback())
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(tmp_path / "ours"))
    train(tmp_path / "out", TensorBoardCallback())
    ours, theirs = observe(tmp_path / "ours"), observe(tmp_path / "theirs")
    assert_same_observations(ours, theirs, skip_tags=TIMED | HPARAMS)
    tags = set(ours["."])
    assert {"train/loss", "train/learning_rate", "train/grad_norm", "eval/loss",
            "args/text_summary", "model_config/text_summary"} <= tags
    request = {"experimentName": "", "startIndex": 0, "sliceSize": 10,
               "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE",
                                   "STATUS_RUNNING"], "colParams": []}
    # Served from the parent, as `tensorboard --logdir <output_dir>/runs` serves each run:
    # TensorBoard infers a trial's metrics from its run's scalars when the run is not the
    # logdir itself.
    with TensorBoardServer(tmp_path) as tb:
        groups = tb.poll(lambda: tb.post_json("/data/plugin/hparams/session_groups", request),
                         lambda g: g.get("sessionGroups"))
        eval_loss = tb.get_json("/data/plugin/scalars/scalars", run="ours", tag="eval/loss")
    (group,) = [g for g in groups["sessionGroups"] if g["sessions"][0]["name"] == "ours"]
    assert group["hparams"]["learning_rate"] == 5e-05
    assert group["hparams"]["num_train_epochs"] == 2.0
    metrics = {m["name"]["tag"]: m["value"] for m in group["metricValues"]}
    assert "eval/loss" in metrics, group
    assert metrics["eval/loss"] == pytest.approx(eval_loss[-1][2])
    assert group["sessions"][0]["status"] == "STATUS_SUCCESS"  # the end of training ended it


def test_only_the_main_process_writes(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from summarylib.integrations.transformers import TensorBoardCallback

    args = TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    state = TrainerState()
    state.is_world_process_zero = False
    callback = TensorBoardCallback()
    callback.on_train_begin(args, state, TrainerControl())
    callback.on_log(args, state, TrainerControl(), logs={"loss": 1.0})
    callback.on_train_end(args, state, TrainerControl())
    assert not list(tmp_path.rglob("*tfevents*"))
