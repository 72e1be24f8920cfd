"""Train a small logistic-regression model with numpy and log it for TensorBoard.

Run:  python examples/quickstart.py [LOGDIR]
Then: tensorboard --logdir LOGDIR   (default LOGDIR: ./logs/quickstart)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import summarylib as sl


def make_data(rng: np.random.Generator, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, 2))
    y = (x[:, 0] * 1.5 - x[:, 1] + rng.normal(scale=0.5, size=n) > 0).astype(np.float64)
    return x, y


def main(logdir: str) -> None:
    rng = np.random.default_rng(0)
    x, y = make_data(rng)
    w = np.zeros(2)
    b = 0.0
    run = Path(logdir) / time.strftime("run-%Y%m%d-%H%M%S")
    writer = sl.create_file_writer(run)
    with writer.as_default():
        for step in range(300):
            lr = 0.5 * 0.99**step
            p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
            loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
            accuracy = np.mean((p > 0.5) == y)
            w -= lr * (x.T @ (p - y)) / len(y)
            b -= lr * float(np.mean(p - y))
            sl.scalars({"loss": loss, "accuracy": accuracy, "learning_rate": lr}, step=step)
    writer.close()
    print(f"final loss {loss:.4f}, accuracy {accuracy:.3f}")
    print(f"wrote {writer.path}")
    print(f"open it with:  tensorboard --logdir {Path(logdir).resolve()}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "logs/quickstart")
