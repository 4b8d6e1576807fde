// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// Test doubles: raw calls, assembly bubbling and string reverts are what they exercise.
// solhint-disable avoid-low-level-calls, no-inline-assembly, gas-custom-errors

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title HostileToken: an ERC-20 that calls back into a target during a transfer (tests only).
/// @notice Armed with `arm(target, data, bubble)`, the next transfer (not a mint) whose sender is
/// `trigger` calls `target` with `data` once. `bubble` re-throws a failed callback (the outer call
/// reverts); otherwise the failure is recorded in `lastOk` / `lastRevert` and the transfer goes on.
contract HostileToken is ERC20 {
    address public trigger;
    address public target;
    bytes public data;
    bool public bubble;
    bool public armed;
    bool public fired;
    bool public lastOk;
    bytes public lastRevert;

    constructor() ERC20("Hostile", "HOST") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function arm(address trigger_, address target_, bytes calldata data_, bool bubble_) external {
        trigger = trigger_;
        target = target_;
        data = data_;
        bubble = bubble_;
        armed = true;
        fired = false;
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (armed && from != address(0) && from == trigger) {
            armed = false;
            fired = true;
            (bool ok, bytes memory ret) = target.call(data);
            lastOk = ok;
            lastRevert = ret;
            if (!ok && bubble) {
                assembly {
                    revert(add(ret, 32), mload(ret))
                }
            }
        }
    }
}
