// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {JobStatus, PoolParams, UnitStatus} from "./Types.sol";

/// @notice Full unit state as `ITaskPool.getUnit` returns it (the storage form is `StoredUnit`).
struct Unit {
    uint256 jobId;
    uint32 round;
    uint32 shard; // type(uint32).max for aggregation
    UnitStatus status;
    address solver;
    uint128 price;
    uint64 openedAt;
    uint64 deadline; // Assigned: commit deadline; Verified: challenge end
    uint64 seedBlock; // randomness comes from blockhash(seedBlock + 1)
    uint64 commitDeadline;
    uint64 revealDeadline;
    bool drawn;
    uint8 committed;
    uint8 revealed;
    bytes32 checkpointRoot;
    bytes32 seed;
    address opener;
    address challenger;
    uint256 disputeId;
    address[] validators;
}

/// @dev The job parameters the pool needs, packed (the spec hash/CID only live in the JobSubmitted event).
struct JobCore {
    uint32 rounds;
    uint32 shards;
    uint32 segments; // stepsPerUnit / checkpointInterval
    uint8 deviceClass;
    bool exact; // verification == VERIFY_EXACT (slot 0's spare bits: read with deviceClass, no extra SLOAD)
    uint32 minMemoryMb;
    uint64 minThroughput;
    uint32 unopened; // units not yet created
    uint128 maxPricePerUnit;
    uint128 collateralPerUnit;
}

/// @dev 5 storage slots: (requester,status,round,aggPhase,pending,early,uncommitted) (p: 2 slots)
///      (commitWindow,escrow) (settling,unsettled,live,armedAt). A job's phases are its rounds' training units and,
///      when sharded, each round's aggregation unit, numbered in order (`Phases.phaseOf`); where each starts is
///      `PoolState.phaseStart`. The newest armed phase is (round, aggPhase); the next one opens for claims once all
///      its units are Committed (`early`) and is armed once they are all Verified (pipelined rounds), while payment
///      goes phase by phase from `settling` (docs/contracts.md, "Pipelined rounds"). This order keeps what the
///      honest path writes together (slot 0 at commit and verify, slot 4 at finalize).
// solhint-disable-next-line gas-struct-packing
struct Job {
    address requester;
    JobStatus status;
    uint32 round; // of the newest armed phase
    bool aggPhase; // the newest armed phase is its round's aggregation
    uint32 pending; // units of the newest armed phase not yet Verified
    bool early; // the phase after the newest armed one is open for claims, not yet armed (`Phases`)
    uint8 uncommitted; // units of the newest armed phase not yet Committed (<= MAX_SHARDS)
    JobCore p;
    uint64 commitWindow;
    uint128 escrow;
    uint32 settling; // the oldest phase with a unit not yet Final: only its units may be finalized
    uint32 unsettled; // units of phase `settling` not yet Final
    uint32 live; // units opened and not yet Final, Cancelled or Voided (a cancelled job refunds when none is)
    uint64 armedAt; // when the newest armed phase was armed: a unit claimed before has its commit window from here
}

/// @dev Storage form of a unit (`getUnit` rebuilds `Unit`). An honest lifecycle touches 5 slots:
///      s0 (jobId..openedAt) at open, s1 (solver, deadline) and s2 (price, seedBlock, commitDeadline) at claim,
///      checkpointRoot at commit, seed at the draw. revealDeadline = commitDeadline + revealWindow (not stored).
///      Validators live in the unit's `Panel`, one slot each; their count in s0.
struct StoredUnit {
    uint64 jobId;
    uint32 round;
    uint32 shard; // type(uint32).max for aggregation
    UnitStatus status;
    bool drawn;
    uint8 committed;
    uint8 revealed;
    uint16 nValidators;
    uint16 disputedSegment; // the segment a dispute is about (slot 0's spare bits: no extra SSTORE)
    uint64 openedAt;
    address solver;
    uint64 deadline; // Assigned: commit deadline; Verified: challenge end
    /// @dev Block of the claim: validator candidates are those in the set by then, whatever re-targets the seed
    ///      later (so flooding the set to make a draw fail never makes the flood eligible). In slot 1's spare
    ///      bits, written with the solver: no extra SSTORE. uint32 holds block numbers for a century at 1 s.
    uint32 frozenAt;
    uint128 price;
    uint64 seedBlock; // randomness comes from blockhash(seedBlock + 1)
    uint64 commitDeadline;
    bytes32 checkpointRoot;
    bytes32 seed;
    address opener;
    address challenger;
    uint256 disputeId;
}

