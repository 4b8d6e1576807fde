"""The deployed protocol: addresses from `deployments/<chainId>.json`, ABIs from the artifacts.

`ProtocolContracts` is the one place that knows where each contract lives.
It builds a single `ErrorDecoder` over every compiled ABI, so a revert raised
deep inside a callee is still named. `BoundContract` is the thin base that
per-contract classes (registry, pool, committee) extend with typed methods.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount
from eth_typing import ChecksumAddress
from eth_utils import is_address, to_checksum_address
from web3 import Web3
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.logs import DISCARD
from web3.types import BlockIdentifier, TxReceipt

from gensyn_py.chain.events import Cursor, EventReader
from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.chain.tx import TxSender, call_view
from gensyn_py.errors import ChainError, ConfigError


def deployment_path(deployments_dir: Path, chain_id: int) -> Path:
    return deployments_dir / f"{chain_id}.json"


def read_deployment(path: Path) -> dict[str, Any]:
    """Parse and check a deployment file: {"chainId": int, "contracts": {name: address}, ...}."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no deployment file {path}: deploy the contracts first") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"deployment file {path} is unreadable: {exc}") from None
    contracts = raw.get("contracts") if isinstance(raw, dict) else None
    if not isinstance(contracts, dict) or not isinstance(raw.get("chainId"), int):
        raise ConfigError(f"deployment file {path} needs an integer chainId and a contracts object")
    for name, address in contracts.items():
        if not isinstance(address, str) or not is_address(address):
            raise ConfigError(f"deployment file {path}: {name} has no valid address ({address!r})")
    return raw


class BoundContract:
    """A contract with its name, its sender (None for read-only) and the protocol's error decoder."""

    def __init__(
        self,
        name: str,
        contract: Contract,
        sender: TxSender | None = None,
        decoder: ErrorDecoder | None = None,
    ) -> None:
        self.name = name
        self.contract = contract
        self.sender = sender
        self.decoder = decoder or (sender.decoder if sender else ErrorDecoder([contract.abi]))

    @property
    def address(self) -> ChecksumAddress:
        return self.contract.address

    def fn(self, fn_name: str, *args: Any) -> ContractFunction:
        return self.contract.functions[fn_name](*args)

    def call(self, fn_name: str, *args: Any, block: BlockIdentifier = "latest") -> Any:
        """Read a view; reverts raise `ContractRevert`."""
        fn = self.fn(fn_name, *args)
        if self.sender is not None:
            return self.sender.call(fn, block)
        return call_view(fn, self.decoder, None, block)

    def transact(self, fn_name: str, *args: Any, value: int = 0, gas: int | None = None) -> TxReceipt:
        """Static call, send, wait, check; reverts raise `ContractRevert`."""
        if self.sender is None:
            raise ChainError(f"{self.name} is bound read-only: no account to send {fn_name}() from")
        return self.sender.send(self.fn(fn_name, *args), value=value, gas=gas)

    def events(self, receipt: TxReceipt, event_name: str) -> list[dict[str, Any]]:
        """The args of every `event_name` this contract emitted in `receipt`."""
        event = self.contract.events[event_name]()
        return [
            dict(e["args"]) for e in event.process_receipt(receipt, errors=DISCARD)
            if e["address"] == self.address
        ]


class ProtocolContracts:
    """Every deployed protocol contract on one chain, by name."""

    def __init__(
        self,
        w3: Web3,
        addresses: Mapping[str, str],
        artifacts: Mapping[str, Mapping[str, Any]],
        chain_id: int,
        deployment: Mapping[str, Any] | None = None,
    ) -> None:
        self.w3 = w3
        self.chain_id = chain_id
        self.deployment = dict(deployment or {})
        self.artifacts = dict(artifacts)
        self.decoder = ErrorDecoder(a["abi"] for a in self.artifacts.values())
        self._contracts: dict[str, Contract] = {}
        for name, address in addresses.items():
            artifact = self.artifacts.get(name)
            if artifact is None:
                raise ConfigError(f"{name} is deployed at {address} but no compiled artifact has that name")
            self._contracts[name] = w3.eth.contract(address=to_checksum_address(address), abi=artifact["abi"])

    @classmethod
    def load(
        cls,
        w3: Web3,
        deployments_dir: Path = Path("deployments"),
        artifacts: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> ProtocolContracts:
        """Read `deployments_dir/<chainId>.json` for the node's chain; compile if no artifacts are given."""
        chain_id = int(w3.eth.chain_id)
        path = deployment_path(deployments_dir, chain_id)
        raw = read_deployment(path)
        if raw["chainId"] != chain_id:
            raise ConfigError(f"{path} says chainId {raw['chainId']} but the node is on chain {chain_id}")
        if artifacts is None:
            from gensyn_py.devnet.compiler import compile_contracts

            artifacts = compile_contracts()
        return cls(w3, raw["contracts"], artifacts, chain_id, raw)

    @property
    def names(self) -> list[str]:
        return sorted(self._contracts)

    @property
    def addresses(self) -> dict[str, ChecksumAddress]:
        return {name: c.address for name, c in self._contracts.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._contracts

    def __getitem__(self, name: str) -> Contract:
        try:
            return self._contracts[name]
        except KeyError:
            have = ", ".join(self.names)
            raise ConfigError(f"no deployed contract named {name!r} (have: {have})") from None

    def bind(self, name: str, sender: TxSender | None = None) -> BoundContract:
        return BoundContract(name, self[name], sender, self.decoder)

    def sender(self, account: LocalAccount, **kwargs: Any) -> TxSender:
        """A `TxSender` for `account` that decodes every protocol error."""
        return TxSender(self.w3, account, self.decoder, **kwargs)

    def event_reader(
        self, cursor: Cursor | None = None, names: list[str] | None = None, **kwargs: Any
    ) -> EventReader:
        """An `EventReader` over the named contracts (default: all)."""
        chosen = {n: self[n] for n in (names or self.names)}
        return EventReader(self.w3, chosen, cursor, **kwargs)
