"""Tiny ONNX models (the README's examples at toy sizes) as job specs, loaded for this process."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import torch

from examples.onnx_models import GPT, ResNetCNN, export
from gensyn_py.storage.cid import cid_for_bytes
from gensyn_py.train.data import Dataset, dataset_entry
from gensyn_py.train.graphs.cache import load
from gensyn_py.train.spec import JobSpec, parse_spec

BATCH = 8


@cache
def cnn_bytes() -> bytes:
    torch.manual_seed(1)
    return export(ResNetCNN(in_channels=3, width=4, stages=2, blocks=1, classes=5), torch.zeros(BATCH, 3, 8, 8))


@cache
def gpt_bytes() -> bytes:
    torch.manual_seed(2)
    return export(GPT(vocab=32, seq_len=8, d=16, heads=2, layers=1), torch.zeros(BATCH, 8, dtype=torch.int64))


@cache
def images() -> Dataset:
    """64 3x8x8 images in 5 classes, each class a brighter channel: learnable in a few steps."""
    rng = np.random.Generator(np.random.PCG64(3))
    y = rng.integers(0, 5, size=64).astype(np.int64)
    x = rng.random((64, 3, 8, 8), dtype=np.float32) * 0.5
    x[:, 0] += (y[:, None, None] / 5.0).astype(np.float32)
    return Dataset(np.ascontiguousarray(x), y)


@cache
def token_windows() -> Dataset:
    from gensyn_py.train.data import synthetic_tokens

    return synthetic_tokens(n=64, seq_len=8, vocab=32, seed=4)


def model_bytes(kind: str) -> bytes:
    return {"cnn": cnn_bytes, "gpt": gpt_bytes}[kind]()


def dataset_of(kind: str) -> Dataset:
    return {"cnn": images, "gpt": token_windows}[kind]()


def model_entry(data: bytes) -> dict[str, Any]:
    cid = cid_for_bytes(data)
    load(cid, data)
    return {"family": "onnx", "onnx": {"cid": cid, "size_bytes": len(data)}}


def onnx_spec_dict(kind: str = "cnn", **over: Any) -> dict[str, Any]:
    ds = dataset_of(kind)
    d: dict[str, Any] = {
        "version": 1,
        "model": model_entry(model_bytes(kind)),
        "optimizer": {"name": "adamw", "lr": 0.01},
        "batch_size": BATCH,
        "steps_per_unit": 4,
        "checkpoint_interval": 2,
        "seed": 5,
        "mode": "repro",
        "dataset": dataset_entry(ds, ds.to_bytes()),
    }
    d.update(over)
    return d


def onnx_spec(kind: str = "cnn", **over: Any) -> JobSpec:
    return parse_spec(onnx_spec_dict(kind, **over))
