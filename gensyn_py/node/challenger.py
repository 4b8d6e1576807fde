"""The challenger daemon: audits verified units inside their challenge window and disputes fraud.

Budget. For each verified unit it replays the segments the validators did
*not* check, at most `audit_fraction` of them (at least one) and at most
`max_segments` per unit, chosen with its own private randomness so a solver
cannot predict them. Aggregation units (one cheap segment) are always
recomputed. A failing segment is challenged at once, posting the bond; the
committee decides, and a won dispute credits the bond back plus a share of
the slashed stake.

The audit's replays run off the cycle, on the daemon's background worker
(`node/background.py`): a long audit does not hold the moves of the dispute
games this node plays. The challenge itself is sent from the cycle.
"""

from __future__ import annotations

import math
import random
import secrets
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import ContractRevert
from gensyn_py.node.daemon import Handler
from gensyn_py.node.progress import Board, board, replay_bar
from gensyn_py.node.role import NodeConfig, NodeDaemon
from gensyn_py.proof.sampler import segments_for
from gensyn_py.proof.verify import check_segment
from gensyn_py.types import ROLE_CHALLENGER, Unit, UnitStatus

if TYPE_CHECKING:
    from gensyn_py.chain.events import EventRecord


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

    def handlers(self) -> dict[str, Handler]:
        return {"UnitVerified": self._note_verified}

    def _note_verified(self, record: EventRecord) -> None:
        self.follow("audit", int(record.args["unitId"]), {"end": int(record.args["challengeEnd"])})

    def tick(self) -> None:
        self.games.tick()  # a game's clock runs: its moves come first
        for unit_id, _ in self.followed("audit"):
            if self.stopping:
                return
            unit = self.view.unit(unit_id)
            if unit.status is not UnitStatus.VERIFIED or self.view.next_time() > unit.deadline:
                self.unfollow("audit", unit_id)
                continue
            self.isolated(unit.job_id, unit_id, partial(self._audit, unit))
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
        return sorted(self._rng.sample(unchecked, k))

    def _same_class(self, unit: Unit) -> bool:
        """An exact unit is replayed bit for bit only on its solver's replay class: another class would find
        honest work different, and the contract refuses its challenge (`WrongReplayClass`)."""
        bound = self.view.unit_class(unit.unit_id)
        return bound is None or bound == self.registry.replay_class_of(self.address)

    def _audit(self, unit: Unit) -> None:
        """In the cycle: start the unit's audit off it, and once it has ended, log it and challenge a failing
        segment. The replays run on the background worker (`node/background.py`), so the dispute games this node
        plays keep their moves coming while a long audit runs; the challenge is sent from the cycle."""
        if not self._same_class(unit):
            self.unfollow("audit", unit.unit_id)
            return
        epoch = unit.seed.hex()[:16]
        key = f"audited:{unit.unit_id}:{epoch}"
        if self.state.get(key) is not None:
            return
        findings = self.background.result(unit.job_id, unit.unit_id, "audit", key,
                                          partial(self.audit_segments, unit))
        if findings is None:
            return  # running
        for f in findings:
            self.log.info("audit", unit=unit.unit_id, segment=f["segment"], accept=f["accept"], reason=f["reason"],
                          verify_s=round(f["verify_s"], 4))
        failed = next((f for f in findings if not f["accept"]), None)
        if failed is not None:
            self._challenge(unit, int(failed["segment"]), epoch)
        self.state.put(key, [{k: f[k] for k in ("segment", "accept", "reason")} for f in findings])

    def audit_segments(self, unit: Unit) -> list[dict[str, Any]]:
        """Replay the planned segments, stopping at the first that fails: what each gave, with its seconds."""
        findings: list[dict[str, Any]] = []
        segments = self.plan(unit)
        bar = replay_bar(self.progress or board(), self.content, unit, segments, "audit")
        for segment in segments:
            started = time.perf_counter()
            verdict = bar.run(partial(check_segment, self.content, unit, segment, self.device))
            findings.append({"segment": segment, "accept": verdict.accept, "reason": verdict.reason,
                             "verify_s": time.perf_counter() - started})
            if not verdict.accept:
                bar.done(f"segment {segment} rejected: challenging")
                break
        else:
            bar.done("all accepted")
        return findings

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
