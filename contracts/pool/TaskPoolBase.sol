// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {IDisputeResolver} from "../interfaces/IDisputeResolver.sol";
import {IRegistryExt} from "./IRegistryExt.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {JobStatus, UnitStatus, PoolParams} from "../types/Types.sol";

/// @title TaskPoolBase: TaskPool's storage and its settlement/state-machine internals.
/// @dev Every money movement inside the pool goes through `_credit`, `_refund` and `_payValidator`,
///      which keep totalEscrow / totalBonds / totalCredit equal to the pool's token balance.
abstract contract TaskPoolBase is ITaskPool {
    uint8 internal constant SOLVER = 1;
    uint8 internal constant CHALLENGER = 4;
    uint8 internal constant V_NONE = 0;
    uint8 internal constant V_COMMITTED = 1;
    uint8 internal constant V_ACCEPT = 2;
    uint8 internal constant V_REJECT = 3;
    uint8 internal constant V_SKIPPED = 4;

    /// @dev The job parameters the pool needs, packed (the spec hash/CID only live in the JobSubmitted event).
    struct JobCore {
        uint32 rounds;
        uint32 shards;
        uint32 segments; // stepsPerUnit / checkpointInterval
        uint8 deviceClass;
        uint32 minMemoryMb;
        uint64 minThroughput;
        uint32 unopened; // units not yet created
        uint128 maxPricePerUnit;
        uint128 collateralPerUnit;
    }

    /// @dev 4 storage slots: (requester,status,round,aggPhase,pending) (p: 2 slots) (commitWindow,phaseFirst,escrow).
    struct Job {
        address requester;
        JobStatus status;
        uint32 round;
        bool aggPhase;
        uint32 pending; // units of the current phase not yet final
        JobCore p;
        uint64 commitWindow;
        uint64 phaseFirst;
        uint128 escrow;
    }

    struct Unit {
        uint256 jobId;
        uint32 round;
        uint32 shard; // type(uint32).max for aggregation
        UnitStatus status;
        address solver;
        uint128 price;
        uint64 openedAt;
        uint64 deadline; // Assigned: commit deadline; Verified: challenge end
        uint64 seedBlock; // randomness comes from blockhash(seedBlock + 1)
        uint64 commitDeadline;
        uint64 revealDeadline;
        bool drawn;
        uint8 committed;
        uint8 revealed;
        bytes32 checkpointRoot;
        bytes32 seed;
        address opener;
        address challenger;
        uint256 disputeId;
        address[] validators;
    }

    /// @dev Storage form of a unit (getUnit rebuilds `Unit`). An honest lifecycle touches 5 slots:
    ///      s0 (jobId..openedAt) at open, s1 (solver, deadline) and s2 (price, seedBlock, commitDeadline) at claim,
    ///      checkpointRoot at commit, seed at the draw. revealDeadline = commitDeadline + revealWindow (not stored).
    ///      Validators live in `_vslots` (address | verdict state << 160), one slot each; their count in s0.
    struct UnitS {
        uint64 jobId;
        uint32 round;
        uint32 shard; // type(uint32).max for aggregation
        UnitStatus status;
        bool drawn;
        uint8 committed;
        uint8 revealed;
        uint16 nValidators;
        uint64 openedAt;
        address solver;
        uint64 deadline; // Assigned: commit deadline; Verified: challenge end
        uint128 price;
        uint64 seedBlock; // randomness comes from blockhash(seedBlock + 1)
        uint64 commitDeadline;
        bytes32 checkpointRoot;
        bytes32 seed;
        address opener;
        address challenger;
        uint256 disputeId;
    }

    IERC20 public immutable token;
    INodeRegistry public immutable registry;
    IDisputeResolver public resolver;
    // Pool parameters are fixed at deployment: immutables (no SLOAD); `params()` returns them like the old getter.
    uint16 internal immutable _p_validatorsPerUnit;
    uint16 internal immutable _p_livenessPenaltyBps;
    uint16 internal immutable _p_committeeRewardBps;
    uint64 internal immutable _p_claimWindow;
    uint64 internal immutable _p_verdictCommitWindow;
    uint64 internal immutable _p_revealWindow;
    uint64 internal immutable _p_challengeWindow;
    uint64 internal immutable _p_minCommitWindow;
    uint128 internal immutable _p_validatorFee;
    uint128 internal immutable _p_validatorBond;
    uint128 internal immutable _p_challengeBond;

    // Packed counters: (nextJobId, nextUnitId, totalBonds) and (totalEscrow, totalCredit) share slots, so a
    // settlement touches one totals slot. Amounts are bounded by the token supply (checked casts where unbounded).
    uint64 internal _nextJobId = 1;
    uint64 internal _nextUnitId = 1;
    uint128 internal _totalBonds;
    uint128 internal _totalEscrow;
    uint128 internal _totalCredit;
    /// @inheritdoc ITaskPool
    mapping(address => uint256) public credit;
    mapping(uint256 => Job) internal _jobs;
    mapping(uint256 => UnitS) internal _units;
    mapping(uint256 => mapping(uint256 => bytes32)) public verdictCommits;
    /// @dev Validator slot i of a unit: address in the low 160 bits, verdict state (V_*) in bits 160..167.
    mapping(uint256 => mapping(uint256 => uint256)) internal _vslots;

    constructor(address token_, address registry_, PoolParams memory params_) {
        token = IERC20(token_);
        registry = INodeRegistry(registry_);
        _p_validatorsPerUnit = params_.validatorsPerUnit;
        _p_livenessPenaltyBps = params_.livenessPenaltyBps;
        _p_committeeRewardBps = params_.committeeRewardBps;
        _p_claimWindow = params_.claimWindow;
        _p_verdictCommitWindow = params_.verdictCommitWindow;
        _p_revealWindow = params_.revealWindow;
        _p_challengeWindow = params_.challengeWindow;
        _p_minCommitWindow = params_.minCommitWindow;
        _p_validatorFee = params_.validatorFee;
        _p_validatorBond = params_.validatorBond;
        _p_challengeBond = params_.challengeBond;
    }

    /// @notice The pool parameters (same outputs as the public getter of the former `params` struct).
    function params()
        external
        view
        returns (
            uint16 validatorsPerUnit,
            uint16 livenessPenaltyBps,
            uint16 committeeRewardBps,
            uint64 claimWindow,
            uint64 verdictCommitWindow,
            uint64 revealWindow,
            uint64 challengeWindow,
            uint64 minCommitWindow,
            uint128 validatorFee,
            uint128 validatorBond,
            uint128 challengeBond
        )
    {
        return (_p_validatorsPerUnit, _p_livenessPenaltyBps, _p_committeeRewardBps, _p_claimWindow, _p_verdictCommitWindow, _p_revealWindow, _p_challengeWindow, _p_minCommitWindow, _p_validatorFee, _p_validatorBond, _p_challengeBond);
    }

    /// @notice Id the next job will get.
    function nextJobId() external view returns (uint256) {
        return _nextJobId;
    }

    /// @notice Id the next unit will get.
    function nextUnitId() external view returns (uint256) {
        return _nextUnitId;
    }

    /// @inheritdoc ITaskPool
    function totalEscrow() external view returns (uint256) {
        return _totalEscrow;
    }

    /// @inheritdoc ITaskPool
    function totalBonds() external view returns (uint256) {
        return _totalBonds;
    }

    /// @inheritdoc ITaskPool
    function totalCredit() external view returns (uint256) {
        return _totalCredit;
    }

    /// @notice Verdict state of validator slot `i` of `unitId` (V_NONE .. V_SKIPPED).
    function verdictState(uint256 unitId, uint256 i) public view returns (uint8) {
        return uint8(_vslots[unitId][i] >> 160);
    }

    function _setVerdictState(uint256 unitId, uint256 i, uint8 st) internal {
        _vslots[unitId][i] = uint256(uint160(_vslots[unitId][i])) | (uint256(st) << 160);
    }

    /// @dev Validator and verdict state of slot i.
    function _vslot(uint256 unitId, uint256 i) internal view returns (address v, uint8 st) {
        uint256 w = _vslots[unitId][i];
        v = address(uint160(w));
        st = uint8(w >> 160);
    }

    function _validators(uint256 unitId, UnitS storage u) internal view returns (address[] memory vs) {
        vs = new address[](u.nValidators);
        for (uint256 i; i < vs.length; ++i) {
            vs[i] = address(uint160(_vslots[unitId][i]));
        }
    }

    function _job(uint256 jobId) internal view returns (Job storage j) {
        j = _jobs[jobId];
        if (j.status == JobStatus.None) revert UnknownJob(jobId);
    }

    function _unitIn(uint256 unitId, UnitStatus want) internal view returns (UnitS storage u) {
        u = _units[unitId];
        if (u.status == UnitStatus.None) revert UnknownUnit(unitId);
        // INVARIANT: every transition starts from the state it is defined for.
        if (u.status != want) revert BadUnitStatus(unitId, uint8(u.status), uint8(want));
    }

    function _numSegments(UnitS storage u) internal view returns (uint256) {
        if (u.shard == type(uint32).max) return 1;
        return _jobs[u.jobId].p.segments;
    }

    function _slot(uint256 unitId, UnitS storage u, address v) internal view returns (uint256) {
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            if (address(uint160(_vslots[unitId][i])) == v) return i;
        }
        revert NotUnitValidator(unitId, v);
    }

    function _openPhase(uint256 jobId, Job storage j, uint32 round, bool agg) internal {
        uint32 count = agg ? 1 : j.p.shards;
        j.round = round;
        j.aggPhase = agg;
        j.pending = count;
        j.p.unopened -= count;
        j.phaseFirst = _nextUnitId;
        for (uint32 k; k < count; ++k) {
            uint256 id = _nextUnitId++;
            UnitS storage u = _units[id];
            uint32 shard = agg ? type(uint32).max : k;
            u.jobId = uint64(jobId);
            u.round = round;
            u.shard = shard;
            u.status = UnitStatus.Open;
            u.openedAt = uint64(block.timestamp);
            emit UnitOpened(id, jobId, round, shard, agg);
        }
    }

    function _verify(uint256 unitId, UnitS storage u) internal {
        u.status = UnitStatus.Verified;
        u.deadline = uint64(block.timestamp) + _p_challengeWindow;
        emit UnitVerified(unitId, u.deadline);
    }

    /// @dev Validators that did not reveal: penalised (after the deadline) or just released (dispute ended).
    function _skipNoShows(uint256 unitId, UnitS storage u, bool penalise) internal {
        uint256 bond = _p_validatorBond;
        address requester = _jobs[u.jobId].requester;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address v, uint8 st) = _vslot(unitId, i);
            if (st > V_COMMITTED) continue;
            _setVerdictState(unitId, i, V_SKIPPED);
            registry.unlock(v, bond);
            uint256 penalty;
            if (penalise) {
                penalty = registry.slash(v, bond * _p_livenessPenaltyBps / 10_000, address(this));
                _credit(requester, penalty);
                registry.recordMissed(v);
            }
            emit ValidatorNoShow(unitId, v, penalty);
        }
    }

    function _punishSolverSide(uint256 unitId, UnitS storage u, Job storage j) internal returns (uint256 pot) {
        uint256 collateral = j.p.collateralPerUnit;
        registry.unlock(u.solver, collateral);
        pot = registry.slash(u.solver, collateral, address(this));
        registry.recordFraud(u.solver);
        uint256 bond = _p_validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address v, uint8 st) = _vslot(unitId, i);
            if (st == V_ACCEPT) {
                registry.unlock(v, bond);
                pot += registry.slash(v, bond, address(this));
                registry.recordFraud(v);
            } else if (st == V_REJECT) {
                registry.unlock(v, bond);
                registry.recordCompleted(v);
            }
        }
        _returnChallengeBond(u);
    }

    function _punishAccusers(uint256 unitId, UnitS storage u) internal returns (uint256 pot) {
        uint256 bond = _p_validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address v, uint8 st) = _vslot(unitId, i);
            if (st != V_REJECT) continue;
            registry.unlock(v, bond);
            pot += registry.slash(v, bond, address(this));
            registry.recordMissed(v);
            _setVerdictState(unitId, i, V_SKIPPED);
        }
        if (u.challenger != address(0)) {
            uint256 b = _p_challengeBond;
            // INVARIANT: a lost challenge bond leaves the bond pool and enters the pot credited by the caller.
            _totalBonds -= uint128(b); // b = _p_challengeBond (uint128)
            pot += b;
            u.challenger = address(0);
        }
    }

    function _releaseAll(uint256 unitId, UnitS storage u, Job storage j) internal {
        uint256 bond = _p_validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address v, uint8 st) = _vslot(unitId, i);
            if (st != V_SKIPPED) registry.unlock(v, bond);
        }
        registry.unlock(u.solver, j.p.collateralPerUnit);
        _returnChallengeBond(u);
    }

    function _returnChallengeBond(UnitS storage u) internal {
        if (u.challenger == address(0)) return;
        uint256 b = _p_challengeBond;
        _totalBonds -= uint128(b); // b = _p_challengeBond (uint128)
        _credit(u.challenger, b);
        u.challenger = address(0);
    }

    function _payValidator(Job storage j, address v) internal returns (uint256 fee) {
        fee = _p_validatorFee;
        // INVARIANT: a unit pays at most validatorsPerUnit fees out of its own reserve.
        _takeEscrow(j, fee);
        _totalEscrow -= uint128(fee); // fee = _p_validatorFee (uint128)
        _credit(v, fee);
    }

    function _settle(uint256 unitId, UnitS storage u) internal {
        Job storage j = _jobs[u.jobId];
        uint256 bond = _p_validatorBond;
        uint256 vPay;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address v, uint8 st) = _vslot(unitId, i);
            if (st != V_ACCEPT) continue;
            IRegistryExt(address(registry)).unlockCompleted(v, bond);
            vPay += _payValidator(j, v);
        }
        // INVARIANT: the solver is paid its declared price, never more than the job's maximum.
        uint256 pay = u.price;
        _takeEscrow(j, pay);
        _totalEscrow -= uint128(pay); // pay = u.price (uint128)
        _credit(u.solver, pay);
        IRegistryExt(address(registry)).unlockCompleted(u.solver, j.p.collateralPerUnit);
        u.status = UnitStatus.Final;
        emit UnitFinalized(unitId, u.solver, pay, vPay);
        _advance(u.jobId, j);
    }

    function _reopen(uint256 unitId, UnitS storage u, Job storage j) internal {
        uint256 nv = u.nValidators;
        for (uint256 i; i < nv; ++i) {
            delete verdictCommits[unitId][i];
            delete _vslots[unitId][i];
        }
        u.nValidators = 0;
        u.solver = address(0);
        u.drawn = false;
        u.committed = 0;
        u.revealed = 0;
        u.opener = address(0);
        if (j.status == JobStatus.Cancelled) {
            u.status = UnitStatus.Cancelled;
            emit UnitCancelled(unitId);
            _advance(u.jobId, j);
            return;
        }
        u.status = UnitStatus.Open;
        u.openedAt = uint64(block.timestamp);
        emit UnitReopened(unitId);
    }

    /// @dev One unit of the current phase is done (final or cancelled): open the next phase or end the job.
    function _advance(uint256 jobId, Job storage j) internal {
        if (--j.pending != 0) return;
        if (j.status == JobStatus.Cancelled) {
            uint256 rest = j.escrow;
            _refund(j, rest);
            return;
        }
        if (!j.aggPhase && j.p.shards > 1) {
            _openPhase(jobId, j, j.round, true);
        } else if (j.round + 1 < j.p.rounds) {
            _openPhase(jobId, j, j.round + 1, false);
        } else {
            j.status = JobStatus.Completed;
            uint256 rest = j.escrow;
            _refund(j, rest);
            emit JobCompleted(jobId, rest);
        }
    }

    function _refund(Job storage j, uint256 amount) internal {
        _takeEscrow(j, amount); // reverts unless amount <= j.escrow (uint128)
        _totalEscrow -= uint128(amount);
        _credit(j.requester, amount);
    }

    /// @dev Checked in 256 bits: the result is <= the old escrow, so it fits back into 128 bits.
    function _takeEscrow(Job storage j, uint256 amount) internal {
        j.escrow = uint128(uint256(j.escrow) - amount);
    }

    /// @dev Escrow reserved per unit (params are fixed at deployment).
    function _reserve(Job storage j) internal view returns (uint256) {
        return uint256(j.p.maxPricePerUnit) + uint256(_p_validatorsPerUnit) * _p_validatorFee;
    }

    function _credit(address account, uint256 amount) internal {
        if (amount == 0) return;
        credit[account] += amount;
        _totalCredit = SafeCast.toUint128(uint256(_totalCredit) + amount);
        emit Credited(account, amount);
    }
}
