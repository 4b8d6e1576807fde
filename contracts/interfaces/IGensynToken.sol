// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title The protocol's ERC-20 (a faucet token on local chains).
interface IGensynToken is IERC20 {
    /// @notice Mint `amount` to `to`; owner only (local faucet).
    function mint(address to, uint256 amount) external;
}
