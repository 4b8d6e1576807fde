"""Decode raw `eth_getLogs` answers with eth-abi directly: the explorer's catch-up reads every event ever.

web3's `process_log` formats each log and each answer through layers of normalisers (about 1 ms an
event here); decoding the topics and data with eth-abi against the same ABIs gives the same values
(checked against web3 in tests/contracts/test_explorer_index.py) in a fraction of that. Structs come
out as objects named by their components, addresses checksummed, as web3 gives them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eth_abi import decode
from eth_utils import event_abi_to_log_topic, to_checksum_address
from eth_utils.abi import collapse_if_tuple
from web3.contract import Contract

from gensyn_py.chain.events import EventRecord


@dataclass(frozen=True)
class _Field:
    name: str
    abi: Mapping[str, Any]
    type: str  # the ABI type string eth-abi decodes, structs collapsed to tuples


def _field(abi: Mapping[str, Any]) -> _Field:
    return _Field(str(abi["name"]), abi, collapse_if_tuple(dict(abi)))


@dataclass(frozen=True)
class _EventSpec:
    contract: str
    address: str
    name: str
    indexed: tuple[_Field, ...]
    data: tuple[_Field, ...]
    order: tuple[str, ...]  # the arguments in ABI order, as web3 lists them
    data_types: tuple[str, ...]


def _hashed_in_topic(abi_type: str) -> bool:
    """Indexed dynamic values (strings, bytes, arrays, structs) are stored as their hash."""
    return abi_type in ("string", "bytes") or abi_type.endswith("]") or abi_type.startswith("(")


def _shape(abi: Mapping[str, Any], value: Any) -> Any:
    """eth-abi's value as web3 shapes it: checksummed addresses, structs as named objects."""
    kind = str(abi["type"])
    if kind.endswith("]"):
        inner = {**abi, "type": kind[: kind.rindex("[")]}
        return [_shape(inner, v) for v in value]
    if kind == "tuple":
        return {str(c["name"]): _shape(c, v) for c, v in zip(abi["components"], value, strict=True)}
    if kind == "address":
        return to_checksum_address(value)
    return value


class LogDecoder:
    """Events of the given contracts, by (address, topic 0)."""

    def __init__(self, contracts: Mapping[str, Contract]) -> None:
        self._specs: dict[tuple[str, bytes], _EventSpec] = {}
        for name, contract in contracts.items():
            for entry in contract.abi:
                if entry["type"] != "event" or entry.get("anonymous", False):
                    continue
                inputs = entry["inputs"]
                data = tuple(_field(i) for i in inputs if not i["indexed"])
                spec = _EventSpec(name, contract.address, str(entry["name"]),
                                  tuple(_field(i) for i in inputs if i["indexed"]), data,
                                  tuple(str(i["name"]) for i in inputs), tuple(f.type for f in data))
                self._specs[(contract.address.lower(), event_abi_to_log_topic(entry))] = spec

    def decode(self, log: Mapping[str, Any]) -> EventRecord | None:
        """One raw JSON-RPC log (hex strings), or None if no ABI here has its event."""
        topics: Sequence[str] = log["topics"]
        if not topics:
            return None
        spec = self._specs.get((str(log["address"]).lower(), bytes.fromhex(topics[0][2:])))
        if spec is None:
            return None
        args: dict[str, Any] = {}
        for f, topic in zip(spec.indexed, topics[1:], strict=True):
            raw = bytes.fromhex(topic[2:])
            args[f.name] = raw if _hashed_in_topic(f.type) else _shape(f.abi, decode([f.type], raw)[0])
        values = decode(spec.data_types, bytes.fromhex(str(log["data"])[2:]))
        for f, value in zip(spec.data, values, strict=True):
            args[f.name] = _shape(f.abi, value)
        ordered = {name: args[name] for name in spec.order}
        return EventRecord(contract=spec.contract, event=spec.name, args=ordered,
                           address=to_checksum_address(spec.address), block_number=int(log["blockNumber"], 16),
                           block_hash=str(log["blockHash"]), tx_hash=str(log["transactionHash"]),
                           log_index=int(log["logIndex"], 16))

    def decode_all(self, logs: Sequence[Mapping[str, Any]]) -> list[EventRecord]:
        records = [r for r in (self.decode(entry) for entry in logs) if r is not None]
        return sorted(records, key=lambda r: r.position)
