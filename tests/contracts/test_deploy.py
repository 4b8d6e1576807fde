"""deploy_protocol wires everything; write_deployment writes deployments/<chainId>.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from web3.exceptions import ContractCustomError

from gensyn_py.devnet.deploy import DEFAULT_PARAMS, POOL_FIELDS, _deploy, write_deployment
from gensyn_py.errors import ContractRevert
from tests.contracts.helpers import Protocol, protocol_errors


def test_deployment_is_wired_and_written(proto: Protocol, tmp_path: Path) -> None:
    p = proto
    info = p.info
    assert info["chainId"] == p.w3.eth.chain_id
    assert set(info["contracts"]) == {"GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee", "SegmentGame",
                                     "StepGame"}
    assert p.pool.functions.resolver().call() == p.committee.address
    assert p.committee.functions.taskPool().call() == p.pool.address
    assert p.pool.functions.game().call() == p.game.address  # the test deployment hands repro disputes to the game
    assert p.game.functions.stepGame().call() == p.step_game.address
    assert p.step_game.functions.opener().call() == p.game.address  # only the segment game opens step games
    assert p.registry.functions.isProtocol(p.pool.address).call()
    assert not p.registry.functions.isProtocol(p.game.address).call()  # it moves no stake: the pool settles
    assert p.registry.functions.isProtocol(p.committee.address).call()
    assert p.registry.functions.unbondingDelay().call() > p.pool.functions.longestExposure().call()
    assert p.pool.functions.params().call()[0] == DEFAULT_PARAMS["validatorsPerUnit"]
    path = write_deployment(tmp_path / "deployments", info)
    assert path.name == f"{info['chainId']}.json"
    assert json.loads(path.read_text())["contracts"] == info["contracts"]


ZERO = "0x" + "00" * 20


def _pool_error(p: Protocol, token: str, registry: str, params: dict[str, int]) -> ContractRevert:
    with pytest.raises(ContractCustomError) as exc:
        _deploy(p.w3, p.deployer, p.artifacts["TaskPool"], token, registry, tuple(params[k] for k in POOL_FIELDS),
                p.deployer.address, libraries=p.info["libraries"])
    return protocol_errors(p.artifacts).decode(str(exc.value.data))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("validatorsPerUnit", 0),
        ("validatorsPerUnit", 256),  # the verdict counters are 8-bit
        ("livenessPenaltyBps", 10_001),
        ("committeeRewardBps", 10_001),  # above 100% every decided dispute would revert
        ("claimWindow", 0),  # the claim score divides by it
        ("verdictCommitWindow", 0),
        ("revealWindow", 0),
        ("challengeWindow", 30 * 86400 + 1),
        ("minCommitWindow", 0),
        ("validatorBond", 0),
        ("challengeBond", 0),
    ],
)
def test_each_pool_parameter_is_refused_out_of_range(proto: Protocol, name: str, value: int) -> None:
    p = proto
    err = _pool_error(p, p.token.address, p.registry.address, {**DEFAULT_PARAMS, name: value})
    assert err.name == "InvalidParam"
    assert (err.error_args["name"], err.error_args["value"]) == (name, value)


def test_a_pool_without_token_or_registry_is_refused(proto: Protocol) -> None:
    p = proto
    assert _pool_error(p, ZERO, p.registry.address, dict(DEFAULT_PARAMS)).error_args["name"] == "token"
    assert _pool_error(p, p.token.address, ZERO, dict(DEFAULT_PARAMS)).error_args["name"] == "registry"
