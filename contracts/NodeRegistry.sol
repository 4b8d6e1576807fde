// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {DRAW_WEIGHT_SCALE, INodeRegistry} from "./interfaces/INodeRegistry.sol";
import {Hardware} from "./types/Types.sol";

/// @title NodeRegistry: staking, collateral, slashing, reputation, jail and validator sets of nodes.
/// @notice A node is in its device class's validator set exactly when it holds the VALIDATOR role, is not
/// jailed and has at least `minValidatorStake` bonded; every call that changes one of the three keeps the
/// set in step, so the draws (which only read `validatorCount`/`validatorAt`) never see anyone else.
contract NodeRegistry is INodeRegistry, Ownable, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    uint8 public constant SOLVER = 1;
    uint8 public constant VALIDATOR = 2;
    uint8 public constant CHALLENGER = 4;

    /// @notice Lock, unlock and slash any node's stake (the pool: it holds collateral and validator bonds).
    uint8 public constant PERM_STAKE_ANY = 1;
    /// @notice Lock any node's free stake, but unlock and slash only what this caller locked itself.
    uint8 public constant PERM_STAKE_OWN = 2;
    /// @notice `recordCompleted` (and the counter of `unlockCompleted`).
    uint8 public constant PERM_COMPLETED = 4;
    /// @notice `recordMissed`.
    uint8 public constant PERM_MISSED = 8;
    /// @notice `recordFraud`, which jails.
    uint8 public constant PERM_FRAUD = 16;
    uint8 internal constant _PERM_ALL = 31;

    /// @dev Longest unbonding delay or jail period accepted: keeps `now + period` far from uint64's end and
    /// refuses a "bounded" jail that is permanent in practice.
    uint64 internal constant _MAX_PERIOD = 3650 days;
    /// @notice A validator's draw weight grows with its bonded stake up to this many minimum stakes.
    uint256 public constant WEIGHT_CAP_MINIMUMS = 20;

    struct Node {
        uint8 roles;
        bool registered;
        uint32 completed;
        uint32 missed;
        uint32 frauds;
        uint32 validatorSlot; // index + 1 in _validators[deviceClass]; 0 = not in the set
        uint64 jailedUntil; // 0 = not jailed; otherwise jailed until `unjail()` after this time
        uint48 validatorSince; // block of the last entry into the set (fills slot 0: free to write with the slot)
        Hardware hw;
        uint128 bonded; // bonded and locked share a slot: lock/unlock/free-stake reads touch one slot
        uint128 locked;
        uint192 unbonding; // unbonding and its release share a slot: unbond/withdraw touch one slot
        uint64 unbondRelease;
        bytes32 replayClass; // keccak256 of the node's replay-class description; 0 = none declared
        uint32 classSlot; // index + 1 in _classValidators[replayClass]; 0 = not in that set
    }

    IERC20 private immutable _token;
    /// @inheritdoc INodeRegistry
    uint64 public immutable unbondingDelay;
    /// @inheritdoc INodeRegistry
    uint256 public immutable minValidatorStake;
    /// @inheritdoc INodeRegistry
    uint64 public immutable jailPeriod;
    /// @inheritdoc INodeRegistry
    uint256 public immutable weightCap;
    /// @inheritdoc INodeRegistry
    uint256 public totalStaked;
    bool public wired;
    /// @inheritdoc INodeRegistry
    mapping(address => uint8) public permissionsOf;
    /// @inheritdoc INodeRegistry
    mapping(address => mapping(address => uint256)) public lockedBy;
    mapping(address => Node) private _nodes;
    /// @dev Per device class: each member as one word, so a draw reads everything it needs with one SLOAD:
    ///      bits 0..159 the address, 160..191 the block it entered the set, 192..223 the block its weight last
    ///      changed, 224..255 its weight (`_weight`). Block numbers in 32 bits last a century at one per second.
    mapping(uint8 => uint256[]) private _validators;
    /// @dev Per replay class: the members of the device-class sets that declared it, same word layout. A node
    ///      is in its class's set exactly when it is in its device class's set and its class is non-zero.
    mapping(bytes32 => uint256[]) private _classValidators;

    modifier requires(uint8 perm) {
        if (permissionsOf[msg.sender] & perm == 0) revert NotPermitted(msg.sender, perm);
        _;
    }

    constructor(
        address token_,
        uint64 unbondingDelay_,
        uint256 minValidatorStake_,
        uint64 jailPeriod_,
        address owner_
    ) Ownable(owner_) {
        if (token_ == address(0)) revert InvalidParam("token", 0);
        if (unbondingDelay_ == 0 || unbondingDelay_ > _MAX_PERIOD)
            revert InvalidParam("unbondingDelay", unbondingDelay_);
        // Zero would let 1-wei addresses into the draws (sybils); above uint128 no bond could ever reach it.
        if (minValidatorStake_ == 0 || minValidatorStake_ > type(uint128).max) {
            revert InvalidParam("minValidatorStake", minValidatorStake_);
        }
        if (jailPeriod_ == 0 || jailPeriod_ > _MAX_PERIOD) revert InvalidParam("jailPeriod", jailPeriod_);
        _token = IERC20(token_);
        unbondingDelay = unbondingDelay_;
        minValidatorStake = minValidatorStake_;
        jailPeriod = jailPeriod_;
        weightCap = minValidatorStake_ * WEIGHT_CAP_MINIMUMS; // < 2^133: no overflow
    }

    /// @inheritdoc INodeRegistry
    function wire(
        address[] calldata protocols,
        uint8[] calldata permissions,
        uint64 longestExposure,
        uint256 validatorBond
    ) external onlyOwner {
        if (wired) revert AlreadyWired();
        // INVARIANT: stake cannot leave before every challenge/dispute that could slash it has closed.
        if (unbondingDelay <= longestExposure) revert UnsafeUnbondingDelay(unbondingDelay, longestExposure + 1);
        // INVARIANT: entering the validator set takes at least one bond (a member can always be drawn).
        if (minValidatorStake < validatorBond) revert InvalidParam("minValidatorStake", minValidatorStake);
        if (permissions.length != protocols.length) revert InvalidParam("permissions", permissions.length);
        wired = true;
        for (uint256 i; i < protocols.length; ++i) {
            uint8 perm = permissions[i];
            if (protocols[i] == address(0)) revert InvalidParam("protocol", 0);
            // Both stake scopes at once would be ambiguous; no permission at all is a wiring mistake.
            bool bothScopes = perm & (PERM_STAKE_ANY | PERM_STAKE_OWN) == (PERM_STAKE_ANY | PERM_STAKE_OWN);
            if (perm == 0 || perm > _PERM_ALL || bothScopes) revert InvalidParam("permissions", perm);
            permissionsOf[protocols[i]] = perm;
            emit ProtocolAuthorized(protocols[i], perm);
        }
    }

    // ------------------------------------------------------------------ a node's own calls

    /// @inheritdoc INodeRegistry
    function register(uint8 roles, Hardware calldata hw) external {
        if (roles == 0 || roles > 7) revert InvalidRoles(roles);
        Node storage n = _nodes[msg.sender];
        if (n.registered) revert AlreadyRegistered(msg.sender);
        n.registered = true;
        n.roles = roles;
        n.hw = hw;
        emit NodeRegistered(msg.sender, roles, hw);
        // A fresh node has no stake: a VALIDATOR enters the set from `stake` once it bonds the minimum.
    }

    /// @inheritdoc INodeRegistry
    function updateHardware(Hardware calldata hw) external {
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        // INVARIANT: a validator sits only in the set of its declared device class.
        bool moves = n.validatorSlot != 0 && hw.deviceClass != n.hw.deviceClass;
        if (moves) _removeValidator(msg.sender, n);
        n.hw = hw;
        emit HardwareUpdated(msg.sender, hw);
        if (moves) _addValidator(msg.sender, n);
    }

    /// @inheritdoc INodeRegistry
    /// @dev The id is computed here from the description, so the `ReplayClassSet` event carries its own
    ///      preimage: anyone can read what a class means from the chain. A validator moves to the new class's
    ///      set with `since` = now, so draws frozen before this block never see it there.
    function setReplayClass(string calldata description) external {
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        bytes32 cls = bytes(description).length == 0 ? bytes32(0) : keccak256(bytes(description));
        // INVARIANT: a class id never names a device-class set (keys 0..255 of `validatorCountIn`).
        if (cls != 0 && uint256(cls) <= type(uint8).max) revert InvalidReplayClass(cls);
        if (cls == n.replayClass) revert ReplayClassUnchanged(msg.sender, cls);
        if (n.classSlot != 0) _leaveClass(msg.sender, n);
        n.replayClass = cls;
        if (n.validatorSlot != 0 && cls != 0) _joinClass(msg.sender, n);
        emit ReplayClassSet(msg.sender, cls, description);
    }

    /// @inheritdoc INodeRegistry
    function joinValidatorSet() external {
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        if (n.validatorSlot != 0) revert AlreadyValidator(msg.sender);
        if (n.jailedUntil != 0) revert StillJailed(msg.sender, n.jailedUntil);
        if (n.bonded < minValidatorStake) revert StakeBelowMinimum(msg.sender, n.bonded, minValidatorStake);
        if (n.roles & VALIDATOR == 0) {
            n.roles |= VALIDATOR;
            emit RolesChanged(msg.sender, n.roles);
        }
        _addValidator(msg.sender, n);
    }

    /// @inheritdoc INodeRegistry
    function leaveValidatorSet() external {
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        if (n.roles & VALIDATOR == 0) revert InvalidRoles(n.roles);
        n.roles &= ~VALIDATOR;
        emit RolesChanged(msg.sender, n.roles);
        // Jailed or under the minimum, it is already out of the set: dropping the role keeps it out.
        if (n.validatorSlot != 0) _removeValidator(msg.sender, n);
    }

    /// @inheritdoc INodeRegistry
    function stake(uint256 amount) external nonReentrant {
        if (amount == 0) revert ZeroAmount();
        Node storage n = _nodes[msg.sender];
        if (!n.registered) revert NotRegistered(msg.sender);
        n.bonded = SafeCast.toUint128(uint256(n.bonded) + amount);
        totalStaked += amount;
        _syncValidator(msg.sender, n); // effects before the token call
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
        n.unbonding = SafeCast.toUint192(uint256(n.unbonding) + amount);
        n.unbondRelease = uint64(block.timestamp) + unbondingDelay;
        emit Unbonded(msg.sender, amount, n.unbondRelease);
        // Unbonding stake is on its way out and weighs nothing in a draw: under the minimum, the node leaves
        // the set (ValidatorSetLeft) and re-enters by itself when it stakes back up.
        _syncValidator(msg.sender, n);
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
    function unjail() external {
        Node storage n = _nodes[msg.sender];
        uint64 until = n.jailedUntil;
        if (until == 0) revert NotJailed(msg.sender);
        if (block.timestamp < until) revert StillJailed(msg.sender, until);
        n.jailedUntil = 0;
        emit Unjailed(msg.sender);
        // Back in the draws only with the minimum still bonded (a slashed validator must top up first).
        _syncValidator(msg.sender, n);
    }

    // ------------------------------------------------------------------ protocol hooks

    /// @inheritdoc INodeRegistry
    function lock(address node, uint256 amount) external {
        bool own = _stakeScope();
        Node storage n = _nodes[node];
        uint256 free = n.bonded - n.locked;
        // INVARIANT: a lock is always backed by bonded stake.
        if (free < amount) revert InsufficientFreeStake(node, free, amount);
        _lock(node, n, amount, own);
    }

    /// @inheritdoc INodeRegistry
    function tryLock(address node, uint256 amount) external returns (bool) {
        bool own = _stakeScope();
        Node storage n = _nodes[node];
        if (n.bonded - n.locked < amount) return false;
        _lock(node, n, amount, own);
        return true;
    }

    /// @inheritdoc INodeRegistry
    function unlock(address node, uint256 amount) external {
        bool own = _stakeScope();
        _unlock(node, _nodes[node], _scoped(own, node, amount));
    }

    /// @inheritdoc INodeRegistry
    function unlockCompleted(address node, uint256 amount) external {
        bool own = _stakeScopeAnd(PERM_COMPLETED);
        Node storage n = _nodes[node];
        _unlock(node, n, _scoped(own, node, amount));
        ++n.completed;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function slash(address node, uint256 amount, address to) external nonReentrant returns (uint256 taken) {
        bool own = _stakeScope();
        Node storage n = _nodes[node];
        uint256 fromBonded;
        if (own) {
            // A scoped caller takes only stake it holds locked, and only from bonded stake (where its lock
            // lives); taking it releases that lock.
            amount = _scoped(true, node, amount);
            fromBonded = amount < n.bonded ? amount : n.bonded;
            uint128 rel = fromBonded < n.locked ? uint128(fromBonded) : n.locked;
            n.locked -= rel;
            if (rel != 0) emit Unlocked(node, rel, n.locked);
            amount = fromBonded; // nothing from unbonding
        } else {
            fromBonded = amount < n.bonded ? amount : n.bonded;
        }
        n.bonded -= uint128(fromBonded);
        if (n.locked > n.bonded) n.locked = n.bonded;
        uint256 rest = amount - fromBonded;
        uint256 fromUnbonding = rest < n.unbonding ? rest : n.unbonding;
        n.unbonding -= uint192(fromUnbonding);
        taken = fromBonded + fromUnbonding;
        if (taken == 0) return 0;
        totalStaked -= taken;
        _syncValidator(node, n); // effects before the token call
        _token.safeTransfer(to, taken);
        emit Slashed(node, taken, to);
    }

    /// @inheritdoc INodeRegistry
    function recordCompleted(address node) external requires(PERM_COMPLETED) {
        Node storage n = _nodes[node];
        ++n.completed;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function recordMissed(address node) external requires(PERM_MISSED) {
        Node storage n = _nodes[node];
        ++n.missed;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function recordFraud(address node) external requires(PERM_FRAUD) {
        Node storage n = _nodes[node];
        ++n.frauds;
        emit ReputationUpdated(node, n.completed, n.missed, n.frauds);
        // A second fraud while jailed extends the term from now; it never shortens it.
        uint64 until = uint64(block.timestamp) + jailPeriod;
        if (until > n.jailedUntil) {
            n.jailedUntil = until;
            emit Jailed(node, until);
        }
        if (n.validatorSlot != 0) _removeValidator(node, n);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc INodeRegistry
    function claimInfo(
        address node
    )
        external
        view
        returns (uint8 roles, bool jailed, Hardware memory hw, uint32 completed, uint32 missed, uint32 frauds)
    {
        Node storage n = _nodes[node];
        return (n.roles, n.jailedUntil != 0, n.hw, n.completed, n.missed, n.frauds);
    }

    /// @inheritdoc INodeRegistry
    function isProtocol(address caller) external view returns (bool) {
        return permissionsOf[caller] != 0;
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
        return _nodes[node].jailedUntil != 0;
    }

    /// @inheritdoc INodeRegistry
    function jailedUntil(address node) external view returns (uint64) {
        return _nodes[node].jailedUntil;
    }

    /// @inheritdoc INodeRegistry
    function isValidator(address node) external view returns (bool) {
        return _nodes[node].validatorSlot != 0;
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
        return address(uint160(_validators[deviceClass][index]));
    }

    /// @inheritdoc INodeRegistry
    function validatorEntry(
        uint8 deviceClass,
        uint256 index
    ) external view returns (address node, uint256 since, uint256 changedAt, uint256 weight) {
        return _entry(_validators[deviceClass][index]);
    }

    /// @inheritdoc INodeRegistry
    function replayClassOf(address node) external view returns (bytes32) {
        return _nodes[node].replayClass;
    }

    /// @inheritdoc INodeRegistry
    function classPeers(address node) external view returns (bytes32 replayClass, uint256 others) {
        Node storage n = _nodes[node];
        replayClass = n.replayClass;
        if (replayClass == 0) return (0, 0);
        others = _classValidators[replayClass].length - (n.classSlot != 0 ? 1 : 0);
    }

    /// @inheritdoc INodeRegistry
    function validatorCountIn(bytes32 set) external view returns (uint256) {
        return _set(set).length;
    }

    /// @inheritdoc INodeRegistry
    function validatorEntryIn(
        bytes32 set,
        uint256 index
    ) external view returns (address node, uint256 since, uint256 changedAt, uint256 weight) {
        return _entry(_set(set)[index]);
    }

    /// @inheritdoc INodeRegistry
    function validatorSince(address node) external view returns (uint256) {
        Node storage n = _nodes[node];
        return n.validatorSlot == 0 ? 0 : n.validatorSince;
    }

    // ------------------------------------------------------------------ internals

    /// @dev The caller's stake scope: false = any node's stake, true = only what it locked itself.
    function _stakeScope() internal view returns (bool own) {
        return _stakeScopeAnd(0);
    }

    /// @dev `_stakeScope`, also requiring the bits `also`, from one read of the caller's permissions
    /// (the honest path's `unlockCompleted` runs once per paid node).
    function _stakeScopeAnd(uint8 also) internal view returns (bool own) {
        uint8 perm = permissionsOf[msg.sender];
        if (perm & also != also) revert NotPermitted(msg.sender, also);
        if (perm & PERM_STAKE_ANY != 0) return false;
        if (perm & PERM_STAKE_OWN == 0) revert NotPermitted(msg.sender, PERM_STAKE_ANY | PERM_STAKE_OWN);
        return true;
    }

    /// @dev For a scoped caller, cap `amount` at what it holds locked on `node` and release that much of its claim.
    function _scoped(bool own, address node, uint256 amount) internal returns (uint256) {
        if (!own) return amount;
        uint256 mine = lockedBy[msg.sender][node];
        if (amount > mine) amount = mine;
        lockedBy[msg.sender][node] = mine - amount;
        return amount;
    }

    /// @dev Bring set membership in line with the rule: VALIDATOR role, not jailed, bonded >= minimum.
    function _syncValidator(address node, Node storage n) internal {
        bool eligible = n.roles & VALIDATOR != 0 && n.jailedUntil == 0 && n.bonded >= minValidatorStake;
        if (eligible && n.validatorSlot == 0) _addValidator(node, n);
        else if (!eligible && n.validatorSlot != 0) _removeValidator(node, n);
        else if (eligible) _refreshWeight(node, n);
    }

    /// @dev A member's word as it enters a set now: entered and weighed at this block.
    function _word(address node, Node storage n) internal view returns (uint256) {
        return uint256(uint160(node)) | (block.number << 160) | (block.number << 192) | (_weight(n.bonded) << 224);
    }

    /// @dev Draw weight of `bonded` stake: proportional up to `weightCap`, flat above it.
    function _weight(uint256 bonded) internal view returns (uint256) {
        uint256 cap = weightCap;
        return ((bonded < cap ? bonded : cap) * DRAW_WEIGHT_SCALE) / cap;
    }

    /// @dev A member's stake moved: store its new weight and the block it changed (only when it did change, so
    ///      a lock or an unrelated call never excludes a member from draws frozen before it).
    function _refreshWeight(address node, Node storage n) internal {
        uint256[] storage set = _validators[n.hw.deviceClass];
        uint256 idx = n.validatorSlot - 1;
        uint256 word = set[idx];
        uint256 w = _weight(n.bonded);
        if (word >> 224 == w) return;
        // INVARIANT: a weight is never read by a draw frozen before it changed (`changedAt` > frozen block).
        uint256 stamp = (block.number << 192) | (w << 224);
        set[idx] = uint256(uint192(word)) | stamp;
        if (n.classSlot != 0) {
            uint256[] storage cls = _classValidators[n.replayClass];
            cls[n.classSlot - 1] = uint256(uint192(cls[n.classSlot - 1])) | stamp;
        }
        emit ValidatorWeightChanged(node, w, block.number);
    }

    function _addValidator(address node, Node storage n) internal {
        uint8 dc = n.hw.deviceClass;
        uint256[] storage set = _validators[dc];
        set.push(_word(node, n));
        n.validatorSlot = uint32(set.length);
        n.validatorSince = uint48(block.number);
        emit ValidatorSetJoined(node, dc);
        if (n.replayClass != 0) _joinClass(node, n);
    }

    function _removeValidator(address node, Node storage n) internal {
        uint8 dc = n.hw.deviceClass;
        uint256[] storage set = _validators[dc];
        uint256 idx = n.validatorSlot - 1;
        _nodes[_swapPop(set, idx)].validatorSlot = uint32(idx + 1);
        n.validatorSlot = 0;
        emit ValidatorSetLeft(node, dc);
        if (n.classSlot != 0) _leaveClass(node, n);
    }

    /// @dev Remove member `idx` of `set` by moving the last member into its place; returns who moved there (the
    ///      removed member itself when it was the last), whose slot index the caller updates.
    function _swapPop(uint256[] storage set, uint256 idx) internal returns (address moved) {
        uint256 last = set[set.length - 1];
        set[idx] = last;
        set.pop();
        return address(uint160(last));
    }

    /// @dev A set member's word, unpacked (layout at `_validators`).
    function _entry(
        uint256 word
    ) internal pure returns (address node, uint256 since, uint256 changedAt, uint256 weight) {
        node = address(uint160(word));
        since = uint32(word >> 160);
        changedAt = uint32(word >> 192);
        weight = word >> 224;
    }

    /// @dev A validator set by key: 0..255 is a device class's set, anything larger a replay class's.
    function _set(bytes32 key) internal view returns (uint256[] storage) {
        return uint256(key) <= type(uint8).max ? _validators[uint8(uint256(key))] : _classValidators[key];
    }

    function _joinClass(address node, Node storage n) internal {
        uint256[] storage set = _classValidators[n.replayClass];
        set.push(_word(node, n));
        n.classSlot = uint32(set.length);
        emit ClassSetJoined(node, n.replayClass);
    }

    function _leaveClass(address node, Node storage n) internal {
        uint256[] storage set = _classValidators[n.replayClass];
        uint256 idx = n.classSlot - 1;
        _nodes[_swapPop(set, idx)].classSlot = uint32(idx + 1);
        n.classSlot = 0;
        emit ClassSetLeft(node, n.replayClass);
    }

    function _lock(address node, Node storage n, uint256 amount, bool own) internal {
        uint128 locked = n.locked + uint128(amount); // amount <= free stake < 2^128
        n.locked = locked;
        if (own) lockedBy[msg.sender][node] += amount;
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
