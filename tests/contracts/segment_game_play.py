"""Playing the segment game (`contracts/SegmentGame.sol`) on anvil over a REAL repro unit.

A tiny MLP job (AdamW, 8 steps, a checkpoint every 4) is trained for real; its step table goes on-chain with the
job; the solver commits the real state roots of its segments (a cheating solver: after flipping one bit of one op's
output in one step); a validator or challenger disputes a segment, and the pool hands the dispute to the game. Each
side then plays from its own `SegmentSide` (its own replay), move by move, down to the step game and back to the
pool's settlement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from gensyn_py.chain.segment_game import Reason, Stage
from gensyn_py.devnet.anvil import DEV_KEYS
from gensyn_py.proof.segment_side import Flip, SegmentSide, partial_sum_flip
from gensyn_py.proof.step_table import StepTable, step_table
from gensyn_py.train.data import Dataset
from gensyn_py.train.spec import JobSpec
from gensyn_py.train.trainer import Trainer
from tests.contracts.flows import claim_and_commit, commit_verdicts, reveal
from tests.contracts.helpers import E18, Protocol, Work
from tests.contracts.step_game_play import Played, play_opened
from tests.contracts.test_element_step import ADAMW
from tests.unit.trainkit import dataset_for, tiny_spec

CONTEST, TRANSCRIPT, START, STEPS, REVEAL, STEP, DECIDED = (
    Stage.CONTEST, Stage.TRANSCRIPT, Stage.START, Stage.STEPS, Stage.REVEAL, Stage.STEP, Stage.DECIDED)
TIMEOUT, BROKEN_CHAIN, START_UNBOUND, STEP_GAME, START_PROVEN, WRONG_AUTHOR, ENDS_AGREE = tuple(Reason)
SOLVER_HONEST, SOLVER_FRAUD, NO_QUORUM = 1, 2, 3  # Outcome
STEPS_PER_UNIT, INTERVAL = 8, 4
SOLVER = Account.from_key(DEV_KEYS[2]).address  # the solver of every unit these games are over


@cache
def job() -> tuple[JobSpec, Dataset, StepTable]:
    """The unit's spec, dataset and step table (every honest node derives the same)."""
    spec = tiny_spec("mlp", mode="repro", optimizer=ADAMW, steps_per_unit=STEPS_PER_UNIT,
                     checkpoint_interval=INTERVAL, rounds=1, shards=1)
    ds = dataset_for("mlp")
    return spec, ds, step_table(spec, ds)


def matmul_flip(side: SegmentSide, t: int) -> tuple[Flip, tuple[int, ...], int, int]:
    """A cheat inside the longest matmul of step t (`segment_side.partial_sum_flip`): the flip that writes it, the
    claimant's sums, the op and K."""
    step = side.trace(t)
    flip = partial_sum_flip(step, side.first + t)
    assert flip.sums is not None
    return flip, flip.sums, flip.op, int(step.values[step.ops[flip.op].inputs[0]].shape[-1])


