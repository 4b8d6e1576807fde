// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice A node's declared hardware; `deviceClass` must match for exact replay.
struct Hardware {
    uint8 deviceClass;
    uint32 memoryMb;
    uint64 throughput;
    uint128 pricePerUnit;
}

/// @notice What a requester submits.
struct JobParams {
    bytes32 specHash;
    string specCid;
    uint32 rounds;
    uint32 shards;
    uint32 stepsPerUnit;
    uint32 checkpointInterval;
    uint8 deviceClass;
    uint32 minMemoryMb;
    uint64 minThroughput;
    uint128 maxPricePerUnit;
    uint128 collateralPerUnit;
    uint64 commitWindow; // seconds a solver has between claim and commit
    uint8 verification; // VERIFY_REPRO (0): any machine; VERIFY_EXACT (1): only within the solver's replay class
    /// @dev Repro jobs only: the root of the job's step table (each training step's program and inputs,
    ///      docs/formats.md section 11), what a dispute game judges a step against; zero for none.
    bytes32 stepsRoot;
}

/// @dev `JobParams.verification`: `repro` units use the project's deterministic kernels, bit-exact on any
/// machine, so anyone solves, validates and judges them; `exact` units use stock kernels, bit-exact only
/// between machines of one replay class, so only that class does.
uint8 constant VERIFY_REPRO = 0;
uint8 constant VERIFY_EXACT = 1;

enum JobStatus {
    None,
    Active,
    Completed,
    Cancelled
}

enum UnitStatus {
    None,
    Open,
    Assigned,
    Committed,
    Verified,
    Disputed,
    Final,
    Cancelled,
    Voided
}

/// @notice Outcome reported by a dispute resolver.
enum Outcome {
    None,
    SolverHonest,
    SolverFraud,
    NoQuorum
}

/// @notice Protocol parameters of a TaskPool (fixed at deployment).
struct PoolParams {
    uint16 validatorsPerUnit; // validators drawn per unit (default 2)
    uint16 livenessPenaltyBps; // share taken of a no-show validator's bond and of a timed-out solver's collateral
    uint16 committeeRewardBps; // share of a dispute's slashed pot paid to the winning voters
    uint64 claimWindow; // seconds for the required claim score to decay from 10000 to 0
    uint64 verdictCommitWindow; // seconds validators have to commit verdicts after the draw
    uint64 revealWindow; // seconds after the commit window to reveal
    uint64 challengeWindow; // seconds after verification during which challenges are accepted
    uint64 minCommitWindow; // lower bound on a job's commitWindow
    uint128 validatorFee; // paid per accepted (or correct) verdict
    uint128 validatorBond; // stake locked per drawn validator
    uint128 challengeBond; // tokens a challenger posts
}

/// @notice One segment's leaf of a unit's checkpoint commitment with its Merkle proof: what a solver posts to
///         answer an unavailability report (`ITaskPool.answerUnavailable`).
struct SegmentLeaf {
    uint256 index;
    bytes32 startHash;
    bytes32 endHash;
    bytes32 transcriptCommit;
    bytes32[] proof;
}
