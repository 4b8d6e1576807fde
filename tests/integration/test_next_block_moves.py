"""Moves that become allowed with time or with the next block are taken as soon as the chain would accept them.

On a real anvil mining only on arrival (no block comes by itself), so the latest block stays behind the clock:
- a claim whose score the falling required score now allows is sent and lands, though the latest block still
  says it is too early (the static call and the daemon's check ask the pending block, the one it lands in);
- a keeper draws a committed unit's validators as soon as the block after the seed block exists (the draw
  lands in the block after it, which may read that block's hash), without waiting for yet another block;
- a keeper finalizes a unit once the pending block's time is past its challenge window;
- the validator whose sealed verdict is the last one reveals it in the same cycle (reveals are open once every
  drawn validator has sealed), not a poll later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount
from web3 import Web3

from gensyn_py.node.daemon import Handler
from gensyn_py.node.hardware import HardwareProfile
from gensyn_py.node.role import NodeConfig, NodeDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.proof.record import UnitRecord
from gensyn_py.proof.unit import commit_segments
from gensyn_py.requester.submit import submit_job
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.spec import parse_spec
from gensyn_py.train.trainer import Trainer
from gensyn_py.types import UnitStatus
from tests.integration.test_requester_kit import Deployed, deployed, play_unit_to_final, store_digits, tiny_spec

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here


class _Keeper(NodeDaemon):
    """A node daemon with no role handlers: only its keeper duties (`poke`) are used."""

    def handlers(self) -> dict[str, Handler]:
        return {}


def _rpc(w3: Web3, method: str, *params: object) -> None:
    w3.provider.make_request(method, list(params))  # type: ignore[arg-type]


def _config(d: Deployed, account: LocalAccount, state: Path) -> NodeConfig:
    return NodeConfig(protocol=d.protocol(), account=account, store=LocalStore(d.store_dir), state=DaemonState(state),
                      hardware=HardwareProfile("cpu", 16_000, 1_000))


def _keeper(d: Deployed, tmp_path: Path) -> _Keeper:
    return _Keeper(_config(d, d.validators[0], tmp_path / "keeper.sqlite"))


def _committed(d: Deployed, w3: Web3) -> int:
    """A tiny job's only unit, claimed, trained and committed by the solver; returns its id."""
    job_id, unit_id = _submitted(d)
    protocol = d.protocol()
    pool = protocol.pool(protocol.sender(d.solver))
    _rpc(w3, "evm_increaseTime", d.session().pool_params().claim_window)
    pool.claim(unit_id)
    req = d.session(d.requester)
    trainer = Trainer(req.content.spec(job_id), req.content.dataset(job_id))
    c = commit_segments(trainer, req.store, job_id, record=UnitRecord(), solver=d.solver.address)
    pool.commit(unit_id, c.checkpoint_root, c.final_state_hash, c.manifest_cid)
    return unit_id


def _submitted(d: Deployed) -> tuple[int, int]:
    store_digits(d)
    req = d.session(d.requester)
    job_id = submit_job(req, parse_spec(tiny_spec())).job_id
    (unit_id,) = req.view.unit_ids(job_id)
    return job_id, unit_id


def test_a_claim_the_score_allows_lands_though_the_latest_block_says_too_early(
    deployed: Deployed, w3: Web3, snapshot: None
) -> None:
    d = deployed
    _, unit_id = _submitted(d)
    protocol = d.protocol()
    pool = protocol.pool(protocol.sender(d.solver))
    assert not pool.claim_score(d.solver.address, unit_id).eligible  # just opened: the required score is 100%
    view = d.session().view
    opened_at = view.unit(unit_id).opened_at
    window = d.session().pool_params().claim_window
    _rpc(w3, "evm_increaseTime", window)  # the clock moves past the claim window; no block is mined
    latest = w3.eth.get_block("latest")
    assert not pool.claim_score(d.solver.address, unit_id, block="latest").eligible
    assert pool.claim_score(d.solver.address, unit_id, block="pending").eligible
    receipt = pool.claim(unit_id)
    unit = view.unit(unit_id)
    assert unit.status is UnitStatus.ASSIGNED and unit.solver == d.solver.address
    assert receipt["blockNumber"] == latest["number"] + 1  # no block between: the claim's own
    assert w3.eth.get_block(receipt["blockNumber"])["timestamp"] >= opened_at + window


