// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IDisputeResolver} from "./IDisputeResolver.sol";
import {OpOpening} from "../types/Trace.sol";

/// @notice A state's entries as a move gives them: key hashes in strictly increasing order (the state tree's
///         order, `gensyn_py/proof/state.py`) and each tensor's root.
struct StateEntries {
    bytes32[] keys;
    bytes32[] roots;
}

/// @notice A leaf `(segment, start, end, transcriptCommit)` of a unit's checkpoint root and its Merkle path.
struct SegmentLeaf {
    bytes32 start;
    bytes32 end;
    bytes32 transcriptCommit;
    bytes32[] proof;
}

/// @notice A segment's loss transcript, opened by the claimant (`openTranscript`): who trained the segment, its
///         losses (float32 little-endian, one per step) and, for an author other than the claimant (a segment
///         inherited from another solver's partial commitment), the segment's leaf path in the unit's on-chain
///         partial root (`ITaskPool.partialOf`).
struct Transcript {
    address author;
    bytes losses;
    bytes32[] partialProof;
}

/// @notice What the claimant reveals of the disputed step t -> t + 1 (`revealStep`).
struct StepReveal {
    bytes32 opsRoot; // the step program's ops root; its outputs root is computed from `outputKeys`, `outputOps`
    bytes32[] outputKeys; // the program's named outputs, key hashes strictly increasing
    uint256[] outputOps; // the op each named output is
    bytes32 batchRoot; // the step's batch root (`lr`, `x`, `y`), from the job's step table
    bytes32[] tableProof; // the step's leaf up to the job's `stepsRoot`
    StateEntries prior; // every entry of the agreed state at t
    StateEntries next; // every entry of the claimant's state at t + 1
    uint256 nOps; // ops in the claimant's trace of the step
    bytes32 traceRoot; // the claimant's op-prefix root over its whole trace
    OpOpening[] outputs; // for each named output the next state holds and the loss, in key order: its op in the trace
    bytes32 lossesBefore; // L_t, the running hash of the segment's losses before step t (`Transcripts`)
    bytes4 loss; // the claimant's loss of step t (float32, little-endian), its transcript's
}

/// @title The segment game: a dispute over one segment of a `repro` unit, decided by the contract alone.
/// @notice Stage (a) of docs/dispute-game.md and the binding of one step to the unit's commitments. The disputing
///         validator or challenger (the counter) opens the disputed segment's leaf in the solver's (the claimant's)
///         checkpoint root and posts its own end state with its first bisection move, or shows the segment's start
///         is not the previous segment's end. Both bisect over the state roots after each step of the segment to one
///         step t -> t + 1; the claimant reveals the step's program and batch (proven in the job's step table), the
///         agreed state at t and its state at t + 1 entry by entry, and its trace's root with the op of every named
///         output opened in it: the contract checks every key of t + 1 is a named output of the program (its root
///         that op's output), the cursor, or carried unchanged from t, and opens the step game (`IStepGame`) over the
///         claimant's trace, where the counter posts its own trace root with its first move. The outcome reaches
///         the pool through `ITaskPool.onDisputeResolved`.
interface ISegmentGame is IDisputeResolver {
    /// @notice Where a dispute stands.
    enum Stage {
        None,
        Contest, // the counter opens the segment's leaf and posts its end position (or refutes or contests the start)
        Transcript, // the claimant opens its loss transcript, which fixes its end position, with its first move
        Start, // segment 0's start of a round-0 unit is contested: the claimant proves it is the job's
        Steps, // both bisect over the segment's step state roots
        Reveal, // the claimant reveals the disputed step, which opens the step game
        Step, // the step game runs; `settle` ends the dispute once it is decided
        Decided
    }

    /// @notice Why a dispute was decided (`GameDecided.reason`).
    enum Reason {
        Timeout, // a side ran out of time at a stage of this game
        BrokenChain, // the segment's start is not the previous segment's end
        StartUnbound, // segment 0's start of a later round's unit is contested: not bound on-chain, no winner
        StepGame, // the step game decided (its own `GameDecided` says why)
        StartProven, // segment 0's start was contested and is the job's (in its step table): the claimant wins
        WrongAuthor, // the transcript is another solver's, not backed by the unit's on-chain partial: the counter wins
        EndsAgree // the counter's end position is the claimant's: there is nothing to dispute, the claimant wins
    }

