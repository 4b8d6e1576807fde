"""`SegmentGame` (`contracts/SegmentGame.sol`; docs/dispute-game.md): the pool's resolver of disputes over repro
units of jobs with a step table. It narrows a segment to one step and opens a `StepGame` over it.

Views take a `block`, so that a side reads everything one decision needs from one block; `move` sends any move by
its Solidity name (the side computes the arguments: `proof/segment_side.py`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract


class Stage(IntEnum):
    """`ISegmentGame.Stage`."""

    NONE = 0
    CONTEST = 1  # the counter opens the segment's leaf with its contest
    TRANSCRIPT = 2  # the claimant opens its loss transcript with its first bisection move
    START = 3  # a round-0 unit's contested start: the claimant proves it is the job's
    STEPS = 4
    REVEAL = 5  # the claimant's reveal opens the step game
    STEP = 6
    DECIDED = 7


class Reason(IntEnum):
    """`ISegmentGame.Reason`."""

    TIMEOUT = 0
    BROKEN_CHAIN = 1
    START_UNBOUND = 2
    STEP_GAME = 3
    START_PROVEN = 4
    WRONG_AUTHOR = 5
    ENDS_AGREE = 6


class SegmentGame(BoundContract):
    NAME = "SegmentGame"

    def move(self, fn: str, dispute_id: int, *args: Any) -> TxReceipt:
        """Any move of the game (`contest`, `openTranscript`, `refuteStart`, `contestStart`, `proveStart`, `moveSteps`,
        `revealStep`)."""
        return self.transact(fn, dispute_id, *args)

    def settle(self, dispute_id: int) -> TxReceipt:
        """Anyone, once the step game is decided."""
        return self.transact("settle", dispute_id)

    def timeout(self, dispute_id: int) -> TxReceipt:
        """Anyone, once the side to move ran out of time."""
        return self.transact("timeout", dispute_id)

    def dispute_of(self, dispute_id: int, *, block: Block = "latest") -> tuple[int, int, int, int, str]:
        """(stage, unit id, segment, step game id, winner)."""
        stage, unit, segment, game, winner = self.call("disputeOf", dispute_id, block=block)
        return int(stage), int(unit), int(segment), int(game), str(winner)

    def deadline(self, dispute_id: int, *, block: Block = "latest") -> tuple[str, int]:
        """(the side to move, when its clock runs out)."""
        mover, due = self.call("deadline", dispute_id, block=block)
        return str(mover), int(due)

    def steps_of(self, dispute_id: int, *, block: Block = "latest") -> tuple[int, int, bytes, bytes, bytes]:
        """The bisection over the segment's steps: (lo, hi, agreed root, claimant's root, counter's root)."""
        lo, hi, agreed, mine, theirs = self.call("stepsOf", dispute_id, block=block)
        return int(lo), int(hi), bytes(agreed), bytes(mine), bytes(theirs)

    def pending_of(self, dispute_id: int, *, block: Block = "latest") -> tuple[bool, bytes]:
        pending, root = self.call("pendingOf", dispute_id, block=block)
        return bool(pending), bytes(root)
