// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Hardware} from "../types/Types.sol";

/// @notice NodeRegistry's batched entry points used by TaskPool (beyond INodeRegistry) to save external calls.
interface IRegistryExt {
    /// @notice Lock `amount` if the node has that much free stake; returns whether it did.
    function tryLock(address node, uint256 amount) external returns (bool);

    /// @notice `unlock` then `recordCompleted` in one call.
    function unlockCompleted(address node, uint256 amount) external;

    /// @notice Roles, jail flag, hardware and reputation of a node in one call.
    function claimInfo(address node)
        external
        view
        returns (uint8 roles, bool jailed, Hardware memory hw, uint32 completed, uint32 missed, uint32 frauds);
}
