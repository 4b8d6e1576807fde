// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IDisputeResolver} from "./IDisputeResolver.sol";
import {INodeRegistry} from "./INodeRegistry.sol";
import {JobParams, JobStatus, Outcome} from "../types/Types.sol";
import {Availability, Unit} from "../types/Pool.sol";

/// @title TaskPool: job escrow, unit scheduling, verification, settlement and pull payments.
interface ITaskPool {
    /// @notice Thrown for an unknown job id.
    error UnknownJob(uint256 jobId);
    /// @notice Thrown for an unknown unit id.
    error UnknownUnit(uint256 unitId);
    /// @notice Thrown when job parameters are malformed (`field` names the first bad one).
    error InvalidJobParams(string field);
    /// @notice Thrown when job parameter `field` ("rounds", "shards", "stepsPerUnit", "segments" for
    ///         stepsPerUnit / checkpointInterval, or "commitWindow") is `value`, above its bound `max`.
    error JobParamTooLarge(string field, uint256 value, uint256 max);
    /// @notice A constructor parameter is out of its range.
    error InvalidParam(string name, uint256 value);
    /// @notice The collateral per unit is below what makes faking a segment unprofitable (`Units.minCollateral`).
    error CollateralTooLow(uint256 collateral, uint256 needed);
    /// @notice Thrown when the caller is not the job's requester.
    error NotRequester(uint256 jobId, address caller);
    /// @notice Thrown when the job is not active.
    error JobNotActive(uint256 jobId, uint8 status);
    /// @notice Thrown when a unit is in another state than required.
    error BadUnitStatus(uint256 unitId, uint8 status, uint8 required);
    /// @notice Thrown when the caller lacks a role.
    error MissingRole(address node, uint8 role);
    /// @notice Thrown when the node is jailed.
    error NodeJailed(address node);
    /// @notice Thrown when hardware does not meet the unit's needs.
    error HardwareMismatch(address node, uint256 unitId);
    /// @notice Thrown when the node's price exceeds the job's maximum.
    error PriceTooHigh(address node, uint128 price, uint128 maxPrice);
    /// @notice Thrown when the node's score is below the currently required score.
    error ScoreTooLow(address node, uint256 score, uint256 required);
    /// @notice Thrown when the caller is not the unit's solver.
    error NotSolver(uint256 unitId, address caller);
    /// @notice Thrown when a deadline has passed.
    error DeadlinePassed(uint256 unitId, uint64 deadline);
    /// @notice Thrown when a timeout is triggered too early.
    error DeadlineNotReached(uint256 unitId, uint64 deadline);
    /// @notice Thrown when randomness for the unit is not fixed yet.
    error RandomnessNotReady(uint256 unitId, uint256 readyAtBlock);
    /// @notice Thrown when validators were already drawn.
    error AlreadyDrawn(uint256 unitId);
    /// @notice Thrown when validators were not drawn yet.
    error NotDrawn(uint256 unitId);
    /// @notice Thrown when the caller is not a drawn validator of the unit.
    error NotUnitValidator(uint256 unitId, address caller);
    /// @notice Thrown on a second verdict commit or reveal.
    error VerdictAlreadyGiven(uint256 unitId, address validator);
    /// @notice Thrown when the reveal does not match the committed hash.
    error VerdictMismatch(uint256 unitId, address validator);
    /// @notice Thrown when reveals are not open yet.
    error RevealNotOpen(uint256 unitId, uint64 opensAt);
    /// @notice Thrown when the Merkle proof of the validator's segment fails.
    error InvalidSegmentProof(uint256 unitId, uint256 segmentIndex);
    /// @notice Thrown when an accept reveals a transcript that does not match the committed transcript.
    error TranscriptMismatch(uint256 unitId, bytes32 transcriptCommit);
    /// @notice Thrown when a challenge is revealed without a seal from the caller in an earlier block.
    error ChallengeNotSealed(uint256 unitId, address challenger);
    /// @notice Thrown when a segment index is out of range.
    error BadSegment(uint256 unitId, uint256 segmentIndex, uint256 numSegments);
    /// @notice A partial commitment of `segments` segments: it must cover at least `atLeast` (one, or one more than
    ///         the caller's previous partial of the unit) and fewer than the unit's `numSegments` (a full unit is
    ///         committed with `commit`).
    error BadPartialCount(uint256 unitId, uint256 segments, uint256 atLeast, uint256 numSegments);
    /// @notice Thrown when the caller is not the dispute resolver.
    error NotResolver(address caller);
    /// @notice Thrown when there is no credit to claim.
    error NoCredit(address account);
    /// @notice Thrown when wiring twice.
    error AlreadyWired();
    /// @notice Thrown when the pool is used before wiring.
    error NotWired();
    /// @notice Thrown when a solver without a declared replay class claims an `exact` unit.
    error NoReplayClass(address node);
    /// @notice Thrown when an `exact` unit is claimed by a solver whose replay class has no other validator.
    error NoClassValidators(uint256 unitId, bytes32 replayClass);
    /// @notice Thrown when a node of replay class `have` challenges an `exact` unit bound to class `need`.
    error WrongReplayClass(address node, bytes32 have, bytes32 need);
    /// @notice Validator slot `slot` (or the requester's claim, slot 255) has no unanswered unavailability report.
    error NotReported(uint256 unitId, uint256 slot);
    /// @notice The requester already raised its unavailability claim on this attempt of the unit.
    error AlreadyClaimed(uint256 unitId);
    /// @notice Units are paid phase by phase: phase `settling` of the unit's job still has a unit that is not Final,
    ///         and the unit's own inputs could still be overturned.
    error EarlierPhaseUnsettled(uint256 unitId, uint32 settling);
    /// @notice The unit's phase is open for claims but not armed: the phase it is built on is not all Verified yet.
    error PhaseNotArmed(uint256 unitId);

