"""A role daemon's play in the dispute game (`contracts/SegmentGame.sol`, `contracts/StepGame.sol`).

The solver defends its units; the validator or challenger that disputed one attacks. A node learns of a game
from the pool's `UnitDisputed` (when `resolverOf(unit)` is the game and it is the unit's solver or the dispute's
opener), follows it in its state store, and on every tick makes whatever move is its to make, or, when the
other side's clock ran out, times it out, and settles a decided step game. Nobody acts by hand.

Every move is a pure function of the chain's state and this side's own replay of the disputed segment
(`proof/segment_side.py`: rebuilt from the committed start checkpoint when first needed, so a daemon
killed mid-game and restarted picks the game up from the chain). What the step game revealed (the op opened,
the children posted, the chunk, the dot element) is read back from the game's events.

A tick that fails (anything but a network error) is tried again before this side's clock runs out
(`clock_retry.py`), never held back by its job's quarantine: a game waits for nobody. That holds after a crash
inside a tick too, so a tick that kills the process each time is retried until its game is decided.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from eth_utils import to_checksum_address

from gensyn_py.chain.bisection import next_move
from gensyn_py.chain.decision_block import decision_block, head_lag
from gensyn_py.chain.segment_game import Stage
from gensyn_py.chain.step_game import Stage as StepStage
from gensyn_py.errors import ContractRevert, StorageError, TrainingError, VerificationError
from gensyn_py.node.clock_retry import ClockRetry
from gensyn_py.node.quarantine import is_network_error
from gensyn_py.proof.descent import RevealedChunk, sibling_path
from gensyn_py.proof.onchain_trace import OpOpening
from gensyn_py.proof.step_side import CONTEST, StepSide

if TYPE_CHECKING:
    from gensyn_py.chain.events import EventRecord
    from gensyn_py.chain.segment_game import SegmentGame
    from gensyn_py.chain.step_game import StepGame
    from gensyn_py.node.role import NodeDaemon
    from gensyn_py.proof.commitment import Manifest
    from gensyn_py.proof.segment_side import Flip, SegmentSide
    from gensyn_py.proof.step_table import StepTable
    from gensyn_py.train.trainer import Trainer
    from gensyn_py.types import Unit

# A move that lost a race (the other side or a keeper moved first, or time ran out): look again next tick.
RACES = frozenset({"NotYourTurn", "WrongStage", "ClockRunning", "ClockExpired", "BisectionDone", "StepGameRunning"})

FlipFor = Callable[["Unit"], "Flip | None"]


class GamePlayer:
    """Plays `node`'s side of every game it is party to. `flip_for` (a cheating solver, in the simulator) gives the
    cheat the node committed for a unit, so that it defends its own work."""

    def __init__(self, node: NodeDaemon, flip_for: FlipFor | None = None) -> None:
        self.node = node
        self.flip_for = flip_for
        self._sides: dict[int, SegmentSide] = {}
        self._tables: dict[int, StepTable] = {}
        self._verified: set[int] = set()  # units whose entries of a published step table were checked
        # (game, id, stage, position) where this side found no legal move: it lets its clock run out there
        self._stuck: set[tuple[str, int, int, int]] = set()
        self._at = 0  # the block the decision being made reads
        # The block of this side's last move or keeper call: a decision reads no block before it (one that did would
        # see the move not yet made, and make it again).
        self._floor = 0
        # A failing tick is tried again before this side's clock runs out (`clock_retry.py`), not after the job's
        # quarantine backoff; `_due` holds each game's deadline for this side's move, where the last tick read one.
        self._retry = ClockRetry(node.poll_interval)
        self._due: dict[int, int | None] = {}

    @cached_property
    def game(self) -> SegmentGame | None:
        """The deployment's segment game (None on a deployment that has none)."""
        protocol = self.node.protocol
        return protocol.segment_game(self.node.sender) if "SegmentGame" in protocol.names else None

    @cached_property
    def _lag(self) -> int:
        """Blocks below the head a decision reads (`chain/decision_block.py`: 1 on anvil, whose head reads tear)."""
        return head_lag(self.node.protocol.w3)

    @cached_property
    def steps(self) -> StepGame | None:
        protocol = self.node.protocol
        return protocol.step_game(self.node.sender) if "StepGame" in protocol.names else None

    def handlers(self) -> dict[str, Callable[[EventRecord], None]]:
        return {"UnitDisputed": self._note}

    def _note(self, record: EventRecord) -> None:
        if self.game is None:
            return
        unit_id, did = int(record.args["unitId"]), int(record.args["disputeId"])
        if self.node.pool.resolver_of(unit_id) != self.game.address:
            return  # the committee's
        unit = self.node.view.unit(unit_id)
        if self.node.address in (unit.solver, record.args["opener"]):
            self.node.follow("game", did, {"unit": unit_id, "segment": int(record.args["segmentIndex"])})
            self.node.log.info("game.followed", dispute=did, unit=unit_id, segment=int(record.args["segmentIndex"]))

    def tick(self) -> None:
        for did, info in self.node.followed("game"):
            if self.node.stopping:
                return
            if not self._retry.due(did):
                continue
            unit = self.node.view.unit(int(info["unit"]))
            self._due[did] = None
            try:
                self._play(did, unit)
            except Exception as exc:
                if is_network_error(exc) or self.node.stopping:
                    raise
                wait = self._retry.failed(did, self._time_left(did))
                self.node.log.warning("game.tick_failed", dispute=did, unit=unit.unit_id, job=unit.job_id,
                                      error=f"{type(exc).__name__}: {exc}"[:500], retry_in_s=round(wait, 2))
            else:
                self._retry.succeeded(did)

    def _time_left(self, did: int) -> float | None:
        """Seconds left on this side's clock in game `did`, where the failed tick read that it is this side's move."""
        due = self._due.get(did)
        if due is None:
            return None
        try:
            return float(due - self.node.view.next_time())
        except Exception:  # the chain is unreachable: the retry waits as if the clock were unknown
            return None

    # ---- the segment game ----

    def _play(self, did: int, unit: Unit) -> None:
        assert self.game is not None
        # INVARIANT: one decision reads one block, whole: a view read after the other side's move and one read
        # before it would make a move for an interval that no longer is (and the contract would take it as a
        # disagreement). On anvil the head's reads can tear, so the decision reads the block below it.
        at = self._at = decision_block(self.node.protocol.w3, self._lag)
        if at < self._floor:
            return  # this side's last move is not in a block this decision reads yet
        try:
            stage, _, segment, gid, winner = self.game.dispute_of(did, block=at)
        except ContractRevert as e:
            if e.name == "UnknownDispute":
                return  # opened in a block this decision does not read yet
            raise
        if stage == Stage.DECIDED:
            self.node.unfollow("game", did)
            self._sides.pop(did, None)
            self.node.log.info("game.decided", dispute=did, unit=unit.unit_id, won=winner == self.node.address)
            return
        if stage == Stage.STEP:
            return self._play_step(did, unit, segment, gid, at)
        mover, due = self.game.deadline(did, block=at)
        self._due[did] = due if mover == self.node.address else None
        if mover != self.node.address:
            if self.node.view.next_time() > due:
                self._send("timeout", self.game.timeout, did)
            return
        lo, hi, *_ = self.game.steps_of(did, block=at)
        where = ("segment", did, stage, lo)
        if where in self._stuck:
            return
        if stage == Stage.START:
            self._move(where, self.game.move, "proveStart", did, self._table(unit).start_proof(unit.shard))
            return
        if stage == Stage.CONTEST:
            _, manifest = self.node.content.committed(unit)
            if segment == 0 and manifest.state_hashes[0] != self._start(unit):
                # Not the round's agreed start: no replay from it can be right, so contest the start itself.
                self._move(where, self.game.move, "contestStart", did, _leaf(manifest, 0))
                return
            try:
                side = self._side(did, unit, segment)
            except (TrainingError, VerificationError, StorageError) as e:
                # The segment's committed start does not load: contest the earliest segment whose end differs.
                self.node.log.warning("game.unreplayable", dispute=did, segment=segment, error=str(e))
                found = self._earliest_divergence(did, unit, manifest)
                if found is None:
                    self._stuck.add(where)
                    self.node.log.warning("game.no_move", game="segment", id=did, move="contestSegment")
                    return
                earliest, side = found
                self._move(where, self.game.move, "contestSegment", did, earliest, _leaf(manifest, earliest),
                           *side.contest())
                return
            self._move(where, self.game.move, "contest", did, _leaf(manifest, segment), *side.contest())
            return
        side = self._side(did, unit, segment)
        if stage == Stage.TRANSCRIPT:
            author, partial_proof = self._author(unit, segment)
            counter_mid = self.game.pending_of(did, block=at)[1]  # the counter's first move, with its contest
            self._move(where, self.game.move, "openTranscript", did,
                       *side.open_transcript(author, counter_mid, partial_proof))
        elif stage == Stage.STEPS:
            pending, root = self.game.pending_of(did, block=at)
            m = side.move(lo, hi, root if pending else None)
            self._move(where, self.game.move, "moveSteps", did, m.at_pending, m.at_next)
        elif stage == Stage.REVEAL:
            self._move(where, self.game.move, "revealStep", did, side.reveal(lo))

    def _move(self, where: tuple[str, int, int, int], send: Callable[..., Any], fn: str, *args: Any) -> None:
        """Send this side's move `fn` (at `where`); a move refused for another reason than a lost race means this
        side's own work does not hold (a cheat it cannot defend): it is not tried again, and its clock runs out."""
        try:
            receipt = send(fn, *args)
        except ContractRevert as e:
            if e.name in RACES:
                return
            self._stuck.add(where)
            self.node.log.warning("game.no_move", game=where[0], id=where[1], move=fn, reason=e.name)
            return
        self._floor = max(self._floor, int(receipt["blockNumber"]))
        self.node.log.info("game.move", game=where[0], id=where[1], move=fn, gas=int(receipt["gasUsed"]))

    def _author(self, unit: Unit, segment: int) -> tuple[str, list[bytes]]:
        """Who trained `segment` of this side's unit, and for a segment inherited from another solver the segment's
        path in the unit's on-chain partial root (the latest partial, whose first segments the unit resumed)."""
        _, m = self.node.content.committed(unit)
        author = to_checksum_address(m.author_of(segment, unit.solver))
        if author == to_checksum_address(unit.solver):
            return author, []
        segments = self.node.pool.partial_of(unit.unit_id).segments
        return author, list(m.prefix(segments).proof(segment)) if segment < segments else []

    def _table(self, unit: Unit) -> StepTable:
        """The unit's job's step table, once per job: the one its requester published (each unit's entries checked
        before its first game), or built (a pure function of the spec and the dataset)."""
        from gensyn_py.proof.step_table import step_table

        content = self.node.content
        spec = content.spec(unit.job_id)
        if unit.job_id not in self._tables:
            published = None if spec.step_table is None else \
                content.published_table(unit.job_id, self.node.pool.step_table(unit.job_id)[0])
            self._tables[unit.job_id] = published or step_table(spec, content.dataset(unit.job_id))
        table = self._tables[unit.job_id]
        if spec.step_table is not None and unit.unit_id not in self._verified:
            from gensyn_py.proof.published_table import verify_unit

            # A published table is checked unit by unit: the entries this game will be judged by.
            verify_unit(table, spec, content.dataset(unit.job_id), unit.round, unit.shard)
            self._verified.add(unit.unit_id)
        return table

    def _start(self, unit: Unit) -> bytes:
        """The state root a unit's segment 0 must start from: its shard's round-0 start, or a later round's agreed
        weights as every validator loads them (`proof/replay.trainer_at_checkpoint`)."""
        if unit.round == 0:
            return self._table(unit).starts[unit.shard]
        from gensyn_py.proof.state import state_hash

        return state_hash(self._unit_start(unit).state_dict())

    def _unit_start(self, unit: Unit) -> Trainer:
        """A trainer at the unit's start: its shard at step 0 of its round, from the round's agreed weights."""
        from gensyn_py.train.trainer import Trainer

        content = self.node.content
        return Trainer(content.spec(unit.job_id), content.dataset(unit.job_id), unit.round, unit.shard, "cpu",
                       content.start_weights(unit.job_id, unit.round, unit.shard))

    def _earliest_divergence(self, did: int, unit: Unit, manifest: Manifest) -> tuple[int, SegmentSide] | None:
        """The first segment of the unit whose committed end this side's own replay, from the unit's start, does
        not reach, with this side's replay of it (kept as the game's side); None when every end agrees."""
        from gensyn_py.proof.segment_side import SegmentSide

        trainer = self._unit_start(unit)
        for j in range(manifest.num_segments):
            side = SegmentSide(trainer, self._table(unit))  # replays segment j; the trainer ends at its end
            if side.roots[-1] != manifest.state_hashes[j + 1]:
                self._sides[did] = side
                return j, side
        return None

    def _side(self, did: int, unit: Unit, segment: int) -> SegmentSide:
        """This side's replay of the disputed segment, from the committed start checkpoint."""
        side = self._sides.get(did)
        if side is None:
            from gensyn_py.proof.replay import trainer_at_checkpoint
            from gensyn_py.proof.segment_side import SegmentSide

            content = self.node.content
            spec, dataset = content.spec(unit.job_id), content.dataset(unit.job_id)
            _, m = content.committed(unit)
            trainer = trainer_at_checkpoint(spec, dataset, self.node.store, m, segment, "cpu",
                                            content.start_weights(unit.job_id, unit.round, unit.shard))
            flip = self.flip_for(unit) if self.flip_for is not None else None
            side = self._sides[did] = SegmentSide(trainer, self._table(unit), flip)
            self.node.log.info("game.replayed", dispute=did, unit=unit.unit_id, segment=segment)
        return side

    # ---- the step game ----

    def _play_step(self, did: int, unit: Unit, segment: int, gid: int, at: int) -> None:
        assert self.game is not None and self.steps is not None
        decided, _ = self.steps.result_of(gid, block=at)
        if decided:
            self._send("settle", self.game.settle, did)
            return
        stage, lo, hi, agreed, mine, _ = self.steps.game_of(gid, block=at)
        mover, due = self.steps.deadline(gid, block=at)
        self._due[did] = due if mover == self.node.address else None
        if mover != self.node.address:
            if self.node.view.next_time() > due:
                self._send("step_timeout", self.steps.timeout, gid)
            return
        where = ("step", gid, stage, lo)
        if where in self._stuck:
            return
        t = self.game.steps_of(did, block=at)[0]
        side = self._side(did, unit, segment).step_side(t)
        fn, args = self._step_move(gid, stage, lo, hi, agreed, mine, side, unit.solver, at)
        if fn is None:
            self._stuck.add(where)
            self.node.log.warning("game.no_move", game="step", id=gid, stage=stage)
            return
        self._move(where, self.steps.move, fn, gid, *args)

    def _step_move(self, gid: int, stage: int, lo: int, hi: int, agreed: bytes, mine: bytes, side: StepSide,
                   claimant: str, at: int) -> tuple[str | None, tuple[Any, ...]]:
        """This side's move at `stage` of step game `gid`, from the chain as of block `at`: (function, arguments
        after the game id). The claimant is the unit's solver."""
        assert self.steps is not None
        if stage == StepStage.TRACE:
            return "contestTrace", side.contest()
        if stage == StepStage.OPS:
            is_pending, root = self.steps.pending_of(gid, block=at)
            m = side.move(lo, hi, root if is_pending else None)
            return "moveOps", (m.at_pending, m.at_next)
        if stage == StepStage.OPEN_OP:
            return "openOp", (side.open_op(lo).as_arg(), side.reveal_output(lo))
        opened = self._opened(gid)
        i = opened.index
        if stage in (StepStage.REFUTE, StepStage.DESCEND):
            chunk = self._last(gid, "ChunkRevealed")
            if stage == StepStage.REFUTE and chunk is not None:
                r = side.refute_chunk(opened, self._revealed(gid, chunk, claimant))
            elif stage == StepStage.REFUTE:
                r = side.refutation(opened)
            else:
                r = CONTEST
            if r is None:
                return None, ()
            if r == CONTEST:
                level, index, _, left, right = self.steps.descent_of(gid, block=at)
                return "descend", tuple(side.descend(i, level, index, (left, right)))
            return r.function, tuple(r.args)
        if stage == StepStage.REVEAL_CHUNK:
            _, index, _, _, _ = self.steps.descent_of(gid, block=at)
            return "revealChunk", (side.chunk(i, index),)
        if stage in (StepStage.ROW_ANSWER, StepStage.ROW_CHALLENGE):
            return self._row_move(gid, stage, opened, side, claimant)
        challenge = self._last(gid, "DotChallenged")
        assert challenge is not None, f"step game {gid} has no dot challenge"
        element = int(challenge["element"])
        # On any of the counter's turns once the claimant answered: block exponents below the rule's lose first.
        answer = self._last(gid, "DotAnswered") if self.node.address != claimant else None
        if answer is not None:
            r = side.block_refutation(opened, element, (int(answer["blockA"]), int(answer["blockB"])))
            if r is not None:
                return r.function, tuple(r.args)
        if stage == StepStage.DOT_ANSWER:
            nf = side.non_finite(i, element)
            if nf is not None:
                return "declareNonFinite", nf
            return "answerDot", side.dot_answer(i, element, bytes(challenge["atMid"]))
        if stage == StepStage.DOT_BISECT:
            is_pending, root = self.steps.pending_of(gid, block=at)
            m = next_move(lo, hi, root if is_pending else None, side.dot_positions(i, element))
            return "moveDot", (m.at_pending, m.at_next)
        if stage == StepStage.DOT_STEP:
            assert answer is not None
            prev, cur = (int.from_bytes(w, "big", signed=True) for w in (agreed, mine))
            return "refuteDotStep", (side.dot_step(opened, element, lo, prev, cur,
                                                   (int(answer["blockA"]), int(answer["blockB"]))),)
        return None, ()  # DOT_CHALLENGE with the rule's block exponents: the challenge was unfounded

    def _row_move(self, gid: int, stage: int, opened: OpOpening, side: StepSide, claimant: str
                  ) -> tuple[str | None, tuple[Any, ...]]:
        """A row maximum's witness stages: the claimant shows an entry of the disputed row that is its committed
        maximum (``answerRow``); the counter shows a larger one, or a NaN, against the chunk the claimant revealed
        (``refuteRow``)."""
        challenge = self._last(gid, "RowChallenged")
        assert challenge is not None, f"step game {gid} has no row challenge"
        element = int(challenge["element"])
        if stage == StepStage.ROW_ANSWER:
            r = side.row_answer(opened, element)
        else:
            chunk = self._last(gid, "ChunkRevealed")
            assert chunk is not None, f"step game {gid} has no revealed chunk"
            r = side.row_refutation(opened, self._revealed(gid, chunk, claimant), element)
        return (None, ()) if r is None else (r.function, tuple(r.args))

    def _logs(self, gid: int, event: str, **match: Any) -> list[dict[str, Any]]:
        assert self.steps is not None
        contract = self.node.protocol["StepGame"]
        logs = getattr(contract.events, event)().get_logs(
            from_block=int(self.node.protocol.deployment.get("block", 0)), to_block=self._at,
            argument_filters={"gameId": gid, **match})
        return [dict(e["args"]) for e in logs]

    def _last(self, gid: int, event: str) -> dict[str, Any] | None:
        logs = self._logs(gid, event)
        return logs[-1] if logs else None

    def _opened(self, gid: int) -> OpOpening:
        op = self._last(gid, "OpOpened")
        assert op is not None, f"step game {gid} has no opened op"
        o = op["op"]  # a struct: a mapping by field name, or a tuple in field order

        def field(x: Any, name: str, n: int) -> Any:
            return x[name] if isinstance(x, Mapping) else x[n]

        inputs = tuple((int(field(x, "id", 0)), bytes(field(x, "root", 1))) for x in field(o, "inputs", 3))
        return OpOpening(int(field(o, "index", 0)), bytes(field(o, "codeHash", 1)), bytes(field(o, "attrsHash", 2)),
                         inputs, bytes(field(o, "outputRoot", 4)), tuple(bytes(p) for p in field(o, "proof", 5)))

    def _revealed(self, gid: int, chunk: dict[str, Any], claimant: str) -> RevealedChunk:
        """The chunk the claimant revealed, with its path from the children the claimant posted."""
        assert self.steps is not None
        _, _, chunks, _, _ = self.steps.descent_of(gid, block=self._at)
        posted = {(int(e["level"]), int(e["index"])): (bytes(e["left"]), bytes(e["right"]))
                  for e in self._logs(gid, "Children", mover=claimant)}
        index = int(chunk["index"])
        return RevealedChunk(index, bytes(chunk["chunk"]), sibling_path(posted, index, chunks))

    def _send(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """A keeper's call (a timeout, a settlement): losing the race to the other side or a keeper is expected."""
        try:
            receipt = fn(*args)
        except ContractRevert as e:
            if e.name in RACES or e.name in ("UnknownGame", "DisputeClosed"):
                return
            raise
        self._floor = max(self._floor, int(receipt["blockNumber"]))
        self.node.log.info("game.keeper", call=what, args=list(args))


def _leaf(manifest: Manifest, segment: int) -> tuple[Any, ...]:
    """`ISegmentGame.SegmentLeaf` of `segment` in the unit's checkpoint root, from its manifest."""
    return (manifest.state_hashes[segment], manifest.state_hashes[segment + 1], manifest.transcript_commits[segment],
            list(manifest.proof(segment)))
