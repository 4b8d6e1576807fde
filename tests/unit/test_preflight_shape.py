"""A job whose on-chain shape differs from its spec is refused for that reason, whichever unit a node sees first.

A poison job with two on-chain shards and a one-shard spec has two open units: shard 0 (inside the spec) and
shard 1 (outside it). Solvers race over which they look at first; both must name the job's real fault, so the
job-level comparison comes before the unit's own checks (`gensyn_py/node/preflight.py`).
"""

from __future__ import annotations

import pytest

from gensyn_py.node.preflight import UnfitJob, check_shape
from gensyn_py.types import DEVICE_CLASSES, JobParams, Unit, UnitStatus
from tests.unit.trainkit import tiny_spec

ZERO = "0x" + "00" * 20


def unit(shard: int, round_: int = 0) -> Unit:
    return Unit(1, 1, round_, shard, UnitStatus.OPEN, ZERO, 0, 0, 0, 0, 0, 0, False, 0, 0, bytes(32), bytes(32),
                ZERO, ZERO, 0, ())


@pytest.mark.parametrize("shard", [0, 1])
def test_a_shard_count_differing_from_the_spec_is_the_reason_for_every_unit(shard: int) -> None:
    spec = tiny_spec("mlp", shards=1)
    params = JobParams(bytes(32), "cid", spec.rounds, 2, spec.steps_per_unit, spec.checkpoint_interval,
                       DEVICE_CLASSES[spec.hardware.device_class], 0, 0, 0, 0, 60)
    with pytest.raises(UnfitJob, match="on-chain shards is 2, the spec says 1"):
        check_shape(spec, unit(shard), spec.num_segments, params)


def test_a_unit_outside_a_matching_job_is_still_refused() -> None:
    spec = tiny_spec("mlp", shards=1)
    params = JobParams(bytes(32), "cid", spec.rounds, 1, spec.steps_per_unit, spec.checkpoint_interval,
                       DEVICE_CLASSES[spec.hardware.device_class], 0, 0, 0, 0, 60)
    check_shape(spec, unit(0), spec.num_segments, params)
    with pytest.raises(UnfitJob, match="unit shard 1 is outside the spec's 1 shards"):
        check_shape(spec, unit(1), spec.num_segments, params)
    with pytest.raises(UnfitJob, match="unit round 5 is outside"):
        check_shape(spec, unit(0, round_=5), spec.num_segments, None)
