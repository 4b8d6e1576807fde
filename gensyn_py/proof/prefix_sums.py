"""The prefix sums of one dot element as a commitment two parties can bisect over.

A matmul / sum / index_sum element is N = sum_k a_k * b_k over aligned integers (``trace.DotElement``). Its
prefix sums partial[k] = partial[k-1] + a_k * b_k (partial[-1] = 0) are committed as a Merkle root over the
leaves ``keccak256(uint256 k ++ int256 partial[k])``, k = 0..K-1 (``crypto.merkle``, OpenZeppelin-compatible;
``contracts/libraries/TraceProofs.sol`` checks the same leaves).  Two parties who disagree on N disagree on
partial[K-1]; bisecting on partial[k] finds the first k where they differ, and there the dispute is one integer
multiply-add that the contract recomputes from partial[k-1] (agreed), a_k and b_k.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import merkle_proof, merkle_root, verify_proof
from gensyn_py.errors import VerificationError

INT256_MIN, INT256_MAX = -(2**255), 2**255 - 1


def int256(value: int) -> bytes:
    """abi.encode(int256 value): 32-byte big-endian two's complement."""
    if not INT256_MIN <= value <= INT256_MAX:
        raise ValueError(f"int256 out of range: {value}")
    return value.to_bytes(32, "big", signed=True)


def partial_leaf(k: int, value: int) -> bytes:
    """keccak256(uint256 k ++ int256 partial[k])."""
    return keccak256(uint256(k) + int256(value))


def prefix_leaves(partial: Sequence[int]) -> list[bytes]:
    if not partial:
        raise VerificationError("a dot element of length 0 has no prefix sums to commit")
    return [partial_leaf(k, v) for k, v in enumerate(partial)]


def prefix_root(partial: Sequence[int]) -> bytes:
    """The Merkle root over the prefix-sum leaves."""
    return merkle_root(prefix_leaves(partial))


@dataclass(frozen=True)
class PartialOpening:
    """partial[k] and its Merkle path up to the prefix-sum root (calldata: `PartialOpening` in TraceProofs)."""

    k: int
    value: int
    proof: tuple[bytes, ...]

    def as_arg(self) -> tuple[int, int, list[bytes]]:
        return (self.k, self.value, list(self.proof))


def open_partial(partial: Sequence[int], k: int) -> PartialOpening:
    return PartialOpening(k, int(partial[k]), tuple(merkle_proof(prefix_leaves(partial), k)))


def verify_partial(root: bytes, length: int, opening: PartialOpening) -> bool:
    """As ``TraceProofs.verifyPartial`` (which reverts where this returns False for k >= length)."""
    return 0 <= opening.k < length and verify_proof(partial_leaf(opening.k, opening.value), opening.proof, root)


def bisect(mine: Sequence[int], theirs: Sequence[int]) -> int | None:
    """The step k a bisection over two prefix-sum sequences of one element ends on: they agree on partial[k-1]
    (partial[-1] = 0 always agrees) and differ on partial[k]. None when they agree on N = partial[K-1], since
    then there is nothing to dispute. Halving over the sums the parties open: ceil(log2 K) rounds."""
    if len(mine) != len(theirs):
        raise VerificationError("prefix sums of one element have one length")
    if not mine or mine[-1] == theirs[-1]:
        return None
    lo, hi = -1, len(mine) - 1  # INVARIANT: agreed at lo (or before the start), disagreed at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mine[mid] == theirs[mid]:
            lo = mid
        else:
            hi = mid
    return hi
