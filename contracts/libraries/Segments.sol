// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";

/// @title Segments: the commitment format shared with the Python side (do not change).
library Segments {
    /// @notice Leaf j = keccak256(bytes.concat(keccak256(abi.encode(j, start, end, transcriptCommit)))).
    function leaf(
        uint256 j,
        bytes32 startHash,
        bytes32 endHash,
        bytes32 transcriptCommit
    ) internal pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(j, startHash, endHash, transcriptCommit))));
    }

    /// @notice Whether segment j's leaf is in `root` (OpenZeppelin commutative-keccak proof).
    function verify(
        bytes32 root,
        uint256 j,
        bytes32 startHash,
        bytes32 endHash,
        bytes32 transcriptCommit,
        bytes32[] calldata proof
    ) internal pure returns (bool) {
        return MerkleProof.verifyCalldata(proof, root, leaf(j, startHash, endHash, transcriptCommit));
    }

    /// @notice transcriptCommit = keccak256(abi.encode(transcriptHash)).
    function commitOfTranscript(bytes32 transcriptHash) internal pure returns (bytes32) {
        return keccak256(abi.encode(transcriptHash));
    }

    /// @notice Segment replayed by validator slot i of `count`: sampled without replacement, stratified.
    /// @dev The n segments, rotated by a random offset, are cut into `count` strata of n / count (floored
    ///      bounds); slot i replays a random segment of stratum i. So `count` validators check min(count, n)
    ///      distinct segments and any one segment is checked with probability exactly min(count, n) / n
    ///      (the economics of `Units.create` rest on it). With count >= n slot i replays segment
    ///      (offset + i) mod n: every segment is checked. `gensyn_py/proof/sampler.py` mirrors it bit for bit.
    function segmentIndex(bytes32 seed, uint256 i, uint256 numSegments, uint256 count) internal pure returns (uint256) {
        uint256 offset = uint256(keccak256(abi.encode(seed))) % numSegments;
        if (count >= numSegments) return (offset + i) % numSegments;
        uint256 lo = (i * numSegments) / count;
        uint256 width = ((i + 1) * numSegments) / count - lo;
        return (offset + lo + (uint256(keccak256(abi.encode(seed, i))) % width)) % numSegments;
    }

    /// @notice The verdict commitment a validator posts before revealing.
    function verdictHash(
        uint256 unitId,
        address validator,
        bool accept,
        bytes32 transcriptHash,
        bytes32 salt
    ) internal pure returns (bytes32) {
        return keccak256(abi.encode(unitId, validator, accept, transcriptHash, salt));
    }
}
