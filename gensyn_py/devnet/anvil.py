"""Run a local anvil node (from the npm package `@foundry-rs/anvil`) on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from gensyn_py.errors import ToolchainError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# anvil's default mnemonic ("test test ... junk") derives these; they are public test keys.
DEV_KEYS = [
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
    "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
    "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
    "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
    "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
    "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
    "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
]


def find_anvil(root: Path = PROJECT_ROOT) -> Path:
    """The anvil binary: node_modules first (pinned), then PATH."""
    local = root / "node_modules" / ".bin" / "anvil"
    if local.exists():
        return local
    found = shutil.which("anvil")
    if found:
        return Path(found)
    raise ToolchainError("anvil not found: run `npm ci` to install @foundry-rs/anvil (make setup does)")


def stop_process_group(pid: int, timeout: float = 10.0, leader: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM a process group led by `pid`; SIGKILL it if anything is left after `timeout`.

    Pass `leader` when the group's leader is this process's own child: it is reaped while
    polling, because an exited but unreaped leader (a zombie) still counts as a member of
    its group and would otherwise hold every stop to the full timeout and a SIGKILL.
    """
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if leader is not None:
            leader.poll()
        else:  # the leader may still be this process's child (`devnet up` then `down` in one process): reap it
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)  # polling the group's exit, bounded by the deadline
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rpc_call(url: str, method: str, params: list[object], timeout: float = 1.0) -> bool:
    """One JSON-RPC call; True when it answered with a result (no error, no dead node)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return "result" in json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return False


def rpc_ready(url: str, timeout: float = 1.0) -> bool:
    return rpc_call(url, "eth_chainId", [], timeout)


def freeze_mining(url: str) -> None:
    """Stop an anvil's miner (interval and per-transaction) so that its state holds still.

    Best effort: a node that does not answer has nothing left to freeze.
    """
    rpc_call(url, "evm_setIntervalMining", [0])
    rpc_call(url, "evm_setAutomine", [False])
    rpc_call(url, "eth_blockNumber", [])  # answered once a block being mined is done


@dataclass
class LocalNode:
    """A local chain node process on loopback: started in its own session, stopped with its whole group."""

    port: int = field(default_factory=free_port)
    chain_id: int = 31337
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    name = "node"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """The same node's websocket endpoint (anvil and ganache serve it on the HTTP port)."""
        return f"ws://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> Self:
        if rpc_ready(self.url, timeout=0.2):
            raise ToolchainError(f"something already answers on {self.url}")
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ToolchainError(
                    f"{self.name} exited with code {self.process.returncode}: {' '.join(self.command())}")
            if rpc_ready(self.url, timeout=0.5):
                return self
            time.sleep(0.05)  # polling a condition, bounded by the deadline
        self.stop()
        raise ToolchainError(f"{self.name} did not answer on {self.url} within {timeout}s")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop gracefully (SIGTERM lets anvil dump --state), then kill if it lingers.

        The npm packages start node wrappers around the real process, so the signal goes to the
        whole process group (the node starts in its own session) or the real one outlives it.
        """
        if self.process is None or self.process.poll() is not None:
            return
        stop_process_group(self.process.pid, timeout, leader=self.process)
        self.process.wait(timeout=timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class AnvilNode(LocalNode):
    """One anvil process. `state_path` persists chain state across restarts."""

    state_path: Path | None = None
    block_time: float | None = None
    # With a block time: also mine each transaction at once (deadlines and seeds still get fresh blocks).
    mixed_mining: bool = False
    accounts: int = 10
    name = "anvil"

    def command(self) -> list[str]:
        cmd = [
            str(find_anvil()), "--host", "127.0.0.1", "--port", str(self.port),
            "--chain-id", str(self.chain_id), "--accounts", str(self.accounts), "--silent",
        ]
        if self.state_path is not None:
            cmd += ["--state", str(self.state_path)]
        if self.block_time:
            cmd += ["--block-time", str(self.block_time)]
            if self.mixed_mining:
                cmd += ["--mixed-mining"]
        return cmd

    def stop(self, timeout: float = 10.0) -> None:
        """Stop mining, then stop the process (which dumps `--state`).

        anvil writes its state file on SIGTERM while its miner keeps running; a block mined
        during the dump has left the file half before and half after it (a token balance
        already moved, the contract's books not yet: a pool owing more than it held after a
        restart). With mining stopped first the dump is one block's state; transactions sent
        meanwhile stay in the mempool, which is not saved, as a real node's restart loses its pool.
        """
        if self.state_path is not None and self.process is not None and self.process.poll() is None:
            freeze_mining(self.url)
        super().stop(timeout)

