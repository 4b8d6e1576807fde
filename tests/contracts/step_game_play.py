"""Playing the step game (`contracts/StepGame.sol`) on anvil between two traces of one repro step.

Shared by `tests/contracts/test_step_game.py` and `bench/step_game.py`: deploy the game and its referee, open a
game between two `StepSide`s, bisect to the first differing op with each side's own moves, have the claimant
open it and the counter refute it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from eth_account.signers.local import LocalAccount

from gensyn_py.chain.bisection import next_move
from gensyn_py.chain.step_game import Stage
from gensyn_py.proof.descent import RevealedChunk, sibling_path
from gensyn_py.proof.onchain_trace import OpOpening
from gensyn_py.proof.step_program import inputs_root, program_root
from gensyn_py.proof.step_side import CONTEST, Refutation, StepSide
from gensyn_py.proof.trace import Trace, recompute_element
from gensyn_py.repro import reference as R
from tests.contracts.helpers import Protocol, deploy_artifact

CLOCK = 3600  # seconds per side over a whole game


def deploy_step_game(p: Protocol, clock: int = CLOCK) -> Any:
    referee = deploy_artifact(p.w3, p.deployer, p.artifacts["ElementReferee"])
    dots = deploy_artifact(p.w3, p.deployer, p.artifacts["DotReferee"])
    moves = deploy_artifact(p.w3, p.deployer, p.artifacts["MoveReferee"])
    return deploy_artifact(p.w3, p.deployer, p.artifacts["StepGame"], p.deployer.address, clock, referee.address,
                           dots.address, moves.address)


def flipped(t: Trace, i: int, element: int) -> Trace:
    """`t` with the lowest bit of one element of op i's output flipped (every later op left as recorded)."""
    values = [v.copy() for v in t.values]
    flat = values[i].reshape(-1).view(np.uint32)
    flat[element] ^= 1
    return Trace(list(t.ops), values, dict(t.outputs))


class WrongPartialSum(StepSide):
    """A claimant whose multiply-add k of output element `element` of dot op i is off by `delta`: its prefix sums
    from k on, its sum N and its committed element (N rounded by the rule) are all off by it."""

    def __init__(self, t: Trace, i: int, element: int, k: int) -> None:
        d = recompute_element(t, i, element).detail
        assert d is not None
        delta = next(1 << b for b in range(8, 200) if R.round_int(d.n + (1 << b), d.scale) != d.value)
        self.i, self.element = i, element
        self.sums = tuple(v + (delta if j >= k else 0) for j, v in enumerate(d.partial))
        values = list(t.values)
        values[i] = t.values[i].copy()
        values[i].reshape(-1)[element] = np.float32(R.round_int(self.sums[-1], d.scale))
        super().__init__(Trace(list(t.ops), values, dict(t.outputs)))

    def dot_sums(self, i: int, element: int) -> tuple[int, ...]:
        return self.sums if (i, element) == (self.i, self.element) else super().dot_sums(i, element)


@dataclass
class Played:
    """What a game cost: moves and gas per side, and where it narrowed."""

    game_id: int
    op: int | None = None
    multiply_add: int | None = None
    moves: dict[str, int] = field(default_factory=lambda: {"claimant": 0, "counter": 0})
    gas: dict[str, int] = field(default_factory=lambda: {"claimant": 0, "counter": 0})

    def count(self, side: str, receipt: Any) -> Any:
        self.moves[side] += 1
        self.gas[side] += int(receipt["gasUsed"])
        return receipt


def open_game(p: Protocol, game: Any, honest: Trace, claimant: tuple[LocalAccount, StepSide],
              counter: tuple[LocalAccount, StepSide]) -> Played:
    """Open a game whose program and named inputs are `honest`'s (what every honest node derives)."""
    (ca, cs), (da, ds) = claimant, counter
    rc = p.tx(p.deployer, game.functions.open(ca.address, da.address, program_root(honest), inputs_root(honest),
                                              cs.n_ops, cs.root, ds.root))
    gid = p.events(rc, game, "GameOpened")[0]["args"]["gameId"]
    return Played(gid)


