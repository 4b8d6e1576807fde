// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ExactDot} from "./ExactDot.sol";
import {TraceProofs} from "./TraceProofs.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";
import {BlockWitness, DotMove, DotStepValues, TensorRef} from "../types/Trace.sol";

/// @title DotElementStep: the last move over one multiply-add of a matmul / sum / index_sum element, on-chain.
/// @notice After the parties bisected a dot element's prefix sums (docs/repro.md section 6) to a step k where they
///         agree on partial[k-1] and differ on partial[k], this library proves the step's operands
///         (`TraceProofs.openDotStep`), checks that the block exponents the mover aligned with are reached by an
///         entry of the row / column (a witness whose exponent field is the claim), and recomputes
///         partial[k] = partial[k-1] + align(a_k, EA) · align(b_k, EB) (`ExactDot`). `roundedOutput` is the last
///         step of all: the element itself, RNE of N = partial[K-1].
/// @dev A witness only shows that a claimed block exponent is reached, not that it is the maximum: a claim that is
///      too low is refuted by opening an entry above it (`refutesBlock`: align reverts `BelowEntryExponent` on
///      the operand itself too). The non-finite rule (a NaN or infinity in the row or column) is not decided here.
library DotElementStep {
    /// @dev The block exponent of float32 1.0 (the ones of a sum, the members of an index_sum's one-hot row).
    uint256 internal constant ONE_BLOCK = 127;

    /// @notice Prove step `m.step.k` of `m` in `traceRoot` and its block exponents; return the multiply-add the
    ///         rule gives and the committed partial[k] (the mover's prefix root's). Equal: the step is right.
    function check(bytes32 traceRoot, DotMove calldata m) internal pure returns (int256 expected, int256 committed) {
        (expected, committed) = multiplyAdd(traceRoot, m);
        witness(m);
    }

    /// @notice `check` without the block exponents' witnesses, for a caller that already holds them proven.
    function multiplyAdd(
        bytes32 traceRoot,
        DotMove calldata m
    ) internal pure returns (int256 expected, int256 committed) {
        DotStepValues memory v = TraceProofs.openDotStep(traceRoot, m.op, m.ins, m.rows, m.element, m.step);
        int256 a = ExactDot.align(uint32(v.aBits), m.blockA);
        int256 b = ExactDot.align(uint32(v.bBits), m.blockB);
        expected = ExactDot.mulAdd(v.prev, a, b);
        committed = v.cur;
    }

    /// @notice The element the rule gives for the full sum N = partial[K-1] at block exponents (EA, EB): one
    ///         rounding (finite rule).
    function roundedOutput(int256 n, uint256 blockA, uint256 blockB) internal pure returns (uint32) {
        return ExactDot.roundDot(n, blockA, blockB);
    }

    /// @notice Whether an opened entry of the row (or column) has an exponent field above a claimed block
    ///         exponent: then the claim is not the maximum, and whoever computed with it is wrong.
    function refutesBlock(uint32 entryBits, uint256 claimedBlock) internal pure returns (bool) {
        return ExactDot.exponentField(entryBits) > claimedBlock;
    }

    /// @dev The block exponents are reached: an entry of the element's row of A and column of B (opened at the
    ///      witnesses' steps, in the op's committed inputs) has exactly that exponent field; fixed 127 for ones.
    function witness(DotMove calldata m) internal pure {
        bytes32 code = m.op.codeHash;
        if (code == TraceProofs.MATMUL) {
            (uint256 ai, , ) = TraceProofs.matmulOperands(m.ins[0].shape, m.ins[1].shape, m.element, m.aMax.k);
            (, uint256 bi, ) = TraceProofs.matmulOperands(m.ins[0].shape, m.ins[1].shape, m.element, m.bMax.k);
            _reached(m.ins[0], m.aMax, ai, m.blockA);
            _reached(m.ins[1], m.bMax, bi, m.blockB);
        } else if (code == TraceProofs.SUM) {
            uint256 dim = m.op.attrsHash == TraceProofs.SUM_DIM1 ? 1 : 0;
            (uint256 xi, ) = TraceProofs.sumOperand(m.ins[0].shape, dim, m.element, m.aMax.k);
            _reached(m.ins[0], m.aMax, xi, m.blockA);
            if (m.blockB != ONE_BLOCK) revert ITraceProofs.BlockNotReached(m.blockB, ONE_BLOCK);
        } else {
            // index_sum (openDotStep already refused any other op): a one-hot row of 1.0s, a column of g.
            if (m.blockA != ONE_BLOCK) revert ITraceProofs.BlockNotReached(m.blockA, ONE_BLOCK);
            (, uint256 gi, ) = TraceProofs.indexSumOperands(
                m.ins[0].shape,
                m.ins[1].shape,
                m.rows,
                m.element,
                m.bMax.k
            );
            _reached(m.ins[1], m.bMax, gi, m.blockB);
        }
    }

    function _reached(TensorRef calldata t, BlockWitness calldata w, uint256 index, uint256 claimed) private pure {
        // INVARIANT: the witness is an entry of this element's row / column, opened in the committed input.
        if (w.opening.element != index) revert ITraceProofs.WrongOperand(w.opening.element, index);
        uint256 found = ExactDot.exponentField(uint32(TraceProofs.elementBits(t, w.opening)));
        if (found != claimed) revert ITraceProofs.BlockNotReached(claimed, found);
    }
}
