"""While a unit is Verified (before it is final), check the requester can download its model; if not, claim it.

Validators replay only their segments' start checkpoints, so the checkpoint a unit delivers (the model the
requester pays for) might never have been published. A Verified unit can still be challenged and its payout
waits for the challenge window: during it, `ModelGuard` fetches each Verified unit's result (manifest and final
checkpoint, hash-checked against the chain, as `download.py` does) and, when it cannot, raises the requester's
unavailability claim (`TaskPool.claimUnavailable`): the solver must answer with its leaves and publish the data
again, or lose its collateral and the unit reopens (contracts/libraries/DataAvailability.sol).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gensyn_py.errors import ContentNotFound, ContractRevert, StorageError, VerificationError
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.types import Unit, UnitStatus

if TYPE_CHECKING:
    from gensyn_py.requester.follow import Snapshot
    from gensyn_py.requester.session import Requester

# A claim refused for these is moot: the unit moved on (final, disputed, reopened) or is claimed already.
MOOT = frozenset({"BadUnitStatus", "DeadlinePassed", "AlreadyClaimed"})


def model_missing(requester: Requester, unit: Unit) -> str | None:
    """Why the unit's result cannot be downloaded and verified, or None when it can. The node's own trouble
    (an unreachable store) raises `StorageError`: that is no reason to claim."""
    try:
        result = requester.content.result(unit)  # the manifest, matching the on-chain commitment
        data = requester.store.get(result.cid, requester.timeout)
    except (VerificationError, ContentNotFound) as e:
        return str(e)
    try:
        digest = state_hash_of_bytes(data)
    except VerificationError as e:
        return f"unit {unit.unit_id}'s model: {e}"
    if digest != result.final_state_hash:
        return f"unit {unit.unit_id}'s model does not hash to its on-chain final state hash"
    return None


@dataclass
class ModelGuard:
    """Checks each Verified unit of a job once per commitment; claims the ones whose model is missing."""

    requester: Requester
    job_id: int
    say: Callable[[str], None] = print
    checked: set[tuple[int, int]] = field(default_factory=set)  # (unit, commit deadline): one check per attempt
    claims: list[int] = field(default_factory=list)

    def on_snapshot(self, snap: Snapshot) -> None:
        """`follow`'s hook: check the snapshot's Verified units."""
        for unit in snap.units:
            if unit.status is UnitStatus.VERIFIED:
                self.check(unit)

    def check(self, unit: Unit) -> None:
        key = (unit.unit_id, unit.commit_deadline)
        if key in self.checked:
            return
        try:
            problem = model_missing(self.requester, unit)
        except StorageError as e:  # our store is down: try again at the next poll
            self.say(f"unit {unit.unit_id}: cannot check its model now ({e}); will retry")
            return
        self.checked.add(key)
        if problem is None:
            self.say(f"unit {unit.unit_id}: model available and verified")
            return
        self.say(f"unit {unit.unit_id}: model download failed ({problem}); claiming it unavailable")
        try:
            self.requester.pool.claim_unavailable(unit.unit_id)
        except ContractRevert as e:
            if e.name not in MOOT:
                raise
            self.say(f"unit {unit.unit_id}: claim not taken ({e.name})")
            return
        self.claims.append(unit.unit_id)
        self.say(f"unit {unit.unit_id}: claim raised; the solver must answer within the reveal window or be slashed")
