"""Tiny specs, datasets and stores shared by the train/proof unit tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gensyn_py.storage.local import LocalStore
from gensyn_py.train.data import Dataset, dataset_entry, digits, synthetic_tokens
from gensyn_py.train.spec import JobSpec, parse_spec


@cache
def digits_flat() -> Dataset:
    return digits(image=False)[0]


@cache
def digits_image() -> Dataset:
    return digits(image=True)[0]


@cache
def tokens() -> Dataset:
    return synthetic_tokens(n=128, seq_len=16, vocab=32)


def dataset_for(family: str) -> Dataset:
    return {"mlp": digits_flat, "cnn": digits_image, "transformer": tokens}[family]()


def spec_dict(family: str = "mlp", **over: Any) -> dict[str, Any]:
    ds = dataset_for(family)
    sizes = {"mlp": {"hidden": 16}, "cnn": {"channels": 4}, "transformer": {"d_model": 16}}[family]
    data = ds.to_bytes()
    d: dict[str, Any] = {
        "version": 1,
        "model": {"family": family, "sizes": sizes},
        "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0001},
        "schedule": {"kind": "cosine", "warmup_steps": 2},
        "batch_size": 16,
        "steps_per_unit": 8,
        "checkpoint_interval": 2,
        "seed": 7,
        "rounds": 2,
        "shards": 2,
        "mode": "exact",
        "threads": 1,
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
        "dataset": dataset_entry(ds, data),
    }
    d.update(over)
    return d


def tiny_spec(family: str = "mlp", **over: Any) -> JobSpec:
    return parse_spec(spec_dict(family, **over))


def store_at(path: Path) -> LocalStore:
    return LocalStore(path)
