// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {ElementStep} from "../libraries/ElementStep.sol";
import {TraceProofs} from "../libraries/TraceProofs.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";
import {MoveCheck, TensorRef} from "../types/Trace.sol";

/// @title MoveReferee: one output element of a data-movement or constant op of a repro trace, checked on-chain.
/// @notice Data movement copies bits: output element e of `reshape` is input element e, of `t` (the last two dims
///         swapped), `narrow(dim, start, length)` and `cat(dim)` the input element their index maps give; a
///         `const` is its attribute rounded to float32 and `zeros` is +0 (`gensyn_py/repro/reference.py`). The
///         contract proves the op leaf, the input element the map names and the claimant's output element, and
///         compares.
/// @dev The other movement ops (`permute`, `append_ones`, `take`, `embed`, `gather`) and `index_map` are not
///      decided yet (docs/dispute-game.md).
contract MoveReferee {
    bytes32 internal constant CONST = keccak256("const");
    bytes32 internal constant ZEROS = keccak256("zeros");
    bytes32 internal constant RESHAPE = keccak256("reshape");
    bytes32 internal constant TRANSPOSE = keccak256("t");
    bytes32 internal constant NARROW = keccak256("narrow");
    bytes32 internal constant CAT = keccak256("cat");

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
        if (c.input.dtype != c.out.dtype) revert ITraceProofs.BadMove(code);
        uint256 source;
        if (code == CAT) {
            source = _catSource(c);
        } else {
            if (c.op.inputs.length != 1 || c.input.root != c.op.inputs[0].root)
                revert ITraceProofs.InputRootMismatch(0);
            source = _source(code, c.op.attrsHash, c.input, c.out, c.outEl.element, c.ints);
        }
        // INVARIANT: the input element opened is the one the op copies to the disputed output element.
        if (c.inEl.element != source) revert ITraceProofs.WrongOperand(c.inEl.element, source);
        expected = TraceProofs.elementBits(c.input, c.inEl);
        same = expected == committed; // a copy keeps every bit, a NaN's payload included
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
        uint256 n = TraceProofs.numel(input.shape);
        if (TraceProofs.numel(out.shape) > n) revert ITraceProofs.BadMove(code);
        if (code == RESHAPE) return e;
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
}
