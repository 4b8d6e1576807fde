"""Resume, not restart (issue 11): partial commitments, and commitments bound to the solver.

A solver publishes its first k segments (`commitPartial`); if it misses its deadline it pays the liveness
penalty and nothing else, and is paid nothing; the next solver resumes from the partial, vouches for every
segment and is paid the whole unit. Transcripts are bound to the address of whoever trained a segment
(`gensyn_py/proof/commitment.py`): the honest validators below replay under that address, so a freeloader
that passes the published segments off as its own is rejected and slashed. Every play checks that money is
conserved, that nobody honest lost and that no cheater gained.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from gensyn_py.crypto.merkle import merkle_root
from gensyn_py.proof.commitment import transcript_hash
from tests.contracts.flows import commit_verdicts, committee_votes, reveal
from tests.contracts.helpers import ASSIGNED, COMMITTED, DISPUTED, E18, FINAL, OPEN, SOLVER, VERIFIED, Protocol, Work
from tests.contracts.test_registry import expect

SEGMENTS = 4  # the default job: 8 steps, a checkpoint every 2
DONE = 3  # segments the first solver publishes before it vanishes
COLLATERAL = 300 * E18  # the default job's collateral per unit (tests/contracts/helpers.py)


def _segment(j: int, author: str) -> tuple[bytes, bytes, bytes]:
    """Segment j of the one honest training (same states whoever trains it), its transcript bound to `author`."""
    states = [keccak(b"state" + bytes([i])) for i in range(SEGMENTS + 1)]
    losses = [1.0 / (j * 2 + t + 1) for t in range(2)]
    return states[j], states[j + 1], transcript_hash(losses, states[j + 1], author)


def _work(authors: list[str]) -> Work:
    return Work([_segment(j, a) for j, a in enumerate(authors)])


def _holdings(p: Protocol, who: str) -> int:
    """Everything `who` owns in the protocol's token: wallet, stake and pool credit."""
    return (p.token.functions.balanceOf(who).call() + p.registry.functions.bondedOf(who).call()
            + p.registry.functions.unbondingOf(who).call()[0] + p.pool.functions.credit(who).call())


def _partial(p: Protocol, unit_id: int = 1) -> tuple[str, bytes, int]:
    solver, root, segments = p.pool.functions.partialOf(unit_id).call()
    return solver, bytes(root), segments


@pytest.fixture
def second(proto: Protocol) -> Iterator[LocalAccount]:
    """A second solver, with a fresh key (the chain state goes with the test's snapshot)."""
    b = Account.from_key(keccak(b"second solver"))
    proto.w3.provider.make_request("anvil_setBalance", [b.address, hex(10**21)])  # type: ignore[arg-type]
    proto.accounts.append(b)
    try:
        proto.node(b, SOLVER)
        yield b
    finally:
        proto.accounts.remove(b)


def _claim(p: Protocol, solver: LocalAccount, unit_id: int = 1) -> None:
    p.advance(p.params["claimWindow"])  # the required score has decayed to 0
    p.tx(solver, p.pool.functions.claim(unit_id))
    p.check_conservation()


def _abandoned(p: Protocol, first: LocalAccount) -> tuple[Work, int]:
    """`first` claims unit 1, publishes DONE segments and vanishes; the unit times out. Returns the first
    solver's work and the penalty it paid."""
    p.submit(p.accounts[1])
    _claim(p, first)
    work = _work([first.address] * SEGMENTS)
    root = merkle_root(work.leaves()[:DONE])
    rc = p.tx(first, p.pool.functions.commitPartial(1, root, DONE, "bafypartial"))
    p.check_conservation()
    (ev,) = p.events(rc, p.pool, "UnitPartialCommitted")
    assert (ev["args"]["unitId"], ev["args"]["solver"], bytes(ev["args"]["partialRoot"]), ev["args"]["segments"],
            ev["args"]["manifestCid"]) == (1, first.address, root, DONE, "bafypartial")
    p.advance(p.unit(1)["deadline"] - p.now() + 1)
    rc = p.tx(p.accounts[8], p.pool.functions.timeoutClaim(1))
    p.check_conservation()
    (timed_out,) = p.events(rc, p.pool, "UnitTimedOut")
    assert p.unit(1)["status"] == OPEN
    # INVARIANT under test: the reopened unit keeps the partial for whoever claims next.
    assert _partial(p) == (first.address, root, DONE)
    return work, int(timed_out["args"]["penalty"])


