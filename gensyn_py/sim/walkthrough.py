"""One whole job, end to end, played by in-process actors on a real chain.

A requester submits a digits classifier job; a solver trains it for real and
commits to its checkpoints; the validators the chain draws replay their
sampled segments bit for bit and commit-reveal their verdicts; the challenge
window closes; the unit is paid; everyone claims their credit. Every step is
a real transaction through the safe send path, and its gas is recorded.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3
from web3.types import TxReceipt

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.pool import TaskPool
from gensyn_py.chain.registry import NodeRegistry
from gensyn_py.chain.token import GensynToken
from gensyn_py.devnet.anvil import DEV_KEYS
from gensyn_py.node.validator import verdict_hash
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.submit import job_params
from gensyn_py.storage.base import ContentStore
from gensyn_py.types import DEVICE_CLASSES, ROLE_SOLVER, ROLE_VALIDATOR, Hardware, UnitStatus

E18 = 10**18
Report = Callable[[str], None]


@dataclass
class Actor:
    """One account and the contracts as it sends to them."""

    name: str
    account: LocalAccount
    token: GensynToken
    registry: NodeRegistry
    pool: TaskPool

    @property
    def address(self) -> str:
        return str(self.account.address)


@dataclass
class WalkthroughResult:
    gas: list[tuple[str, str, int]] = field(default_factory=list)  # (actor, action, gas)
    balances_before: dict[str, int] = field(default_factory=dict)
    balances_after: dict[str, int] = field(default_factory=dict)
    accuracy: float = 0.0
    slashed: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    unit_status: int = 0
    job_id: int = 0

    @property
    def total_gas(self) -> int:
        return sum(g for _, _, g in self.gas)


def demo_spec_dict(dataset: dict[str, Any]) -> dict[str, Any]:
    """A small MLP on the bundled digits: 1 round x 1 shard, 200 steps, 10 checkpoint segments."""
    from gensyn_py.sim.market import digits_job_spec

    return digits_job_spec(dataset, rounds=1, shards=1, steps=200, seed=2026)


class Walkthrough:
    def __init__(self, w3: Web3, protocol: ProtocolContracts, store: ContentStore, report: Report):
        self.w3 = w3
        self.protocol = protocol
        self.store = store
        self.report = report
        self.result = WalkthroughResult()
        keys = [Account.from_key(k) for k in DEV_KEYS]
        self.deployer = self._actor("deployer", keys[0])
        self.requester = self._actor("requester", keys[1])
        self.solver = self._actor("solver", keys[2])
        self.validators = [self._actor(f"validator-{i + 1}", keys[3 + i]) for i in range(3)]

    def _actor(self, name: str, account: LocalAccount) -> Actor:
        sender = self.protocol.sender(account)
        return Actor(name, account, self.protocol.token(sender), self.protocol.registry(sender),
                     self.protocol.pool(sender))

    def _paid(self, actor: Actor, action: str, receipt: TxReceipt) -> TxReceipt:
        """Record the gas `actor` paid for `action`."""
        self.result.gas.append((actor.name, action, int(receipt["gasUsed"])))
        return receipt

    def _advance(self, seconds: int) -> None:
        self.w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
        self.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]

    def _mine(self, blocks: int) -> None:
        for _ in range(blocks):
            self.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]

    def _balances(self) -> dict[str, int]:
        token = self.protocol.token()
        actors = [self.requester, self.solver, *self.validators]
        return {a.name: token.balance_of(a.address) for a in actors}

    # ------------------------------------------------------------------ the play

    def setup_nodes(self) -> None:
        self.report("funding actors and registering nodes")
        registry = self.protocol.addresses["NodeRegistry"]
        pool = self.protocol.addresses["TaskPool"]
        cpu = DEVICE_CLASSES["cpu"]
        deployer = self.deployer
        for actor in [self.requester, self.solver, *self.validators]:
            self._paid(deployer, "mint", deployer.token.mint(actor.address, 10_000 * E18))
        self._paid(self.requester, "approve", self.requester.token.approve(pool, 2**256 - 1))
        nodes = [(self.solver, ROLE_SOLVER, 5 * E18)] + [(v, ROLE_VALIDATOR, 0) for v in self.validators]
        for actor, roles, price in nodes:
            hardware = Hardware(device_class=cpu, memory_mb=16_000, throughput=1_000, price_per_unit=price)
            self._paid(actor, "register", actor.registry.register(roles, hardware))
            self._paid(actor, "approve", actor.token.approve(registry, 2**256 - 1))
            self._paid(actor, "stake", actor.registry.stake(1_000 * E18))
        self.result.balances_before = self._balances()

    def run(self) -> WalkthroughResult:
        from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
        from gensyn_py.proof.unit import commit_segments
        from gensyn_py.train.data import dataset_entry, digits
        from gensyn_py.train.spec import canonical_json, parse_spec
        from gensyn_py.train.trainer import Trainer

        t0 = time.perf_counter()
        self.setup_nodes()
        train, held_out = digits(image=False)
        data = train.to_bytes()
        dataset_cid = self.store.put(data)
        spec = parse_spec(demo_spec_dict(dataset_entry(train, data)))
        spec_cid = self.store.put(canonical_json(spec.model_dump(mode="json")))
        self.report(f"job spec {spec.spec_hash().hex()[:16]}… dataset {dataset_cid[:20]}…")

        offer = Offer(max_price_per_unit=10 * E18, collateral_per_unit=100 * E18, commit_window=3600)
        receipt = self._paid(self.requester, "submitJob",
                             self.requester.pool.submit_job(job_params(spec, spec_cid, offer)))
        pool = self.protocol.pool()
        params = pool.params()
        job_id = int(pool.events(receipt, "JobSubmitted")[0]["jobId"])
        unit_id = int(pool.events(receipt, "UnitOpened")[0]["unitId"])
        self.result.job_id = job_id
        self.report(f"job {job_id} submitted, unit {unit_id} open; budget escrowed")

        score = pool.claim_score(self.solver.address, unit_id)
        if not score.eligible:
            # The required score decays over the claim window; wait (in chain time) until this solver fits.
            self._advance(params.claim_window)
        self._paid(self.solver, "claim", self.solver.pool.claim(unit_id))
        self.report(f"solver claimed unit {unit_id} (score {score.score} bps)")

        t_train = time.perf_counter()
        trainer = Trainer(spec, train, 0, 0)

        def progress(step: int, total: int, loss: float) -> None:
            if step % 50 == 0 or step == total:
                self.report(f"  training step {step}/{total} loss {loss:.4f}")

        commitment = commit_segments(trainer, self.store, job_id, on_step=progress)
        self.result.seconds["training"] = time.perf_counter() - t_train
        self._paid(self.solver, "commit", self.solver.pool.commit(
            unit_id, commitment.checkpoint_root, commitment.final_state_hash, commitment.manifest_cid))
        self.report(f"solver committed root {commitment.checkpoint_root.hex()[:16]}… "
                    f"manifest {commitment.manifest_cid[:20]}…")

        self._mine(2)  # the seed is the hash of a block mined after the commitment
        receipt = self._paid(self.deployer, "drawValidators", self.deployer.pool.draw_validators(unit_id))
        drawn = pool.events(receipt, "ValidatorsDrawn")[0]
        by_address = {v.address: v for v in self.validators}
        chosen = [by_address[a] for a in drawn["validators"]]
        self.report(f"drawn: {', '.join(v.name for v in chosen)} for segments {list(drawn['segments'])}")

        t_verify = time.perf_counter()
        manifest = fetch_manifest(self.store, commitment.manifest_cid)
        ref = UnitRef(job_id, 0, 0, commitment.checkpoint_root)
        reveals = []
        for validator, segment in zip(chosen, drawn["segments"], strict=True):
            verdict = replay_segment(spec, train, self.store, ref, manifest, int(segment))
            self.report(f"  {validator.name} replayed segment {segment}: "
                        f"{'accept' if verdict.accept else 'reject'} ({verdict.reason})")
            salt = secrets.token_bytes(32)
            transcript = verdict.transcript_hash or bytes(32)
            h = verdict_hash(unit_id, validator.address, verdict.accept, transcript, salt)
            self._paid(validator, "commitVerdict", validator.pool.commit_verdict(unit_id, h))
            reveals.append((validator, int(segment), verdict.accept, transcript, salt))
        for validator, segment, accept, transcript, salt in reveals:
            start, end = manifest.state_hashes[segment], manifest.state_hashes[segment + 1]
            self._paid(validator, "revealVerdict", validator.pool.reveal_verdict(
                unit_id, accept, transcript, salt, start, end, manifest.transcript_commits[segment],
                manifest.proof(segment)))
        self.result.seconds["verification"] = time.perf_counter() - t_verify
        self.report("verdicts revealed; challenge window open")

        self._advance(params.challenge_window + 1)
        self._paid(self.deployer, "finalize", self.deployer.pool.finalize(unit_id))
        self.result.unit_status = int(pool.get_unit(unit_id).status)
        for actor in [self.requester, self.solver, *chosen]:
            if pool.credit(actor.address) > 0:
                self._paid(actor, "claimCredit", actor.pool.claim_credit())
        self.result.balances_after = self._balances()
        self.result.accuracy = accuracy(trainer, held_out)
        registry = self.protocol.registry()
        for actor in [self.solver, *self.validators]:
            self.result.slashed[actor.name] = 1000 * E18 - registry.bonded_of(actor.address)
        self.result.seconds["total"] = time.perf_counter() - t0
        return self.result


def accuracy(trainer: Any, held_out: Any) -> float:
    """Share of held-out examples the trained model classifies correctly."""
    import numpy as np
    import torch

    from gensyn_py.train.data import to_tensors

    x, y = to_tensors(held_out, np.arange(held_out.num_examples), trainer.device)
    with torch.no_grad():
        predictions = trainer.model(x).argmax(dim=-1)
    return float((predictions == y).float().mean())


def default_store(root: Path) -> ContentStore:
    from gensyn_py.storage.local import LocalStore

    return LocalStore(root)


__all__ = ["UnitStatus", "Walkthrough", "WalkthroughResult", "default_store"]
