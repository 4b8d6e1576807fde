"""Fine-tuning from a verified model (spec `init.parent_job`) on a market of real daemon processes.

A job that names a completed job of the same model starts its round 0 from that job's final model, which every
node checks against the parent's on-chain final state hash; its validators replay from the same start and
nobody is slashed. A parent that cannot be started from is refused by the requester's tools before any money
moves, and by every solver before it claims when the job is sent straight to the contract.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from gensyn_py.proof.aggregation_unit import load_state, load_weights
from gensyn_py.requester.errors import SubmitError
from gensyn_py.sim.localnet import LocalNetwork
from gensyn_py.sim.market import Market, digits_job_spec
from gensyn_py.sim.poison import PoisonKit
from gensyn_py.train.data import digits
from gensyn_py.types import UnitStatus
from tests.integration.market_kit import (
    assert_conservation,
    assert_every_solver_quarantines,
    first_new_block,
    slashes,
    start_market,
    submit,
    wait_job,
)


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    net = start_market(tmp_path_factory.mktemp("finetune"))
    try:
        yield net
    finally:
        net.stop()


def test_a_job_fine_tunes_a_completed_job_s_final_model_and_nobody_is_slashed(market: LocalNetwork) -> None:
    net = market
    start = first_new_block(net)
    parent = submit(net, steps=60, seed=31)
    wait_job(net, parent)
    child = submit(net, steps=60, seed=32, init={"parent_job": parent})
    wait_job(net, child)

    requester = Market(net, requester_tokens=0).requester
    content, view = requester.content, requester.view
    spec = content.spec(parent)
    final = view.final_unit(parent, spec.rounds, spec.shards)
    assert final is not None
    parent_model = load_weights(content.store.get(content.result(final).cid))
    (unit_id,) = view.unit_ids(child)
    unit = view.unit(unit_id)
    assert unit.status is UnitStatus.FINAL
    _, manifest = content.committed(unit)
    begun = load_state(content.store.get(manifest.checkpoint_cids[0]))  # the child's state at step 0
    assert parent_model and all(torch.equal(begun[f"model/{k}"], v) for k, v in parent_model.items())
    assert not any(k.startswith("optim/") and torch.count_nonzero(v) for k, v in begun.items())  # a fresh optimizer
    ended = load_weights(content.store.get(content.result(unit).cid))
    assert any(not torch.equal(ended[k], v) for k, v in parent_model.items())  # and it trained from there
    assert slashes(net, start) == []
    assert_conservation(net)
    # Another architecture cannot start from these weights: refused before anything is sent.
    with pytest.raises(SubmitError, match=rf"init\.parent_job: job {parent} trained mlp"):
        submit(net, steps=60, seed=33, init={"parent_job": parent}, model={"family": "mlp", "sizes": {"hidden": 32}})


def test_a_parent_that_is_not_completed_is_refused_before_money_moves_and_before_any_claim(
    market: LocalNetwork,
) -> None:
    net = market
    kit = PoisonKit(Market(net, requester_tokens=0))
    requester = kit.market.requester
    before = requester.token.balance_of(requester.address)
    jobs_before = requester.pool.next_job_id()
    dataset = kit.market.put_dataset(digits(image=False)[0])
    orphan = {**digits_job_spec(dataset, 1, 1, 40, 41), "init": {"parent_job": 10_000}}
    with pytest.raises(SubmitError, match=r"init\.parent_job: job 10000 does not exist"):
        submit(net, steps=40, seed=41, init={"parent_job": 10_000})
    assert requester.pool.next_job_id() == jobs_before and requester.token.balance_of(requester.address) == before

    assert_every_solver_quarantines(net, kit, orphan, "init.parent_job: job 10000 does not exist")

