"""Merkle trees (OpenZeppelin-compatible), the commitment format, and the sampler."""

from __future__ import annotations

import struct

import pytest
from eth_hash.auto import keccak
from hypothesis import given
from hypothesis import strategies as st

from gensyn_py.crypto.merkle import hash_pair, merkle_proof, merkle_root, process_proof, verify_proof
from gensyn_py.errors import VerificationError
from gensyn_py.proof.commitment import segment_leaf, transcript_commit, transcript_hash
from gensyn_py.proof.sampler import segment_for, segments_for


def _leaves(n: int) -> list[bytes]:
    return [keccak(i.to_bytes(32, "big")) for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17])
def test_every_leaf_proves_against_the_root(n: int) -> None:
    leaves = _leaves(n)
    root = merkle_root(leaves)
    for i in range(n):
        assert verify_proof(leaves[i], merkle_proof(leaves, i), root)


def test_small_trees_match_hand_computation() -> None:
    a, b, c = _leaves(3)
    assert merkle_root([a]) == a
    assert merkle_root([a, b]) == keccak(min(a, b) + max(a, b))
    assert merkle_root([a, b, c]) == hash_pair(hash_pair(a, b), c)  # odd node promoted


@given(st.integers(1, 40), st.data())
def test_wrong_leaf_or_proof_fails(n: int, data: st.DataObject) -> None:
    leaves = _leaves(n)
    i = data.draw(st.integers(0, n - 1))
    root = merkle_root(leaves)
    proof = merkle_proof(leaves, i)
    assert not verify_proof(keccak(b"other"), proof, root)
    if proof:
        bad = [*proof[:-1], keccak(b"x")]
        assert not verify_proof(leaves[i], bad, root)


def test_empty_tree_and_bad_index_raise() -> None:
    with pytest.raises(VerificationError):
        merkle_root([])
    with pytest.raises(VerificationError):
        merkle_proof(_leaves(2), 2)
    assert process_proof(_leaves(1)[0], []) == _leaves(1)[0]


def test_transcript_hash_matches_the_documented_byte_layout() -> None:
    end = bytes(range(32))
    losses = [2.5, 1.25, 0.1]
    expected = keccak(
        b"gensyn.transcript.v1" + (3).to_bytes(4, "big") + b"".join(struct.pack("<f", x) for x in losses) + end
    )
    assert transcript_hash(losses, end) == expected
    assert transcript_commit(expected) == keccak(expected)


def test_leaf_is_double_hashed_abi_encoding() -> None:
    s, e, t = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32
    from eth_abi import encode

    inner = keccak(encode(["uint256", "bytes32", "bytes32", "bytes32"], [5, s, e, t]))
    assert segment_leaf(5, s, e, t) == keccak(inner)


def test_sampler_matches_abi_encoding_and_spreads() -> None:
    from eth_abi import encode

    seed = keccak(b"randomness")
    expected = int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, 3])), "big") % 10
    assert segment_for(seed, 3, 10) == expected
    picks = segments_for(seed, 400, 10)
    assert set(picks) == set(range(10))
    with pytest.raises(ValueError):
        segment_for(seed, 0, 0)
