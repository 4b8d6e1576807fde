"""The segment game (`contracts/SegmentGame.sol`) decides a dispute over a REAL repro unit, the contract alone.

The pool hands every dispute over a training unit of a job with a step table to the game; each side plays from its
own replay (`gensyn_py/proof/segment_side.py`):

- a solver that flipped one bit of one op's output in one step is narrowed to that step, then to that op, and the
  contract recomputes the element: the solver is slashed, the disputing validator paid, the unit reopened;
- a challenger that disputes an honest unit with a made-up end state loses its bond: the solver keeps its stake
  and is paid;
- a broken chain of segments is refuted by the previous segment's leaf; segment 0's start, which the chain cannot
  check yet, ends the dispute with no winner;
- each side running out of time at each stage loses; every bad move reverts by its named error.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pytest
from eth_utils import keccak

from gensyn_py.proof.segment_side import Flip, SegmentSide, entries
from gensyn_py.proof.state import key_hash
from tests.contracts.flows import challenge, honest_unit
from tests.contracts.helpers import OPEN, VERIFIED, Protocol, Work
from tests.contracts.segment_game_play import (
    BIND,
    BROKEN_CHAIN,
    CONTEST,
    DECIDED,
    NO_QUORUM,
    OPEN_SEGMENT,
    REVEAL,
    SOLVER_FRAUD,
    SOLVER_HONEST,
    START_UNBOUND,
    STEP,
    STEP_GAME,
    STEPS,
    TIMEOUT,
    GamePlay,
    bisect_steps,
    decided,
    honest,
    job,
    open_segment,
    play,
    rejected,
    replay,
    stage,
    submit,
    work_of,
)
from tests.contracts.test_registry import expect
from tests.contracts.test_step_game import first

CHEAT_STEP = 5  # unit step 5: step 1 of segment 1


@cache
def cheat() -> tuple[Flip, list[SegmentSide]]:
    """A solver that flips one bit of one element of the step's first `sqrt` (AdamW's denominator) at unit step 5
    and trains on from the flipped state: its states differ from step 6 on, and only there. (A bit whose change
    rounds away before it reaches the state is no cheat: the state, all that is committed, is honest.)"""
    flip = Flip(CHEAT_STEP, first("sqrt"), 3, bit=22)
    sides = replay(flip)
    assert sides[0].roots == honest()[0].roots and sides[1].roots[:2] == honest()[1].roots[:2]
    assert all(c != h for c, h in zip(sides[1].roots[2:], honest()[1].roots[2:], strict=True))
    return flip, sides


def stake(p: Protocol, who: Any) -> int:
    return int(p.registry.functions.bondedOf(who.address).call())


def test_a_flipped_bit_in_one_op_of_one_step_is_convicted_by_the_contract_alone(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    flip, sides = cheat()
    work = work_of(sides)
    did, validator = rejected(p, work, segment=1)
    assert p.pool.functions.resolverOf(1).call() == p.game.address  # the game, not the committee
    solver_stake, validator_credit = stake(p, a[2]), p.pool.functions.credit(validator.address).call()

    g, rc = play(p, did, work, 1, (a[2], sides[1]), (validator, honest()[1]))

    assert g.step == CHEAT_STEP - INTERVAL  # stage (a) ends on the step the bit was flipped in
    assert g.step_game is not None and g.step_game.op == flip.op  # stage (b) on the op that computed it
    out = decided(p, rc)
    assert (out["winner"], out["reason"], out["outcome"]) == (validator.address, STEP_GAME, SOLVER_FRAUD)
    assert stage(p, did) == DECIDED
    # The solver lost its collateral, the validator that disputed it is paid from it, the unit is open again.
    assert stake(p, a[2]) < solver_stake
    assert p.pool.functions.credit(validator.address).call() > validator_credit
    assert p.unit(1)["status"] == OPEN
    p.check_conservation()
    moves, gas = g.totals()
    nops = g.step_game.moves  # noqa: F841 - counted in totals
    bound = (math.ceil(math.log2(INTERVAL)) + math.ceil(math.log2(len(sides[1].trace(g.step).ops)))
             + math.ceil(math.log2(sides[1].trace(g.step).values[flip.op].size)) + 4 + 4)
    assert moves <= bound, (moves, bound)
    assert gas < 5_000_000, gas
    # Decided is final: nobody moves, times out or settles it again.
    expect(p, "WrongStage", a[9], p.game.functions.settle(did))
    expect(p, "WrongStage", a[9], p.game.functions.timeout(did))


INTERVAL = 4

