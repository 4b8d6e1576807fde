"""`StepGame` (`contracts/StepGame.sol`; docs/dispute-game.md): two traces of one repro step, narrowed to one op,
one element and one multiply-add, decided by the contract. `SegmentGame` opens it.

Views take a `block` (one decision reads one block); `move` sends any move by its Solidity name (the side computes
the arguments: `proof/step_side.py`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract


class Stage(IntEnum):
    """`IStepGame.Stage`."""

    NONE = 0
    TRACE = 1  # opened without the counter's trace root: it posts it with its first move (`contestTrace`)
    OPS = 2
    OPEN_OP = 3
    REFUTE = 4
    DESCEND = 5
    REVEAL_CHUNK = 6
    DOT_ANSWER = 7
    DOT_CHALLENGE = 8
    DOT_BISECT = 9
    DOT_STEP = 10
    ROW_ANSWER = 11
    ROW_CHALLENGE = 12
    DECIDED = 13


class Reason(IntEnum):
    """`IStepGame.Reason`."""

    TIMEOUT = 0
    WRONG_PROGRAM = 1
    WRONG_INPUT_ROOT = 2
    WRONG_NAMED_INPUT = 3
    WRONG_ELEMENT = 4
    WRONG_BLOCK = 5
    WRONG_MULTIPLY_ADD = 6
    NON_FINITE_DOT = 7
    WRONG_MOVE = 8
    WRONG_ROW_MAX = 9


class StepGame(BoundContract):
    NAME = "StepGame"

    def move(self, fn: str, game_id: int, *args: Any) -> TxReceipt:
        """Any move of the step game (`contestTrace`, `moveOps`, `openOp`, a refutation, `descend`, ...)."""
        return self.transact(fn, game_id, *args)

    def timeout(self, game_id: int) -> TxReceipt:
        return self.transact("timeout", game_id)

    def result_of(self, game_id: int, *, block: Block = "latest") -> tuple[bool, str]:
        decided, winner = self.call("resultOf", game_id, block=block)
        return bool(decided), str(winner)

    def game_of(self, game_id: int, *, block: Block = "latest") -> tuple[int, int, int, bytes, bytes, bytes]:
        """(stage, lo, hi, agreed root, claimant's root, counter's root)."""
        stage, lo, hi, agreed, mine, theirs = self.call("gameOf", game_id, block=block)
        return int(stage), int(lo), int(hi), bytes(agreed), bytes(mine), bytes(theirs)

    def deadline(self, game_id: int, *, block: Block = "latest") -> tuple[str, int]:
        mover, due = self.call("deadline", game_id, block=block)
        return str(mover), int(due)

    def pending_of(self, game_id: int, *, block: Block = "latest") -> tuple[bool, bytes]:
        pending, root = self.call("pendingOf", game_id, block=block)
        return bool(pending), bytes(root)

    def descent_of(self, game_id: int, *, block: Block = "latest") -> tuple[int, int, int, bytes, bytes]:
        """(level, index, chunks, the other side's pending left and right children)."""
        level, index, chunks, left, right = self.call("descentOf", game_id, block=block)
        return int(level), int(index), int(chunks), bytes(left), bytes(right)
