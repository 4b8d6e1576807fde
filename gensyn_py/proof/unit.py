"""The solver's side: train a unit, store every checkpoint, and build its commitment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gensyn_py.errors import TrainingError
from gensyn_py.proof.commitment import Manifest, UnitCommitment, transcript_commit, transcript_hash
from gensyn_py.proof.state import encode_state, state_hash_of_bytes

if TYPE_CHECKING:
    import torch

    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.trainer import StepCallback, Trainer

# (checkpoint index, state) -> state actually published; the identity for honest solvers
StateHook = Callable[[int, dict[str, "torch.Tensor"]], dict[str, "torch.Tensor"]]


@dataclass
class UnitRecord:
    """What a solver keeps while training: checkpoint CIDs and hashes, per-step losses.

    Persist it beside the last checkpoint to resume a crashed unit without retraining.
    """

    cids: list[str] = field(default_factory=list)
    hashes: list[bytes] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)


def commit_segments(
    trainer: Trainer,
    store: ContentStore,
    job_id: int,
    on_step: StepCallback | None = None,
    state_hook: StateHook | None = None,
    bar: bool = False,
    record: UnitRecord | None = None,
) -> UnitCommitment:
    """Run the unit from the trainer's step to S, store each checkpoint, and commit.

    To resume, pass the `record` kept up to the checkpoint the trainer was loaded from.
    """
    spec = trainer.spec
    k = spec.checkpoint_interval
    rec = record if record is not None else UnitRecord()
    if trainer.step % k or len(rec.cids) != trainer.step // k + (1 if trainer.step else 0) \
            or len(rec.losses) != trainer.step:
        raise TrainingError(f"cannot commit from step {trainer.step} with a record of {len(rec.cids)} checkpoints")

    def checkpoint(step: int, t: Trainer) -> None:
        if len(rec.cids) > step // k:
            return  # resumed: this checkpoint is already recorded
        state = t.state_dict()
        if state_hook is not None:
            state = state_hook(len(rec.cids), state)
        data = encode_state(state)
        rec.cids.append(store.put(data))
        rec.hashes.append(state_hash_of_bytes(data))

    def step_done(step: int, total: int, loss: float) -> None:
        rec.losses.append(loss)
        if on_step is not None:
            on_step(step, total, loss)

    trainer.run(spec.steps_per_unit - trainer.step, on_step=step_done, on_checkpoint=checkpoint, bar=bar)
    commits = tuple(
        transcript_commit(transcript_hash(rec.losses[j * k:(j + 1) * k], rec.hashes[j + 1]))
        for j in range(spec.num_segments)
    )
    manifest = Manifest(
        spec_hash=spec.spec_hash(),
        job_id=job_id,
        round=trainer.round,
        shard=trainer.shard,
        steps=spec.steps_per_unit,
        interval=k,
        checkpoint_cids=tuple(rec.cids),
        state_hashes=tuple(rec.hashes),
        transcript_commits=commits,
    )
    return publish(manifest, store)


def publish(manifest: Manifest, store: ContentStore) -> UnitCommitment:
    """Store the manifest and return the on-chain commitment."""
    cid = store.put(manifest.to_bytes())
    return UnitCommitment(manifest.root(), manifest.final_state_hash, cid, manifest)
