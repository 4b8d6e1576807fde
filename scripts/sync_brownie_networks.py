"""Copy the live networks declared in brownie-config.yaml into brownie's own network list.

Run by scripts/setup_brownie.sh with .venv-brownie's Python, from the repository root:

    .venv-brownie/bin/python scripts/sync_brownie_networks.py

brownie 1.22.2 takes a network's `host` and `chainid` only from
~/.brownie/network-config.yaml (`brownie networks add|modify` edit it); in a
project's brownie-config.yaml it honours `networks.default`, the gas and other
settings under `networks.development` / `networks.live`, and a development
network's `cmd_settings`, but not where a network is. So each entry of
`networks:` in brownie-config.yaml that has a `host` (for this project,
`gensyn-anvil`) is added to brownie's list, or its host and chain id there are
changed to match, with brownie's own CLI. Entries already matching are left alone.
This is not a brownie script (`brownie run` would find no `main`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

CONFIG = Path("brownie-config.yaml")
# brownie's data folder: brownie._config.DATA_FOLDER is Path.home() / ".brownie".
NETWORK_LIST = Path.home() / ".brownie" / "network-config.yaml"
ENVIRONMENT = "Ethereum"  # the group `brownie networks list` shows a new network under
PROJECT_KEYS = ("default", "development", "live")  # brownie's settings keys, not networks


def declared_networks(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    """{id: {"host", "chainid"}} for each network in `config["networks"]` with a host."""
    out: dict[str, dict[str, str]] = {}
    for network_id, settings in (config.get("networks") or {}).items():
        if network_id in PROJECT_KEYS or not isinstance(settings, dict) or "host" not in settings:
            continue
        if "chainid" not in settings:
            raise SystemExit(f"{CONFIG}: networks.{network_id} has a host but no chainid")
        out[network_id] = {"host": str(settings["host"]), "chainid": str(settings["chainid"])}
    return out


def known_networks() -> dict[str, dict[str, Any]]:
    """brownie's network list by id (empty before brownie first ran)."""
    if not NETWORK_LIST.exists():
        return {}
    raw = yaml.safe_load(NETWORK_LIST.read_text()) or {}
    known = {n["id"]: n for n in raw.get("development") or []}
    known.update({n["id"]: n for env in raw.get("live") or [] for n in env.get("networks") or []})
    return known


def sync() -> list[str]:
    """Bring brownie's network list in line with brownie-config.yaml; returns one line per network."""
    brownie = str(Path(sys.executable).parent / "brownie")
    known = known_networks()
    lines = []
    for network_id, want in declared_networks(yaml.safe_load(CONFIG.read_text()) or {}).items():
        have = known.get(network_id)
        fields = [f"{key}={value}" for key, value in want.items()]
        if have is None:
            command = [brownie, "networks", "add", ENVIRONMENT, network_id, *fields]
            verb = "added"
        elif "cmd" in have:
            raise SystemExit(f"brownie already has a development network {network_id!r}; "
                             f"`brownie networks delete {network_id}`, then run this again")
        elif {k: str(have.get(k)) for k in want} != want:
            command = [brownie, "networks", "modify", network_id, *fields]
            verb = "updated"
        else:
            lines.append(f"brownie network {network_id}: {want['host']} (chain {want['chainid']}), as configured")
            continue
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        lines.append(f"brownie network {network_id}: {verb} to {want['host']} (chain {want['chainid']})")
    return lines


if __name__ == "__main__":
    for line in sync():
        print(line)
