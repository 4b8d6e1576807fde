"""Every dishonest solver in the cheat library is caught by replaying its faked segment."""

from __future__ import annotations

from pathlib import Path

import pytest

from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
from gensyn_py.sim.cheats import CHEATS, FAKED_SEGMENT, solve
from tests.unit.trainkit import digits_flat, store_at, tiny_spec

JOB = 9
PARTIAL = {"skipped_steps", "fewer_steps", "other_data", "noisy_weights",
           "tampered_checkpoint", "uncommitted_checkpoint"}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_replay_catches_cheat(tmp_path: Path, name: str) -> None:
    spec, ds, store = tiny_spec(optimizer={"name": "adamw", "lr": 0.01}), digits_flat(), store_at(tmp_path)
    c = CHEATS[name](spec, ds, store, JOB, 0, 1)
    manifest = fetch_manifest(store, c.manifest_cid)
    unit = UnitRef(JOB, 0, 1, c.checkpoint_root)
    faked = replay_segment(spec, ds, store, unit, manifest, FAKED_SEGMENT, "cpu")
    assert not faked.accept, f"{name} escaped: {faked.reason}"
    if name in PARTIAL and name != "uncommitted_checkpoint":
        honest_part = replay_segment(spec, ds, store, unit, manifest, 0, "cpu")
        assert honest_part.accept, honest_part.reason  # only what was faked is rejected


def test_copied_checkpoints_fail_from_the_first_segment(tmp_path: Path) -> None:
    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    c = CHEATS["copied_unit"](spec, ds, store, JOB, 0, 0)
    v = replay_segment(spec, ds, store, UnitRef(JOB, 0, 0, c.checkpoint_root), c.manifest, 0, "cpu")
    assert not v.accept


def test_honest_solver_is_never_rejected(tmp_path: Path) -> None:
    spec, ds, store = tiny_spec(optimizer={"name": "adamw", "lr": 0.01}), digits_flat(), store_at(tmp_path)
    c = solve(spec, ds, store, JOB, 0, 1)
    unit = UnitRef(JOB, 0, 1, c.checkpoint_root)
    verdicts = [replay_segment(spec, ds, store, unit, c.manifest, j, "cpu") for j in range(spec.num_segments)]
    assert all(v.accept for v in verdicts), [v.reason for v in verdicts]
