"""Small convolutional net for 1x8x8 digit images."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.errors import SpecError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class CNNConfig:
    """Two 3x3 convs (padding 1), a 2x2 max-pool, then a linear head."""

    image_size: int = 8
    channels: int = 8
    num_classes: int = 10

    def check(self) -> None:
        if self.image_size % 2:
            raise SpecError(f"cnn: image_size must be even, got {self.image_size}")


def build(cfg: CNNConfig) -> torch.nn.Module:
    from torch import nn

    half = cfg.image_size // 2
    return nn.Sequential(
        nn.Conv2d(1, cfg.channels, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(cfg.channels, cfg.channels, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(cfg.channels * half * half, cfg.num_classes),
    )
