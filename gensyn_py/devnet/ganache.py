"""Run a local Ganache 7 node (npm package `ganache`) on loopback, as an alternative to anvil.

Ganache 7.9.2 (the last release; the project is archived) knows hardforks up to
`shanghai`: no cancun, so no TSTORE/TLOAD/MCOPY/blob opcodes. Contracts meant for it
are compiled with `compile_contracts(evm_version="shanghai")` (compiler.PRE_CANCUN),
which swaps the transient reentrancy guard for OpenZeppelin's storage one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from gensyn_py.devnet.anvil import PROJECT_ROOT, free_port, rpc_ready, stop_process_group
from gensyn_py.errors import ToolchainError

# The mnemonic anvil derives its dev accounts from; on the same HD path Ganache derives the same keys.
DEV_MNEMONIC = "test test test test test test test test test test test junk"
HARDFORK = "shanghai"


def find_ganache(root: Path = PROJECT_ROOT) -> Path:
    """The ganache CLI: $GANACHE, node_modules, then PATH."""
    for candidate in (os.environ.get("GANACHE"), root / "node_modules" / ".bin" / "ganache", shutil.which("ganache")):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    raise ToolchainError("ganache not found: `npm install ganache@7.9.2` (or set $GANACHE to its cli)")


@dataclass
class GanacheNode:
    """One ganache process, instamine, anvil's chain id and dev accounts."""

    port: int = field(default_factory=free_port)
    chain_id: int = 31337
    accounts: int = 10
    balance_ether: int = 10_000
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            str(find_ganache()), "--server.host", "127.0.0.1", "--server.port", str(self.port), "--server.ws", "false",
            "--chain.chainId", str(self.chain_id), "--chain.hardfork", HARDFORK,
            "--wallet.mnemonic", DEV_MNEMONIC, "--wallet.totalAccounts", str(self.accounts),
            "--wallet.defaultBalance", str(self.balance_ether), "--logging.quiet",
        ]

    def start(self, timeout: float = 60.0) -> GanacheNode:
        if rpc_ready(self.url, timeout=0.2):
            raise ToolchainError(f"something already answers on {self.url}")
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ToolchainError(f"ganache exited with code {self.process.returncode}: {' '.join(self.command())}")
            if rpc_ready(self.url, timeout=0.5):
                return self
            time.sleep(0.05)  # polling a condition, bounded by the deadline
        self.stop()
        raise ToolchainError(f"ganache did not answer on {self.url} within {timeout}s")

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        stop_process_group(self.process.pid, timeout, leader=self.process)
        self.process.wait(timeout=timeout)

    def __enter__(self) -> GanacheNode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
