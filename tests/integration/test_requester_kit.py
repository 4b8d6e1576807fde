"""Shared kit for the requester tests (no tests here): a deployment with nodes, specs, and a scripted unit.

`deployed` is one protocol deployment per session on the shared anvil, with a
funded requester, one solver and two validators registered; each test takes a
chain `snapshot` on top of it. `play_unit_to_final` plays the solver and the
validators of a 1 round x 1 shard job for real: claim, train, commit, draw,
replay, commit-reveal verdicts, challenge window, finalize.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from eth_account.signers.local import LocalAccount
from web3 import Web3

from gensyn_py.chain.client import connect
from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.pool import TaskPool
from gensyn_py.config import Settings
from gensyn_py.devnet.deploy import deploy_protocol, write_deployment
from gensyn_py.errors import GensynError
from gensyn_py.node.validator import verdict_hash
from gensyn_py.requester.session import Requester, open_requester
from gensyn_py.sim.localnet import wait_until
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.data import Dataset, dataset_entry, digits
from gensyn_py.types import DEVICE_CLASSES, ROLE_SOLVER, ROLE_VALIDATOR, Hardware

E18 = 10**18
REQUESTER_FUNDS = 1_000 * E18
SOLVER_PRICE = 5 * E18


@dataclass(frozen=True)
class Deployed:
    url: str
    info: dict[str, Any]
    deployments_dir: Path
    store_dir: Path
    requester: LocalAccount
    solver: LocalAccount
    validators: tuple[LocalAccount, ...]
    stranger: LocalAccount  # ether for gas, no tokens

    @property
    def settings(self) -> Settings:
        return Settings(self.url, 31337, self.deployments_dir.parent, self.deployments_dir, f"local:{self.store_dir}")

    @property
    def env(self) -> dict[str, str]:
        """What the CLI and the script read: the chain, the deployment and the store."""
        return {"GENSYN_RPC_URL": self.url, "GENSYN_CHAIN_ID": "31337",
                "GENSYN_DEPLOYMENTS_DIR": str(self.deployments_dir), "GENSYN_STORE": f"local:{self.store_dir}"}

    def session(self, account: LocalAccount | None = None) -> Requester:
        """A requester session on its own Web3 (so its nonces are read fresh after a snapshot revert)."""
        return open_requester(self.settings, account)

    def protocol(self) -> ProtocolContracts:
        return self.session().protocol


def _pool(protocol: ProtocolContracts, account: LocalAccount) -> TaskPool:
    """The pool as `account` sends to it."""
    return protocol.pool(protocol.sender(account))


@pytest.fixture(scope="session")
def deployed(
    anvil_url: str, accounts: list[LocalAccount], artifacts: dict[str, dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Deployed:
    root = tmp_path_factory.mktemp("requester")
    w3 = Web3(Web3.HTTPProvider(anvil_url, request_kwargs={"timeout": 30}))
    info = deploy_protocol(w3, accounts[0], artifacts)
    write_deployment(root / "deployments", info)
    d = Deployed(anvil_url, info, root / "deployments", root / "store", accounts[1], accounts[2],
                 (accounts[3], accounts[4]), accounts[9])
    protocol = ProtocolContracts(connect(anvil_url), info)
    faucet = protocol.token(protocol.sender(accounts[0]))
    faucet.mint(d.requester.address, REQUESTER_FUNDS)
    for node, roles, price in [(d.solver, ROLE_SOLVER, SOLVER_PRICE)] + [(v, ROLE_VALIDATOR, 0) for v in d.validators]:
        sender = protocol.sender(node)
        registry, token = protocol.registry(sender), protocol.token(sender)
        faucet.mint(node.address, 2_000 * E18)
        registry.register(roles, Hardware(device_class=DEVICE_CLASSES["cpu"], memory_mb=16_000, throughput=1_000,
                                          price_per_unit=price))
        token.approve(registry.address, 2**256 - 1)
        registry.stake(1_000 * E18)
    return d


@cache
def digits_train() -> tuple[Dataset, bytes]:
    ds = digits(image=False)[0]
    return ds, ds.to_bytes()


def tiny_spec(dataset: dict[str, Any] | None = None, **over: Any) -> dict[str, Any]:
    """A small MLP on the digits: 1 round x 1 shard, 4 steps, 2 checkpoint segments."""
    if dataset is None:
        ds, data = digits_train()
        dataset = dataset_entry(ds, data)
    spec: dict[str, Any] = {
        "version": 1,
        "model": {"family": "mlp", "sizes": {"hidden": 16}},
        "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9},
        "batch_size": 16,
        "steps_per_unit": 4,
        "checkpoint_interval": 2,
        "seed": 11,
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
        "dataset": dataset,
    }
    spec.update(over)
    return spec


def store_digits(d: Deployed) -> str:
    """Put the digits dataset into the deployment's store; returns its CID."""
    return LocalStore(d.store_dir).put(digits_train()[1])


