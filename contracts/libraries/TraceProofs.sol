// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";
import {
    DotStep,
    DotStepValues,
    ElementOpening,
    OpInput,
    OpOpening,
    PartialOpening,
    TensorRef
} from "../types/Trace.sol";

/// @title TraceProofs: checks that the operands a dispute recomputes from are the ones the parties committed to.
/// @notice The on-chain side of the commitments of docs/repro.md section 6 (`gensyn_py/proof/tensor_commit.py`,
///         `gensyn_py/proof/trace.py`, `gensyn_py/proof/prefix_sums.py`): tensor roots and one element of a
///         tensor, op leaves and their membership in a trace root, the prefix-sum commitment of a dot element,
///         and which input elements a matmul / sum / index_sum output element is computed from. Every Merkle
///         tree is OpenZeppelin's (commutative keccak, odd node promoted); `gensyn_py/proof/onchain_trace.py`
///         builds the calldata.
/// @dev Internal functions only: a dispute game that uses them inlines them. Commutative trees do not bind a
///      leaf's position, so every leaf carries its own index (chunk c, op i, prefix k) and the checks below pin
///      that index; and since a chunk leaf and a prefix leaf hash 64 bytes, like an inner node, the index
///      range checks are also what stops an inner node being passed off as a leaf (its "index" would be a
///      hash: far out of range).
library TraceProofs {
    uint256 internal constant DTYPE_FLOAT32 = 1;
    uint256 internal constant DTYPE_INT32 = 2;
    uint256 internal constant DTYPE_INT64 = 3;
    uint256 internal constant DTYPE_BOOL = 4;
    /// @dev Bytes per Merkle leaf of a tensor: one EVM word.
    uint256 internal constant CHUNK_BYTES = 32;
    /// @dev float32 1.0: the "B" operand of a sum (a sum is a matmul against ones), and index_sum's member.
    uint256 internal constant FLOAT32_ONE = 0x3f800000;
    bytes32 internal constant MATMUL = keccak256("matmul");
    bytes32 internal constant SUM = keccak256("sum");
    bytes32 internal constant INDEX_SUM = keccak256("index_sum");
    /// @dev Attribute hashes of `sum` (its one attribute is the summed dim; canonical JSON as in trace.py).
    bytes32 internal constant SUM_DIM0 = keccak256("[0]");
    bytes32 internal constant SUM_DIM1 = keccak256("[1]");

    // ---- tensors ----

    /// @notice Bytes per element of a dtype code (float32 1, int32 2, int64 3, bool 4).
    function itemSize(uint256 dtype) internal pure returns (uint256) {
        if (dtype == DTYPE_FLOAT32 || dtype == DTYPE_INT32) return 4;
        if (dtype == DTYPE_INT64) return 8;
        if (dtype == DTYPE_BOOL) return 1;
        revert ITraceProofs.UnknownDtype(dtype);
    }

    /// @notice Number of elements of a shape (1 for a scalar).
    function numel(uint256[] calldata shape) internal pure returns (uint256 n) {
        n = 1;
        for (uint256 i; i < shape.length; ++i) n *= shape[i];
    }

    /// @notice keccak256(uint256 dtype ++ uint256 ndim ++ uint256 dims... ++ dataRoot), as `tensor_root`.
    /// @dev Hashed from memory past the free pointer, which it does not move: no array is allocated and copied (a
    ///      deciding move opens up to four tensors).
    function tensorRoot(uint256 dtype, uint256[] calldata shape, bytes32 dataRoot) internal pure returns (bytes32 h) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            let dims := mul(shape.length, 0x20)
            mstore(ptr, dtype)
            mstore(add(ptr, 0x20), shape.length)
            calldatacopy(add(ptr, 0x40), shape.offset, dims)
            mstore(add(add(ptr, 0x40), dims), dataRoot)
            h := keccak256(ptr, add(dims, 0x60))
        }
    }

    /// @notice Leaf c of a tensor's data tree: keccak256(uint256 c ++ 32-byte chunk c).
    function chunkLeaf(uint256 chunkIndex, bytes32 chunk) internal pure returns (bytes32 h) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            mstore(0x00, chunkIndex) // the scratch space: 64 bytes, no allocation
            mstore(0x20, chunk)
            h := keccak256(0x00, 0x40)
        }
    }

    /// @notice The raw bits of element `o.element` of tensor `t`, proven against `t.root`: float32 and int32 as
    ///         a uint32, int64 as a uint64, bool as its one byte (little-endian in the chunk).
    /// @dev Reverts with a named error on any mismatch, so a caller never holds unproven bits.
    function elementBits(TensorRef calldata t, ElementOpening calldata o) internal pure returns (uint256 bits) {
        uint256 item = itemSize(t.dtype);
        uint256 n = numel(t.shape);
        uint256 element = o.element;
        // INVARIANT: only an element inside the committed shape opens (the padding after it is no element).
        if (element >= n) revert ITraceProofs.ElementOutOfRange(element, n);
        uint256 offset = element * item;
        uint256 chunkIndex = o.chunkIndex;
        bytes32 chunk = o.chunk;
        // INVARIANT: the chunk is the one holding the element; its leaf carries that index (position binding).
        if (chunkIndex != offset / CHUNK_BYTES) revert ITraceProofs.WrongChunkIndex(chunkIndex, offset / CHUNK_BYTES);
        bytes32 dataRoot = MerkleProof.processProofCalldata(o.proof, chunkLeaf(chunkIndex, chunk));
        bytes32 computed = tensorRoot(t.dtype, t.shape, dataRoot);
        // INVARIANT: the chunk, the dtype and the shape are the committed ones.
        if (computed != t.root) revert ITraceProofs.TensorRootMismatch(computed, t.root);
        return bitsIn(chunk, offset, item);
    }

    /// @notice The raw bits of the `item`-byte element at byte `offset` of the tensor, from its chunk (the one
    ///         holding that byte): little-endian in the chunk, as the tensor's bytes are.
    function bitsIn(bytes32 chunk, uint256 offset, uint256 item) internal pure returns (uint256 bits) {
        // solhint-disable-next-line no-inline-assembly
        assembly {
            // The element's `item` (1, 4 or 8) bytes, big-endian in the chunk from byte offset % 32 on, brought to
            // the low end of a word, then their order reversed (little-endian) by swapping bytes, pairs, quads.
            let w := shr(shl(3, sub(32, add(mod(offset, 32), item))), chunk)
            w := and(w, sub(shl(shl(3, item), 1), 1))
            if gt(item, 1) {
                w := or(shr(8, and(w, 0xff00ff00ff00ff00)), shl(8, and(w, 0x00ff00ff00ff00ff)))
                w := or(shr(16, and(w, 0xffff0000ffff0000)), shl(16, and(w, 0x0000ffff0000ffff)))
                w := or(shr(32, and(w, 0xffffffff00000000)), shl(32, and(w, 0x00000000ffffffff)))
                w := shr(shl(3, sub(8, item)), w) // a 4-byte item was reversed as 8 bytes: drop the 4 zero bytes
            }
            bits := w
        }
    }

    // ---- ops ----

    /// @notice keccak256(uint256 i ++ codeHash ++ attrsHash ++ (uint256 id ++ root) per input ++ output root),
    ///         as `Trace.op_leaf`.
    /// @dev Hashed from memory past the free pointer, which it does not move; the (id, root) pairs are one static
    ///      calldata array, copied as they lie.
    function opLeaf(OpOpening calldata o) internal pure returns (bytes32 h) {
        OpInput[] calldata inputs = o.inputs;
        uint256 index = o.index;
        bytes32 code = o.codeHash;
        bytes32 attrs = o.attrsHash;
        bytes32 output = o.outputRoot;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            let pairs := mul(inputs.length, 0x40)
            mstore(ptr, index)
            mstore(add(ptr, 0x20), code)
            mstore(add(ptr, 0x40), attrs)
            calldatacopy(add(ptr, 0x60), inputs.offset, pairs)
            mstore(add(add(ptr, 0x60), pairs), output)
            h := keccak256(ptr, add(pairs, 0x80))
        }
    }

    /// @notice Whether op leaf `o` is leaf `o.index` of `traceRoot` (the index is inside the leaf).
    function verifyOp(bytes32 traceRoot, OpOpening calldata o) internal pure returns (bool) {
        return MerkleProof.verifyCalldata(o.proof, traceRoot, opLeaf(o));
    }

    // ---- the prefix sums of a dot element ----

    /// @notice Leaf k of a dot element's prefix-sum tree: keccak256(uint256 k ++ int256 partial[k]).
    function partialLeaf(uint256 k, int256 value) internal pure returns (bytes32 h) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            mstore(0x00, k) // the scratch space, as `chunkLeaf`
            mstore(0x20, value)
            h := keccak256(0x00, 0x40)
        }
    }

    /// @notice Whether partial[p.k] = p.value in the prefix-sum root of a length-`length` dot element.
    function verifyPartial(bytes32 prefixRoot, uint256 length, PartialOpening calldata p) internal pure returns (bool) {
        // INVARIANT: k indexes a real step of the sum (an inner node never passes as a leaf).
        if (p.k >= length) revert ITraceProofs.PartialOutOfRange(p.k, length);
        return MerkleProof.verifyCalldata(p.proof, prefixRoot, partialLeaf(p.k, p.value));
    }

    // ---- which input elements a dot element reads ----

    /// @notice Flat indices of a_k = A[(n,) i, k] and b_k = B[(n,) k, j] for output element `element` of
    ///         A (I x K, or N x I x K) times B (K x J, or N x K x J); and K.
    function matmulOperands(
        uint256[] calldata aShape,
        uint256[] calldata bShape,
        uint256 element,
        uint256 k
    ) internal pure returns (uint256 aIndex, uint256 bIndex, uint256 length) {
        uint256 r = aShape.length;
        if ((r != 2 && r != 3) || bShape.length != r) revert ITraceProofs.BadDotInputs(MATMUL);
        uint256 rows = aShape[r - 2];
        length = aShape[r - 1];
        uint256 cols = bShape[r - 1];
        if (bShape[r - 2] != length || (r == 3 && bShape[0] != aShape[0])) revert ITraceProofs.BadDotInputs(MATMUL);
        uint256 batches = r == 3 ? aShape[0] : 1;
        if (element >= batches * rows * cols) revert ITraceProofs.ElementOutOfRange(element, batches * rows * cols);
        if (k >= length) revert ITraceProofs.PartialOutOfRange(k, length);
        uint256 n = element / (rows * cols);
        uint256 i = (element / cols) % rows;
        aIndex = (n * rows + i) * length + k;
        bIndex = (n * length + k) * cols + (element % cols);
    }

    /// @notice Flat index of x_k for output element `element` of sum(x, dim) over a 2-D x (R x C: the output is
    ///         R x 1 for dim 1, 1 x C for dim 0); and K.
    function sumOperand(
        uint256[] calldata xShape,
        uint256 dim,
        uint256 element,
        uint256 k
    ) internal pure returns (uint256 xIndex, uint256 length) {
        if (xShape.length != 2 || dim > 1) revert ITraceProofs.BadDotInputs(SUM);
        uint256 cols = xShape[1];
        length = xShape[dim];
        uint256 outputs = dim == 1 ? xShape[0] : cols;
        if (element >= outputs) revert ITraceProofs.ElementOutOfRange(element, outputs);
        if (k >= length) revert ITraceProofs.PartialOutOfRange(k, length);
        xIndex = dim == 1 ? element * cols + k : k * cols + element;
    }

    /// @notice Flat indices of idx[k] (a_k = 1 when idx[k] = v, else 0) and g[k, j] for output element (v, j) of
    ///         index_sum(idx, g) with `rows` rows (g: L x J, idx: L elements); and K = L.
    function indexSumOperands(
        uint256[] calldata idxShape,
        uint256[] calldata gShape,
        uint256 rows,
        uint256 element,
        uint256 k
    ) internal pure returns (uint256 idxIndex, uint256 gIndex, uint256 length) {
        if (gShape.length != 2 || numel(idxShape) != gShape[0]) revert ITraceProofs.BadDotInputs(INDEX_SUM);
        length = gShape[0];
        uint256 cols = gShape[1];
        if (element >= rows * cols) revert ITraceProofs.ElementOutOfRange(element, rows * cols);
        if (k >= length) revert ITraceProofs.PartialOutOfRange(k, length);
        idxIndex = k;
        gIndex = k * cols + (element % cols);
    }

    /// @notice Step k of output element `element` of dot op `op` (matmul, sum or index_sum), checked end to end:
    ///         the op is in `traceRoot`, `ins` are its inputs' committed headers, the operand openings are of
    ///         exactly the elements that step reads, and the two prefix sums are in `s.prefixRoot`.
    /// @param rows index_sum's one attribute (its number of output rows; bound by `op.attrsHash`), else unused.
    /// @return v float32 bits of a_k and b_k, partial[k-1] (0 when k = 0), partial[k] and K.
    function openDotStep(
        bytes32 traceRoot,
        OpOpening calldata op,
        TensorRef[] calldata ins,
        uint256 rows,
        uint256 element,
        DotStep calldata s
    ) internal pure returns (DotStepValues memory v) {
        _opAndInputs(traceRoot, op, ins);
        (uint256 aIndex, uint256 bIndex) = _operands(op, ins, rows, element, s.k, v);
        // INVARIANT: the contract opens exactly the elements step k reads, never ones a party picked.
        if (s.a.element != aIndex) revert ITraceProofs.WrongOperand(s.a.element, aIndex);
        v.aBits = elementBits(ins[0], s.a);
        if (op.codeHash == INDEX_SUM) v.aBits = v.aBits == element / ins[1].shape[1] ? FLOAT32_ONE : 0;
        if (op.codeHash == SUM) {
            v.bBits = FLOAT32_ONE;
        } else {
            if (s.b.element != bIndex) revert ITraceProofs.WrongOperand(s.b.element, bIndex);
            v.bBits = elementBits(ins[1], s.b);
        }
        _partials(s, v);
    }

    /// @notice K, the length of output element `element` of dot op `op` (matmul, sum or index_sum), checked as
    ///         `openDotStep` checks it: the op is in `traceRoot`, `ins` are its inputs' headers, `rows` its attribute.
    function dotLength(
        bytes32 traceRoot,
        OpOpening calldata op,
        TensorRef[] calldata ins,
        uint256 rows,
        uint256 element
    ) internal pure returns (uint256) {
        _opAndInputs(traceRoot, op, ins);
        DotStepValues memory v;
        _operands(op, ins, rows, element, 0, v);
        return v.length;
    }

    /// @dev Op `op` is in `traceRoot` and `ins` are its committed inputs' headers.
    function _opAndInputs(bytes32 traceRoot, OpOpening calldata op, TensorRef[] calldata ins) private pure {
        if (!verifyOp(traceRoot, op)) revert ITraceProofs.OpNotInTrace(op.index);
        if (ins.length != op.inputs.length) revert ITraceProofs.BadDotInputs(op.codeHash);
        for (uint256 j; j < ins.length; ++j) {
            // INVARIANT: the headers the indices come from are those of the op's committed inputs.
            if (ins[j].root != op.inputs[j].root) revert ITraceProofs.InputRootMismatch(j);
        }
    }

    /// @dev The operand indices of step k by op code (the op's inputs and attribute checked), and K into `v`;
    ///      B's input is input 1 (a sum has no B).
    function _operands(
        OpOpening calldata op,
        TensorRef[] calldata ins,
        uint256 rows,
        uint256 element,
        uint256 k,
        DotStepValues memory v
    ) private pure returns (uint256 aIndex, uint256 bIndex) {
        uint256[] calldata bShape = _checkedInputs(op.codeHash, ins) == 2 ? ins[1].shape : ins[0].shape;
        (aIndex, bIndex, v.length) = dotOperands(op.codeHash, op.attrsHash, rows, ins[0].shape, bShape, element, k);
    }

    /// @dev `ins` are as many as dot op `code` has, of its dtypes; returns how many.
    function _checkedInputs(bytes32 code, TensorRef[] calldata ins) private pure returns (uint256 count) {
        uint256 dtypeA;
        uint256 dtypeB;
        (count, dtypeA, dtypeB) = dotInputs(code);
        if (ins.length != count || ins[0].dtype != dtypeA || (count == 2 && ins[1].dtype != dtypeB)) {
            revert ITraceProofs.BadDotInputs(code);
        }
    }

    /// @notice A dot op's inputs: how many, and the dtype of A and of B (matmul: two float32; sum: one float32;
    ///         index_sum: int64 indices and float32 rows). Reverts `NotADotOp` for any other op.
    function dotInputs(bytes32 code) internal pure returns (uint256 count, uint256 dtypeA, uint256 dtypeB) {
        if (code == MATMUL) return (2, DTYPE_FLOAT32, DTYPE_FLOAT32);
        if (code == SUM) return (1, DTYPE_FLOAT32, 0);
        if (code == INDEX_SUM) return (2, DTYPE_INT64, DTYPE_FLOAT32);
        revert ITraceProofs.NotADotOp(code);
    }

    /// @notice The flat indices of a_k and b_k (b_k unused for a sum, whose B is ones) of output element `element`
    ///         of dot op `code` with attribute hash `attrs` over inputs of shapes `aShape`, `bShape`; and K.
    /// @param rows index_sum's one attribute (its number of output rows), checked against `attrs`; else unused.
    function dotOperands(
        bytes32 code,
        bytes32 attrs,
        uint256 rows,
        uint256[] calldata aShape,
        uint256[] calldata bShape,
        uint256 element,
        uint256 k
    ) internal pure returns (uint256 aIndex, uint256 bIndex, uint256 length) {
        if (code == MATMUL) return matmulOperands(aShape, bShape, element, k);
        if (code == SUM) {
            if (attrs != SUM_DIM0 && attrs != SUM_DIM1) revert ITraceProofs.BadDotInputs(code);
            (aIndex, length) = sumOperand(aShape, attrs == SUM_DIM1 ? 1 : 0, element, k);
            return (aIndex, 0, length);
        }
        // INVARIANT: `rows` is the op's committed attribute, not a number a party chose.
        if (code != INDEX_SUM || attrs != keccak256(abi.encodePacked("[", Strings.toString(rows), "]"))) {
            revert ITraceProofs.BadDotInputs(code);
        }
        return indexSumOperands(aShape, bShape, rows, element, k);
    }

    /// @dev partial[k] (and partial[k-1] for k > 0) opened at their own steps in the prefix-sum root.
    function _partials(DotStep calldata s, DotStepValues memory v) private pure {
        if (s.cur.k != s.k || !verifyPartial(s.prefixRoot, v.length, s.cur)) revert ITraceProofs.PartialNotProven(s.k);
        v.cur = s.cur.value;
        if (s.k == 0) return; // partial[-1] = 0: the empty sum
        if (s.prev.k != s.k - 1 || !verifyPartial(s.prefixRoot, v.length, s.prev))
            revert ITraceProofs.PartialNotProven(s.k - 1);
        v.prev = s.prev.value;
    }
}
