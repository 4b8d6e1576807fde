"""Who holds what and who spent which gas: the demo's and the benchmark's ledger.

Balances are wallet tokens, bonded stake and unclaimed credit per actor;
gas is summed over every transaction an actor sent between two blocks, read
back from the chain itself (so daemons running as separate processes are
counted too).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.decision_block import decision_block


@dataclass(frozen=True)
class Holding:
    wallet: int
    bonded: int
    credit: int

    @property
    def total(self) -> int:
        return self.wallet + self.bonded + self.credit


def holdings(protocol: ProtocolContracts, actors: dict[str, str]) -> dict[str, Holding]:
    """name -> (wallet tokens, bonded stake, unclaimed credit), all read at one block whole (daemons keep
    transacting meanwhile: a credit claimed between two reads would be counted twice or not at all)."""
    token, registry, pool = protocol.token(), protocol.registry(), protocol.pool()
    at = decision_block(protocol.w3)
    return {name: Holding(token.balance_of(a, block=at), registry.bonded_of(a, block=at), pool.credit(a, block=at))
            for name, a in actors.items()}


def slashes(protocol: ProtocolContracts, from_block: int) -> list[tuple[str, int]]:
    """(node, amount) of every stake slash since `from_block`, in chain order."""
    logs = protocol["NodeRegistry"].events.Slashed().get_logs(from_block=from_block)
    return [(str(e["args"]["node"]), int(e["args"]["amount"])) for e in logs]


def gas_by_sender(protocol: ProtocolContracts, actors: dict[str, str], from_block: int,
                  to_block: int | None = None, to: Collection[str] | None = None) -> dict[str, tuple[int, int]]:
    """name -> (transactions, gas used) over blocks [from_block, to_block]; with `to`, only transactions sent to
    those addresses."""
    w3 = protocol.w3
    last = int(w3.eth.block_number) if to_block is None else to_block
    names = {a.lower(): n for n, a in actors.items()}
    targets = None if to is None else {a.lower() for a in to}
    count: dict[str, int] = defaultdict(int)
    gas: dict[str, int] = defaultdict(int)
    for number in range(from_block, last + 1):
        block = w3.eth.get_block(number, full_transactions=True)
        txs: list[Any] = list(block["transactions"])
        for tx in txs:
            name = names.get(str(tx["from"]).lower())
            if name is None or (targets is not None and str(tx.get("to") or "").lower() not in targets):
                continue
            receipt = w3.eth.get_transaction_receipt(tx["hash"])
            count[name] += 1
            gas[name] += int(receipt["gasUsed"])
    return {n: (count[n], gas[n]) for n in actors}
