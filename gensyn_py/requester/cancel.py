"""Cancel a job and withdraw what it refunded; withdraw any credit the pool holds for the requester.

`cancelJob` refunds open and not-yet-opened units at once; units already in
flight finish (or time out) and their escrow is credited when the last one
is done. Every refund is pull-based credit, withdrawn with `claimCredit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.requester.errors import JobNotReady
from gensyn_py.types import JobStatus

if TYPE_CHECKING:
    from gensyn_py.requester.session import Requester


@dataclass(frozen=True)
class CancelResult:
    job_id: int
    refund: int  # credited by the cancellation itself
    claimed: int  # withdrawn to the wallet now (all of the account's credit)
    in_flight: int  # units still running; their escrow is credited when they are done


def claim_credit(requester: Requester) -> int:
    """Withdraw all the account's credit in the pool; returns the amount (0 if there was none)."""
    owed = requester.pool.credit(requester.address)
    if owed == 0:
        return 0
    receipt = requester.pool.claim_credit()
    claimed = requester.pool.events(receipt, "CreditClaimed")
    return int(claimed[0]["amount"]) if claimed else owed


def cancel_job(requester: Requester, job_id: int, claim: bool = True) -> CancelResult:
    """Cancel `job_id` (this account must be its requester) and, with `claim`, withdraw the refund."""
    state = requester.view.job_state(job_id)
    if state.status is JobStatus.NONE:
        raise JobNotReady(f"job {job_id} does not exist on this deployment")
    if state.requester != requester.address:
        raise JobNotReady(f"job {job_id} belongs to {state.requester}, not {requester.address}")
    if state.status is not JobStatus.ACTIVE:
        raise JobNotReady(f"job {job_id} is already {state.status.name.lower()}; nothing to cancel")
    receipt = requester.pool.cancel_job(job_id)
    events = requester.pool.events(receipt, "JobCancelled")
    refund = int(events[0]["refund"]) if events else 0
    after = requester.view.job_state(job_id)
    claimed = claim_credit(requester) if claim else 0
    return CancelResult(job_id, refund, claimed, after.pending)
