"""A Hugging Face Trainer on a tiny BERT built from a config, logged through summarylib.

    python examples/transformers_trainer.py [output_dir]
"""

import sys

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from summarylib.integrations.transformers import TensorBoardCallback


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(0, 100, (n, 16), generator=g)
        self.labels = (self.ids[:, 0] > 50).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


output_dir = sys.argv[1] if len(sys.argv) > 1 else "logs/transformers"
config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32)
args = TrainingArguments(output_dir=output_dir, num_train_epochs=2, logging_steps=5,
                         eval_strategy="epoch", save_strategy="no", report_to="none",
                         use_cpu=True, disable_tqdm=True)
callback = TensorBoardCallback()
Trainer(model=BertForSequenceClassification(config), args=args, train_dataset=Tokens(128),
        eval_dataset=Tokens(32), callbacks=[callback]).train()
print(f"wrote {callback.logging_dir}")
