// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {Hardware, JobParams, JobStatus, UnitStatus, VERIFY_EXACT} from "../types/Types.sol";
import {Books, Job, JobCore, Panel, Partial, PoolState, StepTable, StoredUnit, Unit} from "../types/Pool.sol";
import {Ledger} from "./Ledger.sol";
import {Phases} from "./Phases.sol";
import {Scoring} from "./Scoring.sol";
import {Verdicts} from "./Verdicts.sol";

/// @title Units: the job and unit state machine of TaskPool.
/// @notice Open -> Assigned -> Committed -> Verified -> Final, with Disputed, reopening and cancelling
///         (docs/contracts.md). Jobs create their units phase by phase: a round's training units, then
///         its aggregation unit when sharded, then the next round; a phase opens for claims once the previous
///         one is Committed, its units commit once that one is Verified, and it is paid once every earlier one
///         is Final (`Phases`).
/// @dev Internal functions are inlined into TaskPool: the per-unit honest path pays no call. External ones
///      run once per job (`create`) or off the honest path: deployed once, linked into TaskPool and run by
///      DELEGATECALL on its storage (so `msg.sender` is TaskPool's caller and events come from TaskPool).
library Units {
    using Ledger for Books;
    using Verdicts for Panel;

    /// @dev `shard` of an aggregation unit.
    uint32 internal constant AGGREGATION = Phases.AGGREGATION;

    // Upper bounds on a job (docs/contracts.md, "Job parameters and their bounds"): past them a job could
    // not be opened, claimed or settled within the protocol's arithmetic or a block's gas, so `create`
    // refuses it with `JobParamTooLarge(field, value, max)`. gensyn_py/types.py mirrors them.
    /// @dev Rounds of a job. With `MAX_SHARDS`, units = rounds * (shards + 1) <= 1,290,000 fits `unopened`.
    uint32 internal constant MAX_ROUNDS = 10_000;
    /// @dev Shards (training units) per round: opening a round writes one unit each in one transaction
    ///      (about 25,000 gas apiece, so a phase opens in about 3.2M gas, far below a block).
    uint32 internal constant MAX_SHARDS = 128;
    /// @dev Training steps of one unit.
    uint32 internal constant MAX_STEPS_PER_UNIT = 10_000_000;
    /// @dev Checkpoint segments of one unit (stepsPerUnit / checkpointInterval): the leaves of its Merkle
    ///      commitment and the checkpoints a solver keeps.
    uint32 internal constant MAX_SEGMENTS = 4096;
    /// @dev Seconds from claim to commit deadline (block.timestamp + commitWindow must fit uint64).
    uint64 internal constant MAX_COMMIT_WINDOW = 30 days;

    /// @notice The least collateral per unit under which faking one of `segments` segments does not pay.
    /// @dev `validators` validators check m = min(validators, segments) distinct segments (`Segments`), so one
    ///      faked segment is caught with probability P = m / segments. Faking pays the price with probability
    ///      1 - P and loses the collateral with probability P: its expected value is <= 0 when
    ///      collateral * m >= price * (segments - m), rounded up. Challengers' audits only add to P.
    function minCollateral(uint256 price, uint256 segments, uint256 validators) internal pure returns (uint256) {
        uint256 m = validators < segments ? validators : segments;
        if (m == 0) return type(uint256).max; // nobody checks: no collateral is enough
        return (price * (segments - m) + m - 1) / m;
    }

    /// @notice Check `p`, store a new job of the caller and escrow its budget:
    ///         units * (maxPricePerUnit + `validators` x `validatorFee`). Once per job, so it runs linked.
    function create(
        PoolState storage s,
        JobParams calldata p,
        uint64 minCommitWindow,
        uint256 validators,
        uint256 validatorFee
    ) external returns (uint256 jobId, uint256 budget) {
        _checkBasics(p, minCommitWindow);
        // INVARIANT: the unit count fits `unopened` (uint32) and no phase opens more units than a block holds.
        if (p.rounds > MAX_ROUNDS) revert ITaskPool.JobParamTooLarge("rounds", p.rounds, MAX_ROUNDS);
        if (p.shards > MAX_SHARDS) revert ITaskPool.JobParamTooLarge("shards", p.shards, MAX_SHARDS);
        // INVARIANT: a unit's work and its commitment stay within what nodes are built to train and prove.
        if (p.stepsPerUnit > MAX_STEPS_PER_UNIT) {
            revert ITaskPool.JobParamTooLarge("stepsPerUnit", p.stepsPerUnit, MAX_STEPS_PER_UNIT);
        }
        uint32 segments = p.stepsPerUnit / p.checkpointInterval;
        if (segments > MAX_SEGMENTS) revert ITaskPool.JobParamTooLarge("segments", segments, MAX_SEGMENTS);
        // INVARIANT: every claim's deadline, block.timestamp + commitWindow, fits uint64 (no claim panics).
        if (p.commitWindow > MAX_COMMIT_WINDOW) {
            revert ITaskPool.JobParamTooLarge("commitWindow", p.commitWindow, MAX_COMMIT_WINDOW);
        }
        uint256 needed = minCollateral(p.maxPricePerUnit, segments, validators);
        // INVARIANT: faking one segment never has a positive expected value for a solver.
        if (p.collateralPerUnit < needed) revert ITaskPool.CollateralTooLow(p.collateralPerUnit, needed);
        uint256 units = uint256(p.rounds) * p.shards + (p.shards > 1 ? p.rounds : 0);
        budget = units * (uint256(p.maxPricePerUnit) + validators * validatorFee);
        jobId = s.nextJobId++;
        // INVARIANT: escrow totals fit their 128-bit slots (this job's and the pool's, summed with it).
        if (budget > type(uint128).max - s.books.totalEscrow) revert ITaskPool.InvalidJobParams("budget");
        Job storage j = s.jobs[jobId];
        j.requester = msg.sender;
        j.status = JobStatus.Active;
        j.p = JobCore({
            rounds: p.rounds,
            shards: p.shards,
            segments: segments,
            deviceClass: p.deviceClass,
            exact: p.verification == VERIFY_EXACT,
            minMemoryMb: p.minMemoryMb,
            minThroughput: p.minThroughput,
            unopened: uint32(units),
            maxPricePerUnit: p.maxPricePerUnit,
            collateralPerUnit: p.collateralPerUnit
        });
        j.commitWindow = p.commitWindow;
        if (p.stepsRoot != 0) _storeSteps(s, jobId, p);
        s.books.escrow(j, budget);
    }

    /// @dev Keep a repro job's step table root and steps per segment for the dispute game.
    function _storeSteps(PoolState storage s, uint256 jobId, JobParams calldata p) private {
        // INVARIANT: only a repro job's steps are judged by the game; an exact one's disputes stay with the
        // committee of its replay class.
        if (p.verification == VERIFY_EXACT) revert ITaskPool.InvalidJobParams("stepsRoot");
        s.steps[jobId] = StepTable(p.stepsRoot, p.checkpointInterval);
    }

    /// @notice Bind exact unit `unitId` to its claiming solver's replay class: its validators and any dispute
    ///         committee are drawn from that class only. Runs only for exact jobs (repro claims never call it).
    /// @dev Bound at claim, before any randomness of the unit exists, and never re-read from the registry:
    ///      a solver that changes its class after claiming cannot steer who validates it.
    function bindClass(PoolState storage s, INodeRegistry registry, uint256 unitId, address solver) external {
        (bytes32 cls, uint256 others) = registry.classPeers(solver);
        // INVARIANT: an exact unit is only claimed by a solver whose class has a validator other than itself
        // (otherwise it could never be verified, and a cross-class validator would convict honest work).
        if (cls == 0) revert ITaskPool.NoReplayClass(solver);
        if (others == 0) revert ITaskPool.NoClassValidators(unitId, cls);
        s.unitClass[unitId] = cls;
        emit ITaskPool.UnitClassBound(unitId, solver, cls);
    }

    /// @dev `create`'s field checks: `InvalidJobParams(field)` for a zero count, steps that are not whole
    ///      segments, a free price, an unknown verification mode or a commit window under the pool's minimum.
    function _checkBasics(JobParams calldata p, uint64 minCommitWindow) private pure {
        if (p.rounds == 0) revert ITaskPool.InvalidJobParams("rounds");
        if (p.shards == 0) revert ITaskPool.InvalidJobParams("shards");
        if (p.checkpointInterval == 0 || p.stepsPerUnit == 0 || p.stepsPerUnit % p.checkpointInterval != 0) {
            revert ITaskPool.InvalidJobParams("steps");
        }
        if (p.maxPricePerUnit == 0) revert ITaskPool.InvalidJobParams("maxPricePerUnit");
        if (p.verification > VERIFY_EXACT) revert ITaskPool.InvalidJobParams("verification");
        if (p.commitWindow < minCommitWindow) revert ITaskPool.InvalidJobParams("commitWindow");
    }

    /// @notice The requester cancels active job `jobId`: open units are cancelled; they and the unopened
    ///         units are refunded now, or the whole escrow if nothing is in flight.
    function cancel(PoolState storage s, INodeRegistry registry, uint256 jobId) external returns (uint256 refund) {
        Job storage j = job(s, jobId);
        // INVARIANT: only the requester cancels, and only an active job.
        if (msg.sender != j.requester) revert ITaskPool.NotRequester(jobId, msg.sender);
        if (j.status != JobStatus.Active) revert ITaskPool.JobNotActive(jobId, uint8(j.status));
        // A phase opened early would never be armed: void it while the job is active, so that its units'
        // reserve counts as unopened (refunded below) and its solvers get their collateral back.
        Phases.dropEarly(s, registry, jobId);
        j.status = JobStatus.Cancelled;
        uint256 reserve = uint256(j.p.maxPricePerUnit) + uint256(s.params.validatorsPerUnit) * s.params.validatorFee;
        refund = uint256(j.p.unopened) * reserve;
        j.p.unopened = 0;
        // Only the newest armed phase has open units: every earlier one is Verified or beyond.
        uint32 cancelled;
        uint32 phase = Phases.newest(j);
        uint256 first = Phases.firstOf(s, jobId, phase);
        uint256 end = first + Phases.unitsIn(j.p, phase);
        for (uint256 id = first; id < end; ++id) {
            StoredUnit storage u = s.units[id];
            if (u.status == UnitStatus.Open) {
                u.status = UnitStatus.Cancelled;
                ++cancelled;
                emit ITaskPool.UnitCancelled(id);
            }
        }
        j.live -= cancelled;
        refund += cancelled * reserve;
        if (j.live == 0) refund = j.escrow;
        s.books.refund(j, refund);
        // Cancelled units of the phase being paid are never paid: the phases after it may settle without them.
        if (cancelled != 0 && phase == j.settling) {
            j.unsettled -= cancelled;
            if (j.unsettled == 0) Phases.phaseSettled(s, jobId);
        }
    }

    /// @notice The solver of assigned unit `unitId` missed its commit deadline: unlock its collateral less the
    ///         liveness penalty (`livenessPenaltyBps` of it, credited to the requester, whose job waited), count
    ///         a miss and reopen the unit. A missed deadline is a fault, not fraud: a bounded penalty, no jail.
    /// @dev Without the penalty, claiming and abandoning cost nothing but reputation, which fresh addresses
    ///      do not have to lose: rotating addresses could hold every unit one commit window after another.
    function timeOut(PoolState storage s, INodeRegistry registry, uint256 unitId) external {
        StoredUnit storage u = unitIn(s, unitId, UnitStatus.Assigned);
        Job storage j = s.jobs[u.jobId];
        // INVARIANT: a solver keeps its unit until its commit deadline, which runs only once its phase is armed.
        uint64 by = commitBy(j, u);
        if (block.timestamp <= by) revert ITaskPool.DeadlineNotReached(unitId, by);
        address solver = u.solver;
        uint256 taken = _penaliseSolver(s, registry, j, solver);
        emit ITaskPool.UnitTimedOut(unitId, solver, taken);
        reopen(s, registry, unitId, u, j, false, false);
    }

    /// @notice The draw of committed unit `unitId` found nobody: the unit waits for validators, undrawn, with
    ///         randomness from a later block (`commitDeadline` stays set: `seedExpired` re-targets, no penalty).
    function noneDrawn(PoolState storage s, INodeRegistry registry, uint256 unitId) external {
        StoredUnit storage u = s.units[unitId];
        u.drawn = false;
        u.seed = bytes32(0);
        u.seedBlock = uint64(block.number);
        // The sweep saw the whole set and nobody was a candidate: admit validators that join from now on.
        // A larger set keeps its frozen candidates, so flooding it with late entrants never seats them.
        if (registry.validatorCountIn(Verdicts.candidateSet(s, s.jobs[u.jobId].p, unitId)) <= Verdicts.SWEEP_LIMIT) {
            u.frozenAt = uint32(block.number);
        }
        emit ITaskPool.SeedRolled(unitId, block.number);
    }

    /// @notice The seed of committed unit `unitId` (the hash of the block after its commitment) is over 256 blocks
    ///         old and gone, and nobody drew with it. If a draw ran and found nobody (`commitDeadline` set), no
    ///         outcome was ever fixed: re-target the seed to the next block. Otherwise the draw was possible for
    ///         256 blocks and the solver, who can draw at any time, let its seed lapse, perhaps because it saw a
    ///         draw it disliked: a fresh seed would be a second roll, so the unit reopens instead, and the solver
    ///         pays the liveness penalty of a missed deadline (credited to the requester) and counts a miss.
    function seedExpired(PoolState storage s, INodeRegistry registry, uint256 unitId) external {
        StoredUnit storage u = s.units[unitId];
        if (u.commitDeadline != 0) {
            u.seedBlock = uint64(block.number);
            emit ITaskPool.SeedRolled(unitId, block.number);
            return;
        }
        // INVARIANT: nobody gets a second roll of a unit's validator draw by letting its seed expire.
        address solver = u.solver;
        uint256 taken = _penaliseSolver(s, registry, s.jobs[u.jobId], solver);
        emit ITaskPool.SeedExpired(unitId, solver, taken);
        reopen(s, registry, unitId, u, s.jobs[u.jobId], true, false);
    }

    /// @dev A solver's liveness fault: unlock its collateral less `livenessPenaltyBps` of it (credited to the job's
    ///      requester, whose job waited) and count a miss. Returns the penalty taken.
    function _penaliseSolver(
        PoolState storage s,
        INodeRegistry registry,
        Job storage j,
        address solver
    ) private returns (uint256 taken) {
        uint256 collateral = j.p.collateralPerUnit;
        registry.unlock(solver, collateral);
        uint256 penalty = (collateral * s.params.livenessPenaltyBps) / 10_000;
        taken = penalty == 0 ? 0 : registry.slash(solver, penalty, address(this));
        if (taken != 0) s.books.addCredit(j.requester, taken);
        registry.recordMissed(solver);
    }

    /// @notice The solver of assigned unit `unitId` publishes its first `segments` segments (`root` over their
    ///         leaves, `manifestCid` their partial manifest) so that, should it miss its deadline, the next
    ///         solver resumes from there instead of from the start.
    /// @dev Off the honest path (its own entry point, its own mapping): a solver that never commits partially
    ///      pays nothing for the feature. A partial pays nothing and proves nothing on its own: the solver that
    ///      finally commits the whole unit vouches for every segment with its own collateral.
    function commitPartial(
        PoolState storage s,
        uint256 unitId,
        bytes32 root,
        uint32 segments,
        string calldata manifestCid
    ) external {
        StoredUnit storage u = unitIn(s, unitId, UnitStatus.Assigned);
        // INVARIANT: only the unit's solver publishes progress on it, and only before its commit deadline,
        // which a partial never moves (so it neither buys time nor escapes the liveness penalty).
        if (msg.sender != u.solver) revert ITaskPool.NotSolver(unitId, msg.sender);
        uint64 by = commitBy(s.jobs[u.jobId], u);
        if (block.timestamp > by) revert ITaskPool.DeadlinePassed(unitId, by);
        Partial storage p = s.partials[unitId];
        uint256 atLeast = p.solver == msg.sender ? uint256(p.segments) + 1 : 1;
        uint256 n = numSegments(s, u);
        // INVARIANT: a partial is a proper, growing prefix: 1 <= segments < numSegments, and more than the
        // caller's previous partial of the unit.
        if (segments < atLeast || segments >= n) revert ITaskPool.BadPartialCount(unitId, segments, atLeast, n);
        p.root = root;
        p.solver = msg.sender;
        p.segments = segments;
        emit ITaskPool.UnitPartialCommitted(unitId, msg.sender, root, segments, manifestCid);
    }

    /// @notice Claim score of `node` for `unitId` and the score currently required.
    function claimScore(
        PoolState storage s,
        INodeRegistry registry,
        address node,
        uint256 unitId
    ) external view returns (uint256 score, uint256 required) {
        StoredUnit storage u = s.units[unitId];
        JobCore storage p = s.jobs[u.jobId].p;
        (, , Hardware memory hw, uint32 c, uint32 m, uint32 f) = registry.claimInfo(node);
        score = Scoring.ofNode(c, m, f, hw, p.maxPricePerUnit, p.minThroughput);
        required = Scoring.required(u.openedAt, s.params.claimWindow, block.timestamp);
    }

    /// @dev Open -> Assigned to `solver` at `price`, with `commitWindow` seconds to commit.
    function assign(StoredUnit storage u, uint256 unitId, address solver, uint128 price, uint64 commitWindow) internal {
        u.status = UnitStatus.Assigned;
        u.solver = solver;
        u.frozenAt = uint32(block.number);
        u.price = price;
        u.deadline = uint64(block.timestamp) + commitWindow;
        emit ITaskPool.UnitClaimed(unitId, solver, price, u.deadline);
    }

    /// @dev Assigned unit `u` is in job `j`'s phase opened early, not armed yet (only the phase after the newest
    ///      armed one can be).
    function unarmed(Job storage j, StoredUnit storage u) internal view returns (bool) {
        return j.early && Phases.ofUnit(j, u) != Phases.newest(j);
    }

    /// @notice When assigned unit `u` of job `j` may be timed out: its commit deadline, or `armedAt` plus the
    ///         job's commit window if its phase was armed after the claim; never while its phase is unarmed.
    /// @dev An Assigned unit is in the newest armed phase or in the one opened early (a reopened unit voids every
    ///      later phase), so `armedAt` is its phase's.
    function commitBy(Job storage j, StoredUnit storage u) internal view returns (uint64) {
        if (unarmed(j, u)) return type(uint64).max;
        uint64 by = u.deadline;
        uint64 armed = j.armedAt + j.commitWindow;
        return armed > by ? armed : by;
    }

    /// @dev Assigned -> Committed (before the commit deadline, once its phase is armed); randomness will come
    ///      from the next block. The phase's last commitment opens the next phase for claims (linked, once).
    function commit(
        PoolState storage s,
        StoredUnit storage u,
        uint256 unitId,
        bytes32 checkpointRoot,
        bytes32 finalStateHash,
        string calldata manifestCid
    ) internal {
        Job storage j = s.jobs[u.jobId];
        // INVARIANT: nothing built on inputs not yet Verified is committed, so nobody is drawn to replay it.
        if (unarmed(j, u)) revert ITaskPool.PhaseNotArmed(unitId);
        // INVARIANT: work is committed before the commit deadline, or the unit can be taken back. (Within its
        // claim's deadline, the common case, it reads no more of the job.)
        if (block.timestamp > u.deadline) {
            uint64 by = commitBy(j, u);
            if (block.timestamp > by) revert ITaskPool.DeadlinePassed(unitId, by);
        }
        u.status = UnitStatus.Committed;
        u.checkpointRoot = checkpointRoot;
        u.seedBlock = uint64(block.number);
        // No draw has run on this commitment (`seedExpired` tells a lapsed seed from a draw that found nobody);
        // same slot as `seedBlock`: no extra SSTORE.
        u.commitDeadline = 0;
        emit ITaskPool.UnitCommitted(unitId, checkpointRoot, finalStateHash, manifestCid);
        if (--j.uncommitted == 0) Phases.openNext(s, u.jobId);
    }

    /// @dev Committed -> Verified; challenges are accepted for `challengeWindow` seconds. The last unit of its
    ///      phase to be verified opens the next phase (pipelined rounds).
    function verify(PoolState storage s, StoredUnit storage u, uint256 unitId, uint64 challengeWindow) internal {
        u.status = UnitStatus.Verified;
        u.deadline = uint64(block.timestamp) + challengeWindow;
        emit ITaskPool.UnitVerified(unitId, u.deadline);
        // The last unit of its phase: the next phase opens (linked: once per phase).
        if (--s.jobs[u.jobId].pending == 0) Phases.openNext(s, u.jobId);
    }

    /// @dev Disputed unit `unitId` was judged honest: Final and paid if every earlier phase is, otherwise Verified
    ///      with its challenge window closed, to be finalized in turn. `passed`: it had been Verified before the
    ///      dispute (a challenge), rather than rejected by a validator at its verdicts.
    function honest(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        bool passed,
        uint256 bond,
        uint256 fee
    ) internal {
        Job storage j = s.jobs[u.jobId];
        if (!passed) --j.pending;
        if (Phases.ofUnit(j, u) == j.settling) {
            settle(s, registry, unitId, u, bond, fee);
        } else {
            u.status = UnitStatus.Verified;
            u.deadline = uint64(block.timestamp) - 1; // no second challenge: the dispute decided it
            emit ITaskPool.UnitVerified(unitId, u.deadline);
        }
        if (j.pending == 0) Phases.openNext(s, u.jobId); // no-op if `settle` opened it already
    }

    /// @dev -> Final: pay the accepting validators and the solver out of escrow, release their stake. Only a unit
    ///      of the oldest phase not yet Final: an earlier phase's unit could still be overturned, voiding this one.
    function settle(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        uint256 bond,
        uint256 fee
    ) internal {
        Job storage j = s.jobs[u.jobId];
        // INVARIANT: nobody is paid for work built on results that can still be overturned.
        if (Phases.ofUnit(j, u) != j.settling) revert ITaskPool.EarlierPhaseUnsettled(unitId, j.settling);
        uint256 vPay = s.panels[unitId].payAccepting(s.books, j, registry, u.nValidators, bond, fee);
        // INVARIANT: the solver is paid its declared price, never more than the job's maximum.
        uint256 pay = u.price;
        s.books.pay(j, u.solver, pay);
        registry.unlockCompleted(u.solver, j.p.collateralPerUnit);
        u.status = UnitStatus.Final;
        emit ITaskPool.UnitFinalized(unitId, u.solver, pay, vPay);
        --j.live;
        // The last unit of its phase: the next phase is paid (linked: once per phase). While a phase has units
        // left, its job has units in flight: nothing to refund here even if cancelled.
        if (--j.unsettled == 0) Phases.phaseSettled(s, u.jobId);
    }

    /// @dev Back to Open for another solver (or Cancelled when its job was cancelled), validators cleared.
    ///      `committed`: the unit had been Committed, so later phases may have been opened on it (`passed`: and
    ///      Verified): they are voided.
    function reopen(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        Job storage j,
        bool committed,
        bool passed
    ) internal {
        s.panels[unitId].clear(u.nValidators);
        u.nValidators = 0;
        u.solver = address(0);
        u.drawn = false;
        u.committed = 0;
        u.revealed = 0;
        u.opener = address(0);
        // The next solver starts from nothing of this attempt: no root to recommit, no seed to reuse.
        u.checkpointRoot = bytes32(0);
        u.seed = bytes32(0);
        delete s.avail[unitId]; // reports and claims were about the failed attempt
        if (committed) Phases.overturned(s, registry, u.jobId, Phases.ofUnit(j, u), passed);
        if (j.status == JobStatus.Cancelled) {
            u.status = UnitStatus.Cancelled;
            --j.live;
            emit ITaskPool.UnitCancelled(unitId);
            if (Phases.ofUnit(j, u) == j.settling && --j.unsettled == 0) Phases.phaseSettled(s, u.jobId);
            else Phases.refundIfDone(s, j);
            return;
        }
        u.status = UnitStatus.Open;
        u.openedAt = uint64(block.timestamp);
        emit ITaskPool.UnitReopened(unitId);
    }

    /// @dev Unit `unitId` as `ITaskPool.getUnit` returns it.
    function toUnit(PoolState storage s, uint256 unitId) internal view returns (Unit memory x) {
        StoredUnit storage u = s.units[unitId];
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
        x.revealDeadline = u.commitDeadline == 0 ? 0 : u.commitDeadline + s.params.revealWindow;
        x.drawn = u.drawn;
        x.committed = u.committed;
        x.revealed = u.revealed;
        x.checkpointRoot = u.checkpointRoot;
        x.seed = u.seed;
        x.opener = u.opener;
        x.challenger = u.challenger;
        x.disputeId = u.disputeId;
        x.validators = s.panels[unitId].members(u.nValidators);
    }

    /// @dev Job `jobId`; reverts if it does not exist.
    function job(PoolState storage s, uint256 jobId) internal view returns (Job storage j) {
        j = s.jobs[jobId];
        if (j.status == JobStatus.None) revert ITaskPool.UnknownJob(jobId);
    }

    /// @dev Unit `unitId`, which must be in state `want`.
    function unitIn(PoolState storage s, uint256 unitId, UnitStatus want) internal view returns (StoredUnit storage u) {
        u = s.units[unitId];
        if (u.status == UnitStatus.None) revert ITaskPool.UnknownUnit(unitId);
        // INVARIANT: every transition starts from the state it is defined for.
        if (u.status != want) revert ITaskPool.BadUnitStatus(unitId, uint8(u.status), uint8(want));
    }

    /// @dev Number of checkpoint segments of the unit (1 for aggregation units).
    function numSegments(PoolState storage s, StoredUnit storage u) internal view returns (uint256) {
        if (u.shard == AGGREGATION) return 1;
        return s.jobs[u.jobId].p.segments;
    }
}
