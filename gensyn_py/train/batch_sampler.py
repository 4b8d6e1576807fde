"""The batch sampler: which examples of its shard a training step reads, in a form the contract recomputes.

Position i of step t is `uint256(keccak256(abi.encode(DOMAIN, seed, round, shard, t, i))) % shard_size`, drawn
with replacement; the example is `shard_idx[position]`. It is a counter-mode keccak, so any one index of any
step is a pure function of (seed, round, shard, step, i): the dispute game checks one index of a disputed batch
on-chain (`contracts/libraries/BatchIndex.sol`, bit for bit the same), and the trainer derives any step without
replaying the ones before it.

Python cannot vectorize keccak itself, so the loop is as lean as it gets: the 160-byte prefix is encoded and
absorbed once per step (`keccak256_suffixes` copies the sponge state per counter), the counter words are encoded
once per batch size, and a large batch's digests are reduced modulo the shard size in numpy (Horner over 32-bit
limbs) rather than one Python int at a time.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from gensyn_py.crypto.hashing import bytes32, keccak256, keccak256_suffixes, uint256
from gensyn_py.errors import SpecError

# Names the sampler and its version; a changed derivation gets a new DOMAIN, so old and new never agree by chance.
DOMAIN = bytes32(b"gensyn.batch-sampler.v1".ljust(32, b"\0"))
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


def positions(seed: int, round_: int, shard: int, step: int, count: int, shard_size: int) -> np.ndarray:
    """Positions 0..count-1 of one step's batch within its shard (int64 array of length `count`)."""
    if shard_size < 1:
        raise SpecError(f"shard size {shard_size} must be positive")
    if count < 0:
        raise SpecError(f"batch size {count} is negative")
    prefix = DOMAIN + uint256(seed) + uint256(round_) + uint256(shard) + uint256(step)
    digests = keccak256_suffixes(prefix, _counters(count))
    return _mod_words(digests, shard_size)


def position(seed: int, round_: int, shard: int, step: int, i: int, shard_size: int) -> int:
    """Position i of one step's batch: the scalar form, as `BatchIndex.example` computes it on-chain."""
    if shard_size < 1:
        raise SpecError(f"shard size {shard_size} must be positive")
    word = keccak256(DOMAIN + uint256(seed) + uint256(round_) + uint256(shard) + uint256(step) + uint256(i))
    return int.from_bytes(word, "big") % shard_size
