"""A validator answers only for the segment it was drawn for; every sealed verdict is revealed or judged.

Issue 11, attack 2: when fraud was proven, every validator that had accepted lost its whole bond, also one
whose own segment replayed honestly, and validators that had not yet revealed went free; a solver faking one
segment and challenging it from a second address profited and removed honest validators each time.
Each test plays the attack on a real chain and checks that nobody honest loses and no cheater gains.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from tests.contracts.flows import challenge, claim_and_commit, commit_verdicts, committee_votes, reveal
from tests.contracts.helpers import (
    CHALLENGER,
    COMMITTED,
    DISPUTED,
    E18,
    OPEN,
    VALIDATOR,
    VERIFIED,
    Protocol,
    Work,
)
from tests.contracts.test_registry import expect

SEGMENTS = 4  # the default job: 8 steps, a checkpoint every 2


def _faked(faked: set[int], segments: int = SEGMENTS) -> Work:
    """Honest work except the transcripts of the `faked` segments, which are lies."""
    truth = Work.honest(segments)
    return Work([(st, en, keccak(b"fake" + t) if j in faked else t)
                 for j, (st, en, t) in enumerate(truth.segments)])


def _commit_until(p: Protocol, solver: LocalAccount, work: Work, ok: Callable[[list[int]], bool]) -> list[int]:
    """Claim, commit and draw unit 1 until the drawn validators' segments satisfy `ok` (the chain is rolled back
    and the draw taken again from a later block); returns the segments, slot by slot."""
    for _ in range(40):
        snap = p.w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
        claim_and_commit(p, 1, solver, work)
        segs = [p.segment_of(1, i) for i in range(len(p.unit(1)["validators"]))]
        if ok(segs):
            return segs
        p.w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]
        p.mine(1)
    raise AssertionError("no draw with the wanted segments in 40 tries")


def _committee_decides(p: Protocol, did: int, solver_honest: bool) -> None:
    """The committee draws, and every member seals then reveals the same vote."""
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    committee_votes(p, did, {m: solver_honest for m in p.committee.functions.membersOf(did).call()})


def _holdings(p: Protocol, who: str) -> int:
    """Everything `who` owns in the protocol's token: wallet, stake and pool credit."""
    return (p.token.functions.balanceOf(who).call() + p.registry.functions.bondedOf(who).call()
            + p.registry.functions.unbondingOf(who).call()[0] + p.pool.functions.credit(who).call())


