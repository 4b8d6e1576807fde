"""`NodeRegistry`: roles, hardware, stake and reputation of nodes (`contracts/NodeRegistry.sol`).

Only what a node (or anyone) may call is here; the protocol-only hooks (`lock`, `slash`, `record*`)
are called by the other contracts, never from Python.
"""

from __future__ import annotations

from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract
from gensyn_py.types import Hardware, Reputation, Unbonding


class NodeRegistry(BoundContract):
    NAME = "NodeRegistry"

    # -- a node's own transactions -------------------------------------------------------------

    def register(self, roles: int, hardware: Hardware) -> TxReceipt:
        """Register with a roles bitmask (`ROLE_SOLVER | ROLE_VALIDATOR | ...`) and the declared hardware."""
        return self.transact("register", roles, hardware.to_abi())

    def stake(self, amount: int) -> TxReceipt:
        """Add stake, pulled from the caller (approve the registry first)."""
        return self.transact("stake", amount)

    def unbond(self, amount: int) -> TxReceipt:
        return self.transact("unbond", amount)

    def withdraw(self) -> TxReceipt:
        return self.transact("withdraw")

    def leave_validator_set(self) -> TxReceipt:
        return self.transact("leaveValidatorSet")

    # -- views ---------------------------------------------------------------------------------

    def roles_of(self, node: str, *, block: Block = "latest") -> int:
        """The roles bitmask; 0 when `node` is not registered."""
        return int(self.call("rolesOf", node, block=block))

    def hardware_of(self, node: str, *, block: Block = "latest") -> Hardware:
        return Hardware.from_abi(self.call("hardwareOf", node, block=block))

    def bonded_of(self, node: str, *, block: Block = "latest") -> int:
        """Bonded stake, locked collateral included."""
        return int(self.call("bondedOf", node, block=block))

    def free_stake_of(self, node: str, *, block: Block = "latest") -> int:
        return int(self.call("freeStakeOf", node, block=block))

    def locked_of(self, node: str, *, block: Block = "latest") -> int:
        return int(self.call("lockedOf", node, block=block))

    def unbonding_of(self, node: str, *, block: Block = "latest") -> Unbonding:
        return Unbonding.from_abi(self.call("unbondingOf", node, block=block))

    def is_jailed(self, node: str, *, block: Block = "latest") -> bool:
        return bool(self.call("isJailed", node, block=block))

    def reputation_of(self, node: str, *, block: Block = "latest") -> Reputation:
        return Reputation.from_abi(self.call("reputationOf", node, block=block))

    def total_staked(self, *, block: Block = "latest") -> int:
        """Bonded plus unbonding stake of every node: the registry's token balance."""
        return int(self.call("totalStaked", block=block))

    def validator_count(self, device_class: int, *, block: Block = "latest") -> int:
        return int(self.call("validatorCount", device_class, block=block))

    def validator_at(self, device_class: int, index: int, *, block: Block = "latest") -> str:
        return str(self.call("validatorAt", device_class, index, block=block))

    def unbonding_delay(self, *, block: Block = "latest") -> int:
        return int(self.call("unbondingDelay", block=block))
