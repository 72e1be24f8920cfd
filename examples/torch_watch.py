"""Weight and gradient histograms of a torch model every 20 steps, with watch().

    python examples/torch_watch.py [logdir]
"""

import sys

import torch

import summarylib as sl
from summarylib.integrations.torch import unwatch, watch

logdir = sys.argv[1] if len(sys.argv) > 1 else "logs/torch_watch"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(512, 8), torch.randn(512, 1)

writer = sl.create_file_writer(logdir)
watch(model, log="all", log_freq=20, writer=writer)
with writer.as_default():
    for step in range(100):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sl.scalar("loss", loss.item(), step=step)
unwatch(model)
writer.close()
print(f"wrote {logdir}")
