"""A solver's unit record survives a crash: exact file form, and resuming to the same commitment."""

from __future__ import annotations

import math
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gensyn_py.errors import ContentNotFound, TrainingError
from gensyn_py.proof.commitment import UnitCommitment, transcript_hash
from gensyn_py.proof.unit import UnitRecord, commit_segments, resume_trainer
from gensyn_py.sim.cheats import solve
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import digits_flat, store_at, tiny_spec

JOB = 42
HASH = bytes(range(32))
CID = "bafkreichgieyp6netvnqaem3syhsi6uvm5z7k5kdtavyx7fw3jn3hl6z54"  # cid_for_bytes(b"checkpoint")


def test_record_file_holds_losses_bit_for_bit(tmp_path: Path) -> None:
    losses = [2.3025851249694824, 1e-45, -0.0, math.inf, math.nan, 0.1, 1 / 3]
    record = UnitRecord([CID, CID], [HASH, HASH[::-1]], losses)
    path = tmp_path / "unit" / "record.json"
    record.save(path)
    record.save(path)  # replacing an existing record
    back = UnitRecord.load(path)
    assert back.cids == record.cids and back.hashes == record.hashes
    assert struct.pack("<7d", *back.losses) == struct.pack("<7d", *losses)
    assert transcript_hash(back.losses, HASH) == transcript_hash(losses, HASH)
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]  # no temporary file left


@pytest.mark.parametrize("text", [
    b"not json",
    b'{"version":2,"cids":[],"stateHashes":[],"losses":""}',
    b'{"version":1,"cids":["bafk"],"stateHashes":["0x' + b"00" * 32 + b'"],"losses":""}',
    b'{"version":1,"cids":[],"stateHashes":["0x00"],"losses":""}',
    b'{"version":1,"cids":[],"stateHashes":[],"losses":"AAAA"}',
    b'{"version":1,"cids":[],"stateHashes":[],"losses":"**"}',
])
def test_malformed_record_is_refused(tmp_path: Path, text: bytes) -> None:
    (tmp_path / "record.json").write_bytes(text)
    with pytest.raises(TrainingError):
        UnitRecord.load(tmp_path / "record.json")


def _crash_at(step: int) -> Callable[[int, int, float], None]:
    def hook(s: int, total: int, loss: float) -> None:
        if s == step:
            raise RuntimeError("solver crashed")

    return hook


def _same(a: UnitCommitment, b: UnitCommitment) -> None:
    assert a.checkpoint_root == b.checkpoint_root
    assert a.final_state_hash == b.final_state_hash
    assert a.manifest_cid == b.manifest_cid
    assert a.manifest == b.manifest


@pytest.mark.parametrize("crash_step, resumed_at", [(5, 4), (1, 0)])
def test_unit_resumed_from_its_saved_record_commits_like_an_uninterrupted_one(
        tmp_path: Path, crash_step: int, resumed_at: int) -> None:
    spec, ds = tiny_spec(), digits_flat()  # 8 steps, a checkpoint every 2
    straight = solve(spec, ds, store_at(tmp_path / "straight"), JOB, 1, 1)
    path = tmp_path / "record.json"
    with pytest.raises(RuntimeError):
        commit_segments(Trainer(spec, ds, 1, 1, "cpu"), store_at(tmp_path / "s"), JOB, on_step=_crash_at(crash_step),
                        record_path=path)
    # The process is gone: only the store's files and the record file remain.
    record = UnitRecord.load(path)
    assert len(record.cids) == resumed_at // 2 + 1 and len(record.losses) == resumed_at
    store = store_at(tmp_path / "s")
    trainer = resume_trainer(spec, ds, 1, 1, store, record, "cpu")
    assert trainer.step == resumed_at
    again = commit_segments(trainer, store, JOB, record=record, record_path=path)
    _same(again, straight)
    assert UnitRecord.load(path) == record and len(record.losses) == spec.steps_per_unit


def test_resume_cuts_losses_past_the_last_checkpoint(tmp_path: Path) -> None:
    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    straight = solve(spec, ds, store_at(tmp_path / "straight"), JOB, 0, 0)
    record = UnitRecord()
    with pytest.raises(RuntimeError):
        commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store, JOB, on_step=_crash_at(7), record=record)
    assert len(record.cids) == 4 and len(record.losses) == 7  # in memory: one step past checkpoint 3
    trainer = resume_trainer(spec, ds, 0, 0, store, record, "cpu")
    assert trainer.step == 6 and len(record.losses) == 6
    _same(commit_segments(trainer, store, JOB, record=record), straight)


def test_empty_record_resumes_from_scratch(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()
    record = UnitRecord(losses=[0.5])
    trainer = resume_trainer(spec, ds, 0, 0, store_at(tmp_path), record, "cpu")
    assert trainer.step == 0 and record == UnitRecord()


def test_resume_refuses_a_checkpoint_it_cannot_trust(tmp_path: Path) -> None:
    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    c = solve(spec, ds, store, JOB, 0, 0)
    hashes = list(c.manifest.state_hashes[:3])
    cids = list(c.manifest.checkpoint_cids[:3])
    with pytest.raises(TrainingError, match="recorded state hash"):
        resume_trainer(spec, ds, 0, 0, store, UnitRecord(cids, [*hashes[:2], HASH], [0.0] * 4), "cpu")
    with pytest.raises(ContentNotFound):
        resume_trainer(spec, ds, 0, 0, store_at(tmp_path / "empty"), UnitRecord(cids, hashes, [0.0] * 4), "cpu")
    with pytest.raises(TrainingError, match="losses"):
        resume_trainer(spec, ds, 0, 0, store, UnitRecord(cids, hashes, [0.0] * 3), "cpu")
    with pytest.raises(TrainingError, match="round/shard"):
        resume_trainer(spec, ds, 0, 1, store, UnitRecord(cids, hashes, [0.0] * 4), "cpu")


_CHILD = """
import sys, threading
from pathlib import Path
from gensyn_py.proof.unit import commit_segments
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import digits_flat, store_at, tiny_spec

root = Path(sys.argv[1])

def stall(step, total, loss):
    if step == 5:  # mid-unit, one step past the checkpoint at step 4: wait here to be killed
        (root / "at-step-5").touch()
        threading.Event().wait(120)
        raise SystemExit("never killed")

trainer = Trainer(tiny_spec(), digits_flat(), 0, 1, "cpu")
commit_segments(trainer, store_at(root / "store"), 42, on_step=stall, record_path=root / "record.json")
"""


def _wait_for(cond: Callable[[], bool], child: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if child.poll() is not None:
            raise AssertionError(f"child exited early ({child.returncode}): {child.communicate()[1].decode()}")
        if time.monotonic() > deadline:
            raise AssertionError("child never reached the state to kill it in")
        time.sleep(0.02)


def _record_lists(path: Path, n: int) -> bool:
    return path.exists() and len(UnitRecord.load(path).cids) >= n


def test_solver_killed_mid_unit_resumes_from_its_record_to_the_same_commitment(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()
    path = tmp_path / "record.json"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], cwd=Path(__file__).parents[2],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: (tmp_path / "at-step-5").exists() and _record_lists(path, 3), child)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
    record = UnitRecord.load(path)
    store = store_at(tmp_path / "store")
    trainer = resume_trainer(spec, ds, 0, 1, store, record, "cpu")
    assert trainer.step == 4
    resumed = commit_segments(trainer, store, JOB, record=record, record_path=path)
    _same(resumed, solve(spec, ds, store_at(tmp_path / "straight"), JOB, 0, 1))
