// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {BatchIndex} from "../libraries/BatchIndex.sol";

/// @title BatchIndexHarness
/// @notice Test-only: runs BatchIndex.example over whole arrays of parameters in one eth_call, so a differential
///         test checks hundreds of cases against the Python sampler at once (tests/contracts/test_batch_index.py).
contract BatchIndexHarness {
    /// @notice The arrays of one batch differ in length.
    error HarnessLengthMismatch();

    /// @notice Case k is (seeds[k], rounds[k], shards[k], steps[k], indices[k], shardSizes[k]).
    function examples(
        uint256[] calldata seeds,
        uint256[] calldata rounds,
        uint256[] calldata shards,
        uint256[] calldata steps,
        uint256[] calldata indices,
        uint256[] calldata shardSizes
    ) external pure returns (uint256[] memory out) {
        uint256 n = seeds.length;
        if (
            rounds.length != n ||
            shards.length != n ||
            steps.length != n ||
            indices.length != n ||
            shardSizes.length != n
        ) revert HarnessLengthMismatch();
        out = new uint256[](n);
        for (uint256 k = 0; k < n; ++k) {
            out[k] = BatchIndex.example(seeds[k], rounds[k], shards[k], steps[k], indices[k], shardSizes[k]);
        }
    }

    /// @notice Positions 0 .. count-1 of one step's batch, as the trainer draws them.
    function batch(
        uint256 seed,
        uint256 round,
        uint256 shard,
        uint256 step,
        uint256 count,
        uint256 shardSize
    ) external pure returns (uint256[] memory out) {
        out = new uint256[](count);
        for (uint256 i = 0; i < count; ++i) out[i] = BatchIndex.example(seed, round, shard, step, i, shardSize);
    }

    /// @notice Execution gas of one BatchIndex.example, measured in-contract with gasleft().
    function gasOfExample(
        uint256 seed,
        uint256 round,
        uint256 shard,
        uint256 step,
        uint256 i,
        uint256 shardSize
    ) external view returns (uint256 gasUsed, uint256 position) {
        uint256 before = gasleft();
        position = BatchIndex.example(seed, round, shard, step, i, shardSize);
        gasUsed = before - gasleft();
    }
}
