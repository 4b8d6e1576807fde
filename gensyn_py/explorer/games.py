"""A dispute game's page model (`/game/N`): the segment game's stages and the step game's, who moved how often at
what gas, the decision and the pool's settlement.

The segment game (`contracts/SegmentGame.sol`) numbers its disputes as the committee does, so its events are
indexed under `game` (refs.py); the step game it opens (`contracts/StepGame.sol`) has its own ids, under `step`,
and `StepRevealed` names both. Everything here comes from the index: a move is a transaction, its sender and gas
from the receipts the indexer read. An event these pages do not know (a stage added to a game) is shown by name
and arguments like any other, and counts as a move of whoever sent it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from enum import IntEnum

from gensyn_py.chain.segment_game import Reason as SegmentReason
from gensyn_py.chain.step_game import Reason as StepReason
from gensyn_py.explorer.queries import (
    DECISIONS,
    Event,
    events_where,
    merged,
    outcome_label,
    ref_events,
    settlement,
    unit_job,
)
from gensyn_py.explorer.refs import ZERO

SEGMENT_GAME, STEP_GAME = "SegmentGame", "StepGame"
GAMES = frozenset({SEGMENT_GAME, STEP_GAME})


def _solidity_names(reasons: type[IntEnum]) -> tuple[str, ...]:
    """An enum's members by value as the contract spells them: WRONG_ELEMENT -> WrongElement."""
    return tuple("".join(w.capitalize() for w in r.name.split("_")) for r in sorted(reasons))


# `GameDecided.reason` of each game, by value: `ISegmentGame.Reason` and `IStepGame.Reason`, as the chain wrappers
# hold them (tests/contracts/test_explorer_index.py checks them against contracts/interfaces/).
REASONS = {SEGMENT_GAME: _solidity_names(SegmentReason), STEP_GAME: _solidity_names(StepReason)}
# A transaction whose only game events are decisions for these reasons is a call anyone may make (`timeout`,
# `settle`), not a move.
CALLS = frozenset({"Timeout", "StepGame"})
# Where a game stands after each of its events (an event not listed: "after <its name>").
STAGE_AFTER = {
    (SEGMENT_GAME, "DisputeOpened"): "the counter contests the segment",
    (SEGMENT_GAME, "SegmentOpened"): "segment opened",
    (SEGMENT_GAME, "Contested"): "the claimant opens its loss transcript",
    (SEGMENT_GAME, "TranscriptOpened"): "bisecting the segment's steps",
    (SEGMENT_GAME, "StepsMoved"): "bisecting the segment's steps",
    (SEGMENT_GAME, "StepNarrowed"): "the claimant reveals the step",
    (SEGMENT_GAME, "StepRevealed"): "step game: the counter contests the trace",
    (STEP_GAME, "GameOpened"): "step game: the counter contests the trace",
    (STEP_GAME, "TraceContested"): "step game: bisecting the step's ops",
    (STEP_GAME, "OpsMoved"): "step game: bisecting the step's ops",
    (STEP_GAME, "OpNarrowed"): "step game: the claimant opens the op",
    (STEP_GAME, "OpOpened"): "step game: the counter refutes the op or descends its output",
    (STEP_GAME, "OutputRevealed"): "step game: the counter refutes the op or descends its output",
    (STEP_GAME, "Children"): "step game: descending the op's output",
    (STEP_GAME, "ChunkNarrowed"): "step game: the claimant reveals the chunk",
    (STEP_GAME, "ChunkRevealed"): "step game: the counter refutes an element of the chunk",
    (STEP_GAME, "DotChallenged"): "step game: the claimant answers for the dot element",
    (STEP_GAME, "DotAnswered"): "step game: bisecting the dot element's multiply-adds",
    (STEP_GAME, "DotMoved"): "step game: bisecting the dot element's multiply-adds",
    (STEP_GAME, "MultiplyAddNarrowed"): "step game: the counter refutes the multiply-add",
    (STEP_GAME, "RowChallenged"): "step game: the claimant shows the row's maximum",
    (STEP_GAME, "RowAnswered"): "step game: the counter shows a larger entry",
    (STEP_GAME, "GameDecided"): "step game decided: the dispute is settled next",
    (SEGMENT_GAME, "GameDecided"): "decided and settled",
}


def reason_name(contract: str, reason: int) -> str:
    names = REASONS.get(contract, ())
    return names[reason] if 0 <= reason < len(names) else f"reason {reason}"


@dataclass(frozen=True)
class SideRow:
    """What one party sent to the games: moves (and their gas), and `timeout` / `settle` calls (and theirs)."""

    role: str  # "claimant", "counter", or "others"
    address: str | None
    moves: int
    gas: int
    calls: int
    calls_gas: int


@dataclass
class GameView:
    dispute_id: int
    unit_id: int | None
    job_id: int | None
    solver: str | None  # the claimant
    opener: str | None  # the counter
    segment: int | None
    step_games: list[int]
    stage: str
    outcome: str  # Open, or the pool's outcome: Solver Honest / Solver Fraud / No Quorum
    winner: str | None
    reason: str | None  # the segment game's, and the step game's where it decided: "StepGame: WrongElement"
    narrowed: list[tuple[str, str]]  # (what, where) in the order the game narrowed them
    sides: list[SideRow]
    events: list[Event]  # the games', the pool's opening and its settlement, in chain order
    payments: list[tuple[str, str, int]]  # (what, who, amount) of the pool's settlement

    @property
    def side_of(self) -> dict[str, str]:
        """{lowercase address: "claimant" | "counter"}."""
        out = {}
        if self.solver:
            out[self.solver.lower()] = "claimant"
        if self.opener:
            out[self.opener.lower()] = "counter"
        return out

    @property
    def winner_side(self) -> str | None:
        return self.side_of.get(self.winner.lower()) if self.winner else None


