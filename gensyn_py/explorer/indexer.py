"""Follow the protocol's events into the SQLite index, one cursor, surviving reorgs and restarts.

Unlike the daemons (which read `confirmations` behind the head so an event they act on
never vanishes), the explorer shows the newest block at once and takes back what a reorg
removes: every read stores the hash of its last block, and each poll first checks the
newest stored hash against the chain. On a mismatch it walks back through the stored
hashes to the last block both agree on and drops everything above it; if none agrees
(a new chain under the same RPC URL), it starts over.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import Any

from web3 import Web3
from web3.types import RPCEndpoint

from gensyn_py.chain.client import with_retry
from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.events import EventRecord
from gensyn_py.errors import ChainError
from gensyn_py.explorer import schema
from gensyn_py.explorer.decode import LogDecoder
from gensyn_py.explorer.refs import dumps, id_kinds, refs_of

log = logging.getLogger(__name__)

# Anchors without events older than this many blocks below the head are pruned: no reorg goes that deep here.
ANCHOR_DEPTH = 256
# Block reads per JSON-RPC batch during catch-up: one HTTP round trip instead of one per block.
BATCH = 200


@dataclass(frozen=True)
class PollResult:
    events: int  # new events indexed
    head: int  # the chain's head when read
    reorged_to: int | None  # the block the index was cut back to, if a reorg was found


def deployment_key(protocol: ProtocolContracts) -> str:
    """A fingerprint of chain id and contract addresses: a different one means a different index."""
    body = json.dumps({"chainId": protocol.chain_id, "contracts": protocol.addresses}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


class Indexer:
    """Reads new events into `db`; `poll()` is one step, safe to call from one thread at a time."""

    def __init__(self, protocol: ProtocolContracts, db: sqlite3.Connection, chunk_size: int = 2000,
                 start_block: int = 0) -> None:
        self.protocol = protocol
        self.w3: Web3 = protocol.w3
        self.db = db
        self.decoder = LogDecoder({n: protocol[n] for n in protocol.names})
        self.addresses = [protocol[n].address for n in protocol.names]
        self.chunk_size = chunk_size
        self.start_block = start_block
        self.exclude = frozenset(a.lower() for a in protocol.addresses.values())
        self.version = 0  # bumped on every change; the web app's live updates follow it
        self.changed = threading.Condition()
        key = deployment_key(protocol)
        if schema.get_meta(db, "deployment") != key or schema.get_meta(db, "schema") != str(schema.SCHEMA_VERSION):
            schema.reset(db)
            schema.set_meta(db, "deployment", key)
            schema.set_meta(db, "schema", schema.SCHEMA_VERSION)

    @property
    def next_block(self) -> int:
        saved = schema.get_meta(self.db, "next_block")
        return self.start_block if saved is None else int(saved)

    def _rpc(self, fn: Callable[[], Any], what: str) -> Any:
        return with_retry(fn, what=what)

    def _block_hash(self, number: int) -> str | None:
        try:
            block = self._rpc(lambda: self.w3.eth.get_block(number), f"eth_getBlockByNumber {number}")
        except Exception as exc:  # a block the chain no longer has (a restarted, shorter chain)
            if "not found" in str(exc).lower():
                return None
            raise
        return str(block["hash"].to_0x_hex())

    def find_fork(self, head: int) -> int | None:
        """The last stored block the chain still agrees with, or None if the newest stored one still holds."""
        # Lazily: every poll reads only the newest stored hash unless the chain disagrees with it.
        with closing(self.db.execute("SELECT number, hash FROM blocks ORDER BY number DESC")) as rows:
            seen_any = False
            for i, row in enumerate(rows):
                seen_any = True
                number = int(row["number"])
                if number <= head and self._block_hash(number) == row["hash"]:
                    return None if i == 0 else number
        return -1 if seen_any else None  # nothing agrees: a different chain (or an empty index)

    def _cut_back(self, to_block: int) -> None:
        self.db.execute("BEGIN")
        if to_block < 0:
            schema.drop_above(self.db, -1)
            schema.set_meta(self.db, "next_block", self.start_block)
        else:
            schema.drop_above(self.db, to_block)
            schema.set_meta(self.db, "next_block", to_block + 1)
        self.db.execute("COMMIT")

    def poll(self) -> PollResult:
        """Check for a reorg, then index every block up to the head."""
        head = int(self._rpc(lambda: self.w3.eth.block_number, "eth_blockNumber"))
        fork = self.find_fork(head)
        if fork is not None:
            log.warning("explorer: chain changed below the index; cutting back to block %s", fork)
            self._cut_back(fork)
        total = 0
        start = self.next_block
        while start <= head:
            end = min(start + self.chunk_size - 1, head)
            total += self._index_range(start, end)
            start = end + 1
        if total or fork is not None:
            self.bump()
        return PollResult(total, head, fork)

    def bump(self) -> None:
        with self.changed:
            self.version += 1
            self.changed.notify_all()

    def _index_range(self, start: int, end: int) -> int:
        records = self.fetch(start, end)
        with_events = {r.block_number for r in records}
        blocks, receipts = self._blocks_and_receipts(sorted(with_events | {end}), with_events)
        wanted = {r.tx_hash for r in records}
        txs = [(h, sender, gas, number) for number, rows in receipts.items()
               for h, sender, gas in rows if h in wanted]
        db = self.db
        db.execute("BEGIN")
        try:
            db.executemany("INSERT OR REPLACE INTO blocks VALUES (?, ?, ?, ?)",
                           [(n, h, t, int(n in with_events)) for n, (h, t) in blocks.items()])
            # The resolver of each dispute the range opens, by (transaction, unit): the pool's `UnitDisputed` in the
            # same transaction names that dispute (refs.py).
            resolvers = {(r.tx_hash, int(r.args["unitId"])): r.contract for r in records if r.event == "DisputeOpened"}
            for r in records:
                self._insert(r, resolvers)
            db.executemany("INSERT OR REPLACE INTO txs VALUES (?, ?, ?, ?)", txs)
            db.execute("DELETE FROM blocks WHERE has_events = 0 AND number < ? AND number <> ?",
                       (end - ANCHOR_DEPTH, end))
            schema.set_meta(db, "next_block", end + 1)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return len(records)

    def fetch(self, start: int, end: int) -> list[EventRecord]:
        """The protocol's events in [start, end], decoded with eth-abi (`decode.py`), in chain order."""
        params = {"fromBlock": hex(start), "toBlock": hex(end), "address": self.addresses}
        answer = self._rpc(partial(self.w3.provider.make_request, RPCEndpoint("eth_getLogs"), [params]),
                           f"eth_getLogs {start}-{end}")
        if answer.get("error") or not isinstance(answer.get("result"), list):
            raise ChainError(f"eth_getLogs {start}-{end}: {answer.get('error')}")
        return self.decoder.decode_all(answer["result"])

    def _blocks_and_receipts(self, numbers: list[int], with_receipts: set[int]
                             ) -> tuple[dict[int, tuple[str, int]], dict[int, list[tuple[str, str, int]]]]:
        """(hash, time) of `numbers` and (tx, sender, gas) of each block in `with_receipts`.

        Raw JSON-RPC batches of BATCH calls: one round trip each, and only the three fields read
        are parsed (web3's result formatters cost more than the node's answer here).
        """
        calls: list[tuple[str, int]] = [("eth_getBlockByNumber", n) for n in numbers]
        calls += [("eth_getBlockReceipts", n) for n in sorted(with_receipts)]
        blocks: dict[int, tuple[str, int]] = {}
        receipts: dict[int, list[tuple[str, str, int]]] = {}
        for i in range(0, len(calls), BATCH):
            part = calls[i:i + BATCH]
            answers = self._rpc(partial(self._batch, part), f"a batch of {len(part)} block reads")
            for (method, n), answer in zip(part, answers, strict=True):
                if method == "eth_getBlockByNumber":
                    blocks[n] = (str(answer["hash"]), int(answer["timestamp"], 16))
                else:
                    receipts[n] = [(str(rc["transactionHash"]), str(rc["from"]).lower(), int(rc["gasUsed"], 16))
                                   for rc in answer]
        return blocks, receipts

    def _batch(self, calls: list[tuple[str, int]]) -> list[Any]:
        requests = [(RPCEndpoint(m), [hex(n), False] if m == "eth_getBlockByNumber" else [hex(n)]) for m, n in calls]
        responses = self.w3.provider.make_batch_request(requests)  # type: ignore[attr-defined]
        if not isinstance(responses, list):
            raise ChainError(f"the node refused a batch of {len(calls)} reads: {responses.get('error')}")
        by_id = sorted(responses, key=lambda r: int(r["id"]))
        for call, r in zip(calls, by_id, strict=True):
            if r.get("error") or r.get("result") is None:
                raise ChainError(f"{call[0]} {call[1]}: {r.get('error') or 'no such block'}")
        return [r["result"] for r in by_id]

    def _insert(self, r: EventRecord, resolvers: dict[tuple[str, int], str]) -> None:
        db = self.db
        db.execute("INSERT OR REPLACE INTO events VALUES (?, ?, ?, ?, ?, ?)",
                   (r.block_number, r.log_index, r.tx_hash, r.contract, r.event, dumps(r.args)))
        resolver = resolvers.get((r.tx_hash, int(r.args["unitId"]))) if "unitId" in r.args else None
        kinds = id_kinds(r.contract, resolver)
        db.executemany("INSERT INTO refs VALUES (?, ?, ?, ?)",
                       [(k, ref, r.block_number, r.log_index) for k, ref in refs_of(r.args, self.exclude, kinds)])
        if r.event == "UnitOpened":
            a = r.args
            db.execute("INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?, ?)",
                       (int(a["unitId"]), int(a["jobId"]), int(a["round"]), int(a["shard"]),
                        int(bool(a["isAggregation"])), r.block_number))


def counts_by_event(db: sqlite3.Connection) -> dict[str, int]:
    return {str(r["name"]): int(r["n"]) for r in db.execute("SELECT name, COUNT(*) AS n FROM events GROUP BY name")}
