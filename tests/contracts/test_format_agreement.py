"""The Python proof package and TaskPool agree on leaves, sampling and Merkle proofs."""

from __future__ import annotations

from gensyn_py.crypto.merkle import merkle_proof, merkle_root
from gensyn_py.proof.commitment import segment_leaf, transcript_commit
from gensyn_py.proof.sampler import segment_for
from tests.contracts.flows import claim_and_commit, commit_verdicts
from tests.contracts.helpers import VERIFIED, Protocol, Work


def test_python_commitments_verify_in_task_pool(proto: Protocol) -> None:
    p = proto
    p.submit(p.accounts[1], stepsPerUnit=10, checkpointInterval=2)  # 5 segments: an odd tree
    w = Work.honest(5)
    leaves = [segment_leaf(j, s, e, transcript_commit(t)) for j, (s, e, t) in enumerate(w.segments)]
    assert merkle_root(leaves) == w.root
    claim_and_commit(p, 1, p.accounts[2], w)
    unit = p.unit(1)
    segs = [segment_for(unit["seed"], i, 5, len(unit["validators"])) for i in range(len(unit["validators"]))]
    assert segs == [p.segment_of(1, i) for i in range(len(segs))]
    verdicts = {v: (True, w.segments[segs[i]][2]) for i, v in enumerate(unit["validators"])}
    commit_verdicts(p, 1, verdicts)
    from eth_utils import keccak

    for i, v in enumerate(unit["validators"]):
        s, e, t = w.segments[segs[i]]
        salt = keccak(b"salt" + bytes.fromhex(v[2:]))
        p.tx(
            p.by_address(v),
            p.pool.functions.revealVerdict(1, True, t, salt, s, e, transcript_commit(t), merkle_proof(leaves, segs[i])),
        )
    assert p.unit(1)["status"] == VERIFIED
    p.check_conservation()
