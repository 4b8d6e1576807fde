// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hardware} from "../types/Types.sol";

/// @title Node registry: roles, hardware, stake, collateral locks, slashing, reputation.
/// @notice Stake leaves through unbond -> delay -> withdraw; slashing reaches unbonding stake.
interface INodeRegistry {
    /// @notice Thrown when a caller that is not an authorized protocol contract calls a protocol hook.
    error NotProtocol(address caller);
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

    /// @notice A node registered.
    event NodeRegistered(address indexed node, uint8 roles, Hardware hw);
    /// @notice A validator left the validator set of its device class.
    event ValidatorSetLeft(address indexed node, uint8 deviceClass);
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
    /// @notice A node was jailed after fraud.
    event Jailed(address indexed node);
    /// @notice A protocol contract was authorized.
    event ProtocolAuthorized(address indexed protocol);

    /// @notice Register with a roles bitmask (SOLVER=1, VALIDATOR=2, CHALLENGER=4) and hardware.
    function register(uint8 roles, Hardware calldata hw) external;
    /// @notice Leave the validator set (swap-and-pop; O(1)).
    function leaveValidatorSet() external;
    /// @notice Add `amount` tokens of stake (pulled from the caller).
    function stake(uint256 amount) external;
    /// @notice Queue `amount` of free stake for withdrawal after `unbondingDelay`.
    function unbond(uint256 amount) external;
    /// @notice Withdraw released unbonded stake.
    function withdraw() external;

    /// @notice Lock `amount` of `node`'s free stake (protocol only).
    function lock(address node, uint256 amount) external;
    /// @notice Lock `amount` of `node`'s stake if that much is free; returns whether it did (protocol only).
    function tryLock(address node, uint256 amount) external returns (bool);
    /// @notice Unlock up to `amount` of `node`'s locked stake (protocol only; saturating).
    function unlock(address node, uint256 amount) external;
    /// @notice `unlock` then `recordCompleted` in one call (protocol only; same events).
    function unlockCompleted(address node, uint256 amount) external;
    /// @notice Slash up to `amount` from `node` (bonded first, then unbonding) to `to`; returns what was taken.
    function slash(address node, uint256 amount, address to) external returns (uint256 taken);
    /// @notice Count a completed unit (protocol only).
    function recordCompleted(address node) external;
    /// @notice Count a missed deadline (protocol only).
    function recordMissed(address node) external;
    /// @notice Count a proven fraud and jail the node (protocol only).
    function recordFraud(address node) external;

    /// @notice Authorize protocol contracts and check the unbonding delay exceeds `longestExposure` (owner, once).
    function wire(address[] calldata protocols, uint64 longestExposure) external;

    /// @notice Stake token.
    function token() external view returns (address);
    /// @notice Unbonding delay in seconds.
    function unbondingDelay() external view returns (uint64);
    /// @notice Bonded + unbonding stake of all nodes (equals this contract's token balance).
    function totalStaked() external view returns (uint256);
    /// @notice Roles bitmask (0 when unregistered).
    function rolesOf(address node) external view returns (uint8);
    /// @notice Declared hardware.
    function hardwareOf(address node) external view returns (Hardware memory);
    /// @notice Bonded stake (includes locked).
    function bondedOf(address node) external view returns (uint256);
    /// @notice Bonded minus locked.
    function freeStakeOf(address node) external view returns (uint256);
    /// @notice Whether the node is jailed.
    function isJailed(address node) external view returns (bool);
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
}