OPS, REFUTE, DESCEND, REVEAL_CHUNK, DOT_BISECT = (Stage.OPS, Stage.REFUTE, Stage.DESCEND, Stage.REVEAL_CHUNK,
                                                  Stage.DOT_BISECT)


def bisect(p: Protocol, game: Any, played: Played, claimant: tuple[LocalAccount, StepSide],
           counter: tuple[LocalAccount, StepSide], stage: int = OPS, fn: str = "moveOps",
           roots: Callable[[StepSide], Sequence[bytes]] = lambda side: side.roots) -> int:
    """Play the bisection of `stage` to its end with each side's own `roots`; where it stopped (lo)."""
    sides = {claimant[0].address: ("claimant", *claimant), counter[0].address: ("counter", *counter)}
    gid = played.game_id
    while game.functions.gameOf(gid).call()[0] == stage:
        _, lo, hi, *_ = game.functions.gameOf(gid).call()
        is_pending, root = game.functions.pendingOf(gid).call()
        mover, _ = game.functions.deadline(gid).call()
        name, acct, side = sides[mover]
        m = next_move(lo, hi, root if is_pending else None, roots(side))
        played.count(name, p.tx(acct, getattr(game.functions, fn)(gid, m.at_pending, m.at_next)))
    lo = int(game.functions.gameOf(gid).call()[1])
    if stage == OPS:
        played.op = lo
    return lo


def play_dot(p: Protocol, game: Any, played: Played, opened: OpOpening, element: int,
             claimant: tuple[LocalAccount, StepSide], counter: tuple[LocalAccount, StepSide]) -> Any:
    """After the counter's `challengeDot` of `element` (with the first move of the bisection over prefix sums): the
    claimant answers (with its move on it), both bisect, and the counter refutes the multiply-add it ends on."""
    (ca, cs), (da, ds) = claimant, counter
    i, gid = opened.index, played.game_id
    rc = p.tx(ca, game.functions.answerDot(gid, *cs.dot_answer(i, element, challenged_mid(p, game, gid))))
    played.count("claimant", rc)
    answer = p.events(rc, game, "DotAnswered")[0]["args"]
    k = bisect(p, game, played, claimant, counter, DOT_BISECT, "moveDot", lambda side: side.dot_positions(i, element))
    played.multiply_add = k
    _, _, _, agreed, mine, _ = game.functions.gameOf(gid).call()
    prev, cur = (int.from_bytes(w, "big", signed=True) for w in (agreed, mine))
    move = ds.dot_step(opened, element, k, prev, cur, (answer["blockA"], answer["blockB"]))
    return refute(p, game, played, da, Refutation("refuteDotStep", (move,)))


def challenged_mid(p: Protocol, game: Any, gid: int) -> bytes:
    """The counter's prefix sum at the first midpoint, posted with its `challengeDot`."""
    logs = game.events.DotChallenged().get_logs(from_block=0, argument_filters={"gameId": gid})
    return bytes(logs[-1]["args"]["atMid"])


def open_disputed(p: Protocol, game: Any, played: Played, claimant: tuple[LocalAccount, StepSide]) -> OpOpening:
    """The claimant opens its leaf of the disputed op, revealing its output down to the data root's children."""
    assert played.op is not None
    opened = claimant[1].open_op(played.op)
    reveal = claimant[1].reveal_output(played.op)
    played.count("claimant", p.tx(claimant[0], game.functions.openOp(played.game_id, opened.as_arg(), reveal)))
    return opened


