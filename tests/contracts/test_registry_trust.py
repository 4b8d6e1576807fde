"""NodeRegistry among strangers (issue 11): sybil-resistant entry to the validator set, bounded jail,
validated parameters and narrow per-contract authority. Each test plays the attack on the real deployment."""

from __future__ import annotations

from typing import Any

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3.exceptions import ContractCustomError

from gensyn_py.devnet.deploy import (
    DEFAULT_PARAMS,
    PERM_COMPLETED,
    PERM_FRAUD,
    PERM_MISSED,
    PERM_STAKE_ANY,
    PERM_STAKE_OWN,
    _deploy,
)
from gensyn_py.errors import ContractRevert
from tests.contracts.flows import claim_and_commit
from tests.contracts.helpers import E18, GAS, SOLVER, VALIDATOR, Protocol, Work, protocol_errors
from tests.contracts.test_lifecycle import test_solver_with_wrong_transcript_is_rejected_voted_down_and_slashed
from tests.contracts.test_registry import expect

HW = (1, 16000, 100, 10 * E18)
MIN = DEFAULT_PARAMS["minValidatorStake"]


def validator_set(p: Protocol, device: int = 1) -> list[str]:
    reg = p.registry.functions
    return [reg.validatorAt(device, i).call() for i in range(reg.validatorCount(device).call())]


def fresh(p: Protocol, n: int, tokens: int) -> list[LocalAccount]:
    """`n` new addresses, each with gas money and `tokens` tokens approved to the registry and the pool."""
    out = []
    for _ in range(n):
        a = Account.create()
        p.w3.provider.make_request("anvil_setBalance", [a.address, hex(10**20)])  # type: ignore[arg-type]
        if tokens:
            p.fund(a, tokens)
        else:
            for spender in (p.registry, p.pool):
                p.tx(a, p.token.functions.approve(spender.address, 2**256 - 1))
        out.append(a)
    return out


def as_contract(p: Protocol, sender: str, fn: Any) -> Any:
    """Send `fn` from a contract's own address (anvil impersonation): what that contract could do if its
    code asked. A revert raises ContractRevert with the decoded custom error."""
    mk = p.w3.provider.make_request
    mk("anvil_impersonateAccount", [sender])  # type: ignore[arg-type]
    mk("anvil_setBalance", [sender, hex(10**20)])  # type: ignore[arg-type]
    try:
        tx = fn.build_transaction({"from": sender, "gas": GAS, "maxFeePerGas": 10**11, "maxPriorityFeePerGas": 1})
        res = mk("eth_call", [{"from": sender, "to": tx["to"], "data": tx["data"], "gas": hex(GAS)}, "latest"])
        if "error" in res:
            data = res["error"].get("data")
            raise p.errors.decode(data["data"] if isinstance(data, dict) else data)
        h = mk("eth_sendTransaction", [{"from": sender, "to": tx["to"], "data": tx["data"], "gas": hex(GAS)}])
        rc = p.w3.eth.wait_for_transaction_receipt(h["result"])
        assert rc["status"] == 1
        return rc
    finally:
        mk("anvil_stopImpersonatingAccount", [sender])  # type: ignore[arg-type]


# ------------------------------------------------------------------ sybil entry


def test_one_wei_sybils_never_enter_the_validator_set_nor_a_draw(proto: Protocol) -> None:
    """Issue 11, attack 1: a cheating solver registers 20 addresses with 1 wei each in the block where its
    unit's draw becomes possible. None enters the set, so the draw picks only bonded validators."""
    p = proto
    honest = validator_set(p)
    p.submit(p.accounts[1])
    p.advance(p.params["claimWindow"])
    p.tx(p.accounts[2], p.pool.functions.claim(1))
    work = Work.honest(4)
    p.tx(p.accounts[2], p.pool.functions.commit(1, work.root, work.final_hash, "bafymanifest"))
    sybils = fresh(p, 20, 1)
    for s in sybils:
        rc = p.tx(s, p.registry.functions.register(VALIDATOR, HW))
        p.tx(s, p.registry.functions.stake(1))
        assert not p.events(rc, p.registry, "ValidatorSetJoined")
        err = expect(p, "StakeBelowMinimum", s, p.registry.functions.joinValidatorSet())
        assert (err.error_args["have"], err.error_args["need"]) == (1, MIN)
    assert validator_set(p) == honest  # draws' gas and odds are untouched by the 20 registrations
    p.mine(2)
    p.tx(p.accounts[9], p.pool.functions.drawValidators(1))
    drawn = p.unit(1)["validators"]
    assert drawn and set(drawn) <= set(honest)
    p.check_conservation()


