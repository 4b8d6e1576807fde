"""The training loss at each committed checkpoint of a unit, recomputed: for the explorer's loss chart.

Solvers never publish their per-step losses: a segment's losses would let a lazy
validator build the transcript hash without replaying (see `proof/commitment.py`).
But the first step out of checkpoint j is a pure function of that checkpoint, so
anyone holding the committed content can recompute it: load checkpoint j, run one
step, and its loss is the loss the solver had at step j*k+1 (bit for bit in exact
and repro modes, on the spec's device class). One step per checkpoint costs 1/k
of replaying the unit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gensyn_py.errors import ContentMismatch, TrainingError, VerificationError
from gensyn_py.proof.replay import check_manifest_header, trainer_at_checkpoint

if TYPE_CHECKING:
    from gensyn_py.proof.content import JobContent
    from gensyn_py.types import Unit


def checkpoint_losses(content: JobContent, unit: Unit, device: str | None = None,
                      limit: int | None = None) -> list[tuple[int, float]]:
    """(step, loss) for each committed checkpoint of the unit's latest commitment.

    The loss is that of step j*k+1, replayed from checkpoint j, for every j < n (the last
    checkpoint, the unit's result, starts no step); with `limit`, at most that many of
    them, evenly spaced, the first and the last always included. An aggregation unit
    trains nothing and gives []. VerificationError if the unit has no commitment, its
    manifest does not match the on-chain commitment or the job, or a checkpoint's bytes
    are not the committed state; missing content raises the store's error.
    """
    if unit.is_aggregation:
        return []
    _, m = content.committed(unit)  # only checkpoints the on-chain commitment names are charted
    spec = content.spec(unit.job_id)
    try:
        check_manifest_header(spec, m, unit.job_id, unit.round, unit.shard)
    except VerificationError as e:
        raise VerificationError(f"unit {unit.unit_id}: {e}") from None
    dataset = content.dataset(unit.job_id)
    start = content.start_weights(unit.job_id, unit.round, unit.shard)
    k = spec.checkpoint_interval
    out: list[tuple[int, float]] = []
    for j in spread(m.num_segments, limit):
        try:
            trainer = trainer_at_checkpoint(spec, dataset, content.store, m, j, device, start, content.timeout)
        except (ContentMismatch, VerificationError, TrainingError) as e:
            raise VerificationError(f"unit {unit.unit_id} checkpoint {j} ({m.checkpoint_cids[j]}): {e}") from None
        out.append((j * k + 1, trainer.train_step()))
    return out


def spread(n: int, limit: int | None) -> list[int]:
    """`limit` of 0..n-1, evenly spaced, 0 and n-1 included (all of them without a limit or when all fit)."""
    if limit is None or limit >= n:
        return list(range(n))
    if limit < 2:
        raise ValueError(f"limit {limit}: the first and the last checkpoint need at least 2")
    return sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})
