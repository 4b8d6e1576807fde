// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {OpOpening, RowCheck} from "../types/Trace.sol";
import {StepGameBase} from "./StepGameBase.sol";

/// @title StepGameRows: a `rowmax` or `first_max` element of the step game's opened op (docs/dispute-game.md).
/// @notice The counter challenges one element of the claimant's output; the claimant answers with an entry of its
///         row that witnesses it; the counter shows an entry that contradicts the witness, or the claimant's
///         answer stands.
abstract contract StepGameRows is StepGameBase {
    /// @notice The counter disputes output element `element` of the opened `rowmax` (a row's maximum) or
    ///         `first_max` (whether an entry is its row's first equal to the maximum); the claimant answers with an
    ///         entry of the row next (`answerRow`), or loses on time.
    function challengeRow(uint256 gameId, OpOpening calldata op, uint256 element) external {
        Game storage s = _refuting(gameId, op);
        _charge(s.g, s.g.counter);
        if (op.codeHash != ROWMAX && op.codeHash != FIRST_MAX) revert NotRowMax(op.codeHash);
        uint256 numel = _descents[gameId].numel;
        if (element >= numel) revert NoSuchElement(element, numel);
        s.element = uint64(element); // below numel, a uint64
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
}
