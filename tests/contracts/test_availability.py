"""Data availability (issue 11, attacks 4 and 9): withheld data can be rejected and does not pay.

A reject needs the solver's Merkle proof, so a solver committing a root with nothing published behind it could
not be rejected: the validators were fined as no-shows and the unit verified on zero accepts. Now a validator
reveals a sealed "unavailable" (a reject whose transcriptHash is `UNAVAILABLE_MARK`), and the requester of a
Verified unit can claim its model is missing; the solver answers with its leaves within the reveal window or
is slashed as for fraud. Each test plays it on a real chain and checks that nobody honest loses and no cheater
gains (money conserved after every step).
"""

from __future__ import annotations

from typing import Any

import pytest
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from gensyn_py.chain.pool import challenge_hash, encode_answer
from gensyn_py.types import (
    REQUESTER_SLOT,
    UNAVAILABLE_MARK,
    VERDICT_ANSWERED,
    VERDICT_UNAVAILABLE,
    SegmentLeaf,
)
from tests.contracts.flows import claim_and_commit, commit_verdicts, reveal
from tests.contracts.helpers import CHALLENGER, COMMITTED, FINAL, OPEN, VERIFIED, Protocol, Work, transcript_commit
from tests.contracts.test_fair_slashing import _holdings
from tests.contracts.test_registry import expect

SEGMENTS = 4  # the default job: 8 steps, a checkpoint every 2
ZERO = bytes(32)


def _salt(addr: str) -> bytes:
    return keccak(b"salt" + bytes.fromhex(addr[2:]))  # as flows.commit_verdicts seals


def _leaf(work: Work, j: int) -> SegmentLeaf:
    start, end, th = work.segments[j]
    return SegmentLeaf(j, start, end, transcript_commit(th), tuple(work.proof(j)))


def _answer(p: Protocol, unit_id: int, slot: int, work: Work, seg: int | None = None) -> Any:
    """The solver answers slot `slot` (its segment's leaf, or `seg`) with the last segment's leaf too."""
    j = (SEGMENTS - 1 if slot == REQUESTER_SLOT else p.segment_of(unit_id, slot)) if seg is None else seg
    data = encode_answer(_leaf(work, j), _leaf(work, SEGMENTS - 1), '{"manifest": "bafymanifest"}')
    return p.pool.functions.answerUnavailable(unit_id, slot, data)


def _report(p: Protocol, unit_id: int, addr: str) -> Any:
    rc = p.tx(p.by_address(addr), p.pool.functions.revealVerdict(unit_id, False, UNAVAILABLE_MARK, _salt(addr),
                                                                  ZERO, ZERO, ZERO, []))
    p.check_conservation()
    return rc


def _start(p: Protocol, work: Work) -> tuple[LocalAccount, list[str]]:
    solver = p.accounts[2]
    p.submit(p.accounts[1])
    claim_and_commit(p, 1, solver, work)
    assert p.unit(1)["status"] == COMMITTED
    return solver, list(p.unit(1)["validators"])


def _truth(p: Protocol, work: Work, slot: int) -> bytes:
    return work.segments[p.segment_of(1, slot)][2]


def _snapshot(p: Protocol, who: list[str]) -> dict[str, int]:
    return {w: _holdings(p, w) for w in who}