def test_an_attacker_with_n_addresses_needs_n_bonds(proto: Protocol) -> None:
    """The attacker's budget buys seats one minimum each: 3 bonds minus 1 wei spread over 3 addresses
    seats 2 of them; the third enters only when it tops up."""
    p = proto
    before = len(validator_set(p))
    a, b, c = fresh(p, 3, 0)
    p.tx(p.deployer, p.token.functions.mint(a.address, MIN))
    p.tx(p.deployer, p.token.functions.mint(b.address, MIN))
    p.tx(p.deployer, p.token.functions.mint(c.address, MIN - 1))
    for s in (a, b, c):
        p.tx(s, p.registry.functions.register(VALIDATOR, HW))
        p.tx(s, p.registry.functions.stake(p.token.functions.balanceOf(s.address).call()))
    assert len(validator_set(p)) == before + 2
    assert p.registry.functions.isValidator(a.address).call() and not p.registry.functions.isValidator(c.address).call()
    p.tx(p.deployer, p.token.functions.mint(c.address, 1))
    rc = p.tx(c, p.registry.functions.stake(1))
    assert p.events(rc, p.registry, "ValidatorSetJoined")[0]["args"]["node"] == c.address
    assert len(validator_set(p)) == before + 3
    p.check_conservation()


def test_entry_blocks_let_a_draw_freeze_its_candidates(proto: Protocol) -> None:
    """A bonded newcomer that enters after a unit's commitment is marked with its entry block, so a draw
    seeded after the commitment can tell it from the candidates that were there before."""
    p = proto
    reg = p.registry.functions
    (late,) = fresh(p, 1, MIN)
    commit_block = p.w3.eth.block_number
    p.tx(late, reg.register(VALIDATOR, HW))
    assert reg.validatorSince(late.address).call() == 0
    rc = p.tx(late, reg.stake(MIN))
    assert reg.validatorSince(late.address).call() == rc["blockNumber"] > commit_block
    n = reg.validatorCount(1).call()
    since = {e[0]: e[1] for e in (reg.validatorEntry(1, i).call() for i in range(n))}
    assert since[late.address] > commit_block
    assert all(b <= commit_block for a, b in since.items() if a != late.address)
    p.tx(late, reg.unbond(1))
    assert reg.validatorSince(late.address).call() == 0


def test_unbonding_under_the_minimum_leaves_the_set_and_staking_back_rejoins(proto: Protocol) -> None:
    p, v = proto, proto.accounts[3]
    assert v.address in validator_set(p)
    p.tx(v, p.registry.functions.unbond(1000 * E18 - MIN))  # exactly the minimum left: still in
    assert v.address in validator_set(p)
    rc = p.tx(v, p.registry.functions.unbond(1))
    assert p.events(rc, p.registry, "ValidatorSetLeft")[0]["args"]["node"] == v.address
    assert v.address not in validator_set(p)
    assert p.registry.functions.rolesOf(v.address).call() & VALIDATOR  # the role stays: re-entry is automatic
    p.tx(v, p.registry.functions.stake(1))
    assert v.address in validator_set(p)
    p.check_conservation()


def test_join_and_leave_the_validator_set(proto: Protocol) -> None:
    p, s, v = proto, proto.accounts[2], proto.accounts[3]
    expect(p, "AlreadyValidator", v, p.registry.functions.joinValidatorSet())
    expect(p, "NotRegistered", p.accounts[9], p.registry.functions.joinValidatorSet())
    p.tx(v, p.registry.functions.leaveValidatorSet())
    p.tx(v, p.registry.functions.stake(1))  # without the role, staking does not re-enter
    assert v.address not in validator_set(p)
    rc = p.tx(v, p.registry.functions.joinValidatorSet())
    assert p.events(rc, p.registry, "RolesChanged")[0]["args"]["roles"] & VALIDATOR
    assert v.address in validator_set(p)
    rc = p.tx(s, p.registry.functions.joinValidatorSet())  # a solver takes the role too
    assert p.registry.functions.rolesOf(s.address).call() == SOLVER | VALIDATOR
    assert s.address in validator_set(p)


