"""Multi-layer perceptron for flat (or flattened) float inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class MLPConfig:
    """in_features -> hidden x depth (ReLU) -> num_classes."""

    in_features: int = 64
    hidden: int = 32
    depth: int = 1
    num_classes: int = 10


def build(cfg: MLPConfig) -> torch.nn.Module:
    from torch import nn

    layers: list[nn.Module] = [nn.Flatten()]
    width = cfg.in_features
    for _ in range(cfg.depth):
        layers += [nn.Linear(width, cfg.hidden), nn.ReLU()]
        width = cfg.hidden
    layers.append(nn.Linear(width, cfg.num_classes))
    return nn.Sequential(*layers)