def _committee_decides(p: Protocol, did: int, solver_honest: bool) -> None:
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    committee_votes(p, did, {m: solver_honest for m in p.committee.functions.membersOf(did).call()})
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()


def test_partial_commits_are_refused_with_decoded_errors(proto: Protocol, second: LocalAccount) -> None:
    p = proto
    solver = p.accounts[2]
    p.submit(p.accounts[1])
    root = keccak(b"partial")
    err = expect(p, "UnknownUnit", solver, p.pool.functions.commitPartial(99, root, 1, "cid"))
    assert err.error_args["unitId"] == 99
    err = expect(p, "BadUnitStatus", solver, p.pool.functions.commitPartial(1, root, 1, "cid"))  # still open
    assert (err.error_args["status"], err.error_args["required"]) == (OPEN, ASSIGNED)
    _claim(p, solver)
    err = expect(p, "NotSolver", second, p.pool.functions.commitPartial(1, root, 1, "cid"))
    assert err.error_args["caller"] == second.address
    for bad in (0, SEGMENTS, SEGMENTS + 1):  # a partial is a proper prefix: 1 .. numSegments - 1
        err = expect(p, "BadPartialCount", solver, p.pool.functions.commitPartial(1, root, bad, "cid"))
        assert (err.error_args["segments"], err.error_args["atLeast"], err.error_args["numSegments"]) == (
            bad, 1, SEGMENTS)
    deadline = p.unit(1)["deadline"]
    p.tx(solver, p.pool.functions.commitPartial(1, root, 2, "cid"))
    assert p.unit(1)["deadline"] == deadline  # INVARIANT under test: a partial never buys time
    for stale in (1, 2):  # it only grows
        err = expect(p, "BadPartialCount", solver, p.pool.functions.commitPartial(1, root, stale, "cid"))
        assert err.error_args["atLeast"] == 3
    p.advance(deadline - p.now() + 1)
    err = expect(p, "DeadlinePassed", solver, p.pool.functions.commitPartial(1, root, 3, "cid"))
    assert err.error_args["deadline"] == deadline
    p.check_conservation()


def test_a_committed_unit_takes_no_partial(proto: Protocol) -> None:
    p = proto
    solver = p.accounts[2]
    p.submit(p.accounts[1])
    _claim(p, solver)
    work = _work([solver.address] * SEGMENTS)
    p.tx(solver, p.pool.functions.commit(1, work.root, work.final_hash, "bafymanifest"))
    err = expect(p, "BadUnitStatus", solver, p.pool.functions.commitPartial(1, work.root, 1, "cid"))
    assert (err.error_args["status"], err.error_args["required"]) == (COMMITTED, ASSIGNED)


def test_a_partial_neither_escapes_the_penalty_nor_earns_anything(proto: Protocol) -> None:
    """Published 3 of 4 segments, then vanished: the full liveness penalty, a missed unit, no pay."""
    p = proto
    first = p.accounts[2]
    requester = p.accounts[1].address
    before = _holdings(p, first.address)
    missed = p.registry.functions.reputationOf(first.address).call()[1]
    credit = p.pool.functions.credit(requester).call()
    _, penalty = _abandoned(p, first)
    assert penalty == COLLATERAL * p.params["livenessPenaltyBps"] // 10_000 > 0
    assert _holdings(p, first.address) == before - penalty
    assert p.registry.functions.lockedOf(first.address).call() == 0
    assert p.registry.functions.reputationOf(first.address).call()[1] == missed + 1
    assert p.pool.functions.credit(requester).call() == credit + penalty  # the requester, whose job waited


