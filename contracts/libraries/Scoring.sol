// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hardware} from "../types/Types.sol";

/// @title Scoring: O(1) solver preference for the Dutch-auction claim.
library Scoring {
    uint256 internal constant BPS = 10_000;

    /// @notice Score in bps = (6*reliability + 3*cheapness + 1*capacity) / 10.
    /// @dev reliability is Laplace-smoothed: (completed+1)/(completed+missed+frauds+2), so a newcomer scores 5000.
    function score(
        uint32 completed,
        uint32 missed,
        uint32 frauds,
        uint128 price,
        uint128 maxPrice,
        uint64 throughput,
        uint64 minThroughput
    ) internal pure returns (uint256) {
        uint256 reliability = ((uint256(completed) + 1) * BPS) / (uint256(completed) + missed + frauds + 2);
        uint256 cheapness = maxPrice == 0 ? BPS : ((uint256(maxPrice) - price) * BPS) / maxPrice;
        uint256 capacity = BPS;
        if (minThroughput != 0) {
            uint256 excess = ((uint256(throughput) - minThroughput) * BPS) / minThroughput;
            capacity = excess < BPS ? excess : BPS;
        }
        return (6 * reliability + 3 * cheapness + capacity) / 10;
    }

    /// @notice Score of a node with hardware `hw` and reputation (completed, missed, frauds) for a job
    ///         paying at most `maxPrice` and needing `minThroughput` (price and throughput clamped to the job).
    function ofNode(
        uint32 completed,
        uint32 missed,
        uint32 frauds,
        Hardware memory hw,
        uint128 maxPrice,
        uint64 minThroughput
    ) internal pure returns (uint256) {
        uint64 tp = hw.throughput < minThroughput ? minThroughput : hw.throughput;
        uint128 price = hw.pricePerUnit > maxPrice ? maxPrice : hw.pricePerUnit;
        return score(completed, missed, frauds, price, maxPrice, tp, minThroughput);
    }

    /// @notice Required score: decays linearly from 10000 at `openedAt` to 0 at `openedAt + window`.
    function required(uint64 openedAt, uint64 window, uint256 nowTs) internal pure returns (uint256) {
        uint256 end = uint256(openedAt) + window;
        if (window == 0 || nowTs >= end) return 0;
        return ((end - nowTs) * BPS) / window;
    }
}
