// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title The custom errors of TraceProofs and ElementStep: why an opening of a repro trace is refused.
/// @notice Declared once here (as ITaskPool declares the pool libraries' errors) and raised as `ITraceProofs.X`
///         by `contracts/libraries/TraceProofs.sol`, `contracts/libraries/ElementStep.sol` and
///         `contracts/libraries/DotElementStep.sol`; each carries the
///         offending values.
interface ITraceProofs {
    /// @notice Thrown for a dtype code other than float32 1, int32 2, int64 3, bool 4.
    error UnknownDtype(uint256 dtype);
    /// @notice Thrown when an element (or a dot element) lies outside the committed shape.
    error ElementOutOfRange(uint256 element, uint256 numel);
    /// @notice Thrown when the opened chunk is not the one that holds the element.
    error WrongChunkIndex(uint256 chunkIndex, uint256 expected);
    /// @notice Thrown when chunk, path, dtype and shape do not hash to the tensor's root.
    error TensorRootMismatch(bytes32 computed, bytes32 root);
    /// @notice Thrown when a prefix-sum step k is not one of the element's `length` steps.
    error PartialOutOfRange(uint256 k, uint256 length);
    /// @notice Thrown when an op leaf is not in the trace root.
    error OpNotInTrace(uint256 index);
    /// @notice Thrown when a dot step is asked of an op that is no matmul, sum or index_sum.
    error NotADotOp(bytes32 codeHash);
    /// @notice Thrown when a dot op's inputs (count, dtype, shape) or attribute do not fit the op.
    error BadDotInputs(bytes32 codeHash);
    /// @notice Thrown when a given input header is not the op leaf's input `input`.
    error InputRootMismatch(uint256 input);
    /// @notice Thrown when an operand opening is of another element than the one the step reads.
    error WrongOperand(uint256 element, uint256 expected);
    /// @notice Thrown when partial[k] is not opened at k or not in the prefix-sum root.
    error PartialNotProven(uint256 k);
    /// @notice Thrown when an elementwise recomputation is asked of an op that is not elementwise.
    error NotElementwise(bytes32 codeHash);
    /// @notice Thrown when an input of `inDims` dims cannot broadcast to an output of `outDims` dims.
    error BadBroadcast(uint256 outDims, uint256 inDims);
    /// @notice Thrown when the attributes given do not hash to the op leaf's (or cannot be written as it writes them).
    error BadAttributes(bytes32 attrsHash);
    /// @notice Thrown when the output header given is not the op leaf's output, or not of the op's dtype.
    error OutputMismatch(uint256 index);
    /// @notice Thrown when a move check is asked of an op `MoveReferee` does not decide, or its input, output or
    ///         attributes do not fit the op.
    error BadMove(bytes32 codeHash);
    /// @notice Thrown when a claimed block exponent is not the exponent field `found` of its witness entry.
    error BlockNotReached(uint256 claimed, uint256 found);
    /// @notice Thrown when a packed move (`PackedMoves`) ends before the word at byte `at` (its length `length`).
    error Truncated(uint256 at, uint256 length);
}
