"""NodeRegistry: registration, staking, unbonding, protocol-only hooks, validator sets."""

from __future__ import annotations

import pytest

from gensyn_py.errors import ContractRevert
from tests.contracts.helpers import E18, SOLVER, VALIDATOR, Protocol, protocol_errors


def expect(p: Protocol, name: str, acct, fn) -> ContractRevert:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractRevert) as exc:
        p.tx(acct, fn)
    assert exc.value.name == name, exc.value
    return exc.value


def test_register_rejects_bad_roles_and_double_registration(proto: Protocol) -> None:
    p, a = proto, proto.accounts[9]
    hw = (1, 16000, 100, 10 * E18)
    err = expect(p, "InvalidRoles", a, p.registry.functions.register(0, hw))
    assert err.error_args["roles"] == 0
    expect(p, "InvalidRoles", a, p.registry.functions.register(8, hw))
    rc = p.tx(a, p.registry.functions.register(SOLVER, hw))
    assert p.events(rc, p.registry, "NodeRegistered")[0]["args"]["roles"] == SOLVER
    expect(p, "AlreadyRegistered", a, p.registry.functions.register(SOLVER, hw))


def test_stake_rejects_zero_and_unregistered(proto: Protocol) -> None:
    p = proto
    expect(p, "ZeroAmount", p.accounts[2], p.registry.functions.stake(0))
    p.fund(p.accounts[9], 10 * E18)
    expect(p, "NotRegistered", p.accounts[9], p.registry.functions.stake(E18))


def test_unbond_then_withdraw_only_after_delay(proto: Protocol) -> None:
    p, a = proto, proto.accounts[2]
    expect(p, "ZeroAmount", a, p.registry.functions.unbond(0))
    err = expect(p, "InsufficientFreeStake", a, p.registry.functions.unbond(1001 * E18))
    assert err.error_args["free"] == 1000 * E18
    expect(p, "NothingToWithdraw", a, p.registry.functions.withdraw())
    p.tx(a, p.registry.functions.unbond(400 * E18))
    p.check_conservation()
    assert p.registry.functions.bondedOf(a.address).call() == 600 * E18
    expect(p, "StillUnbonding", a, p.registry.functions.withdraw())
    p.advance(p.params["unbondingDelay"] + 1)
    bal = p.token.functions.balanceOf(a.address).call()
    p.tx(a, p.registry.functions.withdraw())
    p.check_conservation()
    assert p.token.functions.balanceOf(a.address).call() == bal + 400 * E18


def test_protocol_hooks_reject_outsiders(proto: Protocol) -> None:
    p, a, node = proto, proto.accounts[9], proto.accounts[2].address
    stake_any_or_own, completed, missed, fraud = 3, 4, 8, 16
    for fn, needed in (
        (p.registry.functions.lock(node, 1), stake_any_or_own),
        (p.registry.functions.unlock(node, 1), stake_any_or_own),
        (p.registry.functions.slash(node, 1, a.address), stake_any_or_own),
        (p.registry.functions.recordCompleted(node), completed),
        (p.registry.functions.recordMissed(node), missed),
        (p.registry.functions.recordFraud(node), fraud),
    ):
        err = expect(p, "NotPermitted", a, fn)
        assert (err.error_args["caller"], err.error_args["needed"]) == (a.address, needed)


def test_wire_only_once(proto: Protocol) -> None:
    p = proto
    expect(p, "AlreadyWired", p.deployer, p.registry.functions.wire([p.deployer.address], [1], 0, 0))
    expect(p, "AlreadyWired", p.deployer, p.pool.functions.wire(p.deployer.address, p.deployer.address))
    expect(p, "AlreadyWired", p.deployer, p.committee.functions.wire(p.deployer.address))


def test_unsafe_unbonding_delay_is_refused_at_wiring(w3, accounts, artifacts, snapshot) -> None:  # type: ignore[no-untyped-def]
    from web3.exceptions import ContractCustomError

    with pytest.raises(ContractCustomError) as exc:
        Protocol(w3, accounts, artifacts, {"unbondingDelay": 10})
    err = protocol_errors(artifacts).decode(str(exc.value.data))
    assert err.name == "UnsafeUnbondingDelay"
    assert err.error_args["delay"] == 10
    assert err.error_args["required"] > 10


