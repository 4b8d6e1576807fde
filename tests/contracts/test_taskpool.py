"""TaskPool: each external function's success and revert paths."""

from __future__ import annotations

from eth_utils import keccak

from gensyn_py.chain.pool import challenge_hash
from tests.contracts.flows import claim_and_commit, commit_verdicts, reveal
from tests.contracts.helpers import ASSIGNED, CANCELLED, E18, OPEN, SOLVER, Protocol, Work, transcript_commit
from tests.contracts.test_registry import expect


def test_submit_escrows_budget_for_training_and_aggregation_units(proto: Protocol) -> None:
    p, r = proto, proto.accounts[1]
    bal = p.token.functions.balanceOf(r.address).call()
    p.submit(r, rounds=2, shards=3)
    per_unit = 200 * E18 + 2 * p.params["validatorFee"]
    assert p.token.functions.balanceOf(r.address).call() == bal - (2 * 3 + 2) * per_unit
    assert p.pool.functions.totalEscrow().call() == 8 * per_unit
    assert p.pool.functions.nextUnitId().call() == 4  # only round 0's training units are open
    p.check_conservation()


def test_submit_rejects_malformed_params(proto: Protocol) -> None:
    p, r = proto, proto.accounts[1]
    for kw, field in (
        ({"rounds": 0}, "rounds"),
        ({"shards": 0}, "shards"),
        ({"stepsPerUnit": 7}, "steps"),
        ({"checkpointInterval": 0}, "steps"),
        ({"maxPricePerUnit": 0}, "maxPricePerUnit"),
        ({"commitWindow": 1}, "commitWindow"),
    ):
        err = expect(p, "InvalidJobParams", r, p.pool.functions.submitJob(p.job_params(**kw)))
        assert err.error_args["field"] == field


def test_cancel_refunds_open_units_and_rejects_outsiders_and_repeats(proto: Protocol) -> None:
    p, r = proto, proto.accounts[1]
    job = p.submit(r, rounds=2, shards=2)
    expect(p, "UnknownJob", r, p.pool.functions.cancelJob(99))
    err = expect(p, "NotRequester", p.accounts[2], p.pool.functions.cancelJob(job))
    assert err.error_args["caller"] == p.accounts[2].address
    p.tx(r, p.pool.functions.cancelJob(job))
    p.check_conservation()
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.unit(1)["status"] == CANCELLED
    expect(p, "JobNotActive", r, p.pool.functions.cancelJob(job))
    expect(p, "BadUnitStatus", p.accounts[2], p.pool.functions.claim(1))


def test_cancel_lets_in_flight_units_finish_then_refunds_the_rest(proto: Protocol) -> None:
    p, r, s = proto, proto.accounts[1], proto.accounts[2]
    job = p.submit(r, shards=2)
    p.advance(p.params["claimWindow"])
    p.tx(s, p.pool.functions.claim(1))
    p.tx(r, p.pool.functions.cancelJob(job))
    p.check_conservation()
    assert p.pool.functions.totalEscrow().call() == 200 * E18 + 2 * p.params["validatorFee"]
    p.advance(61)
    p.tx(p.accounts[9], p.pool.functions.timeoutClaim(1))  # in-flight unit times out: cancelled, escrow refunded
    p.check_conservation()
    assert p.pool.functions.totalEscrow().call() == 0
    assert p.unit(1)["status"] == CANCELLED


def test_claim_checks_role_hardware_price_stake_and_score(proto: Protocol) -> None:
    p, r = proto, proto.accounts[1]
    p.submit(r, minMemoryMb=32000)
    p.submit(r, maxPricePerUnit=50 * E18)
    p.submit(r, collateralPerUnit=5000 * E18)
    p.submit(r)
    s = p.accounts[2]
    expect(p, "UnknownUnit", s, p.pool.functions.claim(99))
    err = expect(p, "MissingRole", p.accounts[3], p.pool.functions.claim(4))
    assert err.error_args["role"] == SOLVER
    err = expect(p, "ScoreTooLow", s, p.pool.functions.claim(4))
    assert err.error_args["score"] == 5500 and err.error_args["required"] > 5500
    p.advance(p.params["claimWindow"])
    expect(p, "HardwareMismatch", s, p.pool.functions.claim(1))
    err = expect(p, "PriceTooHigh", s, p.pool.functions.claim(2))
    assert err.error_args["maxPrice"] == 50 * E18
    expect(p, "InsufficientFreeStake", s, p.pool.functions.claim(3))
    rc = p.tx(s, p.pool.functions.claim(4))
    assert p.events(rc, p.pool, "UnitClaimed")[0]["args"]["price"] == 100 * E18
    assert p.unit(4)["status"] == ASSIGNED
    assert p.registry.functions.lockedOf(s.address).call() == 300 * E18
    expect(p, "BadUnitStatus", s, p.pool.functions.claim(4))


