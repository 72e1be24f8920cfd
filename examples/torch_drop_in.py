"""A torch training script whose only summarylib line is the import.

    python examples/torch_drop_in.py [logdir]     # then: tensorboard --logdir <logdir>
"""

import sys

import torch

from summarylib import SummaryWriter  # was: from torch.utils.tensorboard import SummaryWriter

logdir = sys.argv[1] if len(sys.argv) > 1 else "logs/torch_drop_in"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(256, 4), torch.randn(256, 1)

writer = SummaryWriter(logdir)
writer.add_graph(model, x[:2])
for step in range(200):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    writer.add_scalar("loss", loss.item(), step)
    writer.add_scalars("weights_norm", {"fc0": model[0].weight.norm().item(),
                                        "fc2": model[2].weight.norm().item()}, step)
    if step % 50 == 0:
        writer.add_histogram("fc0/weight", model[0].weight, step)
writer.add_hparams({"lr": 0.05, "hidden": 16}, {"loss": loss.item()})
writer.close()
print(f"wrote {logdir}; open it with: tensorboard --logdir {logdir}")
