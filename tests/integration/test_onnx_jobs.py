"""Bring-your-own models on a market of real daemon processes: an ONNX language model trains in mode repro,
its validators replay it exactly, and a second job fine-tunes its result; a model file the network cannot run
is refused by the requester's tools before money moves, and by every solver before it claims when the job is
sent straight to the contract."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from gensyn_py.errors import SpecError
from gensyn_py.proof.aggregation_unit import load_state, load_weights
from gensyn_py.sim.localnet import LocalNetwork
from gensyn_py.sim.market import Market
from gensyn_py.sim.poison import PoisonKit
from gensyn_py.storage.cid import cid_for_bytes
from gensyn_py.types import UnitStatus
from tests.integration.market_kit import (
    assert_conservation,
    assert_every_solver_quarantines,
    first_new_block,
    slashes,
    start_market,
    wait_job,
)
from tests.unit.onnxkit import BATCH, gpt_bytes, token_windows


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    net = start_market(tmp_path_factory.mktemp("onnx"))
    try:
        yield net
    finally:
        net.stop()


def onnx_job(market: Market, data: bytes, seed: int, **over: Any) -> dict[str, Any]:
    market.requester.store.put(data)
    return {
        "version": 1,
        "model": {"family": "onnx", "onnx": {"cid": cid_for_bytes(data), "size_bytes": len(data)}},
        "optimizer": {"name": "adamw", "lr": 0.01},
        "batch_size": BATCH,
        "steps_per_unit": 40,
        "checkpoint_interval": 20,
        "seed": seed,
        "mode": "repro",
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
        "dataset": market.put_dataset(token_windows()),
        **over,
    }


def test_an_onnx_lm_trains_verifies_and_is_fine_tuned_and_nobody_is_slashed(market: LocalNetwork) -> None:
    net = market
    start = first_new_block(net)
    m = Market(net, requester_tokens=0)
    parent = m.submit(onnx_job(m, gpt_bytes(), seed=51)).job_id
    wait_job(net, parent)
    child = m.submit(onnx_job(m, gpt_bytes(), seed=52, init={"parent_job": parent})).job_id
    wait_job(net, child)

    content, view = m.requester.content, m.requester.view
    spec = content.spec(parent)
    final = view.final_unit(parent, spec.rounds, spec.shards)
    assert final is not None and final.status is UnitStatus.FINAL
    _, manifest = content.committed(final)
    first = load_state(content.store.get(manifest.checkpoint_cids[0]))
    from gensyn_py.train.graphs.graph import parse_graph

    shipped = parse_graph(gpt_bytes()).params
    assert all(np.array_equal(first[f"model/{k}"].numpy(), v) for k, v in shipped.items())  # from the file
    parent_model = load_weights(content.store.get(content.result(final).cid))
    (unit_id,) = view.unit_ids(child)
    unit = view.unit(unit_id)
    _, child_manifest = content.committed(unit)
    begun = load_state(content.store.get(child_manifest.checkpoint_cids[0]))
    assert all(torch.equal(begun[f"model/{k}"], v) for k, v in parent_model.items())  # from the parent's result
    assert slashes(net, start) == []
    assert_conservation(net)


def test_a_model_file_with_an_op_off_the_whitelist_is_refused_before_money_moves_and_before_any_claim(
    market: LocalNetwork,
) -> None:
    net = market
    kit = PoisonKit(Market(net, requester_tokens=0))
    m = kit.market
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [BATCH, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, 8, 32])
    table = helper.make_tensor("table", TensorProto.FLOAT, [32, 32], np.ones(32 * 32, np.float32).tolist())
    nodes = [helper.make_node("Gather", ["table", "x"], ["e"], name="embed"),
             helper.make_node("LpNormalization", ["e"], ["y"], name="odd-norm")]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[table])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString()
    spec = onnx_job(m, data, seed=61)
    requester = m.requester
    before = requester.token.balance_of(requester.address)
    jobs_before = requester.pool.next_job_id()
    with pytest.raises(SpecError, match=r"node 'odd-norm' uses op LpNormalization"):
        m.submit(spec)
    assert requester.pool.next_job_id() == jobs_before and requester.token.balance_of(requester.address) == before

    assert_every_solver_quarantines(net, kit, spec, "node 'odd-norm' uses op LpNormalization")


def test_a_job_on_a_chunked_dataset_settles_and_nobody_is_slashed(market: LocalNetwork) -> None:
    """The daemons read a dataset stored as chunks under a manifest, fetching chunks as their steps read them, and
    check a step table the requester published for their own units only."""
    from gensyn_py.sim.market import digits_job_spec
    from gensyn_py.train.chunks import chunked_entry, split
    from gensyn_py.train.data import digits

    net = market
    start = first_new_block(net)
    m = Market(net, requester_tokens=0)
    ds = digits(image=False)[0]
    manifest, files = split(ds, 100)
    for f in files:
        m.requester.store.put(f)
    data = manifest.to_bytes()
    m.requester.store.put(data)
    spec = {**digits_job_spec(chunked_entry(ds, manifest, data), 1, 2, 40, 71), "mode": "repro"}
    job = m.submit(spec).job_id
    # the requester published the step table, so each node checks its own unit's entries and reads its own chunks
    assert m.requester.content.spec(job).step_table is not None
    wait_job(net, job)
    assert slashes(net, start) == []
    assert_conservation(net)
