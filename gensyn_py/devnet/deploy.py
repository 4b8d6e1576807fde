"""Deploy and wire the protocol contracts with plain web3.py.

`deploy_protocol` deploys GensynToken, NodeRegistry, TaskPool (after the libraries it
links: `Units`, `Disputes`), DisputeCommittee and the dispute game (SegmentGame, and the
StepGame it opens with its three referees), wires them (TaskPool -> committee and, with
`disputeGame`, the game; committee -> TaskPool; game -> step game; the registry authorizes
the pool and the committee and checks its unbonding delay exceeds the longest exposure),
grants each contract only the registry permissions it needs (`REGISTRY_PERMISSIONS`) and
returns a deployment record. Defaults are small windows in seconds, friendly to tests on a
local chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount
from web3 import Web3

from gensyn_py.devnet.linking import deploy_order, link
from gensyn_py.errors import TransactionError
from gensyn_py.types import PERM_COMPLETED, PERM_FRAUD, PERM_MISSED, PERM_STAKE_ANY, PERM_STAKE_OWN

DEFAULT_PARAMS: dict[str, int] = {
    "validatorsPerUnit": 2,
    "livenessPenaltyBps": 500,
    "committeeRewardBps": 2000,
    "claimWindow": 60,
    "verdictCommitWindow": 60,
    "revealWindow": 60,
    "challengeWindow": 60,
    "minCommitWindow": 30,
    "validatorFee": 10 * 10**18,
    "validatorBond": 50 * 10**18,
    "challengeBond": 50 * 10**18,
    "committeeSize": 3,
    "votingPeriod": 60,
    "voteRevealPeriod": 60,
    "committeeBond": 50 * 10**18,
    "unbondingDelay": 600,
    # Registry: entering the validator set takes at least one validator bond (sybils pay per address);
    # a proven fraud jails for `jailPeriod` seconds (then `unjail()`).
    "minValidatorStake": 50 * 10**18,
    "jailPeriod": 3600,
    # The dispute game: seconds each side has over the segment game's stages, and over the step game's.
    "gameClock": 90,
    "stepGameClock": 90,
    # Whether the pool hands disputes over repro units of jobs with a step table to the game (1: the contract alone
    # decides them, docs/dispute-game.md) or keeps every dispute with the committee (0). The game is always deployed;
    # `exact` units, aggregations and jobs without a step table go to the committee either way.
    "disputeGame": 1,
}
# The pool locks, unlocks and slashes collateral and validator bonds and keeps every counter; the committee
# only counts missed votes, and may lock (then unlock or slash) only stake it locked itself.
__all__ = ["PERM_COMPLETED", "PERM_FRAUD", "PERM_MISSED", "PERM_STAKE_ANY", "PERM_STAKE_OWN"]  # re-exported
REGISTRY_PERMISSIONS: dict[str, int] = {
    "TaskPool": PERM_STAKE_ANY | PERM_COMPLETED | PERM_MISSED | PERM_FRAUD,
    "DisputeCommittee": PERM_STAKE_OWN | PERM_MISSED,
}
POOL_FIELDS = (
    "validatorsPerUnit",
    "livenessPenaltyBps",
    "committeeRewardBps",
    "claimWindow",
    "verdictCommitWindow",
    "revealWindow",
    "challengeWindow",
    "minCommitWindow",
    "validatorFee",
    "validatorBond",
    "challengeBond",
)


ZERO_ADDRESS = "0x" + "00" * 20

COMMITTEE_FIELDS = ("committeeSize", "votingPeriod", "voteRevealPeriod", "committeeBond")


def committee_args(p: dict[str, Any]) -> tuple[int, ...]:
    """DisputeCommittee's constructor arguments after the registry (the owner comes last)."""
    return tuple(int(p[k]) for k in COMMITTEE_FIELDS)


def _send(w3: Web3, acct: LocalAccount, tx: dict[str, Any]) -> Any:
    tx.setdefault("from", acct.address)
    tx.setdefault("nonce", w3.eth.get_transaction_count(acct.address, "pending"))
    tx.setdefault("chainId", w3.eth.chain_id)
    if "gas" not in tx:
        tx["gas"] = int(w3.eth.estimate_gas(tx) * 1.2) + 50_000  # type: ignore[arg-type]
    if "maxFeePerGas" not in tx and "gasPrice" not in tx:
        base = w3.eth.get_block("latest").get("baseFeePerGas", 0) or 0
        tx["maxPriorityFeePerGas"] = 1
        tx["maxFeePerGas"] = 2 * base + 1
    signed = acct.sign_transaction(tx)
    tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=60)
    if receipt["status"] != 1:
        raise TransactionError(f"transaction {tx_hash.hex()} failed")
    return receipt


