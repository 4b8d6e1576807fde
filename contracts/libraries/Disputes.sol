// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IDisputeResolver} from "../interfaces/IDisputeResolver.sol";
import {INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {Outcome, PoolParams, UnitStatus} from "../types/Types.sol";
import {Books, Job, Panel, PoolState, StoredUnit} from "../types/Pool.sol";
import {Ledger} from "./Ledger.sol";
import {Units} from "./Units.sol";
import {Verdicts} from "./Verdicts.sol";

/// @title Disputes: opening a dispute over a unit and settling the resolver's outcome.
/// @dev The cold path of TaskPool: deployed once, linked into TaskPool and run by DELEGATECALL on its
///      storage, so events and money moves come from TaskPool. The resolver decides; this moves the money
///      (the outcome table is in docs/contracts.md).
library Disputes {
    using Ledger for Books;
    using Verdicts for Panel;

    uint8 internal constant CHALLENGER = 4; // NodeRegistry role bit

    /// @notice Check a challenge by the caller of verified unit `unitId`'s segment `segmentIndex` and hold its
    ///         bond; the pool then pulls the bond and opens the dispute.
    function challenge(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        uint256 segmentIndex
    ) external returns (uint256 bond) {
        StoredUnit storage u = Units.unitIn(s, unitId, UnitStatus.Verified);
        if (registry.rolesOf(msg.sender) & CHALLENGER == 0 || msg.sender == u.solver) {
            revert ITaskPool.MissingRole(msg.sender, CHALLENGER);
        }
        // INVARIANT: challenges only inside the window, so payouts after it are final.
        if (block.timestamp > u.deadline) revert ITaskPool.DeadlinePassed(unitId, u.deadline);
        uint256 segs = Units.numSegments(s, u);
        if (segmentIndex >= segs) revert ITaskPool.BadSegment(unitId, segmentIndex, segs);
        bond = s.params.challengeBond;
        s.books.holdBond(bond);
        u.challenger = msg.sender;
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
        uint256 id = resolver.openDispute(unitId, s.jobs[u.jobId].p.deviceClass, u.solver, opener);
        u.disputeId = id;
        emit ITaskPool.UnitDisputed(unitId, id, opener, segmentIndex);
    }

    /// @notice Settle the resolver's `outcome` for disputed unit `unitId`: slash the losing side into a pot,
    ///         share `committeeRewardBps` of it among `winners` and credit the rest to the winning side;
    ///         then pay the unit (solver honest) or reopen it (fraud, no quorum).
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
        uint256 pot;
        address beneficiary;
        s.panels[unitId].releaseNoShows(registry, unitId, u.nValidators, c.validatorBond);
        if (outcome == Outcome.SolverFraud) {
            pot = _punishSolverSide(s, registry, unitId, u, j, c);
            beneficiary = u.opener;
        } else if (outcome == Outcome.SolverHonest) {
            pot = _punishAccusers(s, registry, unitId, u, c);
            beneficiary = u.solver;
        } else {
            _releaseAll(s, registry, unitId, u, j, c);
        }
        if (pot != 0) {
            uint256 share = winners.length == 0 ? 0 : (pot * c.committeeRewardBps) / 10_000 / winners.length;
            for (uint256 k; k < winners.length; ++k) {
                s.books.addCredit(winners[k], share);
            }
            s.books.addCredit(beneficiary, pot - share * winners.length);
        }
        emit ITaskPool.DisputeSettled(unitId, uint8(outcome), pot);
        if (outcome == Outcome.SolverHonest) {
            Units.settle(s, registry, unitId, u, c.validatorBond, c.validatorFee);
        } else {
            Units.reopen(s, unitId, u, j);
        }
    }

    /// @dev Fraud: slash the solver's collateral and the accepting validators' bonds into the pot, jail them;
    ///      the rejecting validators get their bonds back and a completed unit.
    function _punishSolverSide(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        Job storage j,
        PoolParams memory c
    ) private returns (uint256 pot) {
        uint256 collateral = j.p.collateralPerUnit;
        registry.unlock(u.solver, collateral);
        pot = registry.slash(u.solver, collateral, address(this));
        registry.recordFraud(u.solver);
        Panel storage v = s.panels[unitId];
        uint256 bond = c.validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address who, uint8 st) = v.at(i);
            if (st == Verdicts.ACCEPT) {
                registry.unlock(who, bond);
                pot += registry.slash(who, bond, address(this));
                registry.recordFraud(who);
            } else if (st == Verdicts.REJECT) {
                registry.unlock(who, bond);
                registry.recordCompleted(who);
            }
        }
        _returnChallengeBond(s.books, u, c.challengeBond);
    }

    /// @dev Solver honest: slash the rejecting validators' bonds and a challenger's bond into the pot.
    function _punishAccusers(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        PoolParams memory c
    ) private returns (uint256 pot) {
        Panel storage v = s.panels[unitId];
        uint256 bond = c.validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address who, uint8 st) = v.at(i);
            if (st != Verdicts.REJECT) continue;
            registry.unlock(who, bond);
            pot += registry.slash(who, bond, address(this));
            registry.recordMissed(who);
            v.setState(i, Verdicts.SKIPPED);
        }
        if (u.challenger != address(0)) {
            uint256 b = c.challengeBond;
            // INVARIANT: a lost challenge bond leaves the bond pool and enters the pot credited by the caller.
            s.books.releaseBond(b);
            pot += b;
            u.challenger = address(0);
        }
    }

    /// @dev No decision: everyone's stake and the challenger's bond come back; nobody is paid or slashed.
    function _releaseAll(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u,
        Job storage j,
        PoolParams memory c
    ) private {
        Panel storage v = s.panels[unitId];
        uint256 bond = c.validatorBond;
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            (address who, uint8 st) = v.at(i);
            if (st != Verdicts.SKIPPED) registry.unlock(who, bond);
        }
        registry.unlock(u.solver, j.p.collateralPerUnit);
        _returnChallengeBond(s.books, u, c.challengeBond);
    }

    function _returnChallengeBond(Books storage b, StoredUnit storage u, uint256 bond) private {
        if (u.challenger == address(0)) return;
        b.releaseBond(bond);
        b.addCredit(u.challenger, bond);
        u.challenger = address(0);
    }
}
