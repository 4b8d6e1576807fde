// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {ITaskPool} from "./interfaces/ITaskPool.sol";
import {TaskPoolBase} from "./pool/TaskPoolBase.sol";
import {IDisputeResolver} from "./interfaces/IDisputeResolver.sol";
import {Hardware, JobParams, JobStatus, UnitStatus, Outcome, PoolParams} from "./types/Types.sol";
import {Segments} from "./libraries/Segments.sol";
import {Scoring} from "./libraries/Scoring.sol";
import {IRegistryExt} from "./pool/IRegistryExt.sol";

/// @title TaskPool: escrow, jobs, units, verification and settlement.
contract TaskPool is TaskPoolBase, Ownable, ReentrancyGuardTransient {
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
        return _p_verdictCommitWindow + _p_revealWindow + _p_challengeWindow + resolver.maxDuration();
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
        if (p.commitWindow < _p_minCommitWindow) revert InvalidJobParams("commitWindow");
        uint256 units = uint256(p.rounds) * p.shards + (p.shards > 1 ? p.rounds : 0);
        uint256 reserve = uint256(p.maxPricePerUnit) + uint256(_p_validatorsPerUnit) * _p_validatorFee;
        uint256 budget = units * reserve;
        jobId = _nextJobId++;
        if (budget > type(uint128).max) revert InvalidJobParams("budget");
        Job storage j = _jobs[jobId];
        _storeJob(j, p, units, budget);
        _totalEscrow += uint128(budget); // budget <= type(uint128).max checked above
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
        uint256 reserve = _reserve(j);
        uint256 refund = uint256(j.p.unopened) * reserve;
        j.p.unopened = 0;
        uint256 count = j.aggPhase ? 1 : j.p.shards;
        for (uint256 id = j.phaseFirst; id < j.phaseFirst + count; ++id) {
            if (_units[id].status == UnitStatus.Open) {
                _units[id].status = UnitStatus.Cancelled;
                --j.pending;
                refund += reserve;
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
        UnitS storage u = _unitIn(unitId, UnitStatus.Open);
        Job storage j = _jobs[u.jobId];
        address s = msg.sender;
        Hardware memory hw = _checkClaimer(unitId, s, u, j);
        // INVARIANT: collateral is locked from free stake before the unit is assigned.
        registry.lock(s, j.p.collateralPerUnit);
        u.status = UnitStatus.Assigned;
        u.solver = s;
        u.price = hw.pricePerUnit;
        u.deadline = uint64(block.timestamp) + j.commitWindow;
        emit UnitClaimed(unitId, s, hw.pricePerUnit, u.deadline);
    }

    /// @inheritdoc ITaskPool
    function timeoutClaim(uint256 unitId) external nonReentrant {
        UnitS storage u = _unitIn(unitId, UnitStatus.Assigned);
        // INVARIANT: a solver keeps its unit until its commit deadline.
        if (block.timestamp <= u.deadline) revert DeadlineNotReached(unitId, u.deadline);
        Job storage j = _jobs[u.jobId];
        address s = u.solver;
        // A missed deadline is a fault, not fraud: it costs reputation; the collateral comes back whole.
        registry.unlock(s, j.p.collateralPerUnit);
        registry.recordMissed(s);
        emit UnitTimedOut(unitId, s);
        _reopen(unitId, u, j);
    }

    /// @inheritdoc ITaskPool
    function commit(uint256 unitId, bytes32 checkpointRoot, bytes32 finalStateHash, string calldata manifestCid) external {
        UnitS storage u = _unitIn(unitId, UnitStatus.Assigned);
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
        UnitS storage u = _unitIn(unitId, UnitStatus.Committed);
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
        Job storage j = _jobs[u.jobId];
        uint8 dc = j.p.deviceClass;
        address[] memory picked = _drawValidators(unitId, seed, dc, u.solver);
        uint256 count = picked.length;
        u.nValidators = uint16(count);
        uint64 commitDeadline = uint64(block.timestamp) + _p_verdictCommitWindow;
        u.commitDeadline = commitDeadline;
        uint64 revealDeadline = commitDeadline + _p_revealWindow;
        uint256 segs = u.shard == type(uint32).max ? 1 : j.p.segments;
        uint256[] memory segments = new uint256[](count);
        for (uint256 i; i < count; ++i) {
            segments[i] = Segments.segmentIndex(seed, i, segs);
        }
        emit ValidatorsDrawn(unitId, seed, picked, segments, commitDeadline, revealDeadline);
        if (count == 0) _verify(unitId, u);
    }

    /// @inheritdoc ITaskPool
    function commitVerdict(uint256 unitId, bytes32 h) external {
        UnitS storage u = _unitIn(unitId, UnitStatus.Committed);
        if (!u.drawn) drawValidators(unitId);
        uint256 i = _slot(unitId, u, msg.sender);
        if (block.timestamp > u.commitDeadline) revert DeadlinePassed(unitId, u.commitDeadline);
        if (verdictState(unitId, i) != V_NONE) revert VerdictAlreadyGiven(unitId, msg.sender);
        verdictCommits[unitId][i] = h;
        _setVerdictState(unitId, i, V_COMMITTED);
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
        UnitS storage u = _unitIn(unitId, UnitStatus.Committed);
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
        _setVerdictState(unitId, i, accept ? V_ACCEPT : V_REJECT);
        ++u.revealed;
        emit VerdictRevealed(unitId, msg.sender, accept, transcriptHash);
        if (!accept) {
            _openDispute(unitId, u, msg.sender, seg);
        } else if (u.revealed == u.nValidators) {
            _verify(unitId, u);
        }
    }

    /// @inheritdoc ITaskPool
    function closeVerdicts(uint256 unitId) external nonReentrant {
        UnitS storage u = _unitIn(unitId, UnitStatus.Committed);
        if (!u.drawn) revert NotDrawn(unitId);
        uint64 revealDeadline = _revealDeadline(u);
        if (block.timestamp <= revealDeadline) revert DeadlineNotReached(unitId, revealDeadline);
        _skipNoShows(unitId, u, true);
        _verify(unitId, u);
    }

    /// @inheritdoc ITaskPool
    function challenge(uint256 unitId, uint256 segmentIndex) external nonReentrant {
        UnitS storage u = _unitIn(unitId, UnitStatus.Verified);
        if (registry.rolesOf(msg.sender) & CHALLENGER == 0 || msg.sender == u.solver) {
            revert MissingRole(msg.sender, CHALLENGER);
        }
        // INVARIANT: challenges only inside the window, so payouts after it are final.
        if (block.timestamp > u.deadline) revert DeadlinePassed(unitId, u.deadline);
        uint256 segs = _numSegments(u);
        if (segmentIndex >= segs) revert BadSegment(unitId, segmentIndex, segs);
        uint256 bond = _p_challengeBond;
        _totalBonds += uint128(bond); // bond = _p_challengeBond (uint128)
        u.challenger = msg.sender;
        token.safeTransferFrom(msg.sender, address(this), bond);
        _openDispute(unitId, u, msg.sender, segmentIndex);
    }

    // ---------------------------------------------------------------- settlement

    /// @inheritdoc ITaskPool
    function finalize(uint256 unitId) external nonReentrant {
        UnitS storage u = _unitIn(unitId, UnitStatus.Verified);
        // INVARIANT: escrow pays out only after the challenge window closes.
        if (block.timestamp <= u.deadline) revert DeadlineNotReached(unitId, u.deadline);
        _settle(unitId, u);
    }

    /// @inheritdoc ITaskPool
    function onDisputeResolved(uint256 unitId, Outcome outcome, address[] calldata winners) external nonReentrant {
        if (msg.sender != address(resolver)) revert NotResolver(msg.sender);
        UnitS storage u = _unitIn(unitId, UnitStatus.Disputed);
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
            uint256 share = winners.length == 0 ? 0 : pot * _p_committeeRewardBps / 10_000 / winners.length;
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
        _totalCredit -= uint128(amount); // amount <= totalCredit
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
    function getUnit(uint256 unitId) external view returns (Unit memory x) {
        UnitS storage u = _units[unitId];
        x.jobId = u.jobId;
        x.round = u.round;
        x.shard = u.shard;
        x.status = u.status;
        x.solver = u.solver;
        x.price = u.price;
        x.openedAt = u.openedAt;
        x.deadline = u.deadline;
        x.seedBlock = u.seedBlock;
        x.commitDeadline = u.commitDeadline;
        x.revealDeadline = _revealDeadline(u);
        x.drawn = u.drawn;
        x.committed = u.committed;
        x.revealed = u.revealed;
        x.checkpointRoot = u.checkpointRoot;
        x.seed = u.seed;
        x.opener = u.opener;
        x.challenger = u.challenger;
        x.disputeId = u.disputeId;
        x.validators = _validators(unitId, u);
    }

    /// @notice Number of checkpoint segments of the unit (1 for aggregation units).
    function numSegments(uint256 unitId) external view returns (uint256) {
        return _numSegments(_units[unitId]);
    }

    /// @notice Claim score of `node` for `unitId` and the score currently required.
    function claimScore(address node, uint256 unitId) external view returns (uint256 score, uint256 required) {
        UnitS storage u = _units[unitId];
        Job storage j = _jobs[u.jobId];
        (,, Hardware memory hw, uint32 c, uint32 m, uint32 f) = IRegistryExt(address(registry)).claimInfo(node);
        score = _scoreOf(c, m, f, hw, j.p);
        required = Scoring.required(u.openedAt, _p_claimWindow, block.timestamp);
    }

    // ---------------------------------------------------------------- internal

    /// @dev Role, jail, hardware, price and claim-score checks of `claim` (one registry call).
    function _checkClaimer(uint256 unitId, address s, UnitS storage u, Job storage j)
        internal
        view
        returns (Hardware memory hw)
    {
        uint8 roles;
        bool jailed;
        uint32 c;
        uint32 m;
        uint32 f;
        (roles, jailed, hw, c, m, f) = IRegistryExt(address(registry)).claimInfo(s);
        if (roles & SOLVER == 0) revert MissingRole(s, SOLVER);
        if (jailed) revert NodeJailed(s);
        JobCore storage p = j.p;
        if (hw.deviceClass != p.deviceClass || hw.memoryMb < p.minMemoryMb || hw.throughput < p.minThroughput) {
            revert HardwareMismatch(s, unitId);
        }
        if (hw.pricePerUnit > p.maxPricePerUnit) revert PriceTooHigh(s, hw.pricePerUnit, p.maxPricePerUnit);
        uint256 score = _scoreOf(c, m, f, hw, p);
        uint256 req = Scoring.required(u.openedAt, _p_claimWindow, block.timestamp);
        if (score < req) revert ScoreTooLow(s, score, req);
    }

    function _scoreOf(uint32 c, uint32 m, uint32 f, Hardware memory hw, JobCore storage p)
        internal
        view
        returns (uint256)
    {
        uint64 tp = hw.throughput < p.minThroughput ? p.minThroughput : hw.throughput;
        uint128 price = hw.pricePerUnit > p.maxPricePerUnit ? p.maxPricePerUnit : hw.pricePerUnit;
        return Scoring.score(c, m, f, price, p.maxPricePerUnit, tp, p.minThroughput);
    }

    /// @dev Set with commitDeadline at the draw (0 before any draw), like the stored field it replaces.
    function _revealDeadline(UnitS storage u) internal view returns (uint64) {
        uint64 c = u.commitDeadline;
        return c == 0 ? 0 : c + _p_revealWindow;
    }

    /// @dev Draws up to validatorsPerUnit distinct validators (not the solver, free stake >= bond) and locks their bonds.
    function _drawValidators(uint256 unitId, bytes32 seed, uint8 dc, address solver)
        internal
        returns (address[] memory picked)
    {
        uint256 n = registry.validatorCount(dc);
        uint256 want = _p_validatorsPerUnit;
        uint256 bond = _p_validatorBond;
        picked = new address[](want);
        uint256 count;
        for (uint256 a; a < want * 4 && count < want && n > 0; ++a) {
            address v = registry.validatorAt(dc, uint256(keccak256(abi.encode(seed, "v", a))) % n);
            if (v == solver || _contains(picked, count, v)) continue;
            if (!IRegistryExt(address(registry)).tryLock(v, bond)) continue;
            _vslots[unitId][count] = uint256(uint160(v));
            picked[count++] = v;
        }
        assembly ("memory-safe") {
            mstore(picked, count)
        }
    }

    function _contains(address[] memory a, uint256 n, address v) internal pure returns (bool) {
        for (uint256 i; i < n; ++i) {
            if (a[i] == v) return true;
        }
        return false;
    }

    function _storeJob(Job storage j, JobParams calldata p, uint256 units, uint256 budget) internal {
        j.requester = msg.sender;
        j.status = JobStatus.Active;
        j.p = JobCore({
            rounds: p.rounds,
            shards: p.shards,
            segments: p.stepsPerUnit / p.checkpointInterval,
            deviceClass: p.deviceClass,
            minMemoryMb: p.minMemoryMb,
            minThroughput: p.minThroughput,
            unopened: uint32(units),
            maxPricePerUnit: p.maxPricePerUnit,
            collateralPerUnit: p.collateralPerUnit
        });
        j.commitWindow = p.commitWindow;
        j.escrow = uint128(budget);
    }

    function _checkReveal(uint256 unitId, UnitS storage u, bool accept, bytes32 transcriptHash, bytes32 salt)
        internal
        view
        returns (uint256 i)
    {
        if (!u.drawn) revert NotDrawn(unitId);
        i = _slot(unitId, u, msg.sender);
        if (verdictState(unitId, i) != V_COMMITTED) revert VerdictAlreadyGiven(unitId, msg.sender);
        // INVARIANT: nobody reveals (and can be copied) before all commits are in or the commit phase ended.
        if (u.committed < u.nValidators && block.timestamp <= u.commitDeadline) {
            revert RevealNotOpen(unitId, u.commitDeadline);
        }
        uint64 revealDeadline = _revealDeadline(u);
        if (block.timestamp > revealDeadline) revert DeadlinePassed(unitId, revealDeadline);
        if (Segments.verdictHash(unitId, msg.sender, accept, transcriptHash, salt) != verdictCommits[unitId][i]) {
            revert VerdictMismatch(unitId, msg.sender);
        }
    }

    function _openDispute(uint256 unitId, UnitS storage u, address opener, uint256 seg) internal {
        u.status = UnitStatus.Disputed;
        u.opener = opener;
        uint256 id = resolver.openDispute(unitId, _jobs[u.jobId].p.deviceClass, u.solver, opener);
        u.disputeId = id;
        emit UnitDisputed(unitId, id, opener, seg);
    }
}
