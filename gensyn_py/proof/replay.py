"""The validator's side: check one committed segment by replaying it bit for bit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.crypto.merkle import verify_proof
from gensyn_py.errors import (
    ContentMismatch,
    ContentNotFound,
    GensynError,
    StorageError,
    TrainingError,
    VerificationError,
)
from gensyn_py.proof.commitment import Manifest, segment_leaf, transcript_commit, transcript_hash
from gensyn_py.proof.resume import PartialRef, unbacked_span
from gensyn_py.proof.state import decode_state, state_hash, state_hash_of_bytes

if TYPE_CHECKING:
    import torch

    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec
    from gensyn_py.train.trainer import StepCallback, Trainer


@dataclass(frozen=True)
class Verdict:
    """accept, the replayed transcript hash (the commit-reveal secret), and why."""

    accept: bool
    segment: int
    transcript_hash: bytes | None
    reason: str


@dataclass(frozen=True)
class UnitRef:
    """Which unit a commitment claims to be, as the chain records it.

    `solver` is the committer, whose address the transcripts of its own segments are bound to (None: the
    zero address, for tools without a chain); `partials` are the unit's on-chain partial commitments, which
    alone can back the manifest's inherited segments.
    """

    job_id: int
    round: int
    shard: int
    checkpoint_root: bytes
    solver: str | None = None
    partials: tuple[PartialRef, ...] = ()


def replay_segment(
    spec: JobSpec,
    dataset: Dataset,
    store: ContentStore,
    unit: UnitRef,
    manifest: Manifest,
    segment: int,
    device: str | None = None,
    global_weights: Mapping[str, torch.Tensor] | None = None,
    timeout: float | None = None,
    *,
    on_step: StepCallback | None = None,
) -> Verdict:
    """Replay `segment`; reject on any mismatch. Raises nothing for solver faults.

    `on_step` is called after each replayed step (a progress bar's hook).

    Missing or corrupt content is the solver's fault (it must keep checkpoints
    available) and rejects; a store that cannot be reached at all is the
    validator's own trouble and raises `StorageError`, to be retried.
    """
    try:
        return _replay(spec, dataset, store, unit, manifest, segment, device, global_weights, timeout, on_step)
    except (ContentNotFound, ContentMismatch) as e:
        return Verdict(False, segment, None, f"checkpoint unavailable or corrupt: {e}")
    except (VerificationError, TrainingError) as e:
        return Verdict(False, segment, None, str(e))


def fetch_manifest(store: ContentStore, cid: str, timeout: float | None = None) -> Manifest:
    try:
        return Manifest.from_bytes(store.get(cid, timeout))
    except StorageError as e:
        if isinstance(e, ContentNotFound | ContentMismatch):
            raise VerificationError(f"manifest {cid}: {e}") from None
        raise
    except GensynError as e:
        raise VerificationError(f"manifest {cid}: {e}") from None


def _reject(segment: int, reason: str) -> Verdict:
    return Verdict(False, segment, None, reason)


def check_manifest_header(spec: JobSpec, m: Manifest, job_id: int, round_: int, shard: int) -> None:
    """VerificationError unless the manifest is for this job spec and unit, in the spec's shape."""
    if m.spec_hash != spec.spec_hash():
        raise VerificationError("manifest names another job spec")
    if (m.job_id, m.round, m.shard) != (job_id, round_, shard):
        raise VerificationError(f"manifest is for job/round/shard {(m.job_id, m.round, m.shard)}")
    if (m.steps, m.interval) != (spec.steps_per_unit, spec.checkpoint_interval):
        raise VerificationError(f"manifest claims {m.steps} steps every {m.interval}, spec says otherwise")
    m.check_shape()


def trainer_at_checkpoint(
    spec: JobSpec,
    dataset: Dataset,
    store: ContentStore,
    m: Manifest,
    j: int,
    device: str | None = None,
    global_weights: Mapping[str, torch.Tensor] | None = None,
    timeout: float | None = None,
) -> Trainer:
    """A Trainer loaded from the manifest's checkpoint `j`, ready to run segment j.

    VerificationError (or TrainingError, for a state that does not fit the unit) if the
    checkpoint's bytes are not the committed state, segment 0 does not start from the
    round's agreed state, or the cursor is not at step j * k. The store's errors pass through.
    """
    from gensyn_py.train.trainer import Trainer

    start_hash = m.state_hashes[j]
    data = store.get(m.checkpoint_cids[j], timeout)
    # INVARIANT: only the bytes the committed state hash names are trained from.
    if state_hash_of_bytes(data) != start_hash:
        raise VerificationError("start checkpoint bytes do not match the committed state hash")
    trainer = Trainer(spec, dataset, m.round, m.shard, device, global_weights)
    if j == 0 and state_hash(trainer.state_dict()) != start_hash:
        raise VerificationError("segment 0 does not start from the round's agreed initial state")
    state = decode_state(data)
    try:
        step = int(state["cursor"][2])
    except (IndexError, ValueError, RuntimeError) as e:
        raise VerificationError(f"start checkpoint has a malformed cursor: {e}") from None
    if step != j * spec.checkpoint_interval:
        raise VerificationError(f"start checkpoint is at step {step}, expected {j * spec.checkpoint_interval}")
    trainer.load_state_dict(state)
    return trainer


def _replay(
    spec: JobSpec,
    dataset: Dataset,
    store: ContentStore,
    unit: UnitRef,
    m: Manifest,
    j: int,
    device: str | None,
    global_weights: Mapping[str, torch.Tensor] | None,
    timeout: float | None,
    on_step: StepCallback | None = None,
) -> Verdict:
    check_manifest_header(spec, m, unit.job_id, unit.round, unit.shard)
    if not 0 <= j < m.num_segments:
        return _reject(j, f"segment {j} out of range for {m.num_segments} segments")
    start_hash, end_hash, commit = m.state_hashes[j], m.state_hashes[j + 1], m.transcript_commits[j]
    leaf = segment_leaf(j, start_hash, end_hash, commit)
    # INVARIANT: only data the on-chain root commits to is replayed.
    if not verify_proof(leaf, m.proof(j), unit.checkpoint_root):
        return _reject(j, "segment leaf is not in the committed checkpoint root")

    # INVARIANT: a segment counts as another solver's only where that solver's on-chain partial commits to it.
    if (why := unbacked_span(m, unit.partials)) is not None:
        return _reject(j, why)

    trainer = trainer_at_checkpoint(spec, dataset, store, m, j, device, global_weights, timeout)
    losses = trainer.run(spec.checkpoint_interval, on_step=on_step)
    replayed_end = state_hash(trainer.state_dict())
    # INVARIANT: the transcript is bound to who trained the segment: a copied root replays to other transcripts.
    t_hash = transcript_hash(losses, replayed_end, m.author_of(j, unit.solver))
    if replayed_end != end_hash:
        return Verdict(False, j, t_hash, "replayed end state differs from the committed end state")
    if transcript_commit(t_hash) != commit:
        return Verdict(False, j, t_hash, "replayed loss transcript differs from the committed transcript")
    return Verdict(True, j, t_hash, "segment replays bit for bit")
