"""DisputeCommittee: opening, drawing, voting, resolving, and the no-quorum default."""

from __future__ import annotations

from eth_utils import keccak

from tests.contracts.flows import claim_and_commit, commit_verdicts, reveal
from tests.contracts.helpers import E18, OPEN, Protocol, Work
from tests.contracts.test_registry import expect


def _rejected_unit(p: Protocol) -> tuple[int, str]:
    """Honest solver, validator 0 wrongly rejects: returns (disputeId, rejecting validator)."""
    p.submit(p.accounts[1])
    w = Work.honest(4)
    claim_and_commit(p, 1, p.accounts[2], w)
    va = p.unit(1)["validators"][0]
    commit_verdicts(p, 1, {va: (False, keccak(b"wrong"))})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, 1, va, False, keccak(b"wrong"), w)
    return p.unit(1)["disputeId"], va


def test_only_the_task_pool_opens_disputes(proto: Protocol) -> None:
    p = proto
    a = p.accounts[9]
    err = expect(p, "NotTaskPool", a, p.committee.functions.openDispute(1, 1, a.address, a.address))
    assert err.error_args["caller"] == a.address
    expect(p, "UnknownDispute", a, p.committee.functions.resolve(7))
    expect(p, "UnknownDispute", a, p.committee.functions.vote(7, True))


def test_vote_guards_and_wrong_rejecter_is_slashed(proto: Protocol) -> None:
    p = proto
    did, va = _rejected_unit(p)
    expect(p, "TooEarly", p.accounts[9], p.committee.functions.drawCommittee(did))
    expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    members = p.committee.functions.membersOf(did).call()
    assert va not in members and p.accounts[2].address not in members
    expect(p, "NotCommitteeMember", p.by_address(va), p.committee.functions.vote(did, True))
    p.tx(p.by_address(members[0]), p.committee.functions.vote(did, True))
    expect(p, "AlreadyVoted", p.by_address(members[0]), p.committee.functions.vote(did, True))
    expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
    p.tx(p.by_address(members[1]), p.committee.functions.vote(did, True))
    p.tx(p.by_address(members[2]), p.committee.functions.vote(did, False))
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    expect(p, "DisputeClosed", p.accounts[9], p.committee.functions.resolve(did))
    bond = p.params["validatorBond"]
    assert p.registry.functions.bondedOf(va).call() == 1000 * E18 - bond
    assert not p.registry.functions.isJailed(p.accounts[2].address).call()
    assert p.registry.functions.bondedOf(p.accounts[2].address).call() == 1000 * E18
    share = bond * p.params["committeeRewardBps"] // 10_000 // 2
    assert p.pool.functions.credit(members[0]).call() == share
    assert p.pool.functions.credit(members[2]).call() == 0  # voted with the minority
    assert p.pool.functions.credit(p.accounts[2].address).call() == 100 * E18 + bond - 2 * share
    assert p.unit(1)["status"] == 6  # Final: honest work is paid


def test_no_quorum_reopens_the_unit_and_slashes_nobody_who_did_its_part(proto: Protocol) -> None:
    p = proto
    did, va = _rejected_unit(p)
    drawn = list(p.unit(1)["validators"])
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    members = p.committee.functions.membersOf(did).call()
    p.tx(p.by_address(members[0]), p.committee.functions.vote(did, False))
    p.advance(p.params["votingPeriod"] + 1)
    expect(p, "VotingClosed", p.by_address(members[1]), p.committee.functions.vote(did, True))
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    assert p.unit(1)["status"] == OPEN
    # The drawn validator that never sealed a verdict pays the no-show penalty, as when verdicts close
    # without a dispute; nobody else loses anything.
    silent = [v for v in drawn if v != va]
    penalty = p.params["validatorBond"] * p.params["livenessPenaltyBps"] // 10_000
    for a in p.accounts[2:8]:
        expected = 1000 * E18 - (penalty if a.address in silent else 0)
        assert p.registry.functions.bondedOf(a.address).call() == expected, a.address
        assert p.registry.functions.lockedOf(a.address).call() == 0
    # a silent member is marked missed (twice if it was also the unit's silent validator)
    assert p.registry.functions.reputationOf(members[1]).call()[1] == 1 + (members[1] in silent)


def test_committee_is_full_whenever_enough_eligible_validators_exist(proto: Protocol) -> None:
    """Five validators, one without stake, one the opener: exactly three can sit, and all three must.

    Twelve random picks among five collide often enough (about one draw in five here) to leave a seat empty;
    the draw must still seat every eligible validator it needs."""
    p = proto
    idle = p.accounts[7]
    p.tx(idle, p.registry.functions.unbond(p.registry.functions.bondedOf(idle.address).call()))
    w = Work.honest(4)
    for _ in range(8):
        unit_id = p.pool.functions.nextUnitId().call()
        # the solver's stake covers all eight; the price keeps the collateral above the pool's minimum
        p.submit(p.accounts[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
        claim_and_commit(p, unit_id, p.accounts[2], w)
        opener = p.unit(unit_id)["validators"][0]
        commit_verdicts(p, unit_id, {opener: (False, keccak(b"wrong"))})
        p.advance(p.params["verdictCommitWindow"] + 1)
        reveal(p, unit_id, opener, False, keccak(b"wrong"), w)
        did = p.unit(unit_id)["disputeId"]
        p.mine(2)
        p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
        members = p.committee.functions.membersOf(did).call()
        assert len(members) == 3 and len(set(members)) == 3
        assert opener not in members and idle.address not in members and p.accounts[2].address not in members
