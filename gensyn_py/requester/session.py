"""A requester's handle on one deployment: its contracts, its account (optional), its content store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gensyn_py.chain.view import ChainView
from gensyn_py.errors import ConfigError
from gensyn_py.proof.content import JobContent
from gensyn_py.types import PoolParams

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount
    from eth_typing import ChecksumAddress

    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.chain.pool import TaskPool
    from gensyn_py.chain.token import GensynToken
    from gensyn_py.chain.tx import TxSender
    from gensyn_py.config import Settings
    from gensyn_py.storage.base import ContentStore


@dataclass
class Requester:
    """Reads need only the protocol and the store; transactions need an account."""

    protocol: ProtocolContracts
    store: ContentStore
    account: LocalAccount | None = None
    timeout: float = 30.0
    view: ChainView = field(init=False)
    content: JobContent = field(init=False)
    _sender: TxSender | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.view = ChainView(self.protocol)
        self.content = JobContent(self.view, self.store, self.timeout)
        if self.account is not None:
            self._sender = self.protocol.sender(self.account)

    @property
    def address(self) -> ChecksumAddress:
        return self.sender.address

    @property
    def sender(self) -> TxSender:
        if self._sender is None:
            raise ConfigError("this needs an account: pass --key or --keystore (or set GENSYN_KEY / GENSYN_KEYSTORE)")
        return self._sender

    @property
    def pool(self) -> TaskPool:
        return self.protocol.pool(self._sender)

    @property
    def token(self) -> GensynToken:
        return self.protocol.token(self._sender)

    def pool_params(self) -> PoolParams:
        """What the deployed pool will actually apply."""
        return self.pool.params()


def open_requester(
    settings: Settings,
    account: LocalAccount | None = None,
    store: str | ContentStore | None = None,
    deployments_dir: Path | None = None,
) -> Requester:
    """Connect to the settings' RPC node and deployment; open the content store (a spec string or a store)."""
    from gensyn_py.chain.client import connect
    from gensyn_py.chain.contracts import ProtocolContracts
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.storage.factory import open_store

    w3 = connect(settings.rpc_url, settings.chain_id)
    protocol = ProtocolContracts.load(w3, deployments_dir or settings.deployments_dir)
    opened = store if isinstance(store, ContentStore) else open_store(store or settings.store)
    return Requester(protocol, opened, account)
