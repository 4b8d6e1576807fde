"""Attack 9 on a real market (issue 11): a solver withholds its final checkpoint, or its manifest.

Real anvil, real daemon processes, a real (js-)IPFS node as the content store. The cheater trains honestly, so
replay alone would accept its segments, but it never publishes the model the requester pays for (or the
manifest that lists its checkpoints). The validators fetch the manifest and the final checkpoint besides their
segment's start checkpoint, find one missing and reveal "unavailable"; the cheater cannot answer, so
`closeVerdicts` slashes its whole collateral and reopens the unit; an honest solver then delivers a model the
requester downloads and verifies. Nobody honest loses: the validators keep their stake and record, and the
requester pays only for the honest attempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gensyn_py.chain.decision_block import decision_block
from gensyn_py.chain.view import ChainView
from gensyn_py.requester.availability import ModelGuard
from gensyn_py.requester.download import download_model
from gensyn_py.requester.session import Requester
from gensyn_py.sim.localnet import LocalNetwork, wait_until
from gensyn_py.sim.market import COLLATERAL, Market, NodeSpec
from gensyn_py.storage.factory import open_store
from gensyn_py.storage.local import LocalStore
from gensyn_py.types import Reputation, UnitStatus
from tests.integration.ipfs_daemon import JsIpfsDaemon
from tests.integration.market_kit import (
    assert_conservation,
    first_new_block,
    protocol,
    slashes,
    start_market,
    submit,
    wait_job,
)

STEPS = 40
WINDOW = 60
HONEST = ("validator-1", "validator-2", "challenger")
CHEATERS = {"withheld_final_checkpoint": 7, "withheld_manifest": 8}  # a fresh dev key each: a cheater is jailed


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    with JsIpfsDaemon() as ipfs:
        # Windows long enough for a validator's two probes of a missing CID (5 s each) inside the commit window.
        net = start_market(tmp_path_factory.mktemp("withheld"), store=ipfs.api_url,
                           verdictCommitWindow=30, revealWindow=20)
        try:
            yield net
        finally:
            net.stop()


def _holdings(net: LocalNetwork, address: str) -> int:
    p = protocol(net)
    registry = p.registry()
    # One block, whole (`chain/decision_block.py`): the solvers claim their credit meanwhile, and a claim landing
    # between the balance and the credit read would hide what was paid.
    at = decision_block(net.w3)
    return (p.token().balance_of(address, block=at) + p.pool().credit(address, block=at)
            + registry.bonded_of(address, block=at) + registry.unbonding_of(address, block=at).amount)


def _reputations(net: LocalNetwork) -> dict[str, Reputation]:
    registry = protocol(net).registry()
    return {name: registry.reputation_of(node.account.address) for name, node in net.nodes.items()}


def _paid_out(net: LocalNetwork, job: int, from_block: int) -> int:
    """What the job's final units paid (solver and validators): all the requester should have spent."""
    view = ChainView(protocol(net))
    units = set(view.unit_ids(job))
    logs = protocol(net)["TaskPool"].events["UnitFinalized"]().get_logs(from_block=from_block)
    return sum(int(e["args"]["solverPay"]) + int(e["args"]["validatorPay"]) for e in logs
               if int(e["args"]["unitId"]) in units)


@pytest.mark.parametrize("cheat", sorted(CHEATERS))
def test_a_solver_withholding_its_data_is_slashed_and_an_honest_one_delivers(
    market: LocalNetwork, cheat: str, tmp_path: Path
) -> None:
    net = market
    start = first_new_block(net)
    reputations = _reputations(net)
    requester = net.account(1)
    honest_before = {name: _holdings(net, net.nodes[name].account.address) for name in HONEST}
    requester_before = _holdings(net, requester.address)
    net.kill("solver-1")
    net.kill("solver-2")  # the cheater alone takes the job
    Market(net).start_nodes([NodeSpec(f"cheater-{cheat}", "solver", CHEATERS[cheat], ("--cheat", cheat))])
    cheater = net.nodes[f"cheater-{cheat}"]
    cheater_before = _holdings(net, cheater.account.address)
    view = ChainView(protocol(net))
    try:
        job = submit(net, steps=STEPS, seed=30 + CHEATERS[cheat], commit_window=WINDOW)
        unit_id = view.unit_ids(job)[0]
        wait_until(lambda: slashes(net, start) and view.unit(unit_id).status is UnitStatus.OPEN, 240,
                   "the withholding solver to be slashed and its unit reopened", on_wait=net.check_alive)
        assert protocol(net)["TaskPool"].events["UnavailabilityReported"]().get_logs(from_block=start)
    finally:
        net.kill(cheater.name)  # jailed: it stays out of the way
        net.restart("solver-1")
        net.restart("solver-2")
    wait_job(net, job, timeout=240)
    # the cheater lost its whole collateral, nobody else lost anything
    assert slashes(net, start) == [(cheater.account.address, COLLATERAL)]
    assert protocol(net).registry().is_jailed(cheater.account.address)
    assert _holdings(net, cheater.account.address) == cheater_before - COLLATERAL
    after = _reputations(net)
    for name in HONEST:
        address = net.nodes[name].account.address
        assert (after[name].missed, after[name].frauds) == (reputations[name].missed, reputations[name].frauds), name
        assert not protocol(net).registry().is_jailed(address), name
        assert _holdings(net, address) >= honest_before[name], name  # stake kept, fees and the pot earned
    # the requester paid only for the honest attempt, and downloads a model that matches the chain
    assert _holdings(net, requester.address) >= requester_before - _paid_out(net, job, start)
    req = Requester(protocol(net), open_store(net.store_spec), requester)
    done = download_model(req, job, tmp_path / "model.safetensors")
    assert done.size > 0 and view.unit(done.unit_id).solver != cheater.account.address
    lines: list[str] = []
    ModelGuard(req, job, say=lines.append).check(view.unit(done.unit_id))  # the model is there: no claim
    assert lines == [f"unit {done.unit_id}: model available and verified"]
    net.check_alive()
    assert_conservation(net)


