"""`GensynToken`: the protocol's ERC-20 (`contracts/GensynToken.sol`), a faucet token on local chains."""

from __future__ import annotations

from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract


class GensynToken(BoundContract):
    NAME = "GensynToken"

    def balance_of(self, account: str, *, block: Block = "latest") -> int:
        return int(self.call("balanceOf", account, block=block))

    def allowance(self, owner: str, spender: str, *, block: Block = "latest") -> int:
        return int(self.call("allowance", owner, spender, block=block))

    def total_supply(self, *, block: Block = "latest") -> int:
        return int(self.call("totalSupply", block=block))

    def approve(self, spender: str, amount: int) -> TxReceipt:
        return self.transact("approve", spender, amount)

    def transfer(self, to: str, amount: int) -> TxReceipt:
        return self.transact("transfer", to, amount)

    def mint(self, to: str, amount: int) -> TxReceipt:
        """Owner only (the deployer): the local faucet."""
        return self.transact("mint", to, amount)
