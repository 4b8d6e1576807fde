// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {PoolParams, SegmentLeaf, UnitStatus} from "../types/Types.sol";
import {Availability, Books, Job, Panel, PoolState, StoredUnit} from "../types/Pool.sol";
import {Ledger} from "./Ledger.sol";
import {Segments} from "./Segments.sol";
import {Units} from "./Units.sol";
import {Verdicts} from "./Verdicts.sol";

/// @title DataAvailability: rejecting a unit whose data was withheld (issue 11, attacks 4 and 9).
/// @notice A reject needs the solver's Merkle proof, so a solver that commits a root with nothing published
///         behind it could not be rejected. Here a drawn validator reveals a sealed "unavailable" verdict (a
///         reject whose transcriptHash is `Verdicts.UNAVAILABLE`) and the requester of a Verified unit can claim
///         its model is missing; either way the solver must post the leaves (and where the data is) within the
///         reveal window or lose its collateral as for fraud, and the unit reopens (docs/contracts.md).
/// @dev Cold path: deployed once, linked into TaskPool and run by DELEGATECALL on its storage.
library DataAvailability {
    using Ledger for Books;
    using Verdicts for Panel;

    /// @dev `slot` of the requester's claim (validator slots are 0..254).
    uint256 internal constant REQUESTER_SLOT = 255;

    /// @notice Slot i revealed its sealed "unavailable": record it and start (or extend) the solver's answer
    ///         window. The validator is not a no-show.
    function report(PoolState storage s, uint256 unitId, uint256 i) external {
        StoredUnit storage u = s.units[unitId];
        Availability storage a = s.avail[unitId];
        s.panels[unitId].setState(i, Verdicts.UNAVAILABLE);
        ++a.pending; // <= nValidators <= 255
        uint64 by = uint64(block.timestamp) + s.params.revealWindow;
        if (by > a.answerBy) a.answerBy = by;
        uint256 seg = Segments.segmentIndex(u.seed, i, Units.numSegments(s, u), u.nValidators);
        emit ITaskPool.UnavailabilityReported(unitId, msg.sender, i, seg, a.answerBy);
    }

    /// @notice The requester of Verified unit `unitId` could not download its model: suspend the challenge end
    ///         (finalize waits) until the solver answers, or is slashed after `answerBy`.
    function claim(PoolState storage s, uint256 unitId) external {
        StoredUnit storage u = Units.unitIn(s, unitId, UnitStatus.Verified);
        Job storage j = s.jobs[u.jobId];
        if (msg.sender != j.requester) revert ITaskPool.NotRequester(u.jobId, msg.sender);
        // INVARIANT: a claim only before the unit could be final, once per attempt (no endless suspension).
        if (block.timestamp > u.deadline) revert ITaskPool.DeadlinePassed(unitId, u.deadline);
        Availability storage a = s.avail[unitId];
        if (a.claimed) revert ITaskPool.AlreadyClaimed(unitId);
        a.claimed = true;
        a.claimPending = true;
        a.resume = u.deadline;
        a.answerBy = uint64(block.timestamp) + s.params.revealWindow;
        u.deadline = type(uint64).max; // finalize reverts DeadlineNotReached until answered
        emit ITaskPool.UnavailabilityClaimed(unitId, msg.sender, a.answerBy);
    }

    /// @notice The solver answers slot `slot`'s report (or the requester's claim) with the leaf of the slot's
    ///         segment and of the last segment, both proven against its committed root.
    function answer(PoolState storage s, uint256 unitId, uint256 slot, bytes calldata encoded) external {
        (SegmentLeaf memory seg, SegmentLeaf memory last, string memory cids) = abi.decode(
            encoded,
            (SegmentLeaf, SegmentLeaf, string)
        );
        StoredUnit storage u = s.units[unitId];
        if (u.status == UnitStatus.None) revert ITaskPool.UnknownUnit(unitId);
        // INVARIANT: only the unit's solver answers for its data.
        if (msg.sender != u.solver) revert ITaskPool.NotSolver(unitId, msg.sender);
        (uint256 want, uint64 by) = _settleReport(s, unitId, u, slot);
        uint256 segs = Units.numSegments(s, u);
        _check(u, unitId, seg, want, segs);
        _check(u, unitId, last, segs - 1, segs);
        emit ITaskPool.UnavailabilityAnswered(unitId, slot, seg.index, seg.startHash, last.endHash, by, cids);
    }

    /// @dev Mark slot `slot`'s report (or the requester's claim) answered; returns the segment the answer must
    ///      prove and the new deadline (the reporter's `revealBy`, or the requester's challenge end).
    function _settleReport(
        PoolState storage s,
        uint256 unitId,
        StoredUnit storage u,
        uint256 slot
    ) private returns (uint256 want, uint64 by) {
        Availability storage a = s.avail[unitId];
        uint256 segs = Units.numSegments(s, u);
        by = uint64(block.timestamp) + s.params.revealWindow;
        if (slot == REQUESTER_SLOT) {
            if (!a.claimPending || u.status != UnitStatus.Verified) revert ITaskPool.NotReported(unitId, slot);
            _inTime(a, unitId);
            a.claimPending = false;
            // The requester gets a reveal window to download before the unit can be final.
            if (a.resume > by) by = a.resume;
            u.deadline = by;
            return (segs - 1, by);
        }
        Panel storage v = s.panels[unitId];
        if (slot >= u.nValidators || v.stateOf(slot) != Verdicts.UNAVAILABLE) {
            revert ITaskPool.NotReported(unitId, slot);
        }
        _inTime(a, unitId);
        // An answered reporter never has less time to reveal than the rest of the panel.
        uint64 floor = u.commitDeadline + s.params.revealWindow;
        if (floor > by) by = floor;
        v.setState(slot, Verdicts.ANSWERED);
        --a.pending;
        if (by > a.revealBy) a.revealBy = by;
        return (Segments.segmentIndex(u.seed, slot, segs, u.nValidators), by);
    }

    function _inTime(Availability storage a, uint256 unitId) private view {
        // INVARIANT: an answer comes by the answer deadline, or the report stands and the solver is slashed.
        if (block.timestamp > a.answerBy) revert ITaskPool.DeadlinePassed(unitId, a.answerBy);
    }

    /// @notice `closeVerdicts`: slash a solver that left a report or claim unanswered past its deadline;
    ///         otherwise, once every deadline passed, penalise no-shows and verify.
    function close(PoolState storage s, INodeRegistry registry, uint256 unitId) external {
        StoredUnit storage u = s.units[unitId];
        Availability storage a = s.avail[unitId];
        if (u.status == UnitStatus.Verified && a.claimPending) {
            if (block.timestamp <= a.answerBy) revert ITaskPool.DeadlineNotReached(unitId, a.answerBy);
            _withheld(s, registry, unitId, u);
            return;
        }
        u = Units.unitIn(s, unitId, UnitStatus.Committed);
        if (!u.drawn) revert ITaskPool.NotDrawn(unitId);
        PoolParams storage c = s.params;
        uint64 until = u.commitDeadline + c.revealWindow;
        // INVARIANT: never verified while a report is pending or an answered reporter may still reveal.
        if (a.pending != 0 && a.answerBy > until) until = a.answerBy;
        if (a.pending == 0 && a.revealBy > until) until = a.revealBy;
        if (block.timestamp <= until) revert ITaskPool.DeadlineNotReached(unitId, until);
        if (a.pending != 0) {
            _withheld(s, registry, unitId, u);
            return;
        }
        Verdicts.penaliseNoShows(s, registry, unitId, u);
        Units.verify(s, u, unitId, c.challengeWindow);
    }

    /// @dev `leaf` is segment `want` of the unit's committed root.
    function _check(
        StoredUnit storage u,
        uint256 unitId,
        SegmentLeaf memory leaf,
        uint256 want,
        uint256 segs
    ) private view {
        if (leaf.index != want) revert ITaskPool.BadSegment(unitId, leaf.index, segs);
        bytes32 node = Segments.leaf(want, leaf.startHash, leaf.endHash, leaf.transcriptCommit);
        // INVARIANT: an answer proves the leaf it points the reporter to is in the committed root.
        if (!MerkleProof.verify(leaf.proof, u.checkpointRoot, node)) {
            revert ITaskPool.InvalidSegmentProof(unitId, want);
        }
    }

    /// @dev The solver withheld its data: its whole collateral is slashed into a pot (as for proven fraud) and it
    ///      counts a fraud. Accepting validators did honest work on data they could fetch: bond back and the fee
    ///      out of the pot. Unanswered reporters share the rest (a validator report) or it goes to the requester
    ///      (a claim, or a remainder); answered reporters are released; validators that never revealed pay the
    ///      no-show penalty if the reveal deadline passed. The unit reopens for another solver.
    function _withheld(PoolState storage s, INodeRegistry registry, uint256 unitId, StoredUnit storage u) private {
        Job storage j = s.jobs[u.jobId];
        address solver = u.solver;
        uint256 collateral = j.p.collateralPerUnit;
        registry.unlock(solver, collateral);
        uint256 taken = registry.slash(solver, collateral, address(this));
        registry.recordFraud(solver);
        emit ITaskPool.DataWithheld(unitId, solver, taken);
        uint256 pot = _releasePanel(s, registry, unitId, u, taken);
        pot = _payReporters(s, registry, unitId, u.nValidators, pot);
        s.books.addCredit(j.requester, pot);
        // Committed (or, a requester's claim, Verified): a later phase may have been opened on it.
        Units.reopen(s, registry, unitId, u, j, true, u.status == UnitStatus.Verified);
    }

    /// @dev The unanswered reporters share `pot` (bond back, a completed job each); returns the rounding rest.
    function _payReporters(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        uint256 n,
        uint256 pot
    ) private returns (uint256) {
        uint256 reporters = s.avail[unitId].pending;
        if (reporters == 0) return pot;
        uint256 share = pot / reporters;
        Panel storage v = s.panels[unitId];
        for (uint256 i; i < n; ++i) {
            (address who, uint8 st) = v.at(i);
            if (st != Verdicts.UNAVAILABLE) continue;
            s.books.addCredit(who, share);
            pot -= share;
            registry.unlockCompleted(who, s.params.validatorBond);
        }
        return pot;
    }

    /// @dev Release every slot but the unanswered reporters; returns the pot less the accepting validators' fees.
    function _releasePanel(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        uint256 pot
    ) private returns (uint256) {
        Panel storage v = s.panels[unitId];
        uint256 bond = s.params.validatorBond;
        bool late = block.timestamp > u.commitDeadline + s.params.revealWindow;
        for (uint256 i; i < u.nValidators; ++i) {
            (address who, uint8 st) = v.at(i);
            if (st == Verdicts.ACCEPT) {
                uint256 fee = pot < s.params.validatorFee ? pot : s.params.validatorFee;
                pot -= fee;
                s.books.addCredit(who, fee);
                registry.unlockCompleted(who, bond);
            } else if (st == Verdicts.ANSWERED) {
                Verdicts.releaseNoShow(s, registry, unitId, i, false); // its answer came; its time to reveal had not
            } else if (st <= Verdicts.COMMITTED) {
                Verdicts.releaseNoShow(s, registry, unitId, i, late);
            }
        }
        return pot;
    }
}
