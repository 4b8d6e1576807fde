"""The batch sampler: which examples of its shard a training step reads, in a form the contract recomputes.

A step's seed is `sha256(abi.encode(DOMAIN, seed, round, shard, t))`; position i of step t is
`uint256(sha256(abi.encode(step_seed, i))) % shard_size`, drawn with replacement; the example is
`shard_idx[position]`. It is a counter-mode hash, so any one index of any step is a pure function of
(seed, round, shard, step, i): the dispute game checks one index of a disputed batch on-chain
(`contracts/libraries/BatchIndex.sol`, bit for bit the same), and the trainer derives any step without
replaying the ones before it.

SHA-256 rather than keccak256: Python's hashlib hashes a 64-byte message in under a microsecond, seven times
faster than the keccak binding (a batch of 1,024 costs about 1 ms instead of 7), and the EVM has SHA-256 as a
precompile, so one index costs a few hundred gas on-chain (`tests/contracts/test_batch_index.py` measures it).
Two levels (a step seed, then one 64-byte message per index) keep every per-index message to one block.
"""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np

from gensyn_py.crypto.hashing import bytes32, sha256, uint256
from gensyn_py.errors import SpecError

# Names the sampler and its version; a changed derivation gets a new DOMAIN, so old and new never agree by chance.
DOMAIN = bytes32(b"gensyn.batch-sampler.v2".ljust(32, b"\0"))
# Below this many draws, reducing one Python int at a time beats numpy's per-call cost.
_NUMPY_FROM = 128


@cache
def _counters(count: int) -> tuple[bytes, ...]:
    """abi.encode(uint256 i) for i < count, kept per batch size (a spec's batch size never changes)."""
    return tuple(i.to_bytes(32, "big") for i in range(count))


def _mod_words(digests: bytes, modulus: int) -> np.ndarray:
    """Each 32-byte big-endian word of `digests` modulo `modulus`, as int64.

    In numpy for a large batch and a modulus below 2^32: Horner over the eight 32-bit limbs, where
    (r << 32) | limb with r < modulus stays inside uint64.
    """
    n = len(digests) // 32
    if n < _NUMPY_FROM or modulus >= 1 << 32:
        return np.array([int.from_bytes(digests[k : k + 32], "big") % modulus for k in range(0, 32 * n, 32)], np.int64)
    limbs = np.frombuffer(digests, dtype=">u4").reshape(n, 8).astype(np.uint64)
    m, shift = np.uint64(modulus), np.uint64(32)
    r = limbs[:, 0] % m
    for k in range(1, 8):
        r = ((r << shift) | limbs[:, k]) % m
    return r.astype(np.int64)


def _check(count: int, shard_size: int) -> None:
    if shard_size < 1:
        raise SpecError(f"shard size {shard_size} must be positive")
    if count < 0:
        raise SpecError(f"batch size {count} is negative")


def step_seed(seed: int, round_: int, shard: int, step: int) -> bytes:
    """sha256(abi.encode(DOMAIN, seed, round, shard, step)): what every index of one step hashes with."""
    return sha256(DOMAIN + uint256(seed) + uint256(round_) + uint256(shard) + uint256(step))


def positions(seed: int, round_: int, shard: int, step: int, count: int, shard_size: int) -> np.ndarray:
    """Positions 0..count-1 of one step's batch within its shard (int64 array of length `count`)."""
    _check(count, shard_size)
    prefix = step_seed(seed, round_, shard, step)
    digests = b"".join([hashlib.sha256(prefix + c).digest() for c in _counters(count)])
    return _mod_words(digests, shard_size)


def position(seed: int, round_: int, shard: int, step: int, i: int, shard_size: int) -> int:
    """Position i of one step's batch: the scalar form, as `BatchIndex.example` computes it on-chain."""
    _check(0, shard_size)
    word = sha256(step_seed(seed, round_, shard, step) + uint256(i))
    return int.from_bytes(word, "big") % shard_size
