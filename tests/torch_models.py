"""Small torch models shared by the graph capture tests and bench/graph_compare.py.

Each is a shape the graph dashboard must handle: nested residual blocks with a downsample
branch, a transformer block (multi-head attention), a dict-in/dict-out model with non-tensor
arguments, and data-dependent control flow (also with an int argument and a dict result
holding None and an int, which torch.jit.trace cannot take as they are). Importing this
module imports torch.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class Block(nn.Module):
    """A ResNet basic block; a 1x1 downsample branch when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x: Any) -> Any:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.down is None else self.down(x)
        return torch.relu(y + skip)


class ResNet(nn.Module):
    """Stem, two stages of two blocks (the second stage downsamples), mean, linear head."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w))
        self.layer1 = nn.Sequential(Block(w, w), Block(w, w))
        self.layer2 = nn.Sequential(Block(w, 2 * w, stride=2), Block(2 * w, 2 * w))
        self.fc = nn.Linear(2 * w, 10)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.stem(x))
        x = self.layer2(self.layer1(x))
        return self.fc(x.mean((2, 3)))


class TransformerBlock(nn.Module):
    """Pre-norm attention and MLP with residuals; input ``[batch, tokens, d]``."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: Any, mask: Any = None) -> Any:
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class DictModel(nn.Module):
    """Dict input, non-tensor arguments, dict/tuple/None/int outputs, a 2-output op."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(4, 6)
        self.head = nn.Linear(6, 3)
        self.register_buffer("scale", torch.full((6,), 2.0))

    def forward(self, batch: dict[str, Any], n: int, mode: str = "train", extra: Any = None
                ) -> Any:
        h = self.enc(batch["a"]) * self.scale + batch["b"] * n
        top, idx = h.max(dim=1)
        return {"logits": self.head(h), "aux": (top, None), "best": idx, "n": n}


class Branchy(nn.Module):
    """Data-dependent control flow: torch.export refuses it, torch.jit traces one branch."""

    def __init__(self, features: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: Any) -> Any:
        y = self.fc(x)
        if y.sum() > 0:
            return y * 2
        return y - 1


class BranchyDict(nn.Module):
    """Data-dependent control flow (no torch.export), an int argument and a dict result
    with a None and an int: torch.jit.trace accepts neither as they are."""

    def __init__(self, features: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: Any, n: int) -> Any:
        y = self.fc(x)
        y = y * n if y.sum() > 0 else y - n
        return {"y": y, "aux": None, "n": n, "pair": (torch.relu(y), y.sum())}
