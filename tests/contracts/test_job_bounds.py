"""Job bounds: `submitJob` refuses every job that could not be claimed, committed or settled.

For each bound (`Units.MAX_*`, mirrored in `gensyn_py.types`), a job at the bound is accepted and a unit of
it is claimed and committed; one past it is refused at submit with `JobParamTooLarge(field, value, max)`,
whose `max` is the Python mirror's value. A property test throws arbitrary job parameters at the pool: each
is refused at submit with a named error, or its first unit can be claimed and committed. A `Panic` never
appears (issue 12: a commitWindow of 2**64-1 used to be accepted and then made every claim overflow).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from gensyn_py.errors import ContractRevert
from gensyn_py.proof.sampler import min_collateral
from gensyn_py.types import MAX_COMMIT_WINDOW, MAX_ROUNDS, MAX_SEGMENTS, MAX_SHARDS, MAX_STEPS_PER_UNIT
from tests.contracts.flows import claim_and_commit
from tests.contracts.helpers import COMMITTED, E18, Protocol, Work
from tests.contracts.test_registry import expect

U32, U64, U128 = 2**32 - 1, 2**64 - 1, 2**128 - 1

# field -> (job at the bound, the same job one past it, the offending value reported)
BOUNDS: dict[str, tuple[dict[str, int], dict[str, int], int, int]] = {
    "rounds": ({"rounds": MAX_ROUNDS}, {"rounds": MAX_ROUNDS + 1}, MAX_ROUNDS + 1, MAX_ROUNDS),
    "shards": ({"shards": MAX_SHARDS}, {"shards": MAX_SHARDS + 1}, MAX_SHARDS + 1, MAX_SHARDS),
    "stepsPerUnit": (
        {"stepsPerUnit": MAX_STEPS_PER_UNIT, "checkpointInterval": MAX_STEPS_PER_UNIT},
        {"stepsPerUnit": MAX_STEPS_PER_UNIT + 1, "checkpointInterval": MAX_STEPS_PER_UNIT + 1},
        MAX_STEPS_PER_UNIT + 1,
        MAX_STEPS_PER_UNIT,
    ),
    "segments": (
        # 2 validators check 2 of 4,096 segments: the pool wants 2,047 x the price as collateral
        {"stepsPerUnit": MAX_SEGMENTS, "checkpointInterval": 1, "collateralPerUnit": 2047 * 100 * E18},
        {"stepsPerUnit": MAX_SEGMENTS + 1, "checkpointInterval": 1, "collateralPerUnit": 2047 * 100 * E18},
        MAX_SEGMENTS + 1,
        MAX_SEGMENTS,
    ),
    "commitWindow": (
        {"commitWindow": MAX_COMMIT_WINDOW},
        {"commitWindow": MAX_COMMIT_WINDOW + 1},
        MAX_COMMIT_WINDOW + 1,
        MAX_COMMIT_WINDOW,
    ),
}
CHEAP = {"maxPricePerUnit": 100 * E18}  # the solver's price: a 10,000-round job stays affordable


def afford(p: Protocol, kw: dict[str, Any]) -> None:
    """Mint the requester what job `kw` escrows, so only the bounds decide."""
    rounds, shards = kw.get("rounds", 1), kw.get("shards", 1)
    units = rounds * shards + (rounds if shards > 1 else 0)
    per_unit = kw.get("maxPricePerUnit", 200 * E18) + 2 * p.params["validatorFee"]
    p.tx(p.deployer, p.token.functions.mint(p.accounts[1].address, units * per_unit))


@pytest.mark.parametrize("field", list(BOUNDS))
def test_a_job_at_the_bound_is_accepted_and_its_unit_claimed_and_committed(proto: Protocol, field: str) -> None:
    p, r, s = proto, proto.accounts[1], proto.accounts[2]
    inside = {**CHEAP, **BOUNDS[field][0]}
    afford(p, inside)
    first = p.pool.functions.nextUnitId().call()
    p.submit(r, **inside)
    unit_id = p.pool.functions.nextUnitId().call() - 1  # the last unit the job opened
    assert unit_id >= first
    extra = inside.get("collateralPerUnit", 0) - p.registry.functions.freeStakeOf(s.address).call()
    if extra > 0:  # the solver stakes what the job's collateral needs
        p.fund(s, extra)
        p.tx(s, p.registry.functions.stake(extra))
    claim_and_commit(p, unit_id, s, Work.honest(1))
    u = p.unit(unit_id)
    assert u["status"] == COMMITTED and u["solver"] == s.address
    assert u["seedBlock"] > 0
    p.check_conservation()


@pytest.mark.parametrize("field", list(BOUNDS))
def test_a_job_past_the_bound_is_refused_at_submit_naming_field_value_and_bound(proto: Protocol, field: str) -> None:
    p, r = proto, proto.accounts[1]
    _, outside, value, bound = BOUNDS[field]
    escrow = p.pool.functions.totalEscrow().call()
    err = expect(p, "JobParamTooLarge", r, p.pool.functions.submitJob(p.job_params(**CHEAP, **outside)))
    assert err.error_args == {"field": field, "value": value, "max": bound}  # max: the Python mirror's value
    assert p.pool.functions.totalEscrow().call() == escrow


def test_a_commit_window_of_2_64_minus_1_is_refused_at_submit_not_left_unclaimable(proto: Protocol) -> None:
    """Issue 12, case 2: accepted before, and every claim then reverted with an overflow panic."""
    p, r = proto, proto.accounts[1]
    err = expect(p, "JobParamTooLarge", r, p.pool.functions.submitJob(p.job_params(commitWindow=U64)))
    assert err.error_args == {"field": "commitWindow", "value": U64, "max": MAX_COMMIT_WINDOW}


def test_the_longest_commit_window_sets_a_deadline_30_days_after_the_claim(proto: Protocol) -> None:
    p, r, s = proto, proto.accounts[1], proto.accounts[2]
    p.submit(r, commitWindow=MAX_COMMIT_WINDOW)
    unit_id = p.pool.functions.nextUnitId().call() - 1
    p.advance(p.params["claimWindow"])
    rc = p.tx(s, p.pool.functions.claim(unit_id))
    claimed_at = p.w3.eth.get_block(rc["blockNumber"])["timestamp"]
    assert p.unit(unit_id)["deadline"] == claimed_at + MAX_COMMIT_WINDOW
    p.advance(MAX_COMMIT_WINDOW + 1)
    p.tx(p.accounts[9], p.pool.functions.timeoutClaim(unit_id))  # the deadline passes and the unit reopens
    p.check_conservation()


def test_a_budget_the_pool_escrow_cannot_hold_is_refused_not_a_panic(proto: Protocol) -> None:
    """With some escrow held, a job whose budget alone fits 128 bits but whose sum with the pool's does not."""
    p, r = proto, proto.accounts[1]
    p.submit(r)
    fees = 2 * p.params["validatorFee"]
    job = p.job_params(maxPricePerUnit=U128 - fees, collateralPerUnit=U128)
    err = expect(p, "InvalidJobParams", r, p.pool.functions.submitJob(job))
    assert err.error_args["field"] == "budget"
    p.check_conservation()


