// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {ITraceProofs} from "../interfaces/ITraceProofs.sol";
import {TraceProofs} from "./TraceProofs.sol";

/// @title PackedMoves: the pieces of a deciding move, read from its packed calldata.
/// @notice A deciding move (`refuteElement`, `refuteDotStep`) is one `bytes` argument: 32-byte words in sequence,
///         with no ABI offsets, no length words but the counts below, and nothing said twice (an input's root is
///         the one in the op leaf; a chunk's index follows from its element). Calldata is most of such a move's
///         gas, and ABI-decoding nested structs most of the rest (docs/dispute-game.md "Gas of the deciding
///         move"). `gensyn_py/proof/packed_moves.py` writes the same layout. The pieces:
///         - op leaf: `index, codeHash, attrsHash, (id, root) per input, outputRoot` (exactly the words the leaf
///           hashes), then its path: `depth, sibling...` (depth 0 when the game passes the opened leaf as root);
///         - tensor header: `dtype, ndim, dim...` (exactly the words before the data root in its tensor root);
///         - element opening: `element, chunk, depth, sibling...`.
/// @dev Every read is bounds-checked (`Truncated`): a move cut short reverts by name, never reads zeros past its
///      end. Offsets are byte positions inside the `bytes` argument.
library PackedMoves {
    /// @notice The word at byte `at`.
    function word(bytes calldata b, uint256 at) internal pure returns (uint256 v) {
        unchecked {
            if (at > b.length || b.length - at < 32) revert ITraceProofs.Truncated(at, b.length);
        }
        // solhint-disable-next-line no-inline-assembly
        assembly {
            v := calldataload(add(b.offset, at))
        }
    }

    /// @notice `n` words from byte `at`, as a calldata array (no copy), and the byte after them.
    function words(bytes calldata b, uint256 at, uint256 n) internal pure returns (uint256[] calldata a, uint256 next) {
        unchecked {
            // INVARIANT: n is bounded by the move's own length before it is multiplied (no overflow, no wrap).
            if (at > b.length || n > (b.length - at) >> 5) revert ITraceProofs.Truncated(at, b.length);
            next = at + (n << 5);
        }
        // solhint-disable-next-line no-inline-assembly
        assembly {
            a.offset := add(b.offset, at)
            a.length := n
        }
    }

    /// @notice A Merkle path at byte `at` (`depth, sibling...`), and the byte after it.
    function path(bytes calldata b, uint256 at) internal pure returns (bytes32[] calldata p, uint256 next) {
        return _hashes(b, at + 32, word(b, at));
    }

    /// @notice The op leaf at byte `at` with `inputs` inputs, proven in `traceRoot` by the path after it: its
    ///         index, and the byte after the path.
    function op(
        bytes calldata b,
        uint256 at,
        uint256 inputs,
        bytes32 traceRoot
    ) internal pure returns (uint256 index, uint256 next) {
        (uint256[] calldata pre, uint256 end) = words(b, at, 4 + 2 * inputs);
        bytes32 leaf;
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let ptr := mload(0x40) // hashed past the free pointer, which it does not move
            calldatacopy(ptr, pre.offset, mul(pre.length, 0x20))
            leaf := keccak256(ptr, mul(pre.length, 0x20))
        }
        index = pre[0];
        bytes32[] calldata proof;
        (proof, next) = path(b, end);
        if (MerkleProof.processProofCalldata(proof, leaf) != traceRoot) revert ITraceProofs.OpNotInTrace(index);
    }

    /// @notice The committed root of input `j` of the op leaf at byte `at` (not re-proven: `op` proved the leaf).
    function inputRoot(bytes calldata b, uint256 at, uint256 j) internal pure returns (bytes32) {
        unchecked {
            return bytes32(word(b, at + 128 + 64 * j)); // j < the op's inputs: no wrap
        }
    }

    /// @notice The output root of the op leaf at byte `at` with `inputs` inputs.
    function outputRoot(bytes calldata b, uint256 at, uint256 inputs) internal pure returns (bytes32) {
        unchecked {
            return bytes32(word(b, at + 96 + 64 * inputs)); // inputs is at most 3: no wrap
        }
    }

    /// @notice A tensor header and the element opened after it, proven: what a referee computes with.
    struct Opened {
        uint256 dtype;
        uint256 shapeAt; // byte of the first dim in the move
        uint256 ndim;
        uint256 element;
        uint256 bits; // the element's raw bits (as TraceProofs.elementBits reads them)
        uint256 next; // byte after the opening
    }

    /// @notice The tensor header and element opening at byte `at`, proven against the tensor root `root` (the op
    ///         leaf's): the dtype, shape and chunk hash to it with the element's chunk index, and the element is
    ///         inside the shape. The caller checks the element is the one its rule reads.
    function open(bytes calldata b, uint256 at, bytes32 root) internal pure returns (Opened memory o) {
        uint256 q; // the opening: element, chunk, depth, siblings
        uint256 depth;
        unchecked {
            // Bounds first, each count checked against the bytes left before it is scaled (no wrap): every word
            // read below lies before `o.next`, which is inside the move.
            uint256 len = b.length;
            if (at > len || len - at < 64) revert ITraceProofs.Truncated(at, len);
            o.ndim = _load(b, at + 32);
            o.shapeAt = at + 64;
            if (o.ndim > (len - o.shapeAt) >> 5) revert ITraceProofs.Truncated(o.shapeAt, len);
            q = o.shapeAt + (o.ndim << 5);
            if (len - q < 96) revert ITraceProofs.Truncated(q, len);
            depth = _load(b, q + 64);
            if (depth > (len - q - 96) >> 5) revert ITraceProofs.Truncated(q + 96, len);
            o.next = q + 96 + (depth << 5);
        }
        o.dtype = _load(b, at);
        o.element = _load(b, q);
        uint256 n = _numel(b, o.shapeAt, o.ndim);
        // INVARIANT: only an element inside the committed shape opens (the padding after it is no element).
        if (o.element >= n) revert ITraceProofs.ElementOutOfRange(o.element, n);
        uint256 item = TraceProofs.itemSize(o.dtype);
        uint256 offset;
        unchecked {
            offset = o.element * item; // element < numel, and a committed tensor's bytes fit far below 2^256
        }
        bytes32 chunk = bytes32(_load(b, q + 32));
        bytes32 computed = _rootOf(b, at, o.ndim, q + 96, depth, TraceProofs.chunkLeaf(offset >> 5, chunk));
        // INVARIANT: the chunk, the dtype and the shape are the committed ones.
        if (computed != root) revert ITraceProofs.TensorRootMismatch(computed, root);
        o.bits = TraceProofs.bitsIn(chunk, offset, item);
    }

    /// @dev The product of the `ndim` dims at byte `at` (wrapping: a header whose product wraps is no committed
    ///      one, and fails its root check).
    function _numel(bytes calldata b, uint256 at, uint256 ndim) private pure returns (uint256 n) {
        // solhint-disable-next-line no-inline-assembly
        assembly {
            n := 1
            let p := add(b.offset, at)
            for {
                let end := add(p, shl(5, ndim))
            } lt(p, end) {
                p := add(p, 0x20)
            } {
                n := mul(n, calldataload(p))
            }
        }
    }

    /// @dev The tensor root of the header at byte `at` (`ndim` dims) over the data root that `leaf` reaches up
    ///      the `depth` siblings at byte `siblings` (OpenZeppelin's commutative keccak): `TraceProofs.tensorRoot` of
    ///      `MerkleProof.processProof`, reading the words where they lie.
    function _rootOf(
        bytes calldata b,
        uint256 at,
        uint256 ndim,
        uint256 siblings,
        uint256 depth,
        bytes32 leaf
    ) private pure returns (bytes32 root) {
        // solhint-disable-next-line no-inline-assembly
        assembly ("memory-safe") {
            let node := leaf
            let p := add(b.offset, siblings)
            for {
                let end := add(p, mul(depth, 0x20))
            } lt(p, end) {
                p := add(p, 0x20)
            } {
                let sibling := calldataload(p)
                switch lt(node, sibling)
                case 1 {
                    mstore(0x00, node)
                    mstore(0x20, sibling)
                }
                default {
                    mstore(0x00, sibling)
                    mstore(0x20, node)
                }
                node := keccak256(0x00, 0x40)
            }
            // dtype, ndim, dims as they lie, then the data root: hashed past the free pointer, not moving it.
            let ptr := mload(0x40)
            let header := mul(add(ndim, 2), 0x20)
            calldatacopy(ptr, add(b.offset, at), header)
            mstore(add(ptr, header), node)
            root := keccak256(ptr, add(header, 0x20))
        }
    }

    /// @notice The shape of an opened tensor, as a calldata array (no copy).
    function shapeOf(bytes calldata b, Opened memory o) internal pure returns (uint256[] calldata shape) {
        uint256 at = o.shapeAt;
        uint256 n = o.ndim;
        // solhint-disable-next-line no-inline-assembly
        assembly {
            shape.offset := add(b.offset, at)
            shape.length := n
        }
    }

    /// @dev `n` words from byte `at` as hashes, and the byte after them.
    function _hashes(
        bytes calldata b,
        uint256 at,
        uint256 n
    ) private pure returns (bytes32[] calldata h, uint256 next) {
        uint256[] calldata w;
        (w, next) = words(b, at, n);
        // solhint-disable-next-line no-inline-assembly
        assembly {
            h.offset := w.offset
            h.length := w.length
        }
    }

    /// @dev The word at byte `at`, already known to lie inside the move.
    function _load(bytes calldata b, uint256 at) private pure returns (uint256 v) {
        // solhint-disable-next-line no-inline-assembly
        assembly {
            v := calldataload(add(b.offset, at))
        }
    }
}
