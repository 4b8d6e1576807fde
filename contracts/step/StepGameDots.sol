// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {Bisection} from "../libraries/Bisection.sol";
import {DotElementStep} from "../libraries/DotElementStep.sol";
import {PackedMoves} from "../libraries/PackedMoves.sol";
import {TraceProofs} from "../libraries/TraceProofs.sol";
import {DotReferee} from "../referee/DotReferee.sol";
import {BlockWitness, DotMove, ElementOpening, OpOpening, TensorRef} from "../types/Trace.sol";
import {StepGameBase} from "./StepGameBase.sol";

/// @title StepGameDots: a matmul, sum or index_sum element of the step game's opened op, narrowed to one integer
///        multiply-add (docs/dispute-game.md, stage d).
/// @notice The counter challenges one element with its sum N; the claimant answers with its own N and block
///         exponents; where the sums differ both bisect over prefix sums to one multiply-add, which the referee
///         recomputes; block exponents below the rule's are refuted on any of the counter's turns.
abstract contract StepGameDots is StepGameBase {
    using Bisection for Bisection.Game;

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
        s.element = uint64(element); // below numel, a uint64
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
        _isDisputedDot(s, m.element, m.blockA, m.blockB);
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
    ///         k + 1. `move` is packed (`DotElementStep.multiplyAdd`, `contracts/libraries/PackedMoves.sol`); its
    ///         head words are checked here against the game (the element, k, the claimant's block exponents, the
    ///         agreed sum and the claimant's), the rest by `DotReferee.step`.
    function refuteDotStep(uint256 gameId, bytes calldata move) external {
        Game storage s = _deciding(gameId, Stage.DotStep);
        _isDisputedDot(
            s,
            PackedMoves.word(move, DotElementStep.AT_ELEMENT),
            PackedMoves.word(move, DotElementStep.AT_BLOCK_A),
            PackedMoves.word(move, DotElementStep.AT_BLOCK_B)
        );
        uint256 k = PackedMoves.word(move, DotElementStep.AT_K);
        if (k != s.g.lo) revert WrongOp(k, s.g.lo);
        int256 prev = int256(PackedMoves.word(move, DotElementStep.AT_PREV));
        int256 cur = int256(PackedMoves.word(move, DotElementStep.AT_CUR));
        // INVARIANT: the two sums are the agreed one at k and the claimant's at k + 1, not ones the counter picked.
        if (_word(cur) != s.g.claimantRoot || _word(prev) != s.g.agreed) revert PartialMismatch(prev, cur);
        bytes memory ret = _forward(address(dots), DotReferee.step.selector, s.opened);
        (int256 expected, int256 committed) = abi.decode(ret, (int256, int256));
        _decide(gameId, s, expected != committed, Reason.WrongMultiplyAdd);
    }

    // ---- internals ----

    /// @dev A move is about the disputed element and the claimant's block exponents (the referee proves its op is
    ///      the opened one).
    function _isDisputedDot(Game storage s, uint256 element, uint256 blockA, uint256 blockB) internal view {
        if (element != s.element || blockA != s.blockA || blockB != s.blockB) {
            revert NotDisputedElement(element, blockA, blockB);
        }
    }

    /// @dev The prefix sums were narrowed to one multiply-add: the counter proves it wrong next.
    function _toMultiplyAdd(uint256 gameId, Game storage s) internal {
        s.stage = Stage.DotStep;
        s.g.counterToMove = true;
        emit MultiplyAddNarrowed(gameId, s.g.lo);
    }

    /// @dev An int256 as the word the bisection compares (two's complement).
    function _word(int256 v) internal pure returns (bytes32) {
        return bytes32(uint256(v));
    }
}
