// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {ISegmentGame, StateEntries, StepReveal} from "../interfaces/ISegmentGame.sol";

/// @title StepBinding: a step's next state, bound entry by entry to the step's program and the state before it.
/// @notice The state tree (`gensyn_py/proof/state.py`) and the outputs tree (`gensyn_py/proof/step_program.py`) are
///         OpenZeppelin-compatible Merkle trees of entries in key-hash order, an odd last node promoted. Given both
///         states and the program's named outputs as whole sorted lists, `bind` checks that every key of the next
///         state is a named output of the step, the cursor, or carried from the state before with the same root,
///         and that no key of the state before and no named output but `loss` is missing; it returns the roots the
///         next state gives the named outputs, and the loss's root from the transcript, each with the op that must
///         have produced it.
library StepBinding {
    /// @dev keccak256 of the canonical JSON `["loss"]`: the one named output that is not state.
    bytes32 internal constant LOSS = keccak256(hex"5b226c6f7373225d");
    /// @dev keccak256 of `["cursor"]`: `[round, shard, step]` as int64, the one entry a step sets by rule.
    bytes32 internal constant CURSOR = keccak256(hex"5b22637572736f72225d");
    /// @dev A tensor header's dtype code for int64 (`gensyn_py/proof/tensor_commit.py`).
    uint256 internal constant INT64 = 3;

    /// @notice The state root of `e` (whose keys must be strictly increasing).
    function stateRoot(StateEntries calldata e) internal pure returns (bytes32) {
        uint256 n = e.keys.length;
        if (e.roots.length != n) revert ISegmentGame.LengthMismatch(n, e.roots.length);
        _sorted(e.keys);
        bytes32[] memory leaves = new bytes32[](n);
        for (uint256 i; i < n; ++i) leaves[i] = keccak256(abi.encodePacked(e.keys[i], e.roots[i]));
        return merkleRoot(leaves);
    }

    /// @notice The outputs root of a program whose named output `keys[i]` is op `ops[i]` (keys strictly increasing).
    function outputsRoot(bytes32[] calldata keys, uint256[] calldata ops) internal pure returns (bytes32) {
        uint256 n = keys.length;
        if (ops.length != n) revert ISegmentGame.LengthMismatch(n, ops.length);
        _sorted(keys);
        bytes32[] memory leaves = new bytes32[](n);
        for (uint256 i; i < n; ++i) leaves[i] = keccak256(abi.encodePacked(keys[i], ops[i]));
        return merkleRoot(leaves);
    }

    /// @dev Where the merge stands: the next key of the state before, the next named output, the outputs bound
    ///      (`ops[i]` must output `roots[i]`), and the root the loss must have.
    struct Walk {
        uint256 prior;
        uint256 output;
        uint256 bound;
        uint256[] ops;
        bytes32[] roots;
        bytes32 lossRoot;
    }

    /// @notice Check `r.next` against `r.prior` and the named outputs (lists already proven sorted and hashed), and
    ///         return the named outputs the next state holds and the loss, in key order: op `ops[i]` must have output
    ///         `roots[i]`.
    /// @param nextStep the unit step the next state is at: its cursor must be `[round, shard, nextStep]`.
    /// @param lossRoot the root the step's loss output must have (`Transcripts.lossRoot` of the transcript's loss).
    function bind(
        StepReveal calldata r,
        uint256 round,
        uint256 shard,
        uint256 nextStep,
        bytes32 lossRoot
    ) internal pure returns (uint256[] memory ops, bytes32[] memory roots) {
        bytes32 cursor = cursorRoot(round, shard, nextStep);
        Walk memory w;
        (w.ops, w.roots, w.lossRoot) = (
            new uint256[](r.outputKeys.length),
            new bytes32[](r.outputKeys.length),
            lossRoot
        );
        for (uint256 i; i < r.next.keys.length; ++i) {
            bytes32 k = r.next.keys[i];
            bytes32 root = r.next.roots[i];
            // INVARIANT: no key of the state before is dropped, and no named output but the loss.
            if (w.prior < r.prior.keys.length && r.prior.keys[w.prior] < k)
                revert ISegmentGame.MissingKey(r.prior.keys[w.prior]);
            _skipLoss(r, w, k);
            bool carried = w.prior < r.prior.keys.length && r.prior.keys[w.prior] == k;
            if (w.output < r.outputKeys.length && r.outputKeys[w.output] == k) {
                _bound(w, r.outputOps[w.output], root);
            } else if (k == CURSOR) {
                if (root != cursor) revert ISegmentGame.WrongCursor(root, cursor);
            } else {
                // INVARIANT: what the step does not write (the RNG state) is the state before's, unchanged.
                if (!carried) revert ISegmentGame.ExtraKey(k);
                if (r.prior.roots[w.prior] != root) revert ISegmentGame.CarriedChanged(k);
            }
            if (carried) ++w.prior;
        }
        if (w.prior < r.prior.keys.length) revert ISegmentGame.MissingKey(r.prior.keys[w.prior]);
        _skipLoss(r, w, bytes32(type(uint256).max));
        if (w.output < r.outputKeys.length) revert ISegmentGame.MissingKey(r.outputKeys[w.output]);
        // The named outputs bound, in key order (a program without a loss output binds one fewer).
        (ops, roots) = (new uint256[](w.bound), new bytes32[](w.bound));
        for (uint256 i; i < w.bound; ++i) (ops[i], roots[i]) = (w.ops[i], w.roots[i]);
    }

    /// @dev Output `op` must be `root`; the walk moves past that named output.
    function _bound(Walk memory w, uint256 op, bytes32 root) private pure {
        (w.ops[w.bound], w.roots[w.bound]) = (op, root);
        ++w.bound;
        ++w.output;
    }

    /// @dev Step past the named outputs below key `k`: only the loss may be one the next state does not hold, and
    ///      its root is the transcript's.
    function _skipLoss(StepReveal calldata r, Walk memory w, bytes32 k) private pure {
        while (w.output < r.outputKeys.length && r.outputKeys[w.output] < k) {
            bytes32 key = r.outputKeys[w.output];
            if (key != LOSS) revert ISegmentGame.MissingKey(key);
            _bound(w, r.outputOps[w.output], w.lossRoot);
        }
    }

    /// @notice The tensor root of the cursor `[round, shard, step]`: int64, shape (3), its 24 little-endian bytes in
    ///         one zero-padded chunk (`gensyn_py/proof/tensor_commit.py`).
    function cursorRoot(uint256 round, uint256 shard, uint256 step) internal pure returns (bytes32) {
        uint256 chunk =
            (uint256(_le64(uint64(round))) << 192) |
                (uint256(_le64(uint64(shard))) << 128) |
                (uint256(_le64(uint64(step))) << 64);
        bytes32 dataRoot = keccak256(abi.encodePacked(uint256(0), chunk));
        return keccak256(abi.encodePacked(INT64, uint256(1), uint256(3), dataRoot));
    }

    /// @notice The Merkle root of `nodes` as `gensyn_py/crypto/merkle.py` builds it (commutative pairs, an odd last
    ///         node promoted); zero for none. Overwrites `nodes`.
    function merkleRoot(bytes32[] memory nodes) internal pure returns (bytes32) {
        uint256 n = nodes.length;
        if (n == 0) return bytes32(0);
        while (n > 1) {
            uint256 half = n / 2;
            for (uint256 i; i < half; ++i) nodes[i] = Hashes.commutativeKeccak256(nodes[2 * i], nodes[2 * i + 1]);
            if (n % 2 == 1) {
                nodes[half] = nodes[n - 1];
                n = half + 1;
            } else {
                n = half;
            }
        }
        return nodes[0];
    }

    /// @dev Strictly increasing keys: one list per tree, and no key twice.
    function _sorted(bytes32[] calldata keys) private pure {
        for (uint256 i = 1; i < keys.length; ++i) {
            if (keys[i] <= keys[i - 1]) revert ISegmentGame.KeysUnsorted(i);
        }
    }

    /// @dev `v`'s 8 bytes in little-endian order.
    function _le64(uint64 v) private pure returns (uint64) {
        v = ((v & 0xFF00FF00FF00FF00) >> 8) | ((v & 0x00FF00FF00FF00FF) << 8);
        v = ((v & 0xFFFF0000FFFF0000) >> 16) | ((v & 0x0000FFFF0000FFFF) << 16);
        return (v >> 32) | (v << 32);
    }
}
