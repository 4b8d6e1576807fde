// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {IStepGame} from "./interfaces/IStepGame.sol";
import {Bisection} from "./libraries/Bisection.sol";
import {TraceProofs} from "./libraries/TraceProofs.sol";
import {ElementReferee} from "./referee/ElementReferee.sol";
import {ElementCheck, OpOpening} from "./types/Trace.sol";

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
///      leaf in its prefix of i + 1 ops, every other slot equal. The output element's value is opened in the
///      claimant's output tensor, which the counter must hold (the claimant's published trace); narrowing to an
///      element on-chain, and dot ops, are later stages (docs/dispute-game.md).
contract StepGame is IStepGame {
    using Bisection for Bisection.Game;

    /// @dev Prefix trees hold at most 2^24 ops.
    uint8 internal constant MAX_DEPTH = 24;
    bytes32 internal constant INPUT = keccak256("input");

    struct Game {
        Bisection.Game g;
        bytes32 program;
        bytes32 inputs;
        uint8 depth;
        Stage stage;
        bytes32 opened; // the claimant's leaf of the disputed op
    }

    /// @notice Who may open games: the contract that binds the traces to commitments (the deployer until then).
    address public immutable opener;
    /// @notice Seconds each side has over a whole game.
    uint64 public immutable clock;
    /// @notice The referee that recomputes one element of an elementwise op.
    ElementReferee public immutable elements;
    /// @notice Games opened so far; ids run from 1.
    uint256 public gameCount;
    mapping(uint256 => Game) internal _games;

    constructor(address opener_, uint64 clock_, ElementReferee elements_) {
        opener = opener_;
        clock = clock_;
        elements = elements_;
    }

    // ---- opening and the bisection ----

    /// @notice Open a game: the claimant's trace has op-prefix root `claimantRoot` over `nOps` ops, the counter's
    ///         `counterRoot`; both ran `program` on the named inputs of `inputs`. The claimant moves first.
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
        s.stage = Stage.Ops;
        // Position i of the bisection is the prefix of i ops: both agree on the empty prefix.
        Bisection.Ends memory e = Bisection.Ends(0, uint64(nOps), emptyRoot(depth), claimantRoot, counterRoot);
        s.g.start(claimant, counter, e, clock);
        emit GameOpened(gameId, claimant, counter, program, inputs, nOps, depth);
        if (s.g.done()) _narrowed(gameId, s); // one op: nothing to bisect
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
    function openOp(uint256 gameId, OpOpening calldata op) external {
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
        s.stage = Stage.Refute;
        s.g.counterToMove = true;
        emit OpOpened(gameId, op);
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
    ///         `c` opens the op (its slot path in the claimant's prefix root), the input elements and the
    ///         claimant's output element (`ElementStep.check`).
    function refuteElement(uint256 gameId, ElementCheck calldata c) external {
        Game storage s = _refuting(gameId, c.op);
        (, , bool same) = elements.check(s.g.claimantRoot, c);
        _decide(gameId, s, !same, Reason.WrongElement);
    }

    // ---- clocks ----

    /// @notice Decide a game for the side not to move once the side to move ran out of time.
    function timeout(uint256 gameId) external {
        Game storage s = _game(gameId);
        if (s.stage == Stage.Decided) revert WrongStage(gameId, Stage.Ops, Stage.Decided);
        Bisection.Game storage g = s.g;
        address loser = g.mover();
        uint64 due = g.deadline();
        if (block.timestamp <= due) revert ClockRunning(loser, due);
        s.stage = Stage.Decided;
        address winner = loser == g.claimant ? g.counter : g.claimant;
        emit GameDecided(gameId, winner, loser, Reason.Timeout);
    }

    // ---- views ----

    /// @inheritdoc IStepGame
    function deadline(uint256 gameId) external view returns (address mover, uint64 due) {
        Game storage s = _game(gameId);
        return (s.g.mover(), s.g.deadline());
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

    // ---- internals ----

    function _game(uint256 gameId) private view returns (Game storage s) {
        s = _games[gameId];
        if (s.stage == Stage.None) revert UnknownGame(gameId);
    }

    function _at(uint256 gameId, Stage want) private view returns (Game storage s) {
        s = _game(gameId);
        if (s.stage != want) revert WrongStage(gameId, want, s.stage);
    }

    /// @dev The counter's turn to refute, with `op` the leaf the claimant opened; charges the counter's clock.
    function _refuting(uint256 gameId, OpOpening calldata op) private returns (Game storage s) {
        s = _at(gameId, Stage.Refute);
        _charge(s.g, s.g.counter);
        bytes32 leaf = TraceProofs.opLeaf(op);
        if (leaf != s.opened) revert NotOpenedOp(leaf, s.opened);
    }

    /// @dev `who` moves now: its turn, inside its clock; the time it took comes off its clock.
    function _charge(Bisection.Game storage g, address who) private {
        address expected = g.mover();
        if (msg.sender != who || msg.sender != expected) revert NotYourTurn(msg.sender, expected);
        uint64 due = g.deadline();
        if (block.timestamp > due) revert ClockExpired(msg.sender, due);
        uint64 spent = uint64(block.timestamp) - g.turnStarted;
        if (g.counterToMove) g.counterClock -= spent;
        else g.claimantClock -= spent;
        g.turnStarted = uint64(block.timestamp);
    }

    /// @dev A refutation that holds decides for the counter; one that does not reverts (the counter may try
    ///      another while its clock runs).
    function _decide(uint256 gameId, Game storage s, bool refuted, Reason reason) private {
        if (!refuted) revert NotRefuted(gameId, reason);
        s.stage = Stage.Decided;
        emit GameDecided(gameId, s.g.counter, s.g.claimant, reason);
    }
}
