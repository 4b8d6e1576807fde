"""Checkpoints written behind the training: the same commitment, snapshots taken in time, failures surfaced."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import gensyn_py.proof.unit as unit
from gensyn_py.errors import StorageError
from gensyn_py.proof.record import UnitRecord
from gensyn_py.proof.unit import commit_segments
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, digits_flat, store_at, tiny_spec

if TYPE_CHECKING:
    import torch

JOB = 42


@pytest.mark.parametrize("family", ["mlp", "transformer"])
def test_overlapped_checkpoints_commit_the_same_as_inline_ones(tmp_path: Path, family: str) -> None:
    spec, ds = tiny_spec(family), dataset_for(family)
    inline = commit_segments(Trainer(spec, ds, 0, 1, "cpu"), store_at(tmp_path / "a"), JOB, overlap=False)
    overlapped = commit_segments(Trainer(spec, ds, 0, 1, "cpu"), store_at(tmp_path / "b"), JOB)
    assert overlapped.manifest == inline.manifest
    assert overlapped.checkpoint_root == inline.checkpoint_root
    assert overlapped.manifest_cid == inline.manifest_cid


def test_the_writer_hashes_the_snapshot_on_the_cores_training_leaves(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside training, a checkpoint is hashed from its snapshot on the spare cores only (on 2 cores, hashing on
    both slowed the training thread), and its hash is the hash of the bytes stored."""
    import torch

    from gensyn_py.crypto.native_merkle import native_module
    from gensyn_py.proof.state import state_hash_of_bytes

    if native_module() is None:
        pytest.skip("without the C Merkle module the hash runs in a helper process")
    assert unit.spare_cores("cuda:0") == max(1, (unit.os.cpu_count() or 1) - 1)
    assert unit.spare_cores("cpu") == max(1, (unit.os.cpu_count() or 1) - torch.get_num_threads())
    monkeypatch.setattr(unit, "spare_cores", lambda device: 3)
    seen: list[int | None] = []
    real = unit.state_hash

    def counting(state: Mapping[str, torch.Tensor], workers: int | None = None) -> bytes:
        seen.append(workers)
        return real(state, workers)

    monkeypatch.setattr(unit, "state_hash", counting)
    spec, ds = tiny_spec("mlp"), dataset_for("mlp")
    store = store_at(tmp_path)
    rec = UnitRecord()
    commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store, JOB, record=rec)
    assert seen == [3] * len(rec.cids)
    assert rec.hashes == [state_hash_of_bytes(store.get(cid)) for cid in rec.cids]


class _LateStore(LocalStore):
    """Writes only once `ready` is set: the checkpoint writer lags the training."""

    def __init__(self, root: Path, ready: threading.Event) -> None:
        super().__init__(root)
        self.ready = ready

    def _put(self, data: bytes, cid: str) -> str:
        assert self.ready.wait(30), "training never went on"
        return super()._put(data, cid)


def test_checkpoint_holds_the_state_at_its_step_though_written_steps_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, ds = tiny_spec(), digits_flat()
    inline = commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store_at(tmp_path / "a"), JOB, overlap=False)
    trained_on = threading.Event()
    real_encode = unit.encode_state

    def encode(state: Mapping[str, torch.Tensor]) -> bytes:
        # Were the encoding ever moved behind the training, it too would run late here.
        if threading.current_thread() is not threading.main_thread():
            assert trained_on.wait(30), "training never went on"
        return real_encode(state)

    def on_step(step: int, total: int, loss: float) -> None:
        if step == 2:  # two steps have updated the weights and moments in place since checkpoint 0
            trained_on.set()

    monkeypatch.setattr(unit, "encode_state", encode)
    store = _LateStore(tmp_path / "b", trained_on)
    late = commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store, JOB, on_step=on_step)
    assert late.manifest == inline.manifest


class _FailingStore(LocalStore):
    """Fails the `fail_at`-th write (0-based), as a full disk or a dead IPFS node would."""

    def __init__(self, root: Path, fail_at: int) -> None:
        super().__init__(root)
        self.fail_at = fail_at
        self.writes = 0

    def _put(self, data: bytes, cid: str) -> str:
        self.writes += 1
        if self.writes - 1 == self.fail_at:
            raise StorageError("disk full")
        return super()._put(data, cid)


def test_writer_failure_stops_the_unit_with_the_writers_error(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()  # 8 steps, a checkpoint every 2
    trainer, record = Trainer(spec, ds, 0, 0, "cpu"), UnitRecord()
    with pytest.raises(StorageError, match="disk full"):
        commit_segments(trainer, _FailingStore(tmp_path / "s", fail_at=1), JOB, record=record,
                        record_path=tmp_path / "record.json")
    assert trainer.step <= 6  # surfaced by the second checkpoint after the failed one at the latest
    assert len(record.cids) == len(record.hashes) == 1  # nothing recorded past the gap
    assert UnitRecord.load(tmp_path / "record.json").cids == record.cids


def test_training_failure_still_records_every_checkpoint_taken(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()
    record = UnitRecord()

    def die(step: int, total: int, loss: float) -> None:
        if step == 5:
            raise RuntimeError("solver crashed")

    with pytest.raises(RuntimeError, match="solver crashed"):
        commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store_at(tmp_path), JOB, on_step=die, record=record)
    assert len(record.cids) == 3 and len(record.losses) == 5  # checkpoints at steps 0, 2, 4


@pytest.mark.parametrize(("family", "mode"), [("mlp", "exact"), ("transformer", "repro")])
def test_snapshots_reuse_written_ones_and_commit_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          family: str, mode: str) -> None:
    """A checkpoint's snapshot copies into the tensors of one the writer has finished with (no fresh memory to fault
    in), and the unit commits what fresh snapshots commit: a state hook, which may hold its snapshots, gets fresh
    ones and turns the reuse off."""
    handed: list[bool] = []
    real = unit._CheckpointWriter.spare

    def watched(self: unit._CheckpointWriter) -> Mapping[str, torch.Tensor] | None:
        out = real(self)
        handed.append(out is not None)
        return out

    monkeypatch.setattr(unit._CheckpointWriter, "spare", watched)
    spec, ds = tiny_spec(family, mode=mode), dataset_for(family)
    reused = commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store_at(tmp_path / "a"), JOB, overlap=False)
    assert handed and handed[0] is False and all(handed[1:])  # inline: each written snapshot serves the next
    handed.clear()
    fresh = commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store_at(tmp_path / "b"), JOB,
                            state_hook=lambda index, state: state)
    assert handed == []
    assert reused.manifest == fresh.manifest and reused.checkpoint_root == fresh.checkpoint_root
    overlapped = commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store_at(tmp_path / "c"), JOB)
    assert overlapped.manifest == fresh.manifest
