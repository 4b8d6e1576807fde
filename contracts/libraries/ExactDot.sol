// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Float32} from "./Float32.sol";

/// @title ExactDot: the integer steps of the repro matmul/sum rule (docs/repro.md, section 2).
/// @notice One output element C = RNE_float32(N · 2^(EA + EB − 300)) with N = Σ_k a_k · b_k, where a_k and b_k are
///         the entries of a row of A and a column of B aligned to their block exponents EA and EB. A dispute
///         about a matmul or sum element narrows to one of these steps: a block exponent (a maximum of
///         exponent fields), one aligned integer, one multiply-add of the prefix sum, or the final rounding.
/// @dev These functions implement the finite rule (steps 1 to 5). Step 6 (a NaN or an infinity anywhere in the
///      row or column) is decided by the caller from the inputs and overrides the result; here a non-finite
///      entry counts as 0, exactly as the rule's step 2 says and as `gensyn_py/repro/reference.py` substitutes
///      before aligning: its exponent field counts as 1 and its aligned integer is 0.
library ExactDot {
    /// @notice An aligned integer was asked for at a block exponent below the entry's own exponent field (the
    ///         block exponent is the maximum over the block, so it is never below an entry's).
    error BelowEntryExponent(uint256 entryExponent, uint256 blockExponent);

    /// @dev Width of the low slice of an aligned integer (a = hi · 2^12 + lo, 0 <= lo < 2^12), as in the trace.
    uint256 internal constant SLICE_BITS = 12;

    /// @notice E(x) = max(biased exponent field, 1): subnormals and zeros share the scale of the smallest
    ///         normals (step 1). A non-finite x counts as 0, so E = 1.
    function exponentField(uint32 x) internal pure returns (uint256) {
        if (!Float32.isFinite(x)) return 1;
        uint256 field = (x >> 23) & 0xFF;
        return field == 0 ? 1 : field;
    }

    /// @notice The block exponent of a row of A or a column of B: the largest E over it (step 2); 1 when empty.
    function blockExponent(uint32[] memory xs) internal pure returns (uint256 blockE) {
        blockE = 1;
        for (uint256 k = 0; k < xs.length; ++k) {
            uint256 e = exponentField(xs[k]);
            if (e > blockE) blockE = e;
        }
    }

    /// @notice The aligned integer of x at block exponent blockE (step 3): sign(x) · RNE(m / 2^(blockE − E(x))),
    ///         i.e. RNE(x · 2^(150 − blockE)) as an integer, ties to even; |result| <= 2^24.
    /// @dev A non-finite x counts as 0. Reverts `BelowEntryExponent` when blockE < E(x) (not a block maximum).
    function align(uint32 x, uint256 blockE) internal pure returns (int256) {
        if (!Float32.isFinite(x)) return 0;
        (bool negative, uint256 m, ) = Float32.unpack(x);
        uint256 e = exponentField(x);
        // INVARIANT: blockE >= E(x), so the shift is a right shift and |result| <= 2^24 (a carry of m < 2^24).
        if (blockE < e) revert BelowEntryExponent(e, blockE);
        uint256 s = blockE - e;
        uint256 q;
        if (s == 0) {
            q = m; // the block's largest entries keep all their bits
        } else if (s > 25) {
            q = 0; // m < 2^24 < half of 2^s: rounds to zero
        } else {
            q = m >> s;
            uint256 rest = m - (q << s);
            uint256 half = 1 << (s - 1);
            // RNE to an integer: up above half, and at exactly half only when q is odd (ties to even).
            if (rest > half || (rest == half && (q & 1) == 1)) ++q;
        }
        return negative ? -int256(q) : int256(q);
    }

    /// @notice The 12-bit slices of an aligned integer: a = hi · 2^12 + lo with hi = floor(a / 2^12), 0 <= lo < 2^12
    ///         (the trace's a_hi / a_lo, whose dot products S_hi and S_lo give N = S_hi · 2^12 + S_lo).
    function split(int256 a) internal pure returns (int256 hi, int256 lo) {
        hi = a >> SLICE_BITS; // arithmetic shift: floor division for negative a too
        lo = a - (hi << SLICE_BITS);
    }

    /// @notice One step of the exact dot product (step 4): the prefix sum n plus a · b. Exact: |a|, |b| <= 2^24 and
    ///         K <= 2^14 keep every prefix sum below 2^62, far inside int256 (checked arithmetic reverts beyond).
    function mulAdd(int256 n, int256 a, int256 b) internal pure returns (int256) {
        return n + a * b;
    }

    /// @notice The single rounding (step 5): RNE_float32(n · 2^(blockA + blockB − 300)), gradual underflow,
    ///         overflow to ±inf; n = 0 gives +0, and a nonzero n that underflows to zero keeps its sign.
    function roundDot(int256 n, uint256 blockA, uint256 blockB) internal pure returns (uint32) {
        int256 exp2 = int256(blockA + blockB) - 300;
        return n < 0 ? Float32.round(true, uint256(-n), exp2) : Float32.round(false, uint256(n), exp2);
    }

    /// @notice The finite rule for one whole element from its row of A and column of B (equal lengths):
    ///         the value, N and both block exponents. Non-finite entries count as 0 (step 6 is the caller's).
    function dot(
        uint32[] memory row,
        uint32[] memory col
    ) internal pure returns (uint32 value, int256 n, uint256 blockA, uint256 blockB) {
        blockA = blockExponent(row);
        blockB = blockExponent(col);
        for (uint256 k = 0; k < row.length; ++k) {
            n = mulAdd(n, align(row[k], blockA), align(col[k], blockB));
        }
        value = roundDot(n, blockA, blockB);
    }
}
