"""Does a node serve each block's reads from that block's state? A probe on a live chain.

One thread sends transactions back to back to a counter contract (each call adds one to its slot, and a read
returns the slot plus one), as daemons do on a busy local market. Another takes a block number, reads the counter
three times at that block and counts the checks whose three reads disagree: torn reads. It does so at the head and
at the block below it (`chain/decision_block.py` reads the latter on anvil).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from web3 import Web3

# Runtime: sstore(0, sload(0) + 1); return sload(0) + 1 (a call sees the slot plus one, a transaction adds one).
COUNTER_RUNTIME = "600054600101806000556000526020" + "6000f3"
COUNTER_INIT = "6012600c60003960126000f3"  # codecopy the 18-byte runtime after these 12 bytes and return it


@dataclass
class TornReads:
    checks: int  # checks at each of the two blocks
    torn_at_head: int  # checks at the head whose three reads disagreed
    torn_below_head: int  # the same, one block below the head
    transactions: int  # sent during the probe


def deploy_counter(w3: Web3, sender: str) -> str:
    tx = w3.eth.send_transaction({"from": sender, "data": "0x" + COUNTER_INIT + COUNTER_RUNTIME})  # type: ignore[typeddict-item]
    return str(w3.eth.wait_for_transaction_receipt(tx)["contractAddress"])


def probe(url: str, seconds: float) -> TornReads:
    """Count torn reads at the head and below it over `seconds` on the node at `url` (unlocked dev accounts)."""
    writer_w3, reader_w3 = Web3(Web3.HTTPProvider(url)), Web3(Web3.HTTPProvider(url))
    sender = writer_w3.eth.accounts[0]
    counter = deploy_counter(writer_w3, sender)
    stop = threading.Event()
    sent = [0]

    def write() -> None:
        while not stop.is_set():
            writer_w3.eth.send_transaction({"from": sender, "to": counter, "data": "0x"})  # type: ignore[typeddict-item]
            sent[0] += 1

    def torn(block: int) -> bool:
        reads = {bytes(reader_w3.eth.call({"to": counter}, block)) for _ in range(3)}
        return len(reads) > 1

    writer = threading.Thread(target=write, name="head-reads-writer", daemon=True)
    writer.start()
    checks = at_head = below = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            head = int(reader_w3.eth.block_number)
            at_head += torn(head)
            below += torn(max(head - 1, 0))
            checks += 1
    finally:
        stop.set()
        writer.join(timeout=10)
    return TornReads(checks, at_head, below, sent[0])
