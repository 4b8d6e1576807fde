// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice A dispute over a unit, as the committee keeps it (`DisputeCommittee.getDispute` returns it).
/// @dev A dispute runs in rounds: round 0 seats `committeeSize` members, each escalation doubles it. The
///      phase fields (`seedBlock` .. `revealed`) are the current round's; the weights add up over all rounds.
struct Dispute {
    uint256 unitId;
    address solver;
    address opener;
    uint8 deviceClass;
    uint8 round; // current round, 0-based
    bool drawn; // the current round's seats are drawn
    bool resolved;
    uint32 candidates; // validators of the set when the dispute opened: later entrants are never drawn
    uint64 openBlock;
    uint64 seedBlock; // the current round's seed is blockhash(seedBlock), a block after the round began
    uint64 commitDeadline; // current round: draw and commit until then
    uint64 deadline; // current round: reveal until then; `resolve` always succeeds after it
    uint16 roundFirst; // index in `members` of the current round's first seat
    uint16 committed; // current round's sealed votes
    uint16 revealed; // current round's revealed votes
    uint256 yesWeight; // revealed "solver honest" weight, all rounds
    uint256 noWeight; // revealed "fraud" weight, all rounds
    uint256 seatedWeight; // weight locked at the draws, all rounds
    /// @dev An exact unit's: its solver's replay class, the only set its committee is drawn from. Zero for a repro
    ///      unit (drawn from `deviceClass`'s set), which never writes this slot.
    bytes32 replayClass;
    address[] members; // every seat of every round, in draw order
}

/// @notice One member's seat in a dispute (`DisputeCommittee.seatOf`).
struct Seat {
    uint8 round; // round + 1 it was drawn in; 0 = not seated
    uint8 vote; // 0 = not revealed, 1 = solver honest, 2 = fraud
    bool committed;
    bytes32 commitment; // keccak256(abi.encode(disputeId, member, solverHonest, salt))
}
