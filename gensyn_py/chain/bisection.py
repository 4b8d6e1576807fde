"""A side's moves in a bisection (`contracts/libraries/Bisection.sol`), from its own sequence of roots.

The contract keeps [lo, hi] with an agreed root at lo and two different roots at hi; each move posts the
mover's root at the pending midpoint (where the other side posted in the previous move) and its root at the
next midpoint. A side that knows its roots at every position computes its move from the chain's state alone,
so a daemon restarted mid-game needs nothing it kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ZERO = bytes(32)


def midpoint(lo: int, hi: int) -> int:
    """`Bisection.mid`: where a move posts its roots."""
    return lo + (hi - lo) // 2


@dataclass(frozen=True)
class Move:
    at_pending: bytes  # the mover's root at the pending midpoint (zero when nothing is pending)
    at_next: bytes  # its root at the next midpoint (zero when this move ends the bisection)
    lo: int  # the interval after the move
    hi: int


def next_move(lo: int, hi: int, pending: bytes | None, roots: Sequence[bytes]) -> Move:
    """The move of the side whose roots are `roots` (index = position), given the interval and the other
    side's pending root at midpoint(lo, hi) (None before the first move)."""
    if hi - lo <= 1:
        raise ValueError(f"the bisection is over: [{lo}, {hi}]")
    at_pending = ZERO
    if pending is not None:
        m = midpoint(lo, hi)
        at_pending = roots[m]
        lo, hi = (m, hi) if at_pending == pending else (lo, m)
    at_next = roots[midpoint(lo, hi)] if hi - lo > 1 else ZERO
    return Move(at_pending, at_next, lo, hi)


def first_difference(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    """The first position where two sides' roots differ: where an honest game ends (hi = it, lo = it - 1)
    when both sides agree at 0 and each side's sequence differs from the other from there on."""
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            return i
    raise ValueError("the sequences agree everywhere")
