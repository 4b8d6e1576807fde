"""Run a local Ganache 7 node (npm package `ganache`) on loopback, as an alternative to anvil.

Ganache 7.9.2 (the last release; the project is archived) knows hardforks up to
`shanghai`: no cancun, so no TSTORE/TLOAD/MCOPY/blob opcodes. Contracts meant for it
are compiled with `compile_contracts(evm_version="shanghai")` (compiler.PRE_CANCUN),
which swaps the transient reentrancy guard for OpenZeppelin's storage one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from gensyn_py.devnet.anvil import PROJECT_ROOT, LocalNode
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
class GanacheNode(LocalNode):
    """One ganache process, instamine, anvil's chain id and dev accounts."""

    accounts: int = 10
    balance_ether: int = 10_000
    name = "ganache"

    def command(self) -> list[str]:
        return [
            str(find_ganache()), "--server.host", "127.0.0.1", "--server.port", str(self.port), "--server.ws", "false",
            "--chain.chainId", str(self.chain_id), "--chain.hardfork", HARDFORK,
            "--wallet.mnemonic", DEV_MNEMONIC, "--wallet.totalAccounts", str(self.accounts),
            "--wallet.defaultBalance", str(self.balance_ether), "--logging.quiet",
        ]
