"""A read-only summary of a deployment: nodes, jobs, units, disputes and money held."""

from __future__ import annotations

from collections import Counter
from typing import Any

from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.types import ROLE_CHALLENGER, ROLE_SOLVER, ROLE_VALIDATOR

E18 = 10**18


def protocol_summary(w3: Web3, deployment: dict[str, Any]) -> dict[str, str]:
    """Counts come from the contracts' events (the daemons' source of truth); money from their views.

    The ABIs are the shipped ones: a status needs no compiler.
    """
    protocol = ProtocolContracts(w3, deployment)
    events = protocol.event_reader().fetch(0, w3.eth.block_number)
    roles: dict[str, int] = {}
    for e in events:
        if e.event == "NodeRegistered":
            roles[e.args["node"]] = int(e.args["roles"])
    seen = Counter(e.event for e in events)
    pool, registry, token = protocol.pool(), protocol.registry(), protocol.token()
    held = sum(token.balance_of(protocol.addresses[name]) for name in ("NodeRegistry", "TaskPool", "DisputeCommittee"))

    def count(role: int) -> int:
        return sum(1 for r in roles.values() if r & role)

    return {
        "nodes": f"{len(roles)} ({count(ROLE_SOLVER)} solvers, {count(ROLE_VALIDATOR)} validators, "
                 f"{count(ROLE_CHALLENGER)} challengers)",
        "jobs": f"{seen['JobSubmitted']} submitted, {seen['JobCompleted']} completed, {seen['JobCancelled']} cancelled",
        "units": f"{seen['UnitOpened']} opened, {seen['UnitCommitted']} committed, {seen['UnitFinalized']} final",
        "disputes": f"{seen['UnitDisputed']} opened, {seen['DisputeSettled']} settled, {seen['Slashed']} slashes",
        "tokens held by the protocol": f"{held / E18:,.2f} (escrow {pool.total_escrow() / E18:,.2f}, "
        f"stake {registry.total_staked() / E18:,.2f}, bonds {pool.total_bonds() / E18:,.2f}, "
        f"credit {pool.total_credit() / E18:,.2f})",
    }
