"""Resume, not restart (issue 11): a unit resumed from another solver's partial commitment ends bit for bit
where training from the start ends, its validators accept every segment, and commitments are bound to the
solver: a copied root or a forged inheritance replays to transcripts that differ, and is rejected."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gensyn_py.errors import TrainingError, VerificationError
from gensyn_py.proof.commitment import Manifest
from gensyn_py.proof.replay import UnitRef, replay_segment
from gensyn_py.proof.resume import PartialRef, load_partial
from gensyn_py.proof.unit import commit_segments, resume_from_partial
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.spec import JobSpec
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import digits_flat, store_at, tiny_spec

JOB = 42
A = "0x" + "a1" * 20  # the first solver: publishes 2 of 4 segments, then vanishes
B = "0x" + "b2" * 20  # the solver that takes the unit over


class _Vanished(TrainingError):
    pass


def _partial_of_a(spec: JobSpec, store: LocalStore, segments: int) -> PartialRef:
    """Solver A trains, commits a partial every segment, and stops once `segments` are published."""
    published: list[Manifest] = []

    def on_partial(m: Manifest) -> None:
        published.append(m)
        if m.num_segments == segments:
            raise _Vanished("A stops here")

    with pytest.raises(_Vanished):
        commit_segments(Trainer(spec, digits_flat(), 0, 0, "cpu"), store, JOB, solver=A, on_partial=on_partial,
                        partial_every=1)
    assert [m.num_segments for m in published] == list(range(1, segments + 1))
    m = published[-1]
    return PartialRef(A, m.root(), segments, store.put(m.to_bytes()))


def _accepts(spec: JobSpec, store: LocalStore, unit: UnitRef, m: Manifest) -> list[bool]:
    return [replay_segment(spec, digits_flat(), store, unit, m, j, "cpu").accept for j in range(spec.num_segments)]


def test_resumed_unit_equals_training_from_scratch_and_every_segment_replays(tmp_path: Path) -> None:
    spec, store = tiny_spec(), store_at(tmp_path)
    straight_a = commit_segments(Trainer(spec, digits_flat(), 0, 0, "cpu"), store, JOB, solver=A)
    straight_b = commit_segments(Trainer(spec, digits_flat(), 0, 0, "cpu"), store, JOB, solver=B)
    partial = _partial_of_a(spec, store, 2)

    resume = load_partial(spec, store, JOB, 0, 0, partial, (partial,))
    trainer, record = resume_from_partial(spec, digits_flat(), 0, 0, store, resume, "cpu")
    assert trainer.step == 2 * spec.checkpoint_interval
    resumed = commit_segments(trainer, store, JOB, record=record, solver=B, resume=resume)

    m = resumed.manifest
    # Bit for bit the training from the start: every checkpoint, and so the final state.
    assert m.state_hashes == straight_a.manifest.state_hashes == straight_b.manifest.state_hashes
    assert m.checkpoint_cids == straight_a.manifest.checkpoint_cids
    # A's segments keep A's transcripts; B's own are those B gets training them from the start.
    a_commits, b_commits = straight_a.manifest.transcript_commits, straight_b.manifest.transcript_commits
    assert m.transcript_commits == a_commits[:2] + b_commits[2:]
    assert m.inherited == ((A, 2),)
    assert resumed.checkpoint_root == replace(straight_b.manifest, transcript_commits=m.transcript_commits,
                                              inherited=((A, 2),)).root()
    assert Manifest.from_bytes(store.get(resumed.manifest_cid)) == m
    assert m.prefix(2).root() == partial.root  # the resumed root extends the partial: prefix-consistent

    # Validators replay under B with A's on-chain partial: every segment, A's and B's, is accepted.
    unit = UnitRef(JOB, 0, 0, resumed.checkpoint_root, solver=B, partials=(partial,))
    assert _accepts(spec, store, unit, m) == [True] * 4
    # Without A's partial on-chain nothing backs the inheritance: rejected whatever the segment.
    assert _accepts(spec, store, replace(unit, partials=()), m) == [False] * 4


def test_a_copied_root_is_useless_to_another_solver(tmp_path: Path) -> None:
    """The freeloader commits A's published root and manifest as its own: replayed under its address, every
    transcript differs, so every honest validator rejects; the same work under A's address is accepted."""
    spec, store = tiny_spec(), store_at(tmp_path)
    a = commit_segments(Trainer(spec, digits_flat(), 0, 0, "cpu"), store, JOB, solver=A)
    as_b = UnitRef(JOB, 0, 0, a.checkpoint_root, solver=B)
    verdicts = [replay_segment(spec, digits_flat(), store, as_b, a.manifest, j, "cpu") for j in range(4)]
    assert not any(v.accept for v in verdicts)
    assert all("transcript" in v.reason for v in verdicts)
    assert _accepts(spec, store, replace(as_b, solver=A), a.manifest) == [True] * 4


def test_inheritance_must_match_an_on_chain_partial_exactly(tmp_path: Path) -> None:
    """Naming A as the author of more segments than A published, or of segments under another root, fails."""
    spec, store = tiny_spec(), store_at(tmp_path)
    a = commit_segments(Trainer(spec, digits_flat(), 0, 0, "cpu"), store, JOB, solver=A)
    partial = _partial_of_a(spec, store, 1)
    forged = replace(a.manifest, inherited=((A, 3),))  # A published 1 segment, not 3
    unit = UnitRef(JOB, 0, 0, forged.root(), solver=B, partials=(partial,))
    assert _accepts(spec, store, unit, forged) == [False] * 4
    # The partial's count is right but its root is not the prefix of this manifest.
    wrong_root = replace(partial, segments=3)
    assert _accepts(spec, store, replace(unit, partials=(wrong_root,)), forged) == [False] * 4


def test_a_partial_that_does_not_match_is_refused(tmp_path: Path) -> None:
    spec, store = tiny_spec(), store_at(tmp_path)
    partial = _partial_of_a(spec, store, 2)
    with pytest.raises(VerificationError, match="on-chain partial root"):
        load_partial(spec, store, JOB, 0, 0, replace(partial, root=b"\x01" * 32), ())
    with pytest.raises(VerificationError, match="segments"):
        load_partial(spec, store, JOB, 0, 0, replace(partial, segments=3), ())
    with pytest.raises(VerificationError, match="job, round or shard"):
        load_partial(spec, store, JOB, 0, 1, partial, ())