    /// @notice The call belongs to stage `expected`; the dispute is at `actual`.
    error WrongStage(uint256 disputeId, Stage expected, Stage actual);
    /// @notice The segment leaf given is not leaf `segment` of the unit's checkpoint root.
    error NotInCheckpoints(uint256 segment);
    /// @notice `refuteStart` on segment 0 (it has no previous segment), or `contestStart` on a later one (its start
    ///         is bound to the previous segment's end: refute that instead).
    error WrongSegmentForStart(uint256 segment);
    /// @notice The step's leaf is not in the job's step table.
    error NotInStepTable(uint256 step);
    /// @notice The entries given do not hash to the state root the move is about.
    error StateMismatch(bytes32 computed, bytes32 expected);
    /// @notice The key hashes of a list are not strictly increasing at `index`.
    error KeysUnsorted(uint256 index);
    /// @notice A list's key and root arrays differ in length.
    error LengthMismatch(uint256 keys, uint256 values);
    /// @notice The next state lacks key `key`: a key of the state at t or a named output of the step.
    error MissingKey(bytes32 key);
    /// @notice The next state holds key `key`, which the step neither writes nor carries from t.
    error ExtraKey(bytes32 key);
    /// @notice Key `key` is not written by the step, and its root is not the one it had at t.
    error CarriedChanged(bytes32 key);
    /// @notice The next state's cursor root is not that of `[round, shard, step + 1]`.
    error WrongCursor(bytes32 root, bytes32 expected);
    /// @notice A named output is op `op`, beyond the trace's `nOps` ops.
    error OpOutOfRange(uint256 op, uint256 nOps);
    /// @notice The opening of named output `index` is not of its op `op` with output root `root`.
    error NotBound(uint256 index, uint256 op, bytes32 root);
    /// @notice The op opening is not in the claimant's trace root.
    error NotInTrace(uint256 op);
    /// @notice The refutation shows the claimant is right in this respect.
    error NotRefuted(uint256 disputeId, Reason reason);
    /// @notice The step game `gameId` is not decided yet.
    error StepGameRunning(uint256 gameId);
    /// @notice The transcript opened is not the one the segment's leaf commits to (or has `steps` losses of 4 bytes
    ///         fewer or more than the segment's steps).
    error NotTranscript(uint256 steps, bytes32 transcriptCommit);
    /// @notice A constructor or `wire` parameter out of its range (named).
    error InvalidGameParam(string name, uint256 value);

    /// @notice The disputed segment's leaf was opened (with the contest): its start and end state roots.
    event SegmentOpened(uint256 indexed disputeId, uint256 segment, bytes32 start, bytes32 end);
    /// @notice The counter's end position (its state and losses after the segment's `steps` steps); the claimant
    ///         opens its transcript next.
    event Contested(uint256 indexed disputeId, bytes32 counterEnd, uint256 steps);
    /// @notice The claimant's transcript, by `author`, with `losses`: its end position is `claimantEnd`; the
    ///         bisection over the segment's steps runs (unless that decided the dispute).
    event TranscriptOpened(uint256 indexed disputeId, address author, bytes losses, bytes32 claimantEnd);
    /// @notice A bisection move: the interval [lo, hi] of steps after it.
    event StepsMoved(uint256 indexed disputeId, address indexed mover, uint64 lo, uint64 hi);
    /// @notice The bisection ended at step `step` of the segment (`unitStep` of the unit): the states agree before
    ///         it and differ after it.
    event StepNarrowed(uint256 indexed disputeId, uint256 step, uint256 unitStep);
    /// @notice The claimant's disputed step: its program and named-inputs root (`hash_pair(state at t, batch)`),
    ///         and its trace's op count and root; step game `gameId` over it is open, the counter to move.
    event StepRevealed(
        uint256 indexed disputeId,
        uint256 indexed gameId,
        bytes32 program,
        bytes32 inputs,
        uint256 nOps,
        bytes32 traceRoot
    );
    /// @notice The dispute was decided and settled in the pool (`winner` zero: no decision, `Outcome.NoQuorum`).
    event GameDecided(uint256 indexed disputeId, address indexed winner, Reason reason, uint8 outcome);

