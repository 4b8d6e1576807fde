"""Replay verification of honest units, across processes and after resume; aggregation."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gensyn_py.errors import TrainingError, VerificationError
from gensyn_py.proof.aggregation import aggregate, aggregate_hash, shard_weights, verify_aggregate
from gensyn_py.proof.commitment import Manifest
from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
from gensyn_py.proof.state import decode_state
from gensyn_py.proof.unit import UnitRecord, commit_segments
from gensyn_py.sim.cheats import solve
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, digits_flat, store_at, tiny_spec

JOB = 42


@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_honest_unit_is_accepted_on_every_segment(tmp_path: Path, family: str) -> None:
    spec, ds, store = tiny_spec(family), dataset_for(family), store_at(tmp_path)
    c = solve(spec, ds, store, JOB, 0, 1)
    manifest = fetch_manifest(store, c.manifest_cid)
    assert manifest == c.manifest
    unit = UnitRef(JOB, 0, 1, c.checkpoint_root)
    for j in range(spec.num_segments):
        v = replay_segment(spec, ds, store, unit, manifest, j, "cpu")
        assert v.accept, v.reason
        assert v.transcript_hash is not None


def test_honest_unit_in_another_process_gives_same_commitment_and_replays(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()
    code = (
        "import json,sys\n"
        "from gensyn_py.sim.cheats import solve\n"
        "from tests.unit.trainkit import tiny_spec, digits_flat, store_at\n"
        "c = solve(tiny_spec(), digits_flat(), store_at(sys.argv[1]), 42, 1, 0)\n"
        "print(json.dumps({'root': c.checkpoint_root.hex(), 'cid': c.manifest_cid}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "child")], check=True,
                         capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=120)
    child = json.loads(out.stdout.strip().splitlines()[-1])
    mine = solve(spec, ds, store_at(tmp_path / "parent"), JOB, 1, 0)
    assert child["root"] == mine.checkpoint_root.hex()
    assert child["cid"] == mine.manifest_cid
    child_store = store_at(tmp_path / "child")
    manifest = fetch_manifest(child_store, child["cid"])
    unit = UnitRef(JOB, 1, 0, bytes.fromhex(child["root"]))
    assert replay_segment(spec, ds, child_store, unit, manifest, 3, "cpu").accept


def test_unit_resumed_from_a_checkpoint_commits_the_same_root(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()
    store = store_at(tmp_path)
    straight = solve(spec, ds, store, JOB, 0, 0)
    record = UnitRecord()
    crashed = Trainer(spec, ds, 0, 0, "cpu")
    with pytest.raises(RuntimeError):  # the solver dies after step 5 (last checkpoint: step 4)
        commit_segments(crashed, store, JOB, record=record, on_step=_die_after(5))
    del record.losses[4:]
    del record.cids[3:], record.hashes[3:]
    resumed = Trainer(spec, ds, 0, 0, "cpu")
    resumed.load_state_dict(decode_state(store.get(record.cids[-1])))
    again = commit_segments(resumed, store, JOB, record=record)
    assert again.checkpoint_root == straight.checkpoint_root
    assert again.manifest_cid == straight.manifest_cid
    with pytest.raises(TrainingError, match="cannot commit"):
        commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store, JOB, record=record)


def _die_after(n: int) -> Callable[[int, int, float], None]:
    def hook(step: int, total: int, loss: float) -> None:
        if step == n:
            raise RuntimeError("solver crashed")

    return hook


def test_replay_rejects_mismatched_unit_or_spec(tmp_path: Path) -> None:
    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    c = solve(spec, ds, store, JOB, 0, 0)
    wrong_job = replay_segment(spec, ds, store, UnitRef(JOB + 1, 0, 0, c.checkpoint_root), c.manifest, 0)
    assert not wrong_job.accept and "job/round/shard" in wrong_job.reason
    other = tiny_spec(seed=99)
    assert not replay_segment(other, ds, store, UnitRef(JOB, 0, 0, c.checkpoint_root), c.manifest, 0).accept
    out_of_range = replay_segment(spec, ds, store, UnitRef(JOB, 0, 0, c.checkpoint_root), c.manifest, 9)
    assert not out_of_range.accept


def test_missing_checkpoint_is_a_rejection_not_a_crash(tmp_path: Path) -> None:
    spec, ds = tiny_spec(), digits_flat()
    c = solve(spec, ds, store_at(tmp_path / "a"), JOB, 0, 0)
    empty = store_at(tmp_path / "b")
    v = replay_segment(spec, ds, empty, UnitRef(JOB, 0, 0, c.checkpoint_root), c.manifest, 1, timeout=0.1)
    assert not v.accept and "unavailable" in v.reason


def test_manifest_round_trips_and_rejects_inconsistent_json(tmp_path: Path) -> None:
    c = solve(tiny_spec(), digits_flat(), store_at(tmp_path), JOB, 0, 0)
    raw = c.manifest.to_bytes()
    assert Manifest.from_bytes(raw) == c.manifest
    obj = json.loads(raw)
    obj["checkpointRoot"] = "0x" + "00" * 32
    with pytest.raises(VerificationError, match="checkpointRoot"):
        Manifest.from_bytes(json.dumps(obj).encode())
    with pytest.raises(VerificationError):
        Manifest.from_bytes(b"[]")


def test_aggregation_is_a_weighted_average_and_verifiable(tmp_path: Path) -> None:
    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    finals = []
    for shard in range(spec.shards):
        c = solve(spec, ds, store, JOB, 0, shard)
        finals.append(decode_state(store.get(c.manifest.checkpoint_cids[-1])))
    merged = aggregate(spec, finals)
    w = shard_weights(spec)
    assert sum(w) == ds.num_examples
    key = next(iter(merged))
    expected = (finals[0][f"model/{key}"].double() * w[0] + finals[1][f"model/{key}"].double() * w[1]) / sum(w)
    assert (merged[key] == expected.float()).all()
    claimed = aggregate_hash(merged)
    assert verify_aggregate(spec, finals, claimed)
    assert not verify_aggregate(spec, list(reversed(finals)), claimed)
    # round 1 trains from the aggregate and still replays exactly
    c1 = solve(spec, ds, store, JOB, 1, 0, global_weights=merged)
    v = replay_segment(spec, ds, store, UnitRef(JOB, 1, 0, c1.checkpoint_root), c1.manifest, 0,
                       global_weights=merged)
    assert v.accept, v.reason
    not_agreed = replay_segment(spec, ds, store, UnitRef(JOB, 1, 0, c1.checkpoint_root), c1.manifest, 0)
    assert not not_agreed.accept and "initial state" in not_agreed.reason
