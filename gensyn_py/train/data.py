"""Datasets as safetensors bytes (never pickle) and deterministic shard/batch order.

A dataset is a safetensors file holding `x` (inputs) and `y` (targets).
Shard membership derives from the job seed; each step's batch derives from
(seed, round, shard, step) through the counter-mode SHA-256 sampler
(`gensyn_py/train/batch_sampler.py`), so any step, and any one index of it, can be
recomputed without replaying the ones before it, the contract included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.batch_sampler import positions
from gensyn_py.train.shard_permutation import shard_members

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.spec import DatasetSpec



@dataclass(frozen=True)
class Dataset:
    """Inputs and targets as numpy arrays, with the example count."""

    x: np.ndarray
    y: np.ndarray

    @property
    def num_examples(self) -> int:
        return int(self.x.shape[0])

    def to_bytes(self) -> bytes:
        from safetensors.numpy import save

        return save({"x": np.ascontiguousarray(self.x), "y": np.ascontiguousarray(self.y)})

    @classmethod
    def from_bytes(cls, data: bytes, spec: DatasetSpec | None = None) -> Dataset:
        """Decode safetensors bytes; with `spec`, check the declared shapes, dtype and size."""
        from safetensors import SafetensorError
        from safetensors.numpy import load

        if spec is not None and len(data) != spec.size_bytes:
            raise SpecError(f"dataset is {len(data)} bytes, spec declares {spec.size_bytes}")
        try:
            arrays = load(data)
        except (SafetensorError, ValueError) as e:
            raise SpecError(f"dataset is not valid safetensors: {e}") from None
        if set(arrays) != {"x", "y"}:
            raise SpecError(f"dataset must hold exactly tensors 'x' and 'y', found {sorted(arrays)}")
        ds = cls(arrays["x"], arrays["y"])
        if ds.y.shape[0] != ds.num_examples:
            raise SpecError("dataset x and y hold different numbers of examples")
        if spec is not None:
            if ds.num_examples != spec.num_examples:
                raise SpecError(f"dataset has {ds.num_examples} examples, spec declares {spec.num_examples}")
            if list(ds.x.shape[1:]) != spec.x_shape or str(ds.x.dtype) != spec.x_dtype:
                raise SpecError(
                    f"dataset x is {ds.x.dtype}{list(ds.x.shape[1:])}, "
                    f"spec declares {spec.x_dtype}{spec.x_shape}"
                )
            if list(ds.y.shape[1:]) != spec.y_shape:
                raise SpecError(f"dataset y shape {list(ds.y.shape[1:])}, spec declares {spec.y_shape}")
        return ds

    def subset(self, idx: np.ndarray) -> Dataset:
        return Dataset(self.x[idx], self.y[idx])


def dataset_entry(ds: Dataset, data: bytes) -> dict[str, Any]:
    """The job spec's `dataset` entry for `ds`, whose serialized bytes are `data`."""
    from gensyn_py.storage.cid import cid_for_bytes

    return {
        "cid": cid_for_bytes(data),
        "x_shape": list(ds.x.shape[1:]),
        "x_dtype": str(ds.x.dtype),
        "y_shape": list(ds.y.shape[1:]),
        "num_examples": ds.num_examples,
        "size_bytes": len(data),
    }


def digits(image: bool = True, held_out: float = 0.2, seed: int = 0) -> tuple[Dataset, Dataset]:
    """sklearn's bundled 8x8 digits (no download), scaled to [0,1], split train / held-out."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.data.astype(np.float32) / 16.0).astype(np.float32)
    if image:
        x = x.reshape(-1, 1, 8, 8)
    y = bunch.target.astype(np.int64)
    order = np.random.Generator(np.random.PCG64(seed)).permutation(len(y))
    cut = int(len(y) * (1 - held_out))
    full = Dataset(np.ascontiguousarray(x), y)
    return full.subset(order[:cut]), full.subset(order[cut:])


def synthetic_tokens(n: int = 256, seq_len: int = 16, vocab: int = 32, seed: int = 0) -> Dataset:
    """A learnable token stream: noisy arithmetic progressions mod `vocab`; y is x shifted by one."""
    rng = np.random.Generator(np.random.PCG64(seed))
    start = rng.integers(0, vocab, size=(n, 1))
    stride = rng.integers(1, 4, size=(n, 1))
    seq = (start + stride * np.arange(seq_len + 1)[None, :]) % vocab
    noise = rng.random((n, seq_len + 1)) < 0.05
    seq = np.where(noise, rng.integers(0, vocab, size=seq.shape), seq).astype(np.int64)
    return Dataset(np.ascontiguousarray(seq[:, :-1]), np.ascontiguousarray(seq[:, 1:]))


def shard_indices(num_examples: int, shards: int, shard: int, seed: int) -> np.ndarray:
    """The example indices of `shard`, member j at index j: a seeded permutation split into near-equal parts.

    The permutation is a keyed Feistel network (`gensyn_py/train/shard_permutation.py`) rather than a shuffled
    array, so that the contract can name any one member (`contracts/libraries/ShardIndex.sol`).
    """
    return shard_members(num_examples, shards, shard, seed)


def batch_indices(
    shard_idx: np.ndarray, batch_size: int, seed: int, round_: int, shard: int, step: int
) -> np.ndarray:
    """The examples of one step: `shard_idx` at the sampler's positions for (seed, round, shard, step).

    Drawn with replacement whatever the batch size, so that each index is checkable on its own on-chain.
    """
    return shard_idx[positions(seed, round_, shard, step, batch_size, len(shard_idx))]


def to_tensors(ds: Dataset, idx: np.ndarray, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    return torch.from_numpy(ds.x[idx]).to(device), torch.from_numpy(ds.y[idx]).to(device)
