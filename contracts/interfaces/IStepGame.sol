// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {OpOpening} from "../types/Trace.sol";

/// @notice The claimant's output of the op it opens: header, data root and the data root's two children (zero for
///         an output of one chunk), so a descent can start at once.
struct OutputReveal {
    uint256 dtype;
    uint256[] shape;
    bytes32 dataRoot;
    bytes32 left;
    bytes32 right;
}

/// @title The step game: two traces of one repro training step, narrowed to one op and judged by the contract.
/// @notice Stage (b) of docs/dispute-game.md and its last move: the claimant's and the counter's traces of the same
///         step (same program, same named inputs) are bisected over their op-prefix roots to the first op they
///         differ on; the claimant opens its leaf of that op; the counter refutes it (wrong code or wiring against
///         the program, an input root that is not the agreed producer's output, a named input that is not the
///         agreed one, an output element the rule does not give) or loses.
interface IStepGame {
    /// @notice Where a game stands: bisecting ops, waiting for the claimant's op leaf, waiting for the counter's
    ///         refutation, or decided.
    enum Stage {
        None,
        Trace, // opened without the counter's trace root: the counter posts it with its first bisection move
        Ops,
        OpenOp,
        Refute,
        Descend,
        RevealChunk,
        DotAnswer,
        DotChallenge,
        DotBisect,
        DotStep,
        RowAnswer,
        RowChallenge,
        Decided
    }

    /// @notice Why a game was decided (`GameDecided.reason`).
    enum Reason {
        Timeout,
        WrongProgram,
        WrongInputRoot,
        WrongNamedInput,
        WrongElement,
        WrongBlock,
        WrongMultiplyAdd,
        NonFiniteDot,
        WrongMove,
        WrongRowMax
    }

    /// @notice The constructor's clock is zero or longer than a day.
    error InvalidClock(uint64 clock);
    /// @notice A caller other than the opener (the contract that bound the two traces' roots) opened a game.
    error NotOpener(address caller);
    /// @notice The op count is zero or beyond 2^MAX_DEPTH.
    error BadOpCount(uint256 nOps);
    /// @notice No game `gameId`.
    error UnknownGame(uint256 gameId);
    /// @notice The call belongs to stage `expected`; the game is at `actual`.
    error WrongStage(uint256 gameId, Stage expected, Stage actual);
    /// @notice The opened op leaf is not of the disputed op `expected`.
    error WrongOp(uint256 index, uint256 expected);
    /// @notice The slot path has `length` siblings; the prefix tree has `depth` levels.
    error BadSlotPath(uint256 length, uint256 depth);
    /// @notice The slot path does not lead from the agreed prefix (slot empty) to the claimant's (slot holding the
    ///         leaf).
    error SlotMismatch(bytes32 agreedComputed, bytes32 claimantComputed);
    /// @notice The op opening given is not the one the claimant opened.
    error NotOpenedOp(bytes32 leaf, bytes32 opened);
    /// @notice The program leaf is not in the program root, or not of the disputed op.
    error NotInProgram(uint256 index);
    /// @notice The producer op is not the one the input names, or not in the agreed prefix.
    error NotProducer(uint256 input, uint256 producer);
    /// @notice The input index is beyond the op's inputs.
    error NoSuchInput(uint256 input, uint256 count);
    /// @notice The named-input opening is not in the inputs root, or the op is not a named input.
    error NotNamedInput(bytes32 codeHash);
    /// @notice The refutation shows the claimant's op is right in this respect.
    error NotRefuted(uint256 gameId, Reason reason);
    /// @notice The element is not one of the `numel` elements of the claimant's revealed output.
    error NoSuchElement(uint256 element, uint256 numel);
    /// @notice The opened op is not a matmul, sum or index_sum.
    error NotDotOp(bytes32 codeHash);
    /// @notice The dot move is about another element, or other block exponents, than the claimant answered with.
    error NotDisputedElement(uint256 element, uint256 blockA, uint256 blockB);
    /// @notice The entry shown is finite: the disputed element follows the finite rule, and the claimant answers it.
    error FiniteEntry(uint256 k);
    /// @notice The claimant's sum N does not round to its committed element at its block exponents.
    error SumDoesNotRound(int256 n);
    /// @notice The prefix sums given are not the agreed one at `lo` and the claimant's at `lo + 1`.
    error PartialMismatch(int256 prev, int256 cur);
    /// @notice The counter already descended into this op's output once.
    error AlreadyContested(uint256 gameId);
    /// @notice The header and data root given do not hash to the opened op's output root.
    error OutputMismatch(bytes32 computed, bytes32 outputRoot);
    /// @notice The children given do not hash to the mover's node.
    error ChildrenMismatch(bytes32 computed, bytes32 node);
    /// @notice The mover's children equal the other side's: there is no subtree to descend into.
    error NoDifference(uint256 level, uint256 index);
    /// @notice The chunk given is not the claimant's leaf `index`.
    error ChunkMismatch(uint256 index);
    /// @notice Thrown when a `rowmax` witness is not an entry of the disputed row whose value is the committed maximum.
    error NotAWitness(uint256 entry);
    /// @notice Thrown by `challengeRow` for an op other than `rowmax`.
    error NotRowMax(bytes32 codeHash);

