"""Aggregation across rounds: the global model's loss after N rounds under FedAvg and under DiLoCo's outer
step, on the same job.

The job: the digits MLP (hidden 64), AdamW inner steps, `SHARDS` shards, `ROUNDS` rounds of `STEPS` inner
steps per unit, repro mode.  Each round every shard trains from the global model with the real Trainer; the
round's aggregate is the real aggregation (`gensyn_py/proof/aggregation.py`, the bytes an aggregation unit
commits); the loss is the global model's cross-entropy over the held-out digits (never trained on), in
float64, after every round.  Four variants of the same job differ only in the spec's `aggregation`:
  average/reset   FedAvg, a fresh inner optimizer each round (the protocol's default before DiLoCo)
  average/carry   FedAvg, each shard's inner optimizer state carried into its next unit
  diloco/reset    the outer Nesterov step (outer_lr 0.7, outer_momentum 0.9, the DiLoCo paper's), fresh inner state
  diloco/carry    the outer Nesterov step with the inner state carried (the DiLoCo paper's setting)
One JSON line last:
  diloco_loss_ratio            diloco/carry's final loss over average/reset's (goal below 1)
  diloco_loss_ratio_same_inner diloco/reset's over average/reset's (the outer step alone)
  losses                       every variant's loss after each round
Not measured here: `ddp_repro_equal` and `ddp_speedup` (a data-parallel unit across processes is not built).
Usage: .venv/bin/python bench/scale.py [--rounds N] [--steps H]   (about a minute on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from gensyn_py.proof.aggregation import OUTER, OuterState, aggregate, outer_momentum
from gensyn_py.train.data import Dataset, dataset_entry, digits
from gensyn_py.train.spec import JobSpec, parse_spec
from gensyn_py.train.trainer import Trainer, init_weights

SHARDS = 4
VARIANTS: dict[str, dict[str, Any]] = {
    "average/reset": {"rule": "average", "inner_state": "reset"},
    "average/carry": {"rule": "average", "inner_state": "carry"},
    "diloco/reset": {"rule": "diloco", "outer_lr": 0.7, "outer_momentum": 0.9, "inner_state": "reset"},
    "diloco/carry": {"rule": "diloco", "outer_lr": 0.7, "outer_momentum": 0.9, "inner_state": "carry"},
}


def job(ds: Dataset, rounds: int, steps: int, aggregation: dict[str, Any]) -> JobSpec:
    return parse_spec({
        "version": 1, "model": {"family": "mlp", "sizes": {"hidden": 64}},
        "optimizer": {"name": "adamw", "lr": 0.003, "weight_decay": 0.01},
        "batch_size": 32, "steps_per_unit": steps, "checkpoint_interval": steps, "seed": 5,
        "rounds": rounds, "shards": SHARDS, "mode": "repro", "aggregation": aggregation,
        "dataset": dataset_entry(ds, ds.to_bytes()),
    })


def global_loss(spec: JobSpec, ds: Dataset, weights: dict[str, torch.Tensor]) -> float:
    """Cross-entropy of the global model over the dataset `ds`, in float64."""
    from gensyn_py.train.models import build_model

    model = build_model(spec.model.family, spec.model.sizes).double()
    model.load_state_dict({k: v.double() for k, v in weights.items()})
    with torch.no_grad():
        x = torch.as_tensor(ds.x).double().reshape(ds.x.shape[0], -1)
        logits = model(x)
        return float(torch.nn.functional.cross_entropy(logits, torch.as_tensor(ds.y).long()))


def run(spec: JobSpec, ds: Dataset, held_out: Dataset) -> list[float]:
    weights = init_weights(spec)
    momentum: dict[str, torch.Tensor] = {}
    inner: list[dict[str, torch.Tensor]] = [{} for _ in range(SHARDS)]
    losses = [global_loss(spec, held_out, weights)]
    for r in range(spec.rounds):
        finals = []
        for s in range(SHARDS):
            start = {**weights, **inner[s]} if r else None
            t = Trainer(spec, ds, r, s, "cpu", start)
            t.run(spec.steps_per_unit)
            state = t.state_dict()
            if spec.aggregation.inner_state == "carry":
                inner[s] = {k: v for k, v in state.items() if k.startswith("optim/")}
            finals.append(state)
        out = aggregate(spec, finals, OuterState(weights, momentum))
        weights = {k: v for k, v in out.items() if not k.startswith(OUTER)}
        momentum = outer_momentum(out)
        losses.append(global_loss(spec, held_out, weights))
    return losses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=25, help="inner steps per unit (per round)")
    args = ap.parse_args()
    ds, held_out = digits(image=False)
    t0 = time.perf_counter()
    losses = {}
    for name, agg in VARIANTS.items():
        losses[name] = run(job(ds, args.rounds, args.steps, agg), ds, held_out)
        print(f"{name:14s} loss by round: " + " ".join(f"{v:.4f}" for v in losses[name]))
    final = {k: v[-1] for k, v in losses.items()}
    print(f"after {args.rounds} rounds x {args.steps} inner steps x {SHARDS} shards: "
          + ", ".join(f"{k} {v:.4f}" for k, v in final.items()) + f"  ({time.perf_counter() - t0:.0f} s)")
    print(json.dumps({
        "rounds": args.rounds, "inner_steps": args.steps, "shards": SHARDS,
        "diloco_loss_ratio": round(final["diloco/carry"] / final["average/reset"], 4),
        "diloco_loss_ratio_same_inner": round(final["diloco/reset"] / final["average/reset"], 4),
        "final_loss": {k: round(v, 5) for k, v in final.items()},
        "losses": {k: [round(x, 5) for x in v] for k, v in losses.items()},
        "ddp_repro_equal": None, "ddp_speedup": None,
    }))


if __name__ == "__main__":
    main()
