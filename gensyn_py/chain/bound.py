"""`BoundContract`: one deployed contract, the account that sends to it, and the protocol's error decoder.

The typed wrappers (`token.py`, `registry.py`, `pool.py`, `committee.py`) extend it with one method per
contract function; they are the only callers of `call` and `transact`, the two places that name a
function by string. Reads and sends go the same way for every contract: a view reverting raises
`ContractRevert`, and a transaction is a static call first, then send, then a receipt check
(`TxSender.send`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from eth_typing import ChecksumAddress
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.logs import DISCARD
from web3.types import BlockIdentifier, TxReceipt

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.chain.tx import TxSender, call_view
from gensyn_py.errors import ChainError

Block = BlockIdentifier


class BoundContract:
    """A contract with its name, its sender (None for read-only) and the protocol's error decoder."""

    NAME: ClassVar[str] = ""  # the deployment's name for the contract a typed wrapper wraps

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

    def call(self, fn_name: str, *args: Any, block: Block = "latest") -> Any:
        """Read a view; reverts raise `ContractRevert`."""
        fn = self.fn(fn_name, *args)
        if self.sender is not None:
            return self.sender.call(fn, block)
        return call_view(fn, self.decoder, None, block)

    def transact(self, fn_name: str, *args: Any, value: int = 0, gas: int | None = None,
                 headroom: int = 0) -> TxReceipt:
        """Static call, send, wait, check; reverts raise `ContractRevert`. `headroom`: gas added to the estimate
        (see `TxSender.transact`)."""
        if self.sender is None:
            raise ChainError(f"{self.name} is bound read-only: no account to send {fn_name}() from")
        return self.sender.send(self.fn(fn_name, *args), value=value, gas=gas, headroom=headroom)

    def events(self, receipt: TxReceipt, event_name: str) -> list[dict[str, Any]]:
        """The args of every `event_name` this contract emitted in `receipt`."""
        event = self.contract.events[event_name]()
        return [
            dict(e["args"]) for e in event.process_receipt(receipt, errors=DISCARD)
            if e["address"] == self.address
        ]
