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
from gensyn_py.proof.sampler import min_collateral, segment_for, segments_for


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
    author = bytes(range(100, 120))
    expected = keccak(
        b"gensyn.transcript.v2" + author + (3).to_bytes(4, "big") + b"".join(struct.pack("<f", x) for x in losses)
        + end
    )
    assert transcript_hash(losses, end, author) == expected
    assert transcript_hash(losses, end, "0x" + author.hex()) == expected
    assert transcript_commit(expected) == keccak(expected)
    # The solver's address is part of it: the same losses under another address are another transcript.
    assert transcript_hash(losses, end, b"\x01" * 20) != expected
    assert transcript_hash(losses, end) == transcript_hash(losses, end, b"\x00" * 20)


def test_leaf_is_double_hashed_abi_encoding() -> None:
    s, e, t = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32
    from eth_abi import encode

    inner = keccak(encode(["uint256", "bytes32", "bytes32", "bytes32"], [5, s, e, t]))
    assert segment_leaf(5, s, e, t) == keccak(inner)


def test_sampler_matches_abi_encoding() -> None:
    from eth_abi import encode

    seed = keccak(b"randomness")
    offset = int.from_bytes(keccak(encode(["bytes32"], [seed])), "big") % 10
    pick = int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, 3])), "big")
    lo, width = 3 * 10 // 4, 4 * 10 // 4 - 3 * 10 // 4  # slot 3 of 4: stratum [7, 10)
    assert segment_for(seed, 3, 10, 4) == (offset + lo + pick % width) % 10
    assert segments_for(seed, 12, 10) == [(offset + i) % 10 for i in range(12)]  # more slots than segments
    with pytest.raises(ValueError):
        segment_for(seed, 0, 0, 1)


@given(st.binary(min_size=32, max_size=32), st.integers(1, 64), st.integers(1, 64))
def test_sampler_picks_distinct_segments_in_range(seed: bytes, n: int, count: int) -> None:
    picks = segments_for(seed, count, n)
    assert all(0 <= j < n for j in picks)
    assert len(set(picks)) == min(count, n)


def test_sampler_checks_every_segment_with_probability_count_over_n() -> None:
    n, count, trials = 7, 3, 7000
    hits = [0] * n
    for t in range(trials):
        for j in segments_for(keccak(b"seed%d" % t), count, n):
            hits[j] += 1
    expected = trials * count / n  # 3000; binomial sd ~ 41
    assert all(abs(h - expected) < 200 for h in hits), hits


def test_min_collateral_makes_faking_one_segment_unprofitable() -> None:
    for price, n, v in [(10, 4, 2), (10, 30, 2), (7, 5, 3), (1, 4096, 2), (10, 2, 5)]:
        c = min_collateral(price, n, v)
        m = min(v, n)
        assert c * m >= price * (n - m)  # caught with probability m / n: EV = price (n - m) / n - c m / n <= 0
        assert c == 0 or (c - 1) * m < price * (n - m)  # and it is the least such
