"""Shared setup for the train/proof benchmarks: a mid-sized digits job."""

from __future__ import annotations

from typing import Any

from gensyn_py.train.data import Dataset, dataset_entry, digits
from gensyn_py.train.spec import JobSpec, parse_spec

DEFAULT_INTERVAL = 100


def bench_job(steps: int, interval: int = DEFAULT_INTERVAL, threads: int = 2) -> tuple[JobSpec, Dataset]:
    ds = digits(image=False)[0]
    data = ds.to_bytes()
    d: dict[str, Any] = {
        "model": {"family": "mlp", "sizes": {"hidden": 512, "depth": 2}},
        "optimizer": {"name": "adamw", "lr": 0.001, "weight_decay": 0.01},
        "schedule": {"kind": "cosine", "warmup_steps": 10},
        "batch_size": 256,
        "steps_per_unit": steps,
        "checkpoint_interval": interval,
        "seed": 1,
        "threads": threads,
        "mode": "exact",  # the figures these benches report are stock-kernel (exact-mode) training
        "dataset": dataset_entry(ds, data),
    }
    return parse_spec(d), ds
