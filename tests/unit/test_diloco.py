"""The DiLoCo outer step and the carried inner optimizer state: spec rules, the aggregate's arithmetic
over rounds, its bytes, what an aggregation starts from, and a Trainer started with a carried state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from gensyn_py.errors import SpecError, TrainingError, VerificationError
from gensyn_py.proof.aggregation import OUTER, OuterState, aggregate, aggregate_traced, outer_momentum
from gensyn_py.proof.aggregation_unit import (
    UnitResult,
    commit_aggregation,
    load_state,
    load_weights,
    outer_start,
    verify_aggregation,
)
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.train.trainer import Trainer, init_weights

from .trainkit import dataset_for, store_at, tiny_spec

DILOCO = {"rule": "diloco", "outer_lr": 0.5, "outer_momentum": 0.8}


def finals(spec_over: dict[str, Any], rnd: int = 0, start: dict[str, torch.Tensor] | None = None
           ) -> list[dict[str, torch.Tensor]]:
    spec = tiny_spec(**spec_over)
    out = []
    for shard in range(spec.shards):
        t = Trainer(spec, dataset_for("mlp"), rnd, shard, "cpu", start)
        t.run(spec.steps_per_unit)
        out.append(t.state_dict())
    return out


def test_the_spec_takes_diloco_for_sharded_jobs_only() -> None:
    assert tiny_spec(aggregation=DILOCO).aggregation.rule == "diloco"
    assert tiny_spec().aggregation.rule == "average" and tiny_spec().aggregation.inner_state == "reset"
    with pytest.raises(SpecError, match="sharded jobs only"):
        tiny_spec(shards=1, aggregation=DILOCO)
    with pytest.raises(SpecError):
        tiny_spec(aggregation={"rule": "diloco", "outer_momentum": 1.0})
    with pytest.raises(SpecError):
        tiny_spec(aggregation={"rule": "nesterov"})


def test_two_rounds_of_outer_steps_follow_the_formula_and_carry_the_momentum() -> None:
    spec = tiny_spec(aggregation=DILOCO)
    theta0 = init_weights(spec)
    f0 = finals({"aggregation": DILOCO})
    a0 = aggregate(spec, f0, OuterState(theta0, {}))
    avg0 = aggregate(tiny_spec(), f0)  # the same results under FedAvg: the average
    m0 = outer_momentum({k: v for k, v in a0.items() if k.startswith(OUTER)})
    assert set(m0) == set(theta0)
    for k in theta0:
        delta = theta0[k].double() - avg0[k].double()
        assert torch.allclose(m0[k].double(), delta, atol=1e-6)  # zero momentum before: m1 = delta
        # theta1 = theta0 - 0.5 * (delta + 0.8 * delta) = theta0 - 0.9 * delta
        assert torch.allclose(a0[k].double(), theta0[k].double() - 0.9 * delta, atol=1e-6)
    weights1 = {k: v for k, v in a0.items() if not k.startswith(OUTER)}
    f1 = finals({"aggregation": DILOCO}, 1, weights1)
    a1 = aggregate(spec, f1, OuterState(weights1, m0))
    avg1 = aggregate(tiny_spec(), f1)
    for k in theta0:
        delta = weights1[k].double() - avg1[k].double()
        m = 0.8 * m0[k].double() + delta
        assert torch.allclose(a1[f"{OUTER}{k}/momentum"].double(), m, atol=1e-6)
        assert torch.allclose(a1[k].double(), weights1[k].double() - 0.5 * (delta + 0.8 * m), atol=1e-6)


def test_the_average_rule_is_unchanged_and_diloco_needs_its_start() -> None:
    f0 = finals({})
    merged, digest = aggregate_traced(tiny_spec(), f0)
    assert not any(k.startswith(OUTER) for k in merged)
    again, digest_again = aggregate_traced(tiny_spec(), f0)
    assert digest == digest_again and all(torch.equal(merged[k], again[k]) for k in merged)
    with pytest.raises(VerificationError, match="start weights and outer momentum"):
        aggregate(tiny_spec(aggregation=DILOCO), f0)
    with pytest.raises(VerificationError, match="start weights"):
        aggregate(tiny_spec(aggregation=DILOCO), f0, OuterState({}, {}))


def test_aggregation_units_of_two_rounds_commit_and_verify(tmp_path: Path) -> None:
    spec, store = tiny_spec(aggregation=DILOCO), store_at(tmp_path)

    def results(states: list[dict[str, torch.Tensor]], first_id: int) -> list[UnitResult]:
        from gensyn_py.proof.state import encode_state

        out = []
        for shard, s in enumerate(states):
            data = encode_state(s)
            out.append(UnitResult(first_id + shard, shard, state_hash_of_bytes(data), store.put(data)))
        return out

    r0 = results(finals({"aggregation": DILOCO}), 1)
    c0 = commit_aggregation(spec, store, 1, 0, r0)
    prev = UnitResult(3, 2**32 - 1, c0.final_state_hash, c0.manifest.checkpoint_cids[-1])
    assert verify_aggregation(spec, store, 1, 0, c0.checkpoint_root, c0.manifest, r0).accept
    agg0 = load_state(store.get(prev.cid))
    assert any(k.startswith(OUTER) for k in agg0)
    assert load_weights(store.get(prev.cid)).keys() == init_weights(spec).keys()
    r1 = results(finals({"aggregation": DILOCO}, 1, load_weights(store.get(prev.cid))), 4)
    c1 = commit_aggregation(spec, store, 1, 1, r1, previous=prev)
    assert verify_aggregation(spec, store, 1, 1, c1.checkpoint_root, c1.manifest, r1, previous=prev).accept
    assert not verify_aggregation(spec, store, 1, 1, c1.checkpoint_root, c1.manifest, r1).accept
    # a previous aggregate whose bytes are not its committed hash is refused where it is read
    lie = UnitResult(prev.unit_id, prev.shard, bytes(32), prev.cid)
    with pytest.raises(VerificationError, match="does not match its on-chain final state hash"):
        outer_start(spec, store, lie, None)
    # a previous unit that is not an aggregate (no outer momentum) is refused too
    with pytest.raises(VerificationError, match="lacks its outer momentum"):
        outer_start(spec, store, r0[0], None)


def test_a_trainer_starts_with_a_carried_optimizer_state_and_refuses_a_misfit() -> None:
    over: dict[str, Any] = {"optimizer": {"name": "adamw", "lr": 0.01}, "aggregation": {"inner_state": "carry"},
                            "mode": "repro"}
    spec = tiny_spec(**over)
    t = Trainer(spec, dataset_for("mlp"), 0, 0, "cpu")
    t.run(spec.steps_per_unit)
    end = t.state_dict()
    start = {**t.weights(), **{k: v for k, v in end.items() if k.startswith("optim/")}}
    nxt = Trainer(spec, dataset_for("mlp"), 1, 0, "cpu", start)
    carried = nxt.engine.optim_state()
    assert carried.keys() == {k for k in end if k.startswith("optim/")}
    assert all(torch.equal(carried[k], end[k]) for k in carried)
    bad = dict(start)
    key = next(k for k in bad if k.endswith("/exp_avg"))
    bad[key] = torch.zeros(3)
    with pytest.raises(TrainingError, match="optimizer state"):
        Trainer(spec, dataset_for("mlp"), 1, 0, "cpu", bad)


def test_a_fine_tune_s_round_0_outer_step_starts_from_its_parent_s_model(tmp_path: Path) -> None:
    """Round 0 of a `diloco` fine-tune steps from the parent's weights (the shards' start), not the seeded init:
    the aggregate committed with that start verifies only with it."""
    from gensyn_py.proof.state import encode_state

    spec, store = tiny_spec(aggregation=DILOCO), store_at(tmp_path)
    parent = {k: v + 0.25 for k, v in init_weights(spec).items()}
    outer = outer_start(spec, store, None, None, parent)
    assert outer is not None and all(torch.equal(outer.weights[k], v) for k, v in parent.items())
    states = finals({"aggregation": DILOCO}, 0, parent)
    r0 = [UnitResult(1 + s, s, state_hash_of_bytes(encode_state(x)), store.put(encode_state(x)))
          for s, x in enumerate(states)]
    c0 = commit_aggregation(spec, store, 1, 0, r0, start=parent)
    assert verify_aggregation(spec, store, 1, 0, c0.checkpoint_root, c0.manifest, r0, start=parent).accept
    assert not verify_aggregation(spec, store, 1, 0, c0.checkpoint_root, c0.manifest, r0).accept  # seeded init
