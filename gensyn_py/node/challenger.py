"""The challenger daemon: audits verified units inside their challenge window and disputes fraud.

Budget. For each verified unit it replays the segments the validators did
*not* check, at most `audit_fraction` of them (at least one) and at most
`max_segments` per unit, chosen with its own private randomness so a solver
cannot predict them. Aggregation units (one cheap segment) are always
recomputed. A failing segment is challenged at once, posting the bond; the
committee decides, and a won dispute credits the bond back plus a share of
the slashed stake.

Window. A challenge lands only inside the unit's challenge window, so the
audit replays a segment only while the window still has room for it
(`node/audit_budget.py`), in a private random order; what it had no time for
is logged (`audit.cut`), and an audit that ends after the window closed is
logged as late, never challenged on.

The audit's replays run off the cycle, on the daemon's background worker
(`node/background.py`): a long audit does not hold the moves of the dispute
games this node plays. The challenge itself is sent from the cycle.
"""

from __future__ import annotations

import math
import random
import secrets
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import ContractRevert
from gensyn_py.node.audit_budget import AuditBudget
from gensyn_py.node.daemon import Handler
from gensyn_py.node.progress import Board, ReplayBar, board, replay_bar
from gensyn_py.node.role import NodeConfig, NodeDaemon
from gensyn_py.proof.sampler import segments_for
from gensyn_py.proof.verify import check_segment
from gensyn_py.types import ROLE_CHALLENGER, Unit, UnitStatus

if TYPE_CHECKING:
    from gensyn_py.chain.events import EventRecord


@dataclass
class Audit:
    """One unit's audit: the segments still to replay (in private random order), each replayed one's verdict and
    seconds (stopping at the first failure), and those the window had no room for."""

    todo: list[int]
    until: float  # on `AuditBudget.clock`: when a replay must have ended for its challenge to land in the window
    bar: ReplayBar
    findings: list[dict[str, Any]] = field(default_factory=list)
    cut: list[int] = field(default_factory=list)


