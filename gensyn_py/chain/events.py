"""Read contract events in chain order from a saved cursor, confirmed blocks only.

The cursor holds the next block to read. `EventReader.batches()` yields the
decoded events of one chunk of blocks at a time and saves the cursor past
that chunk only when the consumer asks for the next batch, i.e. after it has
processed this one. A crash mid-batch replays that batch on restart (at least
once); handlers are expected to be idempotent. Blocks newer than
`head - confirmations` are never read, so a shallow reorg cannot deliver an
event that later vanishes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from eth_typing import ChecksumAddress
from eth_utils import event_abi_to_log_topic
from web3 import Web3
from web3.contract import Contract
from web3.types import FilterParams, LogReceipt

from gensyn_py.chain.client import with_retry
from gensyn_py.errors import ChainError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EventRecord:
    """One decoded log."""

    contract: str
    event: str
    args: dict[str, Any]
    address: ChecksumAddress
    block_number: int
    block_hash: str
    tx_hash: str
    log_index: int

    @property
    def position(self) -> tuple[int, int]:
        """Sort key: chain order."""
        return (self.block_number, self.log_index)


class Cursor(Protocol):
    """Where reading resumes: the next block number, or None if never saved."""

    def load(self) -> int | None: ...

    def save(self, next_block: int) -> None: ...


@dataclass
class MemoryCursor:
    next_block: int | None = None

    def load(self) -> int | None:
        return self.next_block

    def save(self, next_block: int) -> None:
        self.next_block = next_block


@dataclass(frozen=True)
class JsonFileCursor:
    """A cursor in a small JSON file, replaced atomically on save."""

    path: Path

    def load(self) -> int | None:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ChainError(f"event cursor {self.path} is unreadable: {exc}") from exc
        return int(raw["nextBlock"])

    def save(self, next_block: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"nextBlock": next_block}))
        os.replace(tmp, self.path)


@dataclass
class _Source:
    name: str
    contract: Contract
    by_topic: dict[bytes, Any] = field(default_factory=dict)


class EventReader:
    """Decoded events of one or more contracts, from a cursor up to `head - confirmations`."""

    def __init__(
        self,
        w3: Web3,
        contracts: Mapping[str, Contract] | Sequence[Contract],
        cursor: Cursor | None = None,
        *,
        confirmations: int = 0,
        chunk_size: int = 1000,
        start_block: int = 0,
    ) -> None:
        if chunk_size < 1 or confirmations < 0:
            raise ValueError("chunk_size must be >= 1 and confirmations >= 0")
        self.w3 = w3
        self.cursor: Cursor = cursor if cursor is not None else MemoryCursor()
        self.confirmations = confirmations
        self.chunk_size = chunk_size
        self.start_block = start_block
        named = contracts.items() if isinstance(contracts, Mapping) else ((c.address, c) for c in contracts)
        self._sources: dict[str, _Source] = {}
        for name, contract in named:
            source = _Source(name, contract)
            for entry in contract.abi:
                if entry["type"] == "event" and not entry.get("anonymous", False):
                    source.by_topic[event_abi_to_log_topic(entry)] = contract.events[entry["name"]]
            self._sources[contract.address.lower()] = source
        if not self._sources:
            raise ValueError("EventReader needs at least one contract")

    @property
    def next_block(self) -> int:
        saved = self.cursor.load()
        return self.start_block if saved is None else saved

    def safe_head(self) -> int:
        head = with_retry(lambda: int(self.w3.eth.block_number), what="eth_blockNumber")
        return head - self.confirmations

    def fetch(self, from_block: int, to_block: int) -> list[EventRecord]:
        """Decoded events in [from_block, to_block], in chain order. Does not touch the cursor."""
        params: FilterParams = {
            "fromBlock": from_block,
            "toBlock": to_block,
            "address": [s.contract.address for s in self._sources.values()],
        }
        try:
            what = f"eth_getLogs {from_block}-{to_block}"
            logs = with_retry(lambda: self.w3.eth.get_logs(params), what=what)
        except Exception as exc:
            raise ChainError(f"reading logs of blocks {from_block}-{to_block}: {exc}") from exc
        records = [r for r in (self._decode(entry) for entry in logs) if r is not None]
        return sorted(records, key=lambda r: r.position)

    def _decode(self, entry: LogReceipt) -> EventRecord | None:
        source = self._sources.get(str(entry["address"]).lower())
        topics = entry["topics"]
        event = source.by_topic.get(bytes(topics[0])) if source and topics else None
        if source is None or event is None:
            log.debug("skipping undecodable log %s#%s", entry["transactionHash"].hex(), entry["logIndex"])
            return None
        decoded = event.process_log(entry)
        return EventRecord(
            contract=source.name,
            event=decoded["event"],
            args=dict(decoded["args"]),
            address=source.contract.address,
            block_number=int(entry["blockNumber"]),
            block_hash=entry["blockHash"].to_0x_hex(),
            tx_hash=entry["transactionHash"].to_0x_hex(),
            log_index=int(entry["logIndex"]),
        )

    def batches(self) -> Iterator[list[EventRecord]]:
        """Yield each chunk's events (possibly empty) up to the safe head.

        The cursor moves past a chunk when the consumer resumes the generator,
        so stopping early or raising leaves that chunk to be read again.
        """
        start = self.next_block
        safe = self.safe_head()
        while start <= safe:
            end = min(start + self.chunk_size - 1, safe)
            records = self.fetch(start, end)
            yield records
            self.cursor.save(end + 1)
            start = end + 1

    def poll(self, handler: Callable[[EventRecord], None]) -> int:
        """Run `handler` on every new confirmed event in order; return how many were handled."""
        handled = 0
        for batch in self.batches():
            for record in batch:
                handler(record)
                handled += 1
        return handled
