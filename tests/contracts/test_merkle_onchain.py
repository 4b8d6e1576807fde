"""Python-made checkpoint commitments verify in the deployed OpenZeppelin-based harness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gensyn_py.crypto.hashing import keccak256
from gensyn_py.crypto.merkle import merkle_proof, merkle_root
from gensyn_py.proof.commitment import segment_leaf, transcript_commit
from gensyn_py.proof.sampler import segment_for
from gensyn_py.sim.cheats import solve
from tests.unit.trainkit import digits_flat, store_at, tiny_spec


@pytest.fixture(scope="module")
def harness(w3: Any, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    art = artifacts["MerkleProofHarness"]
    factory = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
    acct = accounts[0]
    tx = factory.constructor().build_transaction(
        {"from": acct.address, "nonce": w3.eth.get_transaction_count(acct.address, "pending")}
    )
    receipt = w3.eth.wait_for_transaction_receipt(
        w3.eth.send_raw_transaction(acct.sign_transaction(tx).raw_transaction)
    )
    assert receipt.status == 1
    return w3.eth.contract(address=receipt.contractAddress, abi=art["abi"])


def test_python_unit_commitment_verifies_on_chain(harness: Any, tmp_path: Path) -> None:
    c = solve(tiny_spec(), digits_flat(), store_at(tmp_path), 1, 0, 0)
    m = c.manifest
    for j in range(m.num_segments):
        start, end, commit = m.state_hashes[j], m.state_hashes[j + 1], m.transcript_commits[j]
        assert harness.functions.leaf(j, start, end, commit).call() == segment_leaf(j, start, end, commit)
        assert harness.functions.verifySegment(c.checkpoint_root, j, start, end, commit, m.proof(j)).call()
    wrong = harness.functions.verifySegment(
        c.checkpoint_root, 0, m.state_hashes[1], m.state_hashes[1], m.transcript_commits[0], m.proof(0)
    ).call()
    assert not wrong


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
def test_odd_sized_trees_verify_on_chain(harness: Any, n: int) -> None:
    leaves = [segment_leaf(i, keccak256(b"s%d" % i), keccak256(b"e%d" % i), keccak256(b"t")) for i in range(n)]
    root = merkle_root(leaves)
    for i in range(n):
        args = (root, i, keccak256(b"s%d" % i), keccak256(b"e%d" % i), keccak256(b"t"), merkle_proof(leaves, i))
        assert harness.functions.verifySegment(*args).call()


def test_transcript_commit_and_sampler_match_the_contract(harness: Any) -> None:
    t = keccak256(b"transcript")
    assert harness.functions.transcriptCommit(t).call() == transcript_commit(t)
    seed = keccak256(b"seed")
    for n, count in [(7, 2), (7, 3), (7, 7), (3, 5), (1, 1), (4096, 2), (10, 4)]:
        for i in range(count):
            assert harness.functions.segmentFor(seed, i, n, count).call() == segment_for(seed, i, n, count)
