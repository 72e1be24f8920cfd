"""Train a small numpy network on two interleaved spirals and log it for TensorBoard.

Run:  python examples/quickstart.py [LOGDIR]
Then: tensorboard --logdir LOGDIR   (default LOGDIR: ./logs/quickstart)

The spirals are not linearly separable, so the curves show a real training run: the loss
falls and the accuracy climbs from chance (about 0.5) to about 0.97 over the 300 steps,
while the learning rate follows a cosine schedule down to zero. It runs in about a second.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import summarylib as sl

STEPS = 300
HIDDEN = 32


def make_spirals(rng: np.random.Generator, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points in 2-D on two interleaved spiral arms (1.5 turns), with labels 0 and 1."""
    label = rng.integers(0, 2, n)
    # sqrt spreads the points evenly along the arm instead of crowding the centre.
    angle = np.sqrt(rng.uniform(0.02, 1.0, n)) * 3.0 * np.pi
    x = np.stack([angle * np.cos(angle + np.pi * label),
                  angle * np.sin(angle + np.pi * label)], axis=1) / (1.5 * np.pi)
    x += rng.normal(scale=0.05, size=x.shape)
    return x, label.astype(np.float64)


def main(logdir: str) -> None:
    rng = np.random.default_rng(0)
    x, y = make_spirals(rng)
    # A 2-32-1 tanh network, trained full-batch with momentum.
    params = [rng.normal(size=(2, HIDDEN)), np.zeros(HIDDEN),
              rng.normal(scale=HIDDEN**-0.5, size=HIDDEN), np.zeros(())]
    velocity = [np.zeros_like(p) for p in params]
    run = Path(logdir) / time.strftime("run-%Y%m%d-%H%M%S")
    writer = sl.create_file_writer(run)
    with writer.as_default():
        for step in range(STEPS):
            lr = 0.25 * (1.0 + np.cos(np.pi * step / STEPS))
            w1, b1, w2, b2 = params
            h = np.tanh(x @ w1 + b1)
            p = 1.0 / (1.0 + np.exp(-(h @ w2 + b2)))
            loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
            accuracy = np.mean((p > 0.5) == y)
            g = (p - y) / len(y)
            gh = np.outer(g, w2) * (1.0 - h**2)
            grads = [x.T @ gh, gh.sum(axis=0), h.T @ g, g.sum()]
            for i, grad in enumerate(grads):
                velocity[i] = 0.9 * velocity[i] + grad
                params[i] = params[i] - lr * velocity[i]
            sl.scalars({"loss": loss, "accuracy": accuracy, "learning_rate": lr}, step=step)
    writer.close()
    print(f"final loss {loss:.4f}, accuracy {accuracy:.3f}")
    print(f"wrote {writer.path}")
    print(f"open it with:  tensorboard --logdir {Path(logdir).resolve()}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "logs/quickstart")