# ------------------------------------------------------------------ bounded jail


def test_fraud_jails_for_the_period_then_unjail_serves_again(proto: Protocol) -> None:
    """The lifecycle's fraud play jails the cheating solver, which is also a validator; while jailed it is
    neither drawn nor can claim; after `jailPeriod` it unjails, re-enters the set and serves again. (A
    validator that accepted is jailed only when its own segment is the one proven wrong: test_fair_slashing.)"""
    p = proto
    solver = p.accounts[2]
    p.tx(solver, p.registry.functions.joinValidatorSet())
    test_solver_with_wrong_transcript_is_rejected_voted_down_and_slashed(p)
    assert p.registry.functions.isJailed(solver.address).call()
    until = p.registry.functions.jailedUntil(solver.address).call()
    now = p.w3.eth.get_block("latest")["timestamp"]
    assert now < until <= now + p.params["jailPeriod"]
    assert solver.address not in validator_set(p)
    # not drawn while jailed: a fresh unit draws from the set, which does not hold it
    p.submit(p.accounts[1])
    claim_and_commit(p, 2, _second_solver(p), Work.honest(4))
    assert solver.address not in p.unit(2)["validators"]
    expect(p, "StillJailed", solver, p.registry.functions.unjail())
    expect(p, "StillJailed", solver, p.registry.functions.joinValidatorSet())
    free = next(a for a in p.accounts[3:8] if not p.registry.functions.isJailed(a.address).call())
    expect(p, "NotJailed", free, p.registry.functions.unjail())
    p.advance(until - now)
    rc = p.tx(solver, p.registry.functions.unjail())
    assert p.events(rc, p.registry, "Unjailed")[0]["args"]["node"] == solver.address
    assert p.events(rc, p.registry, "ValidatorSetJoined")  # 700 bonded >= the minimum: back in the draws
    assert not p.registry.functions.isJailed(solver.address).call()
    assert solver.address in validator_set(p)
    p.tx(solver, p.pool.functions.claim(1))  # the reopened unit: the solver serves again
    p.check_conservation()


def _second_solver(p: Protocol) -> LocalAccount:
    (s,) = fresh(p, 1, 0)
    p.tx(p.deployer, p.token.functions.mint(s.address, 1000 * E18))
    p.tx(s, p.registry.functions.register(SOLVER, HW))
    p.tx(s, p.registry.functions.stake(1000 * E18))
    return s


# ------------------------------------------------------------------ a registry with the deployer as its protocols


def bare_registry(p: Protocol, perms: int, *, jail: int = 100, extra: tuple[str, int] | None = None) -> Any:
    """A fresh registry wired to the deployer with `perms` (and optionally another caller)."""
    reg = p._c(
        "NodeRegistry",
        _deploy(p.w3, p.deployer, p.artifacts["NodeRegistry"], p.token.address, 100, MIN, jail, p.deployer.address),
    )
    who, bits = [p.deployer.address], [perms]
    if extra:
        who.append(extra[0])
        bits.append(extra[1])
    p.tx(p.deployer, reg.functions.wire(who, bits, 99, MIN))
    return reg


def staked(p: Protocol, reg: Any, acct: LocalAccount, roles: int, amount: int) -> None:
    p.tx(p.deployer, p.token.functions.mint(acct.address, amount))
    p.tx(acct, p.token.functions.approve(reg.address, 2**256 - 1))
    p.tx(acct, reg.functions.register(roles, HW))
    p.tx(acct, reg.functions.stake(amount))


