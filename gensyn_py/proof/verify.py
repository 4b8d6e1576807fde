"""Checking one segment of a committed unit: the work of validators, challengers and committees."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gensyn_py.errors import VerificationError
from gensyn_py.proof.aggregation_unit import verify_aggregation
from gensyn_py.proof.content import JobContent
from gensyn_py.proof.replay import UnitRef, Verdict, replay_segment
from gensyn_py.types import Unit

if TYPE_CHECKING:
    from gensyn_py.train.trainer import StepCallback


def check_segment(content: JobContent, unit: Unit, segment: int, device: str | None = None, *,
                  on_step: StepCallback | None = None) -> Verdict:
    """Replay (or, for an aggregation unit, recompute) `segment` of the unit's latest commitment.

    `on_step` is called after each replayed step (a progress bar's hook).

    Solver faults (a missing manifest, a commitment its manifest does not
    match) reject; the node's own trouble (an unreachable store or RPC) raises
    to be retried.
    """
    commitment = content.view.commitment(unit.unit_id)
    if commitment is None:
        return Verdict(False, segment, None, "unit has no commitment")
    try:
        manifest = content.manifest(commitment.manifest_cid)
    except VerificationError as e:
        return Verdict(False, segment, None, str(e))
    if manifest.root() != commitment.checkpoint_root or manifest.final_state_hash != commitment.final_state_hash:
        return Verdict(False, segment, None, "manifest does not match the on-chain commitment")
    spec = content.spec(unit.job_id)
    if unit.is_aggregation:
        results = content.round_results(unit.job_id, unit.round)
        previous = content.previous_aggregate(unit.job_id, unit.round)
        return verify_aggregation(spec, content.store, unit.job_id, unit.round, commitment.checkpoint_root,
                                  manifest, results, content.timeout, previous,
                                  content.outer_init(unit.job_id, unit.round))
    partials = content.view.partials(unit.unit_id) if manifest.inherited else ()
    ref = UnitRef(unit.job_id, unit.round, unit.shard, commitment.checkpoint_root, unit.solver, partials)
    return replay_segment(spec, content.dataset(unit.job_id), content.store, ref, manifest, segment, device,
                          content.start_weights(unit.job_id, unit.round, unit.shard), content.timeout, on_step=on_step)
