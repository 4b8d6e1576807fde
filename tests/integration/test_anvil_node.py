"""The anvil process manager leaves nothing running: the npm wrapper and the real binary both stop."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gensyn_py.devnet.anvil import AnvilNode, rpc_ready


def _processes_on(port: int) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "anvil" in line and f"--port {port} " in line]


def test_stop_ends_the_wrapper_and_the_real_anvil_binary() -> None:
    node = AnvilNode().start()
    assert rpc_ready(node.url)
    assert _processes_on(node.port), "anvil should be running"
    node.stop()
    assert not rpc_ready(node.url, timeout=0.5)
    assert _processes_on(node.port) == []


def test_state_survives_a_stop_and_start(tmp_path: Path) -> None:
    from web3 import Web3

    state = tmp_path / "state.json"
    with AnvilNode(state_path=state) as node:
        w3 = Web3(Web3.HTTPProvider(node.url))
        for _ in range(5):
            w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
        mined = w3.eth.block_number
        port = node.port
    assert state.exists()
    with AnvilNode(port=port, state_path=state) as node:
        assert Web3(Web3.HTTPProvider(node.url)).eth.block_number == mined