def test_attack_4_withheld_data_is_reported_and_the_unanswering_solver_is_slashed(proto: Protocol) -> None:
    p = proto
    work = Work.honest(SEGMENTS)  # the root commits to this, but nothing is ever published
    solver, validators = _start(p, work)
    requester = p.accounts[1].address
    escrow = p.pool.functions.totalEscrow().call()
    bonded = {v: p.registry.functions.bondedOf(v).call() for v in validators}
    before = _snapshot(p, [*validators, solver.address, requester])
    commit_verdicts(p, 1, {v: (False, UNAVAILABLE_MARK) for v in validators})  # sealed: nobody sees the report
    for v in validators:
        rc = _report(p, 1, v)
        (ev,) = p.events(rc, p.pool, "UnavailabilityReported")
        assert ev["args"]["validator"] == v
    assert [p.pool.functions.verdictState(1, i).call() for i in range(2)] == [VERDICT_UNAVAILABLE] * 2
    answer_by = p.pool.functions.availability(1).call()[0]
    # INVARIANT under test: nothing verifies while a report is pending (no Verified on zero accepts).
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.closeVerdicts(1))
    p.advance(max(answer_by, p.unit(1)["revealDeadline"]) - p.now() + 1)
    expect(p, "DeadlinePassed", solver, _answer(p, 1, 0, work))  # too late to answer
    rc = p.tx(p.accounts[9], p.pool.functions.closeVerdicts(1))
    p.check_conservation()
    collateral = 300 * 10**18
    (withheld,) = p.events(rc, p.pool, "DataWithheld")
    assert withheld["args"]["slashed"] == collateral
    assert not p.events(rc, p.pool, "ValidatorNoShow")  # the reporters are not fined
    u = p.unit(1)
    assert u["status"] == OPEN and u["solver"] == "0x" + "00" * 20
    assert p.pool.functions.totalEscrow().call() == escrow  # the requester's escrow waits for another solver
    assert p.registry.functions.isJailed(solver.address).call()
    for v in validators:  # bond back, paid like a correct rejecter: the slashed collateral is theirs
        assert p.registry.functions.lockedOf(v).call() == 0
        assert p.registry.functions.bondedOf(v).call() == bonded[v]
        assert _holdings(p, v) == before[v] + collateral // 2
    assert _holdings(p, solver.address) == before[solver.address] - collateral
    assert _holdings(p, requester) == before[requester]


def test_an_honest_solver_answers_in_time_and_the_unit_verifies_and_finalizes(proto: Protocol) -> None:
    p = proto
    work = Work.honest(SEGMENTS)
    solver, validators = _start(p, work)
    before = _snapshot(p, [*validators, solver.address])
    commit_verdicts(p, 1, {v: (False, UNAVAILABLE_MARK) for v in validators})  # they could not fetch in time
    for v in validators:
        _report(p, 1, v)
    p.advance(p.pool.functions.availability(1).call()[0] - p.now() - 5)  # the solver answers late but in time
    for slot in range(2):
        rc = p.tx(solver, _answer(p, 1, slot, work))
        p.check_conservation()
        (ev,) = p.events(rc, p.pool, "UnavailabilityAnswered")
        assert ev["args"]["segment"] == p.segment_of(1, slot)
        assert ev["args"]["startHash"] == work.segments[p.segment_of(1, slot)][0]
        assert ev["args"]["finalHash"] == work.final_hash
        assert p.pool.functions.verdictState(1, slot).call() == VERDICT_ANSWERED
    expect(p, "NotReported", solver, _answer(p, 1, 0, work))  # answered once
    # the answered reporters have a fresh reveal deadline, never before the panel's
    assert p.pool.functions.availability(1).call()[1] >= max(p.now(), p.unit(1)["revealDeadline"])
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.closeVerdicts(1))
    for slot, v in enumerate(validators):  # they fetched, replayed, and reveal their real verdicts
        reveal(p, 1, v, True, _truth(p, work, slot), work)
    assert p.unit(1)["status"] == VERIFIED
    p.advance(p.params["challengeWindow"] + 1)
    p.tx(p.accounts[9], p.pool.functions.finalize(1))
    p.check_conservation()
    assert p.unit(1)["status"] == FINAL
    fee, price = p.params["validatorFee"], 100 * 10**18
    for v in validators:
        assert _holdings(p, v) == before[v] + fee
    assert _holdings(p, solver.address) == before[solver.address] + price
    assert not p.registry.functions.isJailed(solver.address).call()


