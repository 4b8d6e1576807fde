"""`TaskPool`: jobs, units, verdicts, challenges and pull payments (`contracts/TaskPool.sol`, `ITaskPool`).

Transactions return their receipt (read events from it with `events`); views return the `types`
mirrors. The resolver's callback and the owner's wiring are not here: no node calls them.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

from eth_abi import decode, encode
from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.errors import ChainError
from gensyn_py.types import (
    UNAVAILABLE_MARK,
    Availability,
    ClaimScore,
    JobParams,
    JobState,
    PhaseState,
    PoolParams,
    SegmentLeaf,
    Unit,
    UnitPartial,
)


def challenge_hash(unit_id: int, challenger: str, segment: int, salt: bytes) -> bytes:
    """A sealed challenge: keccak256(abi.encode(unitId, challenger, segmentIndex, salt))."""
    return keccak256(encode(["uint256", "address", "uint256", "bytes32"], [unit_id, challenger, segment, salt]))


_LEAF = "(uint256,bytes32,bytes32,bytes32,bytes32[])"

# Gas added to the estimate of calls whose cost depends on who lands first (`TxSender.transact`). Two validators
# reveal within milliseconds once reveals open, each estimated as not the last; the last one also verifies the
# unit and may arm the next phase (about 30k more). The last commitment of a phase opens the next one (an
# aggregation unit: about 110k more). Unused gas is not charged.
LAST_REVEAL_HEADROOM = 50_000
LAST_COMMIT_HEADROOM = 150_000
ZERO32 = bytes(32)


def encode_answer(seg: SegmentLeaf, last: SegmentLeaf, cids: str) -> bytes:
    """The `answer` bytes of `answerUnavailable`: abi.encode(SegmentLeaf seg, SegmentLeaf last, string cids)."""
    return encode([_LEAF, _LEAF, "string"], [seg.to_abi(), last.to_abi(), cids])


def decode_answer(data: bytes) -> tuple[SegmentLeaf, SegmentLeaf, str]:
    """The inverse of `encode_answer` (raises on malformed bytes, as `eth_abi` does)."""
    seg, last, cids = decode([_LEAF, _LEAF, "string"], data)
    return SegmentLeaf.from_abi(seg), SegmentLeaf.from_abi(last), str(cids)


class TaskPool(BoundContract):
    NAME = "TaskPool"

    # -- requester -----------------------------------------------------------------------------

    def submit_job(self, params: JobParams) -> TxReceipt:
        """Escrow the job's budget and open its first units (approve the pool first)."""
        return self.transact("submitJob", params.to_abi())

    def cancel_job(self, job_id: int) -> TxReceipt:
        return self.transact("cancelJob", job_id)

    # -- solver --------------------------------------------------------------------------------

    def claim(self, unit_id: int) -> TxReceipt:
        return self.transact("claim", unit_id)

    def commit(self, unit_id: int, checkpoint_root: bytes, final_state_hash: bytes, manifest_cid: str) -> TxReceipt:
        return self.transact("commit", unit_id, checkpoint_root, final_state_hash, manifest_cid,
                             headroom=LAST_COMMIT_HEADROOM)

    def commit_partial(self, unit_id: int, partial_root: bytes, segments: int, manifest_cid: str) -> TxReceipt:
        """Publish the first `segments` segments (root of their leaves, partial manifest) before the deadline."""
        return self.transact("commitPartial", unit_id, partial_root, segments, manifest_cid)

    def answer_unavailable(self, unit_id: int, slot: int, seg: SegmentLeaf, last: SegmentLeaf, cids: str) -> TxReceipt:
        """Answer slot `slot`'s unavailability report (`REQUESTER_SLOT`: the requester's claim) with the leaves
        of the slot's segment and of the last segment and where the data is (`cids`, JSON for the nodes)."""
        return self.transact("answerUnavailable", unit_id, slot, encode_answer(seg, last, cids))

    # -- validator -----------------------------------------------------------------------------

    def commit_verdict(self, unit_id: int, sealed: bytes) -> TxReceipt:
        """`sealed` = keccak256(abi.encode(unitId, validator, accept, transcriptHash, salt))."""
        return self.transact("commitVerdict", unit_id, sealed)

    def reveal_verdict(
        self, unit_id: int, accept: bool, transcript_hash: bytes, salt: bytes, start_hash: bytes, end_hash: bytes,
        transcript_commit: bytes, proof: Sequence[bytes],
    ) -> TxReceipt:
        """Open the sealed verdict, with the Merkle proof of the validator's segment (start and end states)."""
        return self.transact("revealVerdict", unit_id, accept, transcript_hash, salt, start_hash, end_hash,
                             transcript_commit, list(proof), headroom=LAST_REVEAL_HEADROOM)

    def report_unavailable(self, unit_id: int, salt: bytes) -> TxReceipt:
        """Reveal a sealed "unavailable" verdict (reject, transcriptHash `UNAVAILABLE_MARK`): no proof needed."""
        return self.reveal_verdict(unit_id, False, UNAVAILABLE_MARK, salt, ZERO32, ZERO32, ZERO32, [])

    # -- requester: the model is missing ---------------------------------------------------------

    def claim_unavailable(self, unit_id: int) -> TxReceipt:
        """The requester cannot download a Verified unit's model: the solver must answer or be slashed."""
        return self.transact("claimUnavailable", unit_id)

    # -- challenger ----------------------------------------------------------------------------

    def commit_challenge(self, unit_id: int, sealed: bytes) -> TxReceipt:
        """Seal a challenge: `sealed` = `challenge_hash(unitId, challenger, segment, salt)`."""
        return self.transact("commitChallenge", unit_id, sealed)

    def reveal_challenge(self, unit_id: int, segment: int, salt: bytes) -> TxReceipt:
        """Reveal a challenge sealed in an earlier block and open the dispute, posting the challenge bond."""
        return self.transact("challenge", unit_id, segment, salt)

    def challenge(self, unit_id: int, segment: int, *, block_timeout: float = 60.0) -> TxReceipt:
        """Dispute a verified unit's segment: seal, wait for a block after the seal's, reveal. Returns the reveal's
        receipt. Sealing first means a copy of the reveal seen in the mempool cannot be sent by anyone else."""
        if self.sender is None:
            raise ChainError("TaskPool is bound read-only: no account to challenge from")
        salt = secrets.token_bytes(32)
        sealed = self.commit_challenge(unit_id, challenge_hash(unit_id, self.sender.address, segment, salt))
        self._await_block_after(int(sealed["blockNumber"]), block_timeout)
        return self.reveal_challenge(unit_id, segment, salt)

    def _await_block_after(self, block: int, timeout: float) -> None:
        """Poll until the chain's head is past `block` (the reveal must not be checked in the seal's block)."""
        w3 = self.contract.w3
        deadline = time.monotonic() + timeout
        while int(w3.eth.block_number) <= block:
            if time.monotonic() > deadline:
                raise ChainError(f"no block after {block} within {timeout:.0f}s: the chain is not producing blocks")
            time.sleep(0.1)

    # -- keepers: permissionless transitions ---------------------------------------------------

    def timeout_claim(self, unit_id: int) -> TxReceipt:
        return self.transact("timeoutClaim", unit_id)

    def draw_validators(self, unit_id: int) -> TxReceipt:
        return self.transact("drawValidators", unit_id)

    def close_verdicts(self, unit_id: int) -> TxReceipt:
        return self.transact("closeVerdicts", unit_id)

    def finalize(self, unit_id: int) -> TxReceipt:
        return self.transact("finalize", unit_id)

    # -- money ---------------------------------------------------------------------------------

    def claim_credit(self) -> TxReceipt:
        """Withdraw all the caller's credit."""
        return self.transact("claimCredit")

    # -- views ---------------------------------------------------------------------------------

    def params(self, *, block: Block = "latest") -> PoolParams:
        return PoolParams.from_abi(self.call("params", block=block))

    def get_unit(self, unit_id: int, *, block: Block = "latest") -> Unit:
        """The unit as stored; an unknown id reads as status `NONE`."""
        return Unit.from_abi(self.call("getUnit", unit_id, block=block), unit_id)

    def availability(self, unit_id: int, *, block: Block = "latest") -> Availability:
        return Availability.from_abi(self.call("availability", unit_id, block=block))

    def verdict_state(self, unit_id: int, slot: int, *, block: Block = "latest") -> int:
        """`VERDICT_*` state of the unit's validator slot."""
        return int(self.call("verdictState", unit_id, slot, block=block))

    def job_state(self, job_id: int, *, block: Block = "latest") -> JobState:
        """An unknown id reads as status `NONE`."""
        return JobState.from_abi(self.call("jobState", job_id, block=block))

    def phase_state(self, job_id: int, *, block: Block = "latest") -> PhaseState:
        return PhaseState.from_abi(self.call("phaseState", job_id, block=block))

    def commit_by(self, unit_id: int, *, block: Block = "latest") -> int:
        """When an assigned unit's solver must have committed: its deadline, later if its phase was armed after
        the claim, `NOT_ARMED` while its phase waits for the one it is built on to be Verified; 0 if not Assigned."""
        return int(self.call("commitBy", unit_id, block=block))

    def claim_score(self, node: str, unit_id: int, *, block: Block = "latest") -> ClaimScore:
        return ClaimScore.from_abi(self.call("claimScore", node, unit_id, block=block))

    def partial_of(self, unit_id: int, *, block: Block = "latest") -> UnitPartial:
        """The unit's latest partial commitment (its manifest CID is in the `UnitPartialCommitted` event)."""
        return UnitPartial.from_abi(self.call("partialOf", unit_id, block=block))

    def resolver_of(self, unit_id: int, *, block: Block = "latest") -> str:
        """The resolver a dispute over the unit goes to: the dispute game, or the committee."""
        return str(self.call("resolverOf", unit_id, block=block))

    def step_table(self, job_id: int, *, block: Block = "latest") -> tuple[bytes, int]:
        """A repro job's step table root and steps per segment (zero root: none; its disputes go to the committee)."""
        root, interval = self.call("stepTable", job_id, block=block)
        return bytes(root), int(interval)

    def num_segments(self, unit_id: int, *, block: Block = "latest") -> int:
        return int(self.call("numSegments", unit_id, block=block))

    def credit(self, account: str, *, block: Block = "latest") -> int:
        return int(self.call("credit", account, block=block))

    def total_escrow(self, *, block: Block = "latest") -> int:
        return int(self.call("totalEscrow", block=block))

    def total_bonds(self, *, block: Block = "latest") -> int:
        """Challenger bonds held."""
        return int(self.call("totalBonds", block=block))

    def total_credit(self, *, block: Block = "latest") -> int:
        return int(self.call("totalCredit", block=block))

    def next_job_id(self, *, block: Block = "latest") -> int:
        return int(self.call("nextJobId", block=block))

    def next_unit_id(self, *, block: Block = "latest") -> int:
        return int(self.call("nextUnitId", block=block))

    def longest_exposure(self, *, block: Block = "latest") -> int:
        """Seconds a solver's collateral can stay at risk: the registry's unbonding delay must exceed it."""
        return int(self.call("longestExposure", block=block))
