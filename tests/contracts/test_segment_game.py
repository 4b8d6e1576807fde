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

import copy
import math
from collections.abc import Callable
from functools import cache, cached_property
from typing import Any

import numpy as np
import pytest
from eth_account import Account
from eth_utils import keccak

from gensyn_py.proof.segment_side import Flip, SegmentSide
from gensyn_py.proof.step_side import StepSide
from tests.contracts.flows import challenge, claim_and_commit, commit_verdicts, honest_unit, reveal
from tests.contracts.helpers import E18, FINAL, OPEN, VERIFIED, Protocol, Work
from tests.contracts.helpers import SOLVER as SOLVER_ROLE
from tests.contracts.segment_game_play import (
    BROKEN_CHAIN,
    CONTEST,
    DECIDED,
    ENDS_AGREE,
    NO_QUORUM,
    REVEAL,
    SOLVER,
    SOLVER_FRAUD,
    SOLVER_HONEST,
    START,
    START_PROVEN,
    START_UNBOUND,
    STEP,
    STEP_GAME,
    STEPS,
    TIMEOUT,
    TRANSCRIPT,
    WRONG_AUTHOR,
    GamePlay,
    bisect_steps,
    contest,
    decided,
    honest,
    job,
    leaf,
    matmul_flip,
    open_transcript,
    play,
    rejected,
    replay,
    run_out,
    stage,
    submit,
    work_of,
)
from tests.contracts.step_game_play import Played, open_disputed
from tests.contracts.step_game_play import bisect as step_bisect
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
    assert list(sides[0].roots) == list(honest()[0].roots) and sides[1].roots[:2] == honest()[1].roots[:2]
    assert all(c != h for c, h in zip(sides[1].roots[2:], honest()[1].roots[2:], strict=True))
    return flip, sides


def cheat_disputed(p: Protocol) -> tuple[list[SegmentSide], Work, int, Any]:
    """The cheat's work committed, and segment 1 rejected by its validator: (sides, work, dispute id, validator)."""
    _, sides = cheat()
    work = work_of(sides)
    did, validator = rejected(p, work, segment=1)
    return sides, work, did, validator


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
    # The bound on moves, both games together: log2(steps) + log2(ops) + log2(elements) + 4.
    moves, gas = g.totals()
    trace = sides[1].trace(g.step)
    bound = (math.ceil(math.log2(INTERVAL)) + math.ceil(math.log2(len(trace.ops)))
             + math.ceil(math.log2(trace.values[flip.op].size)) + 4)
    assert moves <= bound, (moves, bound)
    assert gas < 5_000_000, gas
    # Decided is final: nobody moves, times out or settles it again.
    expect(p, "WrongStage", a[9], p.game.functions.settle(did))
    expect(p, "WrongStage", a[9], p.game.functions.timeout(did))



def test_a_wrong_partial_sum_inside_a_matmul_is_narrowed_to_one_integer_multiply_add(proto: Protocol) -> None:
    """The solver computes one element of the step's longest matmul from a wrong partial sum (its multiply-add k is
    off, every later one follows from it, and the element is that sum rounded), and trains on from there."""
    p, a = proto, proto.accounts
    t = CHEAT_STEP - INTERVAL
    flip, _, i, contraction = matmul_flip(honest()[1], t)
    k = contraction // 3
    sides = replay(flip)  # the claimant answers with the sums it computed (the flip carries them)
    work = work_of(sides)
    did, validator = rejected(p, work, segment=1)
    g, rc = play(p, did, work, 1, (a[2], sides[1]), (validator, honest()[1]))
    assert g.step == t and g.step_game is not None
    assert (g.step_game.op, g.step_game.multiply_add) == (i, k)  # down to the one wrong integer multiply-add
    out = decided(p, rc)
    assert (out["winner"], out["outcome"]) == (validator.address, SOLVER_FRAUD)
    assert p.unit(1)["status"] == OPEN
    p.check_conservation()
    trace = sides[1].trace(t)
    bound = (math.ceil(math.log2(INTERVAL)) + math.ceil(math.log2(len(trace.ops)))
             + math.ceil(math.log2(trace.values[i].size)) + math.ceil(math.log2(contraction)) + 4)
    assert g.totals()[0] <= bound, (g.totals()[0], bound)  # the bound, with log2(K) for the sum


