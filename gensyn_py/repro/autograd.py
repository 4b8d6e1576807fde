"""torch autograd over the repro layer ops: each layer as a torch.autograd.Function.

``LayerFunction.apply(name, attrs, *inputs)`` runs the layer's repro forward on torch and, on
``backward()``, the layer's explicit repro backward, so torch autograd computes the same bits as
``tape.Tape`` (tested).  ``AUTOGRAD`` is the executor the model families' ``repro_forward`` functions take,
which makes a registry model usable as a plain torch module in repro mode (``repro_module``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.layers import LAYERS


class LayerFunction(torch.autograd.Function):
    """Any layer of ``layers.LAYERS`` as an autograd function (non-tensor arguments go in `attrs`)."""

    @staticmethod
    def forward(ctx: Any, name: str, attrs: dict[str, Any], *inputs: Tensor) -> Tensor:
        layer = LAYERS[name]
        out, saved = layer.forward(TORCH, *inputs, **attrs)
        ctx.layer = layer
        ctx.saved = saved
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        needs = tuple(ctx.needs_input_grad[2:])
        grads = ctx.layer.backward(TORCH, ctx.saved, g, needs)
        return (None, None, *(gi if need else None for gi, need in zip(grads, needs, strict=True)))


class AutogradExecutor:
    """Runs layer ops through ``LayerFunction`` (the executor interface of ``tape.Tape``)."""

    be = TORCH

    def op(self, name: str, *inputs: Any, **attrs: Any) -> Tensor:
        out: Tensor = LayerFunction.apply(name, attrs, *inputs)
        return out


AUTOGRAD = AutogradExecutor()

ReproForward = Callable[[Any, Mapping[str, Any], Any], Any]  # (executor, params by name, input) -> output


def repro_module(module: torch.nn.Module, forward: ReproForward) -> torch.nn.Module:
    """`module` itself (same parameters, names and state_dict) with ``module(x)`` routed through
    `forward` on the autograd executor: repro forward bits, repro backward through autograd."""

    def run(x: Tensor) -> Tensor:
        out: Tensor = forward(AUTOGRAD, dict(module.named_parameters()), x)
        return out

    module.forward = run
    return module


def cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """The repro cross-entropy of 2-D logits as a 0-dim tensor, differentiable through autograd."""
    out: Tensor = LayerFunction.apply("cross_entropy", {}, logits, labels.reshape(-1))
    return out.reshape(())
