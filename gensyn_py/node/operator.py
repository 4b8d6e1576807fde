"""What a node operator asks of the chain about its own node, and the changes it makes by hand.

`node_status` gathers one node's standing from the registry and the pool: roles, hardware and price, replay
class, stake (bonded, locked, free, unbonding and its release), reputation, jail, claimable credit and the
units it is working on. The `gensyn node` commands (`gensyn_py/cli/operator.py`) print it and send the
operator's own transactions; each transaction is simulated first, so what the contract would refuse is
refused with its decoded reason before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.view import ChainView
from gensyn_py.types import (
    DEVICE_CLASSES,
    NO_CLASS,
    ROLE_CHALLENGER,
    ROLE_SOLVER,
    ROLE_VALIDATOR,
    Hardware,
    Reputation,
    Unbonding,
    UnitStatus,
)

IN_FLIGHT = (UnitStatus.ASSIGNED, UnitStatus.COMMITTED, UnitStatus.VERIFIED, UnitStatus.DISPUTED)
ROLE_NAMES = ((ROLE_SOLVER, "solver"), (ROLE_VALIDATOR, "validator"), (ROLE_CHALLENGER, "challenger"))


def role_names(roles: int) -> list[str]:
    return [name for bit, name in ROLE_NAMES if roles & bit]


def device_name(device_class: int) -> str:
    return next((name for name, c in DEVICE_CLASSES.items() if c == device_class), f"class {device_class}")


@dataclass(frozen=True)
class NodeStatus:
    """One node as the chain sees it now (all read at one block)."""

    address: str
    block: int
    now: int  # chain time at `block`
    roles: int
    hardware: Hardware
    replay_class: bytes
    bonded: int
    locked: int
    unbonding: Unbonding
    reputation: Reputation
    jailed_until: int
    in_validator_set: bool
    min_validator_stake: int
    credit: int  # claimable from the pool (`claimCredit`)
    solving: tuple[tuple[int, UnitStatus], ...]  # units it holds as solver, not yet final
    validating: tuple[tuple[int, UnitStatus], ...]  # units it was drawn to check, not yet final

    @property
    def registered(self) -> bool:
        return self.roles != 0

    @property
    def free(self) -> int:
        return self.bonded - self.locked

    def to_json(self) -> dict[str, Any]:
        """Integers as decimal strings for token amounts (18 decimals), so no reader loses precision."""
        return {
            "address": self.address, "block": self.block, "now": self.now, "registered": self.registered,
            "roles": role_names(self.roles), "device": device_name(self.hardware.device_class),
            "deviceClass": self.hardware.device_class, "memoryMb": self.hardware.memory_mb,
            "throughput": self.hardware.throughput, "pricePerUnit": str(self.hardware.price_per_unit),
            "replayClass": None if self.replay_class == NO_CLASS else "0x" + self.replay_class.hex(),
            "bonded": str(self.bonded), "locked": str(self.locked), "free": str(self.free),
            "unbonding": str(self.unbonding.amount), "unbondingRelease": self.unbonding.release,
            "reputation": {"completed": self.reputation.completed, "missed": self.reputation.missed,
                           "frauds": self.reputation.frauds},
            "jailedUntil": self.jailed_until, "inValidatorSet": self.in_validator_set,
            "minValidatorStake": str(self.min_validator_stake), "credit": str(self.credit),
            "solving": [{"unit": u, "status": s.name} for u, s in self.solving],
            "validating": [{"unit": u, "status": s.name} for u, s in self.validating],
        }


def node_status(protocol: ProtocolContracts, address: str) -> NodeStatus:
    """`address`'s standing and work, read at the latest block."""
    w3 = protocol.w3
    address = Web3.to_checksum_address(address)
    block = int(w3.eth.block_number)
    registry, pool, view = protocol.registry(), protocol.pool(), ChainView(protocol)
    claimed = {int(e["args"]["unitId"]) for e in view.logs("UnitClaimed", solver=address)}
    drawn = {int(e["args"]["unitId"]) for e in view.logs("ValidatorsDrawn")
             if address in e["args"]["validators"]}
    solving, validating = [], []
    for unit_id in sorted(claimed | drawn):
        unit = view.unit(unit_id)
        if unit.status not in IN_FLIGHT:
            continue
        if unit.solver == address:
            solving.append((unit_id, unit.status))
        if address in unit.validators:
            validating.append((unit_id, unit.status))
    standing = registry.standing(address, block=block)
    return NodeStatus(
        address=address, block=block, now=int(w3.eth.get_block(block)["timestamp"]),
        roles=registry.roles_of(address, block=block), hardware=registry.hardware_of(address, block=block),
        replay_class=registry.replay_class_of(address, block=block), bonded=standing.bonded,
        locked=registry.locked_of(address, block=block), unbonding=registry.unbonding_of(address, block=block),
        reputation=registry.reputation_of(address, block=block), jailed_until=standing.jailed_until,
        in_validator_set=standing.in_validator_set, min_validator_stake=standing.min_validator_stake,
        credit=pool.credit(address, block=block), solving=tuple(solving), validating=tuple(validating))
