// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {IStepGame, OutputReveal} from "../interfaces/IStepGame.sol";
import {TraceProofs} from "./TraceProofs.sol";

/// @title OutputDescent: two sides walk down a disputed op's output data tree to one chunk where they differ.
/// @notice The tree is `tensor_commit`'s: 32-byte chunk leaves, OpenZeppelin hashing, an odd last node promoted
///         (`gensyn_py/proof/descent.py` mirrors it). Each step posts the mover's children of the node both sides
///         stand on; the first child that differs from the other side's is where both go, through any promoted
///         node, down to one chunk. `StepGame` runs it inline; events and errors are `IStepGame`'s.
library OutputDescent {
    /// @notice One game's descent.
    struct Tree {
        bytes32 claimantNode; // each side's node at (level, index)
        bytes32 counterNode;
        bytes32 pendingLeft; // the children of that node posted by the side not to move
        bytes32 pendingRight;
        uint64 chunks; // leaves of the claimant's output
        uint64 numel; // its elements
        uint64 index;
        uint8 level; // height above the leaves
        bool contested; // one descent per game
    }

    /// @notice Start at the claimant's output: header and data root (they hash to `outputRoot`) and, above one
    ///         chunk, the root's children.
    function reveal(Tree storage d, uint256 gameId, bytes32 outputRoot, OutputReveal calldata out) internal {
        bytes32 computed = TraceProofs.tensorRoot(out.dtype, out.shape, out.dataRoot);
        if (computed != outputRoot) revert IStepGame.OutputMismatch(computed, outputRoot);
        uint256 numel = TraceProofs.numel(out.shape);
        uint256 size = numel * TraceProofs.itemSize(out.dtype);
        uint256 chunks = size == 0 ? 1 : (size + TraceProofs.CHUNK_BYTES - 1) / TraceProofs.CHUNK_BYTES;
        d.chunks = uint64(chunks);
        d.numel = uint64(numel);
        d.claimantNode = out.dataRoot;
        uint8 top;
        while (width(chunks, top) > 1) ++top;
        d.level = top;
        emit IStepGame.OutputRevealed(gameId, out.dtype, out.shape, out.dataRoot, chunks);
        if (top > 0) _post(d, gameId, out.dataRoot, out.left, out.right);
    }

    /// @notice One level down by the side to move (`byCounter`): `children` are its two children here and its two
    ///         of the child where both go. Returns true once the node is a chunk (then the last two are unused).
    function step(
        Tree storage d,
        uint256 gameId,
        bool byCounter,
        bytes32[4] memory children
    ) internal returns (bool atChunk) {
        if (d.level == 0) return true; // one chunk: nothing to descend
        bytes32 node = byCounter ? d.counterNode : d.claimantNode;
        bytes32 mine = Hashes.commutativeKeccak256(children[0], children[1]);
        // The counter's first node is its data root, which it never committed: its children only need to differ.
        if (!(byCounter && node == bytes32(0)) && mine != node) revert IStepGame.ChildrenMismatch(mine, node);
        emit IStepGame.Children(gameId, msg.sender, d.level, d.index, children[0], children[1]);
        bool right = children[0] == d.pendingLeft;
        if (right && children[1] == d.pendingRight) revert IStepGame.NoDifference(d.level, d.index);
        (bytes32 moverChild, bytes32 otherChild) = right ? (children[1], d.pendingRight) : (children[0], d.pendingLeft);
        (d.claimantNode, d.counterNode) = byCounter ? (otherChild, moverChild) : (moverChild, otherChild);
        d.index = d.index * 2 + (right ? 1 : 0);
        d.level -= 1;
        // A promoted node (the last of an odd level) is its own single child: pass through it.
        while (d.level > 0 && 2 * uint256(d.index) + 1 >= width(d.chunks, d.level - 1)) {
            d.index *= 2;
            d.level -= 1;
        }
        if (d.level == 0) return true;
        _post(d, gameId, moverChild, children[2], children[3]);
    }

    /// @notice The claimant's chunk at the leaf reached: it must be its leaf there.
    function checkChunk(Tree storage d, bytes32 chunk) internal view {
        if (TraceProofs.chunkLeaf(d.index, chunk) != d.claimantNode) revert IStepGame.ChunkMismatch(d.index);
    }

    /// @notice Nodes at height `level` of a data tree of `chunks` leaves whose odd nodes are promoted.
    function width(uint256 chunks, uint256 level) internal pure returns (uint256) {
        return (chunks + (uint256(1) << level) - 1) >> level;
    }

    /// @dev The side to move posts the children of `node`, its own node at the current position.
    function _post(Tree storage d, uint256 gameId, bytes32 node, bytes32 left, bytes32 right) private {
        bytes32 computed = Hashes.commutativeKeccak256(left, right);
        if (computed != node) revert IStepGame.ChildrenMismatch(computed, node);
        (d.pendingLeft, d.pendingRight) = (left, right);
        emit IStepGame.Children(gameId, msg.sender, d.level, d.index, left, right);
    }
}
