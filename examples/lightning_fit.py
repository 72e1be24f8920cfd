"""Lightning with summarylib's TensorBoardLogger (no tensorboard package needed to write).

    python examples/lightning_fit.py [save_dir]
"""

import sys

import lightning.pytorch as pl
import torch

from summarylib.integrations.lightning import TensorBoardLogger


class Regressor(pl.LightningModule):
    def __init__(self, lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                                       torch.nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


save_dir = sys.argv[1] if len(sys.argv) > 1 else "logs/lightning"
torch.manual_seed(0)
x = torch.randn(256, 4)
data = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
loader = torch.utils.data.DataLoader(data, batch_size=32)
logger = TensorBoardLogger(save_dir)
trainer = pl.Trainer(max_epochs=3, logger=logger, enable_progress_bar=False,
                     enable_checkpointing=False, accelerator="cpu", log_every_n_steps=2)
trainer.fit(Regressor(), loader, loader)
print(f"wrote {logger.log_dir}")
