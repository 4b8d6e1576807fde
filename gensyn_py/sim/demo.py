"""The demo market: five daemons as processes, an honest 2x2 job, then a cheater caught and slashed.

1. anvil + the protocol; 2 solvers, 3 validators and 1 challenger start as
   separate `gensyn <role> run` processes and register themselves;
2. a requester submits a 2-round x 2-shard digits classifier job; rounds
   advance through aggregation units on their own; the final model is
   downloaded, checked against the on-chain hash, and scored on held-out digits;
3. a `repro` cheater convicted by the contract alone: solver-1 goes offline,
   solver-2 restarts dishonest (it flips one bit of one op's output in one
   step and trains on) and takes a 1x1 job; the validator whose replay
   rejects it opens a dispute, which the pool hands to the dispute game; the
   two daemons play it move by move down to that one element, the contract
   recomputes it and slashes solver-2; solver-1 comes back and finishes the
   reopened unit honestly;
4. an `exact` cheater convicted by the committee: solver-1 goes offline again,
   solver-3 starts dishonest (twice the learning rate) and takes a 1x1 `exact`
   job; the replays reject it, the committee (validator-3) votes fraud, its
   stake is slashed; solver-1 finishes the unit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.view import ChainView
from gensyn_py.sim.accounting import Holding, gas_by_sender, holdings, slashes
from gensyn_py.sim.localnet import E18, LocalNetwork, wait_until
from gensyn_py.sim.market import STANDARD_NODES, Market, digits_job_spec
from gensyn_py.types import ROLE_SOLVER, Unit, UnitStatus

Report = Callable[[str], None]

ACCURACY_TARGET = 0.90


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
    # the dispute game (the repro cheat): moves and gas of each side, and where it ended
    game_moves: dict[str, int] = field(default_factory=dict)
    game_gas: dict[str, int] = field(default_factory=dict)
    game_ended: str = ""
    committee_job: int = 0
    committee_slashed: int = 0


class DemoMarket:
    def __init__(self, net: LocalNetwork, report: Report) -> None:
        self.net = net
        self.report = report
        self.result = DemoResult()
        self.market = Market(net, requester_tokens=10_000)
        self.actors: dict[str, str] = {}  # the requester, then the nodes: name -> address
        self._seen: dict[int, UnitStatus] = {}

    @property
    def protocol(self) -> ProtocolContracts:
        return self.market.protocol

    @property
    def view(self) -> ChainView:
        return self.market.view

    # -- the play ----------------------------------------------------------------------------

    def run(self) -> DemoResult:
        t0 = time.perf_counter()
        first_block = int(self.net.w3.eth.block_number)
        self.start_nodes()
        self.result.before = holdings(self.protocol, self.actors)
        self.result.accuracy, self.result.honest_job = self.honest_job()
        self.result.cheat_job = self.cheating_job()
        self.result.committee_job = self.committee_job()
        self.refund()
        self.result.after = holdings(self.protocol, self.actors)
        taken = slashes(self.protocol, first_block)
        for name, address in self.actors.items():
            self.result.slashed[name] = sum(amount for node, amount in taken if node == address)
        self.result.gas = gas_by_sender(self.protocol, self.actors, first_block)
        self.result.seconds.update(self._time_split(time.perf_counter() - t0))
        return self.result

    def start_nodes(self) -> None:
        self.report("starting 2 solvers, 3 validators and 1 challenger as separate processes")
        self.market.start_nodes(STANDARD_NODES)
        self.actors = {"requester": self.market.requester.address, **self.market.actors}
        registry = self.protocol.registry()
        for n in STANDARD_NODES:
            hw = registry.hardware_of(self.actors[n.name])
            self.report(f"  {n.name:<12} {self.actors[n.name]} registered, stake {n.stake:,}, "
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

        self.report("solver-1 goes offline; solver-2 restarts dishonest: in one step of its unit it flips one bit of "
                    "one op's output, and trains on from there")
        self.net.kill("solver-1", sig=15)
        self.net.restart("solver-2", "--cheat", "flipped_bit")
        train, _ = digits(image=False)
        start = int(self.net.w3.eth.block_number)
        # Two segments, as many as the validators drawn: each is replayed, so the one cheated step is found in every
        # run (a longer unit's cheated segment is drawn or audited only with a probability, which the bench measures).
        job = self.submit(train, rounds=1, shards=1, steps=40, seed=7)
        unit_id = self.view.unit_ids(job)[0]
        wait_until(lambda: self.view.unit(unit_id).status is UnitStatus.DISPUTED, 180,
                   "the cheater's unit to be disputed", on_wait=lambda: self._show(job))
        opener = self._dispute_opener(unit_id)
        self.result.fraud_detected_by = opener
        self.report(f"  {opener} replayed its segment, found a different result and opened a dispute: the pool hands "
                    f"a repro unit's dispute to the dispute game, which the two daemons play on their own")
        game = self.protocol["SegmentGame"]
        wait_until(lambda: game.events.GameDecided().get_logs(from_block=start) or None, 240,
                   "the dispute game's decision", on_wait=lambda: self._show(job))
        self._game_report(start)
        registry = self.protocol.registry()
        cheater = self.actors["solver-2"]
        self.result.cheater_slashed = 1_000 * E18 - registry.bonded_of(cheater)
        jailed = registry.is_jailed(cheater)
        self.report(f"  the contract convicted solver-2: it lost {self.result.cheater_slashed / E18:,.0f} tokens of "
                    f"stake{' and is jailed' if jailed else ''}; the unit reopened")
        return self._redone(job)

    def _redone(self, job: int) -> int:
        """solver-1 comes back and finishes the job whose unit the convicted cheater lost."""
        self.report("solver-1 comes back online and takes the reopened unit")
        self.net.restart("solver-1")
        self.follow(job, 180)
        return job

    def _game_report(self, start: int) -> None:
        """Who made how many moves of the game, at what gas, and what the contract recomputed."""
        games = (self.protocol["SegmentGame"].address, self.protocol["StepGame"].address)
        for who, (moves, gas) in gas_by_sender(self.protocol, self.actors, start, to=games).items():
            if moves:
                self.result.game_moves[who], self.result.game_gas[who] = moves, gas
        step = self.protocol["StepGame"].events.GameDecided().get_logs(from_block=start)
        narrowed = self.protocol["StepGame"].events.OpNarrowed().get_logs(from_block=start)
        steps = self.protocol["SegmentGame"].events.StepNarrowed().get_logs(from_block=start)
        reasons = ("a timeout", "the program", "an input root", "a named input", "recomputing one element",
                   "a block exponent", "one multiply-add", "a non-finite dot", "a copied element", "a row maximum")
        why = reasons[int(step[-1]["args"]["reason"])] if step else "a timeout"
        where = (f"unit step {steps[-1]['args']['unitStep']}, op {narrowed[-1]['args']['op']}"
                 if steps and narrowed else "its segment")
        self.result.game_ended = f"narrowed to {where}, decided by {why}"
        for who in sorted(self.result.game_moves):
            self.report(f"  {who}: {self.result.game_moves[who]} moves, {self.result.game_gas[who]:,} gas")
        self.report(f"  the game {self.result.game_ended}")

    def committee_job(self) -> int:
        from gensyn_py.sim.market import NodeSpec
        from gensyn_py.train.data import digits

        self.report("an exact-mode job goes to the committee: solver-1 goes offline again; solver-3 starts "
                    "dishonest (twice the learning rate, real spec claimed)")
        self.net.kill("solver-1", sig=15)
        self.market.start_nodes([NodeSpec("solver-3", "solver", 8, ("--price", "5"))])
        self.actors["solver-3"] = self.market.actors["solver-3"]
        # Its wallet and stake from when it joined, so the closing table shows what it lost.
        self.result.before.update(holdings(self.protocol, {"solver-3": self.actors["solver-3"]}))
        self.net.restart("solver-3", "--cheat", "wrong_lr")
        train, _ = digits(image=False)
        job = self.submit(train, rounds=1, shards=1, steps=100, seed=11, mode="exact")
        unit_id = self.view.unit_ids(job)[0]
        wait_until(lambda: self.view.unit(unit_id).status is UnitStatus.DISPUTED, 180,
                   "the cheater's exact unit to be disputed", on_wait=lambda: self._show(job))
        self.report(f"  {self._dispute_opener(unit_id)} replayed its segment on the same replay class, found a "
                    f"different result and opened a dispute: an exact unit goes to the committee")
        wait_until(lambda: self.view.unit(unit_id).status in (UnitStatus.OPEN, UnitStatus.ASSIGNED,
                                                              UnitStatus.COMMITTED), 120,
                   "the committee's decision", on_wait=lambda: self._show(job))
        cheater = self.actors["solver-3"]
        self.result.committee_slashed = 1_000 * E18 - self.protocol.registry().bonded_of(cheater)
        self.report(f"  the committee voted fraud: solver-3 lost {self.result.committee_slashed / E18:,.0f} tokens "
                    f"of stake; the unit reopened")
        return self._redone(job)

    # -- requester ---------------------------------------------------------------------------

    def refund(self) -> None:
        """The requester withdraws what its jobs did not spend (declared prices under its maximum)."""
        from gensyn_py.requester.cancel import claim_credit

        amount = claim_credit(self.market.requester)
        self.report(f"requester withdrew {amount / E18:,.2f} tokens of unspent budget")

    def submit(self, train: Any, rounds: int, shards: int, steps: int, seed: int, mode: str = "repro") -> int:
        spec = {**digits_job_spec(self.market.put_dataset(train), rounds, shards, steps, seed), "mode": mode}
        submitted = self.market.submit(spec)
        self.report(f"requester submitted job {submitted.job_id} ({mode}): {rounds} round(s) x {shards} shard(s), "
                    f"{steps} steps per unit, {submitted.escrow / E18:,.0f} tokens escrowed")
        return submitted.job_id

    def follow(self, job: int, timeout: float) -> None:
        def show_and_check() -> None:
            self._show(job)
            self.net.check_alive()

        self._show(job)
        self.market.wait_jobs([job], timeout, on_wait=show_and_check)

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
    from gensyn_py.train.global_rng import GLOBAL_RNG
    from gensyn_py.train.models import build_model

    with GLOBAL_RNG:  # its init draws, overwritten below: not amid another thread's seeded init
        net = build_model("mlp", {"hidden": 64})
    net.load_state_dict(model)
    x, y = to_tensors(held_out, np.arange(held_out.num_examples), "cpu")
    with torch.no_grad():
        return float((net(x).argmax(dim=-1) == y).float().mean())


__all__ = ["ROLE_SOLVER", "DemoMarket", "DemoResult", "evaluate"]
