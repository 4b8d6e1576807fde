// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Bisection} from "../libraries/Bisection.sol";

/// @title BisectionHarness: the Bisection library behind external functions, for tests and gas figures.
contract BisectionHarness {
    using Bisection for Bisection.Game;

    mapping(uint256 => Bisection.Game) private _games;

    /// @notice A game started (see `Bisection.start`).
    event Started(uint256 indexed id, address claimant, address counter, uint64 lo, uint64 hi);
    /// @notice A move; `lo` and `hi` after it.
    event Moved(uint256 indexed id, address indexed mover, uint64 lo, uint64 hi, bytes32 atPending, bytes32 atNext);

    /// @notice Start game `id` (any caller: a harness).
    function start(uint256 id, address claimant, address counter, Bisection.Ends calldata e, uint64 clock) external {
        _games[id].start(claimant, counter, e, clock);
        emit Started(id, claimant, counter, e.lo, e.hi);
    }

    /// @notice The caller's move in game `id`.
    function move(uint256 id, bytes32 atPending, bytes32 atNext) external {
        Bisection.Game storage g = _games[id];
        g.move(msg.sender, atPending, atNext);
        emit Moved(id, msg.sender, g.lo, g.hi, atPending, atNext);
    }

    /// @notice The side of game `id` whose clock ran out (reverts while it still runs).
    function expired(uint256 id) external view returns (address) {
        return _games[id].expired();
    }

    /// @notice The interval and its roots: lo, hi, the agreed root at lo, the claimant's and counter's at hi.
    function interval(uint256 id) external view returns (uint64, uint64, bytes32, bytes32, bytes32) {
        Bisection.Game storage g = _games[id];
        return (g.lo, g.hi, g.agreed, g.claimantRoot, g.counterRoot);
    }

    /// @notice Whose turn it is, its deadline, whether the bisection is over, and the root waiting at the
    ///         midpoint for the side to move (if any).
    function turn(uint256 id) external view returns (address, uint64, bool, bool, bytes32) {
        Bisection.Game storage g = _games[id];
        return (g.mover(), g.deadline(), g.done(), g.pending, g.pendingRoot);
    }
}
