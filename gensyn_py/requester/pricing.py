"""The pool's pricing rules, as `TaskPool.submitJob` applies them.

    units  = rounds * shards + (shards > 1 ? rounds : 0)     (one aggregation unit per round when sharded)
    escrow = units * (maxPricePerUnit + validatorsPerUnit * validatorFee)

`Offer` is what a requester puts on the table per unit; `Offer.check` refuses,
before any transaction, every term the contract would revert on, and
`check_shape` every part of the job's shape (rounds, shards, steps, segments)
past the contract's bounds (`types.MAX_*`). The pool's
parameters are `types.PoolParams`: `TaskPool.params()` read from the chain, or
`PoolParams.from_mapping` of a deployment record's `params` for offline estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

from gensyn_py.requester.amounts import E18, format_tokens
from gensyn_py.requester.errors import SubmitError
from gensyn_py.types import (
    MAX_COMMIT_WINDOW,
    MAX_ROUNDS,
    MAX_SEGMENTS,
    MAX_SHARDS,
    MAX_STEPS_PER_UNIT,
    PoolParams,
)

__all__ = ["Offer", "PoolParams", "check_collateral", "check_shape", "escrow_for", "unit_count"]

UINT64_MAX = 2**64 - 1
UINT128_MAX = 2**128 - 1

DEFAULT_MAX_PRICE = 10 * E18  # tokens per unit
DEFAULT_COLLATERAL = 100 * E18  # tokens of solver stake locked per unit
DEFAULT_COMMIT_WINDOW = 3600  # seconds between a claim and its commitment


def unit_count(rounds: int, shards: int) -> int:
    """Work units a job creates: its training units plus one aggregation unit per round when sharded."""
    return rounds * shards + (rounds if shards > 1 else 0)


def escrow_for(rounds: int, shards: int, max_price_per_unit: int, params: PoolParams) -> int:
    """The budget `submitJob` pulls from the requester."""
    return unit_count(rounds, shards) * (max_price_per_unit + params.validators_per_unit * params.validator_fee)


def check_shape(rounds: int, shards: int, steps_per_unit: int, checkpoint_interval: int) -> None:
    """SubmitError naming the first part of a job's shape that `submitJob` would refuse."""
    for name, value, most in (
        ("rounds", rounds, MAX_ROUNDS),
        ("shards", shards, MAX_SHARDS),
        ("steps per unit", steps_per_unit, MAX_STEPS_PER_UNIT),
    ):
        if not 0 < value <= most:
            raise SubmitError(f"{name} must be between 1 and {most:,}, got {value:,}")
    if not 0 < checkpoint_interval <= steps_per_unit or steps_per_unit % checkpoint_interval:
        raise SubmitError(
            f"checkpoint interval {checkpoint_interval:,} must divide the {steps_per_unit:,} steps per unit"
        )
    segments = steps_per_unit // checkpoint_interval
    if segments > MAX_SEGMENTS:
        raise SubmitError(
            f"{segments:,} checkpoint segments per unit (steps per unit / checkpoint interval) is more than the "
            f"pool's {MAX_SEGMENTS:,}; raise the checkpoint interval"
        )


@dataclass(frozen=True)
class Offer:
    """Per-unit terms: the most a solver may charge, the stake it locks, its time to commit."""

    max_price_per_unit: int = DEFAULT_MAX_PRICE
    collateral_per_unit: int = DEFAULT_COLLATERAL
    commit_window: int = DEFAULT_COMMIT_WINDOW
    min_throughput: int = 0

    def check(self, params: PoolParams) -> None:
        """SubmitError naming the first term the pool would reject."""
        if not 0 < self.max_price_per_unit <= UINT128_MAX:
            raise SubmitError(f"max price per unit must be positive, got {format_tokens(self.max_price_per_unit)}")
        if not 0 <= self.collateral_per_unit <= UINT128_MAX:
            raise SubmitError("collateral per unit is out of range")
        if not 0 <= self.min_throughput <= UINT64_MAX:
            raise SubmitError("minimum throughput is out of range")
        if self.commit_window > MAX_COMMIT_WINDOW:
            raise SubmitError(
                f"commit window {self.commit_window}s is above the pool's maximum of {MAX_COMMIT_WINDOW}s (30 days)"
            )
        if self.commit_window < params.min_commit_window:
            raise SubmitError(
                f"commit window {self.commit_window}s is below the pool's minimum of {params.min_commit_window}s"
            )


def check_collateral(offer: Offer, num_segments: int, params: PoolParams) -> None:
    """The pool's rule (`Units.minCollateral`): faking one segment must not pay, so the collateral per unit
    is at least price x (segments - m) / m, m = min(validators per unit, segments)."""
    from gensyn_py.proof.sampler import min_collateral

    need = min_collateral(offer.max_price_per_unit, num_segments, params.validators_per_unit)
    if offer.collateral_per_unit < need:
        raise SubmitError(
            f"collateral {format_tokens(offer.collateral_per_unit)} per unit is too low for {num_segments} "
            f"segments at a max price of {format_tokens(offer.max_price_per_unit)}: with "
            f"{params.validators_per_unit} validators checking {min(params.validators_per_unit, num_segments)} "
            f"of them, faking one segment would pay; offer at least {format_tokens(need)} "
            f"(or fewer, longer segments: a larger checkpoint_interval)"
        )
