// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ElementStep} from "../libraries/ElementStep.sol";
import {ElementReferee} from "../referee/ElementReferee.sol";

/// @title ElementStepHarness: the ElementStep library behind external functions, for tests and gas figures
///        (`check` is the deployed referee's, inherited).
contract ElementStepHarness is ElementReferee {
    /// @notice `ElementStep.compute` over a batch: row i of `x` holds op `code`'s input bits for case i.
    function computeBatch(
        bytes32 code,
        uint256[][] calldata x,
        uint256[] calldata dtypes,
        uint64[2] calldata bounds
    ) external pure returns (uint256[] memory out) {
        out = new uint256[](x.length);
        uint32 lo = ElementStep.toFloat32(bounds[0]);
        uint32 hi = ElementStep.toFloat32(bounds[1]);
        for (uint256 i; i < x.length; ++i) out[i] = ElementStep.compute(code, x[i], dtypes, lo, hi);
    }

    /// @notice `ElementStep.broadcastIndex` for several output elements.
    function broadcastBatch(
        uint256[] calldata outShape,
        uint256[] calldata inShape,
        uint256[] calldata elements
    ) external pure returns (uint256[] memory out) {
        out = new uint256[](elements.length);
        for (uint256 i; i < elements.length; ++i) out[i] = ElementStep.broadcastIndex(outShape, inShape, elements[i]);
    }

    /// @notice `ElementStep.hexDouble` and `ElementStep.toFloat32`.
    function double(uint64 d) external pure returns (string memory, uint32) {
        return (string(ElementStep.hexDouble(d)), ElementStep.toFloat32(d));
    }
}