    /// @notice A job was submitted and its budget escrowed.
    event JobSubmitted(
        uint256 indexed jobId,
        address indexed requester,
        bytes32 specHash,
        string specCid,
        uint256 budget
    );
    /// @notice A job was cancelled; `refund` was credited to the requester.
    event JobCancelled(uint256 indexed jobId, uint256 refund);
    /// @notice A job completed; `refund` (unspent budget) was credited to the requester.
    event JobCompleted(uint256 indexed jobId, uint256 refund);
    /// @notice A unit opened (aggregation units have `isAggregation`).
    event UnitOpened(uint256 indexed unitId, uint256 indexed jobId, uint32 round, uint32 shard, bool isAggregation);
    /// @notice An `exact` unit was bound at claim to its solver's replay class: only that class validates it.
    event UnitClassBound(uint256 indexed unitId, address indexed solver, bytes32 indexed replayClass);
    /// @notice A solver claimed a unit.
    event UnitClaimed(uint256 indexed unitId, address indexed solver, uint128 price, uint64 commitDeadline);
    /// @notice A solver missed its commit deadline: `penalty` (of its collateral) went to the requester; unit reopened.
    event UnitTimedOut(uint256 indexed unitId, address indexed solver, uint256 penalty);
    /// @notice The solver committed its work.
    event UnitCommitted(uint256 indexed unitId, bytes32 checkpointRoot, bytes32 finalStateHash, string manifestCid);
    /// @notice The solver published its first `segments` segments: `partialRoot` is the Merkle root of their leaves,
    ///         `manifestCid` their partial manifest. It pays nothing and moves no deadline; if the unit times out,
    ///         the next solver may resume from it (docs/contracts.md, "Partial commitments and resuming").
    event UnitPartialCommitted(
        uint256 indexed unitId,
        address indexed solver,
        bytes32 partialRoot,
        uint32 segments,
        string manifestCid
    );
    /// @notice The validator seed of `unitId` lapsed unused: the unit reopens and its solver paid `penalty`.
    event SeedExpired(uint256 indexed unitId, address indexed solver, uint256 penalty);
    /// @notice A draw found nobody (or its seed lapsed after one did); randomness will come from a later block.
    event SeedRolled(uint256 indexed unitId, uint256 newBaseBlock);
    /// @notice Validators were drawn; validator i replays `segments[i]`.
    event ValidatorsDrawn(
        uint256 indexed unitId,
        bytes32 seed,
        address[] validators,
        uint256[] segments,
        uint64 commitDeadline,
        uint64 revealDeadline
    );
    /// @notice A validator committed its sealed verdict.
    event VerdictCommitted(uint256 indexed unitId, address indexed validator);
    /// @notice A validator revealed its verdict.
    event VerdictRevealed(uint256 indexed unitId, address indexed validator, bool accept, bytes32 transcriptHash);
    /// @notice A validator missed the verdict deadlines and was penalised and skipped.
    event ValidatorNoShow(uint256 indexed unitId, address indexed validator, uint256 penalty);
    /// @notice The unit passed verification; challenges accepted until `challengeEnd`.
    event UnitVerified(uint256 indexed unitId, uint64 challengeEnd);
    /// @notice A challenger sealed a challenge of the unit (`commitChallenge`).
    event ChallengeSealed(uint256 indexed unitId, address indexed challenger, bytes32 h);
    /// @notice A dispute was opened over the unit.
    event UnitDisputed(uint256 indexed unitId, uint256 indexed disputeId, address indexed opener, uint256 segmentIndex);
    /// @notice A dispute ended.
    event DisputeSettled(uint256 indexed unitId, uint8 outcome, uint256 pot);
    /// @notice A unit was reopened after fraud or an undecided dispute.
    event UnitReopened(uint256 indexed unitId);
    /// @notice A unit was cancelled with its job.
    event UnitCancelled(uint256 indexed unitId);
    /// @notice A unit was voided: a unit of an earlier phase it was built on was overturned. Its solver and validators
    ///         were released unpaid (not penalised); its phase opens anew once the overturned unit is verified again.
    event UnitVoided(uint256 indexed unitId);
    /// @notice The job's phase of (`round`, `isAggregation`) is armed: the phase it is built on is all Verified (or it
    ///         is the first), so its units may commit; a unit claimed before has its commit window from now.
    event PhaseArmed(uint256 indexed jobId, uint32 round, bool isAggregation);
    /// @notice The unit is final and paid.
    event UnitFinalized(uint256 indexed unitId, address indexed solver, uint256 solverPay, uint256 validatorPay);
    /// @notice `account` was credited `amount`.
    event Credited(address indexed account, uint256 amount);
    /// @notice `account` withdrew its credit.
    event CreditClaimed(address indexed account, uint256 amount);
    /// @notice Drawn validator `validator` could not fetch the data of `segment` (its start checkpoint, the
    ///         manifest or the final checkpoint): the solver must answer by `answerBy` or be slashed.
    event UnavailabilityReported(
        uint256 indexed unitId,
        address indexed validator,
        uint256 slot,
        uint256 segment,
        uint64 answerBy
    );
    /// @notice The requester could not download the verified unit's model: the solver must answer by `answerBy`.
    event UnavailabilityClaimed(uint256 indexed unitId, address indexed requester, uint64 answerBy);
    /// @notice The solver answered slot `slot` (255: the requester's claim) with the leaves of `segment` and of
    ///         the last segment (whose end state is the delivered model) and where to fetch the data (`cids`).
    ///         A validator reveals its real verdict by `revealBy`; for the requester, `revealBy` is the new
    ///         challenge end.
    event UnavailabilityAnswered(
        uint256 indexed unitId,
        uint256 slot,
        uint256 segment,
        bytes32 startHash,
        bytes32 finalHash,
        uint64 revealBy,
        string cids
    );
    /// @notice The solver of `unitId` left an unavailability report unanswered: `slashed` of its collateral taken.
    event DataWithheld(uint256 indexed unitId, address indexed solver, uint256 slashed);

