"""The demo market: five daemons as processes, an honest 2x2 job, then a cheater caught and slashed.

1. anvil + the protocol; 2 solvers, 2 validators and 1 challenger start as
   separate `gensyn <role> run` processes and register themselves;
2. a requester submits a 2-round x 2-shard digits classifier job; rounds
   advance through aggregation units on their own; the final model is
   downloaded, checked against the on-chain hash, and scored on held-out digits;
3. solver-1 goes offline, solver-2 restarts dishonest (it trains with twice
   the learning rate and commits under the real spec) and takes a 1x1 job;
   the validators' replays reject it, the committee votes fraud, its stake is
   slashed; solver-1 comes back and finishes the reopened unit honestly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.view import ChainView
from gensyn_py.sim.accounting import Holding, gas_by_sender, holdings, slashes
from gensyn_py.sim.localnet import E18, LocalNetwork, wait_until
from gensyn_py.types import ROLE_SOLVER, JobStatus, Unit, UnitStatus

Report = Callable[[str], None]

NODES = [  # name, role, dev key index, extra args
    ("solver-1", "solver", 2, ("--price", "5")),
    ("solver-2", "solver", 3, ("--price", "5")),
    ("validator-1", "validator", 4, ()),
    ("validator-2", "validator", 5, ()),
    ("challenger", "challenger", 6, ("--audit-fraction", "0.3")),
]
REQUESTER_KEY = 1
ACCURACY_TARGET = 0.90


def job_spec_dict(dataset: dict[str, Any], rounds: int, shards: int, steps: int, seed: int) -> dict[str, Any]:
    """The demo's digits MLP; per unit `steps` SGD steps, a checkpoint every 20."""
    return {
        "version": 1,
        "model": {"family": "mlp", "sizes": {"hidden": 64}},
        "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.0001},
        "schedule": {"kind": "cosine", "warmup_steps": 10},
        "batch_size": 32,
        "steps_per_unit": steps,
        "checkpoint_interval": 20,
        "seed": seed,
        "rounds": rounds,
        "shards": shards,
        "mode": "exact",
        "threads": 1,
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
        "dataset": dataset,
    }