def test_answers_that_prove_nothing_revert_with_decoded_errors(proto: Protocol) -> None:
    p = proto
    work = Work.honest(SEGMENTS)
    solver, validators = _start(p, work)
    commit_verdicts(p, 1, {validators[0]: (False, UNAVAILABLE_MARK), validators[1]: (True, _truth(p, work, 1))})
    expect(p, "NotReported", solver, _answer(p, 1, 0, work))  # nothing reported yet
    _report(p, 1, validators[0])
    seg = p.segment_of(1, 0)
    forged = Work.honest(SEGMENTS, tag=b"forged")  # leaves of another root
    data = encode_answer(_leaf(forged, seg), _leaf(work, SEGMENTS - 1), "")
    err = expect(p, "InvalidSegmentProof", solver, p.pool.functions.answerUnavailable(1, 0, data))
    assert err.error_args["segmentIndex"] == seg
    data = encode_answer(_leaf(work, seg), _leaf(forged, SEGMENTS - 1), "")  # the model's leaf is forged
    expect(p, "InvalidSegmentProof", solver, p.pool.functions.answerUnavailable(1, 0, data))
    expect(p, "BadSegment", solver, _answer(p, 1, 0, work, seg=(seg + 1) % SEGMENTS))  # another segment
    expect(p, "NotReported", solver, _answer(p, 1, 1, work))  # slot 1 did not report
    expect(p, "NotSolver", p.accounts[9], _answer(p, 1, 0, work))
    expect(p, "NotReported", solver, _answer(p, 1, REQUESTER_SLOT, work))  # no requester claim
    p.tx(solver, _answer(p, 1, 0, work))  # the true answer goes through
    p.check_conservation()


def _verified(p: Protocol, work: Work) -> tuple[LocalAccount, list[str]]:
    solver, validators = _start(p, work)
    truth = {v: (True, _truth(p, work, i)) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, work)
    assert p.unit(1)["status"] == VERIFIED
    return solver, validators


def test_requester_claim_unanswered_slashes_the_solver_and_makes_the_requester_whole(proto: Protocol) -> None:
    p = proto
    work = Work.honest(SEGMENTS)
    solver, validators = _verified(p, work)  # replay fetched the segments' start checkpoints, not the model
    requester = p.accounts[1]
    escrow = p.pool.functions.totalEscrow().call()
    before = _snapshot(p, [*validators, solver.address, requester.address])
    expect(p, "NotRequester", p.accounts[9], p.pool.functions.claimUnavailable(1))
    rc = p.tx(requester, p.pool.functions.claimUnavailable(1))
    p.check_conservation()
    (ev,) = p.events(rc, p.pool, "UnavailabilityClaimed")
    expect(p, "AlreadyClaimed", requester, p.pool.functions.claimUnavailable(1))
    p.node(p.accounts[9], CHALLENGER)  # an accomplice's dispute cannot cut the claim short
    salt = b"\x09" * 32
    p.tx(p.accounts[9], p.pool.functions.commitChallenge(1, challenge_hash(1, p.accounts[9].address, 0, salt)))
    p.mine(1)  # the reveal is checked in a later block than its seal
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.challenge(1, 0, salt))
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.closeVerdicts(1))
    p.advance(p.params["challengeWindow"] + 1)
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.finalize(1))  # the claim holds the payout
    p.advance(ev["args"]["answerBy"] - p.now() + 1)
    rc = p.tx(p.accounts[9], p.pool.functions.closeVerdicts(1))
    p.check_conservation()
    collateral, fee = 300 * 10**18, p.params["validatorFee"]
    assert p.events(rc, p.pool, "DataWithheld")[0]["args"]["slashed"] == collateral
    assert p.unit(1)["status"] == OPEN
    assert p.pool.functions.totalEscrow().call() == escrow  # the unit's price waits for an honest solver
    for v in validators:  # they replayed honestly: bond back and their fee out of the pot
        assert _holdings(p, v) == before[v] + fee
        assert p.registry.functions.lockedOf(v).call() == 0
    assert _holdings(p, requester.address) == before[requester.address] + collateral - 2 * fee
    assert _holdings(p, solver.address) == before[solver.address] - collateral


