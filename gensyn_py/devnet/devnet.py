"""A persistent local devnet: anvil with saved state, deployed and funded contracts."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_account import Account
from web3 import Web3

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode, rpc_ready, stop_process_group
from gensyn_py.errors import ChainError

FAUCET_AMOUNT = 1_000_000 * 10**18


@dataclass(frozen=True)
class DevnetInfo:
    url: str
    pid: int
    chain_id: int
    deployment: dict[str, Any]
    deployed_now: bool = False


def _info_path(devnet_dir: Path) -> Path:
    return devnet_dir / "devnet.json"


def read_info(devnet_dir: Path) -> DevnetInfo | None:
    path = _info_path(devnet_dir)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return DevnetInfo(raw["url"], raw["pid"], raw["chainId"], raw["deployment"])


def is_running(info: DevnetInfo) -> bool:
    try:
        os.kill(info.pid, 0)
    except OSError:
        return False
    return rpc_ready(info.url)


def up(devnet_dir: Path, deployments_dir: Path, port: int = 8545, fund: int = 10) -> tuple[DevnetInfo, bool]:
    """Start (or find running) anvil with persisted state; deploy once; fund dev accounts.

    Returns the devnet and whether this call started it.
    """
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.devnet.compiler import compile_contracts
    from gensyn_py.devnet.deploy import deploy_protocol, write_deployment

    existing = read_info(devnet_dir)
    if existing and is_running(existing):
        return existing, False
    devnet_dir.mkdir(parents=True, exist_ok=True)
    node = AnvilNode(port=port, state_path=devnet_dir / "state.json", log_path=devnet_dir / "anvil.log")
    node.start()
    assert node.process is not None
    w3 = Web3(Web3.HTTPProvider(node.url))
    deployer = Account.from_key(DEV_KEYS[0])
    deployment = existing.deployment if existing else None
    deployed_now = deployment is None or not w3.eth.get_code(deployment["contracts"]["GensynToken"])
    if deployed_now:
        deployment = deploy_protocol(w3, deployer, compile_contracts())
        protocol = ProtocolContracts(w3, deployment)
        token = protocol.token(protocol.sender(deployer))
        for key in DEV_KEYS[:fund]:
            token.mint(Account.from_key(key).address, FAUCET_AMOUNT)
        write_deployment(deployments_dir, deployment)
    assert deployment is not None
    info = DevnetInfo(node.url, node.process.pid, int(w3.eth.chain_id), deployment, deployed_now)
    _info_path(devnet_dir).write_text(
        json.dumps({"url": info.url, "pid": info.pid, "chainId": info.chain_id, "deployment": deployment}, indent=2)
    )
    return info, True


def down(devnet_dir: Path, timeout: float = 10.0) -> bool:
    """SIGTERM the devnet's anvil (it saves its state on the way out). False if none ran."""
    info = read_info(devnet_dir)
    if info is None or not is_running(info):
        return False
    stop_process_group(info.pid, timeout)
    return True


def require_running(devnet_dir: Path) -> DevnetInfo:
    info = read_info(devnet_dir)
    if info is None or not is_running(info):
        raise ChainError(f"no devnet running (state in {devnet_dir}); start one with `gensyn devnet up`")
    return info