def test_a_keeper_draws_in_the_block_after_the_seed_blocks_successor(
    deployed: Deployed, w3: Web3, snapshot: None, tmp_path: Path
) -> None:
    d = deployed
    unit_id = _committed(d, w3)
    keeper = _keeper(d, tmp_path)
    unit = keeper.view.unit(unit_id)
    assert unit.status is UnitStatus.COMMITTED and not unit.drawn
    assert unit.seed_block == w3.eth.block_number
    assert not keeper.poke(unit)  # the seed block's successor, whose hash seeds the draw, is not mined yet
    _rpc(w3, "evm_mine")
    assert keeper.poke(keeper.view.unit(unit_id))  # it exists now: the draw lands in the block after it
    drawn = keeper.view.unit(unit_id)
    assert drawn.drawn and drawn.status is UnitStatus.COMMITTED and len(drawn.validators) == 2
    assert w3.eth.block_number == unit.seed_block + 2
    keeper.state.close()


def test_a_keeper_finalizes_once_the_pending_blocks_time_is_past_the_challenge_window(
    deployed: Deployed, w3: Web3, snapshot: None, tmp_path: Path
) -> None:
    d = deployed
    job_id, unit_id = _submitted(d)
    play_unit_to_final(d, job_id, unit_id, finalize=False)
    keeper = _keeper(d, tmp_path)
    unit = keeper.view.unit(unit_id)
    assert unit.status is UnitStatus.VERIFIED
    assert not keeper.poke(unit)  # inside its challenge window
    _rpc(w3, "evm_increaseTime", unit.deadline - keeper.view.now() + 1)  # past it by the clock; no block mined
    assert keeper.view.now() <= unit.deadline < keeper.view.next_time()
    assert keeper.poke(unit)
    assert keeper.view.unit(unit_id).status is UnitStatus.FINAL
    keeper.state.close()


def test_the_last_validator_to_seal_reveals_in_the_same_cycle(
    deployed: Deployed, w3: Web3, snapshot: None, tmp_path: Path
) -> None:
    d = deployed
    unit_id = _committed(d, w3)
    _rpc(w3, "evm_mine")
    protocol = d.protocol()
    pool = protocol.pool(protocol.sender(d.solver))
    receipt = pool.draw_validators(unit_id)
    (drawn,) = pool.events(receipt, "ValidatorsDrawn")
    accounts = {v.address: v for v in d.validators}
    daemons = []
    for i, address in enumerate(drawn["validators"]):
        config = _config(d, accounts[address], tmp_path / f"v{i}.sqlite")
        task = {"segment": int(drawn["segments"][i]), "seed": "0x" + bytes(drawn["seed"]).hex(),
                "block": int(receipt["blockNumber"])}
        daemons.append((ValidatorDaemon(config), task))
    assert len(daemons) == 2
    view = daemons[0][0].view

    def revealed(address: str) -> bool:
        return view.has_event("VerdictRevealed", int(receipt["blockNumber"]), unitId=unit_id, validator=address)

    def seal(daemon: ValidatorDaemon, task: dict[str, Any]) -> None:
        daemon._verdict(view.unit(unit_id), task)  # starts the replay, off the cycle
        assert daemon.background.idle(120)
        daemon._verdict(view.unit(unit_id), task)  # the cycle after the replay ended: seals

    first, second = daemons
    seal(*first)  # the other has not sealed: reveals are not open yet
    assert view.unit(unit_id).committed == 1 and not revealed(first[0].address)
    seal(*second)  # seals last, and reveals in the same cycle
    assert view.unit(unit_id).committed == 2 and revealed(second[0].address)
    first[0]._verdict(view.unit(unit_id), first[1])  # its next cycle: reveals too, and the unit is Verified
    assert revealed(first[0].address) and view.unit(unit_id).status is UnitStatus.VERIFIED
    for daemon, _ in daemons:
        daemon.background.close()
        daemon.state.close()
