"""Cost per training step of the batch sampler: the counter-mode SHA-256 (gensyn_py/train/batch_sampler.py)
against the PCG64 draw it replaced, at batch 32 and 1,024 over a 1,437-example shard (the digits train split);
and the cost of a unit's shard (once per unit), the Feistel permutation against the PCG64 shuffle it replaced.

Usage: python bench/sampler.py [--repeats N]. Prints one JSON line of microseconds per step (minimum over
repeats, the two sides alternated in one process; this box is shared, so the minimum is the figure to read).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from gensyn_py.train.batch_sampler import position
from gensyn_py.train.data import batch_indices, shard_indices

SHARD = np.arange(1437, dtype=np.int64)
_DOMAIN_BATCH = 0x4254  # the replaced sampler's domain word


def pcg64_batch(batch: int, step: int) -> np.ndarray:
    """The replaced derivation: numpy PCG64 keyed by (seed, round, shard, step), without replacement if it fits."""
    rng = np.random.Generator(np.random.PCG64([1, 0, 0, step, _DOMAIN_BATCH]))
    return SHARD[rng.choice(len(SHARD), size=batch, replace=batch > len(SHARD))]


def sha256_batch(batch: int, step: int) -> np.ndarray:
    return batch_indices(SHARD, batch, 1, 0, 0, step)


def naive_sha256_batch(batch: int, step: int) -> np.ndarray:
    """The same positions one index at a time through the scalar form (the step's seed hashed again each time)."""
    return SHARD[np.array([position(1, 0, 0, step, i, len(SHARD)) for i in range(batch)], dtype=np.int64)]


def per_step_us(fn: Callable[[int, int], np.ndarray], batch: int, steps: int) -> float:
    start = time.perf_counter()
    for t in range(steps):
        fn(batch, t)
    return (time.perf_counter() - start) / steps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    assert (sha256_batch(64, 3) == naive_sha256_batch(64, 3)).all()
    sides = {"pcg64": pcg64_batch, "sha256": sha256_batch, "sha256_naive": naive_sha256_batch}
    out: dict[str, float] = {}
    for batch, steps in ((32, 200), (1024, 20)):
        best = {name: float("inf") for name in sides}
        for _ in range(args.repeats):
            for name, fn in sides.items():
                best[name] = min(best[name], per_step_us(fn, batch, steps))
        for name, us in best.items():
            out[f"{name}_us_per_step_b{batch}"] = round(us, 1)
        out[f"sha256_over_pcg64_b{batch}"] = round(best["sha256"] / best["pcg64"], 1)
    # A unit's shard, once per unit: the Feistel permutation against the PCG64 shuffle it replaced.
    for n in (1437, 1_000_000):
        feistel = min(_ms(shard_indices, n) for _ in range(args.repeats))
        shuffle = min(_ms(pcg64_shard, n) for _ in range(args.repeats))
        out[f"shard_feistel_ms_n{n}"], out[f"shard_pcg64_ms_n{n}"] = round(feistel, 2), round(shuffle, 2)
        out[f"shard_feistel_over_pcg64_n{n}"] = round(feistel / shuffle, 1)
    print(json.dumps(out))


def pcg64_shard(n: int, shards: int, shard: int, seed: int) -> np.ndarray:
    """The replaced shard derivation: a PCG64 shuffle of the dataset split by array_split, sorted."""
    perm = np.random.Generator(np.random.PCG64([seed, 0x5348])).permutation(n)
    return np.sort(np.array_split(perm, shards)[shard])


def _ms(fn: Callable[[int, int, int, int], np.ndarray], n: int) -> float:
    """Milliseconds for shard 1 of 4 of n examples, seed 7."""
    start = time.perf_counter()
    fn(n, 4, 1, 7)
    return (time.perf_counter() - start) * 1e3


if __name__ == "__main__":
    main()
