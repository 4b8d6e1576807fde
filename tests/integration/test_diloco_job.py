"""A sharded job under the DiLoCo outer step with the inner optimizer state carried, played to completion
on a real chain: every aggregate recomputed by its validators, the round-1 outer step checked against the
formula, the carried AdamW state visible in round 1's units."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from web3 import Web3

from gensyn_py.proof.aggregation import OUTER, outer_momentum, shard_weights
from gensyn_py.proof.aggregation_unit import UnitResult, load_state, verify_aggregation
from gensyn_py.proof.state import encode_state, state_hash_of_bytes
from gensyn_py.requester.submit import submit_job
from gensyn_py.train.spec import JobSpec, parse_spec
from gensyn_py.types import JobStatus, PhaseState
from tests.integration.test_requester_kit import Deployed, deployed, play_job_to_completion, store_digits, tiny_spec

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here

STEPS = 4
DILOCO = {"rule": "diloco", "outer_lr": 0.7, "outer_momentum": 0.9, "inner_state": "carry"}
ADAMW = {"name": "adamw", "lr": 0.01}


def _state(d: Deployed, unit_id: int) -> dict[str, torch.Tensor]:
    req = d.session()
    return req.content.state_of(req.view.unit(unit_id))


@pytest.fixture(scope="module")
def played(deployed: Deployed, w3: Web3) -> Iterator[tuple[JobSpec, int]]:
    """A 2-round x 2-shard DiLoCo job played to completion (validators recompute each aggregate, the round-1
    one from round 0's); both tests read it, and the chain is put back after them."""
    snap = w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    store_digits(deployed)
    spec = parse_spec(tiny_spec(shards=2, rounds=2, steps_per_unit=STEPS, optimizer=ADAMW, aggregation=DILOCO))
    job_id = submit_job(deployed.session(deployed.requester), spec).job_id
    play_job_to_completion(deployed, job_id)
    yield spec, job_id
    w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]


def test_a_diloco_job_with_carried_inner_state_completes_and_its_outer_steps_recompute(
    deployed: Deployed, played: tuple[JobSpec, int]
) -> None:
    d = deployed
    spec, job_id = played
    req = d.session()
    assert req.view.job_state(job_id).status is JobStatus.COMPLETED
    # every phase (2 rounds x (training, aggregation)) paid, nothing in flight
    assert req.pool.phase_state(job_id) == PhaseState(settling=4, unsettled=0, live=0)
    units = req.view.units(job_id)
    train = {(u.round, u.shard): u.unit_id for u in units if not u.is_aggregation}
    agg = {u.round: u.unit_id for u in units if u.is_aggregation}
    assert sorted(train) == [(0, 0), (0, 1), (1, 0), (1, 1)] and sorted(agg) == [0, 1]

    # pipelined rounds: each later phase opened for claims on the block of the last commitment it is built on,
    # and was armed (its units could commit) on the block of the last verification
    phases = [[train[(0, 0)], train[(0, 1)]], [agg[0]], [train[(1, 0)], train[(1, 1)]], [agg[1]]]
    armed = req.view.logs("PhaseArmed", jobId=job_id)
    assert [(int(e["args"]["round"]), bool(e["args"]["isAggregation"])) for e in armed] == [
        (0, False), (0, True), (1, False), (1, True)]
    for k in range(1, 4):
        committed = max(int(req.view.logs("UnitCommitted", unitId=u)[-1]["blockNumber"]) for u in phases[k - 1])
        verified = max(int(req.view.logs("UnitVerified", unitId=u)[-1]["blockNumber"]) for u in phases[k - 1])
        opened = {int(req.view.logs("UnitOpened", unitId=u)[0]["blockNumber"]) for u in phases[k]}
        assert opened == {committed}, k
        assert int(armed[k]["blockNumber"]) == verified, k
        assert committed < verified, k  # opened early: claims and work overlapped the verdicts

    # carried inner state: AdamW's step counter runs on across rounds (reset would start it again at 0)
    for shard in (0, 1):
        state = _state(d, train[(1, shard)])
        step_keys = [k for k in state if k.startswith("optim/") and k.endswith("/step")]
        assert step_keys and all(float(state[k].reshape(())) == 2 * STEPS for k in step_keys), shard

    # round 1's outer step, recomputed here in NumPy from round 0's aggregate and round 1's results
    before, after = _state(d, agg[0]), _state(d, agg[1])
    finals = [_state(d, train[(1, s)]) for s in (0, 1)]
    sizes = shard_weights(spec)
    total = float(sum(sizes))
    params = sorted(k[len("model/"):] for k in after if k.startswith("model/"))
    assert set(outer_momentum(after)) == set(params)
    for p in params:
        avg = np.zeros(after[f"model/{p}"].shape, dtype=np.float64)
        for w, f in zip(sizes, finals, strict=True):
            avg = avg + f[f"model/{p}"].numpy().astype(np.float64) * (w / total)
        theta = before[f"model/{p}"].numpy().astype(np.float64)
        m = before[f"{OUTER}{p}/momentum"].numpy().astype(np.float64)
        delta = theta - avg
        m_new = m * 0.9 + delta
        theta_new = theta - (delta + m_new * 0.9) * 0.7
        assert np.array_equal(after[f"model/{p}"].numpy(), theta_new.astype(np.float32)), p
        assert np.array_equal(after[f"{OUTER}{p}/momentum"].numpy(), m_new.astype(np.float32)), p


def test_a_diloco_aggregate_that_ignores_or_forges_the_previous_round_is_refused(
    deployed: Deployed, played: tuple[JobSpec, int]
) -> None:
    spec, job_id = played
    req = deployed.session()
    units = req.view.units(job_id)
    agg1 = next(u for u in units if u.is_aggregation and u.round == 1)
    commitment = req.view.commitment(agg1.unit_id)
    assert commitment is not None
    manifest = req.content.manifest(commitment.manifest_cid)
    results = req.content.round_results(job_id, 1)
    previous = req.content.previous_aggregate(job_id, 1)
    assert previous is not None

    def verdict(prev: UnitResult | None) -> Any:
        return verify_aggregation(spec, req.store, job_id, 1, commitment.checkpoint_root, manifest, results,
                                  previous=prev)

    assert verdict(previous).accept
    # an aggregator that ignored round 0 (FedAvg inputs) is refused: the inputs document names the previous unit
    assert not verdict(None).accept
    # a previous aggregate other than the one the chain committed (its momentum changed) is refused, whether it
    # claims the committed hash or its own: the inputs document binds the previous unit's hash and CID
    forged_state = load_state(req.store.get(previous.cid))
    forged_state[f"{OUTER}{sorted(outer_momentum(forged_state))[0]}/momentum"] += 1.0
    forged = encode_state(forged_state)
    cid = req.store.put(forged)
    for claimed in (previous.final_state_hash, state_hash_of_bytes(forged)):
        bad = verdict(UnitResult(previous.unit_id, previous.shard, claimed, cid))
        assert not bad.accept and "aggregation inputs differ" in bad.reason
