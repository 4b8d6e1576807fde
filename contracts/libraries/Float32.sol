// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// @title Float32: IEEE-754 binary32 arithmetic on bit patterns, as the repro rule defines it.
/// @notice The referee of `repro`-mode disputes narrows a disagreement to one float32 primitive (docs/repro.md,
///         section 1) and recomputes it here. Every value is a `uint32` bit pattern (sign, 8-bit biased
///         exponent, 23-bit fraction). Rounding is round-to-nearest, ties to even (RNE), with gradual underflow
///         (subnormals, last bit 2^-149) and overflow to infinity; signed zeros follow IEEE-754.
/// @dev NaN payloads and NaN signs are not defined by the rule (any NaN is "a NaN"), so every NaN this library
///      returns is the canonical quiet NaN `QNAN` (0x7FC00000). All arithmetic is exact integer arithmetic on
///      the significands, rounded once by `round`: add/sub/mul/div/sqrt/ldexp/fromInt/floor share that core.
///      Everything is `internal pure`: inlined into the caller, no storage, no external call.
library Float32 {
    /// @dev The sign bit.
    uint32 internal constant SIGN = 0x80000000;
    /// @dev The 8-bit biased exponent field (all ones: inf or NaN).
    uint32 internal constant EXP_MASK = 0x7F800000;
    /// @dev The 23-bit fraction field.
    uint32 internal constant FRAC_MASK = 0x007FFFFF;
    /// @dev +infinity; -infinity is `INF | SIGN`.
    uint32 internal constant INF = 0x7F800000;
    /// @dev The canonical NaN returned for every NaN result.
    uint32 internal constant QNAN = 0x7FC00000;
    /// @dev float32 1.0 and -1.0.
    uint32 internal constant ONE = 0x3F800000;
    uint32 internal constant NEG_ONE = 0xBF800000;
    /// @dev ldexp's exponent clamp (docs/repro.md): a·2^n for |n| > 400 rounds like n = ±400, since
    ///      2^(127+400) overflows and 2^(-149-400) is below half of the least subnormal for every finite a.
    int256 internal constant LDEXP_CLAMP = 400;
    /// @dev Largest float32 below 2^31 (the int32 saturation bound of `toInt32`, as the reference clips).
    int32 internal constant INT32_SAT_HI = 2147483520;

    // ---------------------------------------------------------------------------------------------------
    // Classification and decomposition
    // ---------------------------------------------------------------------------------------------------

    /// @notice Whether x is a NaN: exponent field all ones and a nonzero fraction.
    function isNaN(uint32 x) internal pure returns (bool) {
        return (x & ~SIGN) > INF;
    }

    /// @notice Whether x is +inf or -inf.
    function isInf(uint32 x) internal pure returns (bool) {
        return (x & ~SIGN) == INF;
    }

    /// @notice Whether x is finite (not inf, not NaN).
    function isFinite(uint32 x) internal pure returns (bool) {
        return (x & EXP_MASK) != EXP_MASK;
    }

    /// @notice Whether x is +0 or -0.
    function isZero(uint32 x) internal pure returns (bool) {
        return (x & ~SIGN) == 0;
    }

    /// @notice The exact split of a finite x: |x| = m · 2^e with m the 24-bit significand (hidden bit included
    ///         for normals) and e = max(exponent field, 1) - 150, so subnormals have e = -149 and no hidden bit.
    /// @dev For inf/NaN the result is meaningless; callers handle them first.
    function unpack(uint32 x) internal pure returns (bool negative, uint256 m, int256 e) {
        negative = (x & SIGN) != 0;
        uint256 field = (x >> 23) & 0xFF;
        m = x & FRAC_MASK;
        if (field == 0) {
            e = -149; // subnormal (or zero): no hidden bit, same scale as field 1
        } else {
            m |= 1 << 23;
            e = int256(field) - 150;
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // The rounding core
    // ---------------------------------------------------------------------------------------------------

    /// @notice RNE_float32(±magnitude · 2^exp2): the single rounding every arithmetic primitive ends with.
    /// @dev Keeps 24 significant bits, or fewer where the value is below 2^-126 (gradual underflow: the last
    ///      kept bit never goes below 2^-149); rounds the dropped bits to nearest, ties to the even neighbour;
    ///      a result at or beyond 2^128 after rounding is ±inf (IEEE overflow under RNE). magnitude = 0 gives a
    ///      zero with the given sign; a nonzero value that rounds to zero keeps its sign (IEEE underflow).
    function round(bool negative, uint256 magnitude, int256 exp2) internal pure returns (uint32) {
        uint32 sign = negative ? SIGN : 0;
        if (magnitude == 0) return sign;
        int256 bits = int256(Math.log2(magnitude)) + 1;
        // Bits to drop: enough to keep 24, or enough that the last kept bit is 2^-149.
        int256 drop = bits - 24;
        if (-149 - exp2 > drop) drop = -149 - exp2;
        if (drop > 0) {
            if (drop > bits) return sign; // magnitude < 2^(drop-1), below half of the last kept place: to zero
            unchecked {
                // 0 < s <= bits <= 256: no shift or subtraction below wraps.
                uint256 s = uint256(drop);
                uint256 q = magnitude >> s;
                uint256 rest = magnitude - (q << s);
                uint256 half = 1 << (s - 1);
                // RNE: up when the dropped part exceeds half an ulp, or equals it and q is odd (ties to even).
                if (rest > half || (rest == half && (q & 1) == 1)) ++q;
                if (q == 0) return sign; // dropped exactly half of an even 0: ties to even gives zero
                // q <= 2^kept: one more bit exactly when rounding up carried into a new leading bit.
                uint256 kept = uint256(bits - drop);
                bits = int256(kept + (q >> kept));
                magnitude = q;
            }
            exp2 += drop;
        }
        // INVARIANT: magnitude <= 2^24 (2^24 only after a carry) and exp2 >= -149, so the value is a float32
        // (normal or subnormal) unless it overflows. `bits` is its bit length, so the leading bit sits at 2^top.
        int256 top = bits - 1 + exp2;
        if (top > 127) return sign | INF; // IEEE overflow under RNE: to infinity
        if (top < -126) {
            // Subnormal: value = f · 2^-149 with f < 2^23, exact since exp2 >= -149.
            return sign | uint32(magnitude << uint256(exp2 + 149));
        }
        // Normal: left-align the leading bit at 2^23 (a carry to 2^24 shifts back exactly: its low bit is 0).
        uint256 sig = bits <= 24 ? magnitude << uint256(24 - bits) : magnitude >> uint256(bits - 24);
        return sign | (uint32(uint256(top + 127)) << 23) | (uint32(sig) & FRAC_MASK);
    }

    // ---------------------------------------------------------------------------------------------------
    // Arithmetic: add sub mul div sqrt
    // ---------------------------------------------------------------------------------------------------

    /// @notice a + b, correctly rounded (IEEE-754 addition).
    function add(uint32 a, uint32 b) internal pure returns (uint32) {
        if (isNaN(a) || isNaN(b)) return QNAN;
        bool aInf = isInf(a);
        bool bInf = isInf(b);
        if (aInf || bInf) {
            // inf + (-inf) is invalid (NaN); otherwise the infinity wins.
            if (aInf && bInf && a != b) return QNAN;
            return aInf ? a : b;
        }
        return _addFinite(a, b);
    }

    /// @notice a - b = a + (-b), exactly as IEEE-754 defines subtraction (signed zeros included).
    function sub(uint32 a, uint32 b) internal pure returns (uint32) {
        return add(a, b ^ SIGN);
    }

    /// @dev The exact sum of two finite values, rounded once.
    function _addFinite(uint32 a, uint32 b) private pure returns (uint32) {
        (bool sa, uint256 ma, int256 ea) = unpack(a);
        (bool sb, uint256 mb, int256 eb) = unpack(b);
        // Let a be the operand with the larger exponent.
        if (eb > ea) {
            (sa, ma, ea, sb, mb, eb) = (sb, mb, eb, sa, ma, ea);
        }
        // Align exactly at the smaller exponent. A gap above 60 only happens when a is normal (ea > -89), so
        // |a| >= 2^(ea+23) and the result's last bit is >= 2^(ea-1): any nonzero b below 2^(ea-36) lies strictly
        // inside the same half-ulp interval, so it is replaced by a sticky 1 at 2^(ea-60) (same rounding).
        if (ea - eb > 60) {
            if (mb != 0) mb = 1;
            eb = ea - 60;
        }
        ma <<= uint256(ea - eb);
        uint256 mag;
        bool negative;
        if (sa == sb) {
            (mag, negative) = (ma + mb, sa);
        } else if (ma > mb) {
            (mag, negative) = (ma - mb, sa);
        } else if (mb > ma) {
            (mag, negative) = (mb - ma, sb);
        } else {
            return 0; // exact cancellation x + (-x) is +0 under RNE (also +0 + -0 = +0)
        }
        // Same signs with both zero: -0 + -0 = -0 and +0 + +0 = +0 (round keeps the sign of a zero magnitude).
        return round(negative, mag, eb);
    }

    /// @notice a · b, correctly rounded.
    function mul(uint32 a, uint32 b) internal pure returns (uint32) {
        if (isNaN(a) || isNaN(b)) return QNAN;
        bool negative = ((a ^ b) & SIGN) != 0;
        if (isInf(a) || isInf(b)) {
            // inf · 0 is invalid; otherwise an infinity with the product's sign.
            if (isZero(a) || isZero(b)) return QNAN;
            return negative ? INF | SIGN : INF;
        }
        (, uint256 ma, int256 ea) = unpack(a);
        (, uint256 mb, int256 eb) = unpack(b);
        return round(negative, ma * mb, ea + eb); // exact 48-bit product, one rounding
    }

    /// @notice a / b, correctly rounded.
    function div(uint32 a, uint32 b) internal pure returns (uint32) {
        if (isNaN(a) || isNaN(b)) return QNAN;
        bool negative = ((a ^ b) & SIGN) != 0;
        uint32 sign = negative ? SIGN : 0;
        if (isInf(a)) return isInf(b) ? QNAN : sign | INF; // inf/inf invalid; inf/finite = inf
        if (isInf(b)) return sign; // finite/inf = signed zero
        if (isZero(b)) return isZero(a) ? QNAN : sign | INF; // 0/0 invalid; x/0 = inf (division by zero)
        if (isZero(a)) return sign;
        (, uint256 ma, int256 ea) = unpack(a);
        (, uint256 mb, int256 eb) = unpack(b);
        // Wide integer quotient: (ma · 2^64) / mb has at least 41 bits (ma >= 1, mb < 2^24), far more than the
        // 24 kept plus a rounding bit; a nonzero remainder becomes a sticky bit below the quotient, which
        // decides "above / below half" exactly as the full remainder would.
        uint256 num = ma << 64;
        uint256 q = num / mb;
        uint256 sticky = num - q * mb == 0 ? 0 : 1;
        return round(negative, (q << 1) | sticky, ea - eb - 65);
    }

    /// @notice sqrt(a), correctly rounded: sqrt(-0) = -0, sqrt(x < 0) = NaN, sqrt(+inf) = +inf.
    function sqrt(uint32 a) internal pure returns (uint32) {
        if (isNaN(a)) return QNAN;
        if (isZero(a)) return a; // IEEE: sqrt(±0) = ±0
        if ((a & SIGN) != 0) return QNAN; // negative (including -inf): invalid
        if (a == INF) return INF;
        (, uint256 m, int256 e) = unpack(a);
        // Make the exponent even, then scale by 2^64 so the integer root has at least 32 bits:
        // sqrt(m · 2^e) = sqrt(m · 2^64) · 2^(e/2 - 32). The remainder is the sticky bit (a square root of a
        // float32 is never exactly a midpoint, but the sticky rule does not rely on that).
        if (e & 1 != 0) {
            m <<= 1;
            e -= 1;
        }
        uint256 scaled = m << 64;
        uint256 r = Math.sqrt(scaled); // floor
        uint256 sticky = scaled - r * r == 0 ? 0 : 1;
        return round(false, (r << 1) | sticky, e / 2 - 33);
    }

    // ---------------------------------------------------------------------------------------------------
    // Sign, selection and comparison (exact)
    // ---------------------------------------------------------------------------------------------------

    /// @notice -a: flips the sign bit (exact; the sign of zeros too).
    function neg(uint32 a) internal pure returns (uint32) {
        return isNaN(a) ? QNAN : a ^ SIGN;
    }

    /// @notice |a|: clears the sign bit (exact).
    function abs(uint32 a) internal pure returns (uint32) {
        return isNaN(a) ? QNAN : a & ~SIGN;
    }

    /// @dev A signed integer that orders non-NaN floats as their values (-0 and +0 both map to 0).
    function _key(uint32 x) private pure returns (int256) {
        int256 mag = int256(uint256(x & ~SIGN));
        return (x & SIGN) != 0 ? -mag : mag;
    }

    /// @notice max(a, b): NaN if either is NaN; max(+0, -0) = +0; otherwise the larger value.
    function maximum(uint32 a, uint32 b) internal pure returns (uint32) {
        if (isNaN(a) || isNaN(b)) return QNAN;
        if (isZero(a) && isZero(b)) return a & b; // -0 only when both are -0
        return _key(a) >= _key(b) ? a : b;
    }

    /// @notice min(a, b): NaN if either is NaN; min(+0, -0) = -0; otherwise the smaller value.
    function minimum(uint32 a, uint32 b) internal pure returns (uint32) {
        if (isNaN(a) || isNaN(b)) return QNAN;
        if (isZero(a) && isZero(b)) return a | b; // -0 when either is -0
        return _key(a) <= _key(b) ? a : b;
    }

    /// @notice min(max(a, lo), hi), the rule's clamp (used with nonzero constants lo < hi); NaN -> NaN.
    function clamp(uint32 a, uint32 lo, uint32 hi) internal pure returns (uint32) {
        return minimum(maximum(a, lo), hi);
    }

    /// @notice a < b (IEEE: false when a NaN is involved; -0 == +0).
    function lt(uint32 a, uint32 b) internal pure returns (bool) {
        return !isNaN(a) && !isNaN(b) && _key(a) < _key(b);
    }

    /// @notice a <= b.
    function le(uint32 a, uint32 b) internal pure returns (bool) {
        return !isNaN(a) && !isNaN(b) && _key(a) <= _key(b);
    }

    /// @notice a > b.
    function gt(uint32 a, uint32 b) internal pure returns (bool) {
        return lt(b, a);
    }

    /// @notice a >= b.
    function ge(uint32 a, uint32 b) internal pure returns (bool) {
        return le(b, a);
    }

    /// @notice a == b (NaN equals nothing, itself included; -0 == +0).
    function eq(uint32 a, uint32 b) internal pure returns (bool) {
        return !isNaN(a) && !isNaN(b) && _key(a) == _key(b);
    }

    /// @notice where(c, a, b): a if c else b (exact select).
    function where(bool c, uint32 a, uint32 b) internal pure returns (uint32) {
        uint32 r = c ? a : b;
        return isNaN(r) ? QNAN : r;
    }

    // ---------------------------------------------------------------------------------------------------
    // Integer parts, scaling and conversions
    // ---------------------------------------------------------------------------------------------------

    /// @notice floor(a), exact: the largest integer <= a; floor(-0) = -0; inf and NaN unchanged.
    function floor(uint32 a) internal pure returns (uint32) {
        if (isNaN(a)) return QNAN;
        uint256 field = (a >> 23) & 0xFF;
        if (field >= 150) return a; // |a| >= 2^23 (or inf): already an integer
        bool negative = (a & SIGN) != 0;
        if (field < 127) {
            // |a| < 1: +0 for positive a and for ±0 (signs kept), -1 for negative nonzero a.
            if (isZero(a) || !negative) return a & SIGN;
            return NEG_ONE;
        }
        (, uint256 m, ) = unpack(a);
        uint256 fracBits = 150 - field; // 1..23 bits below the binary point
        uint256 whole = m >> fracBits;
        if (negative && (m & ((1 << fracBits) - 1)) != 0) ++whole; // toward -inf for a negative non-integer
        return round(negative, whole, 0); // exact: whole <= 2^23
    }

    /// @notice a · 2^n rounded once (RNE, overflow to inf, gradual underflow); n clamped to ±400, which changes
    ///         no result. ±0 and ±inf are returned unchanged.
    function ldexp(uint32 a, int256 n) internal pure returns (uint32) {
        if (isNaN(a)) return QNAN;
        if (isZero(a) || isInf(a)) return a;
        if (n > LDEXP_CLAMP) n = LDEXP_CLAMP;
        if (n < -LDEXP_CLAMP) n = -LDEXP_CLAMP;
        (bool negative, uint256 m, int256 e) = unpack(a);
        return round(negative, m, e + n);
    }

    /// @notice The exact split a = m · 2^e with 0.5 <= |m| < 1 (subnormals included); (a, 0) for ±0, ±inf, NaN.
    function frexp(uint32 a) internal pure returns (uint32 m, int32 e) {
        if (isNaN(a)) return (QNAN, 0);
        if (isZero(a) || isInf(a)) return (a, 0);
        (, uint256 sig, int256 ex) = unpack(a);
        uint256 bits = Math.log2(sig) + 1; // |a| = sig · 2^ex with 2^(bits-1) <= sig < 2^bits
        // |m| = sig · 2^-bits in [0.5, 1): biased exponent 126, the fraction is sig left-aligned below its top bit.
        m = (a & SIGN) | (uint32(126) << 23) | (uint32(sig << (24 - bits)) & FRAC_MASK);
        e = int32(ex + int256(bits));
    }

    /// @notice a truncated toward zero to int32; NaN -> 0; |a| >= 2^31 saturates at the reference's clip bounds
    ///         (-2^31 and 2147483520, the largest float32 below 2^31), infinities included.
    function toInt32(uint32 a) internal pure returns (int32) {
        if (isNaN(a)) return 0;
        bool negative = (a & SIGN) != 0;
        uint256 field = (a >> 23) & 0xFF;
        if (field >= 158) return negative ? type(int32).min : INT32_SAT_HI; // |a| >= 2^31
        if (field < 127) return 0; // |a| < 1
        (, uint256 m, ) = unpack(a);
        // |a| = m · 2^(field-150) < 2^31: drop the fraction bits (truncation), or shift up an integer.
        uint256 t = field >= 150 ? m << (field - 150) : m >> (150 - field);
        return negative ? -int32(int256(t)) : int32(int256(t));
    }

    /// @notice The integer n (|n| < 2^53, the rule's range) to float32, rounded once (RNE); 0 gives +0.
    function fromInt(int256 n) internal pure returns (uint32) {
        return n < 0 ? round(true, uint256(-n), 0) : round(false, uint256(n), 0);
    }
}
