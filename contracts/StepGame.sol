// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {IStepGame, OutputReveal} from "./interfaces/IStepGame.sol";
import {Bisection} from "./libraries/Bisection.sol";
import {OutputDescent} from "./libraries/OutputDescent.sol";
import {TraceProofs} from "./libraries/TraceProofs.sol";
import {DotReferee} from "./referee/DotReferee.sol";
import {ElementReferee} from "./referee/ElementReferee.sol";
import {MoveReferee} from "./referee/MoveReferee.sol";
import {
    BlockWitness,
    DotMove,
    ElementCheck,
    ElementOpening,
    MoveCheck,
    OpOpening,
    RowCheck,
    TensorRef
} from "./types/Trace.sol";

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
    using OutputDescent for OutputDescent.Tree;

    /// @dev Prefix trees hold at most 2^24 ops.
    uint8 internal constant MAX_DEPTH = 24;
    bytes32 internal constant INPUT = keccak256("input");
    bytes32 internal constant ROWMAX = keccak256("rowmax");
    bytes32 internal constant FIRST_MAX = keccak256("first_max");
    // What a first_max answer left the counter to show (`Game.blockA` of a row game; docs/dispute-game.md):
    uint16 internal constant EARLIER_EQUAL = 1; // claimed true at an equal entry j: an equal entry before j
    uint16 internal constant ANY_EQUAL = 2; // claimed true at j = 0, which is not equal: any equal entry
    uint16 internal constant FIRST_EQUAL = 3; // claimed false at j = 0 with a later equal entry: entry 0 equal
    uint16 internal constant NOTHING = 4; // claimed false and shown so: nothing refutes it

    struct Game {
        Bisection.Game g;
        bytes32 program;
        bytes32 inputs;
        bytes32 opened; // the claimant's leaf of the disputed op
        uint256 element; // the disputed output element of a dot op
        int256 sum; // the claimant's N for it
        int256 counterSum; // the counter's
        // One slot from here on: the deciding move writes `stage` and `winner` together (a fresh slot would cost
        // the move 20,000 gas more).
        address winner; // once decided; zero for a game decided without a winner (`Reason.NonFiniteDot`)
        uint32 length; // K: the multiply-adds of that element
        uint16 blockA; // the claimant's block exponents
        uint16 blockB;
        uint8 depth;
        Stage stage;
    }

    /// @notice Who may open games: the contract that binds the traces to commitments (the deployer until then).
    address public immutable opener;
    /// @notice Seconds each side has over a whole game.
    uint64 public immutable clock;
    /// @notice The referee that recomputes one element of an elementwise op.
    ElementReferee public immutable elements;
    /// @notice The referee of a dot element's answer, block exponents and one multiply-add.
    DotReferee public immutable dots;
    /// @notice The referee of one element of a data-movement or constant op.
    MoveReferee public immutable moves;
    /// @notice Games opened so far; ids run from 1.
    uint256 public gameCount;
    mapping(uint256 => Game) internal _games;

    mapping(uint256 => OutputDescent.Tree) internal _descents;

    constructor(address opener_, uint64 clock_, ElementReferee elements_, DotReferee dots_, MoveReferee moves_) {
        // A clock of a day at most: the game keeps clocks in uint32 seconds, and the pool's exposure bounds hold.
        if (clock_ == 0 || clock_ > 1 days) revert InvalidClock(clock_);
        opener = opener_;
        clock = clock_;
        elements = elements_;
        dots = dots_;
        moves = moves_;
    }

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
    ///         `c` gives the opened op leaf with no path (the referee proves it against the opened leaf's hash as a
    ///         one-leaf tree), the input elements and the claimant's output element (`ElementStep.check`). The same
    ///         holds for every `DotMove` below.
    function refuteElement(uint256 gameId, ElementCheck calldata c) external {
        _refuteByReferee(gameId, c.op.index, address(elements), ElementReferee.check.selector, Reason.WrongElement);
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

    // ---- a rowmax: the claimant shows the maximum is an entry, the counter shows a larger one ----

    /// @notice The counter disputes output element `element` of the opened `rowmax` (a row's maximum) or
    ///         `first_max` (whether an entry is its row's first equal to the maximum); the claimant answers with an
    ///         entry of the row next (`answerRow`), or loses on time.
    function challengeRow(uint256 gameId, OpOpening calldata op, uint256 element) external {
        Game storage s = _refuting(gameId, op);
        _charge(s.g, s.g.counter);
        if (op.codeHash != ROWMAX && op.codeHash != FIRST_MAX) revert NotRowMax(op.codeHash);
        uint256 numel = _descents[gameId].numel;
        if (element >= numel) revert NoSuchElement(element, numel);
        s.element = element;
        s.stage = Stage.RowAnswer;
        s.g.counterToMove = false;
        emit RowChallenged(gameId, element);
    }

    /// @notice The claimant's witness: for `rowmax`, an entry of the disputed row that, plus +0, is its committed
    ///         maximum (a NaN for a NaN maximum); for `first_max` (i, j), entry j itself when it claims true, or an
    ///         entry that shows false (j unequal to the maximum, an equal entry before j, or for j = 0 a later equal
    ///         entry). The counter refutes next (`refuteRow`), or loses on time.
    function answerRow(uint256 gameId, RowCheck calldata c) external {
        Game storage s = _at(gameId, Stage.RowAnswer);
        _charge(s.g, s.g.claimant);
        if (c.outEl.element != s.element) revert NotDisputedElement(c.outEl.element, 0, 0);
        if (c.op.codeHash == FIRST_MAX) {
            s.blockA = _firstMaxAnswer(s, c);
        } else {
            (, , bool witnesses, ) = moves.rowEntry(s.opened, c);
            if (!witnesses) revert NotAWitness(c.inEl.element);
        }
        s.stage = Stage.RowChallenge;
        s.g.counterToMove = true;
        emit RowAnswered(gameId, c.inEl.element);
    }

    /// @notice The counter's entry of the disputed row that shows the committed maximum wrong: a NaN, or a value
    ///         above it. One that does not reverts `NotRefuted`.
    function refuteRow(uint256 gameId, RowCheck calldata c) external {
        Game storage s = _deciding(gameId, Stage.RowChallenge);
        if (c.outEl.element != s.element) revert NotDisputedElement(c.outEl.element, 0, 0);
        if (c.op.codeHash == FIRST_MAX) {
            (, uint256 j, uint256 k, bool equal) = moves.firstMaxEntry(s.opened, c);
            uint16 left = s.blockA;
            bool shown = (left == EARLIER_EQUAL && k < j) || left == ANY_EQUAL || (left == FIRST_EQUAL && k == 0);
            _decide(gameId, s, left != NOTHING && equal && shown, Reason.WrongRowMax);
            return;
        }
        (, , , bool exceeds) = moves.rowEntry(s.opened, c);
        _decide(gameId, s, exceeds, Reason.WrongRowMax);
    }

    /// @dev What a `first_max` answer leaves the counter to show; reverts `NotAWitness` for an answer that shows
    ///      nothing (or an output that is no bool: a claimant that committed one cannot answer).
    function _firstMaxAnswer(Game storage s, RowCheck calldata c) private view returns (uint16) {
        (uint256 bits, uint256 j, uint256 k, bool equal) = moves.firstMaxEntry(s.opened, c);
        if (bits == 1 && k == j && (equal || j == 0)) return equal ? EARLIER_EQUAL : ANY_EQUAL;
        if (bits == 0 && ((k == j && !equal && j != 0) || (k < j && equal))) return NOTHING;
        if (bits == 0 && j == 0 && k > 0 && equal) return FIRST_EQUAL;
        revert NotAWitness(c.inEl.element);
    }

    // ---- a dot op: narrowed to one element, then to one integer multiply-add ----

    /// @notice The counter disputes output element `element` of the opened matmul / sum / index_sum, whose sum N is
    ///         `n` by its count, and posts its prefix sum at the midpoint of the K multiply-adds (`atMid`: the first
    ///         move of the bisection over prefix sums, if the sums differ); the claimant answers with its own next.
    function challengeDot(uint256 gameId, OpOpening calldata op, uint256 element, int256 n, bytes32 atMid) external {
        Game storage s = _refuting(gameId, op);
        _charge(s.g, s.g.counter);
        bytes32 code = op.codeHash;
        if (code != TraceProofs.MATMUL && code != TraceProofs.SUM && code != TraceProofs.INDEX_SUM) {
            revert NotDotOp(code);
        }
        // INVARIANT: the claimant is asked only about an element its committed output has (else it could not answer).
        uint256 numel = _descents[gameId].numel;
        if (element >= numel) revert NoSuchElement(element, numel);
        s.element = element;
        s.counterSum = n;
        // The ops bisection is over: its pending slot keeps the counter's midpoint until the claimant answers.
        s.g.pendingRoot = atMid;
        s.stage = Stage.DotAnswer;
        s.g.counterToMove = false;
        emit DotChallenged(gameId, element, n, atMid);
    }

    /// @notice The claimant's sum `n` for the disputed element, at the block exponents `m.blockA`, `m.blockB`
    ///         (reached by the witnesses `m.aMax`, `m.bMax`): it must round to the claimant's committed element,
    ///         opened by `outEl` in the op's output `out` (`DotReferee.answer`). Where it differs from the counter's,
    ///         the bisection over prefix sums starts, the counter's challenge its first move and this answer the
    ///         claimant's (`atPending`: its sum at the midpoint the counter posted at, `atNext`: at the next one);
    ///         where it agrees, the counter can only refute a block exponent.
    function answerDot(
        uint256 gameId,
        DotMove calldata m,
        TensorRef calldata out,
        ElementOpening calldata outEl,
        int256 n,
        bytes32 atPending,
        bytes32 atNext
    ) external {
        Game storage s = _at(gameId, Stage.DotAnswer);
        Bisection.Game storage g = s.g;
        _charge(g, g.claimant);
        if (m.element != s.element) revert NotDisputedElement(m.element, m.blockA, m.blockB);
        (uint256 length, bool rounds) = dots.answer(s.opened, m, out, outEl, n);
        if (!rounds) revert SumDoesNotRound(n);
        s.sum = n;
        s.length = SafeCast.toUint32(length);
        s.blockA = uint16(m.blockA); // exponent fields: below 256, checked by the witnesses
        s.blockB = uint16(m.blockB);
        emit DotAnswered(gameId, n, m.blockA, m.blockB, length);
        if (n == s.counterSum) {
            s.stage = Stage.DotChallenge;
            g.counterToMove = true;
            return;
        }
        bytes32 counterMid = g.pendingRoot;
        // INVARIANT: a game has one clock per side: the stage restarts the bisection, not the clocks.
        g.restart(Bisection.Ends(0, uint64(length), bytes32(0), _word(n), _word(s.counterSum)));
        s.stage = Stage.DotBisect;
        if (g.done()) return _toMultiplyAdd(gameId, s);
        // The counter's challenge posted its sum at the first midpoint: this answer is the claimant's move on it.
        (g.pending, g.pendingRoot) = (true, counterMid);
        g.move(msg.sender, atPending, atNext);
        emit DotMoved(gameId, msg.sender, g.lo, g.hi);
        if (g.done()) _toMultiplyAdd(gameId, s);
    }

    /// @notice The claimant shows that entry `w` of the disputed element's row of A (`ofA`) or column of B is a NaN
    ///         or an infinity. The element then follows the non-finite rule (docs/repro.md section 2, step 6), which
    ///         the contract does not decide yet: the game ends without a decision (nobody wins or loses), rather
    ///         than with an honest claimant unable to answer.
    function declareNonFinite(uint256 gameId, DotMove calldata m, BlockWitness calldata w, bool ofA) external {
        Game storage s = _at(gameId, Stage.DotAnswer);
        _charge(s.g, s.g.claimant);
        if (m.element != s.element) revert NotDisputedElement(m.element, m.blockA, m.blockB);
        if (!dots.nonFinite(s.opened, m, w, ofA)) revert FiniteEntry(w.k);
        s.stage = Stage.Decided;
        emit GameDecided(gameId, address(0), address(0), Reason.NonFiniteDot);
    }

    /// @notice An entry `w` of the row of A (`ofA`) or column of B has an exponent field above the claimant's block
    ///         exponent for it: the claimant aligned with a block exponent that is not the maximum. Open to the
    ///         counter on any of its turns once the claimant answered.
    function refuteBlock(uint256 gameId, DotMove calldata m, BlockWitness calldata w, bool ofA) external {
        Game storage s = _game(gameId);
        if (s.stage != Stage.DotChallenge && s.stage != Stage.DotBisect && s.stage != Stage.DotStep) {
            revert WrongStage(gameId, Stage.DotChallenge, s.stage);
        }
        if (msg.sender != s.g.counter) revert Bisection.NotYourTurn(msg.sender, s.g.counter);
        s.g.checkTurn(msg.sender); // decides or reverts: not charged (`_deciding`)
        _isDisputedDot(s, m);
        _decide(gameId, s, dots.refutesBlock(s.opened, m, w, ofA), Reason.WrongBlock);
    }

    /// @notice One move of the bisection over prefix sums (`Bisection.move`; roots are the sums as words).
    function moveDot(uint256 gameId, bytes32 atPending, bytes32 atNext) external {
        Game storage s = _at(gameId, Stage.DotBisect);
        s.g.move(msg.sender, atPending, atNext);
        emit DotMoved(gameId, msg.sender, s.g.lo, s.g.hi);
        if (s.g.done()) _toMultiplyAdd(gameId, s);
    }

    /// @notice Multiply-add k = lo is wrong: from the agreed sum of the first k products, a_k and b_k (opened in
    ///         the op's inputs) and the claimant's block exponents, the rule does not give the claimant's sum of
    ///         k + 1 (`DotReferee.step`; `m.step` opens both sums in a prefix root of those two leaves).
    function refuteDotStep(uint256 gameId, DotMove calldata m) external {
        Game storage s = _deciding(gameId, Stage.DotStep);
        _isDisputedDot(s, m);
        uint256 k = s.g.lo;
        if (m.step.k != k) revert WrongOp(m.step.k, k);
        int256 prev = k == 0 ? int256(0) : m.step.prev.value;
        // INVARIANT: the two sums are the agreed one at k and the claimant's at k + 1, not ones the counter picked.
        if (m.step.cur.value != int256(uint256(s.g.claimantRoot)) || _word(prev) != s.g.agreed) {
            revert PartialMismatch(prev, m.step.cur.value);
        }
        bytes memory ret = _forward(address(dots), DotReferee.step.selector, s.opened);
        (int256 expected, int256 committed) = abi.decode(ret, (int256, int256));
        _decide(gameId, s, expected != committed, Reason.WrongMultiplyAdd);
    }

    // ---- clocks ----

    /// @notice Decide a game for the side not to move once the side to move ran out of time.
    function timeout(uint256 gameId) external {
        Game storage s = _game(gameId);
        if (s.stage == Stage.Decided) revert WrongStage(gameId, Stage.Ops, Stage.Decided);
        Bisection.Game storage g = s.g;
        address loser = g.outOfTime();
        s.stage = Stage.Decided;
        address winner = loser == g.claimant ? g.counter : g.claimant;
        s.winner = winner;
        emit GameDecided(gameId, winner, loser, Reason.Timeout);
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
        return (s.stage == Stage.Decided, s.winner);
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

    // ---- internals ----

    function _game(uint256 gameId) private view returns (Game storage s) {
        s = _games[gameId];
        if (s.stage == Stage.None) revert UnknownGame(gameId);
    }

    function _at(uint256 gameId, Stage want) private view returns (Game storage s) {
        s = _game(gameId);
        if (s.stage != want) revert WrongStage(gameId, want, s.stage);
    }

    /// @dev The counter's turn to refute, with `op` the leaf the claimant opened (its clock checked, not charged:
    ///      see `_deciding`).
    function _refuting(uint256 gameId, OpOpening calldata op) private view returns (Game storage s) {
        s = _deciding(gameId, Stage.Refute);
        bytes32 leaf = TraceProofs.opLeaf(op);
        if (leaf != s.opened) revert NotOpenedOp(leaf, s.opened);
    }

    /// @dev The counter's turn at stage `want`; charges the counter's clock.
    function _counterAt(uint256 gameId, Stage want) private returns (Game storage s) {
        s = _at(gameId, want);
        _charge(s.g, s.g.counter);
    }

    /// @dev The counter's turn at stage `want` for a refutation, which decides the game or reverts: its clock is
    ///      checked but not charged (no clock is read after a decision; the write would cost the deciding move).
    function _deciding(uint256 gameId, Stage want) private view returns (Game storage s) {
        s = _at(gameId, want);
        if (msg.sender != s.g.counter) revert Bisection.NotYourTurn(msg.sender, s.g.counter);
        s.g.checkTurn(msg.sender);
    }

    /// @dev `m` is about the disputed element and the claimant's block exponents (the referee proves its op is the
    ///      opened one).
    function _isDisputedDot(Game storage s, DotMove calldata m) private view {
        if (m.element != s.element || m.blockA != s.blockA || m.blockB != s.blockB) {
            revert NotDisputedElement(m.element, m.blockA, m.blockB);
        }
    }

    /// @dev The prefix sums were narrowed to one multiply-add: the counter proves it wrong next.
    function _toMultiplyAdd(uint256 gameId, Game storage s) private {
        s.stage = Stage.DotStep;
        s.g.counterToMove = true;
        emit MultiplyAddNarrowed(gameId, s.g.lo);
    }

    /// @dev Call `referee.selector(root, <this call's one struct argument>)`: this call's arguments are
    ///      (gameId, struct) and the referee's (root, struct), so the ABI bytes after the first word are the same
    ///      and are passed on as they came, not decoded and encoded again. A revert is passed up as it is.
    function _forward(address referee, bytes4 selector, bytes32 root) private view returns (bytes memory ret) {
        (bool ok, bytes memory out) = referee.staticcall(abi.encodePacked(selector, root, msg.data[36:]));
        ret = Address.verifyCallResult(ok, out);
    }

    /// @dev An int256 as the word the bisection compares (two's complement).
    function _word(int256 v) private pure returns (bytes32) {
        return bytes32(uint256(v));
    }

    /// @dev `who`, the party this stage waits for, moves now (`Bisection.charge`: its turn, inside its clock).
    function _charge(Bisection.Game storage g, address who) private {
        if (msg.sender != who) revert Bisection.NotYourTurn(msg.sender, who);
        g.charge(msg.sender);
    }

    /// @dev A refutation that holds decides for the counter; one that does not reverts (the counter may try
    ///      another while its clock runs).
    function _decide(uint256 gameId, Game storage s, bool refuted, Reason reason) private {
        if (!refuted) revert NotRefuted(gameId, reason);
        s.stage = Stage.Decided;
        s.winner = s.g.counter;
        emit GameDecided(gameId, s.g.counter, s.g.claimant, reason);
    }
}