@dataclass
class DemoResult:
    accuracy: float = 0.0
    honest_job: int = 0
    cheat_job: int = 0
    cheater_slashed: int = 0
    slashed: dict[str, int] = field(default_factory=dict)
    before: dict[str, Holding] = field(default_factory=dict)
    after: dict[str, Holding] = field(default_factory=dict)
    gas: dict[str, tuple[int, int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    fraud_detected_by: str = ""


class DemoMarket:
    def __init__(self, net: LocalNetwork, report: Report) -> None:
        self.net = net
        self.report = report
        self.result = DemoResult()
        self.actors: dict[str, str] = {}
        self._seen: dict[int, UnitStatus] = {}

    @property
    def protocol(self) -> ProtocolContracts:
        assert self.net.protocol is not None, "start the network first"
        return self.net.protocol

    @cached_property
    def view(self) -> ChainView:
        return ChainView(self.protocol)

    # -- the play ----------------------------------------------------------------------------

    def run(self) -> DemoResult:
        t0 = time.perf_counter()
        first_block = int(self.net.w3.eth.block_number)
        self.start_nodes()
        self.result.before = holdings(self.protocol, self.actors)
        self.result.accuracy, self.result.honest_job = self.honest_job()
        self.result.cheat_job = self.cheating_job()
        self.refund()
        self.result.after = holdings(self.protocol, self.actors)
        taken = slashes(self.protocol, first_block)
        for name, address in self.actors.items():
            self.result.slashed[name] = sum(amount for node, amount in taken if node == address)
        self.result.gas = gas_by_sender(self.protocol, self.actors, first_block)
        self.result.seconds.update(self._time_split(time.perf_counter() - t0))
        return self.result

    def start_nodes(self) -> None:
        self.report("starting 2 solvers, 2 validators and 1 challenger as separate processes")
        for name, role, key, extra in NODES:
            node = self.net.add_node(name, role, key, *extra)
            self.actors[name] = str(node.account.address)
        requester = self.net.account(REQUESTER_KEY)
        self.net.fund(requester.address, 10_000)
        self.actors = {"requester": str(requester.address), **self.actors}
        registry = self.protocol.registry()

        def registered() -> bool:
            return all(registry.bonded_of(self.actors[n]) > 0 for n, *_ in NODES)

        wait_until(registered, 120, "the daemons to register and stake", on_wait=self.net.check_alive)
        for name, *_ in NODES:
            hw = registry.hardware_of(self.actors[name])
            self.report(f"  {name:<12} {self.actors[name]} registered, stake 1,000, "
                        f"{hw.throughput / 1000:.1f} GFLOP/s declared")

    def honest_job(self) -> tuple[float, int]:
        from gensyn_py.train.data import digits

        train, held_out = digits(image=False)
        job = self.submit(train, rounds=2, shards=2, steps=100, seed=2026)
        self.follow(job, 300)
        model = self.download(job)
        accuracy = evaluate(model, held_out)
        mark = "meets" if accuracy >= ACCURACY_TARGET else "MISSES"
        self.report(f"job {job} complete: held-out accuracy {accuracy:.1%} ({mark} the {ACCURACY_TARGET:.0%} target)")
        return accuracy, job

    def cheating_job(self) -> int:
        from gensyn_py.train.data import digits

        self.report("solver-1 goes offline; solver-2 restarts dishonest (twice the learning rate, real spec claimed)")
        self.net.kill("solver-1", sig=15)
        self.net.restart("solver-2", "--cheat", "wrong_lr")
        train, _ = digits(image=False)
        job = self.submit(train, rounds=1, shards=1, steps=100, seed=7)
        unit_id = self.view.unit_ids(job)[0]
        wait_until(lambda: self.view.unit(unit_id).status is UnitStatus.DISPUTED, 180,
                   "the cheater's unit to be disputed", on_wait=lambda: self._show(job))
        opener = self._dispute_opener(unit_id)
        self.result.fraud_detected_by = opener
        self.report(f"  {opener} replayed its segment, found a different result and opened a dispute")
        wait_until(lambda: self.view.unit(unit_id).status in (UnitStatus.OPEN, UnitStatus.ASSIGNED,
                                                              UnitStatus.COMMITTED), 120,
                   "the committee's decision", on_wait=lambda: self._show(job))
        registry = self.protocol.registry()
        cheater = self.actors["solver-2"]
        self.result.cheater_slashed = 1_000 * E18 - registry.bonded_of(cheater)
        jailed = registry.is_jailed(cheater)
        self.report(f"  committee voted fraud: solver-2 lost {self.result.cheater_slashed / E18:,.0f} tokens of stake"
                    f"{' and is jailed' if jailed else ''}; the unit reopened")
        self.report("solver-1 comes back online and takes the reopened unit")
        self.net.restart("solver-1")
        self.follow(job, 180)
        return job

    # -- requester ---------------------------------------------------------------------------

    def refund(self) -> None:
        """The requester withdraws what its jobs did not spend (declared prices under its maximum)."""
        from gensyn_py.requester.cancel import claim_credit
        from gensyn_py.requester.session import Requester
        from gensyn_py.storage.factory import open_store

        requester = Requester(self.protocol, open_store(self.net.store_spec), self.net.account(REQUESTER_KEY))
        amount = claim_credit(requester)
        self.report(f"requester withdrew {amount / E18:,.2f} tokens of unspent budget")

    def submit(self, train: Any, rounds: int, shards: int, steps: int, seed: int) -> int:
        from gensyn_py.requester.pricing import Offer
        from gensyn_py.requester.session import Requester
        from gensyn_py.requester.submit import submit_job
        from gensyn_py.storage.factory import open_store
        from gensyn_py.train.data import dataset_entry
        from gensyn_py.train.spec import parse_spec

        store = open_store(self.net.store_spec)
        data = train.to_bytes()
        store.put(data)
        spec = job_spec_dict(dataset_entry(train, data), rounds, shards, steps, seed)
        requester = Requester(self.protocol, store, self.net.account(REQUESTER_KEY))
        submitted = submit_job(requester, parse_spec(spec), Offer(10 * E18, 100 * E18, 120))
        self.report(f"requester submitted job {submitted.job_id}: {rounds} round(s) x {shards} shard(s), "
                    f"{steps} steps per unit, {submitted.escrow / E18:,.0f} tokens escrowed")
        return submitted.job_id

    def follow(self, job: int, timeout: float) -> None:
        def complete() -> bool:
            self._show(job)
            return self.view.job_state(job).status is JobStatus.COMPLETED

        wait_until(complete, timeout, f"job {job} to complete", every=0.5, on_wait=self.net.check_alive)

    def download(self, job: int) -> dict[str, Any]:
        from gensyn_py.proof.content import JobContent
        from gensyn_py.storage.factory import open_store

        content = JobContent(self.view, open_store(self.net.store_spec))
        spec = content.spec(job)
        unit = self.view.final_unit(job, spec.rounds, spec.shards)
        assert unit is not None
        model = content.model_of(unit)
        self.report(f"final model downloaded from unit {unit.unit_id}; its bytes match the on-chain final state hash")
        return model

    # -- reporting ---------------------------------------------------------------------------

    def _show(self, job: int) -> None:
        names = {a: n for n, a in self.actors.items()}
        for unit in self.view.units(job):
            if self._seen.get(unit.unit_id) is unit.status:
                continue
            self._seen[unit.unit_id] = unit.status
            self.report(f"  unit {unit.unit_id} ({_label(unit)}): {unit.status.name.lower()}{self._who(unit, names)}")

    @staticmethod
    def _who(unit: Unit, names: dict[str, str]) -> str:
        if unit.status is UnitStatus.ASSIGNED:
            return f" by {names.get(unit.solver, unit.solver)}"
        if unit.status is UnitStatus.COMMITTED and unit.validators:
            return " — validators drawn: " + ", ".join(names.get(v, v) for v in unit.validators)
        return ""

    def _dispute_opener(self, unit_id: int) -> str:
        names = {a: n for n, a in self.actors.items()}
        logs = self.protocol["TaskPool"].events.UnitDisputed().get_logs(
            argument_filters={"unitId": unit_id}, from_block=0)
        return names.get(logs[-1]["args"]["opener"], "someone") if logs else "someone"

    def _time_split(self, total: float) -> dict[str, float]:
        training = verification = 0.0
        for name in self.net.nodes:
            for rec in self.net.log_lines(name):
                fields = rec.get("fields") or {}
                training += float(fields.get("train_s", 0) or 0)
                verification += float(fields.get("verify_s", 0) or 0)
        return {"total": total, "training": training, "verification": verification,
                "protocol": max(0.0, total - training - verification)}


def _label(unit: Unit) -> str:
    return f"round {unit.round} aggregation" if unit.is_aggregation else f"round {unit.round} shard {unit.shard}"


def evaluate(model: dict[str, Any], held_out: Any) -> float:
    """Held-out accuracy of downloaded MLP weights."""
    import numpy as np
    import torch

    from gensyn_py.train.data import to_tensors
    from gensyn_py.train.models import build_model

    net = build_model("mlp", {"hidden": 64})
    net.load_state_dict(model)
    x, y = to_tensors(held_out, np.arange(held_out.num_examples), "cpu")
    with torch.no_grad():
        return float((net(x).argmax(dim=-1) == y).float().mean())


__all__ = ["ROLE_SOLVER", "DemoMarket", "DemoResult", "evaluate"]
