"""Parameter counts and training FLOPs of the registry's model families, from their configs alone.

No model is built (a large config would allocate its weights just to be
counted); `tests/unit/test_estimate.py` checks the counts against the real
`torch` modules. Training FLOPs follow the usual rule of 6 per parameter use
(2 for the forward multiply-add, 4 for the backward pass), counting each
weight once per place it is applied:

- mlp: 6 x params per example;
- cnn: 6 x (conv weights x output positions + linear weights) per example,
  since a 3x3 kernel is applied at every pixel;
- transformer: 6 x params per token, plus the attention scores and their
  weighted sum, 6 x n_layers x seq_len x d_model per token (Kaplan et al.
  2020, "Scaling Laws for Neural Language Models", table 1); tokens per
  example = the dataset's sequence length.

Biases, norms, activations, softmax and the optimizer step are left out:
they are linear in the parameter count, not in it times the batch.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

from gensyn_py.train.models import make_config
from gensyn_py.train.models.cnn import CNNConfig
from gensyn_py.train.models.mlp import MLPConfig
from gensyn_py.train.models.transformer import TransformerConfig

if TYPE_CHECKING:
    from gensyn_py.train.spec import JobSpec


def param_count(cfg: Any) -> int:
    """Trainable parameters of a registry config (exactly what its module holds)."""
    if isinstance(cfg, MLPConfig):
        widths = [cfg.in_features] + [cfg.hidden] * cfg.depth + [cfg.num_classes]
        return sum(a * b + b for a, b in pairwise(widths))
    if isinstance(cfg, CNNConfig):
        c, half = cfg.channels, cfg.image_size // 2
        return (9 * c + c) + (9 * c * c + c) + (c * half * half * cfg.num_classes + cfg.num_classes)
    if isinstance(cfg, TransformerConfig):
        d, v = cfg.d_model, cfg.vocab_size
        block = 12 * d * d + 13 * d  # qkv, proj, fc, out (weights + biases) and two layer norms
        return v * d + cfg.seq_len * d + cfg.n_layers * block + 2 * d + d * v + v
    raise TypeError(f"no parameter count for {type(cfg).__name__}")


def train_flops_per_example(cfg: Any, seq_len: int | None = None) -> int:
    """Forward + backward FLOPs of one training example (one sequence for the language model)."""
    if isinstance(cfg, MLPConfig):
        return 6 * param_count(cfg)
    if isinstance(cfg, CNNConfig):
        c, s, half = cfg.channels, cfg.image_size, cfg.image_size // 2
        conv_uses = (9 * c + 9 * c * c) * s * s
        return 6 * (conv_uses + c * half * half * cfg.num_classes)
    if isinstance(cfg, TransformerConfig):
        tokens = seq_len or cfg.seq_len
        per_token = 6 * param_count(cfg) + 6 * cfg.n_layers * tokens * cfg.d_model
        return per_token * tokens
    raise TypeError(f"no FLOP count for {type(cfg).__name__}")


def spec_costs(spec: JobSpec) -> tuple[int, int]:
    """(parameters, training FLOPs per optimizer step) of a spec's model at its batch size."""
    if spec.model.onnx is not None:
        from gensyn_py.train.models import graph_facts, graph_of

        return graph_of(spec).num_params, graph_facts(spec).flops_per_step
    cfg = make_config(spec.model.family, spec.model.sizes)
    seq_len = spec.dataset.x_shape[0] if isinstance(cfg, TransformerConfig) else None
    return param_count(cfg), train_flops_per_example(cfg, seq_len) * spec.batch_size
