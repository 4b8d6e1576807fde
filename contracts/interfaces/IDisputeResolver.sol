// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title A dispute resolver for work units; TaskPool talks to disputes only through this.
/// @notice The resolver decides; it calls back `ITaskPool.onDisputeResolved`, which moves the pool's money.
///         `openDispute` and `maxDuration` are all TaskPool calls. Two resolvers implement it: the committee
///         (`IDisputeCommittee`: every dispute of an `exact` unit, and of a job without a step table) and the
///         segment game (`ISegmentGame`: a `repro` training unit of a job with a step table).
interface IDisputeResolver {
    /// @notice Thrown when a caller other than the task pool opens a dispute.
    error NotTaskPool(address caller);
    /// @notice Thrown for an unknown dispute id.
    error UnknownDispute(uint256 disputeId);
    /// @notice Thrown when the resolver is already wired.
    error AlreadyWired();

    /// @notice A dispute was opened; `deadline` is when its first move (the committee: its first round's
    ///         commits; the game: the solver's opening) is due.
    event DisputeOpened(
        uint256 indexed disputeId,
        uint256 indexed unitId,
        address solver,
        address opener,
        uint64 deadline
    );

    /// @notice Open a dispute over segment `segment` of `unitId` (task pool only); returns its id. The committee
    ///         is drawn from the validator set of `deviceClass`, or for an `exact` unit (`replayClass` non-zero)
    ///         of its solver's replay class; the game ignores both.
    function openDispute(
        uint256 unitId,
        uint256 segment,
        uint8 deviceClass,
        bytes32 replayClass,
        address solver,
        address opener
    ) external returns (uint256 disputeId);
    /// @notice Longest time a dispute can stay open when every deadline is met at its end (seconds).
    function maxDuration() external view returns (uint64);
}
