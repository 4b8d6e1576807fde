// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice A dispute over a unit, as the committee keeps it (`DisputeCommittee.getDispute` returns it).
struct Dispute {
    uint256 unitId;
    address solver;
    address opener;
    uint8 deviceClass;
    bool drawn;
    bool resolved;
    uint64 openBlock;
    uint64 deadline;
    uint256 yesWeight;
    uint256 noWeight;
    uint256 votes;
    address[] members;
}