def descend(p: Protocol, game: Any, played: Played, opened: OpOpening, claimant: tuple[LocalAccount, StepSide],
            counter: tuple[LocalAccount, StepSide]) -> RevealedChunk:
    """The counter contests the opened output by descending (from the children the claimant revealed with its op),
    both descend with their own children to a chunk where they differ, and the claimant reveals that chunk; what
    the counter then knows of it (the chunk, and its path from the claimant's `Children` events)."""
    (ca, cs), (da, ds) = claimant, counter
    i, gid = opened.index, played.game_id
    sides = {ca.address: ("claimant", ca, cs), da.address: ("counter", da, ds)}
    rc = None
    while game.functions.gameOf(gid).call()[0] in (REFUTE, DESCEND) and rc is None:
        level, index, _, left, right = game.functions.descentOf(gid).call()
        name, acct, side = sides[game.functions.deadline(gid).call()[0]]
        move = side.descend(i, level, index, (left, right))
        moved = played.count(name, p.tx(acct, game.functions.descend(gid, *move)))
        rc = moved if p.events(moved, game, "ChunkRevealed") else None  # the claimant's move revealed it
    if rc is None:  # the counter's move reached the chunk: the claimant reveals it on its own
        assert game.functions.gameOf(gid).call()[0] == REVEAL_CHUNK
        index = game.functions.descentOf(gid).call()[1]
        rc = played.count("claimant", p.tx(ca, game.functions.revealChunk(gid, cs.chunk(i, index))))
    return revealed_chunk(p, game, gid, ca.address, rc)


def revealed_chunk(p: Protocol, game: Any, gid: int, claimant: str, receipt: Any) -> RevealedChunk:
    """What the counter knows of the chunk `receipt` revealed: the chunk, and its path from the claimant's
    `Children` events."""
    _, index, chunks, _, _ = game.functions.descentOf(gid).call()
    chunk = p.events(receipt, game, "ChunkRevealed")[0]["args"]["chunk"]
    logs = game.events.Children().get_logs(from_block=0, argument_filters={"gameId": gid, "mover": claimant})
    posted = {(e["args"]["level"], e["args"]["index"]): (e["args"]["left"], e["args"]["right"]) for e in logs}
    return RevealedChunk(index, chunk, sibling_path(posted, index, chunks))


def refute(p: Protocol, game: Any, played: Played, counter: LocalAccount, r: Refutation) -> Any:
    rc = p.tx(counter, getattr(game.functions, r.function)(played.game_id, *r.args))
    played.count("counter", rc)
    return rc


def decided(p: Protocol, game: Any, receipt: Any) -> dict[str, Any]:
    """The `GameDecided` event's arguments."""
    return dict(p.events(receipt, game, "GameDecided")[0]["args"])


def play_game(p: Protocol, game: Any, honest: Trace, claimant: tuple[LocalAccount, StepSide],
              counter: tuple[LocalAccount, StepSide]) -> tuple[Played, Any]:
    """A whole game as an honest counter plays it against a cheating claimant: bisect, open, refute (contesting
    the output and narrowing a dot element when it must); the game and the deciding receipt."""
    played = open_game(p, game, honest, claimant, counter)
    return played, play_opened(p, game, played, claimant, counter)


def play_opened(p: Protocol, game: Any, played: Played, claimant: tuple[LocalAccount, StepSide],
                counter: tuple[LocalAccount, StepSide]) -> Any:
    """`play_game` from an opened game on (the counter's trace root posted first where the segment game opened
    it without): the deciding receipt."""
    if game.functions.gameOf(played.game_id).call()[0] == Stage.TRACE:
        played.count("counter", p.tx(counter[0], game.functions.contestTrace(played.game_id, *counter[1].contest())))
    bisect(p, game, played, claimant, counter)
    opened = open_disputed(p, game, played, claimant)
    r = counter[1].refutation(opened)
    assert r is not None, "the counter found nothing to refute"
    if r == CONTEST:
        r = counter[1].refute_chunk(opened, descend(p, game, played, opened, claimant, counter))
        assert r is not None
        if r.function == "challengeDot":
            refute(p, game, played, counter[0], r)
            return play_dot(p, game, played, opened, r.args[1], claimant, counter)
    return refute(p, game, played, counter[0], r)
