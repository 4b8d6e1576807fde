// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {IStepGame, OutputReveal} from "./interfaces/IStepGame.sol";
import {Bisection} from "./libraries/Bisection.sol";
import {OutputDescent} from "./libraries/OutputDescent.sol";
import {PackedMoves} from "./libraries/PackedMoves.sol";
import {TraceProofs} from "./libraries/TraceProofs.sol";
import {DotReferee} from "./referee/DotReferee.sol";
import {ElementReferee} from "./referee/ElementReferee.sol";
import {MoveReferee} from "./referee/MoveReferee.sol";
import {MoveCheck, OpOpening} from "./types/Trace.sol";
import {StepGameBase} from "./step/StepGameBase.sol";
import {StepGameDots} from "./step/StepGameDots.sol";
import {StepGameRows} from "./step/StepGameRows.sol";

/// @title StepGame: one traced repro step, two traces, the contract decides which is wrong at their first difference.
/// @notice Stage (b) of docs/dispute-game.md and its last move. A game's opener (the contract that bound both
///         traces to the parties' commitments) gives the step's program root (each op's code, attributes and input
///         ids), the agreed named inputs root, the op count and each side's op-prefix root over the whole trace.
///         The sides bisect over op-prefix roots (`Bisection`) to the first op i they differ on; the claimant opens
///         its leaf of op i in its prefix root; the counter then refutes that leaf or loses:
///         - its code, attributes or input ids are not the program's (`refuteProgram`);
///         - an input root is not the output root of the op that produced it, opened in the agreed prefix
///           (`refuteInputRoot`);
///         - it is a named input whose root is not the agreed one (`refuteNamedInput`);
///         - an output element is not what the rule computes from the inputs (`refuteElement`, elementwise ops).
///         Each side has a chess clock over the whole game; a side whose clock runs out loses (`timeout`).
/// @dev Op-prefix roots: the op leaves (`TraceProofs.opLeaf`) in slots 0..i-1 of a complete binary tree of `depth`
///      levels, later slots zero, OpenZeppelin's commutative hashing (`gensyn_py/proof/op_prefix.py`). One sibling
///      path then proves both that slot i is empty in the agreed prefix (i ops) and that it holds the claimant's
///      leaf in its prefix of i + 1 ops, every other slot equal. An output that differs is narrowed to one chunk
///      (`descend`) and one element; a row maximum's element and a dot element go on in `StepGameRows` and
///      `StepGameDots` (contracts/step/, with the state and checks they share in `StepGameBase`).
contract StepGame is StepGameRows, StepGameDots {
    using Bisection for Bisection.Game;
    using OutputDescent for OutputDescent.Tree;

    constructor(
        address opener_,
        uint64 clock_,
        ElementReferee elements_,
        DotReferee dots_,
        MoveReferee moves_
    ) StepGameBase(opener_, clock_, elements_, dots_, moves_) {}

    // ---- opening and the bisection ----

    /// @notice Open a game: the claimant's trace has op-prefix root `claimantRoot` over `nOps` ops, the counter's
    ///         `counterRoot`; both ran `program` on the named inputs of `inputs`. The claimant moves first; with a
    ///         zero `counterRoot` the counter does, posting its root (`contestTrace`).
    function open(
        address claimant,
        address counter,
        bytes32 program,
        bytes32 inputs,
        uint256 nOps,
        bytes32 claimantRoot,
        bytes32 counterRoot
    ) external returns (uint256 gameId) {
        if (msg.sender != opener) revert NotOpener(msg.sender);
        if (nOps == 0 || nOps > uint256(1) << MAX_DEPTH) revert BadOpCount(nOps);
        uint8 depth = depthFor(nOps);
        gameId = ++gameCount;
        Game storage s = _games[gameId];
        s.program = program;
        s.inputs = inputs;
        s.depth = depth;
        // Position i of the bisection is the prefix of i ops: both agree on the empty prefix.
        Bisection.Ends memory e = Bisection.Ends(0, uint64(nOps), emptyRoot(depth), claimantRoot, counterRoot);
        s.g.start(claimant, counter, e, clock);
        emit GameOpened(gameId, claimant, counter, program, inputs, nOps, depth);
        if (counterRoot == bytes32(0)) {
            // The counter posts its root with its first bisection move: one move fewer than a separate opening.
            s.stage = Stage.Trace;
            s.g.counterToMove = true;
            return gameId;
        }
        s.stage = Stage.Ops;
        if (s.g.done()) _narrowed(gameId, s); // one op: nothing to bisect
    }

    /// @inheritdoc IStepGame
    function contestTrace(uint256 gameId, bytes32 counterRoot, bytes32 atMid) external {
        Game storage s = _counterAt(gameId, Stage.Trace);
        Bisection.Game storage g = s.g;
        // INVARIANT: one clock per side over the whole game: the bisection restarts with the counter's root, the
        // clocks go on.
        g.restart(Bisection.Ends(0, g.hi, g.agreed, g.claimantRoot, counterRoot));
        s.stage = Stage.Ops;
        emit TraceContested(gameId, counterRoot);
        if (g.done()) return _narrowed(gameId, s);
        g.counterToMove = true;
        g.move(msg.sender, bytes32(0), atMid);
        emit OpsMoved(gameId, msg.sender, g.lo, g.hi);
    }

    /// @notice One bisection move: the mover's prefix root at the pending midpoint and at the next one
    ///         (`Bisection.move`). The move that ends the bisection hands the claimant the opening of the op.
    function moveOps(uint256 gameId, bytes32 atPending, bytes32 atNext) external {
        Game storage s = _at(gameId, Stage.Ops);
        s.g.move(msg.sender, atPending, atNext);
        emit OpsMoved(gameId, msg.sender, s.g.lo, s.g.hi);
        if (s.g.done()) _narrowed(gameId, s);
    }

    /// @dev The bisection is over: the claimant opens op lo next.
    function _narrowed(uint256 gameId, Game storage s) private {
        s.stage = Stage.OpenOp;
        // INVARIANT: the claimant opens the disputed op whoever made the last move (its clock runs from now).
        s.g.counterToMove = false;
        emit OpNarrowed(gameId, s.g.lo);
    }

    /// @notice The claimant opens its leaf of the disputed op i = lo: `op.proof` is the sibling path of slot i,
    ///         which must lead to the agreed prefix with slot i empty and to the claimant's with slot i = the leaf.
    ///         `out` reveals the leaf's output down to its data root's children, where a descent starts.
    function openOp(uint256 gameId, OpOpening calldata op, OutputReveal calldata out) external {
        Game storage s = _at(gameId, Stage.OpenOp);
        _charge(s.g, s.g.claimant);
        uint256 i = s.g.lo;
        if (op.index != i) revert WrongOp(op.index, i);
        if (op.proof.length != s.depth) revert BadSlotPath(op.proof.length, s.depth);
        bytes32 leaf = TraceProofs.opLeaf(op);
        bytes32 agreed = MerkleProof.processProofCalldata(op.proof, bytes32(0));
        bytes32 mine = MerkleProof.processProofCalldata(op.proof, leaf);
        // INVARIANT: the opened leaf is the only slot in which the claimant's prefix differs from the agreed one.
        if (agreed != s.g.agreed || mine != s.g.claimantRoot) revert SlotMismatch(agreed, mine);
        s.opened = leaf;
        emit OpOpened(gameId, op);
        _descents[gameId].reveal(gameId, op.outputRoot, out);
        s.stage = Stage.Refute;
        s.g.counterToMove = true;
    }

    // ---- the counter's refutations: each decides for the counter, or reverts NotRefuted ----

    /// @notice The opened op's code, attributes or input ids are not entry i of the program: `code`, `attrs` and
    ///         `ids` are the program's, `proof` their path in the program root.
    function refuteProgram(
        uint256 gameId,
        OpOpening calldata op,
        bytes32 code,
        bytes32 attrs,
        uint256[] calldata ids,
        bytes32[] calldata proof
    ) external {
        Game storage s = _refuting(gameId, op);
        if (!MerkleProof.verifyCalldata(proof, s.program, programLeaf(op.index, code, attrs, ids))) {
            revert NotInProgram(op.index);
        }
        bool differs = code != op.codeHash || attrs != op.attrsHash || ids.length != op.inputs.length;
        for (uint256 j; !differs && j < ids.length; ++j) differs = ids[j] != op.inputs[j].id;
        _decide(gameId, s, differs, Reason.WrongProgram);
    }

    /// @notice Input `input` of the opened op names tensor id p with a root other than the output root of op p,
    ///         opened (`producer`, path in the agreed prefix) as both sides committed it.
    function refuteInputRoot(
        uint256 gameId,
        OpOpening calldata op,
        uint256 input,
        OpOpening calldata producer
    ) external {
        Game storage s = _refuting(gameId, op);
        if (input >= op.inputs.length) revert NoSuchInput(input, op.inputs.length);
        uint256 p = op.inputs[input].id;
        // INVARIANT: the producer is the op the input names, and one both sides agree on (in the agreed prefix).
        if (producer.index != p || !TraceProofs.verifyOp(s.g.agreed, producer)) revert NotProducer(input, p);
        _decide(gameId, s, producer.outputRoot != op.inputs[input].root, Reason.WrongInputRoot);
    }

    /// @notice The opened op is a named input whose root is not the agreed one: `root` is the inputs root's entry
    ///         for its name (its attributes), `proof` that entry's path.
    function refuteNamedInput(uint256 gameId, OpOpening calldata op, bytes32 root, bytes32[] calldata proof) external {
        Game storage s = _refuting(gameId, op);
        if (op.codeHash != INPUT || !MerkleProof.verifyCalldata(proof, s.inputs, inputLeaf(op.attrsHash, root))) {
            revert NotNamedInput(op.codeHash);
        }
        _decide(gameId, s, root != op.outputRoot, Reason.WrongNamedInput);
    }

    /// @notice An output element of the opened (elementwise) op is not what the rule computes from its inputs:
    ///         `move` is packed (`ElementStep.check`, `contracts/libraries/PackedMoves.sol`): the opened op leaf with
    ///         a path of depth 0 (the referee proves it against the opened leaf's hash as a one-leaf tree), the
    ///         claimant's output element and the input elements. The same holds for every `DotMove` below.
    function refuteElement(uint256 gameId, bytes calldata move) external {
        uint256 index = PackedMoves.word(move, 0);
        _refuteByReferee(gameId, index, address(elements), ElementReferee.check.selector, Reason.WrongElement);
    }

    /// @notice An output element of the opened data-movement, constant or index-map op is not the input element it
    ///         copies, or not the value its attributes give (`MoveReferee.check`; the op leaf given with no path,
    ///         as for `refuteElement`).
    function refuteMove(uint256 gameId, MoveCheck calldata c) external {
        _refuteByReferee(gameId, c.op.index, address(moves), MoveReferee.check.selector, Reason.WrongMove);
    }

    /// @dev The counter's one-call refutation of the opened op `index`: `referee` checks this call's own arguments
    ///      (forwarded) and says whether the claimant's element is the rule's.
    function _refuteByReferee(uint256 gameId, uint256 index, address referee, bytes4 selector, Reason reason) private {
        Game storage s = _deciding(gameId, Stage.Refute);
        if (index != s.g.lo) revert WrongOp(index, s.g.lo);
        bytes memory ret = _forward(referee, selector, s.opened);
        (, , bool same) = abi.decode(ret, (uint256, uint256, bool));
        _decide(gameId, s, !same, reason);
    }

    // ---- the output: a descent to one chunk where the claimant's output differs from the counter's ----

    /// @notice One level down the claimant's output data tree: the mover's children of the current node (`mine*`),
    ///         compared with the other side's (the first child that differs is where both go), and its children of
    ///         that child (`next*`). Once the child is a chunk, a claimant's `nextLeft` is its chunk there, revealed
    ///         with the move (one move fewer); a counter's `next*` are unused and the claimant reveals the chunk
    ///         next. The counter's first descent, instead of a refutation, contests the output (once per game).
    function descend(
        uint256 gameId,
        bytes32 mineLeft,
        bytes32 mineRight,
        bytes32 nextLeft,
        bytes32 nextRight
    ) external {
        Game storage s = _game(gameId);
        OutputDescent.Tree storage d = _descents[gameId];
        if (s.stage == Stage.Refute) {
            if (d.contested) revert AlreadyContested(gameId);
            d.contested = true;
            s.stage = Stage.Descend;
        } else if (s.stage != Stage.Descend) {
            revert WrongStage(gameId, Stage.Descend, s.stage);
        }
        Bisection.Game storage g = s.g;
        bool byCounter = g.counterToMove;
        _charge(g, byCounter ? g.counter : g.claimant);
        if (!d.step(gameId, byCounter, [mineLeft, mineRight, nextLeft, nextRight])) {
            g.counterToMove = !byCounter;
            return;
        }
        emit ChunkNarrowed(gameId, d.index);
        if (!byCounter) return _revealChunk(gameId, s, d, nextLeft); // the claimant's chunk came with its move
        s.stage = Stage.RevealChunk;
        g.counterToMove = false;
    }

    /// @notice The claimant's chunk at the leaf the descent reached (when the counter's move reached it); the
    ///         counter refutes one of its elements next (`refuteElement` or `challengeDot`, opening it with the
    ///         siblings the claimant posted on the way).
    function revealChunk(uint256 gameId, bytes32 chunk) external {
        Game storage s = _at(gameId, Stage.RevealChunk);
        _charge(s.g, s.g.claimant);
        _revealChunk(gameId, s, _descents[gameId], chunk);
    }

    function _revealChunk(uint256 gameId, Game storage s, OutputDescent.Tree storage d, bytes32 chunk) private {
        d.checkChunk(chunk);
        s.stage = Stage.Refute;
        s.g.counterToMove = true;
        emit ChunkRevealed(gameId, d.index, chunk);
    }

    // ---- clocks ----

    /// @notice Decide a game for the side not to move once the side to move ran out of time.
    function timeout(uint256 gameId) external {
        Game storage s = _game(gameId);
        if (s.stage == Stage.Decided) revert WrongStage(gameId, Stage.Ops, Stage.Decided);
        Bisection.Game storage g = s.g;
        address loser = g.outOfTime();
        s.stage = Stage.Decided;
        bool claimantLost = loser == g.claimant;
        s.won = claimantLost ? WON_COUNTER : WON_CLAIMANT;
        emit GameDecided(gameId, claimantLost ? g.counter : g.claimant, loser, Reason.Timeout);
    }

    // ---- views ----

    /// @inheritdoc IStepGame
    function deadline(uint256 gameId) external view returns (address mover, uint64 due) {
        Game storage s = _game(gameId);
        return (s.g.mover(), s.g.deadline());
    }

    /// @inheritdoc IStepGame
    function resultOf(uint256 gameId) external view returns (bool decided, address winner) {
        Game storage s = _game(gameId);
        winner =
            s.won == WON_CLAIMANT
                ? s.g.claimant
                : s.won == WON_COUNTER
                    ? s.g.counter
                    : address(0);
        return (s.stage == Stage.Decided, winner);
    }

    /// @notice A game's stage, interval, agreed root and both sides' roots at `hi`.
    function gameOf(
        uint256 gameId
    )
        external
        view
        returns (Stage stage, uint64 lo, uint64 hi, bytes32 agreed, bytes32 claimantRoot, bytes32 counterRoot)
    {
        Game storage s = _game(gameId);
        Bisection.Game storage g = s.g;
        return (s.stage, g.lo, g.hi, g.agreed, g.claimantRoot, g.counterRoot);
    }

    /// @notice The pending midpoint's root (the other side's, for the side to move), and whether one is pending.
    function pendingOf(uint256 gameId) external view returns (bool pending, bytes32 root) {
        Bisection.Game storage g = _game(gameId).g;
        return (g.pending, g.pendingRoot);
    }

    /// @notice Where a descent stands: the node (height, index) both sides are on, the tree's chunks, the children
    ///         the side not to move posted there.
    function descentOf(
        uint256 gameId
    ) external view returns (uint8 level, uint64 index, uint64 chunks, bytes32 pendingLeft, bytes32 pendingRight) {
        OutputDescent.Tree storage d = _descents[gameId];
        return (d.level, d.index, d.chunks, d.pendingLeft, d.pendingRight);
    }

    // ---- the commitments, as gensyn_py/proof/op_prefix.py and step_program.py build them ----

    /// @notice Levels of the prefix tree of `nOps` ops: ceil(log2 nOps), at least 1.
    function depthFor(uint256 nOps) public pure returns (uint8 depth) {
        depth = 1;
        while (uint256(1) << depth < nOps) ++depth;
    }

    /// @notice The root of `depth` levels of empty slots: the prefix of no ops.
    function emptyRoot(uint8 depth) public pure returns (bytes32 z) {
        for (uint8 level; level < depth; ++level) z = Hashes.commutativeKeccak256(z, z);
    }

    /// @notice Program entry i: keccak256(uint256 i ++ code hash ++ attributes hash ++ uint256 input id...).
    function programLeaf(
        uint256 index,
        bytes32 code,
        bytes32 attrs,
        uint256[] calldata ids
    ) public pure returns (bytes32) {
        return keccak256(abi.encodePacked(index, code, attrs, ids));
    }

    /// @notice Named-input entry: keccak256(attributes hash of the input op (its name) ++ tensor root).
    function inputLeaf(bytes32 attrs, bytes32 root) public pure returns (bytes32) {
        return keccak256(abi.encodePacked(attrs, root));
    }
}
