"""The pool's pricing rules, as `TaskPool.submitJob` applies them.

    units  = rounds * shards + (shards > 1 ? rounds : 0)     (one aggregation unit per round when sharded)
    escrow = units * (maxPricePerUnit + validatorsPerUnit * validatorFee)

`Offer` is what a requester puts on the table per unit; `Offer.check` refuses,
before any transaction, every term the contract would revert on. The pool's
parameters are `types.PoolParams`: `TaskPool.params()` read from the chain, or
`PoolParams.from_mapping` of a deployment record's `params` for offline estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

from gensyn_py.requester.amounts import E18, format_tokens
from gensyn_py.requester.errors import SubmitError
from gensyn_py.types import PoolParams

__all__ = ["Offer", "PoolParams", "escrow_for", "unit_count"]

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
        if self.commit_window > UINT64_MAX:
            raise SubmitError("commit window is out of range")
        if self.commit_window < params.min_commit_window:
            raise SubmitError(
                f"commit window {self.commit_window}s is below the pool's minimum of {params.min_commit_window}s"
            )