    /// @notice A game over the first op where two traces of one step differ.
    event GameOpened(
        uint256 indexed gameId,
        address indexed claimant,
        address indexed counter,
        bytes32 program,
        bytes32 inputs,
        uint256 nOps,
        uint8 depth
    );
    /// @notice A bisection move: the interval [lo, hi] after it.
    event OpsMoved(uint256 indexed gameId, address indexed mover, uint64 lo, uint64 hi);
    /// @notice The bisection ended: op `op` is the first the two traces differ on; the claimant opens it next.
    event OpNarrowed(uint256 indexed gameId, uint256 op);
    /// @notice The claimant opened its leaf of the disputed op (`path`: its slot in the claimant's prefix root).
    event OpOpened(uint256 indexed gameId, OpOpening op);
    /// @notice The claimant's output header and data root (`chunks` leaves of 32 bytes), revealed with its op.
    event OutputRevealed(uint256 indexed gameId, uint256 dtype, uint256[] shape, bytes32 dataRoot, uint256 chunks);
    /// @notice `mover`'s children of node `index` at height `level` of its output's data tree.
    event Children(
        uint256 indexed gameId,
        address indexed mover,
        uint256 level,
        uint256 index,
        bytes32 left,
        bytes32 right
    );
    /// @notice The counter's op-prefix root over its own trace, posted with its first bisection move.
    event TraceContested(uint256 indexed gameId, bytes32 counterRoot);
    /// @notice The descent reached chunk `index`; the claimant reveals it next (with the move that reached it, when
    ///         that move is its own).
    event ChunkNarrowed(uint256 indexed gameId, uint256 index);
    /// @notice The claimant's chunk `index` of the output: the counter refutes one of its elements next.
    event ChunkRevealed(uint256 indexed gameId, uint256 index, bytes32 chunk);
    /// @notice The counter disputes output element `element` of the opened dot op; its own sum is `n`, its prefix sum
    ///         at the midpoint of the multiply-adds `atMid` (the first move of the bisection over them).
    event DotChallenged(uint256 indexed gameId, uint256 element, int256 n, bytes32 atMid);
    /// @notice The claimant's sum for that element: N, its block exponents and the sum's length K. Where the two
    ///         sums differ the sides bisect over the K prefix sums next (position p: the sum of the first p
    ///         multiply-adds); where they agree only a block exponent can still be refuted.
    event DotAnswered(uint256 indexed gameId, int256 n, uint256 blockA, uint256 blockB, uint256 length);
    /// @notice A move of the bisection over prefix sums: the interval after it.
    event DotMoved(uint256 indexed gameId, address indexed mover, uint64 lo, uint64 hi);
    /// @notice The prefix sums were narrowed to multiply-add `k`; the counter proves it wrong next or loses.
    event MultiplyAddNarrowed(uint256 indexed gameId, uint256 k);
    /// @notice The counter disputes output element `element` (a row) of the opened `rowmax`; the claimant shows an
    ///         entry of the row that is its maximum next.
    event RowChallenged(uint256 indexed gameId, uint256 element);
    /// @notice The claimant's witness: entry `entry` of the row, whose value (plus +0) is its committed maximum; the
    ///         counter shows a larger entry next, or loses.
    event RowAnswered(uint256 indexed gameId, uint256 entry);
    /// @notice The game was decided (`winner` and `loser` zero: no decision, see `Reason.NonFiniteDot`).
    event GameDecided(uint256 indexed gameId, address indexed winner, address indexed loser, Reason reason);

    /// @notice Whether game `gameId` is decided, and the winner (zero when it was decided without one:
    ///         `Reason.NonFiniteDot`). The segment game reads it to settle the dispute the step game ended.
    function resultOf(uint256 gameId) external view returns (bool decided, address winner);
    /// @notice A side's clock, the side to move and its deadline.
    function deadline(uint256 gameId) external view returns (address mover, uint64 due);
    /// @notice Open a game between two traces of one step (the opener only); the claimant moves first. A zero
    ///         `counterRoot` leaves the counter to post its root with its first move (`contestTrace`).
    function open(
        address claimant,
        address counter,
        bytes32 program,
        bytes32 inputs,
        uint256 nOps,
        bytes32 claimantRoot,
        bytes32 counterRoot
    ) external returns (uint256 gameId);
    /// @notice The counter's op-prefix root over its trace (of a game opened without it), unequal to the claimant's,
    ///         and its root at the first midpoint (`atMid`: the bisection's first move, ignored for one op).
    function contestTrace(uint256 gameId, bytes32 counterRoot, bytes32 atMid) external;
    /// @notice Seconds each side has over a whole game.
    function clock() external view returns (uint64);
}