/// @dev A solver's latest partial commitment of a unit (`Units.commitPartial`): the Merkle root of the leaves of
///      its first `segments` segments, by `solver`. Kept apart from `StoredUnit` so the honest path never reads
///      or writes it, and kept across a reopening: whoever claims the unit next may resume from it.
struct Partial {
    bytes32 root;
    address solver;
    uint32 segments;
}

/// @dev A repro job's step table (`JobParams.stepsRoot`) and its steps per segment: what the dispute game
///      reads. Written only for a job that has one, so other jobs pay no SSTORE for it.
struct StepTable {
    bytes32 root;
    uint32 interval;
}

/// @dev The drawn validators of one unit and their sealed verdicts.
struct Panel {
    /// @dev Slot i: validator address in the low 160 bits, verdict state (`Verdicts.NONE`..) in bits 160..167.
    mapping(uint256 => uint256) slots;
    /// @dev Slot i's sealed verdict keccak256(abi.encode(unitId, validator, accept, transcriptHash, salt)).
    mapping(uint256 => bytes32) commits;
}

/// @dev The pool's money. Escrow and credit totals share a slot, so a settlement touches one totals slot.
///      Invariant: the pool's token balance == totalEscrow + totalBonds + totalCredit.
struct Books {
    uint128 totalEscrow;
    uint128 totalCredit;
    uint128 totalBonds; // challenger bonds held
    mapping(address => uint256) credit;
}

/// @notice Data-availability state of a unit's current attempt (`ITaskPool.availability`; docs/contracts.md,
///         "Data availability"). One slot; deleted when the unit reopens.
struct Availability {
    uint64 answerBy; // the solver answers every pending report (or the requester's claim) until then
    uint64 revealBy; // validators whose report was answered reveal their real verdicts until then
    uint64 resume; // requester claim: the challenge end it suspended
    uint8 pending; // validator reports not answered yet
    bool claimed; // the requester raised its claim (once per attempt)
    bool claimPending; // ... and the solver has not answered it yet
}

/// @dev Everything TaskPool stores; its libraries (inlined or linked) act on this one struct.
struct PoolState {
    /// @dev Fixed at deployment. The cold paths (linked libraries) and views read them here; the honest
    ///      path reads TaskPool's immutable copies of those it needs (no SLOAD).
    PoolParams params;
    uint64 nextJobId;
    uint64 nextUnitId;
    mapping(uint256 => Job) jobs;
    mapping(uint256 => StoredUnit) units;
    mapping(uint256 => Panel) panels;
    Books books;
    /// @dev Sealed challenges: keccak256(abi.encode(unitId, challenger, segmentIndex, salt)) -> block sealed.
    mapping(bytes32 => uint256) challengeSeals;
    /// @dev Latest partial commitment per unit (2 slots; written only by `commitPartial`).
    mapping(uint256 => Partial) partials;
    /// @dev Exact units only: the solver's replay class, bound at claim. Validators and the dispute committee
    ///      are drawn from that class's set; a later class change by the solver changes nothing. Repro units
    ///      never write it (no SSTORE on their honest path).
    mapping(uint256 => bytes32) unitClass;
    mapping(uint256 => Availability) avail;
    /// @dev Repro jobs with a step table only (`StepTable`).
    mapping(uint256 => StepTable) steps;
    /// @dev jobId -> phase -> id of its first unit (the phase's latest opening: a voided phase opens anew).
    mapping(uint256 => mapping(uint256 => uint256)) phaseStart;
    /// @dev Units voided while a dispute over them was in flight: the dispute settles its liars as usual, then
    ///      the unit ends Voided instead of being paid or reopened.
    mapping(uint256 => bool) voided;
}
