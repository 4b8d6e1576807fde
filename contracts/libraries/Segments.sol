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

    /// @notice Segment replayed by validator slot i.
    function segmentIndex(bytes32 seed, uint256 i, uint256 numSegments) internal pure returns (uint256) {
        return uint256(keccak256(abi.encode(seed, i))) % numSegments;
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
