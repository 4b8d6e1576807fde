"""A read-only view of jobs and units on-chain, shared by every role and the requester.

Views (`getUnit`, `jobState`) give the current state; the spec CID and the
commitments only live in events (the pool stores hashes, not strings), so
those are read from logs filtered by their indexed ids, starting at the
deployment's first block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.errors import ChainError
from gensyn_py.types import AGGREGATION_SHARD, JobStatus, UnitStatus


@dataclass(frozen=True)
class JobInfo:
    """What `JobSubmitted` recorded."""

    job_id: int
    requester: str
    spec_hash: bytes
    spec_cid: str
    budget: int
    block: int


@dataclass(frozen=True)
class JobState:
    """The `jobState` view."""

    requester: str
    status: JobStatus
    round: int
    agg_phase: bool
    pending: int
    escrow: int


@dataclass(frozen=True)
class UnitInfo:
    """The `getUnit` view, with names."""

    unit_id: int
    job_id: int
    round: int
    shard: int
    status: UnitStatus
    solver: str
    price: int
    opened_at: int
    deadline: int
    commit_deadline: int
    reveal_deadline: int
    drawn: bool
    committed_count: int
    revealed_count: int
    checkpoint_root: bytes
    seed: bytes
    challenger: str
    dispute_id: int
    validators: tuple[str, ...]

    @property
    def is_aggregation(self) -> bool:
        return self.shard == AGGREGATION_SHARD


@dataclass(frozen=True)
class Commitment:
    """The latest `UnitCommitted` of a unit."""

    unit_id: int
    checkpoint_root: bytes
    final_state_hash: bytes
    manifest_cid: str
    block: int


class ChainView:
    """Reads jobs, units and commitments; every method is one or two RPC calls."""

    def __init__(self, protocol: ProtocolContracts) -> None:
        self.protocol = protocol
        self.pool = protocol.bind("TaskPool")
        self.from_block = int(protocol.deployment.get("block", 0))

    def _logs(self, event: str, from_block: int = 0, **filters: Any) -> list[Any]:
        contract = self.protocol["TaskPool"]
        logs = contract.events[event]().get_logs(argument_filters=filters,
                                                 from_block=max(from_block, self.from_block))
        return sorted(logs, key=lambda e: (e["blockNumber"], e["logIndex"]))

    def job(self, job_id: int) -> JobInfo:
        logs = self._logs("JobSubmitted", jobId=job_id)
        if not logs:
            raise ChainError(f"job {job_id} does not exist on this deployment")
        a = logs[0]["args"]
        return JobInfo(job_id, a["requester"], bytes(a["specHash"]), a["specCid"], int(a["budget"]),
                       int(logs[0]["blockNumber"]))

    def job_state(self, job_id: int) -> JobState:
        requester, status, round_, agg, pending, escrow = self.pool.call("jobState", job_id)
        return JobState(requester, JobStatus(status), int(round_), bool(agg), int(pending), int(escrow))

    def unit_ids(self, job_id: int) -> list[int]:
        """Every unit the job has opened so far, in order."""
        return [int(e["args"]["unitId"]) for e in self._logs("UnitOpened", jobId=job_id)]

    def unit(self, unit_id: int) -> UnitInfo:
        u = self.pool.call("getUnit", unit_id)
        if int(u[3]) == UnitStatus.NONE:
            raise ChainError(f"unit {unit_id} does not exist on this deployment")
        return UnitInfo(
            unit_id=unit_id, job_id=int(u[0]), round=int(u[1]), shard=int(u[2]), status=UnitStatus(u[3]),
            solver=u[4], price=int(u[5]), opened_at=int(u[6]), deadline=int(u[7]), commit_deadline=int(u[9]),
            reveal_deadline=int(u[10]), drawn=bool(u[11]), committed_count=int(u[12]),
            revealed_count=int(u[13]), checkpoint_root=bytes(u[14]), seed=bytes(u[15]),
            challenger=u[17], dispute_id=int(u[18]), validators=tuple(u[19]),
        )

    def units(self, job_id: int) -> list[UnitInfo]:
        return [self.unit(i) for i in self.unit_ids(job_id)]

    def commitment(self, unit_id: int) -> Commitment | None:
        """The unit's latest commitment (a reopened unit may have several), or None."""
        logs = self._logs("UnitCommitted", unitId=unit_id)
        if not logs:
            return None
        a = logs[-1]["args"]
        return Commitment(unit_id, bytes(a["checkpointRoot"]), bytes(a["finalStateHash"]), a["manifestCid"],
                          int(logs[-1]["blockNumber"]))

    def round_units(self, job_id: int, round_: int) -> tuple[list[UnitInfo], UnitInfo | None]:
        """A round's training units in shard order, and its aggregation unit if opened."""
        units = [u for u in self.units(job_id) if u.round == round_]
        training = sorted((u for u in units if not u.is_aggregation), key=lambda u: u.shard)
        agg = next((u for u in units if u.is_aggregation), None)
        return training, agg

    def final_unit(self, job_id: int, rounds: int, shards: int) -> UnitInfo | None:
        """The unit whose result is the job's model: the last round's aggregation (or only) unit."""
        training, agg = self.round_units(job_id, rounds - 1)
        if shards > 1:
            return agg
        return training[0] if training else None

    def now(self) -> int:
        """The latest block's timestamp: deadlines are in chain time."""
        return int(self.protocol.w3.eth.get_block("latest")["timestamp"])

    def dispute_of(self, unit_id: int) -> tuple[int, int] | None:
        """(disputeId, segment) of the unit's latest dispute, or None."""
        logs = self._logs("UnitDisputed", unitId=unit_id)
        if not logs:
            return None
        a = logs[-1]["args"]
        return int(a["disputeId"]), int(a["segmentIndex"])

    def has_event(self, event: str, from_block: int = 0, **filters: Any) -> bool:
        """Whether the pool emitted `event` with these indexed args at or after `from_block`."""
        return bool(self._logs(event, from_block, **filters))
