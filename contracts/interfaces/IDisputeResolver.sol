// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title A dispute resolver for work units; TaskPool talks to disputes only through this.
/// @notice The resolver decides; it calls back `ITaskPool.onDisputeResolved`, which moves the money.
interface IDisputeResolver {
    /// @notice Thrown when a caller other than the task pool opens a dispute.
    error NotTaskPool(address caller);
    /// @notice Thrown for an unknown dispute id.
    error UnknownDispute(uint256 disputeId);
    /// @notice Thrown when the dispute is already resolved.
    error DisputeClosed(uint256 disputeId);
    /// @notice Thrown when the committee cannot be drawn yet (randomness not fixed).
    error TooEarly(uint256 disputeId, uint256 blockNumber);
    /// @notice Thrown when the voting deadline has passed.
    error VotingClosed(uint256 disputeId, uint64 deadline);
    /// @notice Thrown when a non-member votes.
    error NotCommitteeMember(uint256 disputeId, address voter);
    /// @notice Thrown on a second vote.
    error AlreadyVoted(uint256 disputeId, address voter);
    /// @notice Thrown when resolving before the deadline while votes are missing.
    error VotingOpen(uint256 disputeId, uint64 deadline);
    /// @notice Thrown when the resolver is already wired.
    error AlreadyWired();

    /// @notice A dispute was opened.
    event DisputeOpened(
        uint256 indexed disputeId,
        uint256 indexed unitId,
        address solver,
        address opener,
        uint64 deadline
    );
    /// @notice The committee was drawn.
    event CommitteeDrawn(uint256 indexed disputeId, address[] members);
    /// @notice A committee member voted.
    event Voted(uint256 indexed disputeId, address indexed voter, bool solverHonest, uint256 weight);
    /// @notice The dispute was resolved (outcome as in `Outcome`).
    event DisputeResolved(
        uint256 indexed disputeId,
        uint256 indexed unitId,
        uint8 outcome,
        uint256 yesWeight,
        uint256 noWeight
    );

    /// @notice Open a dispute over `unitId` (task pool only); returns its id.
    function openDispute(
        uint256 unitId,
        uint8 deviceClass,
        address solver,
        address opener
    ) external returns (uint256 disputeId);
    /// @notice Draw the committee from randomness fixed after opening; anyone may call.
    function drawCommittee(uint256 disputeId) external;
    /// @notice Vote whether the solver was honest (committee members, before the deadline).
    function vote(uint256 disputeId, bool solverHonest) external;
    /// @notice Resolve once all members voted or the deadline passed; anyone may call.
    function resolve(uint256 disputeId) external;
    /// @notice Longest time a dispute can stay open (seconds).
    function maxDuration() external view returns (uint64);
}
