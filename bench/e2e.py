"""End to end on the local market: protocol overhead, event-to-action latency, jobs per minute.

One run starts anvil, deploys with the local market's windows (`LOCAL_PARAMS`,
the "default security settings" of a local market: 2 validators per unit,
commit-reveal verdicts, a challenge window) and the standard market's role
daemons as separate processes (`NODES`: 2 solvers, 3 validators, the third
for dispute committees, 1 challenger). Then:

1. a tiny warm-up job, so no figure pays for the daemons' first replay;
2. plain PyTorch and the overhead job, alternated `reps` times, plain first
   and last. Plain: the overhead job's model, data and steps (every training
   unit's steps, one after the other, 1 thread), measured with every daemon
   stopped (SIGSTOP) and the block clock paused, so it shares the machine with
   nothing but the idle chain. The overhead job (1 round x 2 shards, plus the
   round's aggregation unit; a new seed each time, so no content repeats):
   wall time from just before submission to the block holding `JobCompleted`.
   Each job's ratio = its wall time / the mean of the plain runs either side
   of it (a change of load on this shared machine weighs on both sides
   alike); `protocol_overhead_ratio` is their median;
3. a burst of small 1x1 jobs submitted back to back: `jobs_per_minute` =
   jobs / (first submission to the last `JobCompleted`) x 60;
4. `event_to_action_ms` from the chain and the daemons' logs of steps 2-3:
   each `ValidatorsDrawn` to the drawn validator's `commitVerdict` landing,
   less the replay time the validator spent in between (its own replay of
   that segment and any other it was busy with). A `BlockClock` notes when
   each block appeared (mixed mining: one block per transaction, mined on
   arrival) to within one poll (~50 ms); block timestamps (1 s) are reported
   as a cross-check.
5. `poison_delay_ratio` (``bench/_poison.py``): the time to claim a good job
   submitted right behind 5 poison jobs of different kinds, over the time with
   none ahead of it (medians of 5 repetitions, 3 with `--quick`).

Prints progress on stderr and one JSON line last on stdout. `--quick` runs a
smaller job and burst.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._market import DEFINITION, NODES, BlockClock, LogRecord, Market, event_to_action
from bench._poison import poison_delay
from gensyn_py.sim.localnet import LocalNetwork

T0 = time.time()
LOAD: dict[str, float] = {}  # 1-minute load average at points of the run: other work on the machine shows here


def note_load(point: str) -> None:
    LOAD[point] = round(os.getloadavg()[0], 2)


def report(line: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {line}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Shape:
    steps: int  # per training unit of the overhead job
    interval: int  # checkpoint interval of the overhead job
    shards: int
    burst: int  # jobs in the burst
    burst_steps: int
    poison_reps: int  # repetitions of the poison-delay measurement
    reps: int  # overhead jobs, each between two plain runs


SHAPES = {
    # Training long enough to dominate the fixed per-round protocol cost (claim, seed block, two challenge windows).
    "full": Shape(steps=3000, interval=100, shards=2, burst=20, burst_steps=40, poison_reps=5, reps=3),
    "quick": Shape(steps=200, interval=50, shards=2, burst=6, burst_steps=40, poison_reps=3, reps=1),
}
MODEL = {"family": "mlp", "sizes": {"hidden": 512, "depth": 2}}
BATCH = 256
ROLES = collections.Counter(n.role for n in NODES)


def overhead_spec(dataset: dict[str, Any], shape: Shape, seed: int = 11) -> dict[str, Any]:
    """bench/_trainjob's mid-sized digits MLP as a 1 x `shards` job, exact mode, 1 thread."""
    return {
        "version": 1,
        "model": MODEL,
        "optimizer": {"name": "adamw", "lr": 0.001, "weight_decay": 0.01},
        "schedule": {"kind": "cosine", "warmup_steps": 10},
        "batch_size": BATCH,
        "steps_per_unit": shape.steps,
        "checkpoint_interval": shape.interval,
        "seed": seed,
        "rounds": 1,
        "shards": shape.shards,
        "mode": "exact",
        "threads": 1,
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
        "dataset": dataset,
    }


# -- 1. plain PyTorch ----------------------------------------------------------------------------


