"""Two models as a requester would write them in PyTorch, and their export to ONNX for a job spec.

- `ResNetCNN`: a small residual CNN on multi-channel images (strided convolutions, residual blocks with
  LayerNorm over channels, global average pooling);
- `GPT`: a GPT-style decoder-only language model (token and position embeddings, causal self-attention,
  GELU MLP, pre-LayerNorm).

`export(model, example)` writes what a job names by CID: the graph with the model's current weights as its
initializers (so a job starts from them), exported for training (no constant folding, no fused inference
rewrites). Sizes are arguments: the tests use tiny ones, `bench/workloads.py` about 10M and 100M parameters.

Run as a script to write both files: `python examples/onnx_models.py OUT_DIR`.
"""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F


class ChannelNorm(nn.Module):
    """LayerNorm over the channels of (N, C, H, W): exported as a LayerNormalization on (N, H, W, C)."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ResBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1)
        self.norm1 = ChannelNorm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1, stride=stride) if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv2(F.relu(self.norm1(self.conv1(x))))
        return F.relu(h + (x if self.skip is None else self.skip(x)))


class ResNetCNN(nn.Module):
    """stem conv -> stages of residual blocks (the first of each later stage strided) -> mean -> linear."""

    def __init__(self, in_channels: int = 3, width: int = 16, stages: int = 2, blocks: int = 1,
                 classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(in_channels, width, 3, padding=1)
        layers: list[nn.Module] = []
        c = width
        for s in range(stages):
            out = width * 2**s
            for b in range(blocks):
                layers.append(ResBlock(c, out, 2 if s > 0 and b == 0 else 1))
                c = out
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(F.relu(self.stem(x)))
        return self.head(h.mean(dim=(2, 3)))


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // h) ** 0.5)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int = 64, seq_len: int = 16, d: int = 32, heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq_len, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos)))


def export(model: nn.Module, example: torch.Tensor) -> bytes:
    """The ONNX file of `model` for inputs shaped like `example` (its first dimension is the job's batch size).

    TorchScript exporter, opset 20, training mode, no constant folding: every parameter stays an initializer
    under its own name (an inference export folds and deduplicates weights, which is wrong for training)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), buf,  # type: ignore[arg-type]  # a file object works (TorchScript exporter)
                          dynamo=False, opset_version=20,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["scores"])
    return buf.getvalue()


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "resnet_cnn.onnx").write_bytes(export(ResNetCNN(), torch.zeros(16, 3, 16, 16)))
    (out / "gpt_lm.onnx").write_bytes(export(GPT(vocab=512), torch.zeros(16, 16, dtype=torch.int64)))
    print(f"wrote {out / 'resnet_cnn.onnx'} and {out / 'gpt_lm.onnx'}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
