"""brownie compiles the project and deploys it to a real anvil through scripts/deploy.py.

brownie runs from its own virtualenv (.venv-brownie, made by scripts/setup_brownie.sh)
because eth-brownie 1.22.2 pins hypothesis 6.27.3, older than the suite uses. It finds
its compiler (the set-up script's wrapper over the pinned solcjs) through
SOLCX_BINARY_PATH, as the README says, so nothing in ~/.solcx is needed or used.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from web3 import Web3

from gensyn_py.devnet.anvil import AnvilNode

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-brownie"
SOLCX_DIR = VENV / "solcx"
pytestmark = [pytest.mark.brownie, pytest.mark.slow]


def _brownie(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(VENV / "bin" / "brownie"), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"brownie {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def brownie_env() -> dict[str, str]:
    subprocess.run(["bash", str(ROOT / "scripts" / "setup_brownie.sh")], check=True, timeout=900)
    assert (SOLCX_DIR / "solc-v0.8.28").exists(), "scripts/setup_brownie.sh should write the solc wrapper"
    return {**os.environ, "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}", "SOLCX_BINARY_PATH": str(SOLCX_DIR)}


@pytest.fixture
def brownie_network(brownie_env: dict[str, str]) -> Iterator[tuple[str, AnvilNode]]:
    with AnvilNode() as node:
        name = f"gensyn-anvil-test-{node.port}"
        _brownie("networks", "add", "Ethereum", name, f"host={node.url}", "chainid=31337", env=brownie_env)
        try:
            yield name, node
        finally:
            subprocess.run(
                [str(VENV / "bin" / "brownie"), "networks", "delete", name],
                cwd=ROOT, env=brownie_env, capture_output=True, check=False,
            )


def test_brownie_compiles_and_deploys_to_anvil(
    brownie_env: dict[str, str], brownie_network: tuple[str, AnvilNode], tmp_path: Path
) -> None:
    network, node = brownie_network
    # brownie remembers live-network deployments by chain id; this anvil is new, so forget old ones.
    shutil.rmtree(ROOT / "build" / "brownie" / "deployments", ignore_errors=True)
    _brownie("compile", env=brownie_env)
    assert (ROOT / "build" / "brownie" / "contracts" / "TaskPool.json").exists()

    env = {**brownie_env, "GENSYN_DEPLOYMENTS_DIR": str(tmp_path)}
    out = _brownie("run", "scripts/deploy.py", "--network", network, env=env).stdout
    assert "deployed to chain 31337" in out

    info = json.loads((tmp_path / "31337.json").read_text())
    w3 = Web3(Web3.HTTPProvider(node.url))
    for name in ("GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee"):
        assert len(w3.eth.get_code(info["contracts"][name])) > 0, name