def plain_unit(spec: Any, ds: Any, shard: int, limit: int | None = None) -> float:
    """Seconds of one training unit (round 0, `shard`) as a textbook PyTorch loop.

    The job's model, initial weights, AdamW, batches and learning rates (the
    batches and rates precomputed outside the timing: the cheapest honest
    baseline, as in bench/overhead.py); no checkpoints, hashing or storage.
    """
    import torch
    from torch.nn import functional as F

    from gensyn_py.train.data import batch_indices, shard_indices
    from gensyn_py.train.models import build_model
    from gensyn_py.train.schedule import lr_at
    from gensyn_py.train.trainer import init_weights

    model = build_model(spec.model.family, spec.model.sizes)
    model.load_state_dict(init_weights(spec))
    o = spec.optimizer
    opt = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps,
                            weight_decay=o.weight_decay, foreach=False)
    x, y = torch.from_numpy(ds.x), torch.from_numpy(ds.y)
    rows = shard_indices(ds.num_examples, spec.shards, shard, spec.seed)
    steps = range(min(spec.steps_per_unit, limit or spec.steps_per_unit))
    batches = [torch.from_numpy(batch_indices(rows, spec.batch_size, spec.seed, 0, shard, s)) for s in steps]
    lrs = [lr_at(spec, s) for s in steps]
    start = time.perf_counter()
    for idx, lr in zip(batches, lrs, strict=True):
        for group in opt.param_groups:
            group["lr"] = lr
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        loss.item()
    return time.perf_counter() - start


def plain_baseline(spec: dict[str, Any], ds: Any) -> list[float]:
    """Every training unit of the job, one after the other, on 1 thread."""
    import torch

    from gensyn_py.train.spec import parse_spec

    torch.set_num_threads(1)
    parsed = parse_spec(spec)
    plain_unit(parsed, ds, 0, limit=50)  # warm-up: first-call allocations and kernel selection
    return [plain_unit(parsed, ds, shard) for shard in range(parsed.shards)]


# -- 3. the overhead job -------------------------------------------------------------------------


def landed(market: Market, clock: BlockClock, block: int) -> float:
    """When a block appeared; the block's timestamp if the clock missed it."""
    t = clock.at(block)
    return t if t is not None else float(market.block_time(block))


STAGES = (("UnitOpened", "opened"), ("UnitClaimed", "claimed"), ("UnitCommitted", "committed"),
          ("ValidatorsDrawn", "drawn"), ("UnitVerified", "verified"), ("UnitFinalized", "final"))


def timeline(market: Market, clock: BlockClock, job: int, t0: float) -> list[dict[str, Any]]:
    """Per unit: seconds after submission at which each stage's event landed."""
    rows = []
    for opened in market.pool_logs("UnitOpened", jobId=job):
        unit = int(opened["args"]["unitId"])
        row: dict[str, Any] = {"unit": unit, "kind": "aggregation" if opened["args"]["isAggregation"]
                               else f"shard {opened['args']['shard']}"}
        for event, label in STAGES:
            logs = market.pool_logs(event, unitId=unit)
            if logs:
                row[label] = round(landed(market, clock, int(logs[-1]["blockNumber"])) - t0, 2)
        rows.append(row)
    return rows


