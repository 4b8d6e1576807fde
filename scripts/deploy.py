"""brownie deploy script: `brownie run scripts/deploy.py --network gensyn-anvil`.

Deploys and wires the protocol exactly as `gensyn_py.devnet.deploy.deploy_protocol`
does (same contracts, parameters and wiring order), from the key in
GENSYN_DEPLOYER_KEY (default: anvil's first dev key), and writes
deployments/<chainId>.json.
"""

from __future__ import annotations

import os
from typing import Any

from brownie import (
    DisputeCommittee,
    Disputes,
    GensynToken,
    NodeRegistry,
    TaskPool,
    Units,
    accounts,
    chain,
)

from gensyn_py.devnet.anvil import DEV_KEYS
from gensyn_py.devnet.deploy import DEFAULT_PARAMS, POOL_FIELDS, committee_args, write_deployment


def main() -> dict[str, Any]:
    deployer = accounts.add(os.environ.get("GENSYN_DEPLOYER_KEY", DEV_KEYS[0]))
    tx = {"from": deployer}
    p = DEFAULT_PARAMS
    token = GensynToken.deploy(deployer.address, tx)
    registry = NodeRegistry.deploy(token.address, p["unbondingDelay"], deployer.address, tx)
    # TaskPool links these libraries; brownie links a library deployed earlier on the same network.
    libraries = {"Units": Units.deploy(tx), "Disputes": Disputes.deploy(tx)}
    pool = TaskPool.deploy(token.address, registry.address, tuple(p[k] for k in POOL_FIELDS), deployer.address, tx)
    committee = DisputeCommittee.deploy(registry.address, *committee_args(p), deployer.address, tx)
    pool.wire(committee.address, tx)
    committee.wire(pool.address, tx)
    registry.wire([pool.address, committee.address], pool.longestExposure(), tx)
    info = {
        "chainId": chain.id,
        "contracts": {
            "GensynToken": token.address,
            "NodeRegistry": registry.address,
            "TaskPool": pool.address,
            "DisputeCommittee": committee.address,
        },
        "libraries": {name: lib.address for name, lib in libraries.items()},
        "params": dict(p),
    }
    path = write_deployment(os.environ.get("GENSYN_DEPLOYMENTS_DIR", "deployments"), info)
    print(f"deployed to chain {chain.id}; addresses in {path}")
    return info
