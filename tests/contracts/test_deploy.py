"""deploy_protocol wires everything; write_deployment writes deployments/<chainId>.json."""

from __future__ import annotations

import json
from pathlib import Path

from gensyn_py.devnet.deploy import DEFAULT_PARAMS, write_deployment
from tests.contracts.helpers import Protocol


def test_deployment_is_wired_and_written(proto: Protocol, tmp_path: Path) -> None:
    p = proto
    info = p.info
    assert info["chainId"] == p.w3.eth.chain_id
    assert set(info["contracts"]) == {"GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee"}
    assert p.pool.functions.resolver().call() == p.committee.address
    assert p.committee.functions.taskPool().call() == p.pool.address
    assert p.registry.functions.isProtocol(p.pool.address).call()
    assert p.registry.functions.isProtocol(p.committee.address).call()
    assert p.registry.functions.unbondingDelay().call() > p.pool.functions.longestExposure().call()
    assert p.pool.functions.params().call()[0] == DEFAULT_PARAMS["validatorsPerUnit"]
    path = write_deployment(tmp_path / "deployments", info)
    assert path.name == f"{info['chainId']}.json"
    assert json.loads(path.read_text())["contracts"] == info["contracts"]