def test_score_decay_lets_good_solvers_claim_before_the_window_ends(proto: Protocol) -> None:
    p = proto
    p.submit(p.accounts[1])
    score, required = p.pool.functions.claimScore(p.accounts[2].address, 1).call()
    assert score == 5500 and required >= 9500
    p.advance(28)  # required = 10000 * (60 - 28) / 60 = 5333 < 5500
    p.tx(p.accounts[2], p.pool.functions.claim(1))


def test_commit_only_before_deadline_and_timeout_costs_reputation_and_a_bounded_penalty(proto: Protocol) -> None:
    p, r, s = proto, proto.accounts[1], proto.accounts[2]
    p.submit(r)
    p.advance(p.params["claimWindow"])
    p.tx(s, p.pool.functions.claim(1))
    w = Work.honest(4)
    expect(p, "NotSolver", p.accounts[9], p.pool.functions.commit(1, w.root, w.final_hash, "m"))
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.timeoutClaim(1))
    p.advance(61)
    expect(p, "DeadlinePassed", s, p.pool.functions.commit(1, w.root, w.final_hash, "m"))
    rc = p.tx(p.accounts[9], p.pool.functions.timeoutClaim(1))
    p.check_conservation()
    penalty = 300 * E18 * p.params["livenessPenaltyBps"] // 10_000  # of the unit's collateral, to the requester
    timed_out = p.events(rc, p.pool, "UnitTimedOut")[0]["args"]
    assert (timed_out["solver"], timed_out["penalty"]) == (s.address, penalty)
    assert [e["args"]["amount"] for e in p.events(rc, p.registry, "Slashed")] == [penalty]
    assert p.unit(1)["status"] == OPEN
    assert p.registry.functions.bondedOf(s.address).call() == 1000 * E18 - penalty
    assert p.registry.functions.lockedOf(s.address).call() == 0
    assert p.registry.functions.reputationOf(s.address).call() == [0, 1, 0]
    assert not p.registry.functions.isJailed(s.address).call()  # a fault, not fraud
    assert p.pool.functions.credit(r.address).call() == penalty


def test_draw_waits_for_post_commit_randomness(proto: Protocol) -> None:
    p, s = proto, proto.accounts[2]
    p.submit(p.accounts[1])
    p.advance(p.params["claimWindow"])
    p.tx(s, p.pool.functions.claim(1))
    w = Work.honest(4)
    p.tx(s, p.pool.functions.commit(1, w.root, w.final_hash, "m"))
    expect(p, "RandomnessNotReady", p.accounts[9], p.pool.functions.drawValidators(1))
    expect(p, "NotDrawn", p.accounts[9], p.pool.functions.closeVerdicts(1))
    p.mine(2)
    rc = p.tx(p.accounts[9], p.pool.functions.drawValidators(1))
    ev = p.events(rc, p.pool, "ValidatorsDrawn")[0]["args"]
    assert len(ev["validators"]) == 2 and s.address not in ev["validators"]
    assert list(ev["segments"]) == [p.segment_of(1, 0), p.segment_of(1, 1)]
    expect(p, "AlreadyDrawn", p.accounts[9], p.pool.functions.drawValidators(1))


