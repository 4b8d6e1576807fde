"""`DisputeCommittee`: stake-drawn committees vote on a disputed unit in sealed rounds (DisputeCommittee.sol).

Only the task pool opens disputes (`openDispute`). Anyone draws a round's committee once its seed block
is mined, and resolves a round once its votes are all revealed or its deadline passed (a round without a
decision escalates to a committee twice as large). Members seal a vote (`commit_vote`, with `vote_hash`)
and reveal it once every member sealed or the commit phase ended.
"""

from __future__ import annotations

from eth_abi import encode
from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.types import Dispute, Seat, Vote


def vote_hash(dispute_id: int, member: str, solver_honest: bool, salt: bytes) -> bytes:
    """The sealed vote: keccak256(abi.encode(disputeId, member, solverHonest, salt))."""
    return keccak256(encode(["uint256", "address", "bool", "bytes32"], [dispute_id, member, solver_honest, salt]))


def round_seed(seed_hash: bytes, unit_id: int, dispute_id: int, round_: int) -> bytes:
    """A round's seed from blockhash(seedBlock): keccak256(abi.encode(hash, unitId, disputeId, round))."""
    return keccak256(encode(["bytes32", "uint256", "uint256", "uint8"], [seed_hash, unit_id, dispute_id, round_]))


class DisputeCommittee(BoundContract):
    NAME = "DisputeCommittee"

    def draw_committee(self, dispute_id: int) -> TxReceipt:
        """Anyone, once the current round's seed block is mined (a stale seed is re-targeted, not drawn)."""
        return self.transact("drawCommittee", dispute_id)

    def commit_vote(self, dispute_id: int, commitment: bytes) -> TxReceipt:
        return self.transact("commitVote", dispute_id, commitment)

    def reveal_vote(self, dispute_id: int, solver_honest: bool, salt: bytes) -> TxReceipt:
        return self.transact("revealVote", dispute_id, solver_honest, salt)

    def resolve(self, dispute_id: int) -> TxReceipt:
        """Anyone, once the round's votes are all revealed or its deadline passed."""
        return self.transact("resolve", dispute_id)

    # -- views ---------------------------------------------------------------------------------

    def get_dispute(self, dispute_id: int, *, block: Block = "latest") -> Dispute:
        return Dispute.from_abi(self.call("getDispute", dispute_id, block=block), dispute_id)

    def seat_of(self, dispute_id: int, member: str, *, block: Block = "latest") -> Seat:
        return Seat.from_abi(self.call("seatOf", dispute_id, member, block=block))

    def vote_of(self, dispute_id: int, member: str, *, block: Block = "latest") -> Vote:
        """The revealed vote (a sealed one reads NONE)."""
        return Vote(int(self.call("voteOf", dispute_id, member, block=block)))

    def members_of(self, dispute_id: int, *, block: Block = "latest") -> tuple[str, ...]:
        return tuple(str(m) for m in self.call("membersOf", dispute_id, block=block))

    def next_dispute_id(self, *, block: Block = "latest") -> int:
        return int(self.call("nextDisputeId", block=block))

    def voting_period(self, *, block: Block = "latest") -> int:
        return int(self.call("votingPeriod", block=block))

    def reveal_period(self, *, block: Block = "latest") -> int:
        return int(self.call("revealPeriod", block=block))

    def member_bond(self, *, block: Block = "latest") -> int:
        return int(self.call("memberBond", block=block))

    def committee_size(self, *, block: Block = "latest") -> int:
        return int(self.call("committeeSize", block=block))

    def max_duration(self, *, block: Block = "latest") -> int:
        return int(self.call("maxDuration", block=block))