# ---- an honest solver against a lying challenger ----


class LyingStep(StepSide):
    """A counter whose trace of the step is the honest one but for its root over every op: it disputes a step it
    cannot fault."""

    @cached_property
    def roots(self) -> list[bytes]:
        return [*super().roots[:-1], keccak(b"a trace nobody computed")]


class Liar(SegmentSide):
    """A challenger that disputes an honest segment with a made-up end state, its steps otherwise honest."""

    def __init__(self, honest_side: SegmentSide) -> None:
        self.__dict__.update({k: v for k, v in honest_side.__dict__.items() if k not in ("roots", "positions")})

    @cached_property
    def roots(self) -> list[bytes]:
        return [*self.states_roots()[:-1], keccak(b"an end state nobody reached")]

    def states_roots(self) -> list[bytes]:
        return SegmentSide.roots.func(self)  # type: ignore[attr-defined]

    def step_side(self, t: int) -> StepSide:
        return LyingStep(self.trace(t), self.states[t])


def test_a_challenger_that_disputes_an_honest_unit_loses_its_bond_and_the_solver_is_paid(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    work = work_of(honest())
    submit(p)
    claim_and_commit(p, 1, a[2], work)
    validators = p.unit(1)["validators"]
    verdicts = {v: (True, work.segments[p.segment_of(1, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, verdicts)
    for v, (acc, th) in verdicts.items():
        reveal(p, 1, v, acc, th, work)
    assert p.unit(1)["status"] == VERIFIED
    bonded, challenger_balance = stake(p, a[2]), p.token.functions.balanceOf(a[8].address).call()
    challenge(p, a[8], 1, 1)
    did = p.unit(1)["disputeId"]
    g = GamePlay(did)
    liar = Liar(honest()[1])
    contest(p, g, (a[8], liar), work, 1)
    open_transcript(p, g, (a[2], honest()[1]))
    t = bisect_steps(p, g, (a[2], honest()[1]), (a[8], liar))
    assert t == INTERVAL - 1  # the liar agrees on every state but the end
    rc = g.count("claimant", p.tx(a[2], p.game.functions.revealStep(did, honest()[1].reveal(t))))
    gid = p.events(rc, p.game, "StepRevealed")[0]["args"]["gameId"]
    expect(p, "StepGameRunning", a[9], p.game.functions.settle(did))
    played = Played(gid)
    claimant_step, liar_step = (a[2], honest()[1].step_side(t)), (a[8], liar.step_side(t))
    p.tx(a[8], p.step_game.functions.contestTrace(gid, *liar_step[1].contest()))
    step_bisect(p, p.step_game, played, claimant_step, liar_step)
    opened = open_disputed(p, p.step_game, played, claimant_step)
    assert liar_step[1].refutation(opened) is None  # its own trace agrees with the op it disputed
    mover, due = p.step_game.functions.deadline(gid).call()
    assert mover == a[8].address
    p.advance(due - p.now() + 1)
    p.tx(a[9], p.step_game.functions.timeout(gid))
    out = decided(p, p.tx(a[9], p.game.functions.settle(did)))
    assert (out["winner"], out["reason"], out["outcome"]) == (a[2].address, STEP_GAME, SOLVER_HONEST)
    # The solver keeps its stake and is paid; the challenger's bond is gone (to the solver), none of it refunded.
    assert stake(p, a[2]) == bonded
    assert p.unit(1)["status"] == FINAL
    assert p.pool.functions.credit(a[8].address).call() == 0
    assert p.token.functions.balanceOf(a[8].address).call() == challenger_balance - p.params["challengeBond"]
    assert p.pool.functions.credit(a[2].address).call() >= p.params["challengeBond"]
    p.check_conservation()


# ---- the loss transcript ----


def test_a_solver_whose_states_are_right_but_one_loss_is_not_is_convicted_on_the_loss_op(proto: Protocol) -> None:
    """A solver that commits a wrong loss for one step (one bit of the step's loss output flipped, nothing else: the
    loss feeds no state) is narrowed to that step by the positions, which bind each state to the losses before it,
    and to the step's loss op in the step game, where the contract recomputes it."""
    p, a = proto, proto.accounts
    loss_op = honest()[1].trace(CHEAT_STEP - INTERVAL).outputs["loss"]
    sides = replay(Flip(CHEAT_STEP, loss_op, 0, bit=3))
    assert [list(s.roots) for s in sides] == [list(h.roots) for h in honest()]  # every state the honest one
    assert sides[1].losses != honest()[1].losses
    work = work_of(sides)
    did, validator = rejected(p, work, segment=1)
    solver_stake = stake(p, a[2])
    g, rc = play(p, did, work, 1, (a[2], sides[1]), (validator, honest()[1]))
    assert g.step == CHEAT_STEP - INTERVAL and g.step_game is not None and g.step_game.op == loss_op
    out = decided(p, rc)
    assert (out["winner"], out["reason"], out["outcome"]) == (validator.address, STEP_GAME, SOLVER_FRAUD)
    assert stake(p, a[2]) < solver_stake and p.unit(1)["status"] == OPEN
    p.check_conservation()


def test_a_transcript_copied_from_another_solver_loses_to_its_author(proto: Protocol) -> None:
    """A solver that commits another solver's replay of the unit (the transcripts name that solver, and nothing
    backs them on-chain) cannot open them as its own: opening them as they are decides for the counter."""
    p, a = proto, proto.accounts
    work = work_of(honest(), author=a[3].address)
    did, validator = rejected(p, work, segment=1)
    g = GamePlay(did)
    contest(p, g, (validator, honest()[1]), work, 1)
    assert stage(p, did) == TRANSCRIPT
    _, pending = p.game.functions.pendingOf(did).call()
    own = honest()[1].open_transcript(a[2].address, pending)
    expect(p, "NotTranscript", a[2], p.game.functions.openTranscript(did, *own))  # not what the leaf commits to
    short = ((own[0][0], own[0][1][:-4], own[0][2]), *own[1:])
    expect(p, "NotTranscript", a[2], p.game.functions.openTranscript(did, *short))
    expect(p, "NotYourTurn", validator, p.game.functions.openTranscript(did, *own))
    solver_stake = stake(p, a[2])
    out = decided(p, open_transcript(p, g, (a[2], honest()[1]), author=a[3].address))
    assert (out["winner"], out["reason"], out["outcome"]) == (validator.address, WRONG_AUTHOR, SOLVER_FRAUD)
    assert stake(p, a[2]) < solver_stake and p.unit(1)["status"] == OPEN
    p.check_conservation()


def test_a_counter_whose_end_position_is_the_claimant_s_loses_at_the_transcript(proto: Protocol) -> None:
    """A validator that rejects an honest segment and contests it with its own (honest) replay has nothing to
    dispute: the claimant's transcript gives the same end position, and the counter loses its bond."""
    p, a = proto, proto.accounts
    work = work_of(honest())
    did, validator = rejected(p, work, segment=1)
    bonded = stake(p, a[2])
    g = GamePlay(did)
    contest(p, g, (validator, honest()[1]), work, 1)
    out = decided(p, open_transcript(p, g, (a[2], honest()[1])))
    assert (out["winner"], out["reason"], out["outcome"]) == (a[2].address, ENDS_AGREE, SOLVER_HONEST)
    assert stake(p, a[2]) == bonded and p.unit(1)["status"] == FINAL
    p.check_conservation()


def test_an_inherited_segment_s_transcript_is_opened_with_its_path_in_the_unit_s_partial(proto: Protocol) -> None:
    """Segment 0 was trained by a first solver, which published it as a partial commitment and timed out; the
    solver that resumed the unit commits it under the first solver's name. Its transcript opens with the segment's
    path in the on-chain partial root, and a contest of it by an honest replay has nothing to dispute."""
    p, a = proto, proto.accounts
    first = Account.from_key(keccak(b"the first solver"))
    p.w3.provider.make_request("anvil_setBalance", [first.address, hex(10**21)])  # type: ignore[arg-type]
    p.node(first, SOLVER_ROLE)
    submit(p)
    p.advance(p.params["claimWindow"])
    p.tx(first, p.pool.functions.claim(1))
    inherited = Work([work_of(honest(), author=first.address).segments[0], work_of(honest()).segments[1]])
    partial = Work(inherited.segments[:1])
    p.tx(first, p.pool.functions.commitPartial(1, partial.root, 1, "bafypartial"))
    p.advance(p.unit(1)["deadline"] - p.now() + 1)
    p.tx(a[9], p.pool.functions.timeoutClaim(1))
    did, validator = rejected(p, inherited, segment=0, submitted=True)
    g = GamePlay(did)
    contest(p, g, (validator, honest()[0]), inherited, 0)
    out = decided(p, open_transcript(p, g, (a[2], honest()[0]), author=first.address,
                                     partial_proof=tuple(partial.proof(0))))
    assert (out["winner"], out["reason"]) == (a[2].address, ENDS_AGREE)
    p.check_conservation()


def test_a_counter_that_cannot_replay_the_disputed_segment_contests_an_earlier_one(proto: Protocol) -> None:
    """A solver whose segment 0 ends in a state nobody reaches (a checkpoint that does not load, say), segment 1
    starting there: the validator drawn for segment 1 cannot replay it, so it contests segment 0 instead, whose
    end it disagrees with (`contestSegment`). The claimant's replay cannot reveal the last step into that end: it
    loses on time, and the fraud in segment 0 is a fraud in the unit."""
    p, a = proto, proto.accounts
    h = honest()
    garbage = keccak(b"a checkpoint that does not load")
    transcript = h[0].transcript_hash(SOLVER, end=garbage)
    work = Work([(h[0].roots[0], garbage, transcript), (garbage, *work_of(h).segments[1][1:])])
    did, validator = rejected(p, work, segment=1)
    g = GamePlay(did)
    expect(p, "NotInCheckpoints", validator, p.game.functions.contestSegment(did, 0, leaf(work, 1), *h[0].contest()))
    g.count("counter", p.tx(validator, p.game.functions.contestSegment(did, 0, leaf(work, 0), *h[0].contest())))
    assert p.game.functions.disputeOf(did).call()[2] == 0  # the game is over segment 0 now
    open_transcript(p, g, (a[2], h[0]))
    t = bisect_steps(p, g, (a[2], h[0]), (validator, h[0]))
    assert t == INTERVAL - 1  # the replays agree until the end nobody reaches
    expect(p, "StateMismatch", a[2], p.game.functions.revealStep(did, h[0].reveal(t)))
    out = run_out(p, did)
    assert (out["winner"], out["reason"], out["outcome"]) == (validator.address, TIMEOUT, SOLVER_FRAUD)
    assert p.unit(1)["status"] == OPEN
    p.check_conservation()


# ---- the segment's start ----


def test_a_segment_that_does_not_start_where_the_last_one_ended_is_refuted(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    _, sides = cheat()
    w = work_of(sides)
    broken = Work([w.segments[0], (keccak(b"a start of nowhere"), *w.segments[1][1:])])
    did, validator = rejected(p, broken, segment=1)
    expect(p, "NotYourTurn", a[2], p.game.functions.refuteStart(did, leaf(broken, 1), leaf(broken, 0)))
    expect(p, "WrongSegmentForStart", validator, p.game.functions.contestStart(did, leaf(broken, 1)))
    start, end, commit, proof = leaf(broken, 0)
    bad_previous = (start, keccak(b"x"), commit, proof)
    expect(p, "NotInCheckpoints", validator, p.game.functions.refuteStart(did, leaf(broken, 1), bad_previous))
    start, end, _, proof = leaf(broken, 1)
    bad_disputed = (start, end, bytes(32), proof)
    expect(p, "NotInCheckpoints", validator, p.game.functions.refuteStart(did, bad_disputed, leaf(broken, 0)))
    rc = p.tx(validator, p.game.functions.refuteStart(did, leaf(broken, 1), leaf(broken, 0)))
    out = decided(p, rc)
    assert (out["winner"], out["reason"], out["outcome"]) == (validator.address, BROKEN_CHAIN, SOLVER_FRAUD)
    assert p.unit(1)["status"] == OPEN
    p.check_conservation()


def test_a_contested_round_0_start_that_is_the_job_s_is_proven_and_the_counter_loses(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    work = work_of(honest())
    did, validator = rejected(p, work, segment=0)
    bonded = stake(p, a[2])
    expect(p, "WrongSegmentForStart", validator, p.game.functions.refuteStart(did, leaf(work, 0), leaf(work, 0)))
    start, end, commit, proof = leaf(work, 0)
    expect(p, "NotInCheckpoints", validator, p.game.functions.contestStart(did, (end, end, commit, proof)))
    p.tx(validator, p.game.functions.contestStart(did, leaf(work, 0)))
    assert stage(p, did) == START
    table = job()[2]
    expect(p, "NotYourTurn", validator, p.game.functions.proveStart(did, table.start_proof(0)))
    expect(p, "NotInStepTable", a[2], p.game.functions.proveStart(did, table.proof(0, 0, 0)))
    out = decided(p, p.tx(a[2], p.game.functions.proveStart(did, table.start_proof(0))))
    assert (out["winner"], out["reason"], out["outcome"]) == (a[2].address, START_PROVEN, SOLVER_HONEST)
    assert start == table.starts[0] and stake(p, a[2]) == bonded  # the solver keeps its stake
    p.check_conservation()


def test_a_unit_that_does_not_start_from_the_job_s_start_loses_its_contested_start(proto: Protocol) -> None:
    """A solver whose segment 0 starts elsewhere than the spec's seeded state (its training may replay bit for bit
    from there): the counter contests the start, which the solver cannot prove is the job's, and it loses on time."""
    p, a = proto, proto.accounts
    w = work_of(honest())
    elsewhere = Work([(keccak(b"weights from elsewhere"), *w.segments[0][1:]), w.segments[1]])
    did, validator = rejected(p, elsewhere, segment=0)
    p.tx(validator, p.game.functions.contestStart(did, leaf(elsewhere, 0)))
    table = job()[2]
    expect(p, "NotInStepTable", a[2], p.game.functions.proveStart(did, table.start_proof(0)))
    out = run_out(p, did)
    assert (out["winner"], out["reason"], out["outcome"]) == (validator.address, TIMEOUT, SOLVER_FRAUD)
    assert p.unit(1)["status"] == OPEN
    p.check_conservation()


def test_a_later_round_s_start_is_not_bound_so_contesting_it_ends_without_a_winner(proto: Protocol) -> None:
    """Round 1 starts from round 0's agreed weights, which the chain does not hold: a contested segment-0 start of a
    round-1 unit is decided without a winner (nobody slashed, the unit trained again)."""
    p, a = proto, proto.accounts
    spec = job()[0]
    segments = spec.steps_per_unit // spec.checkpoint_interval
    p.submit(a[1], rounds=2, stepsPerUnit=spec.steps_per_unit, checkpointInterval=spec.checkpoint_interval,
             stepsRoot=keccak(b"a two-round job's step table"), collateralPerUnit=100 * E18,
             maxPricePerUnit=100 * E18)
    unit = 1
    while p.unit(unit)["round"] == 0:  # round 0's training unit, and its aggregation where the job has one
        honest_unit(p, unit, a[2], Work.honest(1 if p.unit(unit)["shard"] == 2**32 - 1 else segments))
        unit += 1
    work = Work.honest(segments, b"round 1")
    claim_and_commit(p, unit, a[2], work)
    validators = p.unit(unit)["validators"]
    va = next(v for i, v in enumerate(validators) if p.segment_of(unit, i) == 0)
    commit_verdicts(p, unit, {va: (False, keccak(b"replayed"))})
    p.advance(p.params["verdictCommitWindow"] + 1)
    reveal(p, unit, va, False, keccak(b"replayed"), work)
    assert p.pool.functions.resolverOf(unit).call() == p.game.address
    did, validator, bonded = p.unit(unit)["disputeId"], p.by_address(va), stake(p, a[2])
    out = decided(p, p.tx(validator, p.game.functions.contestStart(did, leaf(work, 0))))
    assert (out["winner"], out["reason"], out["outcome"]) == (ZERO, START_UNBOUND, NO_QUORUM)
    assert stake(p, a[2]) == bonded and p.unit(unit)["status"] == OPEN
    p.check_conservation()


def test_a_chain_of_segments_that_holds_is_not_refuted(proto: Protocol) -> None:
    p = proto
    _, work, did, validator = cheat_disputed(p)
    expect(p, "NotRefuted", validator, p.game.functions.refuteStart(did, leaf(work, 1), leaf(work, 0)))


# ---- clocks ----


def idle_at(p: Protocol, did: int, work: Work, claimant: SegmentSide, counter: Any, validator: Any,
            until: int) -> None:
    """Play the cheat's game honestly up to stage `until`, where the side to move then idles."""
    a = p.accounts
    g = GamePlay(did)
    if until == CONTEST:
        return
    contest(p, g, (validator, counter), work, 1)
    if until == TRANSCRIPT:
        return
    open_transcript(p, g, (a[2], claimant))
    if until == STEPS:
        return  # the counter idles mid-bisection: the claimant answered its first move with the transcript
    t = bisect_steps(p, g, (a[2], claimant), (validator, counter))
    if until == REVEAL:
        return
    p.tx(a[2], p.game.functions.revealStep(did, claimant.reveal(t)))


@pytest.mark.parametrize(("until", "loser"),
                         [(CONTEST, "counter"), (TRANSCRIPT, "claimant"), (STEPS, "counter"), (REVEAL, "claimant")])
def test_a_side_that_runs_out_of_time_at_any_stage_loses(proto: Protocol, until: int, loser: str) -> None:
    p, a = proto, proto.accounts
    sides, work, did, validator = cheat_disputed(p)
    idle_at(p, did, work, sides[1], honest()[1], validator, until)
    assert stage(p, did) == until
    mover, _ = p.game.functions.deadline(did).call()
    assert mover == (a[2].address if loser == "claimant" else validator.address)
    expect(p, "ClockRunning", a[9], p.game.functions.timeout(did))
    out = run_out(p, did)
    winner = validator.address if loser == "claimant" else a[2].address
    assert (out["winner"], out["reason"]) == (winner, TIMEOUT)
    assert out["outcome"] == (SOLVER_FRAUD if loser == "claimant" else SOLVER_HONEST)
    p.check_conservation()


def test_the_step_game_s_own_clocks_end_a_dispute_only_through_settle(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    sides, work, did, validator = cheat_disputed(p)
    idle_at(p, did, work, sides[1], honest()[1], validator, STEP)
    assert stage(p, did) == STEP
    expect(p, "WrongStage", a[9], p.game.functions.timeout(did))  # the step game keeps the clocks now
    gid = p.game.functions.disputeOf(did).call()[3]
    mover, due = p.step_game.functions.deadline(gid).call()
    assert mover == validator.address  # the counter posts its trace root first
    p.advance(due - p.now() + 1)
    p.tx(a[9], p.step_game.functions.timeout(gid))  # the counter never moved in the step game
    out = decided(p, p.tx(a[9], p.game.functions.settle(did)))
    assert (out["winner"], out["outcome"]) == (a[2].address, SOLVER_HONEST)


# ---- the claimant's reveal binds its next state, entry by entry ----


def tampered(side: SegmentSide, t: int, change: Callable[[dict[str, Any]], dict[str, Any]]) -> SegmentSide:
    """`side` whose state after t steps is `change`d (its roots follow): a claimant that posts it in the bisection."""
    out = copy.copy(side)
    out.__dict__.pop("roots", None)
    out.__dict__.pop("positions", None)
    out.states = list(side.states)
    out.states[t] = change(dict(side.states[t]))
    return out


def _with(key: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(state: dict[str, Any]) -> dict[str, Any]:
        state[key] = value
        return state

    return change


def _without(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(state: dict[str, Any]) -> dict[str, Any]:
        del state[key]
        return state

    return change


TAMPERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "CarriedChanged": _with("rng", np.zeros(5056, np.uint8)),
    "WrongCursor": _with("cursor", np.array([0, 0, 7], np.int64)),
    "MissingKey": _without("rng"),
    "ExtraKey": _with("extra", np.zeros(3, np.float32)),
    "NotBound": _with("model/1.bias", np.zeros(16, np.float32)),
}


@pytest.mark.parametrize("error", sorted(TAMPERS))
def test_a_next_state_the_step_does_not_give_cannot_be_revealed(proto: Protocol, error: str) -> None:
    """A claimant whose state after the disputed step differs from the step's outputs, the cursor rule or the carried
    entries cannot reveal it: it can only run out of time."""
    p, a = proto, proto.accounts
    sides, work, did, validator = cheat_disputed(p)
    liar = tampered(sides[1], 2, TAMPERS[error])
    g = GamePlay(did)
    contest(p, g, (validator, honest()[1]), work, 1)
    open_transcript(p, g, (a[2], liar))
    t = bisect_steps(p, g, (a[2], liar), (validator, honest()[1]))
    assert t == 1 and stage(p, did) == REVEAL
    expect(p, error, a[2], p.game.functions.revealStep(did, liar.reveal(t)))


def _reveal_with(r: tuple[Any, ...], field: int, value: Any) -> tuple[Any, ...]:
    out = list(r)
    out[field] = value
    return tuple(out)


def test_a_reveal_that_does_not_hold_reverts_by_name(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    sides, work, did, validator = cheat_disputed(p)
    idle_at(p, did, work, sides[1], honest()[1], validator, REVEAL)
    t = int(p.game.functions.stepsOf(did).call()[0])
    r = sides[1].reveal(t)
    (_, keys, ops, _, proof, prior, nxt, _, _, opened, _, loss) = r
    z = bytes(32)

    def refused(name: str, bad: tuple[Any, ...]) -> None:
        expect(p, name, a[2], p.game.functions.revealStep(did, bad))

    expect(p, "NotYourTurn", validator, p.game.functions.revealStep(did, r))
    refused("NotInStepTable", _reveal_with(r, 3, keccak(b"another batch")))
    refused("NotInStepTable", _reveal_with(r, 4, [z] * len(proof)))
    refused("KeysUnsorted", _reveal_with(r, 1, [keys[1], keys[0], *keys[2:]]))
    refused("LengthMismatch", _reveal_with(r, 2, ops[:-1]))
    refused("StateMismatch", _reveal_with(r, 5, (prior[0], [z, *prior[1][1:]])))
    refused("KeysUnsorted", _reveal_with(r, 6, ([nxt[0][1], nxt[0][0], *nxt[0][2:]], nxt[1])))
    refused("LengthMismatch", _reveal_with(r, 9, opened[:-1]))
    refused("OpOutOfRange", _reveal_with(r, 7, max(ops) - 1))
    refused("OpOutOfRange", _reveal_with(r, 7, (1 << 24) + 1))  # more ops than a step game takes
    bad_path = [(*o[:5], [z] * len(o[5])) for o in opened]
    refused("NotInTrace", _reveal_with(r, 9, bad_path))
    # The losses: the ones before the step are the agreed position's, the step's own the claimant's position after
    # it, and the trace's loss op outputs exactly that loss.
    refused("StateMismatch", _reveal_with(r, 10, keccak(b"other losses")))
    other_loss = (int.from_bytes(loss, "little") ^ 1).to_bytes(4, "little")
    refused("StateMismatch", _reveal_with(r, 11, other_loss))
    loss_at = keys.index(keccak(b'["loss"]'))
    wrong_loss_op = [*opened[:loss_at], (*opened[loss_at][:4], keccak(b"x"), opened[loss_at][5]),
                     *opened[loss_at + 1:]]
    refused("NotBound", _reveal_with(r, 9, wrong_loss_op))
    p.tx(a[2], p.game.functions.revealStep(did, r))  # the true reveal goes through
    assert stage(p, did) == STEP
    expect(p, "WrongStage", a[2], p.game.functions.revealStep(did, r))


# ---- wiring and who may call ----


def test_the_game_takes_disputes_from_its_pool_only_and_is_wired_once(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    expect(p, "NotTaskPool", a[1], p.game.functions.openDispute(1, 0, 1, bytes(32), a[2].address, a[3].address))
    expect(p, "AlreadyWired", p.deployer, p.game.functions.wire(p.step_game.address))
    expect(p, "OwnableUnauthorizedAccount", a[1], p.game.functions.wire(p.step_game.address))
    expect(p, "UnknownDispute", a[1], p.game.functions.timeout(99))
    expect(p, "NotOpener", a[1], p.step_game.functions.open(a[2].address, a[3].address, bytes(32), bytes(32), 1,
                                                             bytes(32), keccak(b"x")))
    for pool, clock, name in ((p.pool.address, 0, "clock"), (p.pool.address, 86_401, "clock"), (ZERO, 60, "pool")):
        err = _deploy_error(p, "SegmentGame", pool, clock, p.deployer.address)
        assert (err.name, err.error_args["name"]) == ("InvalidGameParam", name)
    for clock in (0, 86_401):  # the step game keeps its clocks in uint32 seconds: a day at most
        err = _deploy_error(p, "StepGame", p.game.address, clock, ZERO, ZERO, ZERO)
        assert (err.name, err.error_args["clock"]) == ("InvalidClock", clock)
    assert p.game.functions.maxDuration().call() == 2 * (p.params["gameClock"] + p.params["stepGameClock"])
    assert p.pool.functions.longestExposure().call() >= p.game.functions.maxDuration().call()


def _deploy_error(p: Protocol, name: str, *args: Any) -> Any:
    """The decoded revert of deploying contract `name` with constructor arguments `args`."""
    art = p.artifacts[name]
    data = p.w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"]).constructor(*args).data_in_transaction
    res = p.w3.provider.make_request(
        "eth_call", [{"from": p.deployer.address, "data": data, "gas": hex(5_000_000)}, "latest"])  # type: ignore[arg-type]
    return p.errors.decode(res["error"]["data"])


def test_disputes_without_a_step_table_still_go_to_the_committee(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    p.submit(a[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)  # no step table
    assert p.pool.functions.resolverOf(1).call() == p.committee.address
    submit(p)
    units = p.pool.functions.nextUnitId().call()
    assert p.pool.functions.resolverOf(units - 1).call() == p.game.address


INTERVAL = 4
ZERO = "0x" + "00" * 20

