"""The loss chart's data: one step replayed from each committed checkpoint of a unit committed on a real anvil.

The solver is scripted (no daemons): it claims the unit, trains it keeping its `UnitRecord`, and commits;
the explorer's `checkpoint_losses` then recomputes, from the chain and the store alone, the losses the
solver had at the first step out of each checkpoint.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from web3 import Web3

from gensyn_py.errors import ContentNotFound, VerificationError
from gensyn_py.proof.checkpoint_losses import checkpoint_losses, spread
from gensyn_py.proof.content import JobContent
from gensyn_py.proof.record import UnitRecord
from gensyn_py.proof.replay import trainer_at_checkpoint
from gensyn_py.proof.unit import commit_segments
from gensyn_py.requester.submit import submit_job
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.spec import parse_spec
from gensyn_py.train.trainer import Trainer
from gensyn_py.types import Unit
from tests.integration.test_requester_kit import Deployed, deployed, store_digits, tiny_spec

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here

STEPS, INTERVAL = 40, 4  # 10 segments: enough steps for the digits loss to fall


@dataclass(frozen=True)
class Committed:
    unit: Unit
    record: UnitRecord  # what the solver kept while training: its losses step by step
    checkpoint_cids: tuple[str, ...]


def _f32(x: float) -> bytes:
    return struct.pack("<f", x)


@pytest.fixture(scope="module")
def committed(deployed: Deployed, w3: Web3) -> Iterator[Committed]:
    """A digits job's only unit, claimed, trained and committed by the solver; rolled back after the module."""
    snap = w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    store_digits(deployed)
    req = deployed.session(deployed.requester)
    job_id = submit_job(req, parse_spec(tiny_spec(steps_per_unit=STEPS, checkpoint_interval=INTERVAL))).job_id
    (unit_id,) = req.view.unit_ids(job_id)
    protocol = req.protocol
    solver = protocol.pool(protocol.sender(deployed.solver))
    if not solver.claim_score(deployed.solver.address, unit_id).eligible:
        # the required score decays to zero over the claim window
        w3.provider.make_request("evm_increaseTime", [req.pool_params().claim_window])  # type: ignore[arg-type]
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    solver.claim(unit_id)
    record = UnitRecord()
    trainer = Trainer(req.content.spec(job_id), req.content.dataset(job_id))
    c = commit_segments(trainer, req.store, job_id, record=record, solver=deployed.solver.address)
    solver.commit(unit_id, c.checkpoint_root, c.final_state_hash, c.manifest_cid)
    yield Committed(req.view.unit(unit_id), record, c.manifest.checkpoint_cids)
    w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]


def _content(d: Deployed) -> JobContent:
    """What the explorer holds: the chain and the store, nothing of the solver's."""
    return d.session().content


def test_losses_are_the_solvers_own_at_the_first_step_out_of_each_checkpoint(
    deployed: Deployed, committed: Committed,
) -> None:
    losses = checkpoint_losses(_content(deployed), committed.unit)
    assert [step for step, _ in losses] == [j * INTERVAL + 1 for j in range(STEPS // INTERVAL)]
    assert [_f32(loss) for _, loss in losses] == [_f32(committed.record.losses[step - 1]) for step, _ in losses]


def test_the_digits_loss_falls_over_the_unit(deployed: Deployed, committed: Committed) -> None:
    values = [loss for _, loss in checkpoint_losses(_content(deployed), committed.unit)]
    assert values[-1] < 0.8 * values[0]
    half = len(values) // 2
    assert sum(values[half:]) < sum(values[:half])


def test_limit_keeps_the_first_and_last_segment_starts_evenly_spaced(
    deployed: Deployed, committed: Committed,
) -> None:
    full = dict(checkpoint_losses(_content(deployed), committed.unit))
    some = checkpoint_losses(_content(deployed), committed.unit, limit=4)
    assert [step for step, _ in some] == [1, 13, 25, 37]  # segments 0, 3, 6, 9
    assert all(_f32(full[step]) == _f32(loss) for step, loss in some)


def test_spread_picks_evenly_spaced_indices_with_both_ends() -> None:
    assert spread(10, None) == spread(10, 10) == spread(10, 50) == list(range(10))
    assert spread(10, 2) == [0, 9]
    assert spread(10, 4) == [0, 3, 6, 9]
    assert spread(100, 5) == [0, 25, 50, 74, 99]  # round(74.25), round(49.5) -> even
    with pytest.raises(ValueError, match="at least 2"):
        spread(10, 1)


def _stored(d: Deployed, cid: str) -> Path:
    return LocalStore(d.store_dir).path_for(cid)


def test_a_tampered_checkpoint_is_refused(deployed: Deployed, committed: Committed) -> None:
    path = _stored(deployed, committed.checkpoint_cids[3])
    honest = path.read_bytes()
    try:
        path.write_bytes(_stored(deployed, committed.checkpoint_cids[2]).read_bytes())  # a real state, wrong place
        with pytest.raises(VerificationError, match=rf"unit {committed.unit.unit_id} checkpoint 3 "):
            checkpoint_losses(_content(deployed), committed.unit)
    finally:
        path.write_bytes(honest)
    assert len(checkpoint_losses(_content(deployed), committed.unit, limit=2)) == 2


def test_a_manifest_naming_other_bytes_for_a_checkpoint_is_refused(deployed: Deployed, committed: Committed) -> None:
    """The root commits to state hashes, not CIDs: bytes under a CID the manifest lists must hash to the state."""
    content = _content(deployed)
    unit = committed.unit
    commitment = content.view.commitment(unit.unit_id)
    assert commitment is not None
    honest = content.manifest(commitment.manifest_cid)
    cids = list(honest.checkpoint_cids)
    cids[3] = cids[2]  # well-formed, stored, a real state of this unit: not checkpoint 3's
    forged = replace(honest, checkpoint_cids=tuple(cids))
    assert forged.root() == commitment.checkpoint_root
    spec, dataset = content.spec(unit.job_id), content.dataset(unit.job_id)
    with pytest.raises(VerificationError, match="bytes do not match the committed state hash"):
        trainer_at_checkpoint(spec, dataset, content.store, forged, 3)
    assert trainer_at_checkpoint(spec, dataset, content.store, honest, 3).step == 3 * INTERVAL


def test_a_missing_checkpoint_raises_the_stores_error(deployed: Deployed, committed: Committed) -> None:
    path = _stored(deployed, committed.checkpoint_cids[5])
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    try:
        with pytest.raises(ContentNotFound):
            checkpoint_losses(_content(deployed), committed.unit)
    finally:
        aside.rename(path)
