"""A whole market on one machine: anvil, the protocol, a content store and role daemons as processes.

Used by `gensyn demo`, the reliability tests and `bench/e2e.py`. The chain
mines every transaction at once *and* a block every `block_time` seconds
(anvil's mixed mining), so chain time follows the wall clock: deadlines pass
and the block after a commitment (the validators' seed) arrives on its own,
as on a real chain. Windows are seconds long (`LOCAL_PARAMS`) so a job settles
in well under a minute.

Each daemon is `python -m gensyn_py.cli <role> run` with its own key, state
directory and log file; it follows anvil's websocket, so each new block
starts its cycle (a 0.3-s poll stays as the fallback). `kill()` and
`restart()` let tests crash and revive them. Everything started is stopped
on exit, also on Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode
from gensyn_py.errors import GensynError

E18 = 10**18

# Windows in seconds for a local market; fees and bonds as in DEFAULT_PARAMS.
LOCAL_PARAMS: dict[str, int] = {
    "claimWindow": 4,
    "verdictCommitWindow": 20,
    "revealWindow": 20,
    "challengeWindow": 6,
    "minCommitWindow": 10,
    "votingPeriod": 30,
    "unbondingDelay": 600,
}

ROLE_KEYS = {"deployer": 0, "requester": 1}


@dataclass
class NodeProcess:
    name: str
    role: str
    account: LocalAccount
    args: list[str]
    log_path: Path
    state_dir: Path
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    down: bool = False  # stopped on purpose (kill()); not a crash

    def crashed(self) -> bool:
        """Exited without being told to."""
        return not self.down and self.process is not None and self.process.poll() is not None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class LocalNetwork:
    workdir: Path
    params: dict[str, int] = field(default_factory=lambda: dict(LOCAL_PARAMS))
    block_time: float = 1.0
    store: str | None = None  # a Kubo URL, or None for a local store under workdir
    node: AnvilNode | None = None
    protocol: ProtocolContracts | None = None
    nodes: dict[str, NodeProcess] = field(default_factory=dict)

    # -- chain -------------------------------------------------------------------------------

    def start(self) -> LocalNetwork:
        from gensyn_py.devnet.compiler import compile_contracts
        from gensyn_py.devnet.deploy import deploy_protocol, write_deployment

        self.workdir.mkdir(parents=True, exist_ok=True)
        self.node = AnvilNode(state_path=self.workdir / "anvil-state.json", log_path=self.workdir / "anvil.log",
                              block_time=self.block_time, mixed_mining=True)
        self.node.start()
        w3 = Web3(Web3.HTTPProvider(self.node.url, request_kwargs={"timeout": 30}))
        deployment = deploy_protocol(w3, self.deployer, compile_contracts(), self.params)
        write_deployment(self.deployments_dir, deployment)
        self.protocol = ProtocolContracts(w3, deployment)
        return self

    @property
    def deployer(self) -> LocalAccount:
        return Account.from_key(DEV_KEYS[0])

    @property
    def w3(self) -> Web3:
        assert self.protocol is not None, "start() the network first"
        return self.protocol.w3

    @property
    def url(self) -> str:
        assert self.node is not None
        return self.node.url

    @property
    def ws_url(self) -> str:
        assert self.node is not None
        return self.node.ws_url

    @property
    def deployments_dir(self) -> Path:
        return self.workdir / "deployments"

    @property
    def store_spec(self) -> str:
        return self.store or f"local:{self.workdir / 'store'}"

    def account(self, index: int) -> LocalAccount:
        return Account.from_key(DEV_KEYS[index])

    def fund(self, address: str, tokens: int) -> None:
        assert self.protocol is not None
        self.protocol.token(self.protocol.sender(self.deployer)).mint(address, tokens * E18)

    def chain_down(self) -> None:
        """Stop anvil; it saves its state for `chain_up()`."""
        assert self.node is not None
        self.node.stop()

    def chain_up(self) -> None:
        """Start anvil again on the same port with the saved chain."""
        assert self.node is not None
        self.node.process = None
        self.node.start()

    # -- daemons -----------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "GENSYN_RPC_URL": self.url,
            "GENSYN_WS_URL": self.ws_url,  # anvil serves websockets on its HTTP port: cycles start at new blocks
            "GENSYN_DEPLOYMENTS_DIR": str(self.deployments_dir),
            "GENSYN_STORE": self.store_spec,
            "PYTHONUNBUFFERED": "1",
        }

    def add_node(self, name: str, role: str, key_index: int, *extra: str, tokens: int = 2_000,
                 stake: int = 1_000) -> NodeProcess:
        """Fund an account and start its daemon process."""
        account = self.account(key_index)
        self.fund(account.address, tokens)
        state_dir = self.workdir / "nodes" / name
        args = [sys.executable, "-m", "gensyn_py.cli", role, "run", "--state-dir", str(state_dir),
                "--poll-interval", "0.3", "--stake", str(stake), "--log-format", "json", *extra]
        node = NodeProcess(name, role, account, args, self.workdir / "logs" / f"{name}.log", state_dir)
        self.nodes[name] = node
        self._spawn(node)
        return node

    def _spawn(self, node: NodeProcess) -> None:
        node.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(node.log_path, "ab")  # noqa: SIM115 - handed to the child, closed by the OS on exit
        env = {**self.env(), "GENSYN_KEY": node.account.key.hex()}
        node.down = False
        node.process = subprocess.Popen(_command(node.args), stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        log.close()

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        node = self.nodes[name]
        node.down = True
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(sig)
            node.process.wait(timeout=30)

    def restart(self, name: str, *extra: str) -> NodeProcess:
        node = self.nodes[name]
        self.kill(name, signal.SIGKILL)
        if extra:
            node.args = [*node.args, *extra]
        node.restarts += 1
        self._spawn(node)
        return node

    def stop_nodes(self, timeout: float = 15.0) -> dict[str, int | None]:
        """SIGTERM every daemon, wait, SIGKILL stragglers; returns exit codes."""
        for node in self.nodes.values():
            node.down = True
            if node.alive:
                assert node.process is not None
                node.process.send_signal(signal.SIGTERM)
        codes: dict[str, int | None] = {}
        deadline = time.monotonic() + timeout
        for name, node in self.nodes.items():
            if node.process is None:
                continue
            try:
                codes[name] = node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                codes[name] = node.process.wait()
        return codes

    def stop(self) -> None:
        try:
            self.stop_nodes()
        finally:
            if self.node is not None:
                self.node.stop()

    def __enter__(self) -> LocalNetwork:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check_alive(self) -> None:
        """GensynError, with its log's tail, if a daemon exited that was not stopped on purpose."""
        for name, node in self.nodes.items():
            if node.crashed():
                assert node.process is not None
                tail = node.log_path.read_text(errors="replace")[-3000:] if node.log_path.exists() else ""
                raise GensynError(f"{name} exited with code {node.process.returncode} (log {node.log_path}):\n{tail}")

    def log_lines(self, name: str) -> list[dict[str, Any]]:
        """A daemon's JSON log records so far."""
        import json

        path = self.nodes[name].log_path
        if not path.exists():
            return []
        out = []
        for line in path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


def wait_until(condition: Callable[[], Any], timeout: float, what: str, every: float = 0.25,
               on_wait: Callable[[], None] | None = None) -> Any:
    """Poll `condition` until it returns something truthy; GensynError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise GensynError(f"timed out after {timeout:.0f}s waiting for {what}")
        if on_wait is not None:
            on_wait()
        time.sleep(every)  # polling a condition, bounded by the deadline


# Flags only the dishonest nodes take (`gensyn_py/cli/dishonest.py`); the production `gensyn` has none.
DISHONEST_FLAGS = frozenset({"--cheat", "--lazy", "--false-report"})


def _command(args: list[str]) -> list[str]:
    """The daemon's command line: the real `gensyn` CLI, or the dishonest one when a cheat flag is set."""
    if DISHONEST_FLAGS.isdisjoint(args):
        return args
    module = args.index("gensyn_py.cli")
    return [*args[:module], "gensyn_py.cli.dishonest", *args[module + 1:]]
