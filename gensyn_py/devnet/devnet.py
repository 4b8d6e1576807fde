"""A persistent local devnet: anvil with saved state, deployed and funded contracts.

Anvil mines a block every `block_time` seconds (default 1) and, with mixed
mining, every transaction at once, so chain time follows the wall clock:
deadlines pass and claim scores decay with nobody sending anything.
`block_time=0` mines only on transactions (chain time then stands still
between them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from eth_account import Account
from web3 import Web3

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode, freeze_mining, rpc_ready, stop_process_group
from gensyn_py.errors import ChainError

FAUCET_AMOUNT = 1_000_000 * 10**18
DEFAULT_PORT = 8545
DEFAULT_BLOCK_TIME = 1.0


@dataclass(frozen=True)
class DevnetInfo:
    url: str
    pid: int | None  # None: a chain found at a port, not one this devnet folder started
    chain_id: int
    deployment: dict[str, Any]
    deployed_now: bool = False
    block_time: float | None = None  # seconds between blocks; 0: only on transactions; None: not known

    @property
    def port(self) -> int | None:
        return urlparse(self.url).port


def local_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def _info_path(devnet_dir: Path) -> Path:
    return devnet_dir / "devnet.json"


def read_info(devnet_dir: Path) -> DevnetInfo | None:
    path = _info_path(devnet_dir)
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return DevnetInfo(raw["url"], raw["pid"], raw["chainId"], raw["deployment"], block_time=raw.get("blockTime"))


def is_running(info: DevnetInfo) -> bool:
    if info.pid is not None:
        try:
            os.kill(info.pid, 0)
        except OSError:
            return False
    return rpc_ready(info.url)


def up(
    devnet_dir: Path, deployments_dir: Path, port: int = DEFAULT_PORT, fund: int = 10,
    block_time: float = DEFAULT_BLOCK_TIME,
) -> tuple[DevnetInfo, bool]:
    """Start (or find running) anvil with persisted state; deploy once; fund dev accounts.

    A block is mined every `block_time` seconds and every transaction at once;
    `block_time=0` mines only on transactions. The first `fund` dev accounts get
    `FAUCET_AMOUNT` tokens each (the first one, the deployer, owns the contracts).
    Returns the devnet and whether this call started it (a running one is
    returned as it is, whatever `port` and `block_time` say).
    """
    if block_time < 0:
        raise ValueError(f"block_time must be >= 0, not {block_time}")
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.devnet.compiler import compile_contracts
    from gensyn_py.devnet.deploy import deploy_protocol, write_deployment

    existing = read_info(devnet_dir)
    if existing and is_running(existing):
        return existing, False
    devnet_dir.mkdir(parents=True, exist_ok=True)
    node = AnvilNode(port=port, state_path=devnet_dir / "state.json", log_path=devnet_dir / "anvil.log",
                     block_time=block_time or None, mixed_mining=True)
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
    info = DevnetInfo(node.url, node.process.pid, int(w3.eth.chain_id), deployment, deployed_now, block_time)
    _info_path(devnet_dir).write_text(json.dumps(
        {"url": info.url, "pid": info.pid, "chainId": info.chain_id, "blockTime": block_time, "deployment": deployment},
        indent=2,
    ))
    return info, True


def down(devnet_dir: Path, timeout: float = 10.0, port: int | None = None) -> bool:
    """SIGTERM the devnet's anvil (it saves its state on the way out). False if none ran (on `port`, if given)."""
    info = read_info(devnet_dir)
    if info is None or info.pid is None or not is_running(info) or (port is not None and info.port != port):
        return False
    freeze_mining(info.url)  # a consistent state dump: see AnvilNode.stop
    stop_process_group(info.pid, timeout)
    return True


def require_running(devnet_dir: Path, deployments_dir: Path | None = None, port: int | None = None) -> DevnetInfo:
    """The running devnet: the one recorded in `devnet_dir`, or the chain answering on `port` if given.

    A chain on another port than the recorded devnet's is read with the
    deployment record for its chain id in `deployments_dir`.
    """
    info = read_info(devnet_dir)
    if port is None:
        if info is None or not is_running(info):
            raise ChainError(f"no devnet running (state in {devnet_dir}); start one with `gensyn devnet up`")
        return info
    url = local_url(port)
    if not rpc_ready(url):
        raise ChainError(f"no devnet running at {url}; start one with `gensyn devnet up --port {port}`")
    if info is not None and info.port == port and is_running(info):
        return info
    from gensyn_py.chain.contracts import read_deployment

    chain_id = int(Web3(Web3.HTTPProvider(url)).eth.chain_id)
    if deployments_dir is None:
        raise ChainError(f"the chain at {url} is not the devnet recorded in {devnet_dir}")
    deployment = read_deployment(deployments_dir / f"{chain_id}.json")
    return DevnetInfo(url, None, chain_id, deployment)
