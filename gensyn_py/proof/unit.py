"""The solver's side: train a unit, store every checkpoint, and build its commitment.

Checkpoints are written behind the training. At each checkpoint the training
thread takes the snapshot: a copy of the state's tensors (Trainer.state_dict), so
training can go on mutating its own in place. One background thread then
encodes the snapshot, hashes the bytes (state hash, CID) and stores them, in
order, while the next steps run. Encoding (`state_bytes.py`), hashing and file
I/O release the GIL, so the training thread, whose Python runs between every
op, is never held up by them; on a spare core they cost it only what the two
cores share. The commitment is the same as writing each checkpoint inline; a
failure in the writer stops the unit within a step with the writer's own
exception.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from gensyn_py.crypto.native_merkle import native_module
from gensyn_py.errors import TrainingError
from gensyn_py.proof.commitment import Manifest, UnitCommitment, transcript_commit, transcript_hash
from gensyn_py.proof.hash_process import state_hash_beside
from gensyn_py.proof.record import UnitRecord
from gensyn_py.proof.resume import Resume, resume_record
from gensyn_py.proof.state import decode_state, encode_state, state_hash, state_hash_of_bytes

if TYPE_CHECKING:
    import torch

    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec
    from gensyn_py.train.trainer import StepCallback, Trainer

__all__ = ["PartialHook", "StateHook", "UnitRecord", "commit_segments", "publish", "resume_from_partial",
           "resume_trainer"]

# (checkpoint index, state) -> state actually published; the identity for honest solvers
StateHook = Callable[[int, dict[str, "torch.Tensor"]], dict[str, "torch.Tensor"]]
# Called with the partial manifest of the segments stored so far (see `commit_segments`): on the checkpoint writer's
# thread, after the checkpoints it names are stored, so publishing it never stalls training.
PartialHook = Callable[[Manifest], None]

# Checkpoints waiting for or in the writer; a new checkpoint waits for the oldest beyond this,
# so memory stays bounded when the store is slower than training.
MAX_PENDING_CHECKPOINTS = 2


class _CheckpointWriter:
    """Encodes, hashes and stores checkpoints in order and appends them to the record.

    With `overlap`, that work runs on one background thread (the state hash too where the C Merkle module is
    built, else in a helper process, `proof/hash_process.py`: see `_hash`); otherwise inline. With
    `record_path`, the record is saved after each stored checkpoint, holding the losses
    up to that checkpoint's step, so the file always describes a resumable state.
    """

    def __init__(self, store: ContentStore, rec: UnitRecord, record_path: Path | None, overlap: bool,
                 hash_workers: int | None = None) -> None:
        self._store = store
        self._rec = rec
        self._record_path = record_path
        self._hash_workers = hash_workers
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="gensyn-checkpoint") if overlap else None
        self._pending: deque[Future[None]] = deque()
        self._failed = False
        self._spare: deque[Mapping[str, torch.Tensor]] = deque(maxlen=1)  # a written snapshot, handed back

    def spare(self) -> Mapping[str, torch.Tensor] | None:
        """A snapshot already written and read by nobody since, for the next one's copies (`Trainer.state_dict`'s
        `into`), or None. Each is handed out once."""
        try:
            return self._spare.popleft()
        except IndexError:
            return None

    def submit(self, index: int, step: int, state: Mapping[str, torch.Tensor], reuse: bool = False) -> None:
        """Queue checkpoint `index` (at `step`); raises here if an earlier checkpoint failed. `reuse`: nobody else
        holds `state`, so once written it may be handed back (`spare`)."""
        while len(self._pending) >= MAX_PENDING_CHECKPOINTS:
            self._pending.popleft().result()  # re-raises the writer's exception on this thread
        # `state` is a snapshot (Trainer.state_dict copies every tensor), so the writer thread encodes it too:
        # serialising a 100M-parameter state takes seconds, which training no longer waits for.
        self._queue(partial(self._write, index, step, state, reuse))

    def after_stored(self, fn: Callable[[], None]) -> None:
        """Run `fn` once every checkpoint queued so far is stored: queued behind them on the writer thread (whose
        order is the queue's), inline after them without overlap. Its failure is raised like a checkpoint's."""
        self._queue(fn)

    def _queue(self, fn: Callable[[], None]) -> None:
        self.check()
        if self._pool is None:
            self._unless_failed(fn)
        else:
            self._pending.append(self._pool.submit(self._unless_failed, fn))

    def _unless_failed(self, fn: Callable[[], None]) -> None:
        """Run `fn` unless an earlier job failed (never record or publish past a gap); a failure stops every later
        job, as if raised on the training thread."""
        if self._failed:
            return
        try:
            fn()
        except BaseException:
            self._failed = True
            raise

    def _write(self, index: int, step: int, state: Mapping[str, torch.Tensor], reuse: bool = False) -> None:
        data = encode_state(state)
        rec = self._rec
        if len(rec.cids) != index:
            raise TrainingError(f"checkpoint {index} would be recorded as number {len(rec.cids)}")
        cid = self._store.put(data)
        rec.hashes.append(self._hash(data, state))
        rec.cids.append(cid)
        if self._record_path is not None:
            UnitRecord(list(rec.cids), list(rec.hashes), rec.losses[:step]).save(self._record_path)
        if reuse:  # encoded, stored and hashed: its tensors can take a later snapshot's copies
            self._spare.append(state)

    def _hash(self, data: bytes, state: Mapping[str, torch.Tensor]) -> bytes:
        """The state hash of `data`, the encoding of `state`. With the C Merkle module, here, from the snapshot's
        own memory (no parse, no copy), on the cores the training leaves (`hash_workers`): it hashes with the GIL
        released, so beside training for the cost of the hashing alone. (A 120 MB state hashed on both of two cores
        beside one training thread cost that thread 0.24 s over its next two steps of 1.26 s; on the spare core
        alone, 0.03 s.) Without it (Python's keccak loop holds the GIL), overlapped in a helper
        process: that costs a copy of the bytes through a pipe, and on a busy machine a process waiting for a core
        (two solvers on 2 cores measured 0.55 s a 3.6 MB checkpoint in the helper, 56 ms here)."""
        if self._pool is None:
            return state_hash_of_bytes(data)
        if native_module() is not None:
            return state_hash(state, self._hash_workers)
        return state_hash_beside(data)

    def check(self) -> None:
        """Raise a finished checkpoint's failure now (cheap enough to call every step)."""
        while self._pending and self._pending[0].done():
            self._pending.popleft().result()

    def drain(self) -> None:
        """Wait for every queued checkpoint; raise the first failure."""
        while self._pending:
            self._pending.popleft().result()

    def __enter__(self) -> _CheckpointWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.drain()  # also on error: the record then lists every checkpoint taken
        except Exception as err:
            if exc is None:
                raise
            exc.add_note(f"the checkpoint writer failed too: {err!r}")
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)


def spare_cores(device: str) -> int:
    """The cores a checkpoint is hashed on beside training: those its torch threads leave (on CUDA, all but the
    one driving the GPU), at least one."""
    import torch

    busy = 1 if str(device).startswith("cuda") else torch.get_num_threads()
    return max(1, (os.cpu_count() or 1) - busy)


def commit_segments(
    trainer: Trainer,
    store: ContentStore,
    job_id: int,
    on_step: StepCallback | None = None,
    state_hook: StateHook | None = None,
    bar: bool = False,
    record: UnitRecord | None = None,
    *,
    record_path: Path | str | None = None,
    overlap: bool = True,
    solver: str | None = None,
    resume: Resume | None = None,
    on_partial: PartialHook | None = None,
    partial_every: int = 0,
) -> UnitCommitment:
    """Run the unit from the trainer's step to S, store each checkpoint, and commit.

    To resume, pass the `record` kept up to the checkpoint the trainer was loaded from
    (see `resume_trainer`). With `record_path`, the record is saved there after every
    stored checkpoint. `overlap=False` writes each checkpoint before training goes on.

    Transcripts are bound to `solver` (the committing address). With `resume` (another
    solver's checked partial, see `resume_from_partial`), its segments keep their transcript
    commits and are listed as inherited. With `on_partial`, every `partial_every` segments
    past the inherited ones (and short of the last) it is called, once those checkpoints
    are stored, with the partial manifest of the segments done so far.
    """
    spec = trainer.spec
    k = spec.checkpoint_interval
    n = spec.num_segments
    inherited = resume.spans() if resume is not None else ()
    carried = resume.manifest.transcript_commits if resume is not None else ()
    rec = record if record is not None else UnitRecord()
    have = len(rec.cids)  # checkpoints already recorded (resuming); the writer appends the rest
    expected = trainer.step // k + 1
    if trainer.step % k or len(rec.hashes) != have or len(rec.losses) != trainer.step \
            or not (have == expected or (trainer.step == 0 and have == 0)):
        raise TrainingError(f"cannot commit from step {trainer.step} with a record of {have} checkpoints "
                            f"and {len(rec.losses)} losses")

    path = Path(record_path) if record_path is not None else None
    with _CheckpointWriter(store, rec, path, overlap, spare_cores(trainer.device)) as writer:

        def step_done(step: int, total: int, loss: float) -> None:
            rec.losses.append(loss)
            writer.check()
            if on_step is not None:
                on_step(step, total, loss)

        def checkpoint(step: int, t: Trainer) -> None:
            index = step // k
            if index < have:
                return  # resumed: this checkpoint is already recorded
            if state_hook is None:  # the snapshot is ours alone: an older written one takes its copies
                writer.submit(index, step, t.state_dict(into=writer.spare()), reuse=True)
            else:
                writer.submit(index, step, state_hook(index, t.state_dict()))
            if on_partial is not None and partial_every > 0 and len(carried) < index < n \
                    and (index - len(carried)) % partial_every == 0:
                # The partial names stored checkpoints only: it is built and published behind them on the writer
                # thread (`rec` then holds exactly the checkpoints up to `index`; the losses it reads are older).
                writer.after_stored(lambda: on_partial(_manifest(trainer, job_id, rec, carried, inherited, solver)))

        trainer.run(spec.steps_per_unit - trainer.step, on_step=step_done, on_checkpoint=checkpoint, bar=bar)
    return publish(_manifest(trainer, job_id, rec, carried, inherited, solver), store)


def _manifest(trainer: Trainer, job_id: int, rec: UnitRecord, carried: tuple[bytes, ...],
              inherited: tuple[tuple[str, int], ...], solver: str | None) -> Manifest:
    """The manifest of the segments `rec` holds so far (all of them once the unit is trained)."""
    spec = trainer.spec
    k = spec.checkpoint_interval
    done = len(rec.hashes) - 1
    commits = tuple(
        carried[j] if j < len(carried)
        else transcript_commit(transcript_hash(rec.losses[j * k:(j + 1) * k], rec.hashes[j + 1], solver))
        for j in range(done)
    )
    return Manifest(
        spec_hash=spec.spec_hash(),
        job_id=job_id,
        round=trainer.round,
        shard=trainer.shard,
        steps=done * k,
        interval=k,
        checkpoint_cids=tuple(rec.cids),
        state_hashes=tuple(rec.hashes),
        transcript_commits=commits,
        inherited=inherited,
    )


def resume_trainer(
    spec: JobSpec,
    dataset: Dataset,
    round_: int,
    shard: int,
    store: ContentStore,
    record: UnitRecord,
    device: str | None = None,
    global_weights: Mapping[str, torch.Tensor] | None = None,
) -> Trainer:
    """A Trainer at the record's last checkpoint, to pass with `record` to `commit_segments`.

    Fetches that checkpoint from `store` (checked against its CID and the recorded state
    hash) and loads it. `record` is cut in place to that checkpoint: losses of later steps
    are dropped. With no checkpoint recorded, the trainer starts at step 0.
    """
    from gensyn_py.train.trainer import Trainer

    trainer = Trainer(spec, dataset, round_, shard, device, global_weights)
    n = len(record.cids)
    if len(record.hashes) != n:
        raise TrainingError(f"record lists {n} checkpoint CIDs but {len(record.hashes)} hashes")
    if n > spec.num_segments + 1:
        raise TrainingError(f"record lists {n} checkpoints; the unit has {spec.num_segments + 1}")
    step = max(n - 1, 0) * spec.checkpoint_interval
    if len(record.losses) < step:
        raise TrainingError(f"record holds {len(record.losses)} losses, its last checkpoint is at step {step}")
    del record.losses[step:]
    if n == 0:
        return trainer
    data = store.get(record.cids[-1])
    if state_hash_of_bytes(data) != record.hashes[-1]:
        raise TrainingError(f"checkpoint {record.cids[-1]} does not hash to the recorded state hash")
    state = decode_state(data)
    trainer.load_state_dict(state)
    if trainer.step != step:
        raise TrainingError(f"checkpoint {n - 1} holds step {trainer.step}, expected step {step}")
    return trainer


def resume_from_partial(
    spec: JobSpec,
    dataset: Dataset,
    round_: int,
    shard: int,
    store: ContentStore,
    resume: Resume,
    device: str | None = None,
    global_weights: Mapping[str, torch.Tensor] | None = None,
    timeout: float | None = None,
) -> tuple[Trainer, UnitRecord]:
    """A Trainer at the partial's last checkpoint and the record to pass with `resume` to `commit_segments`."""
    from gensyn_py.train.trainer import Trainer

    record, state = resume_record(resume, store, timeout)
    trainer = Trainer(spec, dataset, round_, shard, device, global_weights)
    trainer.load_state_dict(state)
    if trainer.step != resume.manifest.steps:
        raise TrainingError(f"partial checkpoint holds step {trainer.step}, expected {resume.manifest.steps}")
    return trainer, record


def publish(manifest: Manifest, store: ContentStore) -> UnitCommitment:
    """Store the manifest and return the on-chain commitment."""
    cid = store.put(manifest.to_bytes())
    return UnitCommitment(manifest.root(), manifest.final_state_hash, cid, manifest)