class ChallengerDaemon(NodeDaemon):
    role_bits = ROLE_CHALLENGER
    role_name = "challenger"
    progress: Board | None = None

    def __init__(self, config: NodeConfig, device: str | None = None, audit_fraction: float = 0.2,
                 max_segments: int = 4, progress: Board | None = None) -> None:
        if not 0 < audit_fraction <= 1 or max_segments < 1:
            raise ValueError("audit_fraction must be in (0, 1] and max_segments >= 1")
        super().__init__(config)
        self.device = device
        self.progress = progress  # None: the process's board (bars on a terminal only)
        self.audit_fraction = audit_fraction
        self.max_segments = max_segments
        self._rng = random.Random(secrets.randbits(128))
        self.budget = AuditBudget()
        self._audits: dict[str, Audit] = {}  # by `_key`: the audits under way

    def handlers(self) -> dict[str, Handler]:
        return {"UnitVerified": self._note_verified}

    def _note_verified(self, record: EventRecord) -> None:
        self.follow("audit", int(record.args["unitId"]), {"end": int(record.args["challengeEnd"])})

    def tick(self) -> None:
        self.games.tick()  # a game's clock runs: its moves come first
        now = self.view.next_time()  # read once: the units below only start or take replays
        for unit_id, _ in self.followed("audit"):
            if self.stopping:
                return
            unit = self.view.unit(unit_id)
            left = unit.deadline - now  # chain seconds left in the challenge window
            if unit.status is not UnitStatus.VERIFIED or left < 0:
                if self.isolated(unit.job_id, unit_id, partial(self._closed, unit)) is False:
                    continue  # its replay stops at the window's end: taken then
                self.unfollow("audit", unit_id)
                continue
            self.isolated(unit.job_id, unit_id, partial(self._audit, unit, left))
        for unit_id, dispute_id in self.followed("challenged"):
            d = self.committee.get_dispute(int(dispute_id))
            if d.resolved:
                self.unfollow("challenged", unit_id)
            elif self.view.next_time() > d.deadline:
                self.resolve_dispute(int(dispute_id))
        self.claim_credit()

    def plan(self, unit: Unit) -> list[int]:
        """The segments to replay: unchecked ones, within the budget, in private random order."""
        n = self.pool.num_segments(unit.unit_id)
        checked = set(segments_for(unit.seed, len(unit.validators), n)) if unit.drawn and unit.validators else set()
        unchecked = [j for j in range(n) if j not in checked]
        if unit.is_aggregation or not unchecked:
            return [0] if unit.is_aggregation else []
        k = min(self.max_segments, max(1, math.ceil(self.audit_fraction * len(unchecked))))
        return self._rng.sample(unchecked, k)  # in random order: those a short window cuts are random too

    def _same_class(self, unit: Unit) -> bool:
        """An exact unit is replayed bit for bit only on its solver's replay class: another class would find
        honest work different, and the contract refuses its challenge (`WrongReplayClass`)."""
        bound = self.view.unit_class(unit.unit_id)
        return bound is None or bound == self.registry.replay_class_of(self.address)

    @staticmethod
    def _key(unit: Unit) -> str:
        return f"audited:{unit.unit_id}:{unit.seed.hex()[:16]}"

    def _audit(self, unit: Unit, left: int) -> None:
        """In the cycle: move the unit's audit on (`left`: chain seconds left in its challenge window); once it
        has ended, log it and challenge a failing segment.

        Each segment is replayed as one work on the background worker (`node/background.py`), and a unit has
        one segment there at a time: the worker runs works in turn, so units verified together take turns
        instead of the first one's whole audit using up the others' windows. The dispute games this node plays
        keep their moves coming meanwhile; a failing segment is challenged from the cycle at once."""
        if not self._same_class(unit):
            self.unfollow("audit", unit.unit_id)
            return
        key = self._key(unit)
        if self.state.get(key) is not None:
            return
        audit = self._audits.get(key)
        if audit is None:
            segments = self.plan(unit)
            bar = replay_bar(self.progress or board(), self.content, unit, segments, "audit")
            audit = self._audits[key] = Audit(segments, self.budget.until(left), bar)
        if not self._took(unit, audit):
            return  # a segment queued or replaying
        failed = self._ended(unit, audit, late=False)
        if failed is not None:
            self._challenge(unit, failed, unit.seed.hex()[:16])

    def _took(self, unit: Unit, audit: Audit, more: bool = True) -> bool:
        """Take the segments replayed and queue the next (`more`; else the rest are cut): True once the audit has
        ended (every segment replayed or cut, or one failed)."""
        key = self._key(unit)
        while audit.todo:
            segment = audit.todo[0]
            work = (key, segment)
            if not more and not self.background.running(work) and not self.background.ended(work):
                audit.cut, audit.todo = list(audit.todo), []
                break
            found = self.background.result(unit.job_id, unit.unit_id, "audit", work,
                                           partial(self._replay, unit, segment, audit))
            if found is None:
                return False
            audit.todo.pop(0)
            if found.get("cut"):
                audit.cut, audit.todo = [segment, *audit.todo], []
            else:
                audit.findings.append(found)
                if not found["accept"]:
                    audit.todo = []
        return True

    def _replay(self, unit: Unit, segment: int, audit: Audit) -> dict[str, Any]:
        """On the worker: replay one segment if it still ends inside the window (else it is cut)."""
        kind = (unit.job_id, unit.is_aggregation)
        if not self.budget.fits(kind, audit.until):
            return {"segment": segment, "cut": True}
        started = self.budget.clock()
        verdict = audit.bar.run(partial(check_segment, self.content, unit, segment, self.device))
        seconds = self.budget.clock() - started
        self.budget.measured(kind, seconds)
        return {"segment": segment, "accept": verdict.accept, "reason": verdict.reason, "verify_s": seconds}

    def _closed(self, unit: Unit) -> bool:
        """The unit's window closed (or it left Verified): False while a segment of its audit is still queued or
        replaying; an audit that ends now is logged as late, never acted on."""
        audit = self._audits.get(self._key(unit))
        if audit is None:
            return True
        if not self._took(unit, audit, more=False):
            return False
        self._ended(unit, audit, late=True)
        return True

    def _ended(self, unit: Unit, audit: Audit, late: bool) -> int | None:
        """Log the ended audit and keep its findings in the state; the first failing segment, if any."""
        del self._audits[self._key(unit)]
        for f in audit.findings:
            self.log.info("audit", unit=unit.unit_id, segment=f["segment"], accept=f["accept"], reason=f["reason"],
                          verify_s=round(f["verify_s"], 4), late=late)
        if audit.cut:
            self.log.info("audit.cut", unit=unit.unit_id, replayed=len(audit.findings), cut=audit.cut,
                          reason="the challenge window ends before another replay would")
        self.state.put(self._key(unit), [{k: f[k] for k in ("segment", "accept", "reason")} for f in audit.findings])
        failed = next((f for f in audit.findings if not f["accept"]), None)
        if failed is not None:
            audit.bar.done(f"segment {failed['segment']} rejected" + (": too late to challenge" if late else
                                                                      ": challenging"))
            return None if late else int(failed["segment"])
        audit.bar.done(f"{len(audit.cut)} cut: the challenge window ends first" if audit.cut else "all accepted")
        return None

    def _challenge(self, unit: Unit, segment: int, epoch: str) -> None:
        try:
            self.once(("challenge", unit.unit_id, epoch),
                      lambda: self.pool.challenge(unit.unit_id, segment),
                      already_done=lambda: self.view.unit(unit.unit_id).challenger == self.address)
        except ContractRevert as e:
            if e.name not in ("BadUnitStatus", "DeadlinePassed"):
                raise
            self.log.warning("challenge.refused", unit=unit.unit_id, reason=e.name)
            return
        found = self.view.dispute_of(unit.unit_id)
        if found is not None:
            self.follow("challenged", unit.unit_id, found[0])
        self.metrics.dispute("opened")
        self.log.info("challenge.opened", unit=unit.unit_id, segment=segment)
