"""The requester refuses, before sending anything, every job the contract's bounds would refuse.

The bounds live once in Python (`gensyn_py.types.MAX_*`) and once in Solidity (`Units.MAX_*`); the first
test holds them equal by reading the contract's source. tests/contracts/test_job_bounds.py probes each
bound on a real chain (its `JobParamTooLarge` error reports the contract's bound).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gensyn_py.requester.errors import SubmitError
from gensyn_py.requester.pricing import Offer, check_shape
from gensyn_py.types import (
    MAX_COMMIT_WINDOW,
    MAX_ROUNDS,
    MAX_SEGMENTS,
    MAX_SHARDS,
    MAX_STEPS_PER_UNIT,
    PoolParams,
)

UNITS_SOL = Path(__file__).resolve().parents[2] / "contracts" / "libraries" / "Units.sol"
CONSTANT = re.compile(r"uint\d+ internal constant (MAX_[A-Z_]+) = ([0-9_]+)( days)?;")
PARAMS = PoolParams(2, 500, 1000, 60, 60, 60, 60, 30, 10**19, 10**20, 10**20)


def contract_bounds() -> dict[str, int]:
    found = {}
    for name, number, days in CONSTANT.findall(UNITS_SOL.read_text()):
        found[name] = int(number.replace("_", "")) * (86_400 if days else 1)
    return found


def test_python_bounds_equal_the_contracts() -> None:
    assert contract_bounds() == {
        "MAX_ROUNDS": MAX_ROUNDS,
        "MAX_SHARDS": MAX_SHARDS,
        "MAX_STEPS_PER_UNIT": MAX_STEPS_PER_UNIT,
        "MAX_SEGMENTS": MAX_SEGMENTS,
        "MAX_COMMIT_WINDOW": MAX_COMMIT_WINDOW,
    }


def test_shapes_at_every_bound_pass() -> None:
    check_shape(MAX_ROUNDS, MAX_SHARDS, MAX_STEPS_PER_UNIT, MAX_STEPS_PER_UNIT // 3125)  # 3125 segments
    check_shape(1, 1, MAX_SEGMENTS, 1)
    check_shape(1, 1, 8, 2)


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ((MAX_ROUNDS + 1, 1, 8, 2), "rounds must be between 1 and 10,000"),
        ((0, 1, 8, 2), "rounds must be between 1"),
        ((1, MAX_SHARDS + 1, 8, 2), "shards must be between 1 and 128"),
        ((1, 1, MAX_STEPS_PER_UNIT + 1, 1), "steps per unit must be between 1 and 10,000,000"),
        ((1, 1, 8, 3), "checkpoint interval 3 must divide the 8 steps"),
        ((1, 1, 8, 0), "checkpoint interval 0 must divide"),
        ((1, 1, 8, 16), "checkpoint interval 16 must divide"),
        ((1, 1, MAX_SEGMENTS + 1, 1), "4,097 checkpoint segments per unit"),
    ],
)
def test_shapes_past_a_bound_are_refused_naming_it(shape: tuple[int, int, int, int], words: str) -> None:
    with pytest.raises(SubmitError, match=words):
        check_shape(*shape)


def test_commit_window_is_refused_past_30_days_and_accepted_at_it() -> None:
    Offer(commit_window=MAX_COMMIT_WINDOW).check(PARAMS)
    for window in (MAX_COMMIT_WINDOW + 1, 2**64 - 1):
        with pytest.raises(SubmitError, match="above the pool's maximum of 2592000s"):
            Offer(commit_window=window).check(PARAMS)


def test_collateral_too_low_for_the_segments_is_refused_with_the_least_that_would_do() -> None:
    """The pool's economics rule (`Units.minCollateral`), checked before anything is sent."""
    from gensyn_py.requester.pricing import check_collateral

    price = 10 * 10**18
    check_collateral(Offer(price, 140 * 10**18), 30, PARAMS)  # 2 of 30 segments checked: 14 x the price
    with pytest.raises(SubmitError, match="offer at least 140"):
        check_collateral(Offer(price, 139 * 10**18), 30, PARAMS)
    check_collateral(Offer(price, 0), 2, PARAMS)  # every segment is checked: no collateral needed
