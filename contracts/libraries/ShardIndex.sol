// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ShardIndex: which example of the dataset a shard's member j is.
/// @notice Shard s of n examples split into S shards holds positions start..start+size-1 of a keyed permutation
///         pi of 0..n-1 (numpy's array_split sizes: the first n mod S shards one longer); member j is pi(start+j).
///         pi is a 4-round balanced Feistel network over the smallest even bit width covering n, cycle-walked
///         below n; round r XORs into the left half the low bits of splitmix64's finalizer of (right ^ k_r), with
///         k_r = uint64(uint256(sha256(abi.encode(DOMAIN, seed, r)))). With BatchIndex, the dispute game names
///         the example a disputed batch position reads without the dataset. `gensyn_py/train/shard_permutation.py`
///         is the same function bit for bit.
library ShardIndex {
    /// @notice The shard is not one of the job's shards.
    error ShardOutOfRange(uint256 shard, uint256 shards);
    /// @notice The member is past the shard's size.
    error MemberOutOfRange(uint256 j, uint256 size);
    /// @notice A dataset has at least one example, and fewer than 2^62.
    error BadDatasetSize(uint256 n);

    /// @notice Names the permutation and its version ("gensyn.shard-permutation.v1", right-padded).
    bytes32 internal constant DOMAIN = "gensyn.shard-permutation.v1";

    /// @notice (start, size) of shard `shard`'s positions in pi's order.
    function shardRange(uint256 n, uint256 shards, uint256 shard) internal pure returns (uint256 start, uint256 size) {
        if (shard >= shards) revert ShardOutOfRange(shard, shards);
        uint256 q = n / shards;
        uint256 r = n % shards;
        start = shard * q + (shard < r ? shard : r);
        size = q + (shard < r ? 1 : 0);
    }

    /// @notice The dataset index of member j of shard `shard` of a job seeded `seed`.
    function member(uint256 seed, uint256 n, uint256 shards, uint256 shard, uint256 j) internal pure returns (uint256) {
        (uint256 start, uint256 size) = shardRange(n, shards, shard);
        if (j >= size) revert MemberOutOfRange(j, size);
        return permute(seed, n, start + j);
    }

    /// @notice pi(x) for x < n.
    function permute(uint256 seed, uint256 n, uint256 x) internal pure returns (uint256) {
        // INVARIANT: x < n < 2^62, so both halves and every intermediate fit in 64 bits.
        if (n == 0 || n >= 1 << 62) revert BadDatasetSize(n);
        uint256 bits = 2;
        while ((uint256(1) << bits) < n) ++bits;
        uint256 half = (bits + 1) / 2;
        uint64[4] memory keys;
        for (uint256 r = 0; r < 4; ++r) keys[r] = uint64(uint256(sha256(abi.encode(DOMAIN, seed, r))));
        do {
            x = _feistel(uint64(x), keys, half);
        } while (x >= n);
        return x;
    }

    function _feistel(uint64 x, uint64[4] memory keys, uint256 half) private pure returns (uint64) {
        uint64 mask = uint64((uint256(1) << half) - 1);
        uint64 left = x >> half;
        uint64 right = x & mask;
        for (uint256 r = 0; r < 4; ++r) {
            (left, right) = (right, left ^ (_mix(right ^ keys[r]) & mask));
        }
        return (left << half) | right;
    }

    /// @notice splitmix64's finalizer; the multiplications wrap modulo 2^64, as numpy's uint64 does.
    function _mix(uint64 z) private pure returns (uint64) {
        unchecked {
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
            z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
            return z ^ (z >> 31);
        }
    }
}
