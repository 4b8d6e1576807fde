"""brownie deploy script: `brownie run scripts/deploy.py --network gensyn-anvil`.

Deploys and wires a new instance of the protocol exactly as
`gensyn_py.devnet.deploy.deploy_protocol` does (same contracts, parameters and
wiring order; TaskPool linked to the `Phases`, `Units`, `Disputes` and
`DataAvailability` deployed just before it, the last three linked to
`Phases`), from the key in GENSYN_DEPLOYER_KEY (default: anvil's first dev
key). Like `deploy_protocol`, it mints no tokens.

The record goes to deployments/brownie/<chainId>.json in this project, or to
<chainId>.json in the folder GENSYN_BROWNIE_DEPLOYMENTS_DIR names; the script
prints the path. It never goes to the devnet's own record,
deployments/<chainId>.json, which `gensyn devnet up` wrote and the CLI and
daemons read (GENSYN_DEPLOYMENTS_DIR, the CLI's setting, is not read here).
The CLI uses this deployment with `GENSYN_DEPLOYMENTS_DIR=deployments/brownie`.

A record of a deployment that is still on the chain is not replaced: the script
stops before it deploys anything. `brownie run scripts/deploy.py main overwrite`
replaces it. A record whose contracts are no longer on the chain (the chain was
reset) is replaced, and the script says so.

brownie takes the network's host from its own list, which
scripts/setup_brownie.sh fills from brownie-config.yaml; if the two disagree
(brownie-config.yaml was edited since), the script stops and says so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from brownie import (
    DataAvailability,
    DisputeCommittee,
    Disputes,
    DotReferee,
    ElementReferee,
    GensynToken,
    MoveReferee,
    NodeRegistry,
    Phases,
    SegmentGame,
    StepGame,
    TaskPool,
    Units,
    accounts,
    chain,
    config,
    network,
    web3,
)

from gensyn_py.devnet.anvil import DEV_KEYS
from gensyn_py.devnet.deploy import (
    DEFAULT_PARAMS,
    POOL_FIELDS,
    REGISTRY_PERMISSIONS,
    ZERO_ADDRESS,
    committee_args,
    write_deployment,
)

PROJECT = Path(__file__).resolve().parents[1]
FLAGS = ("overwrite",)


def record_dir() -> Path:
    """Where this script's deployment records go."""
    return Path(os.environ.get("GENSYN_BROWNIE_DEPLOYMENTS_DIR") or PROJECT / "deployments" / "brownie")


def check_network() -> None:
    """Stop if brownie's network list and brownie-config.yaml disagree on where the active network is."""
    active = network.show_active()
    configured = config["networks"].get(active)
    if not isinstance(configured, dict) or "host" not in configured:
        return
    host = str(getattr(web3.provider, "endpoint_uri", "")).rstrip("/")
    want = str(configured["host"]).rstrip("/")
    if host != want or str(chain.id) != str(configured.get("chainid", chain.id)):
        raise SystemExit(
            f"brownie's network {active} is {host} (chain {chain.id}), but brownie-config.yaml says "
            f"{want} (chain {configured.get('chainid')}): run `bash scripts/setup_brownie.sh` to update brownie's list"
        )


def check_record(path: Path, overwrite: bool) -> str:
    """Stop if `path` records a deployment still on this chain (unless `overwrite`); returns what happens to it."""
    if not path.exists():
        return "written"
    try:
        contracts = json.loads(path.read_text())["contracts"]
        live = [name for name, address in contracts.items() if len(web3.eth.get_code(address)) > 0]
    except (ValueError, KeyError, TypeError, AttributeError):
        live = ["(unreadable record)"]
    if live and not overwrite:
        raise SystemExit(
            f"{path} already records a deployment on chain {chain.id} ({', '.join(live)} still there); "
            "nothing deployed. Replace it with `brownie run scripts/deploy.py main overwrite`, "
            "or set GENSYN_BROWNIE_DEPLOYMENTS_DIR to write elsewhere."
        )
    return "replaced" if live else "replaced (its contracts are no longer on this chain)"


def main(*flags: str) -> dict[str, Any]:
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise SystemExit(f"unknown argument(s) {unknown}; the only one is {FLAGS[0]!r}")
    check_network()
    path = record_dir() / f"{chain.id}.json"
    outcome = check_record(path, overwrite="overwrite" in flags)

    deployer = accounts.add(os.environ.get("GENSYN_DEPLOYER_KEY", DEV_KEYS[0]))
    tx = {"from": deployer}
    p = DEFAULT_PARAMS
    first_block = chain.height + 1  # event scans start here
    token = GensynToken.deploy(deployer.address, tx)
    registry = NodeRegistry.deploy(
        token.address, p["unbondingDelay"], p["minValidatorStake"], p["jailPeriod"], deployer.address, tx
    )
    # TaskPool links these libraries; brownie links the latest deployment of each on the network, so `Phases`,
    # which the others link too, goes first.
    libraries = {
        "Phases": Phases.deploy(tx),
        "Units": Units.deploy(tx),
        "Disputes": Disputes.deploy(tx),
        "DataAvailability": DataAvailability.deploy(tx),
    }
    pool = TaskPool.deploy(token.address, registry.address, tuple(p[k] for k in POOL_FIELDS), deployer.address, tx)
    committee = DisputeCommittee.deploy(registry.address, *committee_args(p), deployer.address, tx)
    game = SegmentGame.deploy(pool.address, p["gameClock"], deployer.address, tx)
    referees = [r.deploy(tx).address for r in (ElementReferee, DotReferee, MoveReferee)]
    step_game = StepGame.deploy(game.address, p["stepGameClock"], *referees, tx)
    game.wire(step_game.address, tx)
    pool.wire(committee.address, game.address if p["disputeGame"] else ZERO_ADDRESS, tx)
    committee.wire(pool.address, tx)
    perms = [REGISTRY_PERMISSIONS["TaskPool"], REGISTRY_PERMISSIONS["DisputeCommittee"]]
    registry.wire([pool.address, committee.address], perms, pool.longestExposure(), p["validatorBond"], tx)
    info = {
        "chainId": chain.id,
        "contracts": {
            "GensynToken": token.address,
            "NodeRegistry": registry.address,
            "TaskPool": pool.address,
            "DisputeCommittee": committee.address,
            "SegmentGame": game.address,
            "StepGame": step_game.address,
        },
        "libraries": {name: lib.address for name, lib in libraries.items()},
        "params": dict(p),
        "block": first_block,
    }
    written = write_deployment(path.parent, info)
    print(f"deployed to chain {chain.id}; record {outcome}: {written}")
    return info
