// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Segments} from "./Segments.sol";
import {TraceProofs} from "./TraceProofs.sol";

/// @title Transcripts: a segment's loss transcript as the segment game judges it.
/// @notice The transcript hash is `gensyn_py/proof/commitment.py`'s: keccak256 of the domain, the author's 20 bytes,
///         the step count (uint32, big-endian), each step's loss (float32, little-endian) and the end state root. The
///         game's position after i steps of a segment binds the state and the losses so far:
///         `keccak256(stateRoot_i ++ L_i)`, with `L_0 = 0` and `L_{i+1} = keccak256(L_i ++ loss_i)` (the loss's four
///         little-endian bytes), so a wrong loss moves the claimant's positions apart from the counter's at the step
///         that computed it, like a wrong state (`gensyn_py/proof/transcript_positions.py` mirrors it).
library Transcripts {
    bytes internal constant DOMAIN = "gensyn.transcript.v2";

    /// @notice The transcript commitment of `losses` (4 bytes a step) by `author`, ending at state `end`.
    function commit(address author, bytes calldata losses, bytes32 end) internal pure returns (bytes32) {
        uint32 steps = uint32(losses.length / 4);
        return Segments.commitOfTranscript(keccak256(abi.encodePacked(DOMAIN, author, steps, losses, end)));
    }

    /// @notice `L_n` of the `n = losses.length / 4` losses.
    function lossesHash(bytes calldata losses) internal pure returns (bytes32 running) {
        for (uint256 i; i < losses.length; i += 4) running = next(running, bytes4(losses[i:i + 4]));
    }

    /// @notice `L_{i+1}` from `L_i` and loss i (its little-endian bytes).
    function next(bytes32 before, bytes4 loss) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked(before, loss));
    }

    /// @notice The game's position: a state root with the running hash of the losses up to it.
    function position(bytes32 stateRoot, bytes32 lossesBefore) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked(stateRoot, lossesBefore));
    }

    /// @notice The tensor root of a step's `loss` output: float32 of shape (1, 1), its four little-endian bytes in
    ///         one zero-padded chunk (`gensyn_py/proof/tensor_commit.py`).
    function lossRoot(bytes4 loss) internal pure returns (bytes32) {
        bytes32 dataRoot = keccak256(abi.encodePacked(uint256(0), bytes32(loss)));
        return keccak256(abi.encodePacked(TraceProofs.DTYPE_FLOAT32, uint256(2), uint256(1), uint256(1), dataRoot));
    }
}