def chain_state(d: Deployed, who: LocalAccount) -> tuple[int, int, int]:
    """(nonce, token balance, allowance to the pool): what a refused submit must leave unchanged."""
    req = d.session()
    nonce = int(req.protocol.w3.eth.get_transaction_count(who.address))
    return nonce, req.token.balance_of(who.address), req.token.allowance(who.address, req.pool.address)


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `condition` until it returns something truthy; fail the test after `timeout` seconds."""
    try:
        return wait_until(condition, timeout, what, every=0.1)
    except GensynError as e:
        raise AssertionError(str(e)) from None


@dataclass(frozen=True)
class PlayedUnit:
    unit_id: int
    final_state_hash: bytes
    weights: dict[str, Any]  # the model the unit produced


def play_unit_to_final(d: Deployed, job_id: int, unit_id: int | None = None, *, finalize: bool = True) -> PlayedUnit:
    """Solver and validators take an open unit (default: the job's only one) to Final, for real (with
    `finalize=False`, to Verified: its challenge window has just begun).

    A training unit is trained from its round's global weights and its drawn segments replayed; an
    aggregation unit averages its round's results and is recomputed by its validators.
    """
    from gensyn_py.proof.aggregation_unit import commit_aggregation, load_weights, verify_aggregation
    from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
    from gensyn_py.proof.unit import commit_segments
    from gensyn_py.train.trainer import Trainer

    req = d.session()
    protocol, store, content = req.protocol, req.store, req.content
    w3 = protocol.w3
    params = req.pool_params()
    spec = content.spec(job_id)
    dataset = content.dataset(job_id)
    if unit_id is None:
        (unit_id,) = req.view.unit_ids(job_id)
    unit = req.view.unit(unit_id)
    pool = protocol.pool()
    solver = _pool(protocol, d.solver)

    def advance(seconds: int) -> None:
        w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]

    if not pool.claim_score(d.solver.address, unit_id).eligible:
        advance(params.claim_window)  # the required score decays to zero over the claim window
    solver.claim(unit_id)
    if unit.is_aggregation:
        results = content.round_results(job_id, unit.round)
        previous = content.previous_aggregate(job_id, unit.round)
        c = commit_aggregation(spec, store, job_id, unit.round, results, previous=previous)
        weights = load_weights(store.get(c.manifest.checkpoint_cids[-1]))
    else:
        start = content.start_weights(job_id, unit.round, unit.shard)
        trainer = Trainer(spec, dataset, unit.round, unit.shard, global_weights=start)
        c = commit_segments(trainer, store, job_id)
        weights = trainer.weights()
    solver.commit(unit_id, c.checkpoint_root, c.final_state_hash, c.manifest_cid)
    for _ in range(2):
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    drawn = pool.events(solver.draw_validators(unit_id), "ValidatorsDrawn")[0]
    by_address = {v.address: v for v in d.validators}
    manifest = fetch_manifest(store, c.manifest_cid)
    reveals = []
    for address, segment in zip(drawn["validators"], drawn["segments"], strict=True):
        if unit.is_aggregation:
            verdict = verify_aggregation(spec, store, job_id, unit.round, c.checkpoint_root, manifest, results,
                                         previous=previous)
        else:
            verdict = replay_segment(spec, dataset, store, UnitRef(job_id, unit.round, unit.shard, c.checkpoint_root),
                                     manifest, int(segment), global_weights=start)
        assert verdict.accept, verdict.reason
        salt = secrets.token_bytes(32)
        transcript = verdict.transcript_hash or bytes(32)
        h = verdict_hash(unit_id, address, True, transcript, salt)
        _pool(protocol, by_address[address]).commit_verdict(unit_id, h)
        reveals.append((by_address[address], int(segment), transcript, salt))
    for validator, segment, transcript, salt in reveals:
        _pool(protocol, validator).reveal_verdict(
            unit_id, True, transcript, salt, manifest.state_hashes[segment], manifest.state_hashes[segment + 1],
            manifest.transcript_commits[segment], manifest.proof(segment))
    if finalize:
        advance(params.challenge_window + 1)
        solver.finalize(unit_id)
    return PlayedUnit(unit_id, c.final_state_hash, weights)


def play_job_to_completion(d: Deployed, job_id: int) -> PlayedUnit:
    """Play every unit the job opens, phase after phase, until it completes; returns the last one played."""
    from gensyn_py.types import JobStatus, UnitStatus

    view = d.session().view
    last = None
    while view.job_state(job_id).status is JobStatus.ACTIVE:
        open_units = [u.unit_id for u in view.units(job_id) if u.status is UnitStatus.OPEN]
        assert open_units, f"job {job_id} is active with no open unit"
        for unit_id in open_units:
            last = play_unit_to_final(d, job_id, unit_id)
    assert last is not None and view.job_state(job_id).status is JobStatus.COMPLETED
    return last
