// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {DotElementStep} from "../libraries/DotElementStep.sol";
import {DotReferee} from "../referee/DotReferee.sol";
import {DotMove} from "../types/Trace.sol";

/// @title DotElementStepHarness: the DotElementStep library behind external functions, for tests and gas figures
///        (the deployed referee's functions, `step` among them, inherited).
contract DotElementStepHarness is DotReferee {
    /// @notice `DotElementStep.check`, plus whether the committed partial sum is the recomputed one.
    function check(
        bytes32 traceRoot,
        DotMove calldata m
    ) external pure returns (int256 expected, int256 committed, bool same) {
        (expected, committed) = DotElementStep.check(traceRoot, m);
        same = expected == committed;
    }

    /// @notice `DotElementStep.roundedOutput`.
    function roundedOutput(int256 n, uint256 blockA, uint256 blockB) external pure returns (uint32) {
        return DotElementStep.roundedOutput(n, blockA, blockB);
    }

    /// @notice `DotElementStep.refutesBlock`.
    function refutesBlock(uint32 entryBits, uint256 claimedBlock) external pure returns (bool) {
        return DotElementStep.refutesBlock(entryBits, claimedBlock);
    }
}
