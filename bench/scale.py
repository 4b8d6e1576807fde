"""Scale: a repro unit trained data-parallel by two processes against one, and the global model's loss after
N rounds under FedAvg and under DiLoCo's outer step, on the same job.

Data parallel: a repro MLP (digits, hidden 1024, depth 2, batch 512, AdamW, 20 steps, checkpoints every 10) is
committed (`commit_segments`, a local store) by one process, and by a `torch.distributed` group of two
processes (gloo, each with 1 thread, as the single one) where every rank takes half the batch rows.
`ddp_repro_equal` is 1 when every rank's checkpoint root equals the single process's; `ddp_speedup` is the
single process's training-and-commit time over the group's (its slowest rank), process start-up excluded.

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
  ddp_repro_equal, ddp_speedup   (above)
Usage: .venv/bin/python bench/scale.py [--rounds N] [--steps H]   (about a minute on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
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


def ddp_spec(ds: Dataset) -> JobSpec:
    return parse_spec({
        "version": 1, "model": {"family": "mlp", "sizes": {"hidden": 1024, "depth": 2}},
        "optimizer": {"name": "adamw", "lr": 0.001}, "batch_size": 512, "steps_per_unit": 20,
        "checkpoint_interval": 10, "seed": 3, "mode": "repro", "dataset": dataset_entry(ds, ds.to_bytes()),
    })


def commit_unit(store_dir: str) -> tuple[str, float]:
    """(checkpoint root, seconds) of the ddp spec's unit, trained and committed in this process."""
    from gensyn_py.proof.unit import commit_segments
    from gensyn_py.storage.local import LocalStore

    torch.set_num_threads(1)
    ds, _ = digits(image=False)
    trainer = Trainer(ddp_spec(ds), ds, 0, 0, "cpu")
    t0 = time.perf_counter()
    c = commit_segments(trainer, LocalStore(store_dir), 1, overlap=False)
    return c.checkpoint_root.hex(), time.perf_counter() - t0


def ddp_worker(rank: int, size: int, init: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=size)
    try:
        root, seconds = commit_unit(str(Path(out) / f"store{rank}"))
        Path(out, f"{rank}.json").write_text(json.dumps({"root": root, "seconds": seconds}))
    finally:
        dist.destroy_process_group()


def data_parallel() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        single_root, single_s = commit_unit(str(Path(tmp) / "single"))
        procs = [subprocess.Popen([sys.executable, __file__, "--ddp-worker", str(r), "2", str(Path(tmp) / "init"),
                                   tmp]) for r in (0, 1)]
        try:
            codes = [p.wait(timeout=600) for p in procs]
        finally:
            for p in procs:
                p.kill()
                p.wait()
        if codes != [0, 0]:
            raise SystemExit(f"a data-parallel worker failed: exit codes {codes}")
        ranks = [json.loads(Path(tmp, f"{r}.json").read_text()) for r in (0, 1)]
    equal = all(r["root"] == single_root for r in ranks)
    group_s = max(r["seconds"] for r in ranks)
    print(f"data parallel (MLP hidden 1024 x 2, batch 512, 20 steps): one process {single_s:.2f} s, two "
          f"processes {group_s:.2f} s (x{single_s / group_s:.2f}); checkpoint roots equal: {equal}")
    return {"ddp_repro_equal": int(equal), "ddp_speedup": round(single_s / group_s, 3),
            "ddp_single_s": round(single_s, 3), "ddp_group_s": round(group_s, 3)}


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--ddp-worker":
        ddp_worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=25, help="inner steps per unit (per round)")
    args = ap.parse_args()
    ddp = data_parallel()
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
        **ddp,
    }))


if __name__ == "__main__":
    main()
