// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {DotElementStep} from "../libraries/DotElementStep.sol";
import {ExactDot} from "../libraries/ExactDot.sol";
import {Float32} from "../libraries/Float32.sol";
import {TraceProofs} from "../libraries/TraceProofs.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";
import {BlockWitness, DotMove, ElementOpening, TensorRef} from "../types/Trace.sol";

/// @title DotReferee: the checks of a dispute over one element of a matmul / sum / index_sum, as a deployed contract.
/// @notice A dispute game narrows a dot element to one integer multiply-add of its prefix sums (docs/repro.md
///         section 6); this contract proves what the game needs at each end of that narrowing, so the game itself
///         stays small: the claimant's answer (its sum N rounds to its committed element at block exponents that
///         entries of the row and column reach), an entry that refutes a block exponent as the maximum, and the one
///         multiply-add (`DotElementStep.check`).
contract DotReferee {
    /// @notice The claimant's answer for element `m.element` of dot op `m.op` in `traceRoot`: the block exponents
    ///         `m.blockA`, `m.blockB` are reached (`m.aMax`, `m.bMax`; `m.step` is unused), `outEl` opens the element
    ///         in the op's output `out`. Returns K and whether RNE of `n` at those exponents is the element.
    function answer(
        bytes32 traceRoot,
        DotMove calldata m,
        TensorRef calldata out,
        ElementOpening calldata outEl,
        int256 n
    ) external pure returns (uint256 length, bool rounds) {
        length = TraceProofs.dotLength(traceRoot, m.op, m.ins, m.rows, m.element);
        DotElementStep.witness(m);
        // INVARIANT: the element the sum must round to is the claimant's committed output, at the element disputed.
        if (out.root != m.op.outputRoot || out.dtype != TraceProofs.DTYPE_FLOAT32) {
            revert ITraceProofs.OutputMismatch(m.op.index);
        }
        if (outEl.element != m.element) revert ITraceProofs.WrongOperand(outEl.element, m.element);
        uint256 bits = TraceProofs.elementBits(out, outEl);
        rounds = DotElementStep.roundedOutput(n, m.blockA, m.blockB) == bits;
    }

    /// @notice Whether entry `w` of the disputed element's row of A (`ofA`) or column of B has an exponent field
    ///         above the block exponent claimed for it (`m.blockA` / `m.blockB`): then that claim is not the maximum.
    function refutesBlock(
        bytes32 traceRoot,
        DotMove calldata m,
        BlockWitness calldata w,
        bool ofA
    ) external pure returns (bool) {
        (bool fixedOne, uint256 bits) = _entry(traceRoot, m, w, ofA);
        return !fixedOne && DotElementStep.refutesBlock(uint32(bits), ofA ? m.blockA : m.blockB);
    }

    /// @notice Whether entry `w` of the disputed element's row of A (`ofA`) or column of B is a NaN or an infinity:
    ///         then the element follows the non-finite rule (docs/repro.md section 2, step 6), not the rounding of
    ///         a sum.
    function nonFinite(
        bytes32 traceRoot,
        DotMove calldata m,
        BlockWitness calldata w,
        bool ofA
    ) external pure returns (bool) {
        (bool fixedOne, uint256 bits) = _entry(traceRoot, m, w, ofA);
        return !fixedOne && !Float32.isFinite(uint32(bits));
    }

    /// @dev Entry `w.k` of the element's row of A (`ofA`) or column of B, proven in the op's committed input; or
    ///      `fixedOne` for a sum's column of ones and an index_sum's one-hot row, which are never opened.
    function _entry(
        bytes32 traceRoot,
        DotMove calldata m,
        BlockWitness calldata w,
        bool ofA
    ) private pure returns (bool fixedOne, uint256 bits) {
        TraceProofs.dotLength(traceRoot, m.op, m.ins, m.rows, m.element);
        bytes32 code = m.op.codeHash;
        uint256 index;
        uint256 input;
        if (code == TraceProofs.MATMUL) {
            (uint256 ai, uint256 bi, ) = TraceProofs.matmulOperands(m.ins[0].shape, m.ins[1].shape, m.element, w.k);
            (index, input) = ofA ? (ai, 0) : (bi, 1);
        } else if (code == TraceProofs.SUM) {
            if (!ofA) return (true, 0);
            uint256 dim = m.op.attrsHash == TraceProofs.SUM_DIM1 ? 1 : 0;
            (index, ) = TraceProofs.sumOperand(m.ins[0].shape, dim, m.element, w.k);
        } else {
            if (ofA) return (true, 0);
            (, index, ) = TraceProofs.indexSumOperands(m.ins[0].shape, m.ins[1].shape, m.rows, m.element, w.k);
            input = 1;
        }
        if (w.opening.element != index) revert ITraceProofs.WrongOperand(w.opening.element, index);
        bits = TraceProofs.elementBits(m.ins[input], w.opening);
    }

    /// @notice Multiply-add k of a dot element, packed (`DotElementStep.multiplyAdd`): the rule's partial[k] from
    ///         the given partial[k-1], a_k and b_k at the given block exponents, and the given partial[k]. The game
    ///         binds the sums (its bisection) and the block exponents (witnessed with the claimant's answer).
    function step(bytes32 traceRoot, bytes calldata m) external pure returns (int256 expected, int256 committed) {
        return DotElementStep.multiplyAdd(traceRoot, m);
    }

    /// @notice RNE of N at block exponents (EA, EB): the element a sum gives.
    function rounded(int256 n, uint256 blockA, uint256 blockB) external pure returns (uint32) {
        return ExactDot.roundDot(n, blockA, blockB);
    }
}
