"""An aggregation unit's commitment: one segment from a round's unit results to their average.

It reuses the training manifest with `steps = interval = 1`:

- checkpoint 0 is the *inputs document*: canonical JSON naming, in shard
  order, each training unit's id, on-chain final state hash and result CID;
  its state hash is sha256 of those bytes, so anyone rebuilds it from the chain;
- checkpoint 1 is the aggregate (canonical state bytes: `model/*` keys, and
  under the `diloco` rule the outer momentum `outer/*/momentum`); its state
  hash (`proof/state.py`) is the unit's final state hash;
- under `diloco` from round 1 on, the inputs document also names the previous
  round's aggregation unit (`previous`: its id, final state hash and result
  CID), whose weights are this round's start and whose outer momentum this
  round's outer step continues (round 0 starts from the spec's seeded init and
  zero momentum);
- the segment's transcript hash is
  `keccak256("gensyn.aggregate.v1" || sha256(float64 accumulators) || endHash)`.
  The float64 sums before the single rounding are not recoverable from the
  published float32 weights, so a validator must recompute to accept.

The job's model after round r is checkpoint 1 of the round's aggregation unit
(or, with one shard, the model part of its only unit's final checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.crypto.hashing import bytes32, keccak256, sha256
from gensyn_py.crypto.merkle import verify_proof
from gensyn_py.errors import ContentMismatch, ContentNotFound, VerificationError
from gensyn_py.proof.aggregation import OuterState, aggregate_bytes, aggregate_traced, outer_momentum
from gensyn_py.proof.commitment import Manifest, UnitCommitment, segment_leaf, transcript_commit
from gensyn_py.proof.replay import Verdict
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.proof.unit import publish
from gensyn_py.types import AGGREGATION_SHARD

if TYPE_CHECKING:
    import torch

    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.spec import JobSpec

AGGREGATE_DOMAIN = b"gensyn.aggregate.v1"


@dataclass(frozen=True)
class UnitResult:
    """One training unit's committed result, as the chain and its manifest name it."""

    unit_id: int
    shard: int
    final_state_hash: bytes
    cid: str


def inputs_document(job_id: int, round_: int, results: Sequence[UnitResult],
                    previous: UnitResult | None = None) -> bytes:
    doc: dict[str, object] = {
        "version": 1,
        "jobId": job_id,
        "round": round_,
        "units": [
            {"unitId": r.unit_id, "shard": r.shard, "finalStateHash": "0x" + r.final_state_hash.hex(), "cid": r.cid}
            for r in results
        ],
    }
    if previous is not None:
        doc["previous"] = {"unitId": previous.unit_id, "finalStateHash": "0x" + previous.final_state_hash.hex(),
                           "cid": previous.cid}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def aggregate_transcript(accumulator_digest: bytes, end_hash: bytes) -> bytes:
    return keccak256(AGGREGATE_DOMAIN + bytes32(accumulator_digest) + bytes32(end_hash))


def weights_bytes(state: Mapping[str, torch.Tensor]) -> bytes:
    """An aggregate's bytes: `model/<param>` for the weights, `outer/<param>/momentum` as they are."""
    return aggregate_bytes(state)


def load_state(data: bytes) -> dict[str, torch.Tensor]:
    """Every tensor of a state file (a checkpoint or an aggregate), refused with `VerificationError` if the
    bytes are not safetensors."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    try:
        return dict(load(data))
    except (SafetensorError, ValueError) as e:
        raise VerificationError(f"state bytes are not valid safetensors: {e}") from None


def load_weights(data: bytes) -> dict[str, torch.Tensor]:
    """Model weights from a unit's final checkpoint or an aggregate (prefix stripped)."""
    weights = {k[len("model/"):]: v for k, v in load_state(data).items() if k.startswith("model/")}
    if not weights:
        raise VerificationError("model bytes hold no model/* tensors")
    return weights


