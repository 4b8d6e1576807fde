// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hardware} from "../types/Types.sol";

// A validator's draw weight at full stake (`weightCap` or more bonded); a draw keeps a candidate when a
// uniform ticket in [0, DRAW_WEIGHT_SCALE) falls below its weight, so its odds are proportional to stake.
uint256 constant DRAW_WEIGHT_SCALE = 1e9;

/// @title Node registry: roles, hardware, stake, collateral locks, slashing, reputation.
/// @notice Stake leaves through unbond -> delay -> withdraw; slashing reaches unbonding stake.
interface INodeRegistry {
    /// @notice Thrown when a caller lacks the permission bit(s) `needed` for a protocol hook (see `wire`).
    error NotPermitted(address caller, uint8 needed);
    /// @notice Thrown when a constructor or `wire` parameter is out of range; `name` is the parameter.
    error InvalidParam(string name, uint256 value);
    /// @notice Thrown when joining the validator set with less than `minValidatorStake` bonded.
    error StakeBelowMinimum(address node, uint256 have, uint256 need);
    /// @notice Thrown when a jailed node joins the validator set, or unjails before `until`.
    error StillJailed(address node, uint64 until);
    /// @notice Thrown when unjailing a node that is not jailed.
    error NotJailed(address node);
    /// @notice Thrown when joining the validator set while in it.
    error AlreadyValidator(address node);
    /// @notice Thrown on a zero amount.
    error ZeroAmount();
    /// @notice Thrown when roles are 0 or contain unknown bits.
    error InvalidRoles(uint8 roles);
    /// @notice Thrown when registering twice.
    error AlreadyRegistered(address node);
    /// @notice Thrown when the node is not registered.
    error NotRegistered(address node);
    /// @notice Thrown when free stake (bonded - locked) is below what is asked.
    error InsufficientFreeStake(address node, uint256 free, uint256 wanted);
    /// @notice Thrown when withdrawing before the unbonding release time.
    error StillUnbonding(address node, uint64 release);
    /// @notice Thrown when there is nothing to withdraw.
    error NothingToWithdraw(address node);
    /// @notice Thrown when wiring is attempted twice or with an unsafe delay.
    error UnsafeUnbondingDelay(uint64 delay, uint64 required);
    /// @notice Thrown when the registry is already wired.
    error AlreadyWired();
    /// @notice Thrown when a replay class id would collide with a device-class set key (0..255).
    error InvalidReplayClass(bytes32 replayClass);
    /// @notice Thrown when `setReplayClass` would not change the node's class.
    error ReplayClassUnchanged(address node, bytes32 replayClass);

    /// @notice A node registered.
    event NodeRegistered(address indexed node, uint8 roles, Hardware hw);
    /// @notice A node declared new hardware or a new price (`updateHardware`).
    event HardwareUpdated(address indexed node, Hardware hw);
    /// @notice A node entered the validator set of its device class (role, not jailed, minimum bonded).
    event ValidatorSetJoined(address indexed node, uint8 deviceClass);
    /// @notice A validator's draw weight changed (its bonded stake moved); draws frozen before `atBlock` skip it.
    event ValidatorWeightChanged(address indexed node, uint256 weight, uint256 atBlock);
    /// @notice A validator left the validator set of its device class (left, unbonded or slashed under the
    /// minimum, or jailed).
    event ValidatorSetLeft(address indexed node, uint8 deviceClass);
    /// @notice A node's roles changed (`joinValidatorSet` / `leaveValidatorSet`).
    event RolesChanged(address indexed node, uint8 roles);
    /// @notice Stake added.
    event Staked(address indexed node, uint256 amount, uint256 bonded);
    /// @notice Stake queued for withdrawal.
    event Unbonded(address indexed node, uint256 amount, uint64 release);
    /// @notice Unbonded stake withdrawn.
    event Withdrawn(address indexed node, uint256 amount);
    /// @notice Collateral locked for a unit or bond.
    event Locked(address indexed node, uint256 amount, uint256 locked);
    /// @notice Collateral unlocked.
    event Unlocked(address indexed node, uint256 amount, uint256 locked);
    /// @notice Stake slashed and sent to `to`.
    event Slashed(address indexed node, uint256 amount, address indexed to);
    /// @notice A reputation counter changed.
    event ReputationUpdated(address indexed node, uint32 completed, uint32 missed, uint32 frauds);
    /// @notice A node was jailed after fraud, until `until` (a later fraud extends it).
    event Jailed(address indexed node, uint64 until);
    /// @notice A node left jail (`unjail` after its term).
    event Unjailed(address indexed node);
    /// @notice A node declared its replay class: `replayClass` = keccak256(bytes(description)), 0 = none.
    event ReplayClassSet(address indexed node, bytes32 indexed replayClass, string description);
    /// @notice A validator entered its replay class's validator set (it is in its device class's set).
    event ClassSetJoined(address indexed node, bytes32 indexed replayClass);
    /// @notice A validator left its replay class's validator set (it left its device set or changed class).
    event ClassSetLeft(address indexed node, bytes32 indexed replayClass);
    /// @notice A protocol contract was authorized with the permission bits `permissions`.
    event ProtocolAuthorized(address indexed protocol, uint8 permissions);

