"""Submit a job: every check first, then approve exactly what is missing, then `submitJob`.

Nothing is sent until the spec parses, its dataset is in the store and fits
the model (`validate.py`), the terms and the job's shape pass the pool's rules
and bounds (`pricing.py`), and the account holds the escrow in tokens and some
ether for gas. A failure on any of those is an error naming the problem (or
the shortfall) and the chain is untouched. Only then is a repro job's step
table built (`proof/step_table.py`: its root goes on-chain, so that a dispute
game judges each step against it), the canonical spec stored (its keccak is
the on-chain spec hash), the allowance raised to the escrow if it is short,
and the job submitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.errors import ChainError, StorageError, VerificationError
from gensyn_py.requester.amounts import format_tokens
from gensyn_py.requester.errors import InsufficientFunds, SubmitError
from gensyn_py.requester.pricing import UINT128_MAX, Offer, check_collateral, check_shape, escrow_for, unit_count
from gensyn_py.requester.validate import validate_job
from gensyn_py.types import DEVICE_CLASSES, VERIFICATION_MODES, JobParams, PoolParams

if TYPE_CHECKING:
    from gensyn_py.requester.session import Requester
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec


@dataclass(frozen=True)
class Quote:
    """What a job will cost under `offer` on this pool, checked against the account's funds."""

    units: int
    escrow: int
    balance: int
    allowance: int
    params: PoolParams

    @property
    def approval_needed(self) -> int:
        """The allowance to set (0 when the current one already covers the escrow)."""
        return self.escrow if self.allowance < self.escrow else 0


@dataclass(frozen=True)
class SubmitResult:
    job_id: int
    escrow: int
    units: int
    spec_hash: bytes
    spec_cid: str
    approved: int  # allowance set in this call; 0 if none was needed
    tx_hash: str
    block: int


def job_params(spec: JobSpec, spec_cid: str, offer: Offer, steps_root: bytes = bytes(32)) -> JobParams:
    """What `submitJob` takes: the spec's shape and hardware needs, the offer's terms and (repro) the root of the
    job's step table."""
    return JobParams(
        spec_hash=spec.spec_hash(), spec_cid=spec_cid, rounds=spec.rounds, shards=spec.shards,
        steps_per_unit=spec.steps_per_unit, checkpoint_interval=spec.checkpoint_interval,
        device_class=DEVICE_CLASSES[spec.hardware.device_class], min_memory_mb=spec.hardware.min_memory_mb,
        min_throughput=offer.min_throughput, max_price_per_unit=offer.max_price_per_unit,
        collateral_per_unit=offer.collateral_per_unit, commit_window=offer.commit_window,
        verification=VERIFICATION_MODES[spec.mode], steps_root=steps_root,
    )


def quote(requester: Requester, spec: JobSpec, offer: Offer) -> Quote:
    """Check the terms against the pool and the escrow against the account; raises before any transaction."""
    params = requester.pool_params()
    offer.check(params)
    check_shape(spec.rounds, spec.shards, spec.steps_per_unit, spec.checkpoint_interval)
    check_collateral(offer, spec.num_segments, params)
    units = unit_count(spec.rounds, spec.shards)
    escrow = escrow_for(spec.rounds, spec.shards, offer.max_price_per_unit, params)
    if escrow > UINT128_MAX:
        raise SubmitError(f"escrow {format_tokens(escrow)} is larger than the pool accepts")
    me = requester.address
    balance = requester.token.balance_of(me)
    allowance = requester.token.allowance(me, requester.pool.address)
    if balance < escrow:
        raise InsufficientFunds(
            f"{me} holds {format_tokens(balance)} tokens, {format_tokens(escrow - balance)} short of the "
            f"{format_tokens(escrow)} escrow: {units} unit{'' if units == 1 else 's'} x "
            f"({format_tokens(offer.max_price_per_unit)} max price + {params.validators_per_unit} validators x "
            f"{format_tokens(params.validator_fee)} fee)",
            need=escrow, have=balance,
        )
    if int(requester.protocol.w3.eth.get_balance(me)) == 0:
        raise InsufficientFunds(f"{me} has no ether to pay gas for the approval and the submission")
    return Quote(units, escrow, balance, allowance, params)