def outer_start(spec: JobSpec, store: ContentStore, previous: UnitResult | None,
                timeout: float | None, start: Mapping[str, torch.Tensor] | None = None) -> OuterState | None:
    """What a `diloco` aggregation starts from (None under `average`): the previous round's aggregate
    (weights and outer momentum, its bytes checked against its on-chain final state hash), or in round 0
    the round's start (`start`: a fine-tuned parent's final model; else the spec's seeded init) and zero
    momentum."""
    from gensyn_py.train.trainer import init_weights

    if spec.aggregation.rule != "diloco":
        return None
    if previous is None:
        return OuterState(dict(start) if start is not None else init_weights(spec), {})
    data = store.get(previous.cid, timeout)
    if state_hash_of_bytes(data) != previous.final_state_hash:
        raise VerificationError(f"unit {previous.unit_id}'s aggregate does not match its on-chain final state hash")
    state = load_state(data)
    momentum = outer_momentum(state)
    weights = {k[len("model/"):]: v for k, v in state.items() if k.startswith("model/")}
    if set(momentum) != set(weights):
        raise VerificationError(f"unit {previous.unit_id}'s aggregate lacks its outer momentum")
    return OuterState(weights, momentum)


def _results_states(
    store: ContentStore, results: Sequence[UnitResult], timeout: float | None
) -> list[dict[str, torch.Tensor]]:
    states = []
    for r in results:
        data = store.get(r.cid, timeout)
        if state_hash_of_bytes(data) != r.final_state_hash:
            raise VerificationError(f"unit {r.unit_id}'s result bytes do not match its on-chain final state hash")
        states.append({f"model/{k}": v for k, v in load_weights(data).items()})
    return states


def commit_aggregation(
    spec: JobSpec, store: ContentStore, job_id: int, round_: int, results: Sequence[UnitResult],
    timeout: float | None = None, previous: UnitResult | None = None,
    start: Mapping[str, torch.Tensor] | None = None,
) -> UnitCommitment:
    """Aggregate the round's results, store inputs and output, and build the commitment.  `previous`: the
    previous round's aggregation unit under `diloco` from round 1 on (see the module docstring); `start`: a
    fine-tune's round-0 start (`outer_start`)."""
    inputs = inputs_document(job_id, round_, results, previous)
    outer = outer_start(spec, store, previous, timeout, start)
    weights, digest = aggregate_traced(spec, _results_states(store, results, timeout), outer)
    output = weights_bytes(weights)
    end_hash = state_hash_of_bytes(output)
    manifest = Manifest(
        spec_hash=spec.spec_hash(), job_id=job_id, round=round_, shard=AGGREGATION_SHARD, steps=1, interval=1,
        checkpoint_cids=(store.put(inputs), store.put(output)),
        state_hashes=(sha256(inputs), end_hash),
        transcript_commits=(transcript_commit(aggregate_transcript(digest, end_hash)),),
    )
    return publish(manifest, store)


def verify_aggregation(
    spec: JobSpec, store: ContentStore, job_id: int, round_: int, root: bytes, manifest: Manifest,
    results: Sequence[UnitResult], timeout: float | None = None, previous: UnitResult | None = None,
    start: Mapping[str, torch.Tensor] | None = None,
) -> Verdict:
    """Recompute the aggregate from the on-chain results; accept only an exact match."""
    def reject(reason: str, t_hash: bytes | None = None) -> Verdict:
        return Verdict(False, 0, t_hash, reason)

    if manifest.spec_hash != spec.spec_hash() or (manifest.job_id, manifest.round) != (job_id, round_):
        return reject("aggregation manifest names another job or round")
    if manifest.shard != AGGREGATION_SHARD or (manifest.steps, manifest.interval) != (1, 1):
        return reject("manifest is not an aggregation manifest")
    leaf = segment_leaf(0, manifest.state_hashes[0], manifest.state_hashes[1], manifest.transcript_commits[0])
    if not verify_proof(leaf, [], root):
        return reject("aggregation leaf is not the committed root")
    if manifest.state_hashes[0] != sha256(inputs_document(job_id, round_, results, previous)):
        return reject("aggregation inputs differ from the round's committed unit results")
    try:
        outer = outer_start(spec, store, previous, timeout, start)
        weights, digest = aggregate_traced(spec, _results_states(store, results, timeout), outer)
    except (ContentNotFound, ContentMismatch) as e:
        return reject(f"a unit result is unavailable: {e}")
    except VerificationError as e:
        return reject(str(e))
    end_hash = state_hash_of_bytes(weights_bytes(weights))
    t_hash = aggregate_transcript(digest, end_hash)
    if end_hash != manifest.state_hashes[1]:
        return reject("recomputed aggregate differs from the committed one", t_hash)
    if transcript_commit(t_hash) != manifest.transcript_commits[0]:
        return reject("aggregation transcript differs from the committed one", t_hash)
    return Verdict(True, 0, t_hash, "aggregate recomputes bit for bit")
