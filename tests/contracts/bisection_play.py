"""Playing a bisection (`contracts/libraries/Bisection.sol`) on anvil: two sides' roots and a game between them.

Shared by `tests/contracts/test_bisection.py` and `bench/bisection_gas.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

from eth_account.signers.local import LocalAccount

from gensyn_py.chain.bisection import next_move
from gensyn_py.crypto.hashing import keccak256
from tests.contracts.helpers import Protocol, deploy_artifact

CLOCK = 600  # seconds per side


def deploy_harness(p: Protocol) -> Any:
    return deploy_artifact(p.w3, p.deployer, p.artifacts["BisectionHarness"])


class Roots(Sequence[bytes]):
    """A side's roots at positions 0..n, computed when read (a game reads about log2 n of them)."""

    def __init__(self, tag: str, n: int, lies: Callable[[int], bool] = lambda i: False) -> None:
        self.tag, self.n, self.lies = tag, n, lies

    def __len__(self) -> int:
        return self.n + 1

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not 0 <= i <= self.n:
            raise IndexError(i)
        root = keccak256(f"{self.tag}:{i}".encode())
        return keccak256(b"lie" + root) if self.lies(i) else root


def roots(tag: str, n: int) -> Roots:
    return Roots(tag, n)


def lying(honest: Roots, lies: Callable[[int], bool]) -> Roots:
    return Roots(honest.tag, honest.n, lies)


def lying_from(honest: Roots, first: int) -> Roots:
    """A liar whose roots differ from `first` on."""
    return lying(honest, lambda i: i >= first)


def play(p: Protocol, h: Any, gid: int, claimant: tuple[LocalAccount, Sequence[bytes]],
         counter: tuple[LocalAccount, Sequence[bytes]], n: int) -> tuple[int, list[int]]:
    """Start game `gid` over positions 0..n (the claimant's roots first) and play it to the end with
    `next_move` on both sides; (moves, gas per move)."""
    (ca, croots), (da, droots) = claimant, counter
    assert croots[0] == droots[0]
    p.tx(p.deployer, h.functions.start(gid, ca.address, da.address, (0, n, croots[0], croots[n], droots[n]), CLOCK))
    gas: list[int] = []
    sides = {ca.address: (ca, croots), da.address: (da, droots)}
    while True:
        lo, hi = h.functions.interval(gid).call()[:2]
        mover, _, done, is_pending, root = h.functions.turn(gid).call()
        if done:
            return len(gas), gas
        acct, own = sides[mover]
        m = next_move(lo, hi, root if is_pending else None, own)
        gas.append(p.tx(acct, h.functions.move(gid, m.at_pending, m.at_next))["gasUsed"])
        assert h.functions.interval(gid).call()[:2] == [m.lo, m.hi]  # the Python mirror predicts the interval
