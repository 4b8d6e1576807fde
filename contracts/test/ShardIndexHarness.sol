// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {BatchIndex} from "../libraries/BatchIndex.sol";
import {ShardIndex} from "../libraries/ShardIndex.sol";

/// @title ShardIndexHarness
/// @notice Test-only: ShardIndex over whole arrays in one eth_call, and the example a batch position reads
///         (ShardIndex after BatchIndex), for tests/contracts/test_shard_index.py.
contract ShardIndexHarness {
    /// @notice The arrays of one batch differ in length.
    error HarnessLengthMismatch();

    /// @notice Case k is member js[k] of shard shardIds[k] of ns[k] examples in shardCounts[k] shards, seed seeds[k].
    function members(
        uint256[] calldata seeds,
        uint256[] calldata ns,
        uint256[] calldata shardCounts,
        uint256[] calldata shardIds,
        uint256[] calldata js
    ) external pure returns (uint256[] memory out) {
        uint256 count = seeds.length;
        if (ns.length != count || shardCounts.length != count || shardIds.length != count || js.length != count)
            revert HarnessLengthMismatch();
        out = new uint256[](count);
        for (uint256 k = 0; k < count; ++k) {
            out[k] = ShardIndex.member(seeds[k], ns[k], shardCounts[k], shardIds[k], js[k]);
        }
    }

    /// @notice The dataset index that batch position i of step `step` of unit (round, shard) reads.
    function exampleAt(
        uint256 seed,
        uint256 n,
        uint256 shards,
        uint256 round,
        uint256 shard,
        uint256 step,
        uint256 i
    ) public pure returns (uint256) {
        (, uint256 size) = ShardIndex.shardRange(n, shards, shard);
        return ShardIndex.member(seed, n, shards, shard, BatchIndex.example(seed, round, shard, step, i, size));
    }

    /// @notice Execution gas of one exampleAt, measured in-contract with gasleft().
    function gasOfExampleAt(
        uint256 seed,
        uint256 n,
        uint256 shards,
        uint256 round,
        uint256 shard,
        uint256 step,
        uint256 i
    ) external view returns (uint256 gasUsed, uint256 example) {
        uint256 before = gasleft();
        example = exampleAt(seed, n, shards, round, shard, step, i);
        gasUsed = before - gasleft();
    }
}
