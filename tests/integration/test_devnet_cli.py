"""`gensyn devnet up|status|down` against a real anvil with persisted state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensyn_py.devnet.anvil import free_port

pytestmark = pytest.mark.slow


def _gensyn(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GENSYN_DEVNET_DIR": str(tmp / "devnet"), "GENSYN_DEPLOYMENTS_DIR": str(tmp / "deploy")}
    return subprocess.run(
        [sys.executable, "-m", "gensyn_py.cli", *args], env=env, capture_output=True, text=True, timeout=180
    )


def test_devnet_up_status_down_keeps_state(tmp_path: Path) -> None:
    port = str(free_port())
    try:
        up = _gensyn(["devnet", "up", "--port", port], tmp_path)
        assert up.returncode == 0, up.stderr
        assert "devnet started" in up.stdout and "TaskPool" in up.stdout
        assert "contracts deployed" in up.stdout
        deployment = json.loads((tmp_path / "deploy" / "31337.json").read_text())
        assert set(deployment["contracts"]) == {"GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee"}

        again = _gensyn(["devnet", "up", "--port", port], tmp_path)
        assert "already running" in again.stdout

        status = _gensyn(["devnet", "status"], tmp_path)
        assert status.returncode == 0, status.stderr
        assert "jobs: 0 submitted" in status.stdout
        assert "tokens held by the protocol: 0.00" in status.stdout
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