def test_jail_is_extended_by_a_second_fraud_and_slashing_under_the_minimum_keeps_it_out(proto: Protocol) -> None:
    p = proto
    reg = bare_registry(p, PERM_STAKE_ANY | PERM_FRAUD)
    (v,) = fresh(p, 1, 0)
    staked(p, reg, v, VALIDATOR, 2 * MIN)
    assert reg.functions.isValidator(v.address).call()
    rc = p.tx(p.deployer, reg.functions.recordFraud(v.address))
    first = p.events(rc, reg, "Jailed")[0]["args"]["until"]
    assert p.events(rc, reg, "ValidatorSetLeft") and not reg.functions.isValidator(v.address).call()
    p.advance(50)
    rc = p.tx(p.deployer, reg.functions.recordFraud(v.address))
    second = p.events(rc, reg, "Jailed")[0]["args"]["until"]
    assert second > first and reg.functions.jailedUntil(v.address).call() == second
    p.tx(p.deployer, reg.functions.slash(v.address, MIN + 1, p.deployer.address))  # now under the minimum
    p.advance(100)
    rc = p.tx(v, reg.functions.unjail())
    assert not p.events(rc, reg, "ValidatorSetJoined")  # free, but not in the draws without the minimum
    assert not reg.functions.isJailed(v.address).call() and not reg.functions.isValidator(v.address).call()
    p.tx(v, p.token.functions.approve(reg.address, 2**256 - 1))
    p.tx(p.deployer, p.token.functions.mint(v.address, 1))
    p.tx(v, reg.functions.stake(1))
    assert reg.functions.isValidator(v.address).call()
    # a slash that takes it under the minimum removes it at once
    rc = p.tx(p.deployer, reg.functions.slash(v.address, 1, p.deployer.address))
    assert p.events(rc, reg, "ValidatorSetLeft") and not reg.functions.isValidator(v.address).call()


# ------------------------------------------------------------------ parameters


def deploy_error(p: Protocol, *args: Any) -> ContractRevert:
    with pytest.raises(ContractCustomError) as exc:
        _deploy(p.w3, p.deployer, p.artifacts["NodeRegistry"], *args)
    return protocol_errors(p.artifacts).decode(str(exc.value.data))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("token", 0),
        ("unbondingDelay", 0),
        ("unbondingDelay", 3650 * 86400 + 1),
        ("minValidatorStake", 0),
        ("minValidatorStake", 2**128),
        ("jailPeriod", 0),
        ("jailPeriod", 3650 * 86400 + 1),
    ],
)
def test_each_constructor_parameter_is_refused_out_of_range(proto: Protocol, name: str, value: int) -> None:
    p = proto
    good: dict[str, Any] = {"token": p.token.address, "unbondingDelay": 100, "minValidatorStake": MIN, "jailPeriod": 10}
    args = {**good, name: "0x" + "00" * 20 if name == "token" else value}
    err = deploy_error(p, *args.values(), p.deployer.address)
    assert err.name == "InvalidParam"
    assert (err.error_args["name"], err.error_args["value"]) == (name, value)


def test_wiring_refuses_a_minimum_below_one_bond_and_bad_permissions(proto: Protocol) -> None:
    p, d = proto, proto.deployer
    reg = p._c(
        "NodeRegistry", _deploy(p.w3, d, p.artifacts["NodeRegistry"], p.token.address, 100, MIN, 10, d.address)
    )
    err = expect(p, "InvalidParam", d, reg.functions.wire([d.address], [PERM_STAKE_ANY], 99, MIN + 1))
    assert (err.error_args["name"], err.error_args["value"]) == ("minValidatorStake", MIN)
    err = expect(p, "InvalidParam", d, reg.functions.wire([d.address], [], 99, MIN))
    assert err.error_args["name"] == "permissions"
    for bad in (0, 32, PERM_STAKE_ANY | PERM_STAKE_OWN):
        err = expect(p, "InvalidParam", d, reg.functions.wire([d.address], [bad], 99, MIN))
        assert (err.error_args["name"], err.error_args["value"]) == ("permissions", bad)
    err = expect(p, "InvalidParam", d, reg.functions.wire(["0x" + "00" * 20], [PERM_MISSED], 99, MIN))
    assert err.error_args["name"] == "protocol"
    expect(p, "OwnableUnauthorizedAccount", p.accounts[9], reg.functions.wire([d.address], [1], 99, MIN))


