// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IDisputeResolver} from "../interfaces/IDisputeResolver.sol";
import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {Outcome, PoolParams, UnitStatus} from "../types/Types.sol";
import {Books, Job, JobCore, Panel, PoolState, StoredUnit} from "../types/Pool.sol";
import {Ledger} from "./Ledger.sol";
import {Phases} from "./Phases.sol";
import {Units} from "./Units.sol";
import {Segments} from "./Segments.sol";
import {Verdicts} from "./Verdicts.sol";

/// @title Disputes: opening a dispute over a unit and settling the resolver's outcome.
/// @dev The cold path of TaskPool: deployed once, linked into TaskPool and run by DELEGATECALL on its
///      storage, so events and money moves come from TaskPool. The resolver decides; this moves the money
///      (the outcome table is in docs/contracts.md).
library Disputes {
    using Ledger for Books;
    using Verdicts for Panel;

    uint8 internal constant CHALLENGER = 4; // NodeRegistry role bit

    /// @notice Seal the caller's challenge `h` of verified unit `unitId` (see `ITaskPool.commitChallenge`).
    function seal(PoolState storage s, INodeRegistry registry, uint256 unitId, bytes32 h) external {
        _challengeable(s, registry, unitId);
        s.challengeSeals[h] = block.number;
        emit ITaskPool.ChallengeSealed(unitId, msg.sender, h);
    }

    /// @notice Check the caller's revealed challenge of verified unit `unitId`'s segment `segmentIndex` and hold
    ///         its bond; the pool then pulls the bond and opens the dispute.
    function challenge(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        uint256 segmentIndex,
        bytes32 salt
    ) external returns (uint256 bond) {
        StoredUnit storage u = _challengeable(s, registry, unitId);
        bytes32 h = keccak256(abi.encode(unitId, msg.sender, segmentIndex, salt));
        uint256 sealedAt = s.challengeSeals[h];
        // INVARIANT: a challenge is revealed only by who sealed it, in an earlier block: copying a challenge seen
        // in the mempool (to front-run the challenger's reward) needs a seal made before it was seen.
        if (sealedAt == 0 || sealedAt >= block.number) revert ITaskPool.ChallengeNotSealed(unitId, msg.sender);
        delete s.challengeSeals[h];
        // INVARIANT: a dispute never cuts short the requester's pending unavailability claim (settled honest,
        // it would pay a solver that never answered it); the window reopens once the solver answers.
        if (s.avail[unitId].claimPending) revert ITaskPool.DeadlineNotReached(unitId, s.avail[unitId].answerBy);
        uint256 segs = Units.numSegments(s, u);
        if (segmentIndex >= segs) revert ITaskPool.BadSegment(unitId, segmentIndex, segs);
        bond = s.params.challengeBond;
        s.books.holdBond(bond);
        u.challenger = msg.sender;
    }

    /// @dev Verified unit `unitId`, inside its challenge window, challengeable by the caller (challenger role,
    ///      not its solver).
    function _challengeable(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId
    ) private view returns (StoredUnit storage u) {
        u = Units.unitIn(s, unitId, UnitStatus.Verified);
        if (registry.rolesOf(msg.sender) & CHALLENGER == 0 || msg.sender == u.solver) {
            revert ITaskPool.MissingRole(msg.sender, CHALLENGER);
        }
        if (s.jobs[u.jobId].p.exact) _checkClass(s, registry, unitId);
        // INVARIANT: challenges only inside the window, so payouts after it are final.
        if (block.timestamp > u.deadline) revert ITaskPool.DeadlinePassed(unitId, u.deadline);
    }

    /// @dev An exact unit is challenged only from its solver's replay class: another class's replay differs in
    ///      the last bits from honest work, and its challenge would only cost an honest challenger its bond.
    function _checkClass(PoolState storage s, INodeRegistry registry, uint256 unitId) private view {
        bytes32 need = s.unitClass[unitId];
        bytes32 have = registry.replayClassOf(msg.sender);
        // INVARIANT: an exact unit is judged (validated, challenged, voted on) only within its solver's class.
        if (have != need) revert ITaskPool.WrongReplayClass(msg.sender, have, need);
    }

    /// @notice Unit `unitId` -> Disputed: `opener` (a rejecting validator or a challenger) disputes `segmentIndex`.
    function open(
        PoolState storage s,
        IDisputeResolver resolver,
        uint256 unitId,
        address opener,
        uint256 segmentIndex
    ) external {
        StoredUnit storage u = s.units[unitId];
        u.status = UnitStatus.Disputed;
        u.opener = opener;
        u.disputedSegment = uint16(segmentIndex); // < MAX_SEGMENTS (4096), checked by the callers
        JobCore storage p = s.jobs[u.jobId].p;
        // INVARIANT: an exact unit's committee comes from its solver's replay class at claim only.
        bytes32 replayClass = p.exact ? s.unitClass[unitId] : bytes32(0);
        uint256 id = resolver.openDispute(unitId, segmentIndex, p.deviceClass, replayClass, u.solver, opener);
        u.disputeId = id;
        emit ITaskPool.UnitDisputed(unitId, id, opener, segmentIndex);
    }

    /// @notice Settle the resolver's `outcome` for disputed unit `unitId`: slash the losing side into a pot,
    ///         share `committeeRewardBps` of it among `winners` and credit the rest to the winning side;
    ///         then pay the unit (solver honest) or reopen it (fraud, no quorum). A unit voided while its dispute
    ///         was in flight (`Phases`) ends Voided instead: its liars pay as above, nobody is paid from escrow.
    /// @dev A validator answers only for the segment it was drawn for (see `_judge`).
    function settle(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        Outcome outcome,
        address[] calldata winners
    ) external {
        PoolParams memory c = s.params;
        StoredUnit storage u = Units.unitIn(s, unitId, UnitStatus.Disputed);
        Job storage j = s.jobs[u.jobId];
        // Only a challenge disputes a Verified unit (a validator's reject disputes a Committed one): whether later
        // phases may have been built on it. Read before the bond moves clear it.
        bool passed = u.challenger != address(0);
        uint256 pot;
        address beneficiary;
        if (outcome == Outcome.SolverFraud) {
            uint256 collateral = j.p.collateralPerUnit;
            registry.unlock(u.solver, collateral);
            pot = registry.slash(u.solver, collateral, address(this));
            registry.recordFraud(u.solver);
            _returnChallengeBond(s.books, u, c.challengeBond);
            beneficiary = u.opener;
        } else if (outcome == Outcome.SolverHonest) {
            pot = _takeChallengeBond(s.books, u, c.challengeBond);
            beneficiary = u.solver;
        } else {
            registry.unlock(u.solver, j.p.collateralPerUnit);
            _returnChallengeBond(s.books, u, c.challengeBond);
        }
        pot = _judge(s, registry, unitId, u, outcome, pot);
        if (pot != 0) _share(s.books, pot, c.committeeRewardBps, winners, beneficiary);
        emit ITaskPool.DisputeSettled(unitId, uint8(outcome), pot);
        _close(s, registry, unitId, u, outcome, passed);
    }

    /// @dev The unit after its dispute: voided (unpaid), paid or verified (honest), or reopened.
    function _close(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        Outcome outcome,
        bool passed
    ) private {
        Job storage j = s.jobs[u.jobId];
        PoolParams storage c = s.params;
        if (s.voided[unitId]) {
            delete s.voided[unitId];
            // Honest: the solver's collateral is still locked, and so are the accepting validators' bonds.
            Phases.release(s, registry, unitId, u, outcome == Outcome.SolverHonest ? j.p.collateralPerUnit : 0);
            Phases.end(s, unitId, u, j);
        } else if (outcome == Outcome.SolverHonest) {
            Units.honest(s, registry, unitId, u, passed, c.validatorBond, c.validatorFee);
        } else {
            Units.reopen(s, registry, unitId, u, j, true, passed);
        }
    }

    /// @dev `rewardBps` of `pot` shared among `winners`, the rest credited to `beneficiary`.
    function _share(
        Books storage b,
        uint256 pot,
        uint256 rewardBps,
        address[] calldata winners,
        address beneficiary
    ) private {
        uint256 share = winners.length == 0 ? 0 : (pot * rewardBps) / 10_000 / winners.length;
        for (uint256 k; k < winners.length; ++k) {
            b.addCredit(winners[k], share);
        }
        b.addCredit(beneficiary, pot - share * winners.length);
    }

    /// @dev Each drawn validator answers for its own segment only; returns the pot grown by what it lost.
    ///      Fraud proven on segment d: whoever accepted d is slashed and jailed, whoever sealed a verdict on d
    ///      and never revealed it is slashed (it neither reported nor cleared the fraud it was drawn to check);
    ///      an accept of another segment was honest work: bond back and the fee out of the pot; a reject is
    ///      released. Solver honest: a reject is slashed; accepts are paid by the settlement. No decision:
    ///      everyone is released. Otherwise a validator that never sealed, or never revealed, pays the no-show
    ///      penalty (to the requester) once the reveal deadline passed. Settling before that deadline while a
    ///      sealed verdict is unrevealed reverts: the resolver retries after it.
    function _judge(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        Outcome outcome,
        uint256 pot
    ) private returns (uint256) {
        uint256 segs = Units.numSegments(s, u);
        uint64 revealDeadline = u.commitDeadline + s.params.revealWindow;
        bool late = block.timestamp > revealDeadline;
        for (uint256 i; i < u.nValidators; ++i) {
            uint8 st = s.panels[unitId].stateOf(i);
            if (st == Verdicts.SKIPPED) continue;
            // INVARIANT: a sealed verdict is judged only once its owner could no longer reveal it.
            if (st == Verdicts.COMMITTED && !late) revert ITaskPool.DeadlineNotReached(unitId, revealDeadline);
            bool onDisputed = Segments.segmentIndex(u.seed, i, segs, u.nValidators) == u.disputedSegment;
            pot = _judgeSlot(s, registry, unitId, i, outcome, onDisputed, late, pot);
        }
        return pot;
    }

    /// @dev One validator's part of `_judge`: slot i.
    function _judgeSlot(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        uint256 i,
        Outcome outcome,
        bool onDisputed,
        bool late,
        uint256 pot
    ) private returns (uint256) {
        (address who, uint8 st) = s.panels[unitId].at(i);
        if (st == Verdicts.UNAVAILABLE || st == Verdicts.ANSWERED) {
            // Reported the data unavailable: the dispute supersedes the report, which costs nobody anything.
            Verdicts.releaseNoShow(s, registry, unitId, i, false);
            return pot;
        }
        if (outcome == Outcome.SolverFraud && onDisputed && st != Verdicts.REJECT && st != Verdicts.NONE) {
            // Accepted the proven fraud, or sealed a verdict on it and kept it hidden to the end.
            pot += _slashValidator(s, registry, who);
            if (st == Verdicts.ACCEPT) registry.recordFraud(who);
            else registry.recordMissed(who);
        } else if (outcome == Outcome.SolverHonest && st == Verdicts.REJECT) {
            pot += _slashValidator(s, registry, who);
            registry.recordMissed(who);
        } else if (st <= Verdicts.COMMITTED) {
            Verdicts.releaseNoShow(s, registry, unitId, i, late);
            return pot;
        } else if (outcome == Outcome.SolverFraud) {
            // An honest accept of another segment, or a reject: released, and an accept paid out of the pot.
            uint256 fee = st == Verdicts.ACCEPT ? (pot < s.params.validatorFee ? pot : s.params.validatorFee) : 0;
            pot -= fee;
            s.books.addCredit(who, fee);
            registry.unlock(who, s.params.validatorBond);
            registry.recordCompleted(who);
        } else if (outcome == Outcome.NoQuorum) {
            registry.unlock(who, s.params.validatorBond);
        } else {
            return pot; // solver honest and an accept: `Units.settle` pays it
        }
        s.panels[unitId].setState(i, Verdicts.SKIPPED);
        return pot;
    }

    /// @dev Unlock and slash `who`'s validator bond to the pool; returns what was taken.
    function _slashValidator(PoolState storage s, INodeRegistry registry, address who) private returns (uint256) {
        uint256 bond = s.params.validatorBond;
        registry.unlock(who, bond);
        return registry.slash(who, bond, address(this));
    }

    /// @dev Solver honest: a challenger's bond is lost to the pot.
    function _takeChallengeBond(Books storage b, StoredUnit storage u, uint256 bond) private returns (uint256) {
        if (u.challenger == address(0)) return 0;
        // INVARIANT: a lost challenge bond leaves the bond pool and enters the pot credited by the caller.
        b.releaseBond(bond);
        u.challenger = address(0);
        return bond;
    }

    function _returnChallengeBond(Books storage b, StoredUnit storage u, uint256 bond) private {
        if (u.challenger == address(0)) return;
        b.releaseBond(bond);
        b.addCredit(u.challenger, bond);
        u.challenger = address(0);
    }
}
