"""A mirror of `contracts/libraries/Scoring.sol`: the claim score of a solver for a job, in bps.

The claim is a Dutch auction: the score a unit requires decays from 10000 when it opens to 0 at the end of the
claim window, so among the solvers that may claim it the one with the highest score is the first allowed to.
The score weighs reliability (Laplace-smoothed reputation), cheapness (the price against the job's maximum)
and spare capacity (throughput over the job's minimum). Integer arithmetic exactly as the contract does it;
`tests/contracts/test_scoring_mirror.py` checks it against `TaskPool.claimScore`.
"""

from __future__ import annotations

from gensyn_py.types import Hardware, Reputation

BPS = 10_000


def score(completed: int, missed: int, frauds: int, price: int, max_price: int, throughput: int,
          min_throughput: int) -> int:
    """`Scoring.score`: (6 x reliability + 3 x cheapness + 1 x capacity) / 10, each in bps."""
    reliability = (completed + 1) * BPS // (completed + missed + frauds + 2)
    cheapness = BPS if max_price == 0 else (max_price - price) * BPS // max_price
    capacity = BPS
    if min_throughput != 0:
        capacity = min((throughput - min_throughput) * BPS // min_throughput, BPS)
    return (6 * reliability + 3 * cheapness + capacity) // 10


def of_node(reputation: Reputation, hw: Hardware, max_price: int, min_throughput: int) -> int:
    """`Scoring.ofNode`: price and throughput clamped to the job's bounds first."""
    throughput = max(hw.throughput, min_throughput)
    price = min(hw.price_per_unit, max_price)
    return score(reputation.completed, reputation.missed, reputation.frauds, price, max_price, throughput,
                 min_throughput)


def required(opened_at: int, window: int, now: int) -> int:
    """`Scoring.required`: 10000 at `opened_at`, falling linearly to 0 at `opened_at + window`."""
    end = opened_at + window
    if window == 0 or now >= end:
        return 0
    return (end - now) * BPS // window