def test_the_next_solver_resumes_from_the_partial_and_is_paid_the_whole_unit(
    proto: Protocol, second: LocalAccount
) -> None:
    p = proto
    first = p.accounts[2]
    people = [first.address, second.address, *(a.address for a in p.accounts[3:8])]
    before = {who: _holdings(p, who) for who in people}
    _, penalty = _abandoned(p, first)
    _claim(p, second)
    assert _partial(p)[0] == first.address  # still there for the new solver to resume from
    # The first DONE segments are the first solver's (its transcripts, inherited), the rest the new solver's.
    work = _work([first.address] * DONE + [second.address] * (SEGMENTS - DONE))
    assert merkle_root(work.leaves()[:DONE]) == _partial(p)[1]  # prefix-consistent with the partial
    rc = p.tx(second, p.pool.functions.commit(1, work.root, work.final_hash, "bafyresumed"))
    p.check_conservation()
    assert p.events(rc, p.pool, "UnitCommitted")[0]["args"]["checkpointRoot"] == work.root
    p.mine(2)
    p.tx(p.accounts[8], p.pool.functions.drawValidators(1))
    validators = p.unit(1)["validators"]
    # Honest replays reproduce each segment's transcript under its author: every verdict accepts.
    truth = {v: (True, work.segments[p.segment_of(1, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, work)
    assert p.unit(1)["status"] == VERIFIED
    p.advance(p.params["challengeWindow"] + 1)
    rc = p.tx(p.accounts[8], p.pool.functions.finalize(1))
    p.check_conservation()
    (fin,) = p.events(rc, p.pool, "UnitFinalized")
    assert p.unit(1)["status"] == FINAL and fin["args"]["solver"] == second.address
    assert _holdings(p, first.address) == before[first.address] - penalty  # paid nothing for what it did not prove
    assert _holdings(p, second.address) == before[second.address] + fin["args"]["solverPay"]
    assert fin["args"]["solverPay"] == 100 * E18  # its declared price, for the whole unit
    for v in validators:
        assert _holdings(p, v) == before[v] + p.params["validatorFee"]
    for v in set(people[2:]) - set(validators):
        assert _holdings(p, v) == before[v]


def test_a_freeloader_passing_off_the_published_segments_as_its_own_is_slashed(
    proto: Protocol, second: LocalAccount
) -> None:
    """The copy attack: the second solver recommits the first one's published segments as its own work (no
    inheritance claimed, so no replay can give their transcripts under its address). Every validator drawn on
    one of them rejects (one always is: at most one of the two drawn segments is the last), the committee
    convicts, the freeloader loses its collateral and the first solver loses nothing more."""
    p = proto
    first = p.accounts[2]
    requester = p.accounts[1].address
    published, penalty = _abandoned(p, first)
    after_timeout = {first.address: _holdings(p, first.address), requester: _holdings(p, requester)}
    freeloader_before = _holdings(p, second.address)
    _claim(p, second)
    copy = Work([*published.segments[:DONE], _segment(DONE, second.address)])
    p.tx(second, p.pool.functions.commit(1, copy.root, copy.final_hash, "bafycopy"))
    p.mine(2)
    p.tx(p.accounts[8], p.pool.functions.drawValidators(1))
    validators = p.unit(1)["validators"]
    segs = [p.segment_of(1, i) for i in range(len(validators))]
    assert any(s < DONE for s in segs)
    # An honest replay under the freeloader's address: its own segment matches, the copied ones never do.
    replayed = _work([second.address] * SEGMENTS)
    truth = {v: (segs[i] == DONE, replayed.segments[segs[i]][2]) for i, v in enumerate(validators)}
    before = {v: _holdings(p, v) for v in validators}
    commit_verdicts(p, 1, truth)
    rejecter = next(v for v, (acc, _) in truth.items() if not acc)
    reveal(p, 1, rejecter, False, truth[rejecter][1], copy)
    assert p.unit(1)["status"] == DISPUTED
    for v, (acc, th) in truth.items():
        if v != rejecter:
            reveal(p, 1, v, acc, th, copy)
    _committee_decides(p, p.unit(1)["disputeId"], solver_honest=False)
    assert p.unit(1)["status"] == OPEN  # the unit goes back to the market, partial still on offer
    assert _partial(p)[0] == first.address
    collateral = COLLATERAL
    assert _holdings(p, second.address) == freeloader_before - collateral  # the cheater lost its collateral
    assert p.registry.functions.isJailed(second.address).call()
    assert _holdings(p, first.address) == after_timeout[first.address]  # the copied solver lost nothing more
    assert _holdings(p, requester) >= after_timeout[requester]  # the requester lost nothing
    for v in validators:
        assert _holdings(p, v) >= before[v]  # honest validators lost nothing
    assert penalty > 0