    /// @notice The counter opens the disputed segment's leaf in the unit's checkpoint root (`leaf`: the claimant's
    ///         start, end and transcript commitment), and posts its own end position and its position at the first
    ///         midpoint (`atMid`: the bisection's first move, ignored for a one-step segment). A position after i
    ///         steps is `Transcripts.position(state root, running hash of the first i losses)`.
    function contest(uint256 disputeId, SegmentLeaf calldata leaf, bytes32 counterEnd, bytes32 atMid) external;
    /// @notice `contest`, of segment `segment` of the unit instead of the one disputed: a counter that cannot replay
    ///         the disputed segment from its committed start (a checkpoint that does not load, say) contests the
    ///         earliest segment whose end it disagrees with. A fraud in any segment is a fraud in the unit.
    function contestSegment(
        uint256 disputeId,
        uint256 segment,
        SegmentLeaf calldata leaf,
        bytes32 counterEnd,
        bytes32 atMid
    ) external;
    /// @notice The claimant opens the transcript the segment's leaf commits to (its own, or an inherited segment's
    ///         author with the leaf's path in the unit's partial root: else decided for the counter), which gives
    ///         its end position; an end position equal to the counter's decides for the claimant. Otherwise the
    ///         bisection over the segment's steps starts with this move: the claimant's position at the counter's
    ///         midpoint (`atPending`) and at the next (`atNext`).
    function openTranscript(uint256 disputeId, Transcript calldata t, bytes32 atPending, bytes32 atNext) external;
    /// @notice The counter opens the disputed segment's leaf and leaf `segment - 1`, whose end is not its start.
    function refuteStart(uint256 disputeId, SegmentLeaf calldata disputed, SegmentLeaf calldata previous) external;
    /// @notice The counter opens segment 0's leaf (`leaf`) and contests its start. A round-0 unit's start is bound
    ///         in the job's step table: the claimant proves it next (`proveStart`) or loses on time. A later round's
    ///         start is a function of the round's agreed weights, which the chain does not hold: decided without a
    ///         winner.
    function contestStart(uint256 disputeId, SegmentLeaf calldata leaf) external;
    /// @notice The claimant proves the contested start is its shard's round-0 start in the job's step table:
    ///         `proof` is the path of the leaf `keccak256(0, shard, 2^256 - 1, start, 0)` (`StepTable.start_leaf`).
    function proveStart(uint256 disputeId, bytes32[] calldata proof) external;
    /// @notice One bisection move over the segment's step state roots (`Bisection.move`).
    function moveSteps(uint256 disputeId, bytes32 atPending, bytes32 atNext) external;
    /// @notice The claimant reveals the disputed step (`StepReveal`), which opens the step game over its trace.
    function revealStep(uint256 disputeId, StepReveal calldata r) external;
    /// @notice Settle a dispute whose step game is decided; anyone may call.
    function settle(uint256 disputeId) external;
    /// @notice Decide for the side not to move once the side to move ran out of time; anyone may call.
    function timeout(uint256 disputeId) external;
    /// @notice A dispute's stage, unit, segment, the step game's id (zero before), and the winner once decided.
    function disputeOf(
        uint256 disputeId
    ) external view returns (Stage stage, uint256 unitId, uint256 segment, uint256 gameId, address winner);
    /// @notice The bisection's interval, agreed root and both sides' roots at `hi`.
    function stepsOf(
        uint256 disputeId
    ) external view returns (uint64 lo, uint64 hi, bytes32 agreed, bytes32 claimantRoot, bytes32 counterRoot);
    /// @notice The pending midpoint's root (the other side's, for the side to move), and whether one is pending.
    function pendingOf(uint256 disputeId) external view returns (bool pending, bytes32 root);
    /// @notice The side to move and when its clock runs out.
    function deadline(uint256 disputeId) external view returns (address mover, uint64 due);
}
