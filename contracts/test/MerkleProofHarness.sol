// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {Segments} from "../libraries/Segments.sol";

/// @title MerkleProofHarness
/// @notice Test-only: exposes the checkpoint-commitment format so Python-made proofs can be checked on-chain.
contract MerkleProofHarness {
    /// @notice transcriptCommit_j = keccak256(abi.encode(bytes32 transcriptHash_j)).
    function transcriptCommit(bytes32 transcriptHash) public pure returns (bytes32) {
        return keccak256(abi.encode(transcriptHash));
    }

    /// @notice leaf_j = keccak256(keccak256(abi.encode(uint256 j, bytes32 start, bytes32 end, bytes32 commit))).
    function leaf(
        uint256 j,
        bytes32 startStateHash,
        bytes32 endStateHash,
        bytes32 transcriptCommit_
    ) public pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(j, startStateHash, endStateHash, transcriptCommit_))));
    }

    /// @notice Whether segment j with these hashes is in `root`.
    function verifySegment(
        bytes32 root,
        uint256 j,
        bytes32 startStateHash,
        bytes32 endStateHash,
        bytes32 transcriptCommit_,
        bytes32[] calldata proof
    ) external pure returns (bool) {
        return MerkleProof.verifyCalldata(proof, root, leaf(j, startStateHash, endStateHash, transcriptCommit_));
    }

    /// @notice The segment validator i replays: keccak256(abi.encode(seed, i)) % numSegments.
    function segmentFor(bytes32 seed, uint256 i, uint256 numSegments, uint256 count) external pure returns (uint256) {
        return Segments.segmentIndex(seed, i, numSegments, count);
    }
}
