"""End-to-end plays: honest work pays everyone and slashes nobody; cheats are slashed.

Every play runs on anvil (the contracts as deployed: cancun) and on Ganache 7, which
stops at shanghai: there the contracts are compiled for shanghai, where OpenZeppelin's
storage ReentrancyGuard stands in for the transient one (see compiler.PRE_CANCUN).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from eth_utils import keccak
from web3 import Web3

from gensyn_py.devnet.compiler import compile_contracts
from gensyn_py.devnet.ganache import HARDFORK, GanacheNode
from tests.contracts.flows import challenge, claim_and_commit, commit_verdicts, committee_votes, honest_unit, reveal
from tests.contracts.helpers import DISPUTED, E18, FINAL, OPEN, VERIFIED, Protocol, Work


@pytest.fixture(scope="module", params=["anvil", "ganache"])
def chain_proto(request: pytest.FixtureRequest) -> Iterator[Protocol]:
    if request.param == "anvil":
        yield request.getfixturevalue("proto_base")
        return
    with GanacheNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 30}))
        p = Protocol(w3, request.getfixturevalue("accounts"), compile_contracts(evm_version=HARDFORK))
        p.standard_cast()
        yield p


@pytest.fixture
def proto(chain_proto: Protocol) -> Iterator[Protocol]:
    """The chain as it was before the test, restored after it."""
    snap = chain_proto.w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    chain_proto.gas_used = 0
    yield chain_proto
    chain_proto.w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]


def _stakes(p: Protocol) -> dict[str, int]:
    return {a.address: p.registry.functions.bondedOf(a.address).call() for a in p.accounts[2:9]}


def test_honest_single_unit_job_pays_everyone_and_slashes_nobody(proto: Protocol) -> None:
    p = proto
    requester, solver = p.accounts[1], p.accounts[2]
    before = _stakes(p)
    job = p.submit(requester)
    p.check_conservation()
    work = Work.honest(4)
    honest_unit(p, 1, solver, work)
    assert p.unit(1)["status"] == FINAL
    assert p.pool.functions.jobState(job).call()[1] == 2  # Completed
    assert _stakes(p) == before
    assert p.pool.functions.credit(solver.address).call() == 100 * E18
    for v in p.unit(1)["validators"]:
        assert p.pool.functions.credit(v).call() == p.params["validatorFee"]
    # unspent budget (max price - price) is back with the requester
    assert p.pool.functions.credit(requester.address).call() == 100 * E18
    assert p.registry.functions.lockedOf(solver.address).call() == 0
    assert p.registry.functions.reputationOf(solver.address).call() == [1, 0, 0]
    for a in (requester, solver):
        p.tx(a, p.pool.functions.claimCredit())
        p.check_conservation()
    print(f"\n1x1 job lifecycle gas (all txs after setup): {p.gas_used}")


def test_two_shards_two_rounds_runs_aggregation_units_in_order(proto: Protocol) -> None:
    p = proto
    job = p.submit(p.accounts[1], rounds=2, shards=2)
    solver = p.accounts[2]
    work = Work.honest(4)
    agg = Work.honest(1, b"agg")
    honest_unit(p, 1, solver, work)
    # one training unit final: aggregation not yet open
    assert p.pool.functions.nextUnitId().call() == 3
    honest_unit(p, 2, solver, work)
    u3 = p.unit(3)
    assert u3["status"] == OPEN and u3["shard"] == 2**32 - 1
    honest_unit(p, 3, solver, agg)
    assert p.unit(4)["round"] == 1 and p.unit(5)["round"] == 1
    honest_unit(p, 4, solver, work)
    honest_unit(p, 5, solver, work)
    honest_unit(p, 6, solver, agg)
    assert p.pool.functions.jobState(job).call()[1] == 2
    assert p.pool.functions.totalEscrow().call() == 0
    p.check_conservation()


def test_solver_with_wrong_transcript_is_rejected_voted_down_and_slashed(proto: Protocol) -> None:
    p = proto
    requester, solver = p.accounts[1], p.accounts[2]
    p.submit(requester)
    truth = Work.honest(4)
    fake = Work([(s, e, keccak(b"fake" + t)) for s, e, t in truth.segments])  # committed transcripts are lies
    claim_and_commit(p, 1, solver, fake)
    va, vb = p.unit(1)["validators"]
    seg_a, seg_b = p.segment_of(1, 0), p.segment_of(1, 1)
    # va colludes (knows the fake preimage) and accepts; vb replays, finds the true transcript and rejects
    commit_verdicts(p, 1, {va: (True, fake.segments[seg_a][2]), vb: (False, truth.segments[seg_b][2])})
    reveal(p, 1, va, True, fake.segments[seg_a][2], fake)
    stake_a = p.registry.functions.bondedOf(va).call()
    reveal(p, 1, vb, False, truth.segments[seg_b][2], fake)
    u = p.unit(1)
    assert u["status"] == DISPUTED
    did = u["disputeId"]
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    members = p.committee.functions.membersOf(did).call()
    # neither the unit's validators nor its solver sit: three validators are left, and all three do
    assert solver.address not in members and vb not in members and va not in members and len(members) == 3
    committee_votes(p, did, dict.fromkeys(members, False))
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    collateral, bond = 300 * E18, p.params["validatorBond"]
    assert p.registry.functions.bondedOf(solver.address).call() == 1000 * E18 - collateral
    assert p.registry.functions.isJailed(solver.address).call()
    assert p.registry.functions.reputationOf(solver.address).call()[2] == 1
    # va answers only for its own segment: slashed if the draw gave it the segment proven wrong, otherwise
    # (its accept was never proven wrong) released and paid its fee out of the pot.
    same = seg_a == seg_b
    fee = p.params["validatorFee"]
    assert p.registry.functions.bondedOf(va).call() == stake_a - (bond if same else 0)
    assert p.registry.functions.bondedOf(vb).call() == 1000 * E18
    pot = collateral + bond if same else collateral - fee
    if not same:
        assert p.pool.functions.credit(va).call() >= fee
    share = pot * p.params["committeeRewardBps"] // 10_000 // len(members)
    assert p.pool.functions.credit(vb).call() == pot - share * len(members)
    assert all(p.pool.functions.credit(m).call() == share for m in members)
    assert all(p.registry.functions.lockedOf(m).call() == 0 for m in members)
    assert p.unit(1)["status"] == OPEN  # the work is redone by someone else
    # the jailed solver can no longer claim
    p.advance(p.params["claimWindow"])
    from gensyn_py.errors import ContractRevert

    with pytest.raises(ContractRevert) as exc:
        p.tx(solver, p.pool.functions.claim(1))
    assert exc.value.name == "NodeJailed"


def test_failed_challenge_costs_the_challenger_its_bond(proto: Protocol) -> None:
    p = proto
    solver, challenger = p.accounts[2], p.accounts[8]
    p.submit(p.accounts[1])
    work = Work.honest(4)
    claim_and_commit(p, 1, solver, work)
    validators = p.unit(1)["validators"]
    truth = {v: (True, work.segments[p.segment_of(1, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, work)
    assert p.unit(1)["status"] == VERIFIED
    bal = p.token.functions.balanceOf(challenger.address).call()
    challenge(p, challenger, 1, 3)
    p.check_conservation()
    assert p.pool.functions.totalBonds().call() == p.params["challengeBond"]
    did = p.unit(1)["disputeId"]
    p.mine(2)
    p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
    committee_votes(p, did, dict.fromkeys(p.committee.functions.membersOf(did).call(), True))
    p.tx(p.accounts[9], p.committee.functions.resolve(did))
    p.check_conservation()
    assert p.unit(1)["status"] == FINAL
    assert p.token.functions.balanceOf(challenger.address).call() == bal - p.params["challengeBond"]
    assert p.pool.functions.credit(challenger.address).call() == 0
    assert p.pool.functions.totalBonds().call() == 0
    assert p.pool.functions.credit(solver.address).call() > 100 * E18  # price + most of the forfeited bond


def test_validator_no_shows_are_penalised_and_skipped(proto: Protocol) -> None:
    p = proto
    requester, solver = p.accounts[1], p.accounts[2]
    p.submit(requester)
    work = Work.honest(4)
    claim_and_commit(p, 1, solver, work)
    va, vb = p.unit(1)["validators"]
    seg_a = p.segment_of(1, 0)
    commit_verdicts(p, 1, {va: (True, work.segments[seg_a][2])})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, 1, va, True, work.segments[seg_a][2], work)
    p.advance(p.params["revealWindow"] + 1)
    p.tx(p.accounts[9], p.pool.functions.closeVerdicts(1))
    p.check_conservation()
    penalty = p.params["validatorBond"] * p.params["livenessPenaltyBps"] // 10_000
    assert p.registry.functions.bondedOf(vb).call() == 1000 * E18 - penalty
    assert p.registry.functions.lockedOf(vb).call() == 0
    assert p.registry.functions.reputationOf(vb).call()[1] == 1
    assert p.pool.functions.credit(requester.address).call() == penalty
    p.advance(p.params["challengeWindow"] + 1)
    p.tx(p.accounts[9], p.pool.functions.finalize(1))
    p.check_conservation()
    assert p.pool.functions.credit(vb).call() == 0
    assert p.pool.functions.credit(va).call() == p.params["validatorFee"]
