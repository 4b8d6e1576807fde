// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {ElementStep} from "../libraries/ElementStep.sol";
import {IndexMaps} from "../libraries/IndexMaps.sol";
import {Float32} from "../libraries/Float32.sol";
import {TraceProofs} from "../libraries/TraceProofs.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";
import {MoveCheck, RowCheck, TensorRef} from "../types/Trace.sol";

/// @title MoveReferee: one output element of a data-movement or constant op of a repro trace, checked on-chain.
/// @notice Data movement copies bits: output element e of `reshape` is input element e, of `t` (the last two dims
///         swapped), `narrow(dim, start, length)`, `cat(dim)`, `permute(dims)` and `append_ones` (a 1.0 in its
///         last column) the input element their index maps give, of `gather`, `take` and `embed` the element
///         their index tensor names; a `const` is its attribute rounded to float32,
///         `zeros` is +0 and `onehot(n)` is 1.0 where the label is the column (`gensyn_py/repro/reference.py`).
///         The contract proves the op leaf, the input element the map names and the claimant's output element,
///         and compares.
///         An `index_map` element is recomputed from the op's attributes (`IndexMaps`).
///         A `rowmax` element is the row's maximum plus +0 (NaN if any entry is): `rowEntry` opens one entry of the
///         row for the step game's witness (the claimant) and refutation (the counter).
///         A `first_max` element (i, j) is true where j is the first entry of row i equal to the row's maximum, or
///         j = 0 when none is: `firstMaxEntry` opens one entry of the row and the maximum.
contract MoveReferee {
    bytes32 internal constant CONST = keccak256("const");
    bytes32 internal constant ZEROS = keccak256("zeros");
    bytes32 internal constant RESHAPE = keccak256("reshape");
    bytes32 internal constant TRANSPOSE = keccak256("t");
    bytes32 internal constant NARROW = keccak256("narrow");
    bytes32 internal constant CAT = keccak256("cat");
    bytes32 internal constant PERMUTE = keccak256("permute");
    bytes32 internal constant APPEND_ONES = keccak256("append_ones");
    bytes32 internal constant ONEHOT = keccak256("onehot");
    bytes32 internal constant GATHER = keccak256("gather");
    bytes32 internal constant TAKE = keccak256("take");
    bytes32 internal constant EMBED = keccak256("embed");
    bytes32 internal constant INDEX_MAP = keccak256("index_map");
    bytes32 internal constant ROWMAX = keccak256("rowmax");
    bytes32 internal constant FIRST_MAX = keccak256("first_max");
    /// @dev float32 1.0.
    uint256 internal constant ONE = 0x3f800000;

    /// @notice Prove `c` against `opened` (its op leaf as a one-leaf tree, or any tree holding it) and recompute
    ///         its output element: `same` when the committed bits are the rule's.
    function check(
        bytes32 opened,
        MoveCheck calldata c
    ) external pure returns (uint256 expected, uint256 committed, bool same) {
        if (!TraceProofs.verifyOp(opened, c.op)) revert ITraceProofs.OpNotInTrace(c.op.index);
        if (c.out.root != c.op.outputRoot) revert ITraceProofs.OutputMismatch(c.op.index);
        committed = TraceProofs.elementBits(c.out, c.outEl);
        bytes32 code = c.op.codeHash;
        if (code == INDEX_MAP) return _indexMap(c, committed);
        if (code == CONST || code == ZEROS) {
            if (c.out.dtype != TraceProofs.DTYPE_FLOAT32) revert ITraceProofs.BadMove(code);
            if (code == CONST) {
                // INVARIANT: the value is the op's committed attribute, written as trace.py writes it.
                bytes32 attrs = keccak256(
                    abi.encodePacked(hex"5b7b2266223a22", ElementStep.hexDouble(c.value), hex"227d5d")
                );
                if (attrs != c.op.attrsHash) revert ITraceProofs.BadAttributes(c.op.attrsHash);
                expected = ElementStep.toFloat32(c.value);
            }
            return (expected, committed, ElementStep.same(c.out.dtype, expected, committed));
        }
        uint256 source;
        if (code == CAT) {
            if (c.input.dtype != c.out.dtype) revert ITraceProofs.BadMove(code);
            source = _catSource(c);
        } else if (code == GATHER || code == TAKE || code == EMBED) {
            bool zero;
            (zero, source) = _indexed(c);
            if (zero) return (0, committed, committed == 0); // take's index -1 reads +0
        } else {
            if (!_oneInputMove(code)) revert ITraceProofs.BadMove(code);
            if (c.op.inputs.length != 1 || c.input.root != c.op.inputs[0].root)
                revert ITraceProofs.InputRootMismatch(0);
            if (code == ONEHOT) return _onehot(c, committed);
            if (c.input.dtype != c.out.dtype) revert ITraceProofs.BadMove(code);
            if (code == APPEND_ONES && _appendedOne(c)) return (ONE, committed, committed == ONE);
            source = _source(code, c.op.attrsHash, c.input, c.out, c.outEl.element, c.ints);
        }
        // INVARIANT: the input element opened is the one the op copies to the disputed output element.
        if (c.inEl.element != source) revert ITraceProofs.WrongOperand(c.inEl.element, source);
        expected = TraceProofs.elementBits(c.input, c.inEl);
        same = expected == committed; // a copy keeps every bit, a NaN's payload included
    }

    /// @dev gather(x, labels), take(x, idx) and embed(w, idx): the index element the disputed output element reads
    ///      (proven against the op's second input) names the copied element of the first. `zero`: take's index
    ///      past the end (-1), which reads +0. A negative index counts from the end, as NumPy indexes.
    function _indexed(MoveCheck calldata c) private pure returns (bool zero, uint256 source) {
        bytes32 code = c.op.codeHash;
        if (c.op.inputs.length != 2 || c.input.root != c.op.inputs[0].root) revert ITraceProofs.InputRootMismatch(0);
        if (c.index.root != c.op.inputs[1].root) revert ITraceProofs.InputRootMismatch(1);
        if (keccak256("[]") != c.op.attrsHash) revert ITraceProofs.BadAttributes(c.op.attrsHash);
        if (c.index.dtype != TraceProofs.DTYPE_INT64 || c.input.dtype != c.out.dtype) revert ITraceProofs.BadMove(code);
        uint256[] calldata x = c.input.shape;
        uint256 e = c.outEl.element;
        uint256 nIdx = TraceProofs.numel(c.index.shape);
        uint256 width =
            code == TAKE
                ? 1
                : x.length == 2
                    ? x[1]
                    : 0; // elements per looked-up row
        uint256 rows =
            code == TAKE
                ? TraceProofs.numel(x) + 1
                : code == GATHER
                    ? width
                    : x.length == 2
                        ? x[0]
                        : 0;
        if (width == 0 || TraceProofs.numel(c.out.shape) != nIdx * (code == EMBED ? width : 1))
            revert ITraceProofs.BadMove(code);
        if (code == GATHER && (x[0] != nIdx || c.out.shape.length != 2 || c.out.shape[1] != 1))
            revert ITraceProofs.BadMove(code);
        uint256 at = code == EMBED ? e / width : e;
        // INVARIANT: the index element opened is the one the disputed output element reads.
        if (c.indexEl.element != at) revert ITraceProofs.WrongOperand(c.indexEl.element, at);
        int256 v = int64(uint64(TraceProofs.elementBits(c.index, c.indexEl)));
        if (v < 0) v += int256(rows);
        if (v < 0 || uint256(v) >= rows) revert ITraceProofs.BadMove(code);
        uint256 i = uint256(v);
        if (code == TAKE) return (i == rows - 1, i);
        return (false, code == GATHER ? e * width + i : i * width + (e % width));
    }

    /// @dev index_map(kind, params): its element recomputed from the op's attributes (`IndexMaps`); `c.value` is the
    ///      kind's number, `c.ints` the parameters. The output header must be the map's: int64 (bool for causal) of
    ///      the map's shape, so that the element index means what the map means.
    function _indexMap(MoveCheck calldata c, uint256 committed) private pure returns (uint256 expected, uint256, bool) {
        // INVARIANT: the kind and the parameters are the op's committed attributes.
        if (keccak256(IndexMaps.attrsJson(c.value, c.ints)) != c.op.attrsHash)
            revert ITraceProofs.BadAttributes(c.op.attrsHash);
        uint256 dtype = c.value == IndexMaps.CAUSAL ? TraceProofs.DTYPE_BOOL : TraceProofs.DTYPE_INT64;
        if (
            c.out.dtype != dtype ||
            keccak256(abi.encode(IndexMaps.shape(c.value, c.ints))) != keccak256(abi.encode(c.out.shape))
        ) revert ITraceProofs.BadMove(INDEX_MAP);
        expected = uint64(int64(IndexMaps.element(c.value, c.ints, c.outEl.element))); // as the int64 chunk holds it
        return (expected, committed, expected == committed);
    }

    /// @dev The one-input movement ops decided here.
    function _oneInputMove(bytes32 code) private pure returns (bool) {
        return
            code == RESHAPE ||
            code == TRANSPOSE ||
            code == NARROW ||
            code == PERMUTE ||
            code == APPEND_ONES ||
            code == ONEHOT;
    }

    /// @notice Prove entry `c.inEl` of row `c.outEl.element` of a `rowmax` op (proven against `opened`) and the
    ///         row's committed maximum m: `witnesses` when entry + 0 is m (any NaN for any NaN), `exceeds` when the
    ///         entry shows m wrong (m is not NaN, and the entry is NaN or above it; +0 > -0, repro's order).
    function rowEntry(
        bytes32 opened,
        RowCheck calldata c
    ) external pure returns (uint256 m, uint256 entry, bool witnesses, bool exceeds) {
        _rowOp(opened, c, ROWMAX);
        if (c.op.inputs.length != 1 || c.input.root != c.op.inputs[0].root) revert ITraceProofs.InputRootMismatch(0);
        uint256 r = c.input.shape.length;
        if (r == 0 || c.input.dtype != TraceProofs.DTYPE_FLOAT32 || c.out.dtype != TraceProofs.DTYPE_FLOAT32)
            revert ITraceProofs.BadMove(ROWMAX);
        uint256 k = c.input.shape[r - 1];
        // INVARIANT: the entry is in the disputed row (the output holds one element per row).
        if (k == 0 || c.inEl.element / k != c.outEl.element) revert ITraceProofs.WrongOperand(c.inEl.element, k);
        m = TraceProofs.elementBits(c.out, c.outEl);
        entry = TraceProofs.elementBits(c.input, c.inEl);
        uint32 mm = uint32(m);
        uint32 x = uint32(entry);
        witnesses = Float32.isNaN(mm) ? Float32.isNaN(x) : Float32.add(x, 0) == mm;
        // A claimed -0 has no witness (x + 0 is never -0), so it never reaches the counter's refutation.
        exceeds = !Float32.isNaN(mm) && (Float32.isNaN(x) || Float32.gt(x, mm));
    }

    /// @notice Prove entry `c.inEl` of row i of a `first_max` op's input w (proven against `opened`), the row's
    ///         maximum m[i] (`c.maxEl`, the op's second input) and output element (i, j) (`c.outEl`): the output's
    ///         bits (a bool: 0 or 1 when well formed), j, the entry's place k in the row, and whether w[i, k] == m[i]
    ///         (IEEE: -0 == +0, a NaN equals nothing, as NumPy compares).
    function firstMaxEntry(
        bytes32 opened,
        RowCheck calldata c
    ) external pure returns (uint256 bits, uint256 j, uint256 k, bool equal) {
        _rowOp(opened, c, FIRST_MAX);
        if (c.op.inputs.length != 2 || c.input.root != c.op.inputs[0].root) revert ITraceProofs.InputRootMismatch(0);
        if (c.max.root != c.op.inputs[1].root) revert ITraceProofs.InputRootMismatch(1);
        uint256[] calldata w = c.input.shape;
        if (w.length != 2 || c.input.dtype != TraceProofs.DTYPE_FLOAT32 || c.max.dtype != TraceProofs.DTYPE_FLOAT32)
            revert ITraceProofs.BadMove(FIRST_MAX);
        if (c.out.dtype != TraceProofs.DTYPE_BOOL || TraceProofs.numel(c.max.shape) != w[0] || w[1] == 0)
            revert ITraceProofs.BadMove(FIRST_MAX);
        if (c.out.shape.length != 2 || c.out.shape[0] != w[0] || c.out.shape[1] != w[1])
            revert ITraceProofs.BadMove(FIRST_MAX);
        uint256 row = c.outEl.element / w[1];
        // INVARIANT: the entry and the maximum are those of the output element's row.
        if (c.inEl.element / w[1] != row) revert ITraceProofs.WrongOperand(c.inEl.element, row);
        if (c.maxEl.element != row) revert ITraceProofs.WrongOperand(c.maxEl.element, row);
        bits = TraceProofs.elementBits(c.out, c.outEl);
        uint32 x = uint32(TraceProofs.elementBits(c.input, c.inEl));
        equal = Float32.eq(x, uint32(TraceProofs.elementBits(c.max, c.maxEl)));
        return (bits, c.outEl.element % w[1], c.inEl.element % w[1], equal);
    }

    /// @dev `c.op` is the opened leaf, of op `code`, and `c.out` its output.
    function _rowOp(bytes32 opened, RowCheck calldata c, bytes32 code) private pure {
        if (!TraceProofs.verifyOp(opened, c.op)) revert ITraceProofs.OpNotInTrace(c.op.index);
        if (c.op.codeHash != code) revert ITraceProofs.BadMove(c.op.codeHash);
        if (c.out.root != c.op.outputRoot) revert ITraceProofs.OutputMismatch(c.op.index);
    }

    /// @dev The flat index of the input element output element `e` copies.
    function _source(
        bytes32 code,
        bytes32 attrsHash,
        TensorRef calldata input,
        TensorRef calldata out,
        uint256 e,
        uint256[] calldata ints
    ) private pure returns (uint256) {
        if (code == APPEND_ONES) return (e / (input.shape[1] + 1)) * input.shape[1] + (e % (input.shape[1] + 1));
        uint256 n = TraceProofs.numel(input.shape);
        if (TraceProofs.numel(out.shape) > n) revert ITraceProofs.BadMove(code);
        if (code == RESHAPE) return e;
        if (code == PERMUTE) return _permuted(attrsHash, input.shape, out.shape, e, ints);
        uint256 r = input.shape.length;
        if (code == TRANSPOSE) {
            if (r < 2) revert ITraceProofs.BadMove(code);
            uint256 rows = input.shape[r - 2];
            uint256 cols = input.shape[r - 1];
            uint256 inner = e % (rows * cols); // output (..., cols, rows): e = (b, i, j) with i < cols, j < rows
            return e - inner + (inner % rows) * cols + inner / rows;
        }
        if (code == NARROW) return _narrowed(attrsHash, input.shape, e, ints);
        revert ITraceProofs.BadMove(code);
    }

    /// @dev narrow(dim, start, length): output element e copies the input element `start` further along `dim`.
    function _narrowed(
        bytes32 attrsHash,
        uint256[] calldata shape,
        uint256 e,
        uint256[] calldata ints
    ) private pure returns (uint256) {
        if (ints.length != 3) revert ITraceProofs.BadMove(NARROW);
        bytes memory json = abi.encodePacked(
            "[",
            Strings.toString(ints[0]),
            ",",
            Strings.toString(ints[1]),
            ",",
            Strings.toString(ints[2]),
            "]"
        );
        // INVARIANT: (dim, start, length) are the op's committed attributes.
        if (keccak256(json) != attrsHash) revert ITraceProofs.BadAttributes(attrsHash);
        uint256 dim = ints[0];
        if (dim >= shape.length || ints[1] + ints[2] > shape[dim]) revert ITraceProofs.BadMove(NARROW);
        uint256 inner = 1;
        for (uint256 d = dim + 1; d < shape.length; ++d) inner *= shape[d];
        uint256 outer = e / (ints[2] * inner);
        return (outer * shape[dim] + ints[1] + ((e / inner) % ints[2])) * inner + (e % inner);
    }

    /// @dev cat(dim): output element e copies an element of input k, the input whose run along `dim` holds e's
    ///      position there. `c.input` is input k; `c.ints` = [dim, then for each input j < k its length along `dim`
    ///      and its data root], each such input proven against its root in the op leaf by the header it shares
    ///      with input k but for that length, so the offset of input k's run is the committed one.
    function _catSource(MoveCheck calldata c) private pure returns (uint256) {
        uint256[] calldata ints = c.ints;
        if (ints.length % 2 == 0) revert ITraceProofs.BadMove(CAT);
        // INVARIANT: `dim` is the op's committed attribute.
        if (keccak256(abi.encodePacked("[", Strings.toString(ints[0]), "]")) != c.op.attrsHash)
            revert ITraceProofs.BadAttributes(c.op.attrsHash);
        uint256 k = ints.length / 2;
        if (k >= c.op.inputs.length || c.input.root != c.op.inputs[k].root) revert ITraceProofs.InputRootMismatch(k);
        uint256 dim = ints[0];
        uint256[] memory dims = c.input.shape;
        uint256[] calldata outShape = c.out.shape;
        if (dim >= dims.length || outShape.length != dims.length) revert ITraceProofs.BadMove(CAT);
        uint256 length = dims[dim];
        uint256 offset;
        for (uint256 j; j < k; ++j) {
            dims[dim] = ints[1 + 2 * j];
            bytes32 root = keccak256(abi.encodePacked(c.input.dtype, dims.length, dims, bytes32(ints[2 + 2 * j])));
            if (root != c.op.inputs[j].root) revert ITraceProofs.InputRootMismatch(j);
            offset += dims[dim];
        }
        uint256 inner = 1;
        for (uint256 d; d < dims.length; ++d) {
            if (d != dim && outShape[d] != c.input.shape[d]) revert ITraceProofs.BadMove(CAT);
            if (d > dim) inner *= outShape[d];
        }
        uint256 e = c.outEl.element;
        uint256 pos = (e / inner) % outShape[dim];
        // INVARIANT: input k is the one the output element's position along `dim` falls in.
        if (pos < offset || pos >= offset + length) revert ITraceProofs.BadMove(CAT);
        return ((e / (inner * outShape[dim])) * length + pos - offset) * inner + (e % inner);
    }

    /// @dev append_ones: (n, d) -> (n, d + 1), the last column 1.0. Whether the disputed output element is in that
    ///      column (after checking the shapes and the op's empty attributes); `_source` maps the others.
    function _appendedOne(MoveCheck calldata c) private pure returns (bool) {
        uint256[] calldata x = c.input.shape;
        uint256[] calldata y = c.out.shape;
        if (keccak256("[]") != c.op.attrsHash) revert ITraceProofs.BadAttributes(c.op.attrsHash);
        if (x.length != 2 || y.length != 2 || y[0] != x[0] || y[1] != x[1] + 1)
            revert ITraceProofs.BadMove(APPEND_ONES);
        return c.outEl.element % y[1] == x[1];
    }

    /// @dev permute(dims): output index (o_0, .., o_r-1) copies the input element whose index has o_k at dims[k].
    ///      `ints` = dims, bound to the op's attributes; every dim once, and the output shape the permuted input's.
    function _permuted(
        bytes32 attrsHash,
        uint256[] calldata shape,
        uint256[] calldata outShape,
        uint256 e,
        uint256[] calldata ints
    ) private pure returns (uint256 source) {
        uint256 r = shape.length;
        if (ints.length != r || outShape.length != r) revert ITraceProofs.BadMove(PERMUTE);
        bytes memory json = "[[";
        uint256 seen;
        for (uint256 k; k < r; ++k) {
            json = abi.encodePacked(json, k == 0 ? "" : ",", Strings.toString(ints[k]));
            if (ints[k] >= r || seen & (1 << ints[k]) != 0 || outShape[k] != shape[ints[k]])
                revert ITraceProofs.BadMove(PERMUTE);
            seen |= 1 << ints[k];
        }
        // INVARIANT: the dims are the op's committed attributes.
        if (keccak256(abi.encodePacked(json, "]]")) != attrsHash) revert ITraceProofs.BadAttributes(attrsHash);
        uint256[] memory index = new uint256[](r);
        for (uint256 k = r; k > 0; --k) {
            index[ints[k - 1]] = e % outShape[k - 1];
            e /= outShape[k - 1];
        }
        for (uint256 d; d < r; ++d) source = source * shape[d] + index[d];
    }

    /// @dev onehot(n): output (i, c) is 1.0 when label i is c, else +0 (a negative label counts from the end, as
    ///      NumPy indexes). The opened input element must be label i.
    function _onehot(MoveCheck calldata c, uint256 committed) private pure returns (uint256 expected, uint256, bool) {
        uint256[] calldata y = c.out.shape;
        if (y.length != 2 || TraceProofs.numel(c.input.shape) != y[0] || c.out.dtype != TraceProofs.DTYPE_FLOAT32)
            revert ITraceProofs.BadMove(ONEHOT);
        if (c.input.dtype != TraceProofs.DTYPE_INT64) revert ITraceProofs.BadMove(ONEHOT);
        // INVARIANT: the class count is the op's committed attribute.
        if (keccak256(abi.encodePacked("[", Strings.toString(y[1]), "]")) != c.op.attrsHash)
            revert ITraceProofs.BadAttributes(c.op.attrsHash);
        uint256 row = c.outEl.element / y[1];
        if (c.inEl.element != row) revert ITraceProofs.WrongOperand(c.inEl.element, row);
        int256 label = int64(uint64(TraceProofs.elementBits(c.input, c.inEl)));
        if (label < 0) label += int256(y[1]);
        expected = label == int256(c.outEl.element % y[1]) ? ONE : 0;
        return (expected, committed, expected == committed);
    }
}
