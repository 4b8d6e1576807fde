// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// Test doubles: raw calls, assembly bubbling and string reverts are what they exercise.
// solhint-disable avoid-low-level-calls, no-inline-assembly, gas-custom-errors

/// @title HostileReceiver: a contract account (requester / solver) that forwards calls and tries to
/// re-enter `reenterTarget` with `reenterData` whenever anything calls into it (tests only).
contract HostileReceiver {
    address public immutable owner;
    address public reenterTarget;
    bytes public reenterData;
    uint256 public callbacks;

    constructor() {
        owner = msg.sender;
    }

    function setReenter(address target, bytes calldata data) external {
        reenterTarget = target;
        reenterData = data;
    }

    /// Forward a call as this contract; bubbles reverts.
    function exec(address target, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == owner, "owner");
        (bool ok, bytes memory ret) = target.call(data);
        if (!ok) {
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        return ret;
    }

    function _hostile() internal {
        ++callbacks;
        if (reenterTarget != address(0)) {
            (bool ok, ) = reenterTarget.call(reenterData);
            ok;
        }
    }

    receive() external payable {
        _hostile();
    }

    fallback() external payable {
        _hostile();
    }
}
