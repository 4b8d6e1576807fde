// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TraceProofs} from "../libraries/TraceProofs.sol";
import {DotStep, DotStepValues, ElementOpening, OpOpening, PartialOpening, TensorRef} from "../types/Trace.sol";

/// @title TraceProofsHarness
/// @notice Test-only: exposes TraceProofs so openings built by gensyn_py/proof/onchain_trace.py from a real trace
///         can be checked on-chain (tests/contracts/test_trace_proofs.py, bench/trace_proof_gas.py).
contract TraceProofsHarness {
    /// @notice keccak256(uint256 dtype ++ uint256 ndim ++ uint256 dims... ++ dataRoot).
    function tensorRoot(uint256 dtype, uint256[] calldata shape, bytes32 dataRoot) external pure returns (bytes32) {
        return TraceProofs.tensorRoot(dtype, shape, dataRoot);
    }

    /// @notice The raw bits of one element, proven against the tensor's root (reverts on any mismatch).
    function elementBits(TensorRef calldata t, ElementOpening calldata o) external pure returns (uint256) {
        return TraceProofs.elementBits(t, o);
    }

    /// @notice An op's leaf, as Trace.op_leaf builds it.
    function opLeaf(OpOpening calldata o) external pure returns (bytes32) {
        return TraceProofs.opLeaf(o);
    }

    /// @notice Whether an op leaf is in a trace root.
    function verifyOp(bytes32 traceRoot, OpOpening calldata o) external pure returns (bool) {
        return TraceProofs.verifyOp(traceRoot, o);
    }

    /// @notice Leaf k of a prefix-sum tree.
    function partialLeaf(uint256 k, int256 value) external pure returns (bytes32) {
        return TraceProofs.partialLeaf(k, value);
    }

    /// @notice Whether one prefix sum is in a prefix-sum root of `length` leaves.
    function verifyPartial(bytes32 prefixRoot, uint256 length, PartialOpening calldata p) external pure returns (bool) {
        return TraceProofs.verifyPartial(prefixRoot, length, p);
    }

    /// @notice Flat operand indices of a matmul output element's step k, and K.
    function matmulOperands(
        uint256[] calldata aShape,
        uint256[] calldata bShape,
        uint256 element,
        uint256 k
    ) external pure returns (uint256, uint256, uint256) {
        return TraceProofs.matmulOperands(aShape, bShape, element, k);
    }

    /// @notice Flat operand index of a sum output element's step k, and K.
    function sumOperand(
        uint256[] calldata xShape,
        uint256 dim,
        uint256 element,
        uint256 k
    ) external pure returns (uint256, uint256) {
        return TraceProofs.sumOperand(xShape, dim, element, k);
    }

    /// @notice Flat operand indices of an index_sum output element's step k, and K.
    function indexSumOperands(
        uint256[] calldata idxShape,
        uint256[] calldata gShape,
        uint256 rows,
        uint256 element,
        uint256 k
    ) external pure returns (uint256, uint256, uint256) {
        return TraceProofs.indexSumOperands(idxShape, gShape, rows, element, k);
    }

    /// @notice One dot step proven end to end: op in the trace, operands of exactly that step, prefix sums.
    function openDotStep(
        bytes32 traceRoot,
        OpOpening calldata op,
        TensorRef[] calldata ins,
        uint256 rows,
        uint256 element,
        DotStep calldata s
    ) external pure returns (DotStepValues memory) {
        return TraceProofs.openDotStep(traceRoot, op, ins, rows, element, s);
    }
}
