"""Which examples a shard holds, in a form the contract recomputes one member at a time.

Shard s of a dataset of n examples split into S shards holds positions start_s .. start_s + size_s - 1 of a keyed
permutation pi of 0 .. n-1 (sizes as numpy's array_split: the first n mod S shards one longer), and its member j
is example pi(start_s + j). pi is a 4-round balanced Feistel network over the smallest even number of bits that
covers n, walked along its cycle until the value falls below n (cycle walking), so it is a permutation of
0 .. n-1 whatever n. Round r XORs into the left half the low bits of splitmix64's finalizer applied to
(right half XOR k_r), with k_r the low 64 bits of sha256(abi.encode(DOMAIN, seed, r)).

Why this and not a shuffled array: the dispute game must know which example a disputed batch position reads
without the whole dataset; `contracts/libraries/ShardIndex.sol` computes pi(x) in a few thousand gas, the same
function bit for bit. Why splitmix64 and not a hash per round: it is a handful of 64-bit multiplies and shifts,
vectorized in numpy here (a million members in well under a second) and cheap on-chain.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from gensyn_py.crypto.hashing import bytes32, sha256, uint256
from gensyn_py.errors import SpecError

DOMAIN = bytes32(b"gensyn.shard-permutation.v1".ljust(32, b"\0"))
ROUNDS = 4
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@cache
def round_keys(seed: int) -> tuple[int, ...]:
    """k_r = uint64(uint256(sha256(abi.encode(DOMAIN, seed, r)))) for each round r."""
    return tuple(int.from_bytes(sha256(DOMAIN + uint256(seed) + uint256(r))[24:], "big") for r in range(ROUNDS))


def half_bits(n: int) -> int:
    """Half the Feistel width: the smallest even number of bits that holds n - 1, at least 2, halved."""
    bits = max(2, (n - 1).bit_length())
    return (bits + 1) // 2


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer on uint64 lanes (multiplication wraps modulo 2^64, as the contract's unchecked)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def _feistel(x: np.ndarray, keys: tuple[int, ...], half: int) -> np.ndarray:
    mask, h = np.uint64((1 << half) - 1), np.uint64(half)
    left, right = x >> h, x & mask
    for k in keys:
        left, right = right, left ^ (_mix(right ^ np.uint64(k)) & mask)
    return (left << h) | right


def permute(x: np.ndarray, n: int, seed: int) -> np.ndarray:
    """pi(x) for every x of `x` (each below n), as int64."""
    if n < 1:
        raise SpecError(f"a dataset of {n} examples has no shards")
    keys, half = round_keys(seed), half_bits(n)
    out = np.asarray(x, dtype=np.uint64).copy()
    todo = np.ones(out.shape, dtype=bool)
    limit = np.uint64(n)
    while todo.any():
        out[todo] = _feistel(out[todo], keys, half)
        todo = out >= limit
    return out.astype(np.int64)


def shard_range(n: int, shards: int, shard: int) -> tuple[int, int]:
    """(start, size) of shard `shard`'s positions in pi's order: numpy's array_split sizes."""
    if not 0 <= shard < shards:
        raise SpecError(f"shard {shard} out of range for {shards} shards")
    q, r = divmod(n, shards)
    return shard * q + min(shard, r), q + (1 if shard < r else 0)


def shard_members(n: int, shards: int, shard: int, seed: int) -> np.ndarray:
    """Every member of the shard, member j at index j (int64)."""
    start, size = shard_range(n, shards, shard)
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    return permute(np.arange(start, start + size, dtype=np.uint64), n, seed)


def member(n: int, shards: int, shard: int, seed: int, j: int) -> int:
    """Member j of the shard: the scalar form, as `ShardIndex.member` computes it on-chain."""
    start, size = shard_range(n, shards, shard)
    if not 0 <= j < size:
        raise SpecError(f"member {j} out of range for a shard of {size}")
    return int(permute(np.array([start + j], dtype=np.uint64), n, seed)[0])
