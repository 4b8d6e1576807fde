"""The block a decision reads: one whose state every read of it sees whole.

A decision that reads several values (whose turn it is, the interval, the other side's pending root, the events of
the moves so far) must see one state, or it computes a move for a position that never was. Pinning every read to
one block number gives that on a node that serves each block from that block's state.

anvil (1.7.1) does not for its head block: it serves reads of the head from its live database, which the block being
mined can already have moved past. Two reads of the same head number can then see two states (`bench/head_reads.py`
on the local market's mining: 18 of 329 checks torn at the head, 5.5%, while transactions landed back to back; none
of 329 a block lower). In a dispute game this let a validator read "my turn" from the new state and the interval
from the old one: its move answered the position before its opponent's last move, the contract took it, and the
honest side lost its way in the bisection. Reads of a block below the head come from that block's kept state and
agree.

So on anvil a decision reads the block below the head: it acts one block later (on the local market at most the
one-second mining interval, and any transaction mines a block at once), never on a torn state. Other nodes read the
head.
"""

from __future__ import annotations

from web3 import Web3

TEARING_CLIENTS = ("anvil/",)  # clients whose head-block reads can tear (`web3_clientVersion` prefixes)


def head_lag(w3: Web3) -> int:
    """How many blocks below the head a decision reads on this node: 1 on a client whose head reads can tear, else
    0 (also when the node does not answer `web3_clientVersion`)."""
    try:
        version = str(w3.client_version).lower()
    except Exception:  # a node without web3_clientVersion: nothing known against reading its head
        return 0
    return 1 if version.startswith(TEARING_CLIENTS) else 0


def decision_block(w3: Web3, lag: int | None = None) -> int:
    """The newest block whose state a decision can read whole: the head less `lag` (by default `head_lag`, one
    more RPC; a caller deciding often keeps the lag)."""
    return max(int(w3.eth.block_number) - (head_lag(w3) if lag is None else lag), 0)
