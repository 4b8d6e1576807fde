// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {IDisputeResolver} from "./interfaces/IDisputeResolver.sol";
import {ISegmentGame, SegmentLeaf, StepReveal, Transcript} from "./interfaces/ISegmentGame.sol";
import {IStepGame} from "./interfaces/IStepGame.sol";
import {ITaskPool} from "./interfaces/ITaskPool.sol";
import {Bisection} from "./libraries/Bisection.sol";
import {Segments} from "./libraries/Segments.sol";
import {StepBinding} from "./libraries/StepBinding.sol";
import {TraceProofs} from "./libraries/TraceProofs.sol";
import {Transcripts} from "./libraries/Transcripts.sol";
import {OpOpening} from "./types/Trace.sol";
import {Unit} from "./types/Pool.sol";
import {Outcome} from "./types/Types.sol";

/// @title SegmentGame: a dispute over one segment of a `repro` unit, narrowed to one step and handed to the step game.
/// @notice The pool's resolver for training units of jobs with a step table (`ITaskPool.resolverOf`); the committee
///         keeps every other dispute. The moves are in `ISegmentGame` and docs/dispute-game.md ("Stage (a) and the
///         binding"). One honest side is enough: every move an honest side makes can be made, and every lie has a
///         refutation or leaves its side without a legal move until its clock runs out.
/// @dev The game holds no tokens: the pool keeps the bonds and the collateral, and settles the outcome
///      (`ITaskPool.onDisputeResolved`) with no committee to reward.
contract SegmentGame is ISegmentGame, Ownable {
    using Bisection for Bisection.Game;

    struct Game {
        Bisection.Game g; // stage (a), and both sides' clocks over this game's stages
        uint256 unitId;
        bytes32 checkpointRoot;
        bytes32 stepsRoot;
        bytes32 transcriptCommit; // the disputed segment's, from its leaf (until the claimant opens it)
        uint256 stepGame;
        uint32 interval; // steps per segment
        // One slot: the decision writes `stage` and `winner` together.
        address winner;
        uint32 round;
        uint32 shard;
        uint16 segment;
        Stage stage;
    }

    /// @dev The most ops a step game takes (`StepGame.MAX_DEPTH` levels of prefix tree).
    uint256 internal constant MAX_OPS = 1 << 24;
    /// @dev The step index of a shard's round-0 start leaf in a job's step table (no training step has it).
    uint256 internal constant START = type(uint256).max;

    /// @notice The pool whose disputes this game resolves.
    ITaskPool public immutable pool;
    /// @notice Seconds each side has over this game's stages (the step game has its own clocks).
    uint64 public immutable clock;
    /// @notice The step game this game hands the disputed step to (set once by `wire`).
    IStepGame public stepGame;
    /// @notice Disputes opened so far; ids run from 1.
    uint256 public disputeCount;
    mapping(uint256 => Game) internal _games;

    constructor(ITaskPool pool_, uint64 clock_, address owner_) Ownable(owner_) {
        if (address(pool_) == address(0)) revert InvalidGameParam("pool", 0);
        // A clock of a day at most keeps `maxDuration` within the pool's exposure bounds.
        if (clock_ == 0 || clock_ > 1 days) revert InvalidGameParam("clock", clock_);
        pool = pool_;
        clock = clock_;
    }

    /// @notice Set the step game (owner, once); it must name this contract as its opener.
    function wire(IStepGame stepGame_) external onlyOwner {
        if (address(stepGame) != address(0)) revert AlreadyWired();
        if (address(stepGame_) == address(0)) revert InvalidGameParam("stepGame", 0);
        stepGame = stepGame_;
    }

    // ---- opening ----

    /// @inheritdoc IDisputeResolver
    function openDispute(
        uint256 unitId,
        uint256 segment,
        uint8,
        bytes32,
        address solver,
        address opener
    ) external returns (uint256 id) {
        if (msg.sender != address(pool)) revert NotTaskPool(msg.sender);
        Unit memory u = pool.getUnit(unitId);
        (bytes32 stepsRoot, uint32 interval) = pool.stepTable(u.jobId);
        id = ++disputeCount;
        Game storage s = _games[id];
        s.unitId = unitId;
        s.checkpointRoot = u.checkpointRoot;
        s.stepsRoot = stepsRoot;
        s.round = u.round;
        s.shard = u.shard;
        s.interval = interval;
        s.segment = uint16(segment); // below the pool's MAX_SEGMENTS
        s.stage = Stage.Contest;
        // The clocks start now, the counter's first: it opens the segment's leaf with its contest.
        Bisection.Game storage g = s.g;
        (g.claimant, g.counter) = (solver, opener);
        g.setClocks(clock);
        g.counterToMove = true;
        emit DisputeOpened(id, unitId, solver, opener, g.deadline());
    }

    /// @inheritdoc ISegmentGame
    function contest(uint256 id, SegmentLeaf calldata leaf, bytes32 counterEnd, bytes32 atMid) external {
        Game storage s = _at(id, Stage.Contest);
        _contest(id, s, leaf, counterEnd, atMid);
    }

    /// @inheritdoc ISegmentGame
    function contestSegment(
        uint256 id,
        uint256 segment,
        SegmentLeaf calldata leaf,
        bytes32 counterEnd,
        bytes32 atMid
    ) external {
        Game storage s = _at(id, Stage.Contest);
        // The leaf's index is inside its hash: only a segment the unit's checkpoint root holds opens.
        s.segment = SafeCast.toUint16(segment);
        _contest(id, s, leaf, counterEnd, atMid);
    }

    function _contest(
        uint256 id,
        Game storage s,
        SegmentLeaf calldata leaf,
        bytes32 counterEnd,
        bytes32 atMid
    ) private {
        Bisection.Game storage g = s.g;
        g.charge(msg.sender);
        _open(id, s, leaf);
        // Held until the claimant's transcript gives its end position: the leaf's states and commitment, the
        // counter's end and its first bisection move (its position at the first midpoint).
        (g.agreed, g.claimantRoot, s.transcriptCommit) = (leaf.start, leaf.end, leaf.transcriptCommit);
        (g.counterRoot, g.pendingRoot) = (counterEnd, atMid);
        s.stage = Stage.Transcript;
        g.counterToMove = false;
        emit Contested(id, counterEnd, s.interval);
    }

    /// @inheritdoc ISegmentGame
    function openTranscript(uint256 id, Transcript calldata t, bytes32 atPending, bytes32 atNext) external {
        Game storage s = _at(id, Stage.Transcript);
        Bisection.Game storage g = s.g;
        g.charge(msg.sender);
        uint256 steps = t.losses.length / 4;
        // INVARIANT: the losses judged are the ones the unit committed to, one per step of the segment.
        if (
            t.losses.length != 4 * uint256(s.interval) ||
            Transcripts.commit(t.author, t.losses, g.claimantRoot) != s.transcriptCommit
        ) revert NotTranscript(steps, s.transcriptCommit);
        // INVARIANT: the work is the claimant's own, or inherited through the unit's on-chain partial commitment.
        if (t.author != g.claimant && !_inherited(s, t.partialProof))
            return _decide(id, s, g.counter, Reason.WrongAuthor);
        bytes32 end = Transcripts.position(g.claimantRoot, Transcripts.lossesHash(t.losses));
        emit TranscriptOpened(id, t.author, t.losses, end);
        (bytes32 counterEnd, bytes32 counterMid) = (g.counterRoot, g.pendingRoot);
        if (end == counterEnd) return _decide(id, s, g.claimant, Reason.EndsAgree);
        // Position i of the bisection is the state and the losses after i steps: both agree on the start.
        // INVARIANT: one clock per side over the whole game: the bisection starts, the clocks go on.
        g.restart(Bisection.Ends(0, s.interval, Transcripts.position(g.agreed, bytes32(0)), end, counterEnd));
        s.stage = Stage.Steps;
        if (g.done()) return _narrowed(id, s);
        // The contest held the counter's first move; this is the claimant's answer to it, so the stage takes one
        // move fewer than with the claimant opening it.
        (g.pending, g.pendingRoot) = (true, counterMid);
        g.move(msg.sender, atPending, atNext);
        emit StepsMoved(id, msg.sender, g.lo, g.hi);
        if (g.done()) _narrowed(id, s);
    }

    /// @dev The disputed segment is in the unit's on-chain partial commitment (`proof`: its leaf's path there), so
    ///      its transcript's author is whoever the partial's committer resumed it from.
    function _inherited(Game storage s, bytes32[] calldata proof) private view returns (bool) {
        (, bytes32 root, uint32 segments) = pool.partialOf(s.unitId);
        return
            s.segment < segments &&
            Segments.verify(root, s.segment, s.g.agreed, s.g.claimantRoot, s.transcriptCommit, proof);
    }

    /// @inheritdoc ISegmentGame
    function refuteStart(uint256 id, SegmentLeaf calldata disputed, SegmentLeaf calldata previous) external {
        Game storage s = _at(id, Stage.Contest);
        s.g.charge(msg.sender);
        if (s.segment == 0) revert WrongSegmentForStart(0);
        _open(id, s, disputed);
        _verifyLeaf(s, s.segment - 1, previous);
        if (previous.end == disputed.start) revert NotRefuted(id, Reason.BrokenChain);
        _decide(id, s, s.g.counter, Reason.BrokenChain);
    }

    /// @dev The disputed segment's leaf, opened by the counter in the claimant's checkpoint root.
    function _open(uint256 id, Game storage s, SegmentLeaf calldata leaf) private {
        _verifyLeaf(s, s.segment, leaf);
        emit SegmentOpened(id, s.segment, leaf.start, leaf.end);
    }

    function _verifyLeaf(Game storage s, uint256 segment, SegmentLeaf calldata leaf) private view {
        if (!Segments.verify(s.checkpointRoot, segment, leaf.start, leaf.end, leaf.transcriptCommit, leaf.proof)) {
            revert NotInCheckpoints(segment);
        }
    }

    /// @inheritdoc ISegmentGame
    function contestStart(uint256 id, SegmentLeaf calldata leaf) external {
        Game storage s = _at(id, Stage.Contest);
        Bisection.Game storage g = s.g;
        g.charge(msg.sender);
        if (s.segment != 0) revert WrongSegmentForStart(s.segment);
        _open(id, s, leaf);
        // A later round's start is a function of the round's agreed weights, which the chain does not hold
        // (docs/dispute-game.md): neither side can be shown wrong, so neither loses and the unit is trained again.
        if (s.round != 0) return _decide(id, s, address(0), Reason.StartUnbound);
        g.agreed = leaf.start; // the start the claimant must show is the job's
        s.stage = Stage.Start;
        g.counterToMove = false;
    }

    /// @inheritdoc ISegmentGame
    function proveStart(uint256 id, bytes32[] calldata proof) external {
        Game storage s = _at(id, Stage.Start);
        s.g.charge(msg.sender);
        bytes32 leaf = keccak256(abi.encodePacked(uint256(0), uint256(s.shard), START, s.g.agreed, bytes32(0)));
        if (!MerkleProof.verifyCalldata(proof, s.stepsRoot, leaf)) revert NotInStepTable(START);
        _decide(id, s, s.g.claimant, Reason.StartProven);
    }

    // ---- stage (a): the steps of the segment ----

    /// @inheritdoc ISegmentGame
    function moveSteps(uint256 id, bytes32 atPending, bytes32 atNext) external {
        Game storage s = _at(id, Stage.Steps);
        s.g.move(msg.sender, atPending, atNext);
        emit StepsMoved(id, msg.sender, s.g.lo, s.g.hi);
        if (s.g.done()) _narrowed(id, s);
    }

    /// @dev One step lo -> lo + 1 is left: the claimant reveals it next.
    function _narrowed(uint256 id, Game storage s) private {
        s.stage = Stage.Reveal;
        // INVARIANT: the claimant reveals the step whoever made the last move (its clock runs from now).
        s.g.counterToMove = false;
        emit StepNarrowed(id, s.g.lo, _unitStep(s));
    }

    // ---- the disputed step, bound to the unit's commitments ----

    /// @inheritdoc ISegmentGame
    function revealStep(uint256 id, StepReveal calldata r) external {
        Game storage s = _at(id, Stage.Reveal);
        Bisection.Game storage g = s.g;
        g.charge(msg.sender);
        uint256 step = _unitStep(s);
        bytes32 program = Hashes.commutativeKeccak256(r.opsRoot, StepBinding.outputsRoot(r.outputKeys, r.outputOps));
        bytes32 leaf = keccak256(abi.encodePacked(uint256(s.round), uint256(s.shard), step, program, r.batchRoot));
        if (!MerkleProof.verifyCalldata(r.tableProof, s.stepsRoot, leaf)) revert NotInStepTable(step);
        bytes32 prior = StepBinding.stateRoot(r.prior);
        // INVARIANT: the revealed step starts at the agreed position and ends at the claimant's, losses included.
        _checkRoot(Transcripts.position(prior, r.lossesBefore), g.agreed);
        bytes32 lossesAfter = Transcripts.next(r.lossesBefore, r.loss);
        _checkRoot(Transcripts.position(StepBinding.stateRoot(r.next), lossesAfter), g.claimantRoot);
        bytes32 lossRoot = Transcripts.lossRoot(r.loss);
        (uint256[] memory ops, bytes32[] memory roots) = StepBinding.bind(r, s.round, s.shard, step + 1, lossRoot);
        _checkOutputs(r, ops, roots);
        _playStep(id, s, program, prior, r);
    }

    /// @dev Open the step game over the claimant's trace of the revealed step. The counter's trace root comes with
    ///      its first move there (`IStepGame.contestTrace`), which spares this game a move of its own.
    function _playStep(uint256 id, Game storage s, bytes32 program, bytes32 prior, StepReveal calldata r) private {
        Bisection.Game storage g = s.g;
        // A state input's proof is its path in the state at t then the batch root, a batch input's the reverse.
        bytes32 inputs = Hashes.commutativeKeccak256(prior, r.batchRoot);
        s.stage = Stage.Step;
        uint256 gameId = stepGame.open(g.claimant, g.counter, program, inputs, r.nOps, r.traceRoot, bytes32(0));
        s.stepGame = gameId;
        emit StepRevealed(id, gameId, program, inputs, r.nOps, r.traceRoot);
    }

    /// @dev Each named output the next state holds, and the loss, is its op's output in the claimant's trace: opened
    ///      there with the op's own index inside the leaf. A leaf placed at another slot than its index cannot help a
    ///      liar: the step game then narrows to the first slot where the claimant's trace differs, where only the
    ///      leaf of that very op opens.
    function _checkOutputs(StepReveal calldata r, uint256[] memory ops, bytes32[] memory roots) private pure {
        // INVARIANT: the step game accepts the op count revealed, so an honest counter can always play it.
        if (r.nOps > MAX_OPS) revert OpOutOfRange(r.nOps, MAX_OPS);
        if (r.outputs.length != ops.length) revert LengthMismatch(ops.length, r.outputs.length);
        for (uint256 i; i < ops.length; ++i) {
            OpOpening calldata op = r.outputs[i];
            if (ops[i] >= r.nOps) revert OpOutOfRange(ops[i], r.nOps);
            if (op.index != ops[i] || op.outputRoot != roots[i]) revert NotBound(i, ops[i], roots[i]);
            if (!TraceProofs.verifyOp(r.traceRoot, op)) revert NotInTrace(ops[i]);
        }
    }

    // ---- ending ----

    /// @inheritdoc ISegmentGame
    function settle(uint256 id) external {
        Game storage s = _at(id, Stage.Step);
        (bool decided, address winner) = stepGame.resultOf(s.stepGame);
        if (!decided) revert StepGameRunning(s.stepGame);
        _decide(id, s, winner, Reason.StepGame);
    }

    /// @inheritdoc ISegmentGame
    function timeout(uint256 id) external {
        Game storage s = _game(id);
        if (s.stage == Stage.Step || s.stage == Stage.Decided) revert WrongStage(id, Stage.Reveal, s.stage);
        address loser = s.g.outOfTime();
        _decide(id, s, loser == s.g.claimant ? s.g.counter : s.g.claimant, Reason.Timeout);
    }

    /// @inheritdoc IDisputeResolver
    function maxDuration() external view returns (uint64) {
        // Each side's clock here and in the step game, all spent: the longest a dispute stays open.
        return 2 * clock + 2 * stepGame.clock();
    }

    // ---- views ----

    /// @inheritdoc ISegmentGame
    function disputeOf(
        uint256 id
    ) external view returns (Stage stage, uint256 unitId, uint256 segment, uint256 gameId, address winner) {
        Game storage s = _game(id);
        return (s.stage, s.unitId, s.segment, s.stepGame, s.winner);
    }

    /// @inheritdoc ISegmentGame
    function stepsOf(
        uint256 id
    ) external view returns (uint64 lo, uint64 hi, bytes32 agreed, bytes32 claimantRoot, bytes32 counterRoot) {
        Bisection.Game storage g = _game(id).g;
        return (g.lo, g.hi, g.agreed, g.claimantRoot, g.counterRoot);
    }

    /// @inheritdoc ISegmentGame
    function pendingOf(uint256 id) external view returns (bool pending, bytes32 root) {
        Bisection.Game storage g = _game(id).g;
        return (g.pending, g.pendingRoot);
    }

    /// @inheritdoc ISegmentGame
    function deadline(uint256 id) external view returns (address mover, uint64 due) {
        Bisection.Game storage g = _game(id).g;
        return (g.mover(), g.deadline());
    }

    // ---- internals ----

    /// @dev The unit step the disputed transition starts from: the segment's first step plus `lo`.
    function _unitStep(Game storage s) private view returns (uint256) {
        return uint256(s.segment) * s.interval + s.g.lo;
    }

    function _checkRoot(bytes32 computed, bytes32 expected) private pure {
        if (computed != expected) revert StateMismatch(computed, expected);
    }

    function _game(uint256 id) private view returns (Game storage s) {
        s = _games[id];
        if (s.stage == Stage.None) revert UnknownDispute(id);
    }

    function _at(uint256 id, Stage want) private view returns (Game storage s) {
        s = _game(id);
        if (s.stage != want) revert WrongStage(id, want, s.stage);
    }

    /// @dev Decide for `winner` (zero: no decision) and settle in the pool: the solver honest when the claimant
    ///      wins, fraud when the counter does, `NoQuorum` (the unit reopened, nobody slashed) without a winner.
    function _decide(uint256 id, Game storage s, address winner, Reason reason) private {
        s.stage = Stage.Decided;
        s.winner = winner;
        Outcome outcome =
            winner == address(0)
                ? Outcome.NoQuorum
                : (winner == s.g.claimant ? Outcome.SolverHonest : Outcome.SolverFraud);
        emit GameDecided(id, winner, reason, uint8(outcome));
        pool.onDisputeResolved(s.unitId, outcome, new address[](0));
    }
}
