// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

/// @title Bisection: two parties narrow a disagreement over a sequence of roots to one position.
/// @notice The machinery every stage of a dispute game shares (steps of a segment, ops of a step,
///         multiply-adds of a dot product). Both parties agree on the root at `lo` and disagree at `hi`;
///         each move halves [lo, hi] until hi = lo + 1, where a one-step check of the transition
///         lo -> hi decides who lied.
/// @dev One transaction per move, each side posting its own roots: a move gives the mover's root at the
///      pending midpoint (the other side posted its root there in the previous move) and, unless that
///      comparison ends the bisection, its root at the next midpoint. Equal roots at a midpoint move `lo`
///      up (both agree so far); different roots move `hi` down (they already disagree there). So the
///      interval always holds an agreed root at `lo` and two different roots at `hi`, and a game over n
///      positions takes ceil(log2 n) + 1 moves at most. The claimant (the side whose result is disputed)
///      moves first.
///
///      Each side has a chess clock: its own budget of seconds, spent only while it is its turn. A side
///      that lets its budget run out loses (`expired`); a move that comes after it reverts, so a late
///      move cannot save a side that anyone may already time out.
library Bisection {
    /// @notice One game's state. Roots are opaque: what they commit to is the stage's business.
    /// @dev Packed in two slots before the roots (each cold slot a move reads costs it 2,100 gas): positions below
    ///      2^32 (a stage's op count, contraction length or steps are far below), times and clocks in seconds as
    ///      uint32 (timestamps until 2106; a clock of a day at most).
    struct Game {
        address claimant;
        uint32 lo;
        uint32 hi;
        bool counterToMove;
        bool pending; // a root is posted at mid(lo, hi) by the side not to move
        address counter;
        uint32 turnStarted; // when the side to move got its turn
        uint32 claimantClock; // seconds left to the claimant
        uint32 counterClock; // seconds left to the counter
        bytes32 agreed; // both sides' root at lo
        bytes32 claimantRoot; // the claimant's root at hi
        bytes32 counterRoot; // the counter's root at hi
        bytes32 pendingRoot; // the root posted at mid(lo, hi) by the side not to move
    }

    /// @notice Thrown when the two sides' roots at `hi` are equal: there is nothing to bisect.
    error NoDisagreement(bytes32 root);
    /// @notice Thrown for an interval with nothing between its ends (hi <= lo).
    error EmptyInterval(uint64 lo, uint64 hi);
    /// @notice Thrown when `caller` moves while it is `expected`'s turn.
    error NotYourTurn(address caller, address expected);
    /// @notice Thrown on a move once the interval is one position long.
    error BisectionDone(uint64 lo, uint64 hi);
    /// @notice Thrown on a move after the mover's clock ran out (it can only be timed out now).
    error ClockExpired(address mover, uint64 deadline);
    /// @notice Thrown when timing out a side whose clock still runs until `deadline`.
    error ClockRunning(address mover, uint64 deadline);
    /// @notice Thrown when the two sides are the same address.
    error SameParty(address party);

    /// @notice The midpoint of [lo, hi]; a move posts roots here.
    function mid(uint64 lo, uint64 hi) internal pure returns (uint64) {
        return lo + (hi - lo) / 2;
    }

    /// @notice Where a game starts: both sides agree on `agreed` at `lo`; at `hi` the claimant says
    ///         `claimantRoot`, the counter `counterRoot`.
    struct Ends {
        uint64 lo;
        uint64 hi;
        bytes32 agreed;
        bytes32 claimantRoot;
        bytes32 counterRoot;
    }

    /// @notice Start a game over `e`; each side gets `clock` seconds in all; the claimant moves first.
    function start(Game storage g, address claimant, address counter, Ends memory e, uint64 clock) internal {
        if (claimant == counter) revert SameParty(claimant);
        g.claimant = claimant;
        g.counter = counter;
        setClocks(g, clock);
        restart(g, e);
    }

    /// @notice Give each side `clock` seconds and start the turn now (a game whose first stage is not a bisection).
    function setClocks(Game storage g, uint64 clock) internal {
        uint32 c = SafeCast.toUint32(clock);
        (g.claimantClock, g.counterClock, g.turnStarted) = (c, c, _now());
    }

    /// @notice A new bisection over `e` between the same sides, whose clocks go on (a game's later stage); the
    ///         claimant moves first.
    function restart(Game storage g, Ends memory e) internal {
        if (e.hi <= e.lo) revert EmptyInterval(e.lo, e.hi);
        if (e.claimantRoot == e.counterRoot) revert NoDisagreement(e.claimantRoot);
        g.lo = SafeCast.toUint32(e.lo);
        g.hi = SafeCast.toUint32(e.hi);
        g.agreed = e.agreed;
        g.claimantRoot = e.claimantRoot;
        g.counterRoot = e.counterRoot;
        g.counterToMove = false;
        g.pending = false;
        g.pendingRoot = bytes32(0);
        g.turnStarted = _now();
    }

    /// @notice Is the bisection over (one position left: the step lo -> hi is what is disputed)?
    function done(Game storage g) internal view returns (bool) {
        return g.hi - g.lo == 1;
    }

    /// @notice The side whose turn it is.
    function mover(Game storage g) internal view returns (address) {
        return g.counterToMove ? g.counter : g.claimant;
    }

    /// @notice When the side to move runs out of time.
    function deadline(Game storage g) internal view returns (uint64) {
        return uint64(g.turnStarted) + (g.counterToMove ? g.counterClock : g.claimantClock);
    }

    /// @notice One move by `caller`: its root at the pending midpoint (ignored on the very first move, when
    ///         nothing is pending) and, if the interval is still longer than one, its root at the next midpoint.
    /// @return narrowed true when this move compared two roots at a midpoint (the interval changed).
    function move(Game storage g, address caller, bytes32 atPending, bytes32 atNext) internal returns (bool narrowed) {
        if (done(g)) revert BisectionDone(g.lo, g.hi);
        charge(g, caller);

        if (g.pending) {
            narrowed = true;
            uint32 m = uint32(mid(g.lo, g.hi)); // between lo and hi
            if (atPending == g.pendingRoot) {
                g.lo = m;
                g.agreed = atPending;
            } else {
                // INVARIANT: the roots kept at hi are each side's own, and they differ.
                g.hi = m;
                (g.claimantRoot, g.counterRoot) =
                    g.counterToMove ? (g.pendingRoot, atPending) : (atPending, g.pendingRoot);
            }
        }
        if (done(g)) {
            g.pending = false;
        } else {
            g.pending = true;
            g.pendingRoot = atNext;
        }
        g.counterToMove = !g.counterToMove;
        g.turnStarted = _now();
    }

    /// @notice The side that ran out of time (reverts while the side to move still has time, or once
    ///         the bisection is done: then the stage's one-step check decides, not the clock).
    function expired(Game storage g) internal view returns (address loser) {
        if (done(g)) revert BisectionDone(g.lo, g.hi);
        return outOfTime(g);
    }

    /// @notice `caller` moves now: it must be the side to move and inside its clock; the time its turn took comes
    ///         off its clock, and the turn's time restarts. Also for the moves of a game's other stages, which
    ///         share these clocks.
    function charge(Game storage g, address caller) internal {
        checkTurn(g, caller);
        uint32 now_ = _now();
        uint32 spent = now_ - g.turnStarted; // within the mover's clock (checkTurn)
        if (g.counterToMove) g.counterClock -= spent;
        else g.claimantClock -= spent;
        g.turnStarted = now_;
    }

    function _now() private view returns (uint32) {
        return SafeCast.toUint32(block.timestamp);
    }

    /// @notice `caller` may move now: it is the side to move, inside its clock (`charge` without charging: for a
    ///         move that ends the game, after which no clock is read).
    function checkTurn(Game storage g, address caller) internal view {
        address expected = mover(g);
        if (caller != expected) revert NotYourTurn(caller, expected);
        uint64 due = deadline(g);
        // INVARIANT: a side that let its clock run out cannot move any more; it can only be timed out.
        if (block.timestamp > due) revert ClockExpired(caller, due);
    }

    /// @notice The side to move, once its clock ran out (reverts `ClockRunning` before), at any stage.
    function outOfTime(Game storage g) internal view returns (address loser) {
        uint64 due = deadline(g);
        loser = mover(g);
        if (block.timestamp <= due) revert ClockRunning(loser, due);
    }
}
