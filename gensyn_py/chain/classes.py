"""The network's replay classes, as `gensyn nodes classes` lists them: from the registry's `ReplayClassSet` events
(each carries its class's description, the preimage of the id) and its class validator sets.

A node's class is the last one it declared; a class is listed while some registered node declares it. Validators
are the members of the class's validator set (`validatorCountIn`: staked, unjailed, VALIDATOR role), solvers
the nodes of the class with the SOLVER role.
"""

from __future__ import annotations

from dataclasses import dataclass

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.types import NO_CLASS, ROLE_SOLVER


@dataclass(frozen=True)
class ClassRow:
    """One replay class of the network."""

    class_id: bytes
    description: str
    nodes: tuple[str, ...]  # registered nodes that declare it
    solvers: int
    validators: int  # members of the class's validator set: who can be drawn for its exact units


def list_classes(protocol: ProtocolContracts, from_block: int | None = None) -> list[ClassRow]:
    """Every class some node declares now, most validators first."""
    start = int(protocol.deployment.get("block", 0)) if from_block is None else from_block
    logs = protocol["NodeRegistry"].events.ReplayClassSet().get_logs(from_block=start)
    latest: dict[str, bytes] = {}
    descriptions: dict[bytes, str] = {}
    for ev in sorted(logs, key=lambda e: (e["blockNumber"], e["logIndex"])):
        cls = bytes(ev["args"]["replayClass"])
        latest[str(ev["args"]["node"])] = cls
        if cls != NO_CLASS:
            descriptions[cls] = str(ev["args"]["description"])
    registry = protocol.registry()
    members: dict[bytes, list[str]] = {}
    for node, cls in latest.items():
        if cls != NO_CLASS:
            members.setdefault(cls, []).append(node)
    rows = [ClassRow(cls, descriptions[cls], tuple(nodes),
                     sum(1 for n in nodes if registry.roles_of(n) & ROLE_SOLVER),
                     registry.validator_count_in(cls))
            for cls, nodes in members.items()]
    return sorted(rows, key=lambda r: (-r.validators, -r.solvers, r.class_id))
