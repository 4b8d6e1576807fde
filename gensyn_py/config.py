"""Settings built once by the CLI and passed down; nothing reads the environment at import time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Settings:
    rpc_url: str
    chain_id: int | None
    devnet_dir: Path
    deployments_dir: Path
    store: str

    @classmethod
    def from_env(cls, root: Path = PROJECT_ROOT) -> Settings:
        chain_id = os.environ.get("GENSYN_CHAIN_ID")
        return cls(
            rpc_url=os.environ.get("GENSYN_RPC_URL", "http://127.0.0.1:8545"),
            chain_id=int(chain_id) if chain_id else None,
            devnet_dir=Path(os.environ.get("GENSYN_DEVNET_DIR", root / ".devnet")),
            deployments_dir=Path(os.environ.get("GENSYN_DEPLOYMENTS_DIR", root / "deployments")),
            store=os.environ.get("GENSYN_STORE", f"local:{root / '.devnet' / 'store'}"),
        )
