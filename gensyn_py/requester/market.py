"""What solvers on the chain ask: every registered, unjailed solver's latest declared hardware and price.

A node declares its hardware (device class, memory, throughput, price per unit) in `NodeRegistered` and changes
it with `HardwareUpdated`; the latest of those events per node is what it asks now. Roles, jail and reputation
are read with one `claimInfo` call per node, all at one block, so the list is what `TaskPool.claim` would see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.types import ROLE_SOLVER, Hardware, Reputation


@dataclass(frozen=True)
class SolverOffer:
    """One solver that could claim a unit now: its declared hardware and price, and its reputation."""

    address: str
    hardware: Hardware
    reputation: Reputation


def declared_hardware(protocol: ProtocolContracts, to_block: int) -> dict[str, Hardware]:
    """Every node's latest declared hardware, from the registry's events up to `to_block`."""
    contract = protocol["NodeRegistry"]
    start = int(protocol.deployment.get("block", 0))
    logs = [*contract.events.NodeRegistered().get_logs(from_block=start, to_block=to_block),
            *contract.events.HardwareUpdated().get_logs(from_block=start, to_block=to_block)]
    latest: dict[str, Hardware] = {}
    for e in sorted(logs, key=lambda e: (e["blockNumber"], e["logIndex"])):
        hw = e["args"]["hw"]  # web3 decodes an event's struct as a mapping by field name
        latest[str(e["args"]["node"])] = Hardware.from_mapping(hw) if isinstance(hw, Mapping) else Hardware.from_abi(hw)
    return latest


def solver_offers(protocol: ProtocolContracts) -> tuple[int, list[SolverOffer]]:
    """(block read at, the registered and unjailed SOLVER nodes with their declared hardware and reputation)."""
    block = int(protocol.w3.eth.block_number)
    registry = protocol.registry()
    offers = []
    for node, hw in declared_hardware(protocol, block).items():
        info = registry.claim_info(node, block=block)
        # INVARIANT: the same filter as `TaskPool._checkClaimer`: the SOLVER role and no jail.
        if info.roles & ROLE_SOLVER and not info.jailed:
            offers.append(SolverOffer(node, hw, info.reputation))
    return block, offers