def test_verdict_commit_reveal_guards(proto: Protocol) -> None:
    p, s = proto, proto.accounts[2]
    p.submit(p.accounts[1])
    w = Work.honest(4)
    claim_and_commit(p, 1, s, w)
    va, vb = p.unit(1)["validators"]
    outsider = next(a for a in p.accounts[3:8] if a.address not in (va, vb))
    expect(p, "NotUnitValidator", outsider, p.pool.functions.commitVerdict(1, b"\x01" * 32))
    seg_a = p.segment_of(1, 0)
    start, end, th = w.segments[seg_a]
    commit_verdicts(p, 1, {va: (True, th)})
    expect(p, "VerdictAlreadyGiven", p.by_address(va), p.pool.functions.commitVerdict(1, b"\x01" * 32))
    salt = keccak(b"salt" + bytes.fromhex(va[2:]))
    reveal_args = (1, True, th, salt, start, end, transcript_commit(th), w.proof(seg_a))
    expect(p, "RevealNotOpen", p.by_address(va), p.pool.functions.revealVerdict(*reveal_args))
    seg_b = p.segment_of(1, 1)
    commit_verdicts(p, 1, {vb: (True, w.segments[seg_b][2])})
    expect(
        p,
        "VerdictMismatch",
        p.by_address(va),
        p.pool.functions.revealVerdict(1, True, th, b"\x00" * 32, start, end, transcript_commit(th), w.proof(seg_a)),
    )
    bad_proof = (1, True, th, salt, start, keccak(b"other"), transcript_commit(th), w.proof(seg_a))
    expect(p, "InvalidSegmentProof", p.by_address(va), p.pool.functions.revealVerdict(*bad_proof))
    # a lazy validator cannot accept without the transcript preimage
    lazy = keccak(b"guess")
    h = p.verdict_hash(1, va, True, lazy, salt)
    assert h != p.pool.functions.verdictCommits(1, 0).call()
    p.tx(p.by_address(va), p.pool.functions.revealVerdict(*reveal_args))
    expect(p, "VerdictAlreadyGiven", p.by_address(va), p.pool.functions.revealVerdict(*reveal_args))
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.closeVerdicts(1))


def test_accept_without_the_transcript_preimage_is_refused(proto: Protocol) -> None:
    p, s = proto, proto.accounts[2]
    p.submit(p.accounts[1])
    w = Work.honest(4)
    claim_and_commit(p, 1, s, w)
    va, vb = p.unit(1)["validators"]
    guess = keccak(b"did not replay")
    commit_verdicts(p, 1, {va: (True, guess), vb: (True, guess)})
    seg = p.segment_of(1, 0)
    start, end, th = w.segments[seg]
    salt = keccak(b"salt" + bytes.fromhex(va[2:]))
    err = expect(
        p,
        "TranscriptMismatch",
        p.by_address(va),
        p.pool.functions.revealVerdict(1, True, guess, salt, start, end, transcript_commit(th), w.proof(seg)),
    )
    assert err.error_args["transcriptCommit"] == transcript_commit(th)


def test_finalize_challenge_and_credit_guards(proto: Protocol) -> None:
    p, s = proto, proto.accounts[2]
    p.submit(p.accounts[1])
    w = Work.honest(4)
    claim_and_commit(p, 1, s, w)
    expect(p, "BadUnitStatus", p.accounts[9], p.pool.functions.finalize(1))
    validators = p.unit(1)["validators"]
    truth = {v: (True, w.segments[p.segment_of(1, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, w)
    expect(p, "DeadlineNotReached", p.accounts[9], p.pool.functions.finalize(1))
    salt = b"\x05" * 32
    err = expect(p, "ChallengeNotSealed", p.accounts[8], p.pool.functions.challenge(1, 4, salt))
    assert err.error_args["challenger"] == p.accounts[8].address
    p.tx(p.accounts[8], p.pool.functions.commitChallenge(1, challenge_hash(1, p.accounts[8].address, 4, salt)))
    err = expect(p, "ChallengeNotSealed", p.accounts[8], p.pool.functions.challenge(1, 4, salt))  # same block
    p.mine(1)
    err = expect(p, "BadSegment", p.accounts[8], p.pool.functions.challenge(1, 4, salt))
    assert err.error_args["numSegments"] == 4
    expect(p, "MissingRole", p.accounts[9], p.pool.functions.challenge(1, 0, salt))
    expect(p, "MissingRole", p.accounts[9], p.pool.functions.commitChallenge(1, b"\x01" * 32))
    expect(p, "NoCredit", p.accounts[9], p.pool.functions.claimCredit())
    expect(p, "NotResolver", p.accounts[9], p.pool.functions.onDisputeResolved(1, 1, []))
    p.advance(p.params["challengeWindow"] + 1)
    expect(p, "DeadlinePassed", p.accounts[8], p.pool.functions.challenge(1, 0, salt))
    expect(p, "DeadlinePassed", p.accounts[8], p.pool.functions.commitChallenge(1, b"\x01" * 32))
    p.tx(p.accounts[9], p.pool.functions.finalize(1))
    expect(p, "BadUnitStatus", p.accounts[9], p.pool.functions.finalize(1))
    p.check_conservation()
