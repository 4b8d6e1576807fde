"""Learning-rate schedules as pure functions of the job-wide step (no scheduler state)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gensyn_py.train.spec import JobSpec


def lr_at(spec: JobSpec, global_step: int) -> float:
    """The learning rate for `global_step` (round * steps_per_unit + local step)."""
    base = spec.optimizer.lr
    sch = spec.schedule
    total = spec.rounds * spec.steps_per_unit
    if sch.warmup_steps and global_step < sch.warmup_steps:
        return base * (global_step + 1) / sch.warmup_steps
    if sch.kind == "constant" or sch.kind == "linear_warmup":
        return base
    span = max(1, total - sch.warmup_steps)
    progress = min(1.0, (global_step - sch.warmup_steps) / span)
    floor = base * sch.min_lr_ratio
    return floor + (base - floor) * 0.5 * (1 + math.cos(math.pi * progress))
