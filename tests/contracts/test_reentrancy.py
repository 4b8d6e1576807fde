"""Reentrancy: a hostile ERC-20 that calls back into the protocol in the middle of a transfer, and a
contract account (requester) that would re-enter if anything ever called into it.

The protocol is deployed a second time with `HostileToken` in place of `GensynToken` (same wiring as
`gensyn_py.devnet.deploy.deploy_protocol`, which always deploys its own token)."""

from __future__ import annotations

from typing import Any

import pytest
from eth_utils import keccak
from web3 import Web3

from gensyn_py.devnet.deploy import (
    DEFAULT_PARAMS,
    POOL_FIELDS,
    REGISTRY_PERMISSIONS,
    _call,
    _deploy,
    committee_args,
    deploy_libraries,
)
from gensyn_py.errors import ContractRevert
from tests.contracts.flows import claim_and_commit
from tests.contracts.helpers import E18, SOLVER, VALIDATOR, Protocol, Work, protocol_errors
from tests.contracts.test_registry import expect

REENTRANT = keccak(text="ReentrancyGuardReentrantCall()")[:4]


class HostileProtocol(Protocol):
    """The protocol wired to `HostileToken` (the token's `mint` is public, so `fund`/`node` work)."""

    def __init__(self, w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> None:
        self.w3, self.accounts, self.artifacts = w3, accounts, artifacts
        self.deployer = d = accounts[0]
        p = dict(DEFAULT_PARAMS)
        token = _deploy(w3, d, artifacts["HostileToken"])
        registry = _deploy(
            w3, d, artifacts["NodeRegistry"], token, p["unbondingDelay"], p["minValidatorStake"], p["jailPeriod"],
            d.address,
        )
        pool_params = tuple(int(p[k]) for k in POOL_FIELDS)
        libraries = deploy_libraries(w3, d, artifacts)
        pool = _deploy(w3, d, artifacts["TaskPool"], token, registry, pool_params, d.address, libraries=libraries)
        committee = _deploy(w3, d, artifacts["DisputeCommittee"], registry, *committee_args(p), d.address)
        _call(w3, d, artifacts["TaskPool"], pool, "wire", committee, "0x" + "00" * 20)  # the hostile pool plays no game
        _call(w3, d, artifacts["DisputeCommittee"], committee, "wire", pool)
        self.params = p
        self.errors = protocol_errors(artifacts)
        self.token = self._c("HostileToken", token)
        self.registry = self._c("NodeRegistry", registry)
        self.pool = self._c("TaskPool", pool)
        self.committee = self._c("DisputeCommittee", committee)
        exposure = self.pool.functions.longestExposure().call()
        perms = [REGISTRY_PERMISSIONS["TaskPool"], REGISTRY_PERMISSIONS["DisputeCommittee"]]
        wiring = ([pool, committee], perms, exposure, p["validatorBond"])
        _call(w3, d, artifacts["NodeRegistry"], registry, "wire", *wiring)
        self.gas_used = 0

    def arm(self, trigger: str, target: Any, calldata: str, bubble: bool) -> None:
        self.tx(self.deployer, self.token.functions.arm(trigger, target.address, calldata, bubble))

    def last_revert_selector(self) -> bytes:
        assert self.token.functions.fired().call()
        assert not self.token.functions.lastOk().call()
        return bytes(self.token.functions.lastRevert().call())[:4]


@pytest.fixture(scope="module")
def hostile_base(w3: Any, accounts: Any, artifacts: Any) -> HostileProtocol:
    p = HostileProtocol(w3, accounts, artifacts)
    p.node(accounts[2], SOLVER)
    for a in accounts[3:6]:
        p.node(a, VALIDATOR)
    p.fund(accounts[1], 100_000 * E18)
    return p


@pytest.fixture
def hp(hostile_base: HostileProtocol, snapshot: None) -> HostileProtocol:
    return hostile_base


def _cancelled_job_credit(p: HostileProtocol) -> int:
    r = p.accounts[1]
    job = p.submit(r)
    p.tx(r, p.pool.functions.cancelJob(job))
    refund = p.pool.functions.credit(r.address).call()
    assert refund == 200 * E18 + 2 * p.params["validatorFee"]
    return refund


def test_claim_credit_reentered_from_the_token_transfer_is_refused(hp: HostileProtocol) -> None:
    p, r = hp, hp.accounts[1]
    refund = _cancelled_job_credit(p)
    claim = p.pool.encode_abi("claimCredit", [])
    # bubbling: the re-entrant claimCredit's ReentrancyGuardReentrantCall makes the outer claim revert
    p.arm(p.pool.address, p.pool, claim, True)
    expect(p, "ReentrancyGuardReentrantCall", r, p.pool.functions.claimCredit())
    p.tx(p.deployer, p.token.functions.arm(p.pool.address, p.pool.address, claim, False))  # re-arm (nothing fired)
    before = p.token.functions.balanceOf(r.address).call()
    pool_before = p.token.functions.balanceOf(p.pool.address).call()
    p.tx(r, p.pool.functions.claimCredit())
    assert p.last_revert_selector() == REENTRANT
    assert p.token.functions.balanceOf(r.address).call() == before + refund  # paid exactly once
    assert p.token.functions.balanceOf(p.pool.address).call() == pool_before - refund
    assert p.token.functions.balanceOf(p.token.address).call() == 0
    assert p.pool.functions.totalCredit().call() == 0
    expect(p, "NoCredit", r, p.pool.functions.claimCredit())
    p.check_conservation()


def test_cancel_job_reentered_from_claim_credit_and_submit_is_refused(hp: HostileProtocol) -> None:
    p, r = hp, hp.accounts[1]
    _cancelled_job_credit(p)
    job2 = p.submit(r)
    cancel = p.pool.encode_abi("cancelJob", [job2])
    p.arm(p.pool.address, p.pool, cancel, True)
    expect(p, "ReentrancyGuardReentrantCall", r, p.pool.functions.claimCredit())
    # during submitJob's transferFrom (requester -> pool) the pool's guard is held too
    p.arm(r.address, p.pool, cancel, True)
    expect(p, "ReentrancyGuardReentrantCall", r, p.pool.functions.submitJob(p.job_params()))
    p.arm(r.address, p.pool, cancel, False)
    escrow = p.pool.functions.totalEscrow().call()
    p.tx(r, p.pool.functions.submitJob(p.job_params()))
    assert p.last_revert_selector() == REENTRANT
    assert p.pool.functions.totalEscrow().call() == escrow + 200 * E18 + 2 * p.params["validatorFee"]
    assert p.pool.functions.jobState(job2).call()[1] == 1  # job2 still Active: the re-entrant cancel did nothing
    p.check_conservation()


def test_withdraw_reentered_from_the_token_transfer_is_refused(hp: HostileProtocol) -> None:
    p, v = hp, hp.accounts[3]
    p.tx(v, p.registry.functions.unbond(100 * E18))
    p.advance(p.params["unbondingDelay"] + 1)
    withdraw = p.registry.encode_abi("withdraw", [])
    p.arm(p.registry.address, p.registry, withdraw, True)
    expect(p, "ReentrancyGuardReentrantCall", v, p.registry.functions.withdraw())
    p.arm(p.registry.address, p.registry, withdraw, False)
    before = p.token.functions.balanceOf(v.address).call()
    staked = p.registry.functions.totalStaked().call()
    p.tx(v, p.registry.functions.withdraw())
    assert p.last_revert_selector() == REENTRANT
    assert p.token.functions.balanceOf(v.address).call() == before + 100 * E18  # once
    assert p.registry.functions.totalStaked().call() == staked - 100 * E18
    expect(p, "NothingToWithdraw", v, p.registry.functions.withdraw())
    p.check_conservation()


def test_pool_reentered_during_a_slash_transfer_is_refused(hp: HostileProtocol) -> None:
    """closeVerdicts -> registry.slash (no-show validators) -> token.transfer(registry -> pool)
    -> pool.claimCredit: guard held."""
    p, r, s = hp, hp.accounts[1], hp.accounts[2]
    _cancelled_job_credit(p)  # r has credit the re-entrant call could try to move
    p.submit(r)
    unit = p.pool.functions.nextUnitId().call() - 1
    claim_and_commit(p, unit, s, Work.honest(4))
    drawn = len(p.unit(unit)["validators"])
    assert drawn > 0
    p.advance(p.params["verdictCommitWindow"] + p.params["revealWindow"] + 1)  # nobody reveals
    p.arm(p.registry.address, p.pool, p.pool.encode_abi("claimCredit", []), True)
    expect(p, "ReentrancyGuardReentrantCall", p.accounts[9], p.pool.functions.closeVerdicts(unit))
    p.arm(p.registry.address, p.pool, p.pool.encode_abi("claimCredit", []), False)
    credit_before = p.pool.functions.totalCredit().call()
    p.tx(p.accounts[9], p.pool.functions.closeVerdicts(unit))
    assert p.last_revert_selector() == REENTRANT
    penalty = p.params["validatorBond"] * p.params["livenessPenaltyBps"] // 10_000
    assert p.pool.functions.totalCredit().call() == credit_before + drawn * penalty
    p.check_conservation()


def test_payments_are_pull_only_and_a_contract_account_claims_once(hp: HostileProtocol) -> None:
    """No protocol path calls into a receiver (ERC-20 transfers only, no hooks): a hostile contract
    requester that would re-enter on any callback is never called, and claims its credit exactly once."""
    p = hp
    art = p.artifacts["HostileReceiver"]
    addr = _deploy(p.w3, p.deployer, art)
    recv = p.w3.eth.contract(address=Web3.to_checksum_address(addr), abi=art["abi"])
    p.tx(p.deployer, recv.functions.setReenter(p.pool.address, p.pool.encode_abi("claimCredit", [])))
    p.tx(p.deployer, p.token.functions.mint(addr, 10_000 * E18))

    def as_recv(target: Any, data: str) -> Any:
        return p.tx(p.deployer, recv.functions.exec(target.address, data))

    as_recv(p.token, p.token.encode_abi("approve", [p.pool.address, 2**256 - 1]))
    as_recv(p.pool, p.pool.encode_abi("submitJob", [p.job_params()]))
    job = p.pool.functions.nextJobId().call() - 1
    as_recv(p.pool, p.pool.encode_abi("cancelJob", [job]))
    owed = p.pool.functions.credit(addr).call()
    assert owed == 200 * E18 + 2 * p.params["validatorFee"]
    bal = p.token.functions.balanceOf(addr).call()
    as_recv(p.pool, p.pool.encode_abi("claimCredit", []))
    assert p.token.functions.balanceOf(addr).call() == bal + owed
    assert recv.functions.callbacks().call() == 0  # nothing called into the receiver
    with pytest.raises(ContractRevert) as exc:
        as_recv(p.pool, p.pool.encode_abi("claimCredit", []))
    assert exc.value.name == "NoCredit"
    p.check_conservation()
