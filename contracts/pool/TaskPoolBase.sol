// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {IDisputeResolver} from "../interfaces/IDisputeResolver.sol";
import {JobParams, JobStatus, UnitStatus, PoolParams} from "../types/Types.sol";

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

    struct Job {
        JobParams p;
        address requester;
        JobStatus status;
        uint32 round;
        bool aggPhase;
        uint32 pending; // units of the current phase not yet final
        uint32 unopened; // units not yet created
        uint256 phaseFirst;
        uint256 reserve; // escrow reserved per unit
        uint256 escrow;
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

    IERC20 public immutable token;
    INodeRegistry public immutable registry;
    IDisputeResolver public resolver;
    PoolParams public params;

    uint256 public nextJobId = 1;
    uint256 public nextUnitId = 1;
    /// @inheritdoc ITaskPool
    uint256 public totalEscrow;
    /// @inheritdoc ITaskPool
    uint256 public totalBonds;
    /// @inheritdoc ITaskPool
    uint256 public totalCredit;
    /// @inheritdoc ITaskPool
    mapping(address => uint256) public credit;
    mapping(uint256 => Job) internal _jobs;
    mapping(uint256 => Unit) internal _units;
    mapping(uint256 => mapping(uint256 => bytes32)) public verdictCommits;
    mapping(uint256 => mapping(uint256 => uint8)) public verdictState;

    constructor(address token_, address registry_, PoolParams memory params_) {
        token = IERC20(token_);
        registry = INodeRegistry(registry_);
        params = params_;
    }

    function _job(uint256 jobId) internal view returns (Job storage j) {
        j = _jobs[jobId];
        if (j.status == JobStatus.None) revert UnknownJob(jobId);
    }

    function _unitIn(uint256 unitId, UnitStatus want) internal view returns (Unit storage u) {
        u = _units[unitId];
        if (u.status == UnitStatus.None) revert UnknownUnit(unitId);
        // INVARIANT: every transition starts from the state it is defined for.
        if (u.status != want) revert BadUnitStatus(unitId, uint8(u.status), uint8(want));
    }

    function _numSegments(Unit storage u) internal view returns (uint256) {
        if (u.shard == type(uint32).max) return 1;
        JobParams storage p = _jobs[u.jobId].p;
        return p.stepsPerUnit / p.checkpointInterval;
    }

    function _isValidator(Unit storage u, address v) internal view returns (bool) {
        for (uint256 i; i < u.validators.length; ++i) {
            if (u.validators[i] == v) return true;
        }
        return false;
    }

    function _slot(uint256 unitId, Unit storage u, address v) internal view returns (uint256) {
        for (uint256 i; i < u.validators.length; ++i) {
            if (u.validators[i] == v) return i;
        }
        revert NotUnitValidator(unitId, v);
    }

    function _openPhase(uint256 jobId, Job storage j, uint32 round, bool agg) internal {
        uint32 count = agg ? 1 : j.p.shards;
        j.round = round;
        j.aggPhase = agg;
        j.pending = count;
        j.unopened -= count;
        j.phaseFirst = nextUnitId;
        for (uint32 k; k < count; ++k) {
            uint256 id = nextUnitId++;
            Unit storage u = _units[id];
            u.jobId = jobId;
            u.round = round;
            u.shard = agg ? type(uint32).max : k;
            u.status = UnitStatus.Open;
            u.openedAt = uint64(block.timestamp);
            emit UnitOpened(id, jobId, round, u.shard, agg);
        }
    }

    function _verify(uint256 unitId, Unit storage u) internal {
        u.status = UnitStatus.Verified;
        u.deadline = uint64(block.timestamp) + params.challengeWindow;
        emit UnitVerified(unitId, u.deadline);
    }

    /// @dev Validators that did not reveal: penalised (after the deadline) or just released (dispute ended).
    function _skipNoShows(uint256 unitId, Unit storage u, bool penalise) internal {
        uint256 bond = params.validatorBond;
        address requester = _jobs[u.jobId].requester;
        for (uint256 i; i < u.validators.length; ++i) {
            if (verdictState[unitId][i] > V_COMMITTED) continue;
            verdictState[unitId][i] = V_SKIPPED;
            address v = u.validators[i];
            registry.unlock(v, bond);
            uint256 penalty;
            if (penalise) {
                penalty = registry.slash(v, bond * params.livenessPenaltyBps / 10_000, address(this));
                _credit(requester, penalty);
                registry.recordMissed(v);
            }
            emit ValidatorNoShow(unitId, v, penalty);
        }
    }

    function _punishSolverSide(uint256 unitId, Unit storage u, Job storage j) internal returns (uint256 pot) {
        uint256 collateral = j.p.collateralPerUnit;
        registry.unlock(u.solver, collateral);
        pot = registry.slash(u.solver, collateral, address(this));
        registry.recordFraud(u.solver);
        uint256 bond = params.validatorBond;
        for (uint256 i; i < u.validators.length; ++i) {
            address v = u.validators[i];
            uint8 st = verdictState[unitId][i];
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

    function _punishAccusers(uint256 unitId, Unit storage u) internal returns (uint256 pot) {
        uint256 bond = params.validatorBond;
        for (uint256 i; i < u.validators.length; ++i) {
            if (verdictState[unitId][i] != V_REJECT) continue;
            address v = u.validators[i];
            registry.unlock(v, bond);
            pot += registry.slash(v, bond, address(this));
            registry.recordMissed(v);
            verdictState[unitId][i] = V_SKIPPED;
        }
        if (u.challenger != address(0)) {
            uint256 b = params.challengeBond;
            // INVARIANT: a lost challenge bond leaves the bond pool and enters the pot credited by the caller.
            totalBonds -= b;
            pot += b;
            u.challenger = address(0);
        }
    }

    function _releaseAll(uint256 unitId, Unit storage u, Job storage j) internal {
        uint256 bond = params.validatorBond;
        for (uint256 i; i < u.validators.length; ++i) {
            if (verdictState[unitId][i] != V_SKIPPED) registry.unlock(u.validators[i], bond);
        }
        registry.unlock(u.solver, j.p.collateralPerUnit);
        _returnChallengeBond(u);
    }

    function _returnChallengeBond(Unit storage u) internal {
        if (u.challenger == address(0)) return;
        uint256 b = params.challengeBond;
        totalBonds -= b;
        _credit(u.challenger, b);
        u.challenger = address(0);
    }

    function _payValidator(Job storage j, address v) internal {
        uint256 fee = params.validatorFee;
        // INVARIANT: a unit pays at most validatorsPerUnit fees out of its own reserve.
        j.escrow -= fee;
        totalEscrow -= fee;
        _credit(v, fee);
        registry.recordCompleted(v);
    }

    function _settle(uint256 unitId, Unit storage u) internal {
        Job storage j = _jobs[u.jobId];
        uint256 bond = params.validatorBond;
        uint256 vPay;
        for (uint256 i; i < u.validators.length; ++i) {
            if (verdictState[unitId][i] != V_ACCEPT) continue;
            registry.unlock(u.validators[i], bond);
            _payValidator(j, u.validators[i]);
            vPay += params.validatorFee;
        }
        // INVARIANT: the solver is paid its declared price, never more than the job's maximum.
        uint256 pay = u.price;
        j.escrow -= pay;
        totalEscrow -= pay;
        _credit(u.solver, pay);
        registry.unlock(u.solver, j.p.collateralPerUnit);
        registry.recordCompleted(u.solver);
        u.status = UnitStatus.Final;
        emit UnitFinalized(unitId, u.solver, pay, vPay);
        _advance(u.jobId, j);
    }

    function _reopen(uint256 unitId, Unit storage u, Job storage j) internal {
        for (uint256 i; i < u.validators.length; ++i) {
            delete verdictState[unitId][i];
            delete verdictCommits[unitId][i];
        }
        delete u.validators;
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
        j.escrow -= amount;
        totalEscrow -= amount;
        _credit(j.requester, amount);
    }

    function _credit(address account, uint256 amount) internal {
        if (amount == 0) return;
        credit[account] += amount;
        totalCredit += amount;
        emit Credited(account, amount);
    }
}
