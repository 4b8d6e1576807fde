"""Pipelined rounds (issue 15): a phase opens for claims once the previous one is Committed and is armed (its units
commit) once that one is Verified, units are paid phase by phase, and overturning a unit voids the work built on
it, so nobody is paid for work built on a fraud.

A job's phases: round 0's training units, round 0's aggregation unit, round 1's training units, ... Each play
runs on a pool whose challenge window (1 hour) outlasts a claim, so a later phase trains while an earlier one
can still be challenged; every step checks the pool's token conservation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from tests.contracts.flows import challenge, claim_and_commit, commit_verdicts, committee_votes, reveal
from tests.contracts.helpers import DISPUTED, E18, FINAL, OPEN, SOLVER, VERIFIED, Protocol, Work
from tests.contracts.test_registry import expect

VOIDED = 8
PRICE = COLLATERAL = 100 * E18  # a solver's 1,000 staked holds ten units at once
JOB_COMMIT_WINDOW = 60
JOB = {"maxPricePerUnit": PRICE, "collateralPerUnit": COLLATERAL, "commitWindow": JOB_COMMIT_WINDOW}


@pytest.fixture(scope="module")
def pipe_base(w3: Any, accounts: Any, artifacts: Any) -> Protocol:
    # A short claim auction: a phase opened early is claimed well inside its inputs' verdict windows.
    p = Protocol(w3, accounts, artifacts, {"challengeWindow": 3600, "claimWindow": 4, "unbondingDelay": 10_000})
    p.standard_cast()
    return p


@pytest.fixture
def pipe(pipe_base: Protocol) -> Iterator[Protocol]:
    snap = pipe_base.w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    yield pipe_base
    pipe_base.w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]


def _solver(p: Protocol) -> LocalAccount:
    """A fresh, funded, staked solver."""
    acct: LocalAccount = Account.create()
    d = p.deployer
    tx = {"to": acct.address, "value": 10**19, "gas": 21000, "gasPrice": p.w3.eth.gas_price,
          "nonce": p.w3.eth.get_transaction_count(d.address), "chainId": p.w3.eth.chain_id}
    p.w3.eth.wait_for_transaction_receipt(p.w3.eth.send_raw_transaction(d.sign_transaction(tx).raw_transaction))
    p.node(acct, SOLVER)
    return acct


def _accepted(p: Protocol, unit_id: int, work: Work) -> None:
    """Every drawn validator of committed unit `unit_id` seals and reveals an accept of `work`."""
    validators = p.unit(unit_id)["validators"]
    truth = {v: (True, work.segments[p.segment_of(unit_id, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, unit_id, truth)
    for v, (acc, th) in truth.items():
        reveal(p, unit_id, v, acc, th, work)


def _verified(p: Protocol, unit_id: int, solver: LocalAccount, work: Work, said: Work | None = None) -> None:
    """Claim, commit `work` and have every drawn validator accept it (with `said`'s transcripts: colluders
    accepting a fake know its fake preimages)."""
    claim_and_commit(p, unit_id, solver, work)
    said = said or work
    validators = p.unit(unit_id)["validators"]
    truth = {v: (True, said.segments[p.segment_of(unit_id, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, unit_id, truth)
    for v, (acc, th) in truth.items():
        reveal(p, unit_id, v, acc, th, work)
    assert p.unit(unit_id)["status"] == VERIFIED


def _finalize(p: Protocol, *unit_ids: int) -> None:
    for u in unit_ids:
        wait = p.unit(u)["deadline"] - p.now() + 1
        if wait > 0:
            p.advance(wait)
        p.tx(p.accounts[9], p.pool.functions.finalize(u))
        p.check_conservation()
        assert p.unit(u)["status"] == FINAL


def _phase_state(p: Protocol, job: int) -> tuple[int, int, int]:
    return tuple(p.pool.functions.phaseState(job).call())  # type: ignore[return-value]


def _bonded(p: Protocol, who: list[str]) -> dict[str, int]:
    return {a: p.registry.functions.bondedOf(a).call() for a in who}


def test_the_next_phase_opens_on_verified_and_units_are_paid_phase_by_phase(pipe: Protocol) -> None:
    p = pipe
    solver = p.accounts[2]
    everyone = [a.address for a in p.accounts[2:9]]
    before = _bonded(p, everyone)
    job = p.submit(p.accounts[1], rounds=2, shards=2, **JOB)
    work, agg = Work.honest(4), Work.honest(1, b"agg")
    _verified(p, 1, solver, work)
    assert p.pool.functions.nextUnitId().call() == 3  # one unit of the phase is still unverified
    _verified(p, 2, solver, work)
    # Round 0's training units are Verified, not Final: its aggregation opens now, inside their window.
    u3 = p.unit(3)
    assert u3["status"] == OPEN and u3["shard"] == 2**32 - 1
    assert p.unit(1)["status"] == VERIFIED and p.now() <= p.unit(1)["deadline"]
    _verified(p, 3, solver, agg)
    assert p.unit(4)["round"] == 1 and p.unit(5)["round"] == 1  # round 1 trains two phases ahead
    _verified(p, 4, solver, work)
    _verified(p, 5, solver, work)
    # Three phases ahead of the one being paid: round 1's aggregation waits.
    assert p.pool.functions.nextUnitId().call() == 6
    assert _phase_state(p, job) == (0, 2, 5)
    # Nobody is paid for work whose inputs can still be overturned, even once its own window closed.
    p.advance(3601)
    err = expect(p, "EarlierPhaseUnsettled", p.accounts[9], p.pool.functions.finalize(3))
    assert err.error_args == {"unitId": 3, "settling": 0}
    _finalize(p, 1, 2)
    assert _phase_state(p, job) == (1, 1, 4)
    assert p.unit(6)["status"] == OPEN  # paying round 0's training let round 1's aggregation open
    _finalize(p, 3, 4, 5)
    _verified(p, 6, solver, agg)
    _finalize(p, 6)
    assert p.pool.functions.jobState(job).call()[1] == 2  # Completed
    assert p.pool.functions.totalEscrow().call() == 0
    assert _phase_state(p, job) == (4, 0, 0)
    assert _bonded(p, everyone) == before  # honest path: nobody slashed
    assert all(p.registry.functions.lockedOf(a).call() == 0 for a in everyone)
    assert p.pool.functions.credit(solver.address).call() == 6 * PRICE


def _decide(p: Protocol, did: int, solver_honest: bool, wait: int = 0) -> None:
    """The committee draws, every member votes `solver_honest` on dispute `did`, and (`wait` seconds later) it
    is resolved."""
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    committee_votes(p, did, dict.fromkeys(p.committee.functions.membersOf(did).call(), solver_honest))
    if wait:
        p.advance(wait)
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()


def _fraud_then_aggregate(p: Protocol) -> tuple[int, LocalAccount, LocalAccount, Work, Work, Work]:
    """Solver 2 fakes unit 1 and its validators collude to accept it; an honest solver trains unit 2 and
    aggregates the round (unit 3) on top of the fake while unit 1 is in its challenge window."""
    cheat, honest = p.accounts[2], _solver(p)
    job = p.submit(p.accounts[1], shards=2, **JOB)
    work, agg = Work.honest(4), Work.honest(1, b"agg")
    fake = Work([(s, e, keccak(b"fake" + t)) for s, e, t in work.segments])
    _verified(p, 1, cheat, fake)
    _verified(p, 2, honest, work)
    _verified(p, 3, honest, agg)
    return job, cheat, honest, work, agg, fake


def test_an_overturned_unit_voids_the_work_built_on_it_and_nobody_is_paid_for_it(pipe: Protocol) -> None:
    p = pipe
    job, cheat, honest, work, agg, _ = _fraud_then_aggregate(p)
    agg_validators = p.unit(3)["validators"]
    colluders = p.unit(1)["validators"]
    innocent = [v for v in agg_validators if v not in colluders]
    stake = _bonded(p, [honest.address, *innocent])
    locked = {a: p.registry.functions.lockedOf(a).call() for a in [honest.address, *agg_validators]}
    challenge(p, p.accounts[8], 1, p.segment_of(1, 0))
    _decide(p, p.unit(1)["disputeId"], False)
    # The fake is redone; the aggregation built on it is voided: released unpaid, unpenalised.
    assert p.unit(1)["status"] == OPEN
    assert p.unit(3)["status"] == VOIDED
    assert p.registry.functions.lockedOf(honest.address).call() == locked[honest.address] - COLLATERAL
    for v in agg_validators:  # unit 3's bond released (and unit 1's, judged, for a colluder)
        bonds = 2 if v in colluders else 1
        assert p.registry.functions.lockedOf(v).call() == locked[v] - bonds * p.params["validatorBond"]
    assert _bonded(p, [honest.address, *innocent]) == stake
    assert p.pool.functions.credit(honest.address).call() == 0  # not paid for unit 3 (unit 2 not yet final)
    assert p.registry.functions.bondedOf(cheat.address).call() == 1000 * E18 - COLLATERAL  # the cheat paid
    assert _phase_state(p, job) == (0, 2, 2)  # units 1 and 2 in flight; the voided unit 3 is out
    # Too late for the voided unit: nothing is built or paid on it any more.
    expect(p, "BadUnitStatus", honest, p.pool.functions.finalize(3))
    # The honest solver redoes unit 1; the round's aggregation opens anew and the job completes.
    _verified(p, 1, honest, work)
    assert p.unit(4)["shard"] == 2**32 - 1 and p.unit(4)["status"] == OPEN
    _verified(p, 4, honest, agg)
    _finalize(p, 1, 2, 4)
    assert p.pool.functions.jobState(job).call()[1] == 2
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.registry.functions.lockedOf(honest.address).call() == 0
    assert _bonded(p, [honest.address, *innocent]) == stake
    assert p.pool.functions.credit(honest.address).call() == 3 * PRICE  # units 1, 2 and 4; nothing for unit 3


def test_a_dispute_in_flight_on_voided_work_still_settles_its_liars_and_pays_no_escrow(pipe: Protocol) -> None:
    p = pipe
    job, _, honest, work, agg, _ = _fraud_then_aggregate(p)
    challenger = p.accounts[8]
    # A challenger wrongly disputes the honest aggregation; then the fake unit 1 under it is overturned.
    challenge(p, challenger, 3, 0, salt=b"\x09" * 32)
    assert p.unit(3)["status"] == DISPUTED
    challenge(p, challenger, 1, p.segment_of(1, 0))
    _decide(p, p.unit(1)["disputeId"], False)
    assert p.unit(3)["status"] == DISPUTED  # its own dispute still decides who lied
    credit = p.pool.functions.credit(honest.address).call()
    locked = p.registry.functions.lockedOf(honest.address).call()
    _decide(p, p.unit(3)["disputeId"], True)
    assert p.unit(3)["status"] == VOIDED
    # The wrong challenge cost the challenger its bond, which went to the solver; escrow paid it nothing.
    won = p.pool.functions.credit(honest.address).call() - credit
    assert 0 < won < p.params["challengeBond"]
    assert p.registry.functions.lockedOf(honest.address).call() == locked - COLLATERAL
    _verified(p, 1, honest, work)
    _verified(p, 4, honest, agg)
    _finalize(p, 1, 2, 4)
    assert p.pool.functions.jobState(job).call()[1] == 2
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.pool.functions.totalBonds().call() == 0
    assert p.registry.functions.lockedOf(honest.address).call() == 0


NOT_ARMED = 2**64 - 1


def _claim(p: Protocol, unit_id: int, solver: LocalAccount) -> None:
    p.advance(p.params["claimWindow"])  # the required score has decayed to 0
    p.tx(solver, p.pool.functions.claim(unit_id))
    p.check_conservation()


def _armed(p: Protocol, job: int) -> list[tuple[int, bool]]:
    """(round, isAggregation) of each `PhaseArmed` of the job, in order."""
    logs = p.pool.events.PhaseArmed().get_logs(from_block=0, argument_filters={"jobId": job})
    return [(int(e["args"]["round"]), bool(e["args"]["isAggregation"])) for e in logs]


def test_the_next_phase_opens_for_claims_once_committed_and_commits_once_verified(pipe: Protocol) -> None:
    p = pipe
    solver, aggregator = p.accounts[2], _solver(p)
    job = p.submit(p.accounts[1], shards=2, **JOB)
    work, agg = Work.honest(4), Work.honest(1, b"agg")
    assert _armed(p, job) == [(0, False)]
    _verified(p, 1, solver, work)
    claim_and_commit(p, 2, solver, work)
    # Every training unit is Committed: the aggregation opens for claims while unit 2's validators replay.
    assert p.unit(3)["status"] == OPEN and p.unit(3)["shard"] == 2**32 - 1
    _claim(p, 3, aggregator)
    assert p.pool.functions.commitBy(3).call() == NOT_ARMED
    err = expect(p, "PhaseNotArmed", aggregator, p.pool.functions.commit(3, agg.root, agg.final_hash, "bafyagg"))
    assert err.error_args == {"unitId": 3}
    validators = p.unit(2)["validators"]
    truth = {v: (True, work.segments[p.segment_of(2, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 2, truth)
    # Its inputs unverified, it has no deadline: nobody can take it from its solver meanwhile.
    p.advance(JOB_COMMIT_WINDOW + 1)
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.timeoutClaim(3))
    for v, (acc, th) in truth.items():
        reveal(p, 2, v, acc, th, work)
    assert p.unit(2)["status"] == VERIFIED
    # Armed: the commit window runs from now (its claim's own deadline has passed).
    assert _armed(p, job) == [(0, False), (0, True)]
    assert p.pool.functions.commitBy(3).call() == p.now() + JOB_COMMIT_WINDOW
    p.tx(aggregator, p.pool.functions.commit(3, agg.root, agg.final_hash, "bafyagg"))
    p.check_conservation()
    assert p.unit(3)["status"] == 3  # Committed
    assert p.pool.functions.commitBy(3).call() == 0


def test_an_armed_unit_claimed_early_times_out_a_commit_window_after_arming(pipe: Protocol) -> None:
    p = pipe
    solver, lazy = p.accounts[2], _solver(p)
    p.submit(p.accounts[1], shards=2, **JOB)
    work = Work.honest(4)
    _verified(p, 1, solver, work)
    claim_and_commit(p, 2, solver, work)
    _claim(p, 3, lazy)
    _accepted(p, 2, work)
    by = p.pool.functions.commitBy(3).call()
    assert by >= p.unit(3)["deadline"]
    p.advance(by - p.now() - 2)  # the next block is at most a second later
    err = expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.timeoutClaim(3))
    assert err.error_args["deadline"] == by
    p.advance(by - p.now() + 1)
    assert p.now() > by
    p.tx(p.accounts[9], p.pool.functions.timeoutClaim(3))
    p.check_conservation()
    assert p.unit(3)["status"] == OPEN


def test_a_unit_rejected_at_its_verdicts_keeps_the_phase_opened_on_it_unarmed_until_judged_honest(
    pipe: Protocol,
) -> None:
    p = pipe
    solver, aggregator = p.accounts[2], _solver(p)
    job = p.submit(p.accounts[1], shards=2, **JOB)
    work, agg = Work.honest(4), Work.honest(1, b"agg")
    _verified(p, 1, solver, work)
    claim_and_commit(p, 2, solver, work)
    _claim(p, 3, aggregator)  # opened for claims on unit 2's commitment
    va = p.unit(2)["validators"][0]
    commit_verdicts(p, 2, {va: (False, keccak(b"wrong"))})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, 2, va, False, keccak(b"wrong"), work)
    assert p.unit(2)["status"] == DISPUTED
    assert p.pool.functions.commitBy(3).call() == NOT_ARMED  # a rejected unit is not Verified: nothing commits
    expect(p, "PhaseNotArmed", aggregator, p.pool.functions.commit(3, agg.root, agg.final_hash, "bafyagg"))
    # the other validator's sealed verdict is judged once it is late
    _decide(p, p.unit(2)["disputeId"], True, wait=p.params["revealWindow"] + 1)
    # Judged honest in phase 0, the one being paid: Final at once, and the aggregation is armed.
    assert p.unit(2)["status"] == FINAL
    assert _armed(p, job) == [(0, False), (0, True)]
    p.tx(aggregator, p.pool.functions.commit(3, agg.root, agg.final_hash, "bafyagg"))
    p.mine(2)
    p.tx(p.accounts[9], p.pool.functions.drawValidators(3))
    _accepted(p, 3, agg)
    _finalize(p, 1, 3)
    assert p.pool.functions.jobState(job).call()[1] == 2
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.registry.functions.lockedOf(aggregator.address).call() == 0


def test_a_unit_rejected_as_a_fraud_voids_the_phase_opened_on_it_unpaid_and_unpenalised(pipe: Protocol) -> None:
    p = pipe
    cheat, honest, aggregator = p.accounts[2], _solver(p), _solver(p)
    job = p.submit(p.accounts[1], shards=2, **JOB)
    work, agg = Work.honest(4), Work.honest(1, b"agg")
    fake = Work([(s, e, keccak(b"fake" + t)) for s, e, t in work.segments])
    _verified(p, 1, honest, work)
    claim_and_commit(p, 2, cheat, fake)
    _claim(p, 3, aggregator)  # built on the fake, unknowingly
    stake = p.registry.functions.bondedOf(aggregator.address).call()
    validators = p.unit(2)["validators"]
    truth = {v: (False, work.segments[p.segment_of(2, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 2, truth)
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, 2, validators[0], False, truth[validators[0]][1], fake)
    assert p.unit(2)["status"] == DISPUTED
    _decide(p, p.unit(2)["disputeId"], False, wait=p.params["revealWindow"] + 1)
    # The fake is redone by another solver; the aggregation opened on it is voided, its solver released.
    assert p.unit(2)["status"] == OPEN
    assert p.unit(3)["status"] == VOIDED
    assert p.registry.functions.lockedOf(aggregator.address).call() == 0
    assert p.registry.functions.bondedOf(aggregator.address).call() == stake
    assert p.registry.functions.bondedOf(cheat.address).call() == 1000 * E18 - COLLATERAL  # the cheat paid
    assert _phase_state(p, job) == (0, 2, 2)  # units 1 and 2 in flight; the voided unit 3 is out
    claim_and_commit(p, 2, honest, work)
    assert p.unit(4)["shard"] == 2**32 - 1 and p.unit(4)["status"] == OPEN  # opened anew
    _accepted(p, 2, work)
    _verified(p, 4, aggregator, agg)
    _finalize(p, 1, 2, 4)
    assert p.pool.functions.jobState(job).call()[1] == 2
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.pool.functions.credit(aggregator.address).call() == PRICE  # unit 4 only; nothing for unit 3
    assert p.registry.functions.bondedOf(aggregator.address).call() == stake


def test_cancelling_voids_the_phase_opened_early_and_refunds_it(pipe: Protocol) -> None:
    p = pipe
    requester, solver, aggregator = p.accounts[1], p.accounts[2], _solver(p)
    job = p.submit(requester, rounds=2, shards=2, **JOB)
    work = Work.honest(4)
    _verified(p, 1, solver, work)
    claim_and_commit(p, 2, solver, work)
    _claim(p, 3, aggregator)
    p.tx(requester, p.pool.functions.cancelJob(job))  # the aggregation, claimed but never armed, is voided
    p.check_conservation()
    assert p.unit(3)["status"] == VOIDED
    assert p.registry.functions.lockedOf(aggregator.address).call() == 0
    expect(p, "BadUnitStatus", aggregator, p.pool.functions.commit(3, work.root, work.final_hash, "bafyagg"))
    _accepted(p, 2, work)
    assert p.pool.functions.nextUnitId().call() == 4  # nothing armed or opened after the cancel
    _finalize(p, 1, 2)
    assert p.pool.functions.jobState(job).call()[5] == 0
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.pool.functions.credit(solver.address).call() == 2 * PRICE
    assert p.pool.functions.credit(aggregator.address).call() == 0


def test_cancelling_a_pipelined_job_refunds_once_its_last_unit_in_flight_is_paid(pipe: Protocol) -> None:
    p = pipe
    requester, solver = p.accounts[1], p.accounts[2]
    job = p.submit(requester, rounds=2, shards=2, **JOB)
    work = Work.honest(4)
    _verified(p, 1, solver, work)
    _verified(p, 2, solver, work)
    p.tx(requester, p.pool.functions.cancelJob(job))  # the open aggregation is cancelled
    p.check_conservation()
    assert p.unit(3)["status"] == 7
    assert p.pool.functions.jobState(job).call()[5] > 0  # units 1 and 2 are still owed their pay
    _finalize(p, 1, 2)
    assert p.pool.functions.jobState(job).call()[5] == 0
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.pool.functions.credit(solver.address).call() == 2 * PRICE
    assert p.pool.functions.nextUnitId().call() == 4  # nothing opened after the cancel


def test_cancelling_while_the_phase_being_paid_has_open_units_still_pays_and_refunds_the_rest(pipe: Protocol) -> None:
    p = pipe
    requester, solver = p.accounts[1], p.accounts[2]
    job = p.submit(requester, shards=2, **JOB)
    _verified(p, 1, solver, Work.honest(4))
    p.tx(requester, p.pool.functions.cancelJob(job))  # unit 2, of the phase being paid, was still open
    p.check_conservation()
    assert p.unit(2)["status"] == 7
    assert _phase_state(p, job) == (0, 1, 1)  # only unit 1 is left to pay
    _finalize(p, 1)
    assert _phase_state(p, job) == (1, 0, 0)  # phase 0 paid; the aggregation never opened
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.pool.functions.credit(solver.address).call() == PRICE
    assert p.registry.functions.lockedOf(solver.address).call() == 0


def test_a_unit_timed_out_after_a_cancel_lets_the_later_phases_be_paid(pipe: Protocol) -> None:
    p = pipe
    requester, solver = p.accounts[1], p.accounts[2]
    job = p.submit(requester, rounds=2, shards=2, **JOB)
    work = Work.honest(4)
    _verified(p, 1, solver, work)
    p.advance(p.params["claimWindow"])
    p.tx(solver, p.pool.functions.claim(2))  # unit 2 claimed and then abandoned
    p.tx(requester, p.pool.functions.cancelJob(job))
    p.advance(JOB_COMMIT_WINDOW + 1)
    p.tx(p.accounts[9], p.pool.functions.timeoutClaim(2))  # reopens into Cancelled: its job is cancelled
    p.check_conservation()
    assert p.unit(2)["status"] == 7
    _finalize(p, 1)
    assert _phase_state(p, job)[2] == 0
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.registry.functions.lockedOf(solver.address).call() == 0


def test_a_phase_opened_early_is_paid_once_a_dispute_settles_the_phase_before_it(pipe: Protocol) -> None:
    """Round 0's only unit, rejected by a lying validator, is judged honest and paid at once: the round-1 unit
    opened early on it becomes the phase being paid (it must be counted then, not when it opened) and is paid."""
    p = pipe
    solver, next_solver = p.accounts[2], _solver(p)
    job = p.submit(p.accounts[1], rounds=2, **JOB)
    work = Work.honest(4)
    claim_and_commit(p, 1, solver, work)
    _claim(p, 2, next_solver)  # round 1, opened early on unit 1's commitment
    va = p.unit(1)["validators"][0]
    commit_verdicts(p, 1, {va: (False, keccak(b"wrong"))})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, 1, va, False, keccak(b"wrong"), work)
    _decide(p, p.unit(1)["disputeId"], True, wait=p.params["revealWindow"] + 1)
    assert p.unit(1)["status"] == FINAL
    assert _phase_state(p, job) == (1, 1, 1)  # round 1 is being paid, its unit not yet Final
    p.tx(next_solver, p.pool.functions.commit(2, work.root, work.final_hash, "bafyround1"))
    p.mine(2)
    p.tx(p.accounts[9], p.pool.functions.drawValidators(2))
    _accepted(p, 2, work)
    _finalize(p, 2)
    assert p.pool.functions.jobState(job).call()[1] == 2  # Completed
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.pool.functions.credit(next_solver.address).call() == PRICE
    assert p.registry.functions.lockedOf(next_solver.address).call() == 0