@pytest.mark.parametrize("collateral", [200 * E18, 300 * E18])  # the pool's least for this job, and more
def test_a_solver_faking_one_segment_and_challenging_it_itself_gains_nothing_and_costs_the_honest_nothing(
    proto: Protocol, collateral: int
) -> None:
    p = proto
    solver, accomplice = p.accounts[2], p.accounts[9]
    p.node(accomplice, CHALLENGER)  # the solver's second address
    p.submit(p.accounts[1], collateralPerUnit=collateral)
    faked = 3
    work = _faked({faked})
    segs = _commit_until(p, solver, work, lambda s: faked not in s)
    validators = p.unit(1)["validators"]
    before = {who: _holdings(p, who) for who in [*validators, solver.address, accomplice.address]}
    bonded = {v: p.registry.functions.bondedOf(v).call() for v in validators}
    truth = {v: (True, work.segments[segs[i]][2]) for i, v in enumerate(validators)}  # honest replays accept
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, work)
    assert p.unit(1)["status"] == VERIFIED
    challenge(p, accomplice, 1, faked)
    _committee_decides(p, p.unit(1)["disputeId"], solver_honest=False)  # the fake is real: the committee convicts
    p.tx(p.accounts[9], p.committee.functions.resolve(p.unit(1)["disputeId"]))
    p.check_conservation()
    assert p.unit(1)["status"] == OPEN
    fee = p.params["validatorFee"]
    for v in validators:  # they checked honest segments: bond back, not jailed, paid out of the pot if any
        assert not p.registry.functions.isJailed(v).call()
        assert p.registry.functions.reputationOf(v).call()[2] == 0
        assert p.registry.functions.lockedOf(v).call() == 0
        assert p.registry.functions.bondedOf(v).call() == bonded[v]
        # at least the fee (more if the draw also seated it on the committee, which voted with the majority)
        assert _holdings(p, v) >= before[v] + min(fee, collateral // len(validators)), v
    attacker = _holdings(p, solver.address) + _holdings(p, accomplice.address)
    assert attacker <= before[solver.address] + before[accomplice.address]
    if collateral:
        assert attacker < before[solver.address] + before[accomplice.address]  # the committee's share is lost


def test_a_verdict_sealed_on_the_proven_segment_and_kept_hidden_is_slashed(proto: Protocol) -> None:
    p = proto
    solver = p.accounts[2]
    p.submit(p.accounts[1], stepsPerUnit=2, checkpointInterval=2)  # one segment: both validators replay it
    work = _faked({0}, segments=1)
    truth = Work.honest(1)
    segs = _commit_until(p, solver, work, lambda s: len(s) == 2 and s[0] == s[1])
    hider, rejecter = p.unit(1)["validators"]
    stake = p.registry.functions.bondedOf(hider).call()
    commit_verdicts(p, 1, {hider: (True, work.segments[segs[0]][2]),  # colludes: accepts the lie
                           rejecter: (False, truth.segments[segs[1]][2])})
    reveal(p, 1, rejecter, False, truth.segments[segs[1]][2], work)
    assert p.unit(1)["status"] == DISPUTED
    did = p.unit(1)["disputeId"]
    _committee_decides(p, did, solver_honest=False)
    # Every member voted, but the hider could still reveal: the settlement waits for the reveal deadline.
    err = expect(p, "DeadlineNotReached", p.accounts[9], p.committee.functions.resolve(did))
    assert err.error_args["unitId"] == 1
    p.advance(p.params["verdictCommitWindow"] + p.params["revealWindow"] + 1)
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    bond = p.params["validatorBond"]
    assert p.registry.functions.bondedOf(hider).call() == stake - bond  # hiding the accept did not save it
    assert p.registry.functions.bondedOf(rejecter).call() == 1000 * E18
    assert p.registry.functions.lockedOf(hider).call() == 0


def test_every_sealed_verdict_can_still_be_revealed_during_a_dispute(proto: Protocol) -> None:
    p = proto
    solver = p.accounts[2]
    p.submit(p.accounts[1])
    work = _faked(set(range(SEGMENTS)))
    truth = Work.honest(SEGMENTS)
    segs = _commit_until(p, solver, work, lambda s: len(s) == 2 and s[0] != s[1])
    first, second = p.unit(1)["validators"]
    commit_verdicts(p, 1, {first: (False, truth.segments[segs[0]][2]), second: (False, truth.segments[segs[1]][2])})
    reveal(p, 1, first, False, truth.segments[segs[0]][2], work)
    assert p.unit(1)["status"] == DISPUTED
    reveal(p, 1, second, False, truth.segments[segs[1]][2], work)  # a second reject: recorded, no second dispute
    assert p.unit(1)["status"] == DISPUTED
    assert p.unit(1)["revealed"] == 2
    did = p.unit(1)["disputeId"]
    _committee_decides(p, did, solver_honest=False)
    p.tx(p.accounts[9], p.committee.functions.resolve(did))  # nothing hidden: no need to wait
    p.check_conservation()
    for v in (first, second):
        assert p.registry.functions.bondedOf(v).call() == 1000 * E18
        assert p.registry.functions.lockedOf(v).call() == 0
        assert p.registry.functions.reputationOf(v).call()[0] >= 1  # completed


def test_a_unit_nobody_can_validate_is_not_verified_and_waits_for_validators(proto: Protocol) -> None:
    p = proto
    solver = p.accounts[2]
    for v in p.accounts[3:8]:
        p.tx(v, p.registry.functions.leaveValidatorSet())
    p.submit(p.accounts[1])
    claim_and_commit(p, 1, solver, Work.honest(SEGMENTS))
    u = p.unit(1)
    assert u["status"] == COMMITTED and not u["drawn"] and u["validators"] == []
    p.node(p.accounts[9], VALIDATOR)  # a validator arrives, after the seed's base block: not a candidate yet
    p.mine(2)
    rc = p.tx(p.accounts[9], p.pool.functions.drawValidators(1))
    assert p.events(rc, p.pool, "SeedRolled") and not p.unit(1)["drawn"]
    p.mine(2)  # the seed now comes after its entry: it is a candidate of the next draw
    p.tx(p.accounts[9], p.pool.functions.drawValidators(1))
    u = p.unit(1)
    assert u["drawn"] and u["validators"] == [p.accounts[9].address]
    p.check_conservation()


def test_nobody_who_entered_the_set_after_the_commitment_is_drawn(proto: Protocol) -> None:
    """Sybils that join the validator set once a unit is claimed (20 of them, one bond each, in the blocks
    before the draw) are not candidates: the draw's candidate set is frozen at the claim block. When the
    flood makes a draw find nobody (its 8 random picks all land on sybils), the seed moves to a later block
    but the candidates stay frozen, so the flood never becomes eligible."""
    p = proto
    solver = p.accounts[2]
    p.submit(p.accounts[1])
    p.advance(p.params["claimWindow"])
    p.tx(solver, p.pool.functions.claim(1))
    work = Work.honest(SEGMENTS)
    p.tx(solver, p.pool.functions.commit(1, work.root, work.final_hash, "bafymanifest"))
    honest = {a.address for a in p.accounts[3:8]}
    deployer = p.deployer
    for _ in range(20):  # fresh keys, each given gas and bonding the minimum: all in the set
        sybil = Account.create()
        tx = {"to": sybil.address, "value": 10**19, "gas": 21000, "gasPrice": p.w3.eth.gas_price,
              "nonce": p.w3.eth.get_transaction_count(deployer.address), "chainId": p.w3.eth.chain_id}
        p.w3.eth.wait_for_transaction_receipt(
            p.w3.eth.send_raw_transaction(deployer.sign_transaction(tx).raw_transaction))
        p.node(sybil, VALIDATOR, stake=p.params["validatorBond"])
    assert p.registry.functions.validatorCount(1).call() == len(honest) + 20  # 4 in 5 of the set are sybils
    for _ in range(20):
        p.mine(2)
        p.tx(p.accounts[9], p.pool.functions.drawValidators(1))
        if p.unit(1)["drawn"]:
            break
    drawn = set(p.unit(1)["validators"])
    assert drawn and drawn <= honest
    p.check_conservation()


def test_a_reopened_unit_keeps_nothing_of_the_previous_attempt(proto: Protocol) -> None:
    p = proto
    solver = p.accounts[2]
    p.submit(p.accounts[1])
    work = _faked(set(range(SEGMENTS)))
    truth = Work.honest(SEGMENTS)
    segs = _commit_until(p, solver, work, lambda s: len(s) == 2)
    first = p.unit(1)["validators"][0]
    commit_verdicts(p, 1, {first: (False, truth.segments[segs[0]][2])})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, 1, first, False, truth.segments[segs[0]][2], work)
    did = p.unit(1)["disputeId"]
    _committee_decides(p, did, solver_honest=False)
    p.advance(p.params["revealWindow"] + 1)
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    u = p.unit(1)
    assert u["status"] == OPEN
    assert u["checkpointRoot"] == b"\x00" * 32 and u["seed"] == b"\x00" * 32
