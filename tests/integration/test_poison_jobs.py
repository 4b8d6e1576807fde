"""Poison on a real market: every kind of job a hostile requester can post for gas alone, and a misshapen checkpoint.

Each poison job (`gensyn_py/sim/poison.py`) goes straight to `submitJob`, with no requester-side checks; then
a good job. The good job is claimed about as fast as one submitted with no poison ahead of it (measured in the
same test), no daemon exits, nobody honest is slashed or marked missed, money is conserved, no poison job is
claimed, and the solvers list every poison job in their quarantine with its reason.

A checkpoint committed with a wrongly shaped tensor is the solver's fraud: the validators reject it (they do
not crash), the solver alone is slashed, and the unit is redone by an honest solver.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from gensyn_py.chain.view import ChainView
from gensyn_py.sim.localnet import LocalNetwork, wait_until
from gensyn_py.sim.market import COLLATERAL, Market, NodeSpec
from gensyn_py.sim.poison import KINDS, PoisonKit
from gensyn_py.types import Reputation, UnitStatus
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

# What each solver's quarantine says of each kind (a fragment of the reason).
REASONS = {
    "absent_spec": "ContentNotFound",
    "not_a_cid": "not-a-cid",
    "unparseable_spec": "spec",
    "labels_out_of_range": "labels span 10..19",
    "missing_dataset": "ContentNotFound",
    "huge_model": "MiB",
    "too_slow_for_window": "a unit takes about",
    "more_rounds_on_chain": "on-chain rounds is 2",
    "more_shards_on_chain": "on-chain shards is 2",
    "more_segments_on_chain": "segments",
    "wrong_step_table": "step table root",
}


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    # The one game here is lost by a cheater that has no legal move, on its clock: half the local market's 90 s
    # is still many times what the honest side spends on its moves, and the test waits for it to run out.
    net = start_market(tmp_path_factory.mktemp("poison"), gameClock=45, stepGameClock=45)
    try:
        yield net
    finally:
        net.stop()


def _time_to_claim(net: LocalNetwork, job: int, since: float, timeout: float = 120) -> float:
    view = ChainView(protocol(net))

    def claimed() -> bool:
        return any(u.status is not UnitStatus.OPEN for u in view.units(job))

    wait_until(claimed, timeout, f"job {job} to be claimed", every=0.2, on_wait=net.check_alive)
    return time.monotonic() - since


def _quarantined(net: LocalNetwork, role: str = "solver") -> dict[str, dict[int, str]]:
    """Node -> (job -> reason), from each node's `gensyn <role> quarantine list --json`."""
    found: dict[str, dict[int, str]] = {}
    for name, node in net.nodes.items():
        if node.role != role:
            continue
        out = subprocess.run([sys.executable, "-m", "gensyn_py.cli", role, "quarantine", "list", "--json",
                              "--state-dir", str(node.state_dir)], capture_output=True, text=True, check=True)
        entries = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        found[name] = {int(e["job"]): str(e["reason"]) for e in entries}
    return found


def _reputations(net: LocalNetwork) -> dict[str, Reputation]:
    registry = protocol(net).registry()
    return {name: registry.reputation_of(node.account.address) for name, node in net.nodes.items()}


def test_poison_jobs_are_quarantined_and_do_not_delay_a_good_job(market: LocalNetwork) -> None:
    net = market
    start = first_new_block(net)
    warm_up = submit(net, steps=STEPS, seed=1, commit_window=WINDOW)  # the market's first job pays start-up costs
    first = _time_to_claim(net, warm_up, time.monotonic())
    wait_job(net, warm_up)
    reputations = _reputations(net)
    began = time.monotonic()
    baseline_job = submit(net, steps=STEPS, seed=2, commit_window=WINDOW)
    baseline = _time_to_claim(net, baseline_job, began)
    wait_job(net, baseline_job)

    kit = PoisonKit(Market(net, requester_tokens=0), steps=STEPS, window=WINDOW)
    poison = {kind: make(kit) for kind, make in KINDS.items()}

    began = time.monotonic()
    good_job = submit(net, steps=STEPS, seed=5, commit_window=WINDOW)
    poisoned = _time_to_claim(net, good_job, began)
    wait_job(net, good_job)
    print(f"time to claim: first job {first:.1f} s; {baseline:.1f} s with no poison, "
          f"{poisoned:.1f} s behind {len(poison)} poison jobs")

    assert poisoned <= 2 * baseline + 5, (baseline, poisoned)

    def all_quarantined() -> bool:
        return all(set(poison.values()) <= set(jobs) for jobs in _quarantined(net).values())

    wait_until(all_quarantined, 60, "every solver to quarantine every poison job", every=1)
    for solver, jobs in _quarantined(net).items():
        for kind, job in poison.items():
            assert REASONS[kind] in jobs[job], (solver, kind, jobs[job])
    view = ChainView(protocol(net))
    for kind, job in poison.items():
        assert all(u.status is UnitStatus.OPEN for u in view.units(job)), f"{kind} job {job} was claimed"
    net.check_alive()
    assert slashes(net, start) == []
    after = _reputations(net)
    for name, before in reputations.items():
        assert (after[name].missed, after[name].frauds) == (before.missed, before.frauds), name
    assert_conservation(net)


def test_a_misshapen_checkpoint_convicts_its_solver_not_the_validators(market: LocalNetwork) -> None:
    net = market
    # The committee never seats the unit's own validators: a third validator, there before the dispute opens, is
    # the committee (one seat, so one revealed vote is a quorum) where the dispute is the committee's.
    if "validator-3" not in net.nodes:
        Market(net).start_nodes([NodeSpec("validator-3", "validator", 7)])
    start = first_new_block(net)
    reputations = _reputations(net)
    net.kill("solver-1")
    cheater = net.nodes["solver-2"]
    net.restart("solver-2", "--cheat", "misshapen_weights")
    try:
        job = submit(net, steps=STEPS, seed=21, commit_window=WINDOW)
        view = ChainView(protocol(net))
        unit_id = view.unit_ids(job)[0]
        # The dispute goes to the game (a repro job): a cheater with no legal move loses once its clock runs out.
        clock = int(protocol(net)["SegmentGame"].functions.clock().call())
        wait_until(lambda: view.unit(unit_id).status is UnitStatus.OPEN and slashes(net, start), 120 + clock,
                   "the cheater to be slashed and the unit reopened", on_wait=net.check_alive)
        net.restart("solver-1")
        wait_job(net, job)
    finally:
        cheater.args = [a for a in cheater.args if a not in ("--cheat", "misshapen_weights")]
        net.restart("solver-2")
    assert slashes(net, start) == [(cheater.account.address, COLLATERAL)]
    assert view.unit(unit_id).solver == net.nodes["solver-1"].account.address
    after = _reputations(net)
    for name in ("validator-1", "validator-2", "validator-3", "challenger"):
        assert (after[name].missed, after[name].frauds) == (reputations[name].missed, reputations[name].frauds)
        assert not protocol(net).registry().is_jailed(net.nodes[name].account.address), name
    assert _quarantined(net, "validator") == {"validator-1": {}, "validator-2": {}, "validator-3": {}}  # no crash
    # a good job right after is served as usual
    good = submit(net, steps=STEPS, seed=22, commit_window=WINDOW)
    wait_job(net, good)
    net.check_alive()
    assert_conservation(net)
