"""Shared fixtures: a real anvil node, the real compiled contracts, funded accounts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode
from gensyn_py.devnet.compiler import compile_contracts


@pytest.fixture(scope="session")
def anvil_node() -> Iterator[AnvilNode]:
    with AnvilNode() as node:
        yield node


@pytest.fixture(scope="session")
def anvil_url(anvil_node: AnvilNode) -> str:
    return anvil_node.url


@pytest.fixture(scope="session")
def w3(anvil_url: str) -> Web3:
    web3 = Web3(Web3.HTTPProvider(anvil_url, request_kwargs={"timeout": 30}))
    assert web3.is_connected()
    return web3


@pytest.fixture(scope="session")
def accounts() -> list[LocalAccount]:
    return [Account.from_key(k) for k in DEV_KEYS]


@pytest.fixture(scope="session")
def artifacts() -> dict[str, dict[str, Any]]:
    return compile_contracts()


@pytest.fixture
def snapshot(w3: Web3) -> Iterator[None]:
    """Each test starts from the chain state before it and leaves nothing behind."""
    snap = w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    yield
    w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]