@pytest.mark.parametrize(("segments", "price"), [(4, 200 * E18), (5, 200 * E18), (30, 10 * E18), (1, 50 * E18)])
def test_collateral_below_what_makes_faking_a_segment_unprofitable_is_refused(
    proto: Protocol, segments: int, price: int
) -> None:
    """Issue 11, attack 11: the pool refuses a job under which faking one segment has a positive expected value
    (collateral x P(caught) < price x P(not caught), P = min(validators, segments) / segments)."""
    p, r = proto, proto.accounts[1]
    need = min_collateral(price, segments, p.params["validatorsPerUnit"])
    shape = {"stepsPerUnit": 2 * segments, "checkpointInterval": 2, "maxPricePerUnit": price}
    if need > 0:
        low = p.job_params(**shape, collateralPerUnit=need - 1)
        err = expect(p, "CollateralTooLow", r, p.pool.functions.submitJob(low))
        assert err.error_args == {"collateral": need - 1, "needed": need}
    afford(p, shape)
    p.submit(r, **shape, collateralPerUnit=need)  # at the minimum: accepted
    p.check_conservation()


# -- any job: refused with a named error, or claimable and committable; never a panic

SUBMIT_REFUSALS = {"InvalidJobParams", "JobParamTooLarge", "CollateralTooLow", "ERC20InsufficientBalance"}
CLAIM_REFUSALS = {"PriceTooHigh", "InsufficientFreeStake"}


