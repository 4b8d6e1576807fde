"""The ABIs of the deployed protocol contracts, shipped with the package.

`<Name>.json` holds the ABI of each contract in `PROTOCOL_CONTRACTS`; `errors.json` holds every custom
error the compiled sources declare, so a revert raised in any callee is decoded by name. They are
exported from the compiled artifacts by `python -m gensyn_py.devnet.abi_export` (run it after changing
a contract; `tests/unit/test_abi_export.py` fails while they differ from a fresh compile). Loading a
deployment reads these files, so running a node needs neither solc nor Node.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from gensyn_py.errors import ConfigError

ABI_DIR = Path(__file__).parent
PROTOCOL_CONTRACTS = ("GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee", "SegmentGame", "StepGame")
ERRORS = "errors"  # the file of every custom error, beside the contracts' ABIs

Abi = list[dict[str, Any]]


def abi_path(name: str, directory: Path = ABI_DIR) -> Path:
    return directory / f"{name}.json"


@functools.cache
def load_abi(name: str) -> Abi:
    """The shipped ABI `name` (a contract of `PROTOCOL_CONTRACTS`, or `ERRORS`)."""
    path = abi_path(name)
    try:
        abi = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no shipped ABI {path}: run `python -m gensyn_py.devnet.abi_export`") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"shipped ABI {path} is unreadable: {exc}") from None
    if not isinstance(abi, list):
        raise ConfigError(f"shipped ABI {path} is not a JSON list of ABI entries")
    return abi


def protocol_abis() -> dict[str, Abi]:
    """{contract name: ABI} for every deployed protocol contract."""
    return {name: load_abi(name) for name in PROTOCOL_CONTRACTS}