    /// @notice Register with a roles bitmask (SOLVER=1, VALIDATOR=2, CHALLENGER=4) and hardware.
    function register(uint8 roles, Hardware calldata hw) external;
    /// @notice Declare new hardware: device class, memory, throughput and the price asked per unit. Units
    /// already claimed keep the price they were claimed at. A validator that changes device class moves to the
    /// new class's set at once (entering it now, so draws frozen before this block never see it there).
    function updateHardware(Hardware calldata hw) external;
    /// @notice Declare the node's replay class, what decides `exact`-mode bits (device, driver, libraries):
    /// the class id is keccak256(bytes(description)); an empty description clears it. `exact` units are
    /// solved, validated and judged only within one class. A validator moves to the new class's set at once.
    function setReplayClass(string calldata description) external;
    /// @notice Take the VALIDATOR role and enter the set (needs `minValidatorStake` bonded, not jailed).
    function joinValidatorSet() external;
    /// @notice Drop the VALIDATOR role and leave the validator set (swap-and-pop; O(1)).
    function leaveValidatorSet() external;
    /// @notice Add `amount` tokens of stake (pulled from the caller).
    function stake(uint256 amount) external;
    /// @notice Queue `amount` of free stake for withdrawal after `unbondingDelay`.
    function unbond(uint256 amount) external;
    /// @notice Withdraw released unbonded stake.
    function withdraw() external;
    /// @notice Leave jail once `jailedUntil` has passed; a VALIDATOR with the minimum bonded re-enters the set.
    function unjail() external;

    /// @notice Lock `amount` of `node`'s free stake (PERM_STAKE_ANY or PERM_STAKE_OWN; the latter is tracked
    /// in `lockedBy`, and such a caller may later unlock or slash only that).
    function lock(address node, uint256 amount) external;
    /// @notice Lock `amount` of `node`'s stake if that much is free; returns whether it did (protocol only).
    function tryLock(address node, uint256 amount) external returns (bool);
    /// @notice Unlock up to `amount` of `node`'s locked stake (saturating; a PERM_STAKE_OWN caller only its own).
    function unlock(address node, uint256 amount) external;
    /// @notice `unlock` then `recordCompleted` in one call (a stake permission and PERM_COMPLETED; same events).
    function unlockCompleted(address node, uint256 amount) external;
    /// @notice Slash up to `amount` from `node` (bonded first, then unbonding) to `to`; returns what was taken.
    /// A PERM_STAKE_OWN caller takes at most what it holds locked on `node`, from bonded stake, releasing it.
    function slash(address node, uint256 amount, address to) external returns (uint256 taken);
    /// @notice Count a completed unit (PERM_COMPLETED).
    function recordCompleted(address node) external;
    /// @notice Count a missed deadline (PERM_MISSED).
    function recordMissed(address node) external;
    /// @notice Count a proven fraud and jail the node for `jailPeriod` from now (PERM_FRAUD).
    function recordFraud(address node) external;

    /// @notice Authorize each of `protocols` with its `permissions` bits, check the unbonding delay exceeds
    /// `longestExposure` and that `minValidatorStake` is at least `validatorBond` (owner, once).
    function wire(
        address[] calldata protocols,
        uint8[] calldata permissions,
        uint64 longestExposure,
        uint256 validatorBond
    ) external;

