"""What a node fetches for a job, each piece checked against the chain before use.

- the spec: its bytes from the CID in `JobSubmitted`, parsed, and its hash
  equal to the on-chain spec hash;
- the dataset: bytes from the spec's CID, decoded against its declared shape;
- a unit's result: the manifest named by the unit's latest commitment, whose
  root equals the on-chain root, and its last checkpoint, whose state hash
  (`proof/state.py`) equals the on-chain final state hash;
- a round's starting weights: none for round 0 (the spec's seeded init),
  else the previous round's model (its aggregate, or its only unit's result);
  with `aggregation.inner_state = carry`, also the optimizer state the unit's
  shard ended the previous round with;
- the previous round's aggregation unit, which a `diloco` aggregation starts
  from.

Specs, datasets and manifests are cached in memory: they never change once
committed (a reopened unit gets a new commitment, looked up afresh).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gensyn_py.chain.view import ChainView, Commitment
from gensyn_py.errors import SpecError, VerificationError
from gensyn_py.proof.aggregation_unit import UnitResult, load_state, load_weights
from gensyn_py.proof.commitment import Manifest
from gensyn_py.proof.replay import fetch_manifest
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.types import JobStatus, Unit, UnitStatus

# A unit whose committed result the next phase may be built on: the contract opens a phase for claims once every
# unit of the previous one is Committed, and arms it (its units may commit, validators replay them) once they are
# all Verified (pipelined rounds). A solver works on Committed inputs; a validator only ever sees Verified (or
# Disputed, judged later, or Final) ones. If one is overturned the phases built on it are voided.
BUILT_ON = (UnitStatus.COMMITTED, UnitStatus.VERIFIED, UnitStatus.DISPUTED, UnitStatus.FINAL)

if TYPE_CHECKING:
    import torch

    from gensyn_py.proof.step_table import StepTable
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec


@dataclass
class JobContent:
    view: ChainView
    store: ContentStore
    timeout: float | None = 30.0
    _specs: dict[int, JobSpec] = field(default_factory=dict)
    _datasets: dict[int, Dataset] = field(default_factory=dict)
    _manifests: dict[str, Manifest] = field(default_factory=dict)
    # parent job -> its verified final model: every replay of a fine-tune's round 0 (and its diloco aggregation)
    # starts from it
    _parents: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    _tables: dict[int, StepTable] = field(default_factory=dict)  # published step tables, checked against the root

    def spec(self, job_id: int) -> JobSpec:
        from gensyn_py.train.graphs.cache import fetch_model
        from gensyn_py.train.spec import parse_spec_bytes

        if job_id not in self._specs:
            job = self.view.job(job_id)
            # One definition of a spec: the on-chain hash covers the exact stored bytes, checked before parsing.
            data = self.store.get(job.spec_cid, self.timeout)
            try:
                spec = parse_spec_bytes(data, job.spec_hash)
                fetch_model(spec.model.onnx, self.store, self.timeout)  # an ONNX model: checked before any use
                self._specs[job_id] = spec
            except SpecError as e:
                raise SpecError(f"job {job_id}, spec {job.spec_cid}: {e}") from None
        return self._specs[job_id]

    def dataset(self, job_id: int) -> Dataset:
        """The job's dataset: one file decoded whole, or a chunked one whose chunks are fetched (and kept) as the
        steps that read them run (`train/chunks.py`)."""
        from gensyn_py.train.chunks import open_dataset

        if job_id not in self._datasets:
            spec = self.spec(job_id)
            self._datasets[job_id] = open_dataset(spec.dataset, lambda cid: self.store.get(cid, self.timeout))
        return self._datasets[job_id]

    def published_table(self, job_id: int, root: bytes) -> StepTable | None:
        """The step table the job's requester published (spec `step_table`), checked against its shape and the
        on-chain step table `root`; None when the spec names none (nodes then rebuild the whole table)."""
        from gensyn_py.proof.published_table import decode

        ref = self.spec(job_id).step_table
        if ref is None:
            return None
        if job_id not in self._tables:
            data = self.store.get(ref.cid, self.timeout)
            if len(data) != ref.size_bytes:
                raise VerificationError(f"step_table: {len(data)} bytes, the spec declares {ref.size_bytes}")
            self._tables[job_id] = decode(data, self.spec(job_id), root)
        return self._tables[job_id]

    def manifest(self, cid: str) -> Manifest:
        if cid not in self._manifests:
            self._manifests[cid] = fetch_manifest(self.store, cid, self.timeout)
        return self._manifests[cid]

    def committed(self, unit: Unit) -> tuple[Commitment, Manifest]:
        """The unit's latest commitment and its manifest, which must match it (root and final state hash)."""
        c = self.view.commitment(unit.unit_id)
        if c is None:
            raise VerificationError(f"unit {unit.unit_id} has no commitment")
        m = self.manifest(c.manifest_cid)
        # INVARIANT: only content the on-chain commitment names is used.
        if m.root() != c.checkpoint_root or m.final_state_hash != c.final_state_hash:
            raise VerificationError(f"unit {unit.unit_id}: manifest {c.manifest_cid} differs from its commitment")
        return c, m

    def result(self, unit: Unit) -> UnitResult:
        """The unit's committed result (its last checkpoint), checked against the chain."""
        c, m = self.committed(unit)
        return UnitResult(unit.unit_id, unit.shard, c.final_state_hash, m.checkpoint_cids[-1])

    def round_results(self, job_id: int, round_: int) -> list[UnitResult]:
        """Every training unit's result of a round, in shard order; all must be committed (or beyond)."""
        training, _ = self.view.round_units(job_id, round_)
        if any(u.status not in BUILT_ON for u in training):
            raise VerificationError(f"job {job_id} round {round_} is not committed yet")
        return [self.result(u) for u in training]

    def _result_bytes(self, unit: Unit) -> bytes:
        """The bytes of a unit's committed result, verified against its on-chain final state hash."""
        r = self.result(unit)
        data = self.store.get(r.cid, self.timeout)
        if state_hash_of_bytes(data) != r.final_state_hash:
            raise VerificationError(f"unit {unit.unit_id}'s result does not match its on-chain final state hash")
        return data

    def model_of(self, unit: Unit) -> dict[str, torch.Tensor]:
        """The model weights a unit produced, verified against its on-chain final state hash."""
        return load_weights(self._result_bytes(unit))

    def start_weights(self, job_id: int, round_: int, shard: int) -> dict[str, torch.Tensor] | None:
        """What shard `shard`'s unit of round `round_` starts from (None: the spec's seeded init): the
        global weights, and under `inner_state = carry` the shard's previous optimizer state (`optim/*`)."""
        spec = self.spec(job_id)
        if round_ == 0:
            return None if spec.init is None else self.parent_model(spec)
        previous = self.view.final_unit(job_id, round_, spec.shards)
        if previous is None or previous.status not in BUILT_ON:
            raise VerificationError(f"job {job_id} round {round_ - 1} has no committed result yet")
        weights: dict[str, torch.Tensor] = self.model_of(previous)
        if spec.aggregation.inner_state == "carry":
            training, _ = self.view.round_units(job_id, round_ - 1)
            mine = [u for u in training if u.shard == shard]
            if len(mine) != 1:
                raise VerificationError(f"job {job_id} round {round_ - 1} has no unit of shard {shard}")
            weights.update((k, v) for k, v in self.state_of(mine[0]).items() if k.startswith("optim/"))
        return weights

    def parent_model(self, spec: JobSpec) -> dict[str, torch.Tensor]:
        """The final model of the job `spec` fine-tunes (`init.parent_job`), refused unless that job is
        completed, trained the same model, and its model bytes match its on-chain final state hash."""
        assert spec.init is not None
        parent = spec.init.parent_job
        cached = self._parents.get(parent)  # verified once: a completed job's model never changes
        if cached is None:
            status = self.view.job_state(parent).status
            if status is JobStatus.NONE:
                raise VerificationError(f"init.parent_job: job {parent} does not exist on this deployment")
            if status is not JobStatus.COMPLETED:
                raise VerificationError(f"init.parent_job: job {parent} is {status.name.lower()}, not completed: "
                                        f"it has no final model to start from")
        theirs = self.spec(parent)
        if theirs.model != spec.model:
            raise VerificationError(f"init.parent_job: job {parent} trained {theirs.model.family} "
                                    f"{dict(theirs.model.sizes)}, this spec names {spec.model.family} "
                                    f"{dict(spec.model.sizes)}")
        if cached is None:
            final = self.view.final_unit(parent, theirs.rounds, theirs.shards)
            if final is None or final.status is not UnitStatus.FINAL:
                raise VerificationError(f"init.parent_job: job {parent}'s final unit is not final")
            cached = self._parents[parent] = self.model_of(final)
        return dict(cached)

    def outer_init(self, job_id: int, round_: int) -> dict[str, torch.Tensor] | None:
        """What a `diloco` aggregation of round 0 steps from when the job fine-tunes a parent (its final model);
        None otherwise (the spec's seeded init, or a later round's previous aggregate)."""
        spec = self.spec(job_id)
        if round_ != 0 or spec.init is None or spec.aggregation.rule != "diloco":
            return None
        return self.parent_model(spec)

    def state_of(self, unit: Unit) -> dict[str, torch.Tensor]:
        """Every tensor of a unit's committed result, verified against its on-chain final state hash."""
        return load_state(self._result_bytes(unit))

    def previous_aggregate(self, job_id: int, round_: int) -> UnitResult | None:
        """The previous round's aggregation unit's result, which a `diloco` aggregation of round `round_`
        continues (None in round 0 and under the `average` rule)."""
        spec = self.spec(job_id)
        if spec.aggregation.rule != "diloco" or round_ == 0:
            return None
        previous = self.view.final_unit(job_id, round_, spec.shards)
        if previous is None or previous.status not in BUILT_ON:
            raise VerificationError(f"job {job_id} round {round_ - 1} has no committed aggregate yet")
        return self.result(previous)