def test_requester_claim_answered_lets_the_unit_finalize(proto: Protocol) -> None:
    p = proto
    work = Work.honest(SEGMENTS)
    solver, validators = _verified(p, work)
    requester = p.accounts[1]
    before = _snapshot(p, [*validators, solver.address, requester.address])
    p.tx(requester, p.pool.functions.claimUnavailable(1))
    expect(p, "BadSegment", solver, _answer(p, 1, REQUESTER_SLOT, work, seg=0))  # the model's leaf is wanted
    rc = p.tx(solver, _answer(p, 1, REQUESTER_SLOT, work))
    p.check_conservation()
    (ev,) = p.events(rc, p.pool, "UnavailabilityAnswered")
    assert ev["args"]["finalHash"] == work.final_hash and p.unit(1)["deadline"] == ev["args"]["revealBy"]
    p.advance(ev["args"]["revealBy"] - p.now() + 1)
    p.tx(p.accounts[9], p.pool.functions.finalize(1))
    p.check_conservation()
    assert p.unit(1)["status"] == FINAL
    assert _holdings(p, solver.address) == before[solver.address] + 100 * 10**18
    assert _holdings(p, requester.address) == before[requester.address] + (200 - 100) * 10**18  # unspent price


@pytest.mark.parametrize("reveals", [True, False], ids=["reveals-after-answer", "never-reveals"])
def test_a_false_report_costs_the_honest_solver_nothing_and_earns_the_reporter_nothing_extra(
    proto: Protocol, reveals: bool
) -> None:
    p = proto
    work = Work.honest(SEGMENTS)
    solver, validators = _start(p, work)
    liar, honest = validators
    before = _snapshot(p, [*validators, solver.address])
    commit_verdicts(p, 1, {liar: (False, UNAVAILABLE_MARK), honest: (True, _truth(p, work, 1))})
    _report(p, 1, liar)  # the data was there
    reveal(p, 1, honest, True, _truth(p, work, 1), work)
    assert p.unit(1)["status"] == COMMITTED  # the report holds verification
    p.tx(solver, _answer(p, 1, 0, work))
    p.check_conservation()
    fee, price = p.params["validatorFee"], 100 * 10**18
    if reveals:
        reveal(p, 1, liar, True, _truth(p, work, 0), work)
        assert p.unit(1)["status"] == VERIFIED
    else:
        reveal_by = p.pool.functions.availability(1).call()[1]
        p.advance(max(reveal_by, p.unit(1)["revealDeadline"]) - p.now() + 1)
        expect(p, "DeadlinePassed", p.by_address(liar),
               p.pool.functions.revealVerdict(1, True, _truth(p, work, 0), ZERO, *work.segments[p.segment_of(1, 0)][:2],
                                              transcript_commit(_truth(p, work, 0)), work.proof(p.segment_of(1, 0))))
        rc = p.tx(p.accounts[9], p.pool.functions.closeVerdicts(1))
        p.check_conservation()
        (noshow,) = p.events(rc, p.pool, "ValidatorNoShow")
        assert noshow["args"]["validator"] == liar and noshow["args"]["penalty"] > 0
    p.advance(p.params["challengeWindow"] + 1)
    p.tx(p.accounts[9], p.pool.functions.finalize(1))
    p.check_conservation()
    assert p.unit(1)["status"] == FINAL
    assert _holdings(p, solver.address) == before[solver.address] + price  # the honest solver lost nothing
    assert _holdings(p, honest) == before[honest] + fee
    assert _holdings(p, liar) <= before[liar] + fee  # at most its normal fee, and a fine if it never replays
    if not reveals:
        assert _holdings(p, liar) < before[liar]

