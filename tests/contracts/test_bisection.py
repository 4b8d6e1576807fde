"""The bisection every dispute-game stage shares (`contracts/libraries/Bisection.sol`), played on anvil.

Two sides with their own root sequences play it move by move with `gensyn_py.chain.bisection.next_move`,
as the daemons will: the game ends on a position where the roots were agreed one step before and differ
at it, whichever side lies; moves stay within ceil(log2 n) + 1; a move out of turn, after the end or after
the mover's clock ran out reverts with its named error; a side that runs out of time is the one `expired`
names."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from web3.exceptions import ContractCustomError

from gensyn_py.chain.bisection import ZERO, midpoint, next_move
from gensyn_py.crypto.hashing import keccak256
from tests.contracts.bisection_play import CLOCK, deploy_harness, lying, play, roots
from tests.contracts.helpers import Protocol
from tests.contracts.test_registry import expect


@pytest.fixture(scope="module")
def harness(proto_base: Protocol) -> Any:
    return deploy_harness(proto_base)


def _view_revert(p: Protocol, fn: Any) -> str:
    """The custom error a view call reverts with."""
    with pytest.raises(ContractCustomError) as exc:
        fn.call()
    data = exc.value.data if isinstance(exc.value.data, str) else exc.value.args[0]
    return p.errors.decode(data).name


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000, 2**20])
@pytest.mark.parametrize("liar", ["claimant", "counter"])
def test_the_game_ends_where_the_liar_first_departs(proto: Protocol, harness: Any, n: int, liar: str) -> None:
    p, a = proto, proto.accounts
    rng = random.Random(f"{n}{liar}")
    honest = roots("state", n)
    d = rng.randint(1, n)  # the liar's roots differ from position d on
    lies = lying(honest, lambda i: i >= d)
    claimant, counter = (lies, honest) if liar == "claimant" else (honest, lies)
    moves, _ = play(p, harness, n, (a[2], claimant), (a[3], counter), n)
    lo, hi, agreed, c_root, d_root = harness.functions.interval(n).call()
    assert harness.functions.turn(n).call()[2] and (lo, hi) == (d - 1, d)
    assert agreed == honest[d - 1] and (c_root, d_root) == (claimant[d], counter[d]) and c_root != d_root
    assert moves <= math.ceil(math.log2(n)) + 1


def test_a_liar_who_agrees_again_later_still_leaves_one_agreed_then_different_step(
    proto: Protocol, harness: Any
) -> None:
    """Roots that differ at scattered positions (a liar that re-converges): the end is a step from an agreed
    root to two different ones, which is all the one-step check needs."""
    p, a = proto, proto.accounts
    n = 500
    rng = random.Random(7)
    honest = roots("state", n)
    for game in range(4):
        scattered = set(rng.sample(range(1, n), 5)) | {n}
        lies = lying(honest, scattered.__contains__)
        play(p, harness, 100 + game, (a[2], lies), (a[3], honest), n)
        lo, hi, agreed, c_root, d_root = harness.functions.interval(100 + game).call()
        assert harness.functions.turn(100 + game).call()[2] and hi == lo + 1
        assert agreed == honest[lo] == lies[lo] and c_root == lies[hi] != d_root == honest[hi]


def test_bad_starts_and_bad_moves_revert_with_named_errors(proto: Protocol, harness: Any) -> None:
    p, a, h = proto, proto.accounts, harness
    r = roots("x", 8)
    start = h.functions.start
    expect(p, "EmptyInterval", p.deployer, start(1, a[2].address, a[3].address, (5, 5, r[0], r[1], r[2]), CLOCK))
    expect(p, "NoDisagreement", p.deployer, start(1, a[2].address, a[3].address, (0, 8, r[0], r[1], r[1]), CLOCK))
    expect(p, "SameParty", p.deployer, start(1, a[2].address, a[2].address, (0, 8, r[0], r[1], r[2]), CLOCK))
    p.tx(p.deployer, start(1, a[2].address, a[3].address, (0, 2, r[0], r[2], keccak256(b"other")), CLOCK))
    err = expect(p, "NotYourTurn", a[3], h.functions.move(1, ZERO, r[1]))  # the claimant moves first
    assert (err.error_args["caller"], err.error_args["expected"]) == (a[3].address, a[2].address)
    expect(p, "NotYourTurn", a[4], h.functions.move(1, ZERO, r[1]))  # a stranger
    p.tx(a[2], h.functions.move(1, ZERO, r[midpoint(0, 2)]))
    expect(p, "NotYourTurn", a[2], h.functions.move(1, r[1], ZERO))  # a second move in the same turn
    p.tx(a[3], h.functions.move(1, keccak256(b"counter's 1"), ZERO))  # disagrees at 1: [0, 1], over
    assert h.functions.interval(1).call()[:2] == [0, 1]
    expect(p, "BisectionDone", a[2], h.functions.move(1, ZERO, ZERO))
    assert _view_revert(p, h.functions.expired(1)) == "BisectionDone"  # over: the one-step check decides


def test_the_side_that_lets_its_clock_run_out_loses_and_cannot_move_late(proto: Protocol, harness: Any) -> None:
    p, a, h = proto, proto.accounts, harness
    honest = roots("s", 64)
    lies = lying(honest, lambda i: i >= 10)
    p.tx(p.deployer, h.functions.start(2, a[2].address, a[3].address, (0, 64, honest[0], lies[64], honest[64]), CLOCK))
    m = next_move(0, 64, None, lies)
    p.advance(CLOCK // 2)  # the claimant spends half its clock on its first move
    p.tx(a[2], h.functions.move(2, m.at_pending, m.at_next))
    deadline = h.functions.turn(2).call()[1]
    now = p.w3.eth.get_block("latest")["timestamp"]
    assert deadline - now == CLOCK  # the counter's clock is untouched
    assert _view_revert(p, h.functions.expired(2)) == "ClockRunning"
    p.advance(CLOCK + 1)  # the counter sleeps through its whole clock
    loser = h.functions.expired(2).call()
    assert loser == a[3].address
    m2 = next_move(0, 64, m.at_next, honest)
    err = expect(p, "ClockExpired", a[3], h.functions.move(2, m2.at_pending, m2.at_next))
    assert err.error_args["mover"] == a[3].address
