"""Multi-layer perceptron for flat (or flattened) float inputs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


def repro_forward(ex: Any, p: Mapping[str, Any], x: Any, cfg: MLPConfig) -> Any:
    """The same network as `build` as repro layer ops (parameters by their `build` names)."""
    h = ex.op("reshape", x, shape=(x.shape[0], -1))
    for i in range(cfg.depth):
        j = 1 + 2 * i
        h = ex.op("relu", ex.op("linear", h, p[f"{j}.weight"], p[f"{j}.bias"]))
    j = 1 + 2 * cfg.depth
    return ex.op("linear", h, p[f"{j}.weight"], p[f"{j}.bias"])


def repro_max_k(cfg: MLPConfig, batch: int) -> int:
    """The largest contraction a repro training step runs (matmul K or sum length)."""
    return max(cfg.in_features, cfg.hidden, cfg.num_classes, batch)