def critical_path(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The job's wall time split by stage along its critical path.

    The path is the training unit finalized last, then the aggregation unit.
    submit = submission to the units opening; claim = the claim auction;
    solve = claim to commitment (training, checkpoints, commit tx); draw =
    waiting for the seed block; verify = replays and commit-reveal; challenge =
    the challenge window and the finalize tx.
    """
    labels = [label for _, label in STAGES]
    names = ["claim", "solve", "draw", "verify", "challenge"]
    out = dict.fromkeys(["submit", *names], 0.0)
    training = [r for r in rows if r["kind"] != "aggregation"]
    chain = [max(training, key=lambda r: float(r.get("final", 0)))] + [r for r in rows if r["kind"] == "aggregation"]
    out["submit"] = float(chain[0].get("opened", 0.0))
    for r in chain:
        for a, b, name in zip(labels[:-1], labels[1:], names, strict=True):
            if a in r and b in r:
                out[name] += float(r[b]) - float(r[a])
    return {k: round(v, 2) for k, v in out.items()}


def compute_seconds(records: list[LogRecord], units: set[int]) -> dict[str, float]:
    """Training (solvers), replays (validators) and audits (challenger) spent on `units`, from the logs."""
    sums = {"train_s": 0.0, "verify_s": 0.0, "audit_s": 0.0}
    for r in records:
        if r.fields.get("unit") not in units:
            continue
        if r.event == "unit.committed":
            sums["train_s"] += float(r.fields.get("train_s", 0.0))
        elif r.event == "verdict":
            sums["verify_s"] += float(r.fields.get("verify_s", 0.0))
        elif r.event == "audit":
            sums["audit_s"] += float(r.fields.get("verify_s", 0.0))
    return {k: round(v, 2) for k, v in sums.items()}


def overhead_job(market: Market, clock: BlockClock, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    job, t0 = market.submit_timed(spec)
    report(f"overhead job {job} submitted: 1 x {spec['shards']}, {spec['steps_per_unit']} steps per unit")
    market.wait_jobs([job], timeout)
    done = market.pool_logs("JobCompleted", jobId=job)[-1]
    wall = landed(market, clock, int(done["blockNumber"])) - t0
    units = {int(e["args"]["unitId"]) for e in market.pool_logs("UnitOpened", jobId=job)}
    report(f"overhead job {job} completed in {wall:.1f}s")
    rows = timeline(market, clock, job, t0)
    return {"job": job, "wall_s": wall, "timeline": rows, "critical_path": critical_path(rows),
            "compute": compute_seconds(market.records(), units)}


# -- 4. the burst --------------------------------------------------------------------------------


def burst(market: Market, clock: BlockClock, dataset: dict[str, Any], n: int, steps: int,
          timeout: float) -> dict[str, Any]:
    from gensyn_py.sim.market import digits_job_spec as job_spec_dict

    submitted: list[tuple[int, float]] = []
    for i in range(n):
        submitted.append(market.submit_timed(job_spec_dict(dataset, 1, 1, steps, seed=1000 + i)))
    first = submitted[0][1]
    report(f"burst: {n} jobs of 1 x 1, {steps} steps, submitted in {time.time() - first:.1f}s")
    market.wait_jobs([j for j, _ in submitted], timeout)
    ends = {j: landed(market, clock, int(market.pool_logs("JobCompleted", jobId=j)[-1]["blockNumber"]))
            for j, _ in submitted}
    span = max(ends.values()) - first
    latencies = [ends[j] - t for j, t in submitted]
    report(f"burst: {n} jobs completed {span:.1f}s after the first submission")
    return {"jobs": n, "steps_per_unit": steps, "span_s": round(span, 2),
            "submit_s": round(submitted[-1][1] - first, 2),
            "job_latency_median_s": round(statistics.median(latencies), 2),
            "job_latency_max_s": round(max(latencies), 2),
            "jobs_per_minute": round(n / span * 60, 2)}


# -- the run -------------------------------------------------------------------------------------


def alternated(market: Market, clock: BlockClock, dataset: dict[str, Any], train: Any,
               shape: Shape) -> dict[str, Any]:
    """Plain, job, plain, ..., job, plain: each job's ratio against the plain runs either side of it."""
    spec = overhead_spec(dataset, shape)

    def plain() -> list[float]:
        with market.paused(), clock.paused():
            units = plain_baseline(spec, train)
        report(f"plain PyTorch: {sum(units):.1f}s ({', '.join(f'{p:.1f}s' for p in units)})")
        return units

    report(f"plain PyTorch: {shape.shards} x {shape.steps} steps of the overhead job's model, 1 thread, "
           "the market's daemons stopped")
    plains = [plain()]
    jobs: list[dict[str, Any]] = []
    for rep in range(shape.reps):
        note_load(f"overhead_job_{rep}")
        jobs.append(overhead_job(market, clock, overhead_spec(dataset, shape, seed=11 + rep), timeout=600))
        plains.append(plain())
    sums = [sum(p) for p in plains]
    ratios = [float(j["wall_s"]) / ((sums[i] + sums[i + 1]) / 2) for i, j in enumerate(jobs)]
    middle = sorted(range(len(jobs)), key=lambda i: ratios[i])[len(jobs) // 2]
    report(f"overhead ratios {', '.join(f'{r:.3f}' for r in ratios)}; median {ratios[middle]:.3f}")
    return {"ratios": ratios, "middle": middle, "jobs": jobs, "plains": plains}


def run(shape: Shape, workdir: Path, mode: str) -> dict[str, Any]:
    from gensyn_py.sim.localnet import LOCAL_PARAMS
    from gensyn_py.sim.market import digits_job_spec as job_spec_dict
    from gensyn_py.train.data import dataset_entry, digits

    train, _ = digits(image=False)
    entry = dataset_entry(train, train.to_bytes())
    note_load("start")

    with LocalNetwork(workdir) as net:
        clock = BlockClock(net.url).start()
        market = Market(net, report)
        try:
            report(f"starting {', '.join(f'{n} {role}' + ('s' if n > 1 else '') for role, n in ROLES.items())}")
            market.start_nodes()
            market.put_dataset(train)
            report("warm-up job (1 x 1, 20 steps)")
            warm, _ = market.submit_timed(job_spec_dict(dict(entry), 1, 1, 20, seed=5))
            market.wait_jobs([warm], 120)
            from_block = int(net.w3.eth.block_number) + 1
            overhead = alternated(market, clock, dict(entry), train, shape)
            jobs = burst(market, clock, dict(entry), shape.burst, shape.burst_steps, timeout=600)
            note_load("burst_done")
            latency = event_to_action(market, clock, from_block)
            report(f"poison: {shape.poison_reps} good jobs alone, {shape.poison_reps} behind 5 poison jobs")
            poison = poison_delay(market, clock, lambda seed: job_spec_dict(dict(entry), 1, 1, 40, seed),
                                  shape.poison_reps, report)
        except Exception:
            for line in market.trouble():
                report("  " + line)
            raise
        finally:
            clock.stop()
        params = {k: int(v) for k, v in net.protocol.deployment.get("params", {}).items()} if net.protocol else {}

    ratios, plains, middle = overhead["ratios"], overhead["plains"], overhead["middle"]
    job = overhead["jobs"][middle]  # the median job: its timeline and breakdown are shown
    wall = float(job["wall_s"])
    around = [(a + b) / 2 for a, b in zip(plains[middle], plains[middle + 1], strict=True)]
    windows = ("validatorsPerUnit", *LOCAL_PARAMS)
    return {
        "bench": "e2e",
        "mode": mode,
        "protocol_overhead_ratio": round(ratios[middle], 3),
        "event_to_action_ms": latency.pop("event_to_action_ms"),
        "jobs_per_minute": jobs["jobs_per_minute"],
        "poison_delay_ratio": poison.pop("poison_delay_ratio"),
        "protocol_overhead_ratios": [round(r, 3) for r in ratios],
        "job_shape": {"rounds": 1, "shards": shape.shards, "units": shape.shards + (1 if shape.shards > 1 else 0),
                      "steps_per_unit": shape.steps, "checkpoint_interval": shape.interval, "model": MODEL,
                      "batch_size": BATCH, "optimizer": "adamw", "mode": "exact", "threads": 1},
        "job_wall_s": round(wall, 2),
        "job_walls_s": [round(float(j["wall_s"]), 2) for j in overhead["jobs"]],
        "plain_wall_s": round(sum(around), 2),
        "plain_unit_s": [round(p, 2) for p in around],
        "plain_walls_s": [round(sum(p), 2) for p in plains],
        "protocol_overhead_ratio_vs_parallel_plain": round(wall / max(around), 3),
        "job_critical_path_s": job["critical_path"],
        "job_compute_s": job["compute"],
        "job_timeline_s": job["timeline"],
        "params": {k: params[k] for k in windows if k in params},
        "market": {**{f"{role}s": n for role, n in ROLES.items()}, "block_time_s": net.block_time,
                   "daemon_poll_s": 0.3, "cpu_cores": _cores()},
        "event_to_action_definition": DEFINITION,
        **latency,
        "burst": jobs,
        "poison": poison,
        "load_avg_1m": LOAD,
        "bench_wall_s": round(time.time() - T0, 1),
    }


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smaller overhead job and a burst of 6")
    parser.add_argument("--workdir", type=Path, default=None, help="keep chain, logs and store here")
    parser.add_argument("--steps", type=int, default=None, help="steps per unit of the overhead job")
    args = parser.parse_args()
    mode = "quick" if args.quick else "full"
    shape = SHAPES[mode] if args.steps is None else replace(SHAPES[mode], steps=args.steps)
    if args.workdir is not None:
        result = run(shape, args.workdir, mode)
    else:
        with tempfile.TemporaryDirectory(prefix="gensyn-e2e-") as tmp:
            result = run(shape, Path(tmp), mode)
    report(f"protocol overhead {result['protocol_overhead_ratio']}x, event to action "
           f"{result['event_to_action_ms']} ms, {result['jobs_per_minute']} jobs/min, "
           f"poison delay {result['poison_delay_ratio']}x")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
