// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Float32} from "./Float32.sol";
import {PackedMoves} from "./PackedMoves.sol";
import {TraceProofs} from "./TraceProofs.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";

/// @title ElementStep: the last move of a repro dispute over an elementwise op, recomputed on-chain.
/// @notice When a dispute has narrowed to one output element of one elementwise op of a traced step (docs/repro.md
///         section 6, docs/dispute-game.md stage e), this library proves the op leaf in the trace root, proves the
///         input elements that output element reads (numpy broadcasting, as `trace.bcast`) against the op's input
///         roots, recomputes the element with `Float32` exactly as `gensyn_py/repro/reference.py` defines the op,
///         and proves the claimed element against the op's output root. The caller compares the two.
/// @dev Internal functions only (a game inlines them). The op codes are those of `gensyn_py/repro/opset.py`'s
///      ELEMENTWISE set; only `clamp` has attributes (two doubles), checked against the leaf's attribute hash by
///      rebuilding the canonical JSON `trace._attrs_json` writes (floats as Python's `float.hex()`).
library ElementStep {
    bytes32 internal constant ADD = keccak256("add");
    bytes32 internal constant SUB = keccak256("sub");
    bytes32 internal constant MUL = keccak256("mul");
    bytes32 internal constant DIV = keccak256("div");
    bytes32 internal constant SQRT = keccak256("sqrt");
    bytes32 internal constant NEG = keccak256("neg");
    bytes32 internal constant ABS = keccak256("abs");
    bytes32 internal constant MAXIMUM = keccak256("maximum");
    bytes32 internal constant MINIMUM = keccak256("minimum");
    bytes32 internal constant CLAMP = keccak256("clamp");
    bytes32 internal constant LT = keccak256("lt");
    bytes32 internal constant GT = keccak256("gt");
    bytes32 internal constant EQ = keccak256("eq");
    bytes32 internal constant ISNAN = keccak256("isnan");
    bytes32 internal constant WHERE = keccak256("where");
    bytes32 internal constant FLOOR = keccak256("floor");
    bytes32 internal constant TO_INT32 = keccak256("to_int32");
    bytes32 internal constant FROM_INT = keccak256("from_int");
    bytes32 internal constant LDEXP = keccak256("ldexp");
    bytes32 internal constant LDEXP_F = keccak256("ldexp_f");
    bytes32 internal constant FREXP_M = keccak256("frexp_m");
    bytes32 internal constant FREXP_E = keccak256("frexp_e");
    /// @dev The attribute hash of an op without attributes: keccak256 of the canonical JSON "[]".
    bytes32 internal constant NO_ATTRS = keccak256("[]");

    /// @notice The output dtype code of `code` (TraceProofs' codes) and its input count; reverts for an op that
    ///         is not elementwise.
    function signature(bytes32 code) internal pure returns (uint256 outDtype, uint256 inputs) {
        if (code == ADD || code == SUB || code == MUL || code == DIV || code == MAXIMUM || code == MINIMUM)
            return (TraceProofs.DTYPE_FLOAT32, 2);
        if (code == LDEXP || code == LDEXP_F) return (TraceProofs.DTYPE_FLOAT32, 2);
        if (code == LT || code == GT || code == EQ) return (TraceProofs.DTYPE_BOOL, 2);
        if (code == SQRT || code == NEG || code == ABS || code == FLOOR || code == CLAMP || code == FROM_INT)
            return (TraceProofs.DTYPE_FLOAT32, 1);
        if (code == FREXP_M) return (TraceProofs.DTYPE_FLOAT32, 1);
        if (code == ISNAN) return (TraceProofs.DTYPE_BOOL, 1);
        if (code == TO_INT32 || code == FREXP_E) return (TraceProofs.DTYPE_INT32, 1);
        if (code == WHERE) return (TraceProofs.DTYPE_FLOAT32, 3);
        revert ITraceProofs.NotElementwise(code);
    }

    /// @notice The flat index of the element of an input of `inShape` that output element `element` of
    ///         `outShape` reads under numpy broadcasting (trailing dims aligned; a dim of 1 repeats).
    function broadcastIndex(
        uint256[] calldata outShape,
        uint256[] calldata inShape,
        uint256 element
    ) internal pure returns (uint256 index) {
        uint256 no = outShape.length;
        uint256 ni = inShape.length;
        if (ni > no) revert ITraceProofs.BadBroadcast(no, ni);
        uint256 lead = no - ni; // leading output dims the input does not have: they move no input index
        uint256 rest = element;
        uint256 stride = 1;
        for (uint256 d = no; d > lead;) {
            unchecked {
                --d; // d > lead >= 0
            }
            uint256 size = outShape[d];
            uint256 s = inShape[d - lead];
            // INVARIANT: an input dim broadcasts only from 1; otherwise it equals the output's.
            if (s != 1) {
                if (s != size) revert ITraceProofs.BadBroadcast(no, ni);
                index += (rest % size) * stride;
                stride *= s;
            }
            rest /= size;
        }
    }

    /// @notice Whether two shapes are the same (then broadcasting maps every element to itself).
    function sameShape(uint256[] calldata a, uint256[] calldata b) internal pure returns (bool same) {
        // solhint-disable-next-line no-inline-assembly
        assembly {
            same := eq(a.length, b.length)
            for {
                let i := 0
            } and(same, lt(i, a.length)) {
                i := add(i, 1)
            } {
                same := eq(calldataload(add(a.offset, shl(5, i))), calldataload(add(b.offset, shl(5, i))))
            }
        }
    }

    /// @notice Recompute one output element of elementwise op `code` from its input elements' raw bits `x`
    ///         (their dtype codes in `dtypes`); `lo` and `hi` are clamp's bounds as float32 (ignored otherwise).
    ///         Returns the output's raw bits (float32 and int32 as uint32, bool as 0 or 1).
    function compute(
        bytes32 code,
        uint256[] memory x,
        uint256[] memory dtypes,
        uint32 lo,
        uint32 hi
    ) internal pure returns (uint256) {
        if (code == ADD) return Float32.add(uint32(x[0]), uint32(x[1]));
        if (code == SUB) return Float32.sub(uint32(x[0]), uint32(x[1]));
        if (code == MUL) return Float32.mul(uint32(x[0]), uint32(x[1]));
        if (code == DIV) return Float32.div(uint32(x[0]), uint32(x[1]));
        if (code == MAXIMUM) return Float32.maximum(uint32(x[0]), uint32(x[1]));
        if (code == MINIMUM) return Float32.minimum(uint32(x[0]), uint32(x[1]));
        if (code == SQRT) return Float32.sqrt(uint32(x[0]));
        if (code == NEG) return Float32.neg(uint32(x[0]));
        if (code == ABS) return Float32.abs(uint32(x[0]));
        if (code == FLOOR) return Float32.floor(uint32(x[0]));
        if (code == CLAMP) return Float32.clamp(uint32(x[0]), lo, hi);
        if (code == LT) return Float32.lt(uint32(x[0]), uint32(x[1])) ? 1 : 0;
        if (code == GT) return Float32.gt(uint32(x[0]), uint32(x[1])) ? 1 : 0;
        if (code == EQ) return Float32.eq(uint32(x[0]), uint32(x[1])) ? 1 : 0;
        if (code == ISNAN) return Float32.isNaN(uint32(x[0])) ? 1 : 0;
        if (code == WHERE) return Float32.where(x[0] != 0, uint32(x[1]), uint32(x[2]));
        if (code == TO_INT32) return uint32(Float32.toInt32(uint32(x[0])));
        if (code == FROM_INT) return Float32.fromInt(signedOf(x[0], dtypes[0]));
        if (code == LDEXP) return Float32.ldexp(uint32(x[0]), signedOf(x[1], dtypes[1]));
        if (code == LDEXP_F) return Float32.ldexp(uint32(x[0]), floatExponent(uint32(x[1])));
        if (code == FREXP_M) {
            (uint32 m, ) = Float32.frexp(uint32(x[0]));
            return m;
        }
        if (code == FREXP_E) {
            (, int32 e) = Float32.frexp(uint32(x[0]));
            return uint32(e);
        }
        revert ITraceProofs.NotElementwise(code);
    }

    /// @notice The integer an int32 or int64 element's raw bits hold (two's complement).
    function signedOf(uint256 bits, uint256 dtype) internal pure returns (int256) {
        if (dtype == TraceProofs.DTYPE_INT32) return int256(int32(uint32(bits)));
        if (dtype == TraceProofs.DTYPE_INT64) return int256(int64(uint64(bits)));
        revert ITraceProofs.UnknownDtype(dtype);
    }

    /// @notice ldexp_f's exponent: the float32 n converted to an integer as the reference does (NumPy's float to
    ///         int64, truncating). A NaN or an infinity converts to int64's minimum there (x86), which the ldexp
    ///         clamp makes -400; finite values beyond the int32 range saturate, which the clamp makes ±400 too.
    function floatExponent(uint32 n) internal pure returns (int256) {
        if (!Float32.isFinite(n)) return -Float32.LDEXP_CLAMP;
        return Float32.toInt32(n);
    }

    /// @notice Whether two raw outputs of dtype `dtype` are the same result (for float32: any NaN equals any NaN).
    function same(uint256 dtype, uint256 a, uint256 b) internal pure returns (bool) {
        if (dtype == TraceProofs.DTYPE_FLOAT32 && Float32.isNaN(uint32(a))) return Float32.isNaN(uint32(b));
        return a == b;
    }

    /// @notice Python's `float.hex()` of the double with bits `d` (finite only): "[-]0x1.<13 hex>p<+|->e", or
    ///         "[-]0x0.<13 hex>p-1022" for a subnormal, "[-]0x0.0p+0" for a zero.
    function hexDouble(uint64 d) internal pure returns (bytes memory) {
        bool negative = d >> 63 != 0;
        uint256 field = (d >> 52) & 0x7FF;
        uint256 frac = d & ((uint64(1) << 52) - 1);
        if (field == 0x7FF) revert ITraceProofs.BadAttributes(keccak256(abi.encodePacked(d)));
        bytes memory sign = negative ? bytes("-") : bytes("");
        if (field == 0 && frac == 0) return abi.encodePacked(sign, "0x0.0p+0");
        bytes memory digits = new bytes(13);
        bytes memory hexChars = "0123456789abcdef";
        for (uint256 i; i < 13; ++i) digits[12 - i] = hexChars[(frac >> (4 * i)) & 0xF];
        int256 e = field == 0 ? int256(-1022) : int256(field) - 1023;
        bytes memory lead = field == 0 ? bytes("0x0.") : bytes("0x1.");
        return abi.encodePacked(sign, lead, digits, "p", e < 0 ? "-" : "+", _decimal(uint256(e < 0 ? -e : e)));
    }

    /// @notice float32(the double with bits `d`), rounded once (RNE): how a clamp bound reaches float32.
    function toFloat32(uint64 d) internal pure returns (uint32) {
        bool negative = d >> 63 != 0;
        uint256 field = (d >> 52) & 0x7FF;
        uint256 frac = d & ((uint64(1) << 52) - 1);
        if (field == 0x7FF) return frac == 0 ? (negative ? Float32.INF | Float32.SIGN : Float32.INF) : Float32.QNAN;
        if (field == 0) return Float32.round(negative, frac, -1074);
        return Float32.round(negative, frac | (uint256(1) << 52), int256(field) - 1075);
    }

    /// @notice The attribute hash of clamp(·, lo, hi) with bounds given as doubles: keccak256 of
    ///         `[{"f":"<lo.hex()>"},{"f":"<hi.hex()>"}]`, as `trace.attrs_hash((lo, hi))`.
    function clampAttrsHash(uint64 lo, uint64 hi) internal pure returns (bytes32) {
        // hex: the JSON punctuation [{"f":" then "},{"f":" then "}] (quotes inside string literals would need escapes)
        return
            keccak256(
                abi.encodePacked(
                    hex"5b7b2266223a22",
                    hexDouble(lo),
                    hex"227d2c7b2266223a22",
                    hexDouble(hi),
                    hex"227d5d"
                )
            );
    }

    /// @notice The whole last move over an elementwise op of the trace with root `traceRoot`, packed
    ///         (`PackedMoves`): the op leaf and its path; clamp's two bounds as doubles in one word (lo << 64 | hi;
    ///         zero for the other ops); the output header and the output element opened; then each input's header
    ///         and the input element that output element reads, in the op's order. The roots are the op leaf's.
    ///         Returns the recomputed and the committed output bits and the output dtype; the committed output is
    ///         right exactly when `same(outDtype, expected, committed)`.
    function check(
        bytes32 traceRoot,
        bytes calldata m
    ) internal pure returns (uint256 expected, uint256 committed, uint256 outDtype) {
        bytes32 code = bytes32(PackedMoves.word(m, 32));
        uint256 count;
        (outDtype, count) = signature(code);
        (uint256 at, uint256 bounds) = _opAndAttributes(traceRoot, m, code, count); // `at`: the bounds word
        // INVARIANT: the output header is of the op's dtype (checked before any opening is hashed).
        if (PackedMoves.word(m, at + 32) != outDtype) revert ITraceProofs.OutputMismatch(PackedMoves.word(m, 0));
        PackedMoves.Opened memory out = PackedMoves.open(m, at + 32, PackedMoves.outputRoot(m, 0, count));
        committed = out.bits;
        (uint256[] memory x, uint256[] memory dtypes) = _operands(m, out, count);
        (uint32 lo, uint32 hi) = code == CLAMP ? (toFloat32(uint64(bounds >> 64)), toFloat32(uint64(bounds))) : (0, 0);
        expected = compute(code, x, dtypes, lo, hi);
    }

    /// @dev The op leaf at byte 0 of `m` is in `traceRoot`, and its attributes are clamp's bounds (the word after
    ///      its path, returned with its byte offset) or none.
    function _opAndAttributes(
        bytes32 traceRoot,
        bytes calldata m,
        bytes32 code,
        uint256 count
    ) private pure returns (uint256 at, uint256 bounds) {
        (, at) = PackedMoves.op(m, 0, count, traceRoot);
        bounds = PackedMoves.word(m, at);
        // INVARIANT: attributes are the committed ones (clamp's bounds), or there are none.
        bytes32 attrs = bytes32(PackedMoves.word(m, 64));
        bytes32 given = code == CLAMP ? clampAttrsHash(uint64(bounds >> 64), uint64(bounds)) : NO_ATTRS;
        if (given != attrs) revert ITraceProofs.BadAttributes(attrs);
    }

    /// @dev The input elements the opened output element `out` reads (numpy broadcasting), opened after it in
    ///      the op's order and each proven against the op leaf's root of that input; and their dtypes.
    function _operands(
        bytes calldata m,
        PackedMoves.Opened memory out,
        uint256 count
    ) private pure returns (uint256[] memory x, uint256[] memory dtypes) {
        x = new uint256[](count);
        dtypes = new uint256[](count);
        uint256 at = out.next;
        for (uint256 j; j < count; ++j) {
            PackedMoves.Opened memory o = PackedMoves.open(m, at, PackedMoves.inputRoot(m, 0, j));
            uint256 want = _reads(m, out, o);
            // INVARIANT: each operand is the committed input tensor, opened where the output element reads it.
            if (o.element != want) revert ITraceProofs.WrongOperand(o.element, want);
            (x[j], dtypes[j], at) = (o.bits, o.dtype, o.next);
        }
    }

    /// @dev The element of input `o` that output element `out` reads: the same element for an input of the
    ///      output's shape (no broadcast walk: ~650 gas each).
    function _reads(
        bytes calldata m,
        PackedMoves.Opened memory out,
        PackedMoves.Opened memory o
    ) private pure returns (uint256) {
        uint256[] calldata outShape = PackedMoves.shapeOf(m, out);
        uint256[] calldata inShape = PackedMoves.shapeOf(m, o);
        return sameShape(outShape, inShape) ? out.element : broadcastIndex(outShape, inShape, out.element);
    }

    function _decimal(uint256 v) private pure returns (bytes memory s) {
        if (v == 0) return "0";
        while (v != 0) {
            s = abi.encodePacked(bytes1(uint8(48 + (v % 10))), s);
            v /= 10;
        }
    }
}
