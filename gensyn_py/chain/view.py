"""A read-only view of jobs and units on-chain, shared by every role and the requester.

Views (`getUnit`, `jobState`) give the current state; the spec CID and the
commitments only live in events (the pool stores hashes, not strings), so
those are read from logs filtered by their indexed ids, starting at the
deployment's first block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eth_abi.exceptions import DecodingError
from web3.exceptions import Web3Exception

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.pool import decode_answer
from gensyn_py.errors import ChainError
from gensyn_py.types import JobState, PartialRef, SegmentLeaf, Unit, UnitStatus

__all__ = ["ChainView", "Commitment", "JobInfo", "JobState", "Unit"]


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
        self.pool = protocol.pool()
        self.from_block = int(protocol.deployment.get("block", 0))

    def _logs(self, event: str, from_block: int = 0, **filters: Any) -> list[Any]:
        contract = self.protocol["TaskPool"]
        logs = contract.events[event]().get_logs(argument_filters=filters,
                                                 from_block=max(from_block, self.from_block))
        return sorted(logs, key=lambda e: (e["blockNumber"], e["logIndex"]))

    def logs(self, event: str, from_block: int = 0, **filters: Any) -> list[Any]:
        """TaskPool's `event` logs since the deployment (or `from_block`), filtered by indexed arguments, in
        chain order."""
        return self._logs(event, from_block, **filters)

    def job(self, job_id: int) -> JobInfo:
        logs = self._logs("JobSubmitted", jobId=job_id)
        if not logs:
            raise ChainError(f"job {job_id} does not exist on this deployment")
        a = logs[0]["args"]
        return JobInfo(job_id, a["requester"], bytes(a["specHash"]), a["specCid"], int(a["budget"]),
                       int(logs[0]["blockNumber"]))

    def job_state(self, job_id: int) -> JobState:
        return self.pool.job_state(job_id)

    def unit_ids(self, job_id: int) -> list[int]:
        """Every unit the job has opened so far, in order."""
        return [int(e["args"]["unitId"]) for e in self._logs("UnitOpened", jobId=job_id)]

    def unit(self, unit_id: int) -> Unit:
        unit = self.pool.get_unit(unit_id)
        if unit.status is UnitStatus.NONE:
            raise ChainError(f"unit {unit_id} does not exist on this deployment")
        return unit

    def units(self, job_id: int) -> list[Unit]:
        return [self.unit(i) for i in self.unit_ids(job_id)]

    def commitment(self, unit_id: int) -> Commitment | None:
        """The unit's latest commitment (a reopened unit may have several), or None."""
        logs = self._logs("UnitCommitted", unitId=unit_id)
        if not logs:
            return None
        a = logs[-1]["args"]
        return Commitment(unit_id, bytes(a["checkpointRoot"]), bytes(a["finalStateHash"]), a["manifestCid"],
                          int(logs[-1]["blockNumber"]))

    def partials(self, unit_id: int) -> tuple[PartialRef, ...]:
        """Every partial commitment of the unit, oldest first (they stay valid across reopenings)."""
        logs = self._logs("UnitPartialCommitted", unitId=unit_id)
        return tuple(PartialRef(str(a["solver"]), bytes(a["partialRoot"]), int(a["segments"]), str(a["manifestCid"]))
                     for a in (e["args"] for e in logs))

    def round_units(self, job_id: int, round_: int) -> tuple[list[Unit], Unit | None]:
        """A round's training units in shard order, and its aggregation unit if opened. Voided units are left out:
        their phase opened anew (pipelined rounds), and the new units are the round's."""
        units = [u for u in self.units(job_id) if u.round == round_ and u.status is not UnitStatus.VOIDED]
        training = sorted((u for u in units if not u.is_aggregation), key=lambda u: u.shard)
        agg = next((u for u in units if u.is_aggregation), None)
        return training, agg

    def final_unit(self, job_id: int, rounds: int, shards: int) -> Unit | None:
        """The unit whose result is the job's model: the last round's aggregation (or only) unit."""
        training, agg = self.round_units(job_id, rounds - 1)
        if shards > 1:
            return agg
        return training[0] if training else None

    def now(self) -> int:
        """The latest block's timestamp: deadlines are in chain time."""
        return int(self.protocol.w3.eth.get_block("latest")["timestamp"])

    def next_time(self) -> int:
        """The timestamp a transaction sent now is checked against: the node's pending block's. A move allowed
        once a deadline has passed is then taken as soon as the chain would accept it, not when the next block
        happens to be mined (on the local market, a block a second: ~0.5 s sooner on average). A node that
        builds no pending block answers with its latest block's."""
        try:
            pending = self.protocol.w3.eth.get_block("pending")
        except (Web3Exception, ValueError):
            return self.now()
        return int(pending["timestamp"])

    def unit_class(self, unit_id: int) -> bytes | None:
        """The replay class an exact unit was bound to at its latest claim (`UnitClassBound`); None for a repro
        unit or one never claimed: only nodes of that class replay it bit for bit."""
        logs = self._logs("UnitClassBound", unitId=unit_id)
        return bytes(logs[-1]["args"]["replayClass"]) if logs else None

    def dispute_of(self, unit_id: int) -> tuple[int, int] | None:
        """(disputeId, segment) of the unit's latest dispute, or None."""
        logs = self._logs("UnitDisputed", unitId=unit_id)
        if not logs:
            return None
        a = logs[-1]["args"]
        return int(a["disputeId"]), int(a["segmentIndex"])

    def answer_of(self, unit_id: int, slot: int, from_block: int = 0) -> tuple[SegmentLeaf, SegmentLeaf, str] | None:
        """The solver's latest answer to slot `slot`'s unavailability report (`UnavailabilityAnswered`) since
        `from_block`: the slot's leaf, the last segment's leaf and the CIDs, decoded from its transaction."""
        logs = [e for e in self._logs("UnavailabilityAnswered", from_block, unitId=unit_id)
                if int(e["args"]["slot"]) == slot]
        if not logs:
            return None
        tx = self.protocol.w3.eth.get_transaction(logs[-1]["transactionHash"])
        try:
            _, args = self.protocol["TaskPool"].decode_function_input(tx["input"])
            return decode_answer(bytes(args["answer"]))
        except (ValueError, TypeError, KeyError, DecodingError):
            return None  # sent through another contract: its calldata is not ours to decode

    def has_event(self, event: str, from_block: int = 0, **filters: Any) -> bool:
        """Whether the pool emitted `event` with these indexed args at or after `from_block`."""
        return bool(self._logs(event, from_block, **filters))
