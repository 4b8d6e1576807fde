// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ITaskPool} from "../interfaces/ITaskPool.sol";
import {Books, Job} from "../types/Pool.sol";

/// @title Ledger: the pool's escrow, challenger bonds and pull credit.
/// @dev Every money movement inside the pool goes through these functions, which keep
///      totalEscrow + totalBonds + totalCredit equal to the pool's token balance. Tokens themselves only
///      move in TaskPool (deposits in, `claimCredit` out). Amounts are bounded by the token supply;
///      casts are checked where a sum is unbounded.
library Ledger {
    /// @dev Escrow a new job's budget (the caller has checked budget <= type(uint128).max and pulls the tokens).
    function escrow(Books storage b, Job storage j, uint256 budget) internal {
        j.escrow = uint128(budget);
        b.totalEscrow += uint128(budget);
    }

    /// @dev Pay `amount` out of job `j`'s escrow to `to`'s credit.
    function pay(Books storage b, Job storage j, address to, uint256 amount) internal {
        // INVARIANT: a job pays out at most what it escrowed (checked in 256 bits, reverts otherwise).
        j.escrow = uint128(uint256(j.escrow) - amount);
        b.totalEscrow -= uint128(amount); // amount <= j.escrow <= totalEscrow
        addCredit(b, to, amount);
    }

    /// @dev Return `amount` of job `j`'s escrow to its requester.
    function refund(Books storage b, Job storage j, uint256 amount) internal {
        pay(b, j, j.requester, amount);
    }

    /// @dev Hold a challenger's bond (the caller pulls the tokens).
    function holdBond(Books storage b, uint256 bond) internal {
        b.totalBonds += uint128(bond); // bond = challengeBond (uint128)
    }

    /// @dev Release a held bond; the caller credits it (back to the challenger or into a pot).
    function releaseBond(Books storage b, uint256 bond) internal {
        // INVARIANT: a bond leaves the bond pool only into credit, in the same transaction.
        b.totalBonds -= uint128(bond); // bond = challengeBond (uint128)
    }

    /// @dev Credit `amount` to `account` (claimed later with `claimCredit`).
    function addCredit(Books storage b, address account, uint256 amount) internal {
        if (amount == 0) return;
        b.credit[account] += amount;
        b.totalCredit = SafeCast.toUint128(uint256(b.totalCredit) + amount);
        emit ITaskPool.Credited(account, amount);
    }

    /// @dev Zero `account`'s credit and return it; the caller transfers the tokens.
    function withdraw(Books storage b, address account) internal returns (uint256 amount) {
        amount = b.credit[account];
        // INVARIANT: credit leaves only to its owner, once (zeroed before the pool transfers it).
        if (amount == 0) revert ITaskPool.NoCredit(account);
        b.credit[account] = 0;
        b.totalCredit -= uint128(amount); // amount <= totalCredit
    }
}