    /// @notice Set the dispute resolvers (owner, once): the committee, and the segment game (zero: none, every
    ///         dispute goes to the committee).
    function wire(address resolver_, address game_) external;
    /// @notice Submit a job, escrowing units * (maxPrice + validatorsPerUnit * validatorFee).
    /// @dev Refuses a malformed job with `InvalidJobParams` and one past the bounds (rounds, shards, steps,
    ///      segments, commit window) with `JobParamTooLarge`, so every accepted job can be claimed and settled.
    function submitJob(JobParams calldata p) external returns (uint256 jobId);
    /// @notice Cancel a job: open and unopened units are refunded now; in-flight units finish or time out.
    function cancelJob(uint256 jobId) external;
    /// @notice Claim an open unit as solver (eligibility + Dutch-auction score).
    function claim(uint256 unitId) external;
    /// @notice Reopen an assigned unit whose solver missed the commit deadline (anyone).
    function timeoutClaim(uint256 unitId) external;
    /// @notice Post the unit's commitment (solver, before the commit deadline).
    function commit(
        uint256 unitId,
        bytes32 checkpointRoot,
        bytes32 finalStateHash,
        string calldata manifestCid
    ) external;
    /// @notice Publish partial progress of an assigned unit (its solver, before the commit deadline): the root of the
    ///         leaves of its first `segments` segments and their manifest. Optional; never extends the deadline.
    function commitPartial(uint256 unitId, bytes32 partialRoot, uint32 segments, string calldata manifestCid) external;
    /// @notice Fix the seed and draw validators (anyone, from commitBlock + 2).
    function drawValidators(uint256 unitId) external;
    /// @notice Commit h = keccak256(abi.encode(unitId, validator, accept, transcriptHash, salt)).
    function commitVerdict(uint256 unitId, bytes32 h) external;
    /// @notice Reveal a verdict with the Merkle proof of the validator's segment.
    function revealVerdict(
        uint256 unitId,
        bool accept,
        bytes32 transcriptHash,
        bytes32 salt,
        bytes32 startHash,
        bytes32 endHash,
        bytes32 transcriptCommit,
        bytes32[] calldata proof
    ) external;
    /// @notice After the reveal deadline: penalise no-shows and move the unit to Verified (anyone).
    /// @dev With an unavailability report unanswered past its deadline (or a requester's claim on a Verified
    ///      unit), it slashes the solver instead and reopens the unit; while one is pending it reverts
    ///      `DeadlineNotReached`.
    function closeVerdicts(uint256 unitId) external;
    /// @notice Answer the unavailability report of validator slot `slot` (255: the requester's claim). `answer`
    ///         is abi.encode(SegmentLeaf seg, SegmentLeaf last, string cids): the leaf and proof of the slot's
    ///         segment (the last segment for the requester), those of the last segment (its end state is the
    ///         delivered model), and where the data is (`cids`, free text for the nodes). Solver only, by the
    ///         answer deadline; a leaf not in the committed root reverts `InvalidSegmentProof`.
    function answerUnavailable(uint256 unitId, uint256 slot, bytes calldata answer) external;
    /// @notice The job's requester cannot download a Verified unit's model: the solver must answer within the
    ///         reveal window or be slashed; finalizing waits meanwhile. Once per attempt.
    function claimUnavailable(uint256 unitId) external;
    /// @notice The unit's data-availability state.
    function availability(uint256 unitId) external view returns (Availability memory);
    /// @notice Seal a challenge of a verified unit (challenger role, inside its challenge window):
    ///         `h` = keccak256(abi.encode(unitId, challenger, segmentIndex, salt)). Revealed by `challenge` in a
    ///         later block, so a challenge copied from the mempool has no earlier seal and cannot be revealed.
    function commitChallenge(uint256 unitId, bytes32 h) external;
    /// @notice Reveal the caller's sealed challenge of a verified unit's segment and open the dispute, posting
    ///         the challenge bond (challenger role, inside the window, sealed in an earlier block).
    function challenge(uint256 unitId, uint256 segmentIndex, bytes32 salt) external;
    /// @notice Finalize a verified unit after its challenge window and pay everyone (anyone).
    function finalize(uint256 unitId) external;
    /// @notice Resolver callback with the outcome and the committee members to reward.
    function onDisputeResolved(uint256 unitId, Outcome outcome, address[] calldata winners) external;
    /// @notice Withdraw the caller's credit.
    function claimCredit() external;

