// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {ITaskPool} from "./interfaces/ITaskPool.sol";
import {TaskPoolBase} from "./pool/TaskPoolBase.sol";
import {IDisputeResolver} from "./interfaces/IDisputeResolver.sol";
import {Hardware, JobParams, JobStatus, UnitStatus, Outcome, PoolParams} from "./types/Types.sol";
import {Segments} from "./libraries/Segments.sol";
import {Scoring} from "./libraries/Scoring.sol";

/// @title TaskPool: escrow, jobs, units, verification and settlement.
contract TaskPool is TaskPoolBase, Ownable, ReentrancyGuard {
    using SafeERC20 for IERC20;

    constructor(address token_, address registry_, PoolParams memory params_, address owner_)
        TaskPoolBase(token_, registry_, params_)
        Ownable(owner_)
    {}

    /// @notice Set the dispute resolver (owner, once).
    function wire(address resolver_) external onlyOwner {
        if (address(resolver) != address(0)) revert AlreadyWired();
        resolver = IDisputeResolver(resolver_);
    }

    /// @notice Longest time stake can be exposed after a unit's commit: verdicts + challenge + dispute.
    function longestExposure() external view returns (uint64) {
        PoolParams memory q = params;
        return q.verdictCommitWindow + q.revealWindow + q.challengeWindow + resolver.maxDuration();
    }

    // ---------------------------------------------------------------- jobs

    /// @inheritdoc ITaskPool
    function submitJob(JobParams calldata p) external nonReentrant returns (uint256 jobId) {
        if (address(resolver) == address(0)) revert NotWired();
        if (p.rounds == 0) revert InvalidJobParams("rounds");
        if (p.shards == 0) revert InvalidJobParams("shards");
        if (p.checkpointInterval == 0 || p.stepsPerUnit == 0 || p.stepsPerUnit % p.checkpointInterval != 0) {
            revert InvalidJobParams("steps");
        }
        if (p.maxPricePerUnit == 0) revert InvalidJobParams("maxPricePerUnit");
        if (p.commitWindow < params.minCommitWindow) revert InvalidJobParams("commitWindow");
        uint256 units = uint256(p.rounds) * p.shards + (p.shards > 1 ? p.rounds : 0);
        uint256 reserve = uint256(p.maxPricePerUnit) + uint256(params.validatorsPerUnit) * params.validatorFee;
        uint256 budget = units * reserve;
        jobId = nextJobId++;
        Job storage j = _jobs[jobId];
        j.p = p;
        j.requester = msg.sender;
        j.status = JobStatus.Active;
        j.unopened = uint32(units);
        j.reserve = reserve;
        j.escrow = budget;
        totalEscrow += budget;
        token.safeTransferFrom(msg.sender, address(this), budget);
        emit JobSubmitted(jobId, msg.sender, p.specHash, p.specCid, budget);
        _openPhase(jobId, j, 0, false);
    }

    /// @inheritdoc ITaskPool
    function cancelJob(uint256 jobId) external nonReentrant {
        Job storage j = _job(jobId);
        if (msg.sender != j.requester) revert NotRequester(jobId, msg.sender);
        if (j.status != JobStatus.Active) revert JobNotActive(jobId, uint8(j.status));
        j.status = JobStatus.Cancelled;
        uint256 refund = uint256(j.unopened) * j.reserve;
        j.unopened = 0;
        uint256 count = j.aggPhase ? 1 : j.p.shards;
        for (uint256 id = j.phaseFirst; id < j.phaseFirst + count; ++id) {
            if (_units[id].status == UnitStatus.Open) {
                _units[id].status = UnitStatus.Cancelled;
                --j.pending;
                refund += j.reserve;
                emit UnitCancelled(id);
            }
        }
        if (j.pending == 0) refund = j.escrow;
        _refund(j, refund);
        emit JobCancelled(jobId, refund);
    }

    // ---------------------------------------------------------------- solving

    /// @inheritdoc ITaskPool
    function claim(uint256 unitId) external {
        Unit storage u = _unitIn(unitId, UnitStatus.Open);
        Job storage j = _jobs[u.jobId];
        address s = msg.sender;
        if (registry.rolesOf(s) & SOLVER == 0) revert MissingRole(s, SOLVER);
        if (registry.isJailed(s)) revert NodeJailed(s);
        Hardware memory hw = registry.hardwareOf(s);
        if (hw.deviceClass != j.p.deviceClass || hw.memoryMb < j.p.minMemoryMb || hw.throughput < j.p.minThroughput) {
            revert HardwareMismatch(s, unitId);
        }
        if (hw.pricePerUnit > j.p.maxPricePerUnit) revert PriceTooHigh(s, hw.pricePerUnit, j.p.maxPricePerUnit);
        uint256 score = _score(s, hw, j.p);
        uint256 req = Scoring.required(u.openedAt, params.claimWindow, block.timestamp);
        if (score < req) revert ScoreTooLow(s, score, req);
        // INVARIANT: collateral is locked from free stake before the unit is assigned.
        registry.lock(s, j.p.collateralPerUnit);
        u.status = UnitStatus.Assigned;
        u.solver = s;
        u.price = hw.pricePerUnit;
        u.deadline = uint64(block.timestamp) + j.p.commitWindow;
        emit UnitClaimed(unitId, s, hw.pricePerUnit, u.deadline);
    }

    /// @inheritdoc ITaskPool
    function timeoutClaim(uint256 unitId) external nonReentrant {
        Unit storage u = _unitIn(unitId, UnitStatus.Assigned);
        // INVARIANT: a solver keeps its unit until its commit deadline.
        if (block.timestamp <= u.deadline) revert DeadlineNotReached(unitId, u.deadline);
        Job storage j = _jobs[u.jobId];
        address s = u.solver;
        uint256 collateral = j.p.collateralPerUnit;
        registry.unlock(s, collateral);
        uint256 penalty = registry.slash(s, collateral * params.livenessPenaltyBps / 10_000, address(this));
        _credit(j.requester, penalty);
        registry.recordMissed(s);
        emit UnitTimedOut(unitId, s, penalty);
        _reopen(unitId, u, j);
    }

    /// @inheritdoc ITaskPool
    function commit(uint256 unitId, bytes32 checkpointRoot, bytes32 finalStateHash, string calldata manifestCid) external {
        Unit storage u = _unitIn(unitId, UnitStatus.Assigned);
        if (msg.sender != u.solver) revert NotSolver(unitId, msg.sender);
        if (block.timestamp > u.deadline) revert DeadlinePassed(unitId, u.deadline);
        u.status = UnitStatus.Committed;
        u.checkpointRoot = checkpointRoot;
        u.seedBlock = uint64(block.number);
        emit UnitCommitted(unitId, checkpointRoot, finalStateHash, manifestCid);
    }

    // ---------------------------------------------------------------- verification

    /// @inheritdoc ITaskPool
    function drawValidators(uint256 unitId) public {
        Unit storage u = _unitIn(unitId, UnitStatus.Committed);
        if (u.drawn) revert AlreadyDrawn(unitId);
        uint256 base = u.seedBlock + 1;
        // INVARIANT: the seed comes from a block mined after the commitment.
        if (block.number <= base) revert RandomnessNotReady(unitId, base + 1);
        if (block.number - base > 256) {
            u.seedBlock = uint64(block.number);
            emit SeedRolled(unitId, block.number);
            return;
        }
        bytes32 seed = keccak256(abi.encode(blockhash(base), unitId));
        u.seed = seed;
        u.drawn = true;
        uint8 dc = _jobs[u.jobId].p.deviceClass;
        uint256 n = registry.validatorCount(dc);
        uint256 want = params.validatorsPerUnit;
        uint256 bond = params.validatorBond;
        for (uint256 a; a < want * 4 && u.validators.length < want && n > 0; ++a) {
            address v = registry.validatorAt(dc, uint256(keccak256(abi.encode(seed, "v", a))) % n);
            if (v == u.solver || _isValidator(u, v) || registry.freeStakeOf(v) < bond) continue;
            registry.lock(v, bond);
            u.validators.push(v);
        }
        u.commitDeadline = uint64(block.timestamp) + params.verdictCommitWindow;
        u.revealDeadline = u.commitDeadline + params.revealWindow;
        uint256 segs = _numSegments(u);
        uint256[] memory segments = new uint256[](u.validators.length);
        for (uint256 i; i < segments.length; ++i) {
            segments[i] = Segments.segmentIndex(seed, i, segs);
        }
        emit ValidatorsDrawn(unitId, seed, u.validators, segments, u.commitDeadline, u.revealDeadline);
        if (u.validators.length == 0) _verify(unitId, u);
    }

    /// @inheritdoc ITaskPool
    function commitVerdict(uint256 unitId, bytes32 h) external {
        Unit storage u = _unitIn(unitId, UnitStatus.Committed);
        if (!u.drawn) drawValidators(unitId);
        uint256 i = _slot(unitId, u, msg.sender);
        if (block.timestamp > u.commitDeadline) revert DeadlinePassed(unitId, u.commitDeadline);
        if (verdictState[unitId][i] != V_NONE) revert VerdictAlreadyGiven(unitId, msg.sender);
        verdictCommits[unitId][i] = h;
        verdictState[unitId][i] = V_COMMITTED;
        ++u.committed;
        emit VerdictCommitted(unitId, msg.sender);
    }

    /// @inheritdoc ITaskPool
    function revealVerdict(
        uint256 unitId,
        bool accept,
        bytes32 transcriptHash,
        bytes32 salt,
        bytes32 startHash,
        bytes32 endHash,
        bytes32 transcriptCommit,
        bytes32[] calldata proof
    ) external nonReentrant {
        Unit storage u = _unitIn(unitId, UnitStatus.Committed);
        uint256 i = _checkReveal(unitId, u, accept, transcriptHash, salt);
        uint256 seg = Segments.segmentIndex(u.seed, i, _numSegments(u));
        // INVARIANT: a verdict is about the committed segment the seed assigned to this validator.
        if (!Segments.verify(u.checkpointRoot, seg, startHash, endHash, transcriptCommit, proof)) {
            revert InvalidSegmentProof(unitId, seg);
        }
        // INVARIANT: accepting requires the transcript preimage, which only a replayer knows.
        if (accept && Segments.commitOfTranscript(transcriptHash) != transcriptCommit) {
            revert TranscriptMismatch(unitId, transcriptCommit);
        }
        verdictState[unitId][i] = accept ? V_ACCEPT : V_REJECT;
        ++u.revealed;
        emit VerdictRevealed(unitId, msg.sender, accept, transcriptHash);
        if (!accept) {
            _openDispute(unitId, u, msg.sender, seg);
        } else if (u.revealed == u.validators.length) {
            _verify(unitId, u);
        }
    }

    /// @inheritdoc ITaskPool
    function closeVerdicts(uint256 unitId) external nonReentrant {
        Unit storage u = _unitIn(unitId, UnitStatus.Committed);
        if (!u.drawn) revert NotDrawn(unitId);
        if (block.timestamp <= u.revealDeadline) revert DeadlineNotReached(unitId, u.revealDeadline);
        _skipNoShows(unitId, u, true);
        _verify(unitId, u);
    }

    /// @inheritdoc ITaskPool
    function challenge(uint256 unitId, uint256 segmentIndex) external nonReentrant {
        Unit storage u = _unitIn(unitId, UnitStatus.Verified);
        if (registry.rolesOf(msg.sender) & CHALLENGER == 0 || msg.sender == u.solver) {
            revert MissingRole(msg.sender, CHALLENGER);
        }
        // INVARIANT: challenges only inside the window, so payouts after it are final.
        if (block.timestamp > u.deadline) revert DeadlinePassed(unitId, u.deadline);
        uint256 segs = _numSegments(u);
        if (segmentIndex >= segs) revert BadSegment(unitId, segmentIndex, segs);
        uint256 bond = params.challengeBond;
        totalBonds += bond;
        u.challenger = msg.sender;
        token.safeTransferFrom(msg.sender, address(this), bond);
        _openDispute(unitId, u, msg.sender, segmentIndex);
    }

    // ---------------------------------------------------------------- settlement

    /// @inheritdoc ITaskPool
    function finalize(uint256 unitId) external nonReentrant {
        Unit storage u = _unitIn(unitId, UnitStatus.Verified);
        // INVARIANT: escrow pays out only after the challenge window closes.
        if (block.timestamp <= u.deadline) revert DeadlineNotReached(unitId, u.deadline);
        _settle(unitId, u);
    }

    /// @inheritdoc ITaskPool
    function onDisputeResolved(uint256 unitId, Outcome outcome, address[] calldata winners) external nonReentrant {
        if (msg.sender != address(resolver)) revert NotResolver(msg.sender);
        Unit storage u = _unitIn(unitId, UnitStatus.Disputed);
        Job storage j = _jobs[u.jobId];
        uint256 pot;
        address beneficiary;
        _skipNoShows(unitId, u, false);
        if (outcome == Outcome.SolverFraud) {
            pot = _punishSolverSide(unitId, u, j);
            beneficiary = u.opener;
        } else if (outcome == Outcome.SolverHonest) {
            pot = _punishAccusers(unitId, u);
            beneficiary = u.solver;
        } else {
            _releaseAll(unitId, u, j);
        }
        if (pot != 0) {
            uint256 share = winners.length == 0 ? 0 : pot * params.committeeRewardBps / 10_000 / winners.length;
            for (uint256 k; k < winners.length; ++k) {
                _credit(winners[k], share);
            }
            _credit(beneficiary, pot - share * winners.length);
        }
        emit DisputeSettled(unitId, uint8(outcome), pot);
        if (outcome == Outcome.SolverHonest) {
            _settle(unitId, u);
        } else {
            _reopen(unitId, u, j);
        }
    }

    /// @inheritdoc ITaskPool
    function claimCredit() external nonReentrant {
        uint256 amount = credit[msg.sender];
        if (amount == 0) revert NoCredit(msg.sender);
        credit[msg.sender] = 0;
        totalCredit -= amount;
        token.safeTransfer(msg.sender, amount);
        emit CreditClaimed(msg.sender, amount);
    }

    // ---------------------------------------------------------------- views

    /// @notice Compact job state (the spec itself is in the JobSubmitted event).
    function jobState(uint256 jobId)
        external
        view
        returns (address requester, JobStatus status, uint32 round, bool aggPhase, uint32 pending, uint256 escrow)
    {
        Job storage j = _jobs[jobId];
        return (j.requester, j.status, j.round, j.aggPhase, j.pending, j.escrow);
    }

    /// @notice Full unit state (validators, deadlines, seed, dispute).
    function getUnit(uint256 unitId) external view returns (Unit memory) {
        return _units[unitId];
    }

    /// @notice Number of checkpoint segments of the unit (1 for aggregation units).
    function numSegments(uint256 unitId) external view returns (uint256) {
        return _numSegments(_units[unitId]);
    }

    /// @notice Claim score of `node` for `unitId` and the score currently required.
    function claimScore(address node, uint256 unitId) external view returns (uint256 score, uint256 required) {
        Unit storage u = _units[unitId];
        Job storage j = _jobs[u.jobId];
        score = _score(node, registry.hardwareOf(node), j.p);
        required = Scoring.required(u.openedAt, params.claimWindow, block.timestamp);
    }

    // ---------------------------------------------------------------- internal

    function _score(address node, Hardware memory hw, JobParams storage p) internal view returns (uint256) {
        (uint32 c, uint32 m, uint32 f) = registry.reputationOf(node);
        uint64 tp = hw.throughput < p.minThroughput ? p.minThroughput : hw.throughput;
        uint128 price = hw.pricePerUnit > p.maxPricePerUnit ? p.maxPricePerUnit : hw.pricePerUnit;
        return Scoring.score(c, m, f, price, p.maxPricePerUnit, tp, p.minThroughput);
    }

    function _checkReveal(uint256 unitId, Unit storage u, bool accept, bytes32 transcriptHash, bytes32 salt)
        internal
        view
        returns (uint256 i)
    {
        if (!u.drawn) revert NotDrawn(unitId);
        i = _slot(unitId, u, msg.sender);
        if (verdictState[unitId][i] != V_COMMITTED) revert VerdictAlreadyGiven(unitId, msg.sender);
        // INVARIANT: nobody reveals (and can be copied) before all commits are in or the commit phase ended.
        if (u.committed < u.validators.length && block.timestamp <= u.commitDeadline) {
            revert RevealNotOpen(unitId, u.commitDeadline);
        }
        if (block.timestamp > u.revealDeadline) revert DeadlinePassed(unitId, u.revealDeadline);
        if (Segments.verdictHash(unitId, msg.sender, accept, transcriptHash, salt) != verdictCommits[unitId][i]) {
            revert VerdictMismatch(unitId, msg.sender);
        }
    }

    function _openDispute(uint256 unitId, Unit storage u, address opener, uint256 seg) internal {
        u.status = UnitStatus.Disputed;
        u.opener = opener;
        uint256 id = resolver.openDispute(unitId, _jobs[u.jobId].p.deviceClass, u.solver, opener);
        u.disputeId = id;
        emit UnitDisputed(unitId, id, opener, seg);
    }
}