def test_leave_validator_set_swaps_and_pops(proto: Protocol) -> None:
    """Leaving drops the VALIDATOR role and swap-and-pops the set (O(1))."""
    p = proto
    n = p.registry.functions.validatorCount(1).call()
    first = p.registry.functions.validatorAt(1, 0).call()
    last = p.registry.functions.validatorAt(1, n - 1).call()
    p.tx(p.by_address(first), p.registry.functions.leaveValidatorSet())
    assert p.registry.functions.validatorCount(1).call() == n - 1
    assert p.registry.functions.validatorAt(1, 0).call() == last
    assert p.registry.functions.rolesOf(first).call() & VALIDATOR == 0
    expect(p, "InvalidRoles", p.by_address(first), p.registry.functions.leaveValidatorSet())
    expect(p, "NotRegistered", p.accounts[9], p.registry.functions.leaveValidatorSet())


def test_token_mint_is_owner_only(proto: Protocol) -> None:
    p = proto
    expect(p, "OwnableUnauthorizedAccount", p.accounts[9], p.token.functions.mint(p.accounts[9].address, 1))


def test_slash_reaches_unbonding_stake(w3, accounts, artifacts, snapshot) -> None:  # type: ignore[no-untyped-def]
    """A fresh registry with the deployer as the only protocol: slashing takes bonded first, then unbonding."""
    from gensyn_py.devnet.deploy import _deploy

    p = Protocol(w3, accounts, artifacts)
    reg = p._c(
        "NodeRegistry",
        _deploy(w3, p.deployer, artifacts["NodeRegistry"], p.token.address, 100, E18, 10, p.deployer.address),
    )
    p.tx(p.deployer, reg.functions.wire([p.deployer.address], [1 | 16], 99, E18))
    node = accounts[9]
    p.tx(p.deployer, p.token.functions.mint(node.address, 100 * E18))
    p.tx(node, p.token.functions.approve(reg.address, 2**256 - 1))
    p.tx(node, reg.functions.register(SOLVER, (1, 1, 1, 1)))
    p.tx(node, reg.functions.stake(100 * E18))
    p.tx(node, reg.functions.unbond(70 * E18))
    p.tx(p.deployer, reg.functions.slash(node.address, 50 * E18, p.deployer.address))
    assert reg.functions.bondedOf(node.address).call() == 0
    assert reg.functions.unbondingOf(node.address).call()[0] == 50 * E18
    assert reg.functions.totalStaked().call() == 50 * E18 == p.token.functions.balanceOf(reg.address).call()
    p.tx(p.deployer, reg.functions.recordFraud(node.address))
    assert reg.functions.isJailed(node.address).call()


def test_update_hardware_moves_a_validator_to_its_new_device_set_as_a_newcomer(proto: Protocol) -> None:
    """A validator declaring another device class leaves the old class's set and enters the new one now (so a
    draw frozen before this block never sees it there); a price change alone moves nothing."""
    p, v, r = proto, proto.accounts[3], proto.registry
    cpu, cuda = r.functions.validatorCount(1).call(), r.functions.validatorCount(2).call()
    since = r.functions.validatorSince(v.address).call()
    rc = p.tx(v, r.functions.updateHardware((1, 16000, 100, 7 * E18)))
    assert p.events(rc, r, "HardwareUpdated")[0]["args"]["hw"]["pricePerUnit"] == 7 * E18
    assert not p.events(rc, r, "ValidatorSetLeft") and r.functions.validatorSince(v.address).call() == since
    rc = p.tx(v, r.functions.updateHardware((2, 80000, 900, 7 * E18)))
    assert p.events(rc, r, "ValidatorSetLeft")[0]["args"]["deviceClass"] == 1
    assert p.events(rc, r, "ValidatorSetJoined")[0]["args"]["deviceClass"] == 2
    assert (r.functions.validatorCount(1).call(), r.functions.validatorCount(2).call()) == (cpu - 1, cuda + 1)
    assert r.functions.validatorSince(v.address).call() == rc["blockNumber"]
    assert r.functions.hardwareOf(v.address).call() == (2, 80000, 900, 7 * E18)
    expect(p, "NotRegistered", p.accounts[9], r.functions.updateHardware((1, 1, 1, 1)))
