// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IDisputeResolver} from "./IDisputeResolver.sol";

/// @title The committee's own game: stake-weighted seats drawn from a future block hash, sealed votes, escalation.
/// @notice `DisputeCommittee` resolves every dispute the segment game does not (`IDisputeResolver`).
interface IDisputeCommittee is IDisputeResolver {
    /// @notice Thrown when the dispute is already resolved.
    error DisputeClosed(uint256 disputeId);
    /// @notice Thrown when the committee cannot be drawn yet (its seed block is not mined).
    error TooEarly(uint256 disputeId, uint256 blockNumber);
    /// @notice Thrown when the phase the call belongs to ended at `deadline`.
    error VotingClosed(uint256 disputeId, uint64 deadline);
    /// @notice Thrown when the caller holds no seat in the dispute's current round.
    error NotCommitteeMember(uint256 disputeId, address voter);
    /// @notice Thrown on a second sealed vote.
    error AlreadyCommitted(uint256 disputeId, address voter);
    /// @notice Thrown on a reveal without a sealed vote.
    error NotCommitted(uint256 disputeId, address voter);
    /// @notice Thrown on a second reveal.
    error AlreadyVoted(uint256 disputeId, address voter);
    /// @notice Thrown when a reveal comes before every member committed or the commit phase ended.
    error RevealNotOpen(uint256 disputeId, uint64 commitDeadline);
    /// @notice Thrown when a reveal does not match the sealed vote.
    error VoteMismatch(uint256 disputeId, address voter);
    /// @notice Thrown when resolving before the current round's votes are all in or its deadline passed.
    error VotingOpen(uint256 disputeId, uint64 deadline);
    /// @notice Thrown by the constructor and `wire` for a parameter out of its range (named).
    error InvalidCommitteeParam(string name, uint256 value);

    /// @notice The current round's seats were drawn (`members`: this round's new seats).
    event CommitteeDrawn(uint256 indexed disputeId, address[] members);
    /// @notice The seed block went stale (over 256 blocks) before anyone drew: the draw now waits for a
    ///         block that does not exist yet.
    event SeedRetargeted(uint256 indexed disputeId, uint8 round, uint64 seedBlock);
    /// @notice No decision: a new round of `size` seats starts (seed from `seedBlock`).
    event Escalated(
        uint256 indexed disputeId,
        uint8 round,
        uint256 size,
        uint64 seedBlock,
        uint64 commitDeadline,
        uint64 revealDeadline
    );
    /// @notice A member sealed its vote.
    event VoteCommitted(uint256 indexed disputeId, address indexed voter, uint8 round);
    /// @notice A member revealed its vote, counted with `weight` (the stake locked when it was seated).
    event VoteRevealed(uint256 indexed disputeId, address indexed voter, bool solverHonest, uint256 weight);
    /// @notice A member lost `amount` of its locked stake: a vote against the outcome or no vote revealed.
    event MemberSlashed(uint256 indexed disputeId, address indexed member, uint256 amount, bool missed);
    /// @notice Slashed member stake paid out to `to` (the members who voted with the outcome).
    event MemberRewarded(uint256 indexed disputeId, address indexed to, uint256 amount);
    /// @notice The dispute was resolved (outcome as in `Outcome`).
    event DisputeResolved(
        uint256 indexed disputeId,
        uint256 indexed unitId,
        uint8 outcome,
        uint256 yesWeight,
        uint256 noWeight
    );

    /// @notice Draw the current round's committee from a block hash unknown when the round began; anyone may call.
    function drawCommittee(uint256 disputeId) external;
    /// @notice Seal a vote: `commitment = keccak256(abi.encode(disputeId, member, solverHonest, salt))`.
    function commitVote(uint256 disputeId, bytes32 commitment) external;
    /// @notice Reveal a sealed vote, once every member committed or the commit phase ended.
    function revealVote(uint256 disputeId, bool solverHonest, bytes32 salt) external;
    /// @notice End the current round: decide, escalate, or (last round) settle without a decision; anyone may call.
    function resolve(uint256 disputeId) external;
}
