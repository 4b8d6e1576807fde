"""Small convolutional net for 1x8x8 digit images."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


def repro_forward(ex: Any, p: Mapping[str, Any], x: Any, cfg: CNNConfig) -> Any:
    """The same network as `build` as repro layer ops (parameters by their `build` names)."""
    h = ex.op("relu", ex.op("conv2d", x, p["0.weight"], p["0.bias"], pad=1))
    h = ex.op("relu", ex.op("conv2d", h, p["2.weight"], p["2.bias"], pad=1))
    h = ex.op("maxpool2d", h, k=2)
    h = ex.op("reshape", h, shape=(h.shape[0], -1))
    return ex.op("linear", h, p["6.weight"], p["6.bias"])


def repro_max_k(cfg: CNNConfig, batch: int) -> int:
    """The largest contraction a repro training step runs (matmul K or sum length)."""
    half = cfg.image_size // 2
    return max(9 * cfg.channels, batch * cfg.image_size**2, cfg.channels * half * half, cfg.num_classes, batch)
