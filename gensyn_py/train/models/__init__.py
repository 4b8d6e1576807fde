"""Model registry: family name -> config dataclass, builder and repro program. Nothing else is ever run.

Each family file holds the torch module (`build`) and the same network as a fixed sequence of repro
layer ops (`repro_forward`, written against an executor: ``repro.tape.Tape`` or ``repro.autograd.AUTOGRAD``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import SpecError
from gensyn_py.train.models import cnn, mlp, transformer
from gensyn_py.train.models.cnn import CNNConfig
from gensyn_py.train.models.mlp import MLPConfig
from gensyn_py.train.models.transformer import TransformerConfig

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Family:
    """A registered model family: its config type, builder and input kind."""

    config_type: type[Any]
    builder: Callable[[Any], torch.nn.Module]
    task: str  # "classify" (x float, y class) or "lm" (x tokens, y next tokens)
    repro_forward: Callable[..., Any]  # (executor, params, x, cfg) -> output
    repro_max_k: Callable[[Any, int], int]  # (cfg, batch) -> largest contraction of a repro step


def _build_mlp(cfg: MLPConfig) -> torch.nn.Module:
    from gensyn_py.train.models.mlp import build

    return build(cfg)


def _build_cnn(cfg: CNNConfig) -> torch.nn.Module:
    from gensyn_py.train.models.cnn import build

    return build(cfg)


def _build_transformer(cfg: TransformerConfig) -> torch.nn.Module:
    from gensyn_py.train.models.transformer import build

    return build(cfg)


REGISTRY: dict[str, Family] = {
    "mlp": Family(MLPConfig, _build_mlp, "classify", mlp.repro_forward, mlp.repro_max_k),
    "cnn": Family(CNNConfig, _build_cnn, "classify", cnn.repro_forward, cnn.repro_max_k),
    "transformer": Family(TransformerConfig, _build_transformer, "lm", transformer.repro_forward,
                          transformer.repro_max_k),
}


def family(name: str) -> Family:
    """The registered family `name`, or a SpecError listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise SpecError(f"unknown model family {name!r}; known: {sorted(REGISTRY)}") from None


def make_config(name: str, sizes: Mapping[str, int]) -> Any:
    """Validate `sizes` against the family's config dataclass and build the config."""
    fam = family(name)
    fields = {f.name for f in dataclasses.fields(fam.config_type)}
    unknown = sorted(set(sizes) - fields)
    if unknown:
        raise SpecError(f"model {name!r}: unknown sizes {unknown}; allowed: {sorted(fields)}")
    for key, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecError(f"model {name!r}: size {key!r} must be a positive integer, got {value!r}")
    cfg = fam.config_type(**sizes)
    check = getattr(cfg, "check", None)
    if check is not None:
        check()
    return cfg


def build_model(name: str, sizes: Mapping[str, int], repro: bool = False) -> torch.nn.Module:
    """Construct the model (on CPU, default init; the trainer re-seeds before calling).

    With `repro`, the same module (same parameters, names and init) computes ``model(x)`` with the
    family's repro program through torch autograd (``repro.autograd.repro_module``).
    """
    fam = family(name)
    cfg = make_config(name, sizes)
    model = fam.builder(cfg)
    if not repro:
        return model
    from gensyn_py.repro.autograd import repro_module

    return repro_module(model, partial(fam.repro_forward, cfg=cfg))
