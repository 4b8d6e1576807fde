// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {DRAW_WEIGHT_SCALE, INodeRegistry} from "../interfaces/INodeRegistry.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {Books, Job, JobCore, Panel, PoolState, StoredUnit} from "../types/Pool.sol";
import {Ledger} from "./Ledger.sol";
import {Segments} from "./Segments.sol";

/// @title Verdicts: a unit's validator slots and the sealed commit/reveal verdict game.
/// @dev Slot i of a unit's `Panel` holds the validator's address and its verdict state, so reading who
///      a validator is and what it said is one SLOAD. The unit counts slots in `nValidators`.
library Verdicts {
    using Ledger for Books;

    uint8 internal constant NONE = 0;
    uint8 internal constant COMMITTED = 1;
    uint8 internal constant ACCEPT = 2;
    uint8 internal constant REJECT = 3;
    uint8 internal constant SKIPPED = 4;
    /// @dev Revealed "unavailable": waiting for the solver's answer (`DataAvailability`).
    uint8 internal constant UNAVAILABLE = 5;
    /// @dev Its report was answered: reveals its real verdict, unsealed, by the unit's `revealBy`.
    uint8 internal constant ANSWERED = 6;
    /// @notice transcriptHash of a sealed "unavailable" verdict (a reject without a proof): the validator could
    ///         not fetch its segment's start checkpoint, the manifest or the final checkpoint.
    bytes32 internal constant UNAVAILABLE_MARK = keccak256("gensyn.verdict.unavailable");
    /// @dev Most candidates a draw sweeps after its random picks.
    uint256 internal constant SWEEP_LIMIT = 64;

    /// @dev The validator set a unit's validators (and its dispute committee) are drawn from, as a registry set
    ///      key (`INodeRegistry.validatorCountIn`): the job's device class for a repro unit, the replay class
    ///      its solver had at claim for an exact unit (only that class replays exact-mode bits identically).
    function candidateSet(PoolState storage s, JobCore storage p, uint256 unitId) internal view returns (bytes32) {
        // INVARIANT: an exact unit is only ever judged by validators of its solver's replay class at claim.
        return p.exact ? s.unitClass[unitId] : bytes32(uint256(p.deviceClass));
    }

    /// @dev Draws up to `want` distinct validators of the registry set `set` (`candidateSet`; not the solver, free
    ///      stake >= bond, in the set with its current weight since block `frozenAt` or before), locks their bonds
    ///      and fills the panel's slots. Each pick is kept with probability weight / DRAW_WEIGHT_SCALE (rejection
    ///      sampling: odds proportional to bonded stake up to the registry's `weightCap`, so twenty one-minimum
    ///      sybils weigh what one validator with the same total stake weighs). Bounded to 4 * want random picks
    ///      and a sweep of at most `SWEEP_LIMIT` candidates at the same odds, so fewer may be drawn (the unit then
    ///      waits and draws again). `gensyn_py/chain/draw.py` `draw_validators` is the same rule in Python.
    /// @dev `frozenAt` is the unit's claim block, before any randomness of its draw exists: a node that entered
    ///      the set, or whose stake moved, after it is not a candidate, however often the seed is re-targeted, so
    ///      nobody can join, top up, or flood the set to make a draw fail, once the seed is known, to be drawn.
    function draw(
        Panel storage v,
        INodeRegistry registry,
        bytes32 seed,
        bytes32 set,
        address solver,
        uint256 want,
        uint256 bond,
        uint256 frozenAt
    ) internal returns (address[] memory picked) {
        uint256 n = registry.validatorCountIn(set);
        picked = new address[](want);
        uint256 count;
        for (uint256 a; n > 0 && count < want && a < want * 4 + (n < SWEEP_LIMIT ? n : SWEEP_LIMIT); ++a) {
            address who = _candidate(registry, set, seed, a, want, n, frozenAt);
            if (who == address(0) || who == solver || _contains(picked, count, who)) continue;
            if (!registry.tryLock(who, bond)) continue;
            v.slots[count] = uint256(uint160(who));
            picked[count++] = who;
        }
        // Trim the array to the validators actually drawn.
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            mstore(picked, count)
        }
    }

    /// @dev Seal slot i's verdict commitment `h` (before the commit deadline, once).
    function seal(Panel storage v, StoredUnit storage u, uint256 unitId, uint256 i, bytes32 h) internal {
        // INVARIANT: a validator seals one verdict, before the commit deadline.
        if (block.timestamp > u.commitDeadline) revert ITaskPool.DeadlinePassed(unitId, u.commitDeadline);
        if (stateOf(v, i) != NONE) revert ITaskPool.VerdictAlreadyGiven(unitId, msg.sender);
        v.commits[i] = h;
        setState(v, i, COMMITTED);
        ++u.committed;
        emit ITaskPool.VerdictCommitted(unitId, msg.sender);
    }

    /// @dev The caller's slot i, checked to reveal now a verdict matching its sealed commitment.
    function checkReveal(
        Panel storage v,
        StoredUnit storage u,
        uint256 unitId,
        uint256 i,
        bool accept,
        bytes32 transcriptHash,
        bytes32 salt,
        uint64 revealWindow
    ) internal view {
        if (stateOf(v, i) != COMMITTED) revert ITaskPool.VerdictAlreadyGiven(unitId, msg.sender);
        // INVARIANT: nobody reveals (and can be copied) before all commits are in or the commit phase ended.
        if (u.committed < u.nValidators && block.timestamp <= u.commitDeadline) {
            revert ITaskPool.RevealNotOpen(unitId, u.commitDeadline);
        }
        uint64 revealDeadline = u.commitDeadline + revealWindow;
        if (block.timestamp > revealDeadline) revert ITaskPool.DeadlinePassed(unitId, revealDeadline);
        // INVARIANT: the revealed verdict is the one sealed before anyone revealed.
        if (Segments.verdictHash(unitId, msg.sender, accept, transcriptHash, salt) != v.commits[i]) {
            revert ITaskPool.VerdictMismatch(unitId, msg.sender);
        }
    }

    /// @dev After the reveal deadline (and any answered reporter's `revealBy`): every validator that did not reveal
    ///      pays the no-show (`releaseNoShow`).
    function penaliseNoShows(
        PoolState storage s,
        INodeRegistry registry,
        uint256 unitId,
        StoredUnit storage u
    ) internal {
        Panel storage v = s.panels[unitId];
        uint256 n = u.nValidators;
        for (uint256 i; i < n; ++i) {
            uint8 st = stateOf(v, i);
            // An answered reporter that did not reveal its real verdict by `revealBy` is a no-show too.
            if (st <= COMMITTED || st == ANSWERED) releaseNoShow(s, registry, unitId, i, true);
        }
    }

    /// @dev Slot i never revealed: skip it and release its bond; if the reveal deadline passed (`late`), less the
    ///      no-show penalty (`livenessPenaltyBps` of the bond, credited to the job's requester) and a miss counted.
    function releaseNoShow(PoolState storage s, INodeRegistry registry, uint256 unitId, uint256 i, bool late) internal {
        Panel storage v = s.panels[unitId];
        (address who, ) = at(v, i);
        setState(v, i, SKIPPED);
        uint256 bond = s.params.validatorBond;
        registry.unlock(who, bond);
        uint256 taken;
        if (late) {
            taken = registry.slash(who, (bond * s.params.livenessPenaltyBps) / 10_000, address(this));
            if (taken != 0) s.books.addCredit(s.jobs[s.units[unitId].jobId].requester, taken);
            registry.recordMissed(who);
        }
        emit ITaskPool.ValidatorNoShow(unitId, who, taken);
    }

    /// @dev Pay every accepting validator its fee out of the job's escrow and release its bond.
    function payAccepting(
        Panel storage v,
        Books storage b,
        Job storage j,
        INodeRegistry registry,
        uint256 n,
        uint256 bond,
        uint256 fee
    ) internal returns (uint256 paid) {
        for (uint256 i; i < n; ++i) {
            (address who, uint8 st) = at(v, i);
            if (st != ACCEPT) continue;
            registry.unlockCompleted(who, bond);
            // INVARIANT: a unit pays at most validatorsPerUnit fees out of its own reserve.
            b.pay(j, who, fee);
            paid += fee;
        }
    }

    /// @dev Empty the first `n` slots (the unit is drawn again after it reopens).
    function clear(Panel storage v, uint256 n) internal {
        for (uint256 i; i < n; ++i) {
            delete v.commits[i];
            delete v.slots[i];
        }
    }

    /// @dev Validator and verdict state of slot i.
    function at(Panel storage v, uint256 i) internal view returns (address who, uint8 st) {
        uint256 w = v.slots[i];
        who = address(uint160(w));
        st = uint8(w >> 160);
    }

    /// @dev Verdict state of slot i.
    function stateOf(Panel storage v, uint256 i) internal view returns (uint8) {
        return uint8(v.slots[i] >> 160);
    }

    /// @dev Set the verdict state of slot i, keeping its validator.
    function setState(Panel storage v, uint256 i, uint8 st) internal {
        v.slots[i] = uint256(uint160(v.slots[i])) | (uint256(st) << 160);
    }

    /// @dev Slot of `who` among the first `n`; reverts unless `who` was drawn.
    function indexOf(Panel storage v, uint256 unitId, uint256 n, address who) internal view returns (uint256) {
        for (uint256 i; i < n; ++i) {
            if (address(uint160(v.slots[i])) == who) return i;
        }
        revert ITaskPool.NotUnitValidator(unitId, who);
    }

    /// @dev The first `n` validators.
    function members(Panel storage v, uint256 n) internal view returns (address[] memory vs) {
        vs = new address[](n);
        for (uint256 i; i < n; ++i) {
            vs[i] = address(uint160(v.slots[i]));
        }
    }

    /// @dev Attempt a's index into a set of n and its ticket in [0, DRAW_WEIGHT_SCALE): random picks first; if they
    ///      leave seats empty (collisions, rejections, or a set flooded with late entrants), a sweep on from a
    ///      random offset, bounded so gas does not grow with n.
    function _pick(bytes32 seed, uint256 a, uint256 want, uint256 n) private pure returns (uint256, uint256) {
        uint256 r = uint256(keccak256(abi.encode(seed, "v", a)));
        uint256 ticket = (r >> 128) % DRAW_WEIGHT_SCALE;
        if (a < want * 4) return (r % n, ticket);
        return ((uint256(seed) + a) % n, ticket);
    }

    /// @dev Attempt a's member if it was in the set with its current weight by `frozenAt` and its weight beats the
    ///      attempt's ticket; address(0) otherwise.
    function _candidate(
        INodeRegistry registry,
        bytes32 set,
        bytes32 seed,
        uint256 a,
        uint256 want,
        uint256 n,
        uint256 frozenAt
    ) private view returns (address) {
        (uint256 idx, uint256 ticket) = _pick(seed, a, want, n);
        (address who, uint256 since, uint256 changedAt, uint256 weight) = registry.validatorEntryIn(set, idx);
        // INVARIANT: nobody joins, or adds stake, once the seed can be known, to be drawn.
        if (since > frozenAt || changedAt > frozenAt || weight <= ticket) return address(0);
        return who;
    }

    function _contains(address[] memory a, uint256 n, address who) private pure returns (bool) {
        for (uint256 i; i < n; ++i) {
            if (a[i] == who) return true;
        }
        return false;
    }
}
