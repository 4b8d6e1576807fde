// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IGensynToken} from "./interfaces/IGensynToken.sol";

/// @title GensynToken: ERC-20 + permit with an owner-only faucet mint.
contract GensynToken is ERC20, ERC20Permit, Ownable, IGensynToken {
    constructor(address owner_) ERC20("Gensyn Test Token", "GSYN") ERC20Permit("Gensyn Test Token") Ownable(owner_) {}

    /// @inheritdoc IGensynToken
    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}