def edgy(top: int, *edges: int) -> st.SearchStrategy[int]:
    """Integers in [0, top], often at the edges that matter or below the largest of them."""
    near = {v + d for v in (0, top, *edges) for d in (-1, 0, 1)}
    return st.one_of(
        st.sampled_from(sorted(v for v in near if 0 <= v <= top)),
        st.integers(0, min(top, 2 * max(edges))),
        st.integers(0, top),
    )


# A job a solver of the standard cast can claim, and what each of its fields may be turned into.
BASE = {
    "rounds": 1,
    "shards": 1,
    "stepsPerUnit": 8,
    "checkpointInterval": 2,
    "maxPricePerUnit": 200 * E18,
    "collateralPerUnit": 300 * E18,
    "commitWindow": 60,
}
HOSTILE: dict[str, st.SearchStrategy[int]] = {
    "rounds": edgy(U32, MAX_ROUNDS),
    "shards": edgy(U32, MAX_SHARDS),
    "stepsPerUnit": edgy(U32, MAX_STEPS_PER_UNIT, MAX_SEGMENTS),
    "checkpointInterval": edgy(U32, 1, MAX_STEPS_PER_UNIT),
    "maxPricePerUnit": edgy(U128, 100 * E18, 200 * E18),
    "collateralPerUnit": edgy(U128, 1000 * E18),
    "commitWindow": edgy(U64, 30, MAX_COMMIT_WINDOW),
}


@st.composite
def any_job(draw: st.DrawFn) -> dict[str, int]:
    """A claimable job with one to three fields made hostile; half the time the checkpoint interval is then
    made to divide the steps, so more of them reach a claim."""
    fields = dict(BASE)
    for key in draw(st.sets(st.sampled_from(sorted(HOSTILE)), min_size=1, max_size=3)):
        fields[key] = draw(HOSTILE[key])
    interval = fields["checkpointInterval"]
    if interval and draw(st.booleans()):
        fields["stepsPerUnit"] = max(1, fields["stepsPerUnit"] // interval) * interval
    return fields


def no_panic(err: ContractRevert, allowed: set[str], what: str) -> None:
    assert err.name != "Panic", f"{what} panicked: {err}"
    assert err.name in allowed, f"{what} refused with {err}"
    event(f"{what} refused: {err.name}")


@given(fields=any_job())
@example(fields={**BASE, "commitWindow": U64})  # issue 12: every claim of this job used to panic
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_any_job_is_refused_with_a_named_error_or_can_be_claimed_and_committed(
    proto: Protocol, fields: dict[str, int]
) -> None:
    p, r, s = proto, proto.accounts[1], proto.accounts[2]
    snap = p.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
    try:
        p.tx(p.deployer, p.token.functions.mint(r.address, 10**7 * E18))  # a 10,000-round job is affordable
        try:
            p.submit(r, **fields)
        except ContractRevert as err:
            no_panic(err, SUBMIT_REFUSALS, "submitJob")
            return
        unit_id = p.pool.functions.nextUnitId().call() - 1
        p.advance(p.params["claimWindow"])
        try:
            p.tx(s, p.pool.functions.claim(unit_id))
        except ContractRevert as err:
            no_panic(err, CLAIM_REFUSALS, "claim")
            return
        p.tx(s, p.pool.functions.commit(unit_id, Work.honest(1).root, Work.honest(1).final_hash, "bafymanifest"))
        assert p.unit(unit_id)["status"] == COMMITTED
        p.check_conservation()
        event("claimed and committed")
    finally:
        p.w3.provider.make_request("evm_revert", [snap])  # type: ignore[arg-type]
