"""DisputeCommittee: each way of buying a committee, played on anvil, and what it now costs.

The standard cast has five validators (3-7); a unit draws two of them, so a dispute's committee is the
other three. Tests that need more seats add validators with fresh keys (`extra_validators`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from gensyn_py.chain.committee import round_seed
from gensyn_py.chain.draw import ValidatorEntry, draw_seats
from gensyn_py.devnet.deploy import DEFAULT_PARAMS
from gensyn_py.errors import ContractRevert
from tests.contracts.flows import (
    challenge,
    claim_and_commit,
    commit_verdicts,
    committee_votes,
    rejected_unit,
    reveal,
    reveal_votes,
    seal_votes,
    vote_salt,
)
from tests.contracts.helpers import E18, FINAL, OPEN, VALIDATOR, Protocol, Work
from tests.contracts.test_registry import expect

HONEST, FRAUD, NO_QUORUM = 1, 2, 3


def _draw(p: Protocol, did: int) -> list[str]:
    p.mine(2)
    rc = p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    p.check_conservation()
    (ev,) = p.events(rc, p.committee, "CommitteeDrawn")
    return list(ev["args"]["members"])


def _stake(p: Protocol, addr: str) -> int:
    return int(p.registry.functions.bondedOf(addr).call() + p.registry.functions.unbondingOf(addr).call()[0])


def _wallet(p: Protocol, addr: str) -> int:
    return int(p.token.functions.balanceOf(addr).call())


@contextmanager
def extra_validators(
    p: Protocol, n: int, stake: int = 1000 * E18, stakes: list[int] | None = None
) -> Iterator[list[LocalAccount]]:
    """`n` more validators of class 1 with fresh keys (the chain state goes with the test's snapshot)."""
    new = [Account.from_key(keccak(b"extra validator" + bytes([i]))) for i in range(n)]
    for a in new:
        p.w3.provider.make_request("anvil_setBalance", [a.address, hex(10**21)])  # type: ignore[arg-type]
        p.accounts.append(a)
    try:
        for i, a in enumerate(new):
            p.node(a, VALIDATOR, stake=stakes[i] if stakes else stake)
        yield new
    finally:
        for a in new:
            p.accounts.remove(a)


def _deploy_error(p: Protocol, **over: Any) -> Any:
    """Decode the revert of deploying a DisputeCommittee with parameters `over`."""
    params = {**DEFAULT_PARAMS, **over}
    art = p.artifacts["DisputeCommittee"]
    factory = p.w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
    data = factory.constructor(
        over.get("registry", p.registry.address),
        params["committeeSize"],
        params["votingPeriod"],
        params["voteRevealPeriod"],
        params["committeeBond"],
        p.deployer.address,
    ).data_in_transaction
    res = p.w3.provider.make_request(
        "eth_call", [{"from": p.deployer.address, "data": data, "gas": hex(5_000_000)}, "latest"]  # type: ignore[arg-type]
    )
    assert "error" in res, over
    raw = res["error"]["data"]
    return p.errors.decode(raw if isinstance(raw, str) else raw["data"])


def test_only_the_task_pool_opens_disputes(proto: Protocol) -> None:
    p = proto
    a = p.accounts[9]
    err = expect(p, "NotTaskPool", a, p.committee.functions.openDispute(1, 0, 1, bytes(32), a.address, a.address))
    assert err.error_args["caller"] == a.address
    expect(p, "UnknownDispute", a, p.committee.functions.resolve(7))
    expect(p, "UnknownDispute", a, p.committee.functions.commitVote(7, bytes(32)))
    expect(p, "UnknownDispute", a, p.committee.functions.revealVote(7, True, bytes(32)))


def test_constructor_parameters_are_checked(proto: Protocol) -> None:
    p = proto
    for name, value in (
        ("committeeSize", 0),
        ("committeeSize", 17),
        ("votingPeriod", 0),
        ("voteRevealPeriod", 0),
        ("votingPeriod", 31 * 86400),
        ("committeeBond", 0),
        ("committeeBond", 2**128),
    ):
        err = _deploy_error(p, **{name: value})
        assert err.name == "InvalidCommitteeParam"
        assert err.error_args["name"] == {"voteRevealPeriod": "revealPeriod", "committeeBond": "memberBond"}.get(
            name, name
        )
        assert err.error_args["value"] == value
    err = _deploy_error(p, registry="0x" + "00" * 20)
    assert err.error_args["name"] == "registry"
    assert p.committee.functions.maxDuration().call() == 3 * (p.params["votingPeriod"] + p.params["voteRevealPeriod"])


def test_a_member_who_stakes_20000_before_voting_gains_nothing_and_a_false_vote_loses_its_bond(
    proto: Protocol,
) -> None:
    """The issue's attack: a false rejecter and a member who stakes 20,000 just before voting try to convict an
    honest solver. Weight is the bond locked at the draw, so the two honest members outvote it; the liar loses
    its bond to them, the false rejecter loses its bond, the solver is paid."""
    p = proto
    did, va = rejected_unit(p)
    expect(p, "TooEarly", p.accounts[9], p.committee.functions.drawCommittee(did))
    expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
    members = _draw(p, did)
    assert len(members) == 3
    bond = p.params["committeeBond"]
    for m in members:
        assert p.registry.functions.lockedOf(m).call() == bond  # the weight, locked for the dispute
    liar, h1, h2 = members
    solver = p.accounts[2].address
    before = {a: _stake(p, a) for a in (*members, va, solver)}
    wallet = {a: _wallet(p, a) for a in members}
    p.fund(p.by_address(liar), 20_000 * E18)
    p.tx(p.by_address(liar), p.registry.functions.stake(20_000 * E18))  # after the draw: counts for nothing
    committee_votes(p, did, {liar: False, h1: True, h2: True})
    d = p.dispute(did)
    assert (d["yesWeight"], d["noWeight"], d["seatedWeight"]) == (2 * bond, bond, 3 * bond)
    rc = p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    assert p.events(rc, p.committee, "DisputeResolved")[0]["args"]["outcome"] == HONEST
    expect(p, "DisputeClosed", p.accounts[9], p.committee.functions.resolve(did))
    assert _stake(p, liar) == before[liar] + 20_000 * E18 - bond
    for h in (h1, h2):
        assert _stake(p, h) == before[h]
        assert _wallet(p, h) == wallet[h] + bond // 2  # the liar's bond, shared by the honest members
        assert p.registry.functions.lockedOf(h).call() == 0
    assert p.registry.functions.lockedOf(liar).call() == 0
    assert _stake(p, va) == before[va] - p.params["validatorBond"]  # the false rejecter
    assert _stake(p, solver) == before[solver]
    assert not p.registry.functions.isJailed(solver).call()
    assert p.unit(1)["status"] == FINAL
    pool_share = p.params["validatorBond"] * p.params["committeeRewardBps"] // 10_000 // 2
    assert p.pool.functions.credit(h1).call() == pool_share and p.pool.functions.credit(liar).call() == 0
    assert p.pool.functions.credit(solver).call() == 100 * E18 + p.params["validatorBond"] - 2 * pool_share


def test_stake_vote_unbond_does_not_work(proto: Protocol) -> None:
    """A member cannot take its weight out during the vote: the bond is locked until the dispute resolves, and
    what it unbonds is still reached by the slash of its wrong vote."""
    p = proto
    did, _ = rejected_unit(p)
    members = _draw(p, did)
    m = p.by_address(members[0])
    bond = p.params["committeeBond"]
    bonded = p.registry.functions.bondedOf(m.address).call()
    expect(p, "InsufficientFreeStake", m, p.registry.functions.unbond(bonded))
    p.tx(m, p.registry.functions.unbond(bonded - bond))  # everything but the locked bond
    committee_votes(p, did, {members[0]: False, members[1]: True, members[2]: True})
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    assert p.registry.functions.bondedOf(m.address).call() == 0  # the locked bond was slashed
    assert p.registry.functions.unbondingOf(m.address).call()[0] == bonded - bond


def test_votes_are_sealed_until_every_member_committed(proto: Protocol) -> None:
    p = proto
    did, va = rejected_unit(p)
    members = _draw(p, did)
    expect(p, "NotCommitteeMember", p.by_address(va), p.committee.functions.commitVote(did, bytes(32)))
    a, b, c = members
    expect(p, "NotCommitted", p.by_address(a), p.committee.functions.revealVote(did, True, vote_salt(did, a)))
    rc = p.tx(p.by_address(a), p.committee.functions.commitVote(did, p.vote_hash(did, a, True, vote_salt(did, a))))
    # what the chain shows of a sealed vote: a commitment, no side
    assert set(p.events(rc, p.committee, "VoteCommitted")[0]["args"]) == {"disputeId", "voter", "round"}
    assert p.committee.functions.voteOf(did, a).call() == 0
    expect(p, "AlreadyCommitted", p.by_address(a), p.committee.functions.commitVote(did, bytes(32)))
    err = expect(p, "RevealNotOpen", p.by_address(a), p.committee.functions.revealVote(did, True, vote_salt(did, a)))
    assert err.error_args["commitDeadline"] == p.dispute(did)["commitDeadline"]
    seal_votes(p, did, {b: True, c: True})
    expect(p, "VoteMismatch", p.by_address(a), p.committee.functions.revealVote(did, False, vote_salt(did, a)))
    reveal_votes(p, did, {a: True})
    expect(p, "AlreadyVoted", p.by_address(a), p.committee.functions.revealVote(did, True, vote_salt(did, a)))
    expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
    reveal_votes(p, did, {b: True, c: True})
    p.tx(p.accounts[9], p.committee.functions.resolve(did))  # every seat revealed: no need to wait
    assert p.unit(1)["status"] == FINAL


def test_a_missing_vote_costs_half_the_bond(proto: Protocol) -> None:
    p = proto
    did, _ = rejected_unit(p)
    a, b, silent = _draw(p, did)
    bond = p.params["committeeBond"]
    before = {m: (_stake(p, m), _wallet(p, m)) for m in (a, b, silent)}
    committee_votes(p, did, {a: True, b: True})
    expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
    p.advance(p.params["voteRevealPeriod"] + 1)
    expect(p, "VotingClosed", p.by_address(silent), p.committee.functions.commitVote(did, bytes(32)))
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    penalty = bond * p.committee.functions.MISS_PENALTY_BPS().call() // 10_000
    assert _stake(p, silent) == before[silent][0] - penalty
    assert p.registry.functions.reputationOf(silent).call()[1] == 1
    for m in (a, b):
        assert _stake(p, m) == before[m][0]
        assert _wallet(p, m) == before[m][1] + penalty // 2
    assert p.unit(1)["status"] == FINAL


def test_the_units_validators_solver_opener_and_requester_never_sit(proto: Protocol) -> None:
    """The requester is a validator too here; a challenger opens the dispute over a unit both validators
    accepted. Of six validators, the two of the unit and the requester are out: three of the others sit."""
    p = proto
    requester = p.accounts[1]
    p.tx(requester, p.registry.functions.register(VALIDATOR, (1, 16000, 100, 100 * E18)))
    p.tx(requester, p.registry.functions.stake(1000 * E18))
    p.submit(requester, collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
    w = Work.honest(4)
    claim_and_commit(p, 1, p.accounts[2], w)
    validators = p.unit(1)["validators"]
    truth = {v: (True, w.segments[p.segment_of(1, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, w)
    challenge(p, p.accounts[8], 1, 0)
    did = p.unit(1)["disputeId"]
    members = _draw(p, did)
    parties = {*validators, requester.address, p.accounts[2].address, p.accounts[8].address}
    assert not parties & set(members)
    assert set(members) <= {a.address for a in p.accounts[3:8]} - set(validators) and len(members) == 3


def test_a_stale_seed_is_retargeted_never_replaced_by_a_known_hash(proto: Protocol) -> None:
    p = proto
    did, _ = rejected_unit(p)
    seed_block = p.dispute(did)["seedBlock"]
    assert seed_block == p.dispute(did)["openBlock"] + 1
    p.w3.provider.make_request("anvil_mine", [hex(300), hex(0)])  # type: ignore[arg-type]
    rc = p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    (ev,) = p.events(rc, p.committee, "SeedRetargeted")
    assert ev["args"]["seedBlock"] == rc["blockNumber"] + 1  # a block nobody has seen yet
    assert not p.events(rc, p.committee, "CommitteeDrawn")
    d = p.dispute(did)
    assert not d["drawn"] and d["members"] == [] and d["seedBlock"] == rc["blockNumber"] + 1
    expect(p, "TooEarly", p.accounts[9], p.committee.functions.drawCommittee(did))
    members = _draw(p, did)
    assert len(members) == 3


def test_late_entrants_are_never_drawn(proto: Protocol) -> None:
    """The candidate set is frozen at the opening: a validator registering after it, however much it stakes,
    cannot take a seat (here one seat stays empty rather than go to it)."""
    p = proto
    idle = p.accounts[7]
    p.tx(idle, p.registry.functions.unbond(p.registry.functions.bondedOf(idle.address).call() - 10 * E18))
    did, _ = rejected_unit(p)
    with extra_validators(p, 1, stake=20_000 * E18) as (late,):
        members = _draw(p, did)
        assert late.address not in members and idle.address not in members  # idle: less than a bond free
        assert len(members) == 2


def test_no_quorum_escalates_to_a_committee_twice_as_large(proto: Protocol) -> None:
    """Round 0: one vote of three (no quorum) -> round 1 seats six new members with a fresh seed; their votes and
    round 0's count together. The silent members of round 0 pay; the dispute is decided, not dropped."""
    p = proto
    bond = p.params["committeeBond"]
    with extra_validators(p, 8):  # before the opening: later entrants are never drawn
        did, va = rejected_unit(p)
        r0 = _draw(p, did)
        committee_votes(p, did, {r0[0]: True})
        p.advance(p.params["voteRevealPeriod"] + 1)
        rc = p.tx(p.accounts[9], p.committee.functions.resolve(did))
        p.check_conservation()
        (ev,) = p.events(rc, p.committee, "Escalated")
        assert ev["args"]["round"] == 1 and ev["args"]["size"] == 6
        assert ev["args"]["seedBlock"] == rc["blockNumber"] + 1
        assert not p.events(rc, p.committee, "DisputeResolved")
        for m in r0:
            assert p.registry.functions.lockedOf(m).call() == bond  # judged at the end, still locked
        expect(p, "NotCommitteeMember", p.by_address(r0[1]), p.committee.functions.commitVote(did, bytes(32)))
        r1 = _draw(p, did)
        assert len(r1) == 6 and not set(r1) & set(r0) and va not in r1
        before = {m: _stake(p, m) for m in r0 + r1}
        committee_votes(p, did, dict.fromkeys(r1[:5], True))  # 6 of 9 seats revealed: a quorum
        p.advance(p.params["voteRevealPeriod"] + 1)
        rc = p.tx(p.accounts[9], p.committee.functions.resolve(did))
        p.check_conservation()
        assert p.events(rc, p.committee, "DisputeResolved")[0]["args"]["outcome"] == HONEST
        half = bond // 2
        for m in (r0[1], r0[2], r1[5]):
            assert _stake(p, m) == before[m] - half
        for m in (r0[0], *r1[:5]):
            assert _stake(p, m) == before[m]
            assert p.registry.functions.lockedOf(m).call() == 0
        assert p.unit(1)["status"] == FINAL


def test_the_last_round_times_out_and_nobody_silent_goes_free(proto: Protocol) -> None:
    """Nobody ever votes: three rounds, each ended at its deadline, then NoQuorum. Every seated member paid for
    its silence (to the requester, as nobody revealed); the unit is reopened; the money is all accounted for."""
    p = proto
    did, _ = rejected_unit(p)
    req = p.accounts[1].address
    wallet = _wallet(p, req)
    seated: list[str] = []
    for r in range(3):
        assert p.dispute(did)["round"] == r
        seated += _draw(p, did)  # round 0: three; later rounds: nobody eligible is left
        if r == 0:
            expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
        p.advance(p.params["votingPeriod"] + p.params["voteRevealPeriod"] + 1)
        rc = p.tx(p.accounts[9], p.committee.functions.resolve(did))
        p.check_conservation()
    assert p.events(rc, p.committee, "DisputeResolved")[0]["args"]["outcome"] == NO_QUORUM
    assert len(seated) == 3
    penalty = p.params["committeeBond"] // 2
    assert _wallet(p, req) == wallet + 3 * penalty
    assert p.unit(1)["status"] == OPEN
    for m in seated:
        assert p.registry.functions.lockedOf(m).call() == 0
    assert p.token.functions.balanceOf(p.committee.address).call() == 0


def test_an_undrawn_round_still_has_a_timeout_exit(proto: Protocol) -> None:
    p = proto
    did, _ = rejected_unit(p)
    for _ in range(3):
        d = p.dispute(did)
        err = expect(p, "VotingOpen", p.accounts[9], p.committee.functions.resolve(did))
        assert err.error_args["deadline"] == d["commitDeadline"]
        p.advance(p.params["votingPeriod"] + 1)
        p.mine(2)
        expect(p, "VotingClosed", p.accounts[9], p.committee.functions.drawCommittee(did))
        p.tx(p.accounts[9], p.committee.functions.resolve(did))
        p.check_conservation()
    with pytest.raises(ContractRevert):
        p.tx(p.accounts[9], p.committee.functions.resolve(did))
    assert p.unit(1)["status"] == OPEN


def test_the_draw_is_stake_weighted_and_python_predicts_it(proto: Protocol) -> None:
    """Validators staking 1 to 100 bonds: the contract seats exactly whom `draw_seats` (the same rule in Python)
    predicts from the seed block's hash, the validator set's entries (weights frozen at the opening) and their free
    stake."""
    p = proto
    stakes = [60 * E18, 100 * E18, 200 * E18, 400 * E18, 800 * E18, 5000 * E18]
    with extra_validators(p, len(stakes), stakes=stakes):
        did, va = rejected_unit(p)
        d = p.dispute(did)
        p.mine(2)
        seed = round_seed(bytes(p.w3.eth.get_block(d["seedBlock"])["hash"]), d["unitId"], did, 0)
        n = p.registry.functions.validatorCount(1).call()
        entries = [ValidatorEntry(*p.registry.functions.validatorEntry(1, i).call()) for i in range(n)]
        free = {e.node: p.registry.functions.freeStakeOf(e.node).call() for e in entries}
        parties = {d["solver"], d["opener"], p.accounts[1].address, *p.unit(1)["validators"]}
        want = p.params["committeeSize"]
        predicted = draw_seats(seed, entries, d["openBlock"], free, parties, want, p.params["committeeBond"])
        rc = p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
        assert list(p.events(rc, p.committee, "CommitteeDrawn")[0]["args"]["members"]) == predicted
        assert len(predicted) == want and va not in predicted