    /// @notice Stake token.
    function token() external view returns (address);
    /// @notice Unbonding delay in seconds.
    function unbondingDelay() external view returns (uint64);
    /// @notice Bonded + unbonding stake of all nodes (equals this contract's token balance).
    function totalStaked() external view returns (uint256);
    /// @notice Bonded stake a VALIDATOR needs to be in the validator set (at least one validator bond).
    function minValidatorStake() external view returns (uint256);
    /// @notice Seconds a proven fraud keeps a node jailed.
    function jailPeriod() external view returns (uint64);
    /// @notice Permission bits of a protocol contract (0 = none).
    function permissionsOf(address caller) external view returns (uint8);
    /// @notice Whether `caller` holds any permission.
    function isProtocol(address caller) external view returns (bool);
    /// @notice Stake of `node` locked by the PERM_STAKE_OWN caller `caller` and not yet released.
    function lockedBy(address caller, address node) external view returns (uint256);
    /// @notice Roles bitmask (0 when unregistered).
    function rolesOf(address node) external view returns (uint8);
    /// @notice Declared hardware.
    function hardwareOf(address node) external view returns (Hardware memory);
    /// @notice Bonded stake (includes locked).
    function bondedOf(address node) external view returns (uint256);
    /// @notice Bonded minus locked.
    function freeStakeOf(address node) external view returns (uint256);
    /// @notice Whether the node is jailed (until it calls `unjail` after `jailedUntil`).
    function isJailed(address node) external view returns (bool);
    /// @notice End of the node's jail term (0 = not jailed).
    function jailedUntil(address node) external view returns (uint64);
    /// @notice Whether the node is in its device class's validator set.
    function isValidator(address node) external view returns (bool);
    /// @notice Reputation counters.
    function reputationOf(address node) external view returns (uint32 completed, uint32 missed, uint32 frauds);
    /// @notice Roles, jail flag, hardware and reputation of a node in one call (all `TaskPool.claim` checks).
    function claimInfo(
        address node
    )
        external
        view
        returns (uint8 roles, bool jailed, Hardware memory hw, uint32 completed, uint32 missed, uint32 frauds);
    /// @notice Number of validators in `deviceClass`.
    function validatorCount(uint8 deviceClass) external view returns (uint256);
    /// @notice Validator at `index` of `deviceClass`.
    function validatorAt(uint8 deviceClass, uint256 index) external view returns (address);
    /// @notice Validator at `index` of `deviceClass`, the block it entered the set, the block its draw weight last
    /// changed and that weight (min(bonded, `weightCap`) scaled to `DRAW_WEIGHT_SCALE`), from one storage word.
    /// A draw frozen at block F seats only members with `since <= F` and `changedAt <= F`: joining, or adding
    /// stake, once the seed is known never buys a seat (the weight a draw reads is the one it was frozen with).
    function validatorEntry(
        uint8 deviceClass,
        uint256 index
    ) external view returns (address node, uint256 since, uint256 changedAt, uint256 weight);
    /// @notice Bonded stake at which a validator's draw weight stops growing: below it the odds of being drawn are
    /// proportional to stake, so splitting stake over many addresses gains nothing.
    function weightCap() external view returns (uint256);
    /// @notice The node's replay class (0 = none declared).
    function replayClassOf(address node) external view returns (bytes32);
    /// @notice The node's replay class and how many validators of that class there are besides the node.
    function classPeers(address node) external view returns (bytes32 replayClass, uint256 others);
    /// @notice Members of a validator set: `set` 0..255 is that device class's set, any other value the set
    /// of the replay class with that id.
    function validatorCountIn(bytes32 set) external view returns (uint256);
    /// @notice Member at `index` of a validator set (keyed as in `validatorCountIn`), as `validatorEntry` gives it.
    function validatorEntryIn(
        bytes32 set,
        uint256 index
    ) external view returns (address node, uint256 since, uint256 changedAt, uint256 weight);
    /// @notice Block `node` last entered its validator set (0 when not in it).
    function validatorSince(address node) external view returns (uint256);
}
