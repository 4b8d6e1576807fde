"""The deployed protocol: addresses from `deployments/<chainId>.json`, ABIs shipped in `chain/abi/`.

`ProtocolContracts` is the one place that knows where each contract lives. It
builds a single `ErrorDecoder` over every ABI it holds and every custom error
the sources declare, so a revert raised deep inside a callee is still named.
`token()`, `registry()`, `pool()` and `committee()` hand out the typed
wrappers (`chain/token.py` ...), bound read-only or to a sender.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from eth_account.signers.local import LocalAccount
from eth_typing import ChecksumAddress
from eth_utils import is_address, to_checksum_address
from web3 import Web3
from web3.contract import Contract

from gensyn_py.chain.abi import ERRORS, load_abi, protocol_abis
from gensyn_py.chain.bound import BoundContract
from gensyn_py.chain.committee import DisputeCommittee
from gensyn_py.chain.events import Cursor, EventReader
from gensyn_py.chain.pool import TaskPool
from gensyn_py.chain.registry import NodeRegistry
from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.chain.segment_game import SegmentGame
from gensyn_py.chain.step_game import StepGame
from gensyn_py.chain.token import GensynToken
from gensyn_py.chain.tx import TxSender
from gensyn_py.errors import ConfigError

W = TypeVar("W", bound=BoundContract)


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


class ProtocolContracts:
    """Every deployed protocol contract on one chain, by name."""

    def __init__(
        self,
        w3: Web3,
        deployment: Mapping[str, Any],
        abis: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    ) -> None:
        """`deployment` as `deploy_protocol` returns it; `abis` default to the shipped ones."""
        self.w3 = w3
        self.deployment = dict(deployment)
        self.chain_id = int(self.deployment["chainId"])
        self.abis = dict(protocol_abis() if abis is None else abis)
        self.decoder = ErrorDecoder([*self.abis.values(), load_abi(ERRORS)])
        self._contracts: dict[str, Contract] = {}
        for name, address in dict(self.deployment["contracts"]).items():
            abi = self.abis.get(name)
            if abi is None:
                raise ConfigError(f"{name} is deployed at {address} but no ABI has that name")
            self._contracts[name] = w3.eth.contract(address=to_checksum_address(address), abi=abi)

    @classmethod
    def load(
        cls,
        w3: Web3,
        deployments_dir: Path = Path("deployments"),
        abis: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    ) -> ProtocolContracts:
        """Read `deployments_dir/<chainId>.json` for the node's chain; the ABIs are the shipped ones unless given."""
        chain_id = int(w3.eth.chain_id)
        path = deployment_path(deployments_dir, chain_id)
        raw = read_deployment(path)
        if raw["chainId"] != chain_id:
            raise ConfigError(f"{path} says chainId {raw['chainId']} but the node is on chain {chain_id}")
        return cls(w3, raw, abis)

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
        """A contract with no typed wrapper (a test fixture), by its deployment name."""
        return BoundContract(name, self[name], sender, self.decoder)

    def typed(self, wrapper: type[W], sender: TxSender | None = None) -> W:
        return wrapper(wrapper.NAME, self[wrapper.NAME], sender, self.decoder)

    def token(self, sender: TxSender | None = None) -> GensynToken:
        return self.typed(GensynToken, sender)

    def registry(self, sender: TxSender | None = None) -> NodeRegistry:
        return self.typed(NodeRegistry, sender)

    def pool(self, sender: TxSender | None = None) -> TaskPool:
        return self.typed(TaskPool, sender)

    def committee(self, sender: TxSender | None = None) -> DisputeCommittee:
        return self.typed(DisputeCommittee, sender)

    def segment_game(self, sender: TxSender | None = None) -> SegmentGame:
        return self.typed(SegmentGame, sender)

    def step_game(self, sender: TxSender | None = None) -> StepGame:
        return self.typed(StepGame, sender)

    def sender(self, account: LocalAccount, **kwargs: Any) -> TxSender:
        """A `TxSender` for `account` that decodes every protocol error."""
        return TxSender(self.w3, account, self.decoder, **kwargs)

    def event_reader(
        self, cursor: Cursor | None = None, names: list[str] | None = None, **kwargs: Any
    ) -> EventReader:
        """An `EventReader` over the named contracts (default: all)."""
        chosen = {n: self[n] for n in (names or self.names)}
        return EventReader(self.w3, chosen, cursor, **kwargs)
