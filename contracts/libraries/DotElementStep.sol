// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ExactDot} from "./ExactDot.sol";
import {PackedMoves} from "./PackedMoves.sol";
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

    /// @dev Byte offsets of a packed multiply-add's head words (`multiplyAdd`), and of its op leaf.
    uint256 internal constant AT_ELEMENT = 0;
    uint256 internal constant AT_K = 32;
    uint256 internal constant AT_BLOCK_A = 64;
    uint256 internal constant AT_BLOCK_B = 96;
    uint256 internal constant AT_PREV = 128;
    uint256 internal constant AT_CUR = 160;
    uint256 internal constant AT_ROWS = 192;
    uint256 internal constant AT_OP = 224;

    /// @notice Prove step `m.step.k` of `m` in `traceRoot` and its block exponents, the prefix sums in the mover's
    ///         prefix root; return the multiply-add the rule gives and the committed partial[k]. Equal: the step
    ///         is right. (Every proof in one move: a game binds the sums by its bisection instead, `multiplyAdd`.)
    function check(bytes32 traceRoot, DotMove calldata m) internal pure returns (int256 expected, int256 committed) {
        DotStepValues memory v = TraceProofs.openDotStep(traceRoot, m.op, m.ins, m.rows, m.element, m.step);
        expected = _mulAdd(v.prev, v.aBits, v.bBits, m.blockA, m.blockB);
        committed = v.cur;
        witness(m);
    }

    /// @notice Multiply-add k of a dot element, packed (`PackedMoves`): the head words element, k, block exponents
    ///         EA and EB, partial[k-1] (0 when k = 0), partial[k] and rows (index_sum's attribute, else 0); the op
    ///         leaf and its path; then each input's header and the operand step k reads in it (a_k in input 0, b_k
    ///         in input 1; a sum has one input). Returns the rule's partial[k] from partial[k-1] and the given
    ///         partial[k]. The sums and the block exponents are the caller's to bind (a game holds them from its
    ///         bisection and the claimant's answer).
    function multiplyAdd(
        bytes32 traceRoot,
        bytes calldata m
    ) internal pure returns (int256 expected, int256 committed) {
        bytes32 code = bytes32(PackedMoves.word(m, AT_OP + 32));
        (PackedMoves.Opened memory a, PackedMoves.Opened memory b) = _opened(traceRoot, m, code);
        (uint256 aBits, uint256 bBits) = _operandBits(m, code, a, b);
        int256 prev = int256(PackedMoves.word(m, AT_PREV));
        expected = _mulAdd(prev, aBits, bBits, PackedMoves.word(m, AT_BLOCK_A), PackedMoves.word(m, AT_BLOCK_B));
        committed = int256(PackedMoves.word(m, AT_CUR));
    }

    /// @dev The op leaf of a packed multiply-add, proven in `traceRoot`, and the operands opened after it (`b` is
    ///      `a` for a sum, which has one input), each of its input's dtype and proven against its root.
    function _opened(
        bytes32 traceRoot,
        bytes calldata m,
        bytes32 code
    ) private pure returns (PackedMoves.Opened memory a, PackedMoves.Opened memory b) {
        (uint256 count, uint256 dtypeA, uint256 dtypeB) = TraceProofs.dotInputs(code);
        (, uint256 at) = PackedMoves.op(m, AT_OP, count, traceRoot);
        a = PackedMoves.open(m, at, PackedMoves.inputRoot(m, AT_OP, 0));
        b = count == 2 ? PackedMoves.open(m, a.next, PackedMoves.inputRoot(m, AT_OP, 1)) : a;
        if (a.dtype != dtypeA || (count == 2 && b.dtype != dtypeB)) revert ITraceProofs.BadDotInputs(code);
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

    /// @dev partial[k-1] + align(a_k, EA) * align(b_k, EB): the rule's partial[k].
    function _mulAdd(
        int256 prev,
        uint256 aBits,
        uint256 bBits,
        uint256 blockA,
        uint256 blockB
    ) private pure returns (int256) {
        return ExactDot.mulAdd(prev, ExactDot.align(uint32(aBits), blockA), ExactDot.align(uint32(bBits), blockB));
    }

    /// @dev The float32 bits of a_k and b_k from the opened `a` and `b` (`a` again for a sum, whose B is ones),
    ///      which must be the elements step k reads (`TraceProofs.dotOperands`).
    function _operandBits(
        bytes calldata m,
        bytes32 code,
        PackedMoves.Opened memory a,
        PackedMoves.Opened memory b
    ) private pure returns (uint256 aBits, uint256 bBits) {
        uint256[] calldata bShape = PackedMoves.shapeOf(m, b);
        (uint256 aIndex, uint256 bIndex) = _indices(m, code, PackedMoves.shapeOf(m, a), bShape);
        // INVARIANT: the contract opens exactly the elements step k reads, never ones a party picked.
        if (a.element != aIndex) revert ITraceProofs.WrongOperand(a.element, aIndex);
        aBits = a.bits;
        // index_sum's A is the one-hot row of its indices: 1.0 where idx[k] is the element's output row, else 0.
        if (code == TraceProofs.INDEX_SUM) {
            aBits = aBits == PackedMoves.word(m, AT_ELEMENT) / bShape[1] ? TraceProofs.FLOAT32_ONE : 0;
        }
        if (code == TraceProofs.SUM) return (aBits, TraceProofs.FLOAT32_ONE); // B is ones, never opened
        if (b.element != bIndex) revert ITraceProofs.WrongOperand(b.element, bIndex);
        bBits = b.bits;
    }

    /// @dev The indices step k reads (`TraceProofs.dotOperands`) in inputs of shapes `aShape` and `bShape`.
    function _indices(
        bytes calldata m,
        bytes32 code,
        uint256[] calldata aShape,
        uint256[] calldata bShape
    ) private pure returns (uint256 aIndex, uint256 bIndex) {
        bytes32 attrs = bytes32(PackedMoves.word(m, AT_OP + 64));
        uint256 rows = PackedMoves.word(m, AT_ROWS);
        uint256 element = PackedMoves.word(m, AT_ELEMENT);
        uint256 k = PackedMoves.word(m, AT_K);
        (aIndex, bIndex, ) = TraceProofs.dotOperands(code, attrs, rows, aShape, bShape, element, k);
    }

    function _reached(TensorRef calldata t, BlockWitness calldata w, uint256 index, uint256 claimed) private pure {
        // INVARIANT: the witness is an entry of this element's row / column, opened in the committed input.
        if (w.opening.element != index) revert ITraceProofs.WrongOperand(w.opening.element, index);
        uint256 found = ExactDot.exponentField(uint32(TraceProofs.elementBits(t, w.opening)));
        if (found != claimed) revert ITraceProofs.BlockNotReached(claimed, found);
    }
}
