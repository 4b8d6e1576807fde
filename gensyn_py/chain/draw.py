"""The stake-weighted validator draws, in Python: `Verdicts.draw` (a unit's validators) and the candidate rule
`DisputeCommittee._draw` shares with it (contracts/libraries/Verdicts.sol, contracts/DisputeCommittee.sol).

A member of a validator set is one registry word (`NodeRegistry.validatorEntry`): its address, the block it
entered the set, the block its weight last changed, and its weight, min(bonded, weightCap) scaled to
`DRAW_WEIGHT_SCALE`. A draw frozen at block F (the unit's claim, the dispute's opening) considers only members
with both blocks at or before F, and keeps a pick when a uniform ticket falls below the weight: odds proportional
to stake up to the cap, so splitting stake over many addresses buys nothing, and joining or topping up once the
seed is known buys nothing either.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from eth_abi import encode

from gensyn_py.crypto.hashing import keccak256

DRAW_WEIGHT_SCALE = 10**9  # INodeRegistry.sol
VALIDATOR_PICKS_PER_SEAT = 4  # Verdicts.draw: 4 * want random picks, then the sweep
VALIDATOR_SWEEP_LIMIT = 64  # Verdicts.SWEEP_LIMIT
COMMITTEE_ATTEMPTS_PER_SEAT = 8  # DisputeCommittee.ATTEMPTS_PER_SEAT: random picks per seat, then the sweep
COMMITTEE_SWEEP_LIMIT = 64  # DisputeCommittee.SWEEP_LIMIT


@dataclass(frozen=True)
class ValidatorEntry:
    """One member of a validator set as `NodeRegistry.validatorEntry` returns it."""

    node: str
    since: int
    changed_at: int
    weight: int

    def candidate_at(self, frozen_at: int) -> bool:
        """In the set, with its current weight, by block `frozen_at`."""
        return self.since <= frozen_at and self.changed_at <= frozen_at


def weight_of(bonded: int, cap: int) -> int:
    """`NodeRegistry._weight`: proportional to bonded stake up to `cap`, flat above it."""
    return min(bonded, cap) * DRAW_WEIGHT_SCALE // cap


def draw_validators(seed: bytes, entries: Sequence[ValidatorEntry], frozen_at: int, solver: str, want: int,
                    lockable: Collection[str]) -> list[str]:
    """Whom `Verdicts.draw` seats, in slot order: `entries` is the set in registry order, `lockable` the members
    whose free stake covers a validator bond at the draw."""
    n = len(entries)
    picked: list[str] = []
    picks = want * VALIDATOR_PICKS_PER_SEAT
    for a in range(picks + min(n, VALIDATOR_SWEEP_LIMIT)):
        if n == 0 or len(picked) >= want:
            break
        r = int.from_bytes(keccak256(encode(["bytes32", "string", "uint256"], [seed, "v", a])), "big")
        ticket = (r >> 128) % DRAW_WEIGHT_SCALE
        e = entries[r % n if a < picks else (int.from_bytes(seed, "big") + a) % n]
        if not e.candidate_at(frozen_at) or e.weight <= ticket:
            continue
        if e.node == solver or e.node in picked or e.node not in lockable:
            continue
        picked.append(e.node)
    return picked


def draw_seats(seed: bytes, entries: Sequence[ValidatorEntry], frozen_at: int, free: Mapping[str, int],
               skip: Collection[str], want: int, bond: int) -> list[str]:
    """Whom `DisputeCommittee._draw` seats, in order: random picks, then a sweep from a random offset, every pick
    kept at the candidate's weight. `entries` is the set in registry order (members that joined or changed stake
    after `frozen_at`, the opening, are not candidates), `skip` the parties and the members already seated,
    `free` the free stake at the draw (a seat locks `bond` of it)."""
    n = len(entries)
    seated: list[str] = []

    def ticket(a: int) -> tuple[int, int]:
        r = int.from_bytes(keccak256(encode(["bytes32", "uint256"], [seed, a])), "big")
        return r, (r >> 128) % DRAW_WEIGHT_SCALE

    def try_seat(e: ValidatorEntry, t: int) -> None:
        if not e.candidate_at(frozen_at) or e.weight <= t:
            return
        if e.node in seated or e.node in skip or free.get(e.node, 0) < bond:
            return
        seated.append(e.node)

    attempts = want * COMMITTEE_ATTEMPTS_PER_SEAT
    for a in range(attempts):
        if len(seated) >= want or n == 0:
            break
        r, t = ticket(a)
        try_seat(entries[r % n], t)
    start = int.from_bytes(seed, "big")
    for i in range(min(n, COMMITTEE_SWEEP_LIMIT)):
        if len(seated) >= want:
            break
        try_seat(entries[(start + i) % n], ticket(attempts + i)[1])
    return seated
