"""Tiny decoder-only transformer language model (nanoGPT-shaped, no dropout)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import SpecError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class TransformerConfig:
    """Vocabulary, context length, width, heads and layers."""

    vocab_size: int = 32
    seq_len: int = 16
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 1

    def check(self) -> None:
        if self.d_model % self.n_heads:
            raise SpecError(f"transformer: d_model {self.d_model} not divisible by n_heads {self.n_heads}")


def build(cfg: TransformerConfig) -> torch.nn.Module:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(cfg.d_model)
            self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
            self.proj = nn.Linear(cfg.d_model, cfg.d_model)
            self.ln2 = nn.LayerNorm(cfg.d_model)
            self.fc = nn.Linear(cfg.d_model, 4 * cfg.d_model)
            self.out = nn.Linear(4 * cfg.d_model, cfg.d_model)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, c = x.shape
            h = cfg.n_heads
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // h) ** 0.5)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class TinyLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
            self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
            self.blocks = nn.Sequential(*[Block() for _ in range(cfg.n_layers)])
            self.ln = nn.LayerNorm(cfg.d_model)
            self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            return self.head(self.ln(self.blocks(x)))

    return TinyLM()


def repro_forward(ex: Any, p: Mapping[str, Any], idx: Any, cfg: TransformerConfig) -> Any:
    """The same network as `build` as repro layer ops (parameters by their `build` names).

    Activations are 2-D (B*T, D); the position embedding is added to every sequence as a (1, T*D) row.
    """
    b, t = idx.shape
    d = cfg.d_model
    x = ex.op("embedding", idx, p["tok.weight"])
    pos = ex.op("reshape", ex.op("rows", p["pos.weight"], start=0, length=t), shape=(1, t * d))
    x = ex.op("reshape", ex.op("add", ex.op("reshape", x, shape=(b, t * d)), pos), shape=(b * t, d))
    for i in range(cfg.n_layers):
        q = f"blocks.{i}."

        def lin(h: Any, name: str, q: str = q) -> Any:
            return ex.op("linear", h, p[f"{q}{name}.weight"], p[f"{q}{name}.bias"])

        h = ex.op("layer_norm", x, p[q + "ln1.weight"], p[q + "ln1.bias"])
        y = ex.op("attention", lin(h, "qkv"), batch=b, heads=cfg.n_heads)
        x = ex.op("add", x, lin(y, "proj"))
        h = ex.op("layer_norm", x, p[q + "ln2.weight"], p[q + "ln2.bias"])
        x = ex.op("add", x, lin(ex.op("gelu", lin(h, "fc")), "out"))
    x = ex.op("layer_norm", x, p["ln.weight"], p["ln.bias"])
    logits = ex.op("linear", x, p["head.weight"], p["head.bias"])
    return ex.op("reshape", logits, shape=(b, t, cfg.vocab_size))


def repro_max_k(cfg: TransformerConfig, batch: int) -> int:
    """The largest contraction a repro training step runs (matmul K or sum length)."""
    return max(4 * cfg.d_model, cfg.seq_len, cfg.vocab_size, batch * cfg.seq_len)