def _narrowed(events: list[Event], segment: int | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [] if segment is None else [("segment", str(segment))]
    for ev in events:
        a = ev.args
        if (ev.contract, ev.name) == (SEGMENT_GAME, "StepNarrowed"):
            out.append(("step", f"{a['step']} of the segment (unit step {a['unitStep']})"))
        elif (ev.contract, ev.name) == (STEP_GAME, "OpNarrowed"):
            out.append(("op", str(a["op"])))
        elif (ev.contract, ev.name) == (STEP_GAME, "ChunkNarrowed"):
            out.append(("output chunk", str(a["index"])))
        elif (ev.contract, ev.name) in ((STEP_GAME, "DotChallenged"), (STEP_GAME, "RowChallenged")):
            out.append(("output element", str(a["element"])))
        elif (ev.contract, ev.name) == (STEP_GAME, "MultiplyAddNarrowed"):
            out.append(("multiply-add", str(a["k"])))
    return out


def _is_call(ev: Event) -> bool:
    return ev.name == "GameDecided" and reason_name(ev.contract, int(ev.args["reason"])) in CALLS


def _sides(events: list[Event], solver: str | None, opener: str | None) -> list[SideRow]:
    """Per party: each transaction with a game event (but the opening, which is the pool's) once."""
    by_tx: dict[str, list[Event]] = {}
    for ev in events:
        if ev.contract in GAMES and ev.name != "DisputeOpened":
            by_tx.setdefault(ev.tx, []).append(ev)
    roles = {(solver or "").lower(): "claimant", (opener or "").lower(): "counter"}
    tally = {role: Counter[str]() for role in ("claimant", "counter", "others")}
    for evs in by_tx.values():
        kind = "calls" if all(_is_call(e) for e in evs) else "moves"
        count = tally[roles.get((evs[0].sender or "").lower(), "others")]
        count[kind] += 1
        count[f"{kind}_gas"] += evs[0].gas or 0  # the transaction's: every event of it carries the same
    addresses = {"claimant": solver, "counter": opener, "others": None}
    return [SideRow(role, addresses[role], c["moves"], c["moves_gas"], c["calls"], c["calls_gas"])
            for role, c in tally.items() if role != "others" or c]


def game_view(db: sqlite3.Connection, dispute_id: int) -> GameView | None:
    """The segment game's dispute `dispute_id`, with its step game's events, or None if the index has none."""
    own = ref_events(db, "game", [str(dispute_id)])
    if not own:
        return None
    step_games = sorted({int(e.args["gameId"]) for e in own if e.contract == SEGMENT_GAME and "gameId" in e.args})
    events = merged(own, ref_events(db, "step", [str(g) for g in step_games]))
    unit_id = solver = opener = segment = winner = reason = None
    outcome, stage = "Open", "opened"
    for ev in events:
        a = ev.args
        stage = STAGE_AFTER.get((ev.contract, ev.name), f"after {ev.name}") if ev.contract in GAMES else stage
        if (ev.contract, ev.name) == (SEGMENT_GAME, "DisputeOpened"):
            unit_id, solver, opener = int(a["unitId"]), str(a["solver"]), str(a["opener"])
        elif ev.name == "UnitDisputed":
            segment = int(a["segmentIndex"])
        elif (ev.contract, ev.name) == (SEGMENT_GAME, "SegmentOpened"):
            segment = int(a["segment"])
        elif (ev.contract, ev.name) == (SEGMENT_GAME, DECISIONS[SEGMENT_GAME]):
            outcome = outcome_label(int(a["outcome"]))
            winner = None if str(a["winner"]).lower() == ZERO else str(a["winner"])
            reason = reason_name(SEGMENT_GAME, int(a["reason"]))
    step_decided = [e for e in events if (e.contract, e.name) == (STEP_GAME, "GameDecided")]
    if step_decided and (reason is None or reason == "StepGame"):
        step_reason = reason_name(STEP_GAME, int(step_decided[-1].args["reason"]))
        reason = f"{reason}: {step_reason}" if reason else f"step game: {step_reason}"
    settled, payments = settlement(db, [e for e in events if (e.contract, e.name) == (SEGMENT_GAME, "GameDecided")])
    job_id = unit_job(db, unit_id) if unit_id is not None else None
    return GameView(dispute_id, unit_id, job_id, solver, opener, segment, step_games, stage, outcome, winner,
                    reason, _narrowed(events, segment), _sides(events, solver, opener), merged(events, settled),
                    payments)


def step_game_dispute(db: sqlite3.Connection, game_id: int) -> int | None:
    """The segment game's dispute that opened step game `game_id` (its `StepRevealed`), if any."""
    found = events_where(db, "e.contract = ? AND e.name = 'StepRevealed' AND (e.block, e.log_index) IN "
                             "(SELECT block, log_index FROM refs WHERE kind = 'step' AND ref = ?)",
                         (SEGMENT_GAME, str(game_id)))
    return int(found[0].args["disputeId"]) if found else None