def prepare_job(requester: Requester, spec: JobSpec, offer: Offer) -> Quote:
    """Every pre-flight check (dataset, model, a fine-tune's parent, terms, funds); sends nothing."""
    validate_job(spec, requester.store, requester.timeout)
    check_parent(requester, spec)
    return quote(requester, spec, offer)


def check_parent(requester: Requester, spec: JobSpec) -> None:
    """A fine-tune (`init.parent_job`) starts from a completed job's final model of the same architecture,
    whose bytes match that job's on-chain final state hash: checked here, before any money moves, as every
    node checks it again before it claims."""
    if spec.init is None:
        return
    try:
        requester.content.parent_model(spec)
    except (VerificationError, StorageError) as e:
        raise SubmitError(f"{e}; nothing submitted") from None


def publish_steps(requester: Requester, spec: JobSpec, dataset: Dataset,
                  on_unit: Callable[[int, int], None] | None = None) -> tuple[bytes, JobSpec]:
    """(the step table root, the spec to submit). A repro job on a chunked dataset also stores its whole table and
    names it in the spec (`step_table`), so that each node checks only its own unit's entries and reads only its own
    chunks (`proof/published_table.py`); a spec that already names a table must name this one."""
    from gensyn_py.proof.published_table import encode
    from gensyn_py.proof.step_table import step_table
    from gensyn_py.storage.cid import cid_for_bytes
    from gensyn_py.train.chunks import ChunkedDataset
    from gensyn_py.train.spec import StepTableRef

    if spec.mode != "repro":  # an exact job's disputes go to the committee of its replay class
        return bytes(32), spec
    table = step_table(spec, dataset, on_unit)
    data = encode(table)
    if spec.step_table is not None:
        if spec.step_table.cid != (mine := cid_for_bytes(data)):
            raise SubmitError(f"step_table: {spec.step_table.cid} is not this spec's and dataset's step table "
                              f"({mine}); nothing submitted")
        requester.store.put(data)
        return table.root(), spec
    if not isinstance(dataset, ChunkedDataset):
        return table.root(), spec
    ref = StepTableRef(cid=requester.store.put(data), size_bytes=len(data))
    published = spec.model_copy(update={"step_table": ref})
    published._source_hash = None  # its bytes are the canonical ones the requester stores
    return table.root(), published


def submit_job(requester: Requester, spec: JobSpec, offer: Offer | None = None,
               on_unit: Callable[[int, int], None] | None = None) -> SubmitResult:
    """Check everything, build the step table (`on_unit(done, total)` after each unit's steps), then store the
    spec, approve what the allowance lacks, and submit."""
    from gensyn_py.train.spec import canonical_json

    offer = offer or Offer()
    dataset = validate_job(spec, requester.store, requester.timeout)
    check_parent(requester, spec)
    q = quote(requester, spec, offer)
    steps_root, spec = publish_steps(requester, spec, dataset, on_unit)
    spec_cid = requester.store.put(canonical_json(spec.model_dump(mode="json")))
    approved = q.approval_needed
    if approved:
        requester.token.approve(requester.pool.address, approved)
    pool = requester.pool
    receipt = pool.submit_job(job_params(spec, spec_cid, offer, steps_root))
    tx_hash = receipt["transactionHash"].to_0x_hex()
    submitted = pool.events(receipt, "JobSubmitted")
    if not submitted:
        raise ChainError(f"submitJob tx {tx_hash} emitted no JobSubmitted")
    event = submitted[0]
    if int(event["budget"]) != q.escrow:
        raise ChainError(f"the pool escrowed {format_tokens(int(event['budget']))}, expected {format_tokens(q.escrow)}")
    return SubmitResult(
        job_id=int(event["jobId"]), escrow=q.escrow, units=q.units, spec_hash=spec.spec_hash(), spec_cid=spec_cid,
        approved=approved, tx_hash=tx_hash, block=int(receipt["blockNumber"]),
    )
