// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {INodeRegistry} from "./interfaces/INodeRegistry.sol";
import {Hardware} from "./types/Types.sol";

/// @title NodeRegistry: staking, collateral, slashing and reputation of nodes.
contract NodeRegistry is INodeRegistry, Ownable, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    uint8 public constant SOLVER = 1;
    uint8 public constant VALIDATOR = 2;
    uint8 public constant CHALLENGER = 4;

    struct Node {
        uint8 roles;
        bool registered;
        bool jailed;
        uint32 completed;
        uint32 missed;
        uint32 frauds;
        uint32 validatorSlot; // index + 1 in validatorsByClass; 0 = not in the set
        uint64 unbondRelease;
        Hardware hw;
        uint128 bonded; // bonded and locked share a slot: lock/unlock/free-stake reads touch one slot
        uint128 locked;
        uint256 unbonding;
    }

    IERC20 private immutable _token;
    /// @inheritdoc INodeRegistry
    uint64 public immutable unbondingDelay;
    /// @inheritdoc INodeRegistry
    uint256 public totalStaked;
    bool public wired;
    mapping(address => bool) public isProtocol;
    mapping(address => Node) private _nodes;
    mapping(uint8 => address[]) private _validators;

    modifier onlyProtocol() {
        if (!isProtocol[msg.sender]) revert NotProtocol(msg.sender);
        _;
    }

    constructor(address token_, uint64 unbondingDelay_, address owner_) Ownable(owner_) {
        _token = IERC20(token_);
        unbondingDelay = unbondingDelay_;
    }

    /// @inheritdoc INodeRegistry
    function wire(address[] calldata protocols, uint64 longestExposure) external onlyOwner {
        if (wired) revert AlreadyWired();
        // INVARIANT: stake cannot leave before every challenge/dispute that could slash it has closed.
        if (unbondingDelay <= longestExposure) revert UnsafeUnbondingDelay(unbondingDelay, longestExposure + 1);
        wired = true;
        for (uint256 i; i < protocols.length; ++i) {
            isProtocol[protocols[i]] = true;
            emit ProtocolAuthorized(protocols[i]);
        }
    }

    /// @inheritdoc INodeRegistry
    function register(uint8 roles, Hardware calldata hw) external {
        if (roles == 0 || roles > 7) revert InvalidRoles(roles);
        Node storage n = _nodes[msg.sender];
        if (n.registered) revert AlreadyRegistered(msg.sender);
        n.registered = true;
        n.roles = roles;
        n.hw = hw;
        if (roles & VALIDATOR != 0) {
            _validators[hw.deviceClass].push(msg.sender);
            n.validatorSlot = uint32(_validators[hw.deviceClass].length);
        }
        emit NodeRegistered(msg.sender, roles, hw);
    }

    /// @inheritdoc INodeRegistry
    function leaveValidatorSet() external {
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        if (n.validatorSlot == 0) revert InvalidRoles(n.roles);
        n.roles &= ~VALIDATOR;
        _removeValidator(msg.sender, n);
    }

    /// @inheritdoc INodeRegistry
    function stake(uint256 amount) external nonReentrant {
        if (amount == 0) revert ZeroAmount();
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        n.bonded = SafeCast.toUint128(uint256(n.bonded) + amount);
        totalStaked += amount;
        _token.safeTransferFrom(msg.sender, address(this), amount);
        emit Staked(msg.sender, amount, n.bonded);
    }

    /// @inheritdoc INodeRegistry
    function unbond(uint256 amount) external {
        if (amount == 0) revert ZeroAmount();
        Node storage n = _nodes[msg.sender];
        uint256 free = n.bonded - n.locked;
        // INVARIANT: locked collateral and bonds never leave through unbonding.
        if (free < amount) revert InsufficientFreeStake(msg.sender, free, amount);
        n.bonded -= uint128(amount); // amount <= free <= bonded
        n.unbonding += amount;
        n.unbondRelease = uint64(block.timestamp) + unbondingDelay;
        emit Unbonded(msg.sender, amount, n.unbondRelease);
    }

    /// @inheritdoc INodeRegistry
    function withdraw() external nonReentrant {
        Node storage n = _nodes[msg.sender];
        uint256 amount = n.unbonding;
        if (amount == 0) revert NothingToWithdraw(msg.sender);
        // INVARIANT: the slashing window (unbondingDelay) has passed.
        if (block.timestamp < n.unbondRelease) revert StillUnbonding(msg.sender, n.unbondRelease);
        n.unbonding = 0;
        totalStaked -= amount;
        _token.safeTransfer(msg.sender, amount);
        emit Withdrawn(msg.sender, amount);
    }

    /// @inheritdoc INodeRegistry
    function lock(address node, uint256 amount) external onlyProtocol {
        Node storage n = _nodes[node];
        uint256 free = n.bonded - n.locked;
        // INVARIANT: a lock is always backed by bonded stake.
        if (free < amount) revert InsufficientFreeStake(node, free, amount);
        _lock(node, n, amount);
    }

    /// @inheritdoc INodeRegistry
    function tryLock(address node, uint256 amount) external onlyProtocol returns (bool) {
        Node storage n = _nodes[node];
        if (n.bonded - n.locked < amount) return false;
        _lock(node, n, amount);
        return true;
    }

    /// @inheritdoc INodeRegistry
    function unlockCompleted(address node, uint256 amount) external onlyProtocol {
        Node storage n = _nodes[node];
        _unlock(node, n, amount);
        ++n.completed;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function claimInfo(
        address node
    )
        external
        view
        returns (uint8 roles, bool jailed, Hardware memory hw, uint32 completed, uint32 missed, uint32 frauds)
    {
        Node storage n = _nodes[node];
        return (n.roles, n.jailed, n.hw, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function unlock(address node, uint256 amount) external onlyProtocol {
        _unlock(node, _nodes[node], amount);
    }

    /// @inheritdoc INodeRegistry
    function slash(
        address node,
        uint256 amount,
        address to
    ) external onlyProtocol nonReentrant returns (uint256 taken) {
        Node storage n = _nodes[node];
        uint256 fromBonded = amount < n.bonded ? amount : n.bonded;
        n.bonded -= uint128(fromBonded);
        if (n.locked > n.bonded) n.locked = n.bonded;
        uint256 rest = amount - fromBonded;
        uint256 fromUnbonding = rest < n.unbonding ? rest : n.unbonding;
        n.unbonding -= fromUnbonding;
        taken = fromBonded + fromUnbonding;
        if (taken == 0) return 0;
        totalStaked -= taken;
        _token.safeTransfer(to, taken);
        emit Slashed(node, taken, to);
    }

    /// @inheritdoc INodeRegistry
    function recordCompleted(address node) external onlyProtocol {
        Node storage n = _nodes[node];
        ++n.completed;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function recordMissed(address node) external onlyProtocol {
        Node storage n = _nodes[node];
        ++n.missed;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function recordFraud(address node) external onlyProtocol {
        Node storage n = _nodes[node];
        ++n.frauds;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
        if (!n.jailed) {
            n.jailed = true;
            if (n.validatorSlot != 0) _removeValidator(node, n);
            emit Jailed(node);
        }
    }

    /// @inheritdoc INodeRegistry
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc INodeRegistry
    function rolesOf(address node) external view returns (uint8) {
        return _nodes[node].roles;
    }

    /// @inheritdoc INodeRegistry
    function hardwareOf(address node) external view returns (Hardware memory) {
        return _nodes[node].hw;
    }

    /// @inheritdoc INodeRegistry
    function bondedOf(address node) external view returns (uint256) {
        return _nodes[node].bonded;
    }

    /// @inheritdoc INodeRegistry
    function freeStakeOf(address node) external view returns (uint256) {
        return _nodes[node].bonded - _nodes[node].locked;
    }

    /// @notice Stake locked as collateral or bonds.
    function lockedOf(address node) external view returns (uint256) {
        return _nodes[node].locked;
    }

    /// @notice Stake queued for withdrawal and its release time.
    function unbondingOf(address node) external view returns (uint256 amount, uint64 release) {
        return (_nodes[node].unbonding, _nodes[node].unbondRelease);
    }

    /// @inheritdoc INodeRegistry
    function isJailed(address node) external view returns (bool) {
        return _nodes[node].jailed;
    }

    /// @inheritdoc INodeRegistry
    function reputationOf(address node) external view returns (uint32, uint32, uint32) {
        Node storage n = _nodes[node];
        return (n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function validatorCount(uint8 deviceClass) external view returns (uint256) {
        return _validators[deviceClass].length;
    }

    /// @inheritdoc INodeRegistry
    function validatorAt(uint8 deviceClass, uint256 index) external view returns (address) {
        return _validators[deviceClass][index];
    }

    function _removeValidator(address node, Node storage n) internal {
        uint8 dc = n.hw.deviceClass;
        address[] storage set = _validators[dc];
        uint256 idx = n.validatorSlot - 1;
        address last = set[set.length - 1];
        set[idx] = last;
        _nodes[last].validatorSlot = uint32(idx + 1);
        set.pop();
        n.validatorSlot = 0;
        emit ValidatorSetLeft(node, dc);
    }

    function _lock(address node, Node storage n, uint256 amount) internal {
        uint128 locked = n.locked + uint128(amount); // amount <= free stake < 2^128
        n.locked = locked;
        emit Locked(node, amount, locked);
    }

    function _unlock(address node, Node storage n, uint256 amount) internal {
        uint128 locked = n.locked;
        uint128 u = amount < locked ? uint128(amount) : locked;
        locked -= u;
        n.locked = locked;
        emit Unlocked(node, u, locked);
    }
}
