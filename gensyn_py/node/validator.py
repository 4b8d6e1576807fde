"""The validator daemon: replays the segments it is drawn for, commit-reveals verdicts, sits on committees.

Verdicts. For each draw naming this node, it replays its segment (or
recomputes an aggregation), keeps the verdict, the transcript hash and a fresh
salt in its state *before* sending the sealed commit, then reveals once
reveals open. Accepting needs the transcript hash, which only a replay yields:
that is the protocol's answer to the verifier's dilemma. A lazy validator
(`sim/dishonest.py`) accepts without replaying: it cannot know the
transcript, so its reveal is refused and it is penalised as a no-show.

Unavailable data. Before replaying, it fetches the manifest, its segment's
start checkpoint and the final checkpoint (the model). If one is missing it
seals "unavailable" (a reject whose transcript is `UNAVAILABLE_MARK`) and
reveals it without a proof; once the solver answers on-chain it fetches,
replays and reveals its real verdict (`proof/availability.py`).

Committees. When a dispute's round seats it, it replays the disputed segment,
keeps its vote and a fresh salt in its state, seals the vote, and reveals it
once every member sealed or the commit phase ended (a restarted daemon reveals
the vote it kept). It also draws rounds and resolves them: a round without a
decision escalates to a larger committee, so it keeps following the dispute.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from eth_abi import encode

from gensyn_py.chain.committee import vote_hash
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.errors import ContractRevert, VerificationError
from gensyn_py.node.daemon import Handler
from gensyn_py.node.progress import Board, board, replay_bar
from gensyn_py.node.role import NodeConfig, NodeDaemon
from gensyn_py.proof.availability import leaf_of, missing_data
from gensyn_py.proof.replay import Verdict
from gensyn_py.proof.verify import check_segment
from gensyn_py.types import (
    ROLE_VALIDATOR,
    UNAVAILABLE_MARK,
    VERDICT_ANSWERED,
    Dispute,
    SegmentLeaf,
    Unit,
    UnitStatus,
    Vote,
)

if TYPE_CHECKING:
    from gensyn_py.chain.events import EventRecord

DONE_STATES = (UnitStatus.FINAL, UnitStatus.CANCELLED, UnitStatus.OPEN, UnitStatus.ASSIGNED, UnitStatus.VOIDED)


def _verdict_key(unit_id: int, epoch: str) -> str:
    """Where the sealed verdict of a draw (`epoch`: the seed's first 8 bytes, hex) is kept, and the key of its
    replay in the background."""
    return f"verdict:{unit_id}:{epoch}"


def verdict_hash(unit_id: int, validator: str, accept: bool, transcript: bytes, salt: bytes) -> bytes:
    """The sealed verdict: keccak256(abi.encode(unitId, validator, accept, transcriptHash, salt))."""
    return keccak256(encode(["uint256", "address", "bool", "bytes32", "bytes32"],
                            [unit_id, validator, accept, transcript, salt]))


class ValidatorDaemon(NodeDaemon):
    role_bits = ROLE_VALIDATOR
    role_name = "validator"

    progress: Board | None = None

    def __init__(self, config: NodeConfig, device: str | None = None, progress: Board | None = None) -> None:
        super().__init__(config)
        self.device = device
        self.progress = progress  # None: the process's board (bars on a terminal only)

    def replay(self, unit: Unit, segment: int) -> Verdict:
        """Replay `segment` of the unit (or recompute an aggregation) and judge it; on a terminal, with a bar."""
        bar = replay_bar(self.progress or board(), self.content, unit, [segment])
        verdict = bar.run(partial(check_segment, self.content, unit, segment, self.device))
        bar.done("accept" if verdict.accept else "reject")
        return verdict

    def handlers(self) -> dict[str, Handler]:
        return {"ValidatorsDrawn": self._note_drawn, "DisputeOpened": self._note_dispute}

    def _note_drawn(self, record: EventRecord) -> None:
        validators = list(record.args["validators"])
        if self.address not in validators:
            return
        slot = validators.index(self.address)
        self.follow("drawn", int(record.args["unitId"]), {
            "segment": int(record.args["segments"][slot]),
            "seed": "0x" + bytes(record.args["seed"]).hex(),
            "block": record.block_number,
        })

    def _note_dispute(self, record: EventRecord) -> None:
        self.follow("dispute", int(record.args["disputeId"]), {"unit": int(record.args["unitId"])})

    def tick(self) -> None:
        self.games.tick()  # a game's clock runs: its moves come first
        busy = self.background.busy()
        for unit_id, task in self.followed("drawn"):
            if self.stopping:
                return
            if busy and self._nothing_to_send(unit_id, task):
                continue
            unit = self.view.unit(unit_id)
            self.isolated(unit.job_id, unit_id, partial(self._verdict, unit, task))
        for dispute_id, info in self.followed("dispute"):
            if self.stopping:
                return
            job = self.view.unit(int(info["unit"])).job_id
            self.isolated(job, int(info["unit"]), partial(self._serve, dispute_id, info))
        self.claim_credit()

    # -- verdicts ----------------------------------------------------------------------------

    def _nothing_to_send(self, unit_id: int, task: dict[str, Any]) -> bool:
        """While a replay runs, the cycle visits only the units it may have to act on now: those whose replay is
        still to start, whose replay has ended, or whose sealed verdict is still to reveal. A unit whose replay
        waits or runs has nothing yet; one whose verdict is revealed waits for its challenge window to end, and
        its finalization may wait for the replay too (a reported "unavailable" is still followed: the answer has
        a deadline). Each visit reads the chain: polling every unit each cycle would take the CPU the replays run
        on."""
        epoch = str(task["seed"])[2:18]
        if self.background.running(_verdict_key(unit_id, epoch)):
            return True
        return self.state.is_done(("vreveal", unit_id, epoch)) and not self._reported(unit_id, epoch)

    def _verdict(self, unit: Unit, task: dict[str, Any]) -> None:
        seed = str(task["seed"])
        if unit.status is UnitStatus.VERIFIED:
            self.poke(unit)  # finalize after the challenge window: our fee is paid then
            return
        if unit.status in DONE_STATES or "0x" + unit.seed.hex() != seed:
            if unit.status is UnitStatus.FINAL:
                self.metrics.unit_done()
            self.unfollow("drawn", unit.unit_id)
            return
        epoch = seed[2:18]
        if self._reported(unit.unit_id, epoch):
            self._after_report(unit, task, epoch)
            return
        if unit.status is UnitStatus.DISPUTED:
            # Another validator's reject opened a dispute. A verdict we sealed is still revealed: the settlement
            # judges an unrevealed one (slashed if it was about the proven segment).
            sealed_ours = self.state.is_done(("vcommit", unit.unit_id, epoch))
            sealed = self._kept_verdict(unit.unit_id, epoch)
            if sealed_ours and sealed is not None and self.view.next_time() <= unit.reveal_deadline:
                self._reveal(unit, task, sealed, epoch)
            return
        if unit.status is not UnitStatus.COMMITTED:
            return
        sealed = self._sealed_verdict(unit, task, epoch)
        if sealed is None:
            return  # its replay runs off the cycle: sealed once it ends
        me = self.address
        key = ("vcommit", unit.unit_id, epoch)
        try:
            sent = self.once(
                key,
                lambda: self.pool.commit_verdict(unit.unit_id, bytes.fromhex(sealed["hash"][2:])),
                already_done=lambda: self.view.has_event("VerdictCommitted", int(task["block"]),
                                                         unitId=unit.unit_id, validator=me),
            )
        except ContractRevert as e:
            if e.name not in ("DeadlinePassed", "BadUnitStatus"):
                raise
            self.state.mark_done(key, detail=f"refused: {e.name}")
            self.log.warning("verdict.commit_refused", unit=unit.unit_id, reason=e.name)
            self.unfollow("drawn", unit.unit_id)
            return
        if sent:  # ours may have been the last sealed verdict: then reveals are open now, not at the next cycle
            unit = self.view.unit(unit.unit_id)
        now = self.view.next_time()
        reveals_open = unit.committed == len(unit.validators) or now > unit.commit_deadline
        if reveals_open and now <= unit.reveal_deadline:
            self._reveal(unit, task, sealed, epoch)
        elif now > unit.reveal_deadline:
            self.poke(unit)  # close verdicts: no-shows are penalised and skipped

    def _kept_verdict(self, unit_id: int, epoch: str) -> dict[str, Any] | None:
        kept = self.state.get(_verdict_key(unit_id, epoch))
        return None if kept is None else dict(kept)

    def _sealed_verdict(self, unit: Unit, task: dict[str, Any], epoch: str) -> dict[str, Any] | None:
        """The verdict for this draw, computed once and kept before anything is sent; None while its replay
        runs in the background (other units' commits and reveals go on meanwhile)."""
        kept = self._kept_verdict(unit.unit_id, epoch)
        if kept is not None:
            return kept
        key = _verdict_key(unit.unit_id, epoch)
        segment = int(task["segment"])
        judged = self.background.result(unit.job_id, unit.unit_id, "verdict", key,
                                        partial(self._judge, unit, segment))
        if judged is None:
            return None
        verdict, missing, seconds, ended = judged
        transcript = verdict.transcript_hash or bytes(32)
        salt = secrets.token_bytes(32)
        sealed = {
            "accept": verdict.accept, "transcript": "0x" + transcript.hex(), "salt": "0x" + salt.hex(),
            "segment": segment, "reason": verdict.reason, "unavailable": missing is not None,
            "hash": "0x" + verdict_hash(unit.unit_id, self.address, verdict.accept, transcript, salt).hex(),
        }
        self.state.put(key, sealed)
        self.metrics.verdict("accept" if verdict.accept else "unavailable" if missing else "reject")
        self.log.info("verdict", unit=unit.unit_id, segment=segment, accept=verdict.accept, reason=verdict.reason,
                      verify_s=round(seconds, 4), waited_s=round(time.monotonic() - ended, 4))
        return sealed

    def _judge(self, unit: Unit, segment: int) -> tuple[Verdict, str | None, float, float]:
        """Off the cycle: the segment's data fetched and replayed; what is missing if it cannot be; its seconds;
        when it ended (`time.monotonic`: the log tells how long the verdict then waited for the cycle)."""
        started = time.perf_counter()
        missing = self.missing(unit, segment)
        if missing is not None:  # nothing to replay or prove: seal "unavailable", the solver must answer
            verdict = Verdict(False, segment, UNAVAILABLE_MARK, f"unavailable: {missing}")
        else:
            verdict = self.replay(unit, segment)
        return verdict, missing, time.perf_counter() - started, time.monotonic()

    def _reveal(self, unit: Unit, task: dict[str, Any], sealed: dict[str, Any], epoch: str) -> None:
        key = ("vreveal", unit.unit_id, epoch)
        if self.state.is_done(key):
            return
        if sealed.get("unavailable"):
            self._report(unit, task, sealed, key)
            return
        commitment = self.view.commitment(unit.unit_id)
        if commitment is None:
            return
        try:
            manifest = self.content.manifest(commitment.manifest_cid)
        except VerificationError as e:  # a withheld manifest leaves nothing to prove; challengers step in
            self.log.error("verdict.unprovable", unit=unit.unit_id, error=str(e))
            return
        j = int(sealed["segment"])
        accept, transcript, salt = bool(sealed["accept"]), bytes.fromhex(sealed["transcript"][2:]), \
            bytes.fromhex(sealed["salt"][2:])
        leaf = leaf_of(manifest, j)
        if self._send_once(key, unit, task, "VerdictRevealed", "verdict.reveal_refused",
                           ("TranscriptMismatch", "DeadlinePassed", "BadUnitStatus"),
                           lambda: self.pool.reveal_verdict(unit.unit_id, accept, transcript, salt, leaf.start_hash,
                                                            leaf.end_hash, leaf.transcript_commit,
                                                            leaf.proof)):
            self.log.info("verdict.revealed", unit=unit.unit_id, accept=sealed["accept"])

    # -- unavailable data --------------------------------------------------------------------

    def _report(self, unit: Unit, task: dict[str, Any], sealed: dict[str, Any], key: tuple[Any, ...]) -> None:
        """Reveal the sealed "unavailable": no proof needed; the solver must answer within the reveal window."""
        salt = bytes.fromhex(sealed["salt"][2:])
        if self._send_once(key, unit, task, "UnavailabilityReported", "verdict.report_refused",
                           ("DeadlinePassed", "BadUnitStatus", "VerdictAlreadyGiven"),
                           lambda: self.pool.report_unavailable(unit.unit_id, salt)):
            self.log.info("verdict.reported_unavailable", unit=unit.unit_id, segment=sealed["segment"],
                          reason=sealed["reason"])

    def _send_once(self, key: tuple[Any, ...], unit: Unit, task: dict[str, Any], event: str, refused: str,
                   benign: tuple[str, ...], send: Callable[[], Any]) -> bool:
        """Send a verdict transaction once (done when our `event` for the unit is on-chain since the task's
        block). A revert named in `benign` (too late, already given) marks it done and logs `refused`.
        True when it went through."""
        me = self.address
        try:
            self.once(key, send, already_done=lambda: self.view.has_event(event, int(task["block"]),
                                                                         unitId=unit.unit_id, validator=me))
        except ContractRevert as e:
            if e.name not in benign:
                raise
            self.state.mark_done(key, detail=f"refused: {e.name}")
            self.log.warning(refused, unit=unit.unit_id, reason=e.name)
            return False
        return True

    def missing(self, unit: Unit, segment: int) -> str | None:
        """What of the unit's data cannot be fetched: manifest, `segment`'s start checkpoint, final checkpoint."""
        commitment = self.view.commitment(unit.unit_id)
        return None if commitment is None else missing_data(self.content.store, commitment.manifest_cid, segment)

    def _reported(self, unit_id: int, epoch: str) -> bool:
        kept = self._kept_verdict(unit_id, epoch)
        return bool(kept and kept.get("unavailable")) and self.state.is_done(("vreveal", unit_id, epoch))

    def _after_report(self, unit: Unit, task: dict[str, Any], epoch: str) -> None:
        """Our "unavailable" is on-chain: once the solver answers, fetch, replay and reveal the real verdict."""
        if unit.status is UnitStatus.COMMITTED and self.view.next_time() > unit.reveal_deadline:
            self.poke(unit)  # slashes a solver that left reports unanswered, or closes: whichever is due
        if unit.status not in (UnitStatus.COMMITTED, UnitStatus.DISPUTED) or self.address not in unit.validators:
            return
        slot = unit.validators.index(self.address)
        key = ("vreveal2", unit.unit_id, epoch)
        if self.state.is_done(key) or self.pool.verdict_state(unit.unit_id, slot) != VERDICT_ANSWERED:
            return
        answer = self.view.answer_of(unit.unit_id, slot, int(task["block"]))
        if answer is None:
            return
        segment = int(task["segment"])
        verdict = self._answered_verdict(unit, segment, epoch)
        if verdict is None:
            return  # its replay runs off the cycle
        leaf: SegmentLeaf = answer[0]  # proven on-chain against the committed root when the answer was taken
        transcript = bytes.fromhex(verdict["transcript"][2:])
        if self._send_once(key, unit, task, "VerdictRevealed", "verdict.reveal_refused",
                           ("TranscriptMismatch", "DeadlinePassed", "BadUnitStatus", "VerdictAlreadyGiven"),
                           lambda: self.pool.reveal_verdict(
                               unit.unit_id, bool(verdict["accept"]), transcript, bytes(32), leaf.start_hash,
                               leaf.end_hash, leaf.transcript_commit, list(leaf.proof))):
            self.log.info("verdict.revealed", unit=unit.unit_id, accept=verdict["accept"], after_answer=True)

    def _answered_verdict(self, unit: Unit, segment: int, epoch: str) -> dict[str, Any] | None:
        """The verdict after the answer, kept before it is sent: a replay, or a reject if the data is still
        missing (the answer's leaf proves it; the dispute's committee cannot fetch it either). None while the
        replay runs in the background."""
        key = f"verdict2:{unit.unit_id}:{epoch}"
        kept = self.state.get(key)
        if kept is not None:
            return dict(kept)
        judged = self.background.result(unit.job_id, unit.unit_id, "verdict2", key,
                                        partial(self._judge, unit, segment))
        if judged is None:
            return None
        verdict, missing, _, _ = judged
        if missing is not None:
            verdict = Verdict(False, segment, None, f"still unavailable: {missing}")
        out = {"accept": verdict.accept, "transcript": "0x" + (verdict.transcript_hash or bytes(32)).hex(),
               "reason": verdict.reason}
        self.state.put(key, out)
        self.log.info("verdict", unit=unit.unit_id, segment=segment, accept=verdict.accept, reason=verdict.reason,
                      after_answer=True)
        return out

    # -- committees --------------------------------------------------------------------------

    def _serve(self, dispute_id: int, info: dict[str, Any]) -> None:
        d = self.committee.get_dispute(dispute_id)
        if d.resolved:
            self.unfollow("dispute", dispute_id)
            return
        now = self.view.next_time()
        if not d.drawn:
            if now > d.commit_deadline:
                self.resolve_dispute(dispute_id)  # nobody drew this round: it ends (escalates) empty
            elif self.protocol.w3.eth.block_number > d.seed_block:
                try:
                    self.committee.draw_committee(dispute_id)  # a stale seed block is re-targeted, not drawn
                except ContractRevert as e:
                    if e.name not in ("TooEarly", "VotingClosed", "DisputeClosed"):
                        raise
            return
        if self.address in d.round_members:
            self._vote(d, int(info["unit"]), now)
            d = self.committee.get_dispute(dispute_id)
        if d.revealed >= len(d.round_members) or now > d.deadline:
            self.resolve_dispute(dispute_id)  # decides, or starts a larger round

    def _sealed_vote(self, d: Dispute, unit_id: int) -> dict[str, Any]:
        """This round's vote, decided by a replay and kept with its salt *before* the seal is sent, so a
        restarted daemon reveals the vote it sealed."""
        key = f"vote:{d.dispute_id}:{d.round}"
        kept = self.state.get(key)
        if kept is not None:
            return dict(kept)
        unit = self.view.unit(unit_id)
        found = self.view.dispute_of(unit_id)
        segment = found[1] if found else 0
        started = time.perf_counter()
        verdict = self.replay(unit, segment)
        salt = secrets.token_bytes(32)
        sealed = {"honest": verdict.accept, "salt": "0x" + salt.hex(), "segment": segment,
                  "hash": "0x" + vote_hash(d.dispute_id, self.address, verdict.accept, salt).hex()}
        self.state.put(key, sealed)
        self.metrics.dispute("vote_honest" if verdict.accept else "vote_fraud")
        self.log.info("dispute.vote", dispute=d.dispute_id, unit=unit_id, segment=segment, round=d.round,
                      solver_honest=verdict.accept, reason=verdict.reason,
                      verify_s=round(time.perf_counter() - started, 4))
        return sealed

    def _vote(self, d: Dispute, unit_id: int, now: int) -> None:
        """Seal this round's vote during the commit phase; reveal it once reveals open."""
        did, me = d.dispute_id, self.address
        sealed = self._sealed_vote(d, unit_id)
        ckey = ("dcommit", did, d.round)
        if not self.state.is_done(ckey):
            try:
                self.once(ckey, lambda: self.committee.commit_vote(did, bytes.fromhex(sealed["hash"][2:])),
                          already_done=lambda: self.committee.seat_of(did, me).committed)
            except ContractRevert as e:
                if e.name not in ("VotingClosed", "AlreadyCommitted", "DisputeClosed", "NotCommitteeMember"):
                    raise
                self.state.mark_done(ckey, detail=f"refused: {e.name}")
                self.log.warning("dispute.commit_refused", dispute=did, reason=e.name)
                return
            self.log.info("dispute.sealed", dispute=did, round=d.round)
            d = self.committee.get_dispute(did)
        reveals_open = d.committed >= len(d.round_members) or now > d.commit_deadline
        if not reveals_open or now > d.deadline:
            return
        rkey = ("dreveal", did, d.round)
        honest, salt = bool(sealed["honest"]), bytes.fromhex(sealed["salt"][2:])
        try:
            self.once(rkey, lambda: self.committee.reveal_vote(did, honest, salt),
                      already_done=lambda: self.committee.vote_of(did, me) is not Vote.NONE)
        except ContractRevert as e:
            if e.name == "RevealNotOpen":
                return  # a member's seal is still to come: next cycle
            if e.name not in ("VotingClosed", "AlreadyVoted", "DisputeClosed", "NotCommitteeMember", "NotCommitted"):
                raise
            self.state.mark_done(rkey, detail=f"refused: {e.name}")
            self.log.warning("dispute.reveal_refused", dispute=did, reason=e.name)
            return
        self.log.info("dispute.voted", dispute=did, unit=unit_id, round=d.round, solver_honest=honest)
