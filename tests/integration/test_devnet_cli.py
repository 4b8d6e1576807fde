"""`gensyn devnet up|status|down` against a real anvil with persisted state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from eth_account import Account
from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.devnet.anvil import DEV_KEYS, free_port

pytestmark = pytest.mark.slow


def _gensyn(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GENSYN_DEVNET_DIR": str(tmp / "devnet"), "GENSYN_DEPLOYMENTS_DIR": str(tmp / "deploy")}
    return subprocess.run(
        [sys.executable, "-m", "gensyn_py.cli", *args], env=env, capture_output=True, text=True, timeout=180
    )


def _explorer_serves(tmp: Path, chain_port: str, pool: str) -> None:
    """`gensyn explorer` on the devnet: it prints its URL, serves the network page, and stops on Ctrl-C."""
    env = {**os.environ, "GENSYN_DEPLOYMENTS_DIR": str(tmp / "deploy"),
           "GENSYN_RPC_URL": f"http://127.0.0.1:{chain_port}", "GENSYN_STORE": f"local:{tmp / 'store'}"}
    proc = subprocess.Popen([sys.executable, "-m", "gensyn_py.cli", "explorer", "--port", str(free_port()),
                             "--db", str(tmp / "explorer.sqlite")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once the server listens and the index has caught up
        assert first.startswith("explorer: http://127.0.0.1:"), first
        url = first.split()[1]
        health = requests.get(f"{url}/healthz", timeout=30).json()
        assert health["error"] is None and health["head"] >= 1
        page = requests.get(url, timeout=30)
        assert page.status_code == 200 and "Network" in page.text
        # The deployment's own contracts are no one's node page.
        assert requests.get(f"{url}/node/{pool}", timeout=30).status_code == 404
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "stopping" in out


def test_devnet_up_status_down_keeps_state(tmp_path: Path) -> None:
    port = str(free_port())
    try:
        up = _gensyn(["devnet", "up", "--port", port], tmp_path)
        assert up.returncode == 0, up.stderr
        assert "devnet started" in up.stdout and "TaskPool" in up.stdout
        assert "contracts deployed" in up.stdout
        deployment = json.loads((tmp_path / "deploy" / "31337.json").read_text())
        assert set(deployment["contracts"]) == {"GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee",
                                                "SegmentGame", "StepGame"}

        again = _gensyn(["devnet", "up", "--port", port], tmp_path)
        assert "already running" in again.stdout

        status = _gensyn(["devnet", "status"], tmp_path)
        assert status.returncode == 0, status.stderr
        assert f"at http://127.0.0.1:{port}" in status.stdout  # the port `up` was given
        assert "jobs: 0 submitted" in status.stdout
        assert "tokens held by the protocol: 0.00" in status.stdout
        _explorer_serves(tmp_path, port, deployment["contracts"]["TaskPool"])
    finally:
        down = _gensyn(["devnet", "down"], tmp_path)
    assert "devnet stopped" in down.stdout
    assert (tmp_path / "devnet" / "state.json").exists()

    # A restart loads the saved chain: the same contracts are still deployed, nothing is redeployed.
    try:
        up = _gensyn(["devnet", "up", "--port", port], tmp_path)
        assert up.returncode == 0, up.stderr
        assert "saved chain state loaded" in up.stdout
        assert deployment["contracts"]["TaskPool"] in up.stdout
    finally:
        _gensyn(["devnet", "down"], tmp_path)


def test_devnet_status_without_a_devnet_says_so(tmp_path: Path) -> None:
    status = _gensyn(["devnet", "status"], tmp_path)
    assert status.returncode == 1
    assert "no devnet running" in status.stderr


def _timestamp(w3: Web3) -> int:
    return int(w3.eth.get_block("latest")["timestamp"])


def _advances_within(w3: Web3, seconds: float) -> bool:
    """Whether the latest block's timestamp moves past its current value within `seconds`, nobody transacting."""
    start = _timestamp(w3)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _timestamp(w3) > start:
            return True
        time.sleep(0.1)
    return False


def test_devnet_mines_a_block_every_second_and_port_reaches_status(tmp_path: Path) -> None:
    port = free_port()
    try:
        up = _gensyn(["devnet", "up", "--port", str(port)], tmp_path)
        assert up.returncode == 0, up.stderr
        assert "a block every 1 s" in up.stdout
        assert f"GENSYN_RPC_URL=http://127.0.0.1:{port}" in up.stdout
        w3 = Web3(Web3.HTTPProvider(f"http://127.0.0.1:{port}"))
        assert _advances_within(w3, 10), "chain time stood still with a 1 s block time"
        # The dev accounts as the README has them: 10,000 ETH and 1,000,000 GSYN each.
        token = ProtocolContracts(w3, json.loads((tmp_path / "deploy" / "31337.json").read_text())).token()
        for key in DEV_KEYS:
            address = Account.from_key(key).address
            assert w3.eth.get_balance(address) > 9_999 * 10**18
            assert token.balance_of(address) == 1_000_000 * 10**18

        status = _gensyn(["devnet", "status", "--port", str(port)], tmp_path)
        assert status.returncode == 0, status.stderr
        assert f"at http://127.0.0.1:{port}" in status.stdout and "jobs: 0 submitted" in status.stdout
        assert "a block every 1 s" in status.stdout
        elsewhere = free_port()
        nobody = _gensyn(["devnet", "status", "--port", str(elsewhere)], tmp_path)
        assert nobody.returncode == 1 and f"no devnet running at http://127.0.0.1:{elsewhere}" in nobody.stderr

        wrong = _gensyn(["devnet", "down", "--port", str(elsewhere)], tmp_path)
        assert f"no devnet was running on port {elsewhere}" in wrong.stdout
        assert _gensyn(["devnet", "status", "--port", str(port)], tmp_path).returncode == 0  # still up
    finally:
        down = _gensyn(["devnet", "down", "--port", str(port)], tmp_path)
    assert "devnet stopped" in down.stdout


def test_devnet_block_time_zero_mines_only_on_transactions(tmp_path: Path) -> None:
    port = free_port()
    try:
        up = _gensyn(["devnet", "up", "--port", str(port), "--block-time", "0"], tmp_path)
        assert up.returncode == 0, up.stderr
        assert "on each transaction only" in up.stdout
        w3 = Web3(Web3.HTTPProvider(f"http://127.0.0.1:{port}"))
        number = w3.eth.block_number
        assert not _advances_within(w3, 3)  # three 1 s blocks would have come by now
        assert w3.eth.block_number == number
    finally:
        _gensyn(["devnet", "down"], tmp_path)