def test_deployment_grants_the_pool_and_the_committee_only_their_permissions(proto: Protocol) -> None:
    p = proto
    reg = p.registry.functions
    assert reg.permissionsOf(p.pool.address).call() == PERM_STAKE_ANY | PERM_COMPLETED | PERM_MISSED | PERM_FRAUD
    assert reg.permissionsOf(p.committee.address).call() == PERM_STAKE_OWN | PERM_MISSED
    assert reg.minValidatorStake().call() == p.params["validatorBond"]
    assert reg.jailPeriod().call() == p.params["jailPeriod"]


# ------------------------------------------------------------------ authority


def test_the_committee_cannot_jail_reward_or_touch_stake_it_did_not_lock(proto: Protocol) -> None:
    """Attack 12: the committee was authorised to lock, unlock and slash anyone. Now, from its own address,
    it cannot jail or credit a node, cannot release or take the pool's collateral, and slashes at most
    what it locked itself (from bonded stake)."""
    p = proto
    c, reg = p.committee.address, p.registry.functions
    solver, v = p.accounts[2].address, p.accounts[3].address
    p.submit(p.accounts[1])
    p.advance(p.params["claimWindow"])
    p.tx(p.accounts[2], p.pool.functions.claim(1))  # the pool locks 300 collateral
    locked, bonded = reg.lockedOf(solver).call(), reg.bondedOf(solver).call()
    for fn, needed in (
        (reg.recordFraud(solver), PERM_FRAUD),
        (reg.recordCompleted(solver), PERM_COMPLETED),
        (reg.unlockCompleted(solver, locked), PERM_COMPLETED),
    ):
        with pytest.raises(ContractRevert) as exc:
            as_contract(p, c, fn)
        assert exc.value.name == "NotPermitted"
        assert (exc.value.error_args["caller"], exc.value.error_args["needed"]) == (c, needed)
    as_contract(p, c, reg.unlock(solver, locked))  # nothing of its own to unlock: the collateral stays
    as_contract(p, c, reg.slash(solver, locked, c))  # nothing of its own to take
    assert (reg.lockedOf(solver).call(), reg.bondedOf(solver).call()) == (locked, bonded)
    as_contract(p, c, reg.recordMissed(v))  # what it needs still works
    # what it locks itself it may unlock or slash, no more, and only from bonded stake
    as_contract(p, c, reg.lock(v, 30 * E18))
    assert reg.lockedBy(c, v).call() == 30 * E18
    as_contract(p, c, reg.unlock(v, 10 * E18))
    before = reg.bondedOf(v).call()
    as_contract(p, c, reg.slash(v, 500 * E18, p.accounts[9].address))
    assert reg.bondedOf(v).call() == before - 20 * E18
    assert reg.lockedBy(c, v).call() == 0 and reg.lockedOf(v).call() == 0
    assert as_contract(p, c, reg.tryLock(v, 10**30))["status"] == 1  # a failed tryLock locks nothing
    assert reg.lockedBy(c, v).call() == 0


def test_a_scoped_caller_pays_out_only_what_it_locked(proto: Protocol) -> None:
    """PERM_STAKE_OWN | PERM_COMPLETED: `unlockCompleted` releases at most its own lock (the full-scope
    caller's lock on the same node stays) and counts the completion."""
    p = proto
    (other,) = fresh(p, 1, 0)
    reg = bare_registry(p, PERM_STAKE_ANY, extra=(other.address, PERM_STAKE_OWN | PERM_COMPLETED))
    (v,) = fresh(p, 1, 0)
    staked(p, reg, v, VALIDATOR, 100 * E18)
    p.tx(p.deployer, reg.functions.lock(v.address, 40 * E18))
    p.tx(other, reg.functions.lock(v.address, 10 * E18))
    p.tx(other, reg.functions.unlockCompleted(v.address, 50 * E18))
    assert reg.functions.lockedOf(v.address).call() == 40 * E18
    assert reg.functions.reputationOf(v.address).call()[0] == 1
    expect(p, "NotPermitted", p.deployer, reg.functions.unlockCompleted(v.address, 1))


def test_outsiders_hold_no_permission(proto: Protocol) -> None:
    p, a, node = proto, proto.accounts[9], proto.accounts[2].address
    for fn in (p.registry.functions.tryLock(node, 1), p.registry.functions.unlockCompleted(node, 1)):
        err = expect(p, "NotPermitted", a, fn)
        assert err.error_args["caller"] == a.address
