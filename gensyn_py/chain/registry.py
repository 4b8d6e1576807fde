"""`NodeRegistry`: roles, hardware, stake, reputation, jail and validator sets (`contracts/NodeRegistry.sol`).

Only what a node (or anyone) may call is here; the protocol-only hooks (`lock`, `slash`, `record*`)
are called by the other contracts, each with the permission bits `wire` granted it, never from Python.

A node is in its device class's validator set exactly when it holds the VALIDATOR role, is not jailed
and has at least `minValidatorStake` bonded (unbonding stake does not count); staking, unbonding,
slashing, jailing and `unjail` keep the set in step.
"""

from __future__ import annotations

from web3.types import TxReceipt

from gensyn_py.chain.bound import Block, BoundContract
from gensyn_py.chain.draw import ValidatorEntry
from gensyn_py.types import ClaimInfo, Hardware, Reputation, Standing, Unbonding


class NodeRegistry(BoundContract):
    NAME = "NodeRegistry"

    # -- a node's own transactions -------------------------------------------------------------

    def register(self, roles: int, hardware: Hardware) -> TxReceipt:
        """Register with a roles bitmask (`ROLE_SOLVER | ROLE_VALIDATOR | ...`) and the declared hardware."""
        return self.transact("register", roles, hardware.to_abi())

    def update_hardware(self, hardware: Hardware) -> TxReceipt:
        """Declare new hardware or a new price (claimed units keep theirs); a validator changing device class
        moves to that class's set. Reverts `NotRegistered` for an unregistered caller."""
        return self.transact("updateHardware", hardware.to_abi())

    def set_replay_class(self, description: str) -> TxReceipt:
        """Declare the replay class (`gensyn_py.node.replay_class`): its id is keccak256 of `description`, which
        the `ReplayClassSet` event carries; "" clears it. Reverts `ReplayClassUnchanged` when it is the same."""
        return self.transact("setReplayClass", description)

    def stake(self, amount: int) -> TxReceipt:
        """Add stake, pulled from the caller (approve the registry first)."""
        return self.transact("stake", amount)

    def unbond(self, amount: int) -> TxReceipt:
        return self.transact("unbond", amount)

    def withdraw(self) -> TxReceipt:
        return self.transact("withdraw")

    def leave_validator_set(self) -> TxReceipt:
        """Drop the VALIDATOR role and leave the set."""
        return self.transact("leaveValidatorSet")

    def join_validator_set(self) -> TxReceipt:
        """Take the VALIDATOR role and enter the set; reverts `StakeBelowMinimum(node, have, need)` with less
        than `minValidatorStake` bonded, `StillJailed` while jailed."""
        return self.transact("joinValidatorSet")

    def unjail(self) -> TxReceipt:
        """Leave jail after `jailedUntil`; a VALIDATOR with the minimum bonded re-enters the set."""
        return self.transact("unjail")

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
        """Jailed until it calls `unjail()` after `jailed_until` (fraud jails for `jailPeriod`)."""
        return bool(self.call("isJailed", node, block=block))

    def jailed_until(self, node: str, *, block: Block = "latest") -> int:
        """End of the jail term (chain seconds); 0 when not jailed."""
        return int(self.call("jailedUntil", node, block=block))

    def is_validator(self, node: str, *, block: Block = "latest") -> bool:
        """In its device class's validator set (so it can be drawn)."""
        return bool(self.call("isValidator", node, block=block))

    def standing(self, node: str, *, block: Block = "latest") -> Standing:
        """Jail term, validator-set membership and bonded stake against the minimum (each read at `block`)."""
        return Standing(
            jailed_until=self.jailed_until(node, block=block),
            in_validator_set=self.is_validator(node, block=block),
            bonded=self.bonded_of(node, block=block),
            min_validator_stake=self.min_validator_stake(block=block),
        )

    def claim_info(self, node: str, *, block: Block = "latest") -> ClaimInfo:
        """Roles, jail, hardware and reputation in one call: what `claim` checks and scores a solver on."""
        roles, jailed, hw, completed, missed, frauds = self.call("claimInfo", node, block=block)
        return ClaimInfo(int(roles), bool(jailed), Hardware.from_abi(hw),
                         Reputation(int(completed), int(missed), int(frauds)))

    def reputation_of(self, node: str, *, block: Block = "latest") -> Reputation:
        return Reputation.from_abi(self.call("reputationOf", node, block=block))

    def total_staked(self, *, block: Block = "latest") -> int:
        """Bonded plus unbonding stake of every node: the registry's token balance."""
        return int(self.call("totalStaked", block=block))

    def validator_count(self, device_class: int, *, block: Block = "latest") -> int:
        return int(self.call("validatorCount", device_class, block=block))

    def validator_at(self, device_class: int, index: int, *, block: Block = "latest") -> str:
        return str(self.call("validatorAt", device_class, index, block=block))

    def replay_class_of(self, node: str, *, block: Block = "latest") -> bytes:
        """The node's declared replay class id (32 zero bytes: none)."""
        return bytes(self.call("replayClassOf", node, block=block))

    def class_peers(self, node: str, *, block: Block = "latest") -> tuple[bytes, int]:
        """(replay class, validators of that class other than `node`): an exact claim needs both non-zero."""
        cls, others = self.call("classPeers", node, block=block)
        return bytes(cls), int(others)

    def validator_count_in(self, candidate_set: bytes, *, block: Block = "latest") -> int:
        """Members of a validator set: a device class's (`device_set_key`) or a replay class's (its id)."""
        return int(self.call("validatorCountIn", candidate_set, block=block))

    def validator_entry_in(self, candidate_set: bytes, index: int, *, block: Block = "latest") -> ValidatorEntry:
        """Member `index` of a validator set keyed as in `validator_count_in`, as `validator_entry` gives it."""
        node, since, changed_at, weight = self.call("validatorEntryIn", candidate_set, index, block=block)
        return ValidatorEntry(str(node), int(since), int(changed_at), int(weight))

    def validator_since(self, node: str, *, block: Block = "latest") -> int:
        """Block `node` last entered its validator set; 0 when not in it."""
        return int(self.call("validatorSince", node, block=block))

    def validator_entry(self, device_class: int, index: int, *, block: Block = "latest") -> ValidatorEntry:
        """Member `index` of the set: who, the block it entered, the block its draw weight last changed, and that
        weight. A draw frozen at block F skips members whose entry or weight change is after F."""
        node, since, changed_at, weight = self.call("validatorEntry", device_class, index, block=block)
        return ValidatorEntry(str(node), int(since), int(changed_at), int(weight))

    def validator_entries(self, device_class: int, *, block: Block = "latest") -> list[ValidatorEntry]:
        """The whole validator set of `device_class`, in registry order (the draws index it)."""
        return [self.validator_entry(device_class, i, block=block)
                for i in range(self.validator_count(device_class, block=block))]

    def weight_cap(self, *, block: Block = "latest") -> int:
        """Bonded stake at which a validator's draw weight stops growing."""
        return int(self.call("weightCap", block=block))

    def unbonding_delay(self, *, block: Block = "latest") -> int:
        return int(self.call("unbondingDelay", block=block))

    def min_validator_stake(self, *, block: Block = "latest") -> int:
        """Bonded stake a validator needs to be in the set (at least one validator bond)."""
        return int(self.call("minValidatorStake", block=block))

    def jail_period(self, *, block: Block = "latest") -> int:
        """Seconds a proven fraud jails a node."""
        return int(self.call("jailPeriod", block=block))

    def permissions_of(self, contract: str, *, block: Block = "latest") -> int:
        """The `PERM_*` bits (gensyn_py.types) `contract` holds on the registry; 0 for anyone else."""
        return int(self.call("permissionsOf", contract, block=block))