    /// @notice The stake token, also the currency of escrow, bonds and credit.
    function token() external view returns (IERC20);
    /// @notice The node registry (stake, locks, slashing, reputation).
    function registry() external view returns (INodeRegistry);
    /// @notice The committee, the dispute resolver of every unit the game does not judge (zero until `wire`).
    function resolver() external view returns (IDisputeResolver);
    /// @notice The segment game (zero when none is wired).
    function game() external view returns (IDisputeResolver);
    /// @notice The resolver a dispute over unit `unitId` goes to: the game for a training unit of a job with a
    ///         step table (a `repro` job), the committee otherwise.
    function resolverOf(uint256 unitId) external view returns (IDisputeResolver);
    /// @notice Longest time stake can be exposed after a unit's commit: verdicts + challenge + dispute.
    function longestExposure() external view returns (uint64);
    /// @notice The pool parameters, fixed at deployment (the fields of `PoolParams`, in order).
    function params()
        external
        view
        returns (
            uint16 validatorsPerUnit,
            uint16 livenessPenaltyBps,
            uint16 committeeRewardBps,
            uint64 claimWindow,
            uint64 verdictCommitWindow,
            uint64 revealWindow,
            uint64 challengeWindow,
            uint64 minCommitWindow,
            uint128 validatorFee,
            uint128 validatorBond,
            uint128 challengeBond
        );
    /// @notice Id the next job will get.
    function nextJobId() external view returns (uint256);
    /// @notice Id the next unit will get.
    function nextUnitId() external view returns (uint256);
    /// @notice Compact job state (the spec itself is in the JobSubmitted event).
    function jobState(
        uint256 jobId
    )
        external
        view
        returns (address requester, JobStatus status, uint32 round, bool aggPhase, uint32 pending, uint256 escrow);
    /// @notice Pipelined rounds: the oldest phase still being paid (`settling`), its units not yet Final, and the
    ///         job's units opened and not yet Final, Cancelled or Voided. Phases are numbered `Phases.phaseOf`.
    function phaseState(uint256 jobId) external view returns (uint32 settling, uint32 unsettled, uint32 live);
    /// @notice When the solver of assigned unit `unitId` must have committed (after it, anyone may time it out): 0 if
    ///         the unit is not Assigned, type(uint64).max while its phase is not armed (`PhaseArmed`).
    function commitBy(uint256 unitId) external view returns (uint64);
    /// @notice Full unit state (validators, deadlines, seed, dispute).
    function getUnit(uint256 unitId) external view returns (Unit memory);
    /// @notice Number of checkpoint segments of the unit (1 for aggregation units).
    function numSegments(uint256 unitId) external view returns (uint256);
    /// @notice The unit's latest partial commitment (zero if none); kept across reopenings. Its manifest CID is in
    ///         the matching `UnitPartialCommitted` event.
    function partialOf(uint256 unitId) external view returns (address solver, bytes32 root, uint32 segments);
    /// @notice A repro job's step table root and steps per segment (zero: the job has none, and its disputes go to
    ///         the committee).
    function stepTable(uint256 jobId) external view returns (bytes32 root, uint32 interval);
    /// @notice Claim score of `node` for `unitId` and the score currently required.
    function claimScore(address node, uint256 unitId) external view returns (uint256 score, uint256 required);
    /// @notice Verdict state of validator slot `i` of `unitId`: 0 none, 1 committed, 2 accept, 3 reject, 4 skipped.
    function verdictState(uint256 unitId, uint256 i) external view returns (uint8);
    /// @notice Sealed verdict of validator slot `i` of `unitId`.
    function verdictCommits(uint256 unitId, uint256 i) external view returns (bytes32);
    /// @notice Escrow outstanding over all jobs.
    function totalEscrow() external view returns (uint256);
    /// @notice Challenger bonds held.
    function totalBonds() external view returns (uint256);
    /// @notice Unclaimed credit.
    function totalCredit() external view returns (uint256);
    /// @notice Credit of `account`.
    function credit(address account) external view returns (uint256);
}
