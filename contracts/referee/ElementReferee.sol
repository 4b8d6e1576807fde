// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ElementStep} from "../libraries/ElementStep.sol";

/// @title ElementReferee: the last move over one element of an elementwise op, as a deployed contract.
/// @notice `ElementStep.check` behind an external view, so a dispute game calls it instead of inlining the
///         float32 library (which alone is half a contract's code-size limit).
contract ElementReferee {
    /// @notice Prove the packed move `m` (`ElementStep.check`) against `traceRoot` and recompute its output
    ///         element; `same` when the committed bits are the rule's (any NaN equals any NaN).
    function check(
        bytes32 traceRoot,
        bytes calldata m
    ) external pure returns (uint256 expected, uint256 committed, bool same) {
        uint256 dtype;
        (expected, committed, dtype) = ElementStep.check(traceRoot, m);
        same = ElementStep.same(dtype, expected, committed);
    }
}
