"""Multi-step protocol plays used by several tests (each checks conservation after every step)."""

from __future__ import annotations

from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from tests.contracts.helpers import COMMITTED, E18, Protocol, Work


def claim_and_commit(p: Protocol, unit_id: int, solver: LocalAccount, work: Work) -> None:
    p.advance(p.params["claimWindow"])  # the required score has decayed to 0
    p.tx(solver, p.pool.functions.claim(unit_id))
    p.check_conservation()
    p.tx(solver, p.pool.functions.commit(unit_id, work.root, work.final_hash, "bafymanifest"))
    p.check_conservation()
    p.mine(2)
    p.tx(p.accounts[9], p.pool.functions.drawValidators(unit_id))
    p.check_conservation()


def commit_verdicts(p: Protocol, unit_id: int, verdicts: dict[str, tuple[bool, bytes]]) -> None:
    """verdicts: validator address -> (accept, transcriptHash)."""
    for addr, (accept, th) in verdicts.items():
        salt = keccak(b"salt" + bytes.fromhex(addr[2:]))
        h = p.verdict_hash(unit_id, addr, accept, th, salt)
        p.tx(p.by_address(addr), p.pool.functions.commitVerdict(unit_id, h))
        p.check_conservation()


def reveal(p: Protocol, unit_id: int, addr: str, accept: bool, th: bytes, work: Work) -> None:
    validators = p.unit(unit_id)["validators"]
    seg = p.segment_of(unit_id, validators.index(addr))
    start, end, committed_transcript = work.segments[seg]
    salt = keccak(b"salt" + bytes.fromhex(addr[2:]))
    from tests.contracts.helpers import transcript_commit

    p.tx(
        p.by_address(addr),
        p.pool.functions.revealVerdict(
            unit_id, accept, th, salt, start, end, transcript_commit(committed_transcript), work.proof(seg)
        ),
    )
    p.check_conservation()


def honest_unit(p: Protocol, unit_id: int, solver: LocalAccount, work: Work) -> None:
    claim_and_commit(p, unit_id, solver, work)
    assert p.unit(unit_id)["status"] == COMMITTED
    validators = p.unit(unit_id)["validators"]
    truth = {v: (True, work.segments[p.segment_of(unit_id, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, unit_id, truth)
    for v, (acc, th) in truth.items():
        reveal(p, unit_id, v, acc, th, work)
    p.advance(p.params["challengeWindow"] + 1)
    p.tx(p.accounts[9], p.pool.functions.finalize(unit_id))
    p.check_conservation()


def vote_salt(dispute_id: int, member: str) -> bytes:
    return keccak(b"vote" + bytes.fromhex(member[2:]) + dispute_id.to_bytes(32, "big"))


def seal_votes(p: Protocol, dispute_id: int, votes: dict[str, bool]) -> None:
    """Each member seals its vote (solverHonest) for the committee's current round."""
    for m, honest in votes.items():
        h = p.vote_hash(dispute_id, m, honest, vote_salt(dispute_id, m))
        p.tx(p.by_address(m), p.committee.functions.commitVote(dispute_id, h))
        p.check_conservation()


def reveal_votes(p: Protocol, dispute_id: int, votes: dict[str, bool]) -> None:
    """Reveal sealed votes; first waits out the commit phase if some member of the round did not seal."""
    d = p.dispute(dispute_id)
    if d["committed"] < len(d["members"]) - d["roundFirst"] and p.now() <= d["commitDeadline"]:
        p.advance(d["commitDeadline"] - p.now() + 1)
    for m, honest in votes.items():
        p.tx(p.by_address(m), p.committee.functions.revealVote(dispute_id, honest, vote_salt(dispute_id, m)))
        p.check_conservation()


def committee_votes(p: Protocol, dispute_id: int, votes: dict[str, bool]) -> None:
    """Seal then reveal `votes` (member -> solverHonest)."""
    seal_votes(p, dispute_id, votes)
    reveal_votes(p, dispute_id, votes)


def challenge(p: Protocol, challenger: LocalAccount, unit_id: int, segment: int, salt: bytes = b"\x07" * 32) -> object:
    """Seal, then reveal (next block), `challenger`'s challenge of `segment`; returns the reveal's receipt."""
    from gensyn_py.chain.pool import challenge_hash

    p.tx(challenger, p.pool.functions.commitChallenge(unit_id, challenge_hash(unit_id, challenger.address, segment,
                                                                              salt)))
    p.mine(1)  # a reveal is checked in a block after its seal's (the static call runs on the latest block)
    return p.tx(challenger, p.pool.functions.challenge(unit_id, segment, salt))


def rejected_unit(p: Protocol, unit_id: int = 1) -> tuple[int, str]:
    """Honest solver, the unit's validator 0 wrongly rejects: returns (disputeId, rejecting validator)."""
    p.submit(p.accounts[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
    w = Work.honest(4)
    claim_and_commit(p, unit_id, p.accounts[2], w)
    va = p.unit(unit_id)["validators"][0]
    commit_verdicts(p, unit_id, {va: (False, keccak(b"wrong"))})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, unit_id, va, False, keccak(b"wrong"), w)
    return p.unit(unit_id)["disputeId"], va
