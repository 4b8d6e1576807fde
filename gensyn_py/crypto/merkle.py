"""Merkle trees compatible with OpenZeppelin's MerkleProof.

Internal nodes hash the sorted pair (commutative keccak256); an odd node at
the end of a level is promoted unchanged. Leaves are given already hashed.
"""

from __future__ import annotations

from collections.abc import Sequence

from gensyn_py.crypto import native_merkle
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.errors import VerificationError


def hash_pair(a: bytes, b: bytes) -> bytes:
    """OpenZeppelin Hashes.commutativeKeccak256."""
    return keccak256(a + b if a < b else b + a)


def _joined(leaves: Sequence[bytes]) -> bytes:
    if not leaves:
        raise VerificationError("a Merkle tree needs at least one leaf")
    if set(map(len, leaves)) != {32}:
        bad = next(len(leaf) for leaf in leaves if len(leaf) != 32)
        raise VerificationError(f"Merkle leaves are 32 bytes, got {bad}")
    return b"".join(leaves)


def _levels(leaves: Sequence[bytes]) -> list[list[bytes]]:
    # The whole tree in one native call (crypto.native_merkle): a tensor's tree is tens of thousands of hashes.
    return native_merkle.levels(_joined(leaves))


def merkle_levels(leaves: Sequence[bytes]) -> list[list[bytes]]:
    """Every level of the tree, leaves first: level h holds the nodes at height h (an odd last node promoted)."""
    return _levels(leaves)


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    return native_merkle.root(_joined(leaves))


def merkle_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """Sibling hashes from leaf `index` up to the root (promoted levels contribute nothing)."""
    return levels_proof(_levels(leaves), index)


def levels_proof(levels: Sequence[Sequence[bytes]], index: int) -> list[bytes]:
    """``merkle_proof`` read from the tree's levels (``merkle_levels``), for a side that opens several leaves."""
    if not 0 <= index < len(levels[0]):
        raise VerificationError(f"leaf index {index} out of range for {len(levels[0])} leaves")
    proof: list[bytes] = []
    for level in levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):
            proof.append(level[sibling])
        index //= 2
    return proof


def process_proof(leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """OpenZeppelin MerkleProof.processProof."""
    node = leaf
    for sibling in proof:
        node = hash_pair(node, sibling)
    return node


def verify_proof(leaf: bytes, proof: Sequence[bytes], root: bytes) -> bool:
    """OpenZeppelin MerkleProof.verify."""
    return process_proof(leaf, proof) == root