def replay(flip: Flip | None = None) -> list[SegmentSide]:
    """Every segment of unit (0, 0) as one side replays it (`flip`: the cheat it makes)."""
    spec, ds, table = job()
    trainer = Trainer(spec, ds, 0, 0, "cpu")
    return [SegmentSide(trainer, table, flip) for _ in range(STEPS_PER_UNIT // INTERVAL)]


@cache
def honest() -> list[SegmentSide]:
    return replay()


def work_of(sides: list[SegmentSide], author: str = SOLVER) -> Work:
    """What a solver (`author`) commits: each segment's start and end state roots and its loss transcript."""
    return Work([(s.roots[0], s.roots[-1], s.transcript_hash(author)) for s in sides])


def submit(p: Protocol, spec: JobSpec | None = None, table: StepTable | None = None) -> int:
    """Submit the job of `spec` with its step `table` (the test job's by default)."""
    if spec is None or table is None:
        spec, _, table = job()
    return p.submit(p.accounts[1], stepsPerUnit=spec.steps_per_unit, checkpointInterval=spec.checkpoint_interval,
                    stepsRoot=table.root(), collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)


def rejected(p: Protocol, work: Work, segment: int, unit_id: int = 1, spec: JobSpec | None = None,
             table: StepTable | None = None, submitted: bool = False) -> tuple[int, LocalAccount]:
    """The solver (account 2) commits `work` (to a job it submits unless `submitted`); the validator drawn for
    `segment` rejects it: (dispute id, validator)."""
    if not submitted:
        submit(p, spec, table)
    claim_and_commit(p, unit_id, p.accounts[2], work)
    validators = p.unit(unit_id)["validators"]
    va = next(v for i, v in enumerate(validators) if p.segment_of(unit_id, i) == segment)
    commit_verdicts(p, unit_id, {va: (False, keccak(b"replayed"))})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, unit_id, va, False, keccak(b"replayed"), work)
    return p.unit(unit_id)["disputeId"], p.by_address(va)


@dataclass
class GamePlay:
    """What a segment game cost: moves and gas per side over both games."""

    dispute_id: int
    step: int | None = None
    step_game: Played | None = None
    moves: dict[str, int] = field(default_factory=lambda: {"claimant": 0, "counter": 0})
    gas: dict[str, int] = field(default_factory=lambda: {"claimant": 0, "counter": 0})
    calls: dict[str, int] = field(default_factory=dict)  # gas of the last call of each named move
    deciding_gas: int = 0  # the step game's deciding move

    def count(self, side: str, receipt: Any, name: str = "") -> Any:
        self.moves[side] += 1
        self.gas[side] += int(receipt["gasUsed"])
        if name:
            self.calls[name] = int(receipt["gasUsed"])
        return receipt

    def totals(self) -> tuple[int, int]:
        sg = self.step_game
        moves = sum(self.moves.values()) + (sum(sg.moves.values()) if sg else 0)
        gas = sum(self.gas.values()) + (sum(sg.gas.values()) if sg else 0)
        return moves, gas


def stage(p: Protocol, did: int) -> int:
    return int(p.game.functions.disputeOf(did).call()[0])


def leaf(work: Work, segment: int) -> tuple[Any, ...]:
    """`ISegmentGame.SegmentLeaf` of `segment` of the unit's checkpoint root (the counter opens it)."""
    from tests.contracts.helpers import transcript_commit

    start, end, transcript = work.segments[segment]
    return start, end, transcript_commit(transcript), list(work.proof(segment))


def contest(p: Protocol, g: GamePlay, counter: tuple[LocalAccount, SegmentSide], work: Work, segment: int) -> Any:
    """The counter opens the disputed segment's leaf and posts its end position with its first bisection move."""
    return g.count("counter", p.tx(counter[0], p.game.functions.contest(
        g.dispute_id, leaf(work, segment), *counter[1].contest())), "contest")


def open_transcript(p: Protocol, g: GamePlay, claimant: tuple[LocalAccount, SegmentSide], author: str = SOLVER,
                    partial_proof: tuple[bytes, ...] = ()) -> Any:
    """The claimant opens its transcript (by `author`) with its answer to the counter's first move."""
    _, pending = p.game.functions.pendingOf(g.dispute_id).call()
    return g.count("claimant", p.tx(claimant[0], p.game.functions.openTranscript(
        g.dispute_id, *claimant[1].open_transcript(author, pending, partial_proof))), "openTranscript")


def bisect_steps(p: Protocol, g: GamePlay, claimant: tuple[LocalAccount, SegmentSide],
                 counter: tuple[LocalAccount, SegmentSide]) -> int:
    """Both sides bisect the segment's steps with their own roots; the step it ends on."""
    sides = {claimant[0].address: ("claimant", *claimant), counter[0].address: ("counter", *counter)}
    while stage(p, g.dispute_id) == STEPS:
        lo, hi, *_ = p.game.functions.stepsOf(g.dispute_id).call()
        pending, root = p.game.functions.pendingOf(g.dispute_id).call()
        name, acct, side = sides[p.game.functions.deadline(g.dispute_id).call()[0]]
        m = side.move(lo, hi, root if pending else None)
        g.count(name, p.tx(acct, p.game.functions.moveSteps(g.dispute_id, m.at_pending, m.at_next)))
    g.step = int(p.game.functions.stepsOf(g.dispute_id).call()[0])
    return g.step


def play(p: Protocol, did: int, work: Work, segment: int, claimant: tuple[LocalAccount, SegmentSide],
         counter: tuple[LocalAccount, SegmentSide]) -> tuple[GamePlay, Any]:
    """A whole game, each side playing its own replay: the play and the settling receipt."""
    (ca, cs), (da, ds) = claimant, counter
    g = GamePlay(did)
    contest(p, g, counter, work, segment)
    open_transcript(p, g, claimant)
    t = bisect_steps(p, g, claimant, counter)
    rc = g.count("claimant", p.tx(ca, p.game.functions.revealStep(did, cs.reveal(t))), "revealStep")
    g.step_game = Played(p.events(rc, p.game, "StepRevealed")[0]["args"]["gameId"])
    g.deciding_gas = int(play_opened(p, p.step_game, g.step_game, (ca, cs.step_side(t)),
                                     (da, ds.step_side(t)))["gasUsed"])
    return g, p.tx(p.accounts[9], p.game.functions.settle(did))


def decided(p: Protocol, receipt: Any) -> dict[str, Any]:
    return dict(p.events(receipt, p.game, "GameDecided")[0]["args"])


def run_out(p: Protocol, did: int) -> dict[str, Any]:
    """Let the side to move run out of its clock, and time it out (a keeper, account 9): the decision."""
    _, due = p.game.functions.deadline(did).call()
    p.advance(due - p.now() + 1)
    return decided(p, p.tx(p.accounts[9], p.game.functions.timeout(did)))
