"""The anvil process manager leaves nothing running: the npm wrapper and the real binary both stop."""

from __future__ import annotations

import itertools
from pathlib import Path

from gensyn_py.devnet.anvil import AnvilNode, rpc_ready


def _command_lines() -> list[list[str]]:
    """Every process's full argv, read from /proc/<pid>/cmdline (`ps` cuts lines at the terminal width)."""
    lines = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:  # it exited while we looked
            continue
        if raw:  # empty for kernel threads and zombies
            lines.append([arg.decode(errors="replace") for arg in raw.rstrip(b"\0").split(b"\0")])
    return lines


def _processes_on(port: int) -> list[str]:
    """anvil processes (the npm wrapper and the real binary) serving `port`."""
    return [
        " ".join(argv) for argv in _command_lines()
        if any("anvil" in arg for arg in argv)
        and any(a == "--port" and b == str(port) for a, b in itertools.pairwise(argv))
    ]


def test_stop_ends_the_wrapper_and_the_real_anvil_binary() -> None:
    node = AnvilNode().start()
    try:
        assert rpc_ready(node.url)
        assert _processes_on(node.port), "anvil should be running"
    finally:
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