def test_a_false_report_is_answered_by_the_honest_solver_and_earns_the_reporter_nothing_extra(
    market: LocalNetwork, tmp_path: Path
) -> None:
    net = market
    start = first_new_block(net)
    liar = net.nodes["validator-2"]
    net.restart("validator-2", "--false-report")  # reports every unit's data missing once, though it is there
    pool = protocol(net)["TaskPool"]
    names = ("solver-1", "solver-2", "validator-1", "validator-2")
    before = {name: _holdings(net, net.nodes[name].account.address) for name in names}
    try:
        job = submit(net, steps=STEPS, seed=41, commit_window=WINDOW)
        wait_job(net, job, timeout=240)
    finally:
        liar.args = [a for a in liar.args if a != "--false-report"]
        net.restart("validator-2")
    reported = pool.events["UnavailabilityReported"]().get_logs(from_block=start)
    answered = pool.events["UnavailabilityAnswered"]().get_logs(from_block=start)
    assert [e["args"]["validator"] for e in reported] == [liar.account.address]
    assert len(answered) == 1  # the honest solver's daemon answered on its own
    assert slashes(net, start) == []  # nobody slashed: the solver answered, the reporter then revealed
    fee = protocol(net).pool().params().validator_fee
    assert _holdings(net, liar.account.address) <= before["validator-2"] + fee  # at most its normal fee
    solvers = sum(_holdings(net, net.nodes[n].account.address) - before[n] for n in ("solver-1", "solver-2"))
    assert solvers > 0  # the honest solver was paid its price
    req = Requester(protocol(net), open_store(net.store_spec), net.account(1))
    assert download_model(req, job, tmp_path / "model.safetensors").size > 0
    net.check_alive()
    assert_conservation(net)


def test_a_model_deleted_after_verification_is_claimed_by_the_requester_and_its_solver_slashed(
    tmp_path: Path
) -> None:
    """The requester's side of attack 9: the model disappears once the validators checked it. The requester's
    tooling fetches it while the unit is Verified, fails, and claims; the solver cannot answer (its copy is gone)
    and is slashed; another solver delivers. Its own small market on a local store, where deleting is easy."""
    net = start_market(tmp_path / "net", nodes={"solver-1": ("solver", 2), "solver-2": ("solver", 3),
                       "validator-1": ("validator", 4), "validator-2": ("validator", 5)},
                       verdictCommitWindow=30, revealWindow=20, challengeWindow=25)  # room to claim
    try:
        start = first_new_block(net)
        view = ChainView(protocol(net))
        job = submit(net, steps=STEPS, seed=51, commit_window=WINDOW)
        unit_id = view.unit_ids(job)[0]
        wait_until(lambda: view.unit(unit_id).status is UnitStatus.VERIFIED, 180, "the unit to be verified",
                   on_wait=net.check_alive)
        unit = view.unit(unit_id)
        solver = unit.solver
        req = Requester(protocol(net), open_store(net.store_spec), net.account(1))
        final_cid = req.content.result(unit).cid
        LocalStore(net.store_spec.removeprefix("local:")).path_for(final_cid).unlink()  # the solver deletes it
        lines: list[str] = []
        guard = ModelGuard(req, job, say=lines.append)
        guard.check(view.unit(unit_id))
        assert guard.claims == [unit_id], lines
        assert protocol(net).pool().availability(unit_id).claim_pending
        wait_until(lambda: slashes(net, start) and view.unit(unit_id).status is not UnitStatus.VERIFIED, 120,
                   "the solver to be slashed for the unanswered claim", on_wait=net.check_alive)
        wait_job(net, job, timeout=240)
        assert slashes(net, start) == [(solver, COLLATERAL)]
        assert view.unit(unit_id).solver != solver
        assert download_model(req, job, tmp_path / "model.safetensors").size > 0
        for name in ("validator-1", "validator-2"):
            assert not protocol(net).registry().is_jailed(net.nodes[name].account.address)
        net.check_alive()
        assert_conservation(net)
    finally:
        net.stop()
