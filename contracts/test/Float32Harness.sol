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

    /// @notice Execution gas of op `op` on each input, measured with gasleft() around one call through an internal
    ///         function pointer (so every op, the no-op included, pays the same call overhead, which callers
    ///         subtract by measuring op 0). `sink` folds every result in so that no call can be optimized away.
    ///         op: 0 no-op, 1 add, 2 sub, 3 mul, 4 div, 5 maximum, 6 minimum, 7 sqrt, 8 neg, 9 abs, 10 floor,
    ///         11 lt, 12 eq, 13 isNaN, 14 where, 15 clamp(x, -104, 89), 16 ldexp, 17 frexp, 18 toInt32,
    ///         19 fromInt, 20 exponentField, 21 align, 22 mulAdd, 23 roundDot. Inputs: x = a[i], y = b[i],
    ///         n = ints[i] (where's condition n != 0, ldexp's and fromInt's n, align's block exponent, mulAdd's and
    ///         roundDot's N; mulAdd multiplies x by y; roundDot's block exponents are x and y).
    function gasOf(
        uint8 op,
        uint32[] calldata a,
        uint32[] calldata b,
        int256[] calldata ints
    ) external view returns (uint256[] memory gasUsed, uint256 sink) {
        if (a.length != b.length || a.length != ints.length) revert HarnessLengthMismatch();
        function(uint32, uint32, int256) pure returns (uint256) f = _op(op);
        gasUsed = new uint256[](a.length);
        for (uint256 i = 0; i < a.length; ++i) {
            (uint32 x, uint32 y, int256 n) = (a[i], b[i], ints[i]);
            uint256 before = gasleft();
            uint256 r = f(x, y, n);
            gasUsed[i] = before - gasleft();
            sink ^= r;
        }
    }

    function _op(uint8 op) private pure returns (function(uint32, uint32, int256) pure returns (uint256)) {
        if (op == 0) return _noop;
        if (op == 1) return _add;
        if (op == 2) return _sub;
        if (op == 3) return _mul;
        if (op == 4) return _div;
        if (op == 5) return _maximum;
        if (op == 6) return _minimum;
        if (op == 7) return _sqrt;
        if (op == 8) return _neg;
        if (op == 9) return _abs;
        if (op == 10) return _floor;
        if (op == 11) return _lt;
        if (op == 12) return _eq;
        if (op == 13) return _isNaN;
        if (op == 14) return _where;
        if (op == 15) return _clamp;
        return _opMore(op);
    }

    function _opMore(uint8 op) private pure returns (function(uint32, uint32, int256) pure returns (uint256)) {
        if (op == 16) return _ldexp;
        if (op == 17) return _frexp;
        if (op == 18) return _toInt32;
        if (op == 19) return _fromInt;
        if (op == 20) return _exponentField;
        if (op == 21) return _align;
        if (op == 22) return _mulAdd;
        if (op == 23) return _roundDot;
        revert HarnessUnknownOp(op);
    }

    function _noop(uint32 x, uint32, int256) private pure returns (uint256) {
        return x;
    }

    function _add(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.add(x, y);
    }

    function _sub(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.sub(x, y);
    }

    function _mul(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.mul(x, y);
    }

    function _div(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.div(x, y);
    }

    function _maximum(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.maximum(x, y);
    }

    function _minimum(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.minimum(x, y);
    }

    function _sqrt(uint32 x, uint32, int256) private pure returns (uint256) {
        return Float32.sqrt(x);
    }

    function _neg(uint32 x, uint32, int256) private pure returns (uint256) {
        return Float32.neg(x);
    }

    function _abs(uint32 x, uint32, int256) private pure returns (uint256) {
        return Float32.abs(x);
    }

    function _floor(uint32 x, uint32, int256) private pure returns (uint256) {
        return Float32.floor(x);
    }

    function _lt(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.lt(x, y) ? 1 : 0;
    }

    function _eq(uint32 x, uint32 y, int256) private pure returns (uint256) {
        return Float32.eq(x, y) ? 1 : 0;
    }

    function _isNaN(uint32 x, uint32, int256) private pure returns (uint256) {
        return Float32.isNaN(x) ? 1 : 0;
    }

    function _where(uint32 x, uint32 y, int256 n) private pure returns (uint256) {
        return Float32.where(n != 0, x, y);
    }

    function _clamp(uint32 x, uint32, int256) private pure returns (uint256) {
        return Float32.clamp(x, 0xC2D00000, 0x42B20000); // exp's clamp(x, -104, 89)
    }

    function _ldexp(uint32 x, uint32, int256 n) private pure returns (uint256) {
        return Float32.ldexp(x, n);
    }

    function _frexp(uint32 x, uint32, int256) private pure returns (uint256) {
        (uint32 m, int32 e) = Float32.frexp(x);
        return uint256(m) ^ uint256(uint32(e));
    }

    function _toInt32(uint32 x, uint32, int256) private pure returns (uint256) {
        return uint256(uint32(Float32.toInt32(x)));
    }

    function _fromInt(uint32, uint32, int256 n) private pure returns (uint256) {
        return Float32.fromInt(n);
    }

    function _exponentField(uint32 x, uint32, int256) private pure returns (uint256) {
        return ExactDot.exponentField(x);
    }

    function _align(uint32 x, uint32, int256 n) private pure returns (uint256) {
        return uint256(ExactDot.align(x, uint256(n)));
    }

    function _mulAdd(uint32 x, uint32 y, int256 n) private pure returns (uint256) {
        return uint256(ExactDot.mulAdd(n, int256(uint256(x)), int256(uint256(y))));
    }

    function _roundDot(uint32 x, uint32 y, int256 n) private pure returns (uint256) {
        return ExactDot.roundDot(n, x, y);
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
