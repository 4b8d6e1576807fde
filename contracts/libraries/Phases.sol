// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {JobStatus, UnitStatus} from "../types/Types.sol";
import {Books, Job, JobCore, Panel, PoolState, StoredUnit} from "../types/Pool.sol";
import {Ledger} from "./Ledger.sol";
import {Verdicts} from "./Verdicts.sol";

/// @title Phases: pipelined rounds. A job's phases open for claims when the previous one is Committed, are armed
///        when it is Verified, are paid in order, and are voided when a unit they were built on is overturned
///        (docs/contracts.md, "Pipelined rounds").
/// @notice A job's phases, in order: round 0's training units, round 0's aggregation unit (sharded jobs only),
///         round 1's training units, ... Phase k+1 is computed from phase k's committed results, so it may start
///         as soon as every unit of phase k is Verified: the challenge window of phase k then runs while phase
///         k+1 trains, instead of before it. It even opens for claims once every unit of phase k is Committed
///         (`early`): its claim auction and its solvers' work run while phase k's validators replay. It is armed
///         when phase k is all Verified; before that its units cannot commit (so nobody is drawn to replay work
///         built on unverified inputs) and cannot time out (a withheld input never costs its solver a deadline).
///         In exchange:
///         - a unit is paid only once every earlier phase is Final (`settling`), so nobody is paid for work whose
///           inputs can still be overturned;
///         - when a unit that had been Verified is overturned (proven fraud, no quorum, withheld data), every
///           later phase is voided: its solvers and validators are released unpaid and unpenalised, their units'
///           reserve returns to the job, and the phase opens anew once the overturned unit is Verified again.
/// @dev At most `MAX_AHEAD` phases run ahead of the one being paid, so voiding touches at most
///      MAX_AHEAD * MAX_SHARDS units (bounded gas) and a requester's budget is never exposed to a long chain.
///      The phase boundaries (`openFirst`, `openNext`, `phaseSettled`) and voiding (`overturned`) are external:
///      deployed once, linked and run by DELEGATECALL, once per phase rather than per unit, so TaskPool's code
///      stays small. The small helpers are internal, inlined where used.
library Phases {
    using Ledger for Books;
    using Verdicts for Panel;

    /// @dev `shard` of an aggregation unit (`Units.AGGREGATION` names this one).
    uint32 internal constant AGGREGATION = type(uint32).max;
    /// @dev How many phases may be open beyond the oldest one not yet Final. Two lets round r+1 train while round r's
    ///      training and aggregation units are both in their challenge windows.
    uint32 internal constant MAX_AHEAD = 2;

    /// @dev Phase number of (round, aggregation?) in a job of `shards` shards.
    function phaseOf(uint32 shards, uint32 round, bool agg) internal pure returns (uint32) {
        return shards > 1 ? 2 * round + (agg ? 1 : 0) : round;
    }

    /// @dev (round, aggregation?) of phase `phase` in a job of `shards` shards: `phaseOf` inverted.
    function roundOf(uint32 shards, uint32 phase) internal pure returns (uint32 round, bool agg) {
        return shards > 1 ? (phase / 2, phase % 2 == 1) : (phase, false);
    }

    /// @dev Phase number of job `j`'s newest opened phase.
    function newest(Job storage j) internal view returns (uint32) {
        return phaseOf(j.p.shards, j.round, j.aggPhase);
    }

    /// @dev Phase number of unit `u` of job `j`.
    function ofUnit(Job storage j, StoredUnit storage u) internal view returns (uint32) {
        return phaseOf(j.p.shards, u.round, u.shard == AGGREGATION);
    }

    /// @dev Number of phases of the job.
    function count(JobCore storage p) internal view returns (uint32) {
        return p.shards > 1 ? 2 * p.rounds : p.rounds;
    }

    /// @dev Units of phase `phase`: one aggregation unit, or a training unit per shard.
    function unitsIn(JobCore storage p, uint32 phase) internal view returns (uint32) {
        (, bool agg) = roundOf(p.shards, phase);
        return agg ? 1 : p.shards;
    }

    /// @dev First unit id of job `jobId`'s phase `phase` (its latest opening).
    function firstOf(PoolState storage s, uint256 jobId, uint32 phase) internal view returns (uint256) {
        return s.phaseStart[jobId][phase];
    }

    /// @notice Open job `jobId`'s first phase (at submission).
    function openFirst(PoolState storage s, uint256 jobId) external {
        Job storage j = s.jobs[jobId];
        _open(s, jobId, j, 0);
        _arm(jobId, j, 0);
    }

    /// @notice Every unit of job `jobId`'s newest armed phase is Committed (or beyond): open the next phase for
    ///         claims; or every one is Verified (or beyond): arm the next phase, opening it first if it is not open.
    ///         Only if the job is active, has a next phase, and would not run more than `MAX_AHEAD` phases ahead of
    ///         the one being paid.
    /// @dev Idempotent: once the next phase is armed, `pending` and `uncommitted` count its units.
    function openNext(PoolState storage s, uint256 jobId) external {
        _openNext(s, jobId, s.jobs[jobId]);
    }

    /// @notice Void job `jobId`'s phase opened early, if any (the job is being cancelled: it will never be armed).
    function dropEarly(PoolState storage s, INodeRegistry registry, uint256 jobId) external {
        _dropEarly(s, registry, jobId, s.jobs[jobId]);
    }

    function _dropEarly(PoolState storage s, INodeRegistry registry, uint256 jobId, Job storage j) private {
        if (!j.early) return;
        _voidPhase(s, registry, jobId, j, newest(j) + 1);
        j.early = false;
    }

    /// @notice The last unfinished unit of job `jobId`'s phase `settling` ended (Final, or Cancelled with its job):
    ///         the next phase with a unit still to pay is the one paid (`unsettled` counts those units; a phase not
    ///         opened yet counts them when it opens), and the job completes after its last phase (the rest of its
    ///         escrow back to the requester).
    function phaseSettled(PoolState storage s, uint256 jobId) external {
        Job storage j = s.jobs[jobId];
        uint32 total = count(j.p);
        // A phase opened early counts too: it opened before `settling` reached it, so `_open` did not count it.
        uint32 last = j.early ? newest(j) + 1 : newest(j);
        uint32 next = j.settling;
        uint32 left;
        // Only a cancelled job skips phases here: its units that were cancelled or voided are never paid.
        while (left == 0 && ++next < total && next <= last) {
            left = _unfinished(s, firstOf(s, jobId, next), unitsIn(j.p, next));
        }
        j.settling = next;
        j.unsettled = left;
        if (next == total) {
            if (j.status == JobStatus.Active) {
                j.status = JobStatus.Completed;
                uint256 rest = j.escrow;
                s.books.refund(j, rest);
                emit ITaskPool.JobCompleted(jobId, rest);
            }
        } else {
            _openNext(s, jobId, j); // it may have waited for this one, `MAX_AHEAD` phases back
        }
        refundIfDone(s, j);
    }

    /// @dev Units among the `n` from `first` still to be paid (not Final, Cancelled or Voided).
    function _unfinished(PoolState storage s, uint256 first, uint32 n) private view returns (uint32 k) {
        for (uint256 id = first; id < first + n; ++id) {
            UnitStatus st = s.units[id].status;
            if (st != UnitStatus.Final && st != UnitStatus.Cancelled && st != UnitStatus.Voided) ++k;
        }
    }

    function _openNext(PoolState storage s, uint256 jobId, Job storage j) private {
        if (j.status != JobStatus.Active) return;
        uint32 next = newest(j) + 1;
        if (next >= count(j.p)) return;
        bool room = next - j.settling <= MAX_AHEAD;
        if (j.pending == 0) {
            if (j.early) {
                _arm(jobId, j, next); // opened under the same bound
            } else if (room) {
                _open(s, jobId, j, next);
                _arm(jobId, j, next);
            }
        } else if (j.uncommitted == 0 && !j.early && room) {
            _open(s, jobId, j, next);
            j.early = true;
        }
    }

    /// @dev Phase `phase` (the one after the newest armed one, open) is the newest armed one now: its units may
    ///      commit, and a unit claimed before now has its commit window from now (`Units.commitBy`).
    function _arm(uint256 jobId, Job storage j, uint32 phase) private {
        (uint32 round, bool agg) = roundOf(j.p.shards, phase);
        uint32 n = unitsIn(j.p, phase);
        j.round = round;
        j.aggPhase = agg;
        j.pending = n;
        j.uncommitted = uint8(n); // none committed while unarmed; n <= MAX_SHARDS
        j.early = false;
        j.armedAt = uint64(block.timestamp);
        emit ITaskPool.PhaseArmed(jobId, round, agg);
    }

    /// @dev Open phase `phase` of job `jobId` for claims: its shards' training units or its round's aggregation
    ///      unit. `_arm` makes it the newest armed phase (at once, or once the phase before it is Verified).
    function _open(PoolState storage s, uint256 jobId, Job storage j, uint32 phase) private {
        (uint32 round, bool agg) = roundOf(j.p.shards, phase);
        uint32 n = agg ? 1 : j.p.shards;
        if (phase == j.settling) j.unsettled = n; // the phase to pay next opens only now
        j.live += n;
        j.p.unopened -= n;
        s.phaseStart[jobId][phase] = s.nextUnitId;
        for (uint32 k; k < n; ++k) {
            uint256 id = s.nextUnitId++;
            StoredUnit storage u = s.units[id];
            uint32 shard = agg ? AGGREGATION : k;
            u.jobId = uint64(jobId);
            u.round = round;
            u.shard = shard;
            u.status = UnitStatus.Open;
            u.openedAt = uint64(block.timestamp);
            emit ITaskPool.UnitOpened(id, jobId, round, shard, agg);
        }
    }

    /// @dev A cancelled job's escrow goes back to the requester once none of its units is in flight.
    function refundIfDone(PoolState storage s, Job storage j) internal {
        if (j.status == JobStatus.Cancelled && j.live == 0 && j.escrow != 0) s.books.refund(j, j.escrow);
    }

    /// @notice A unit of job `jobId`'s phase `phase` that had been Committed (`passed`: and Verified) is reopened:
    ///         every later phase, armed or opened early, was built on its overturned result and is voided; `phase`
    ///         is the newest armed phase again, waiting for it.
    function overturned(
        PoolState storage s,
        INodeRegistry registry,
        uint256 jobId,
        uint32 phase,
        bool passed
    ) external {
        Job storage j = s.jobs[jobId];
        _dropEarly(s, registry, jobId, j);
        uint32 last = newest(j);
        if (phase == last) {
            if (passed) ++j.pending;
            ++j.uncommitted;
            return;
        }
        for (uint32 q = last; q > phase; --q) {
            _voidPhase(s, registry, jobId, j, q);
        }
        (j.round, j.aggPhase) = roundOf(j.p.shards, phase);
        // Every other unit of `phase` is Verified or beyond: a later phase had been armed. (Only the newest armed
        // phase has units Committed and not Verified, so a unit of an earlier one had `passed`.)
        j.pending = 1;
        j.uncommitted = 1;
    }

    /// @dev Void every unit of phase `q` (none is Final: only phase `settling` and earlier are paid). Their reserve
    ///      returns to the job's unopened units; the phase opens anew later.
    function _voidPhase(PoolState storage s, INodeRegistry registry, uint256 jobId, Job storage j, uint32 q) private {
        uint256 first = firstOf(s, jobId, q);
        uint32 n = unitsIn(j.p, q);
        for (uint256 id = first; id < first + n; ++id) {
            StoredUnit storage u = s.units[id];
            UnitStatus st = u.status;
            if (st == UnitStatus.Cancelled || st == UnitStatus.Voided) continue;
            if (st == UnitStatus.Disputed) {
                // Its resolver still decides who lied (`Disputes.settle`); the unit ends Voided then, unpaid.
                s.voided[id] = true;
                continue;
            }
            if (st != UnitStatus.Open) release(s, registry, id, u, j.p.collateralPerUnit);
            end(s, id, u, j);
        }
        if (j.status == JobStatus.Active) j.p.unopened += n;
    }

    /// @dev Unit `unitId` -> Voided, out of its job's units in flight.
    function end(PoolState storage s, uint256 unitId, StoredUnit storage u, Job storage j) internal {
        u.status = UnitStatus.Voided;
        --j.live;
        emit ITaskPool.UnitVoided(unitId);
        refundIfDone(s, j);
    }

    /// @dev Release a voided unit's solver (`collateral`, 0 when already slashed or released) and every validator
    ///      bond still locked on it, unpaid and unpenalised: they worked on inputs that turned out to be a fraud.
    function release(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        uint256 collateral
    ) internal {
        if (collateral != 0) registry.unlock(u.solver, collateral);
        Panel storage v = s.panels[unitId];
        uint256 bond = s.params.validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address who, uint8 st) = v.at(i);
            if (st != Verdicts.SKIPPED) registry.unlock(who, bond);
        }
        v.clear(n);
        u.nValidators = 0;
        delete s.avail[unitId];
    }
}
