"""`DisputeCommittee`: a random committee of validators votes on a disputed unit (`contracts/DisputeCommittee.sol`).

Only the task pool opens disputes (`openDispute`); anyone draws the committee and resolves, members vote.
"""

from __future__ import annotations

from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract
from gensyn_py.types import Dispute, Vote


class DisputeCommittee(BoundContract):
    NAME = "DisputeCommittee"

    def draw_committee(self, dispute_id: int) -> TxReceipt:
        """Anyone, once the randomness after the opening block exists."""
        return self.transact("drawCommittee", dispute_id)

    def vote(self, dispute_id: int, solver_honest: bool) -> TxReceipt:
        return self.transact("vote", dispute_id, solver_honest)

    def resolve(self, dispute_id: int) -> TxReceipt:
        """Anyone, once every member voted or the vote closed."""
        return self.transact("resolve", dispute_id)

    # -- views ---------------------------------------------------------------------------------

    def get_dispute(self, dispute_id: int, *, block: Block = "latest") -> Dispute:
        return Dispute.from_abi(self.call("getDispute", dispute_id, block=block), dispute_id)

    def vote_of(self, dispute_id: int, member: str, *, block: Block = "latest") -> Vote:
        return Vote(int(self.call("voteOf", dispute_id, member, block=block)))

    def members_of(self, dispute_id: int, *, block: Block = "latest") -> tuple[str, ...]:
        return tuple(str(m) for m in self.call("membersOf", dispute_id, block=block))

    def next_dispute_id(self, *, block: Block = "latest") -> int:
        return int(self.call("nextDisputeId", block=block))

    def voting_period(self, *, block: Block = "latest") -> int:
        return int(self.call("votingPeriod", block=block))

    def committee_size(self, *, block: Block = "latest") -> int:
        return int(self.call("committeeSize", block=block))

    def max_duration(self, *, block: Block = "latest") -> int:
        return int(self.call("maxDuration", block=block))
