// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title BatchIndex: which example of its shard a training step reads at one batch position.
/// @notice The dispute game narrows a disagreement to one op of one step; when that op reads the batch, the
///         contract must know which example the honest step reads without trusting either side. A step's seed
///         is sha256(abi.encode(DOMAIN, seed, round, shard, t)); position i of step t is
///         sha256(abi.encode(stepSeed, i)) mod shardSize (with replacement), so one index of a disputed batch
///         costs two hashes, with no replay of the indices or steps before it. SHA-256 (the EVM's precompile)
///         rather than keccak256: the solver hashes every index of every step, and Python's SHA-256 is seven
///         times faster than its keccak. `gensyn_py/train/batch_sampler.py`
///         is the same function bit for bit; the trainer reads shard_idx[position] for every i.
library BatchIndex {
    /// @notice A shard has at least one example; a size of zero has no positions.
    error EmptyShard();

    /// @notice Names the sampler and its version ("gensyn.batch-sampler.v2", right-padded): a changed
    ///         derivation takes a new domain, so an old and a new batch never agree by chance.
    bytes32 internal constant DOMAIN = "gensyn.batch-sampler.v2";

    /// @notice Position (0 .. shardSize-1) within the shard of the example that step `step` of unit (round, shard)
    ///         of a job seeded `seed` reads at batch index `i`.
    function example(
        uint256 seed,
        uint256 round,
        uint256 shard,
        uint256 step,
        uint256 i,
        uint256 shardSize
    ) internal pure returns (uint256) {
        // INVARIANT: the modulus is a real shard size, so every position names an example.
        if (shardSize == 0) revert EmptyShard();
        bytes32 stepSeed = sha256(abi.encode(DOMAIN, seed, round, shard, step));
        return uint256(sha256(abi.encode(stepSeed, i))) % shardSize;
    }
}
