// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// The calldata of TraceProofs (contracts/libraries/TraceProofs.sol); gensyn_py/proof/onchain_trace.py builds each
// one (its `as_arg()`).

/// @notice A committed tensor: its root and the header that root binds (dtype code, shape).
struct TensorRef {
    bytes32 root;
    uint256 dtype;
    uint256[] shape;
}

/// @notice One element of a tensor: its flat (row-major) index, the 32-byte chunk holding it and the chunk's
///         Merkle path up to the tensor's data root.
struct ElementOpening {
    uint256 element;
    uint256 chunkIndex;
    bytes32 chunk;
    bytes32[] proof;
}

/// @notice One input of a traced op: its tensor id (the op that produced it) and that tensor's root.
struct OpInput {
    uint256 id;
    bytes32 root;
}

/// @notice The preimage of op leaf `index` and its Merkle path up to the trace root.
struct OpOpening {
    uint256 index;
    bytes32 codeHash;
    bytes32 attrsHash;
    OpInput[] inputs;
    bytes32 outputRoot;
    bytes32[] proof;
}

/// @notice One prefix sum partial[k] of a dot element and its Merkle path up to the prefix-sum root.
struct PartialOpening {
    uint256 k;
    int256 value;
    bytes32[] proof;
}

/// @notice Step k of a dot element: the operand pair (a_k, b_k) opened in the op's input tensors, and the
///         prefix sums around it (partial[k-1], unused when k = 0, and partial[k]) opened in `prefixRoot`.
struct DotStep {
    uint256 k;
    ElementOpening a;
    ElementOpening b;
    bytes32 prefixRoot;
    PartialOpening prev;
    PartialOpening cur;
}

/// @notice What a proven dot step hands to the arithmetic: float32 bits of a_k and b_k, the two prefix sums
///         and the length K of the sum.
struct DotStepValues {
    uint256 aBits;
    uint256 bBits;
    int256 prev;
    int256 cur;
    uint256 length;
}

/// @notice An entry of a dot element's row of A (or column of B) at step `k`, opened: the witness that the block
///         exponent a party claims is reached (its exponent field equals the claim).
struct BlockWitness {
    uint256 k;
    ElementOpening opening;
}

/// @notice The last move over a dot element (`DotElementStep.check`): step `step.k` of output element `element` of
///         dot op `op` (as `TraceProofs.openDotStep` takes it), the block exponents the mover computed with and a
///         witness entry for each (B's for matmul and index_sum; A's for matmul and sum; the ones of a sum and the
///         one-hot rows of an index_sum have block exponent 127 and need none).
struct DotMove {
    OpOpening op;
    TensorRef[] ins;
    uint256 rows;
    uint256 element;
    DotStep step;
    uint256 blockA;
    uint256 blockB;
    BlockWitness aMax;
    BlockWitness bMax;
}

/// @notice One entry of a row of a `rowmax` or `first_max` op's input and the output element it is about
///         (`MoveReferee.rowEntry`, `MoveReferee.firstMaxEntry`): the op leaf, the input header and entry, the
///         output header and element, and for `first_max` the row's maximum (its second input's header and element;
///         empty for `rowmax`).
struct RowCheck {
    OpOpening op;
    TensorRef input;
    ElementOpening inEl;
    TensorRef out;
    ElementOpening outEl;
    TensorRef max;
    ElementOpening maxEl;
}

/// @notice The last move over one element of a data-movement or constant op (`MoveReferee.check`): the op leaf,
///         the header of the input the output element is a copy of (unused for a constant) and that input element,
///         the output header and element, the integers of the op's index map (narrow: dim, start, length; cat: dim,
///         then each earlier input's length along dim and data root; permute: dims), a constant's value as a
///         double, and for an op that reads an index tensor (`gather`, `take`, `embed`) its header and the index
///         element that names the copied one (empty otherwise).
struct MoveCheck {
    OpOpening op;
    TensorRef input;
    ElementOpening inEl;
    TensorRef out;
    ElementOpening outEl;
    uint256[] ints;
    uint64 value;
    TensorRef index;
    ElementOpening indexEl;
}