def _deploy(
    w3: Web3, acct: LocalAccount, artifact: dict[str, Any], *args: Any, libraries: dict[str, str] | None = None
) -> str:
    """Deploy `artifact` with constructor `args`, its library placeholders linked to `libraries` {name: address}."""
    factory = w3.eth.contract(abi=artifact["abi"], bytecode=link(artifact, libraries or {}))
    tx = factory.constructor(*args).build_transaction(
        {"from": acct.address, "nonce": w3.eth.get_transaction_count(acct.address, "pending")}
    )
    receipt = _send(w3, acct, dict(tx))
    return str(receipt["contractAddress"])


def _call(w3: Web3, acct: LocalAccount, artifact: dict[str, Any], address: str, fn: str, *args: Any) -> None:
    contract = w3.eth.contract(address=Web3.to_checksum_address(address), abi=artifact["abi"])
    tx = getattr(contract.functions, fn)(*args).build_transaction(
        {"from": acct.address, "nonce": w3.eth.get_transaction_count(acct.address, "pending")}
    )
    _send(w3, acct, dict(tx))


def deploy_libraries(
    w3: Web3, acct: LocalAccount, artifacts: dict[str, dict[str, Any]], name: str = "TaskPool"
) -> dict[str, str]:
    """Deploy the libraries contract `name` links (each after those it links itself); returns {library: address}."""
    addresses: dict[str, str] = {}
    for lib in deploy_order(artifacts, name):
        addresses[lib] = _deploy(w3, acct, artifacts[lib], libraries=addresses)
    return addresses


def deploy_game(
    w3: Web3, deployer: LocalAccount, artifacts: dict[str, dict[str, Any]], pool: str, p: dict[str, Any]
) -> tuple[str, str]:
    """Deploy the segment game for `pool`, the step game it opens (with its referees) and wire them; returns
    (SegmentGame, StepGame) addresses."""
    game = _deploy(w3, deployer, artifacts["SegmentGame"], pool, int(p["gameClock"]), deployer.address)
    referees = [_deploy(w3, deployer, artifacts[n]) for n in ("ElementReferee", "DotReferee", "MoveReferee")]
    step_game = _deploy(w3, deployer, artifacts["StepGame"], game, int(p["stepGameClock"]), *referees)
    _call(w3, deployer, artifacts["SegmentGame"], game, "wire", step_game)
    return game, step_game


def deploy_protocol(
    w3: Web3, deployer: LocalAccount, artifacts: dict[str, dict[str, Any]], params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Deploy and wire every contract; returns {"chainId", "contracts": {name: address}, "libraries": {name: address},
    "params", "block"}."""
    p = {**DEFAULT_PARAMS, **(params or {})}
    if params is not None and "validatorBond" in params and "minValidatorStake" not in params:
        p["minValidatorStake"] = p["validatorBond"]  # at least one bond, as the registry's wiring requires
    me = deployer.address
    first_block = int(w3.eth.block_number) + 1  # event scans start here
    token = _deploy(w3, deployer, artifacts["GensynToken"], me)
    registry = _deploy(
        w3, deployer, artifacts["NodeRegistry"], token, p["unbondingDelay"], p["minValidatorStake"], p["jailPeriod"], me
    )
    pool_params = tuple(int(p[k]) for k in POOL_FIELDS)
    libraries = deploy_libraries(w3, deployer, artifacts)
    pool = _deploy(w3, deployer, artifacts["TaskPool"], token, registry, pool_params, me, libraries=libraries)
    committee = _deploy(w3, deployer, artifacts["DisputeCommittee"], registry, *committee_args(p), me)
    game, step_game = deploy_game(w3, deployer, artifacts, pool, p)
    _call(w3, deployer, artifacts["TaskPool"], pool, "wire", committee, game if p["disputeGame"] else ZERO_ADDRESS)
    _call(w3, deployer, artifacts["DisputeCommittee"], committee, "wire", pool)
    exposure = (
        w3.eth.contract(address=Web3.to_checksum_address(pool), abi=artifacts["TaskPool"]["abi"])
        .functions.longestExposure()
        .call()
    )
    perms = [REGISTRY_PERMISSIONS["TaskPool"], REGISTRY_PERMISSIONS["DisputeCommittee"]]
    _call(
        w3, deployer, artifacts["NodeRegistry"], registry, "wire", [pool, committee], perms, exposure,
        p["validatorBond"],
    )
    return {
        "chainId": w3.eth.chain_id,
        "contracts": {"GensynToken": token, "NodeRegistry": registry, "TaskPool": pool, "DisputeCommittee": committee,
                      "SegmentGame": game, "StepGame": step_game},
        "libraries": libraries,
        "params": p,
        "block": first_block,
    }


def write_deployment(path_dir: str | Path, info: dict[str, Any]) -> Path:
    """Write `info` to <path_dir>/<chainId>.json and return the path."""
    out_dir = Path(path_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{info['chainId']}.json"
    path.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return path
