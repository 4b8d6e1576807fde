// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ExactDot} from "../libraries/ExactDot.sol";
import {Float32} from "../libraries/Float32.sol";

/// @title Float32Harness
/// @notice Test-only: runs one Float32 primitive or ExactDot step over whole arrays in a single call, so a
///         differential test checks thousands of inputs per eth_call (tests/contracts/test_float32_referee.py),
///         and measures the execution gas of each in-contract (`gasOf`, used by bench/referee_gas.py).
contract Float32Harness {
    /// @notice The arrays of one batch differ in length.
    error HarnessLengthMismatch();
    /// @notice An op code outside the table below.
    error HarnessUnknownOp(uint8 op);

    // Op codes of `gasOf` (the batch functions take their own smaller tables, documented on each).
    uint8 internal constant OP_NOOP = 0;
    uint8 internal constant OP_ADD = 1;
    uint8 internal constant OP_SUB = 2;
    uint8 internal constant OP_MUL = 3;
    uint8 internal constant OP_DIV = 4;
    uint8 internal constant OP_MAXIMUM = 5;
    uint8 internal constant OP_MINIMUM = 6;
    uint8 internal constant OP_SQRT = 7;
    uint8 internal constant OP_NEG = 8;
    uint8 internal constant OP_ABS = 9;
    uint8 internal constant OP_FLOOR = 10;
    uint8 internal constant OP_LT = 11;
    uint8 internal constant OP_EQ = 12;
    uint8 internal constant OP_ISNAN = 13;
    uint8 internal constant OP_WHERE = 14;
    uint8 internal constant OP_CLAMP = 15;
    uint8 internal constant OP_LDEXP = 16;
    uint8 internal constant OP_FREXP = 17;
    uint8 internal constant OP_TOINT32 = 18;
    uint8 internal constant OP_FROMINT = 19;
    uint8 internal constant OP_EXPONENT_FIELD = 20;
    uint8 internal constant OP_ALIGN = 21;
    uint8 internal constant OP_MULADD = 22;
    uint8 internal constant OP_ROUNDDOT = 23;

    /// @notice Binary arithmetic elementwise. op: 0 add, 1 sub, 2 mul, 3 div, 4 maximum, 5 minimum.
    function binary(uint8 op, uint32[] calldata a, uint32[] calldata b) external pure returns (uint32[] memory out) {
        if (a.length != b.length) revert HarnessLengthMismatch();
        out = new uint32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = _binary(op, a[i], b[i]);
    }

    /// @notice Unary ops elementwise. op: 0 sqrt, 1 neg, 2 abs, 3 floor.
    function unary(uint8 op, uint32[] calldata a) external pure returns (uint32[] memory out) {
        out = new uint32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = _unary(op, a[i]);
    }

    /// @notice Comparisons elementwise. op: 0 lt, 1 le, 2 gt, 3 ge, 4 eq, 5 isnan (of a; b ignored but sized).
    function compare(uint8 op, uint32[] calldata a, uint32[] calldata b) external pure returns (bool[] memory out) {
        if (a.length != b.length) revert HarnessLengthMismatch();
        out = new bool[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = _compare(op, a[i], b[i]);
    }

    /// @notice where(c, a, b) elementwise.
    function whereBatch(
        bool[] calldata c,
        uint32[] calldata a,
        uint32[] calldata b
    ) external pure returns (uint32[] memory out) {
        if (a.length != b.length || a.length != c.length) revert HarnessLengthMismatch();
        out = new uint32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = Float32.where(c[i], a[i], b[i]);
    }

    /// @notice clamp(a, lo, hi) elementwise with one pair of bounds.
    function clampBatch(uint32[] calldata a, uint32 lo, uint32 hi) external pure returns (uint32[] memory out) {
        out = new uint32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = Float32.clamp(a[i], lo, hi);
    }

    /// @notice ldexp(a, n) elementwise.
    function ldexpBatch(uint32[] calldata a, int256[] calldata n) external pure returns (uint32[] memory out) {
        if (a.length != n.length) revert HarnessLengthMismatch();
        out = new uint32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = Float32.ldexp(a[i], n[i]);
    }

    /// @notice frexp(a) elementwise: the fractions and the exponents.
    function frexpBatch(uint32[] calldata a) external pure returns (uint32[] memory m, int32[] memory e) {
        m = new uint32[](a.length);
        e = new int32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) (m[i], e[i]) = Float32.frexp(a[i]);
    }

    /// @notice toInt32(a) elementwise.
    function toInt32Batch(uint32[] calldata a) external pure returns (int32[] memory out) {
        out = new int32[](a.length);
        for (uint256 i = 0; i < a.length; ++i) out[i] = Float32.toInt32(a[i]);
    }

    /// @notice fromInt(n) elementwise.
    function fromIntBatch(int256[] calldata n) external pure returns (uint32[] memory out) {
        out = new uint32[](n.length);
        for (uint256 i = 0; i < n.length; ++i) out[i] = Float32.fromInt(n[i]);
    }

    /// @notice round(negative, magnitude, exp2) elementwise: the shared rounding core itself.
    function roundBatch(
        bool[] calldata negative,
        uint256[] calldata magnitude,
        int256[] calldata exp2
    ) external pure returns (uint32[] memory out) {
        if (negative.length != magnitude.length || negative.length != exp2.length) revert HarnessLengthMismatch();
        out = new uint32[](negative.length);
        for (uint256 i = 0; i < negative.length; ++i) out[i] = Float32.round(negative[i], magnitude[i], exp2[i]);
    }

    /// @notice E(x) elementwise.
    function exponentFieldBatch(uint32[] calldata x) external pure returns (uint256[] memory out) {
        out = new uint256[](x.length);
        for (uint256 i = 0; i < x.length; ++i) out[i] = ExactDot.exponentField(x[i]);
    }

    /// @notice The aligned integer of x[i] at block exponent blockE[i], elementwise.
    function alignBatch(uint32[] calldata x, uint256[] calldata blockE) external pure returns (int256[] memory out) {
        if (x.length != blockE.length) revert HarnessLengthMismatch();
        out = new int256[](x.length);
        for (uint256 i = 0; i < x.length; ++i) out[i] = ExactDot.align(x[i], blockE[i]);
    }

    /// @notice The 12-bit slices of aligned integers, elementwise.
    function splitBatch(int256[] calldata a) external pure returns (int256[] memory hi, int256[] memory lo) {
        hi = new int256[](a.length);
        lo = new int256[](a.length);
        for (uint256 i = 0; i < a.length; ++i) (hi[i], lo[i]) = ExactDot.split(a[i]);
    }

    /// @notice n[i] + a[i] · b[i] elementwise.
    function mulAddBatch(
        int256[] calldata n,
        int256[] calldata a,
        int256[] calldata b
    ) external pure returns (int256[] memory out) {
        if (n.length != a.length || n.length != b.length) revert HarnessLengthMismatch();
        out = new int256[](n.length);
        for (uint256 i = 0; i < n.length; ++i) out[i] = ExactDot.mulAdd(n[i], a[i], b[i]);
    }

    /// @notice The single rounding of N at block exponents (blockA, blockB), elementwise.
    function roundDotBatch(
        int256[] calldata n,
        uint256[] calldata blockA,
        uint256[] calldata blockB
    ) external pure returns (uint32[] memory out) {
        if (n.length != blockA.length || n.length != blockB.length) revert HarnessLengthMismatch();
        out = new uint32[](n.length);
        for (uint256 i = 0; i < n.length; ++i) out[i] = ExactDot.roundDot(n[i], blockA[i], blockB[i]);
    }

    /// @notice The finite rule for one element from its row and column (see ExactDot.dot).
    function dotElement(
        uint32[] calldata row,
        uint32[] calldata col
    ) external pure returns (uint32 value, int256 n, uint256 blockA, uint256 blockB) {
        if (row.length != col.length) revert HarnessLengthMismatch();
        return ExactDot.dot(row, col);
    }

    /// @notice Execution gas of op `op` (codes OP_*) on each input, measured with gasleft() around the call;
    ///         OP_NOOP measures the dispatch and measurement overhead, which callers subtract. Inputs per op:
    ///         x = a[i], y = b[i], n = ints[i] (ldexp's n, fromInt's n, align's block exponent, mulAdd's and
    ///         roundDot's N; roundDot's block exponents are a[i] and b[i]; mulAdd multiplies int(a[i]) by
    ///         int(b[i])). `sink` folds every result in so that no call can be optimized away.
    function gasOf(
        uint8 op,
        uint32[] calldata a,
        uint32[] calldata b,
        int256[] calldata ints
    ) external view returns (uint256[] memory gasUsed, uint256 sink) {
        if (a.length != b.length || a.length != ints.length) revert HarnessLengthMismatch();
        gasUsed = new uint256[](a.length);
        for (uint256 i = 0; i < a.length; ++i) {
            (uint32 x, uint32 y, int256 n) = (a[i], b[i], ints[i]);
            uint256 before = gasleft();
            uint256 r = _dispatch(op, x, y, n);
            gasUsed[i] = before - gasleft();
            sink ^= r;
        }
    }

    function _dispatch(uint8 op, uint32 x, uint32 y, int256 n) private pure returns (uint256) {
        if (op == OP_NOOP) return x;
        if (op <= OP_MINIMUM) return _binary(op - OP_ADD, x, y);
        if (op <= OP_FLOOR) return _unary(op - OP_SQRT, x);
        if (op == OP_LT) return Float32.lt(x, y) ? 1 : 0;
        if (op == OP_EQ) return Float32.eq(x, y) ? 1 : 0;
        if (op == OP_ISNAN) return Float32.isNaN(x) ? 1 : 0;
        if (op == OP_WHERE) return Float32.where(n != 0, x, y);
        if (op == OP_CLAMP) return Float32.clamp(x, 0xC2D00000, 0x42B20000); // exp's clamp(x, -104, 89)
        return _dispatchMore(op, x, y, n);
    }

    function _dispatchMore(uint8 op, uint32 x, uint32 y, int256 n) private pure returns (uint256) {
        if (op == OP_LDEXP) return Float32.ldexp(x, n);
        if (op == OP_FREXP) {
            (uint32 m, int32 e) = Float32.frexp(x);
            return uint256(m) ^ uint256(uint32(e));
        }
        if (op == OP_TOINT32) return uint256(uint32(Float32.toInt32(x)));
        if (op == OP_FROMINT) return Float32.fromInt(n);
        if (op == OP_EXPONENT_FIELD) return ExactDot.exponentField(x);
        if (op == OP_ALIGN) return uint256(ExactDot.align(x, uint256(n)));
        if (op == OP_MULADD) return uint256(ExactDot.mulAdd(n, int256(uint256(x)), int256(uint256(y))));
        if (op == OP_ROUNDDOT) return ExactDot.roundDot(n, x, y);
        revert HarnessUnknownOp(op);
    }

    function _binary(uint8 op, uint32 x, uint32 y) private pure returns (uint32) {
        if (op == 0) return Float32.add(x, y);
        if (op == 1) return Float32.sub(x, y);
        if (op == 2) return Float32.mul(x, y);
        if (op == 3) return Float32.div(x, y);
        if (op == 4) return Float32.maximum(x, y);
        if (op == 5) return Float32.minimum(x, y);
        revert HarnessUnknownOp(op);
    }

    function _unary(uint8 op, uint32 x) private pure returns (uint32) {
        if (op == 0) return Float32.sqrt(x);
        if (op == 1) return Float32.neg(x);
        if (op == 2) return Float32.abs(x);
        if (op == 3) return Float32.floor(x);
        revert HarnessUnknownOp(op);
    }

    function _compare(uint8 op, uint32 x, uint32 y) private pure returns (bool) {
        if (op == 0) return Float32.lt(x, y);
        if (op == 1) return Float32.le(x, y);
        if (op == 2) return Float32.gt(x, y);
        if (op == 3) return Float32.ge(x, y);
        if (op == 4) return Float32.eq(x, y);
        if (op == 5) return Float32.isNaN(x);
        revert HarnessUnknownOp(op);
    }
}
