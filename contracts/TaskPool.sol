// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IDisputeResolver} from "./interfaces/IDisputeResolver.sol";
import {INodeRegistry} from "./interfaces/INodeRegistry.sol";
import {ITaskPool} from "./interfaces/ITaskPool.sol";
import {Hardware, JobParams, JobStatus, Outcome, PoolParams, UnitStatus} from "./types/Types.sol";
import {
    Availability,
    Books,
    Job,
    JobCore,
    Panel,
    Partial,
    PoolState,
    StepTable,
    StoredUnit,
    Unit
} from "./types/Pool.sol";
import {DataAvailability} from "./libraries/DataAvailability.sol";
import {Disputes} from "./libraries/Disputes.sol";
import {Ledger} from "./libraries/Ledger.sol";
import {Phases} from "./libraries/Phases.sol";
import {Scoring} from "./libraries/Scoring.sol";
import {Segments} from "./libraries/Segments.sol";
import {Units} from "./libraries/Units.sol";
import {Verdicts} from "./libraries/Verdicts.sol";

/// @title TaskPool: escrow, jobs, units, verification and settlement.
/// @notice The entry point and the holder of state and tokens: it checks who may call, moves tokens and emits
///         its own events. The unit state machine (`Units`), the validator slots and verdicts (`Verdicts`), the
///         money (`Ledger`) and the dispute settlement (`Disputes`) are libraries acting on its `PoolState`.
/// @dev The per-unit honest path (claim .. finalize) calls `internal` library functions, inlined here: no call
///      overhead. Job creation and the cold paths (cancel, timeout, no-shows, challenges, dispute settlement,
///      claim-score view) are `external` library functions, deployed once, linked into this bytecode and run by
///      DELEGATECALL on this contract's storage: events still come from this address, and `msg.sender` is still
///      the caller, so those libraries check their callers themselves.
contract TaskPool is ITaskPool, Ownable, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;
    using Ledger for Books;
    using Units for PoolState;
    using Units for StoredUnit;
    using Verdicts for Panel;

    uint8 internal constant SOLVER = 1; // NodeRegistry role bit
    /// @dev Longest protocol window accepted at deployment (also the longest job commit window).
    uint64 internal constant MAX_WINDOW = 30 days;

    /// @inheritdoc ITaskPool
    IERC20 public immutable token;
    /// @inheritdoc ITaskPool
    INodeRegistry public immutable registry;
    /// @inheritdoc ITaskPool
    IDisputeResolver public resolver;
    /// @inheritdoc ITaskPool
    IDisputeResolver public game;
    // Copies of the parameters the honest path reads (no SLOAD); all of them are in `_s.params`.
    uint16 internal immutable _validatorsPerUnit;
    uint64 internal immutable _claimWindow;
    uint64 internal immutable _verdictCommitWindow;
    uint64 internal immutable _revealWindow;
    uint64 internal immutable _challengeWindow;
    uint64 internal immutable _minCommitWindow;
    uint128 internal immutable _validatorFee;
    uint128 internal immutable _validatorBond;
    PoolState internal _s;

    constructor(address token_, address registry_, PoolParams memory params_, address owner_) Ownable(owner_) {
        if (token_ == address(0)) revert InvalidParam("token", 0);
        if (registry_ == address(0)) revert InvalidParam("registry", 0);
        _checkParams(params_);
        token = IERC20(token_);
        registry = INodeRegistry(registry_);
        _validatorsPerUnit = params_.validatorsPerUnit;
        _claimWindow = params_.claimWindow;
        _verdictCommitWindow = params_.verdictCommitWindow;
        _revealWindow = params_.revealWindow;
        _challengeWindow = params_.challengeWindow;
        _minCommitWindow = params_.minCommitWindow;
        _validatorFee = params_.validatorFee;
        _validatorBond = params_.validatorBond;
        _s.params = params_;
        _s.nextJobId = 1;
        _s.nextUnitId = 1;
    }

    /// @dev Refuse parameters that would brick the pool: a committee or liveness share above 100% (every decided
    ///      dispute or close would revert), more validators than the 8-bit verdict counters hold, a zero window
    ///      (the claim score divides by it; a zero reveal or challenge window leaves no time to act), a window
    ///      so long that deadlines could overflow, and free bonds (a free challenge or seat is a free attack).
    function _checkParams(PoolParams memory c) private pure {
        if (c.validatorsPerUnit == 0 || c.validatorsPerUnit > type(uint8).max) {
            revert InvalidParam("validatorsPerUnit", c.validatorsPerUnit);
        }
        if (c.livenessPenaltyBps > 10_000) revert InvalidParam("livenessPenaltyBps", c.livenessPenaltyBps);
        if (c.committeeRewardBps > 10_000) revert InvalidParam("committeeRewardBps", c.committeeRewardBps);
        _checkWindow("claimWindow", c.claimWindow);
        _checkWindow("verdictCommitWindow", c.verdictCommitWindow);
        _checkWindow("revealWindow", c.revealWindow);
        _checkWindow("challengeWindow", c.challengeWindow);
        _checkWindow("minCommitWindow", c.minCommitWindow);
        if (c.validatorBond == 0) revert InvalidParam("validatorBond", 0);
        if (c.challengeBond == 0) revert InvalidParam("challengeBond", 0);
    }

    function _checkWindow(string memory name, uint64 seconds_) private pure {
        if (seconds_ == 0 || seconds_ > MAX_WINDOW) revert InvalidParam(name, seconds_);
    }

    /// @inheritdoc ITaskPool
    function wire(address resolver_, address game_) external onlyOwner {
        if (address(resolver) != address(0)) revert AlreadyWired();
        resolver = IDisputeResolver(resolver_);
        game = IDisputeResolver(game_);
    }

    // ---------------------------------------------------------------- jobs

    /// @inheritdoc ITaskPool
    function submitJob(JobParams calldata p) external nonReentrant returns (uint256 jobId) {
        // INVARIANT: no escrow is taken before a resolver can settle disputes.
        if (address(resolver) == address(0)) revert NotWired();
        uint256 budget;
        (jobId, budget) = Units.create(_s, p, _minCommitWindow, _validatorsPerUnit, _validatorFee);
        token.safeTransferFrom(msg.sender, address(this), budget);
        emit JobSubmitted(jobId, msg.sender, p.specHash, p.specCid, budget);
        Phases.openFirst(_s, jobId);
    }

    /// @inheritdoc ITaskPool
    function cancelJob(uint256 jobId) external nonReentrant {
        uint256 refund = Units.cancel(_s, registry, jobId);
        emit JobCancelled(jobId, refund);
    }

    // ---------------------------------------------------------------- solving

    /// @inheritdoc ITaskPool
    function claim(uint256 unitId) external {
        StoredUnit storage u = _s.unitIn(unitId, UnitStatus.Open);
        Job storage j = _s.jobs[u.jobId];
        Hardware memory hw = _checkClaimer(unitId, msg.sender, u, j.p);
        if (j.p.exact) Units.bindClass(_s, registry, unitId, msg.sender);
        // INVARIANT: collateral is locked from free stake before the unit is assigned.
        registry.lock(msg.sender, j.p.collateralPerUnit);
        u.assign(unitId, msg.sender, hw.pricePerUnit, j.commitWindow);
    }

    /// @inheritdoc ITaskPool
    function timeoutClaim(uint256 unitId) external nonReentrant {
        Units.timeOut(_s, registry, unitId);
    }

    /// @inheritdoc ITaskPool
    function commit(
        uint256 unitId,
        bytes32 checkpointRoot,
        bytes32 finalStateHash,
        string calldata manifestCid
    ) external {
        StoredUnit storage u = _s.unitIn(unitId, UnitStatus.Assigned);
        // INVARIANT: only the unit's solver commits its work.
        if (msg.sender != u.solver) revert NotSolver(unitId, msg.sender);
        Units.commit(_s, u, unitId, checkpointRoot, finalStateHash, manifestCid);
    }

    /// @inheritdoc ITaskPool
    /// @dev `Units.commitPartial` checks the caller, the state and the deadline (linked: no honest-path bytes).
    function commitPartial(uint256 unitId, bytes32 partialRoot, uint32 segments, string calldata manifestCid) external {
        Units.commitPartial(_s, unitId, partialRoot, segments, manifestCid);
    }

    // ---------------------------------------------------------------- verification

    /// @inheritdoc ITaskPool
    function drawValidators(uint256 unitId) public {
        StoredUnit storage u = _s.unitIn(unitId, UnitStatus.Committed);
        // INVARIANT: validators are drawn once per commitment (a reopened unit is drawn again).
        if (u.drawn) revert AlreadyDrawn(unitId);
        uint256 base = u.seedBlock + 1;
        // INVARIANT: the seed comes from a block mined after the commitment.
        if (block.number <= base) revert RandomnessNotReady(unitId, base + 1);
        if (block.number - base > 256) {
            Units.seedExpired(_s, registry, unitId); // re-target, or reopen without a second roll
            return;
        }
        bytes32 seed = keccak256(abi.encode(blockhash(base), unitId));
        u.seed = seed;
        u.drawn = true;
        Job storage j = _s.jobs[u.jobId];
        address[] memory picked = _s.panels[unitId].draw(
            registry,
            seed,
            Verdicts.candidateSet(_s, j.p, unitId),
            u.solver,
            _validatorsPerUnit,
            _validatorBond,
            u.frozenAt
        );
        uint256 count = picked.length;
        u.nValidators = uint16(count);
        uint64 commitDeadline = uint64(block.timestamp) + _verdictCommitWindow;
        u.commitDeadline = commitDeadline;
        uint256 segs = u.shard == Units.AGGREGATION ? 1 : j.p.segments;
        uint256[] memory segments = new uint256[](count);
        for (uint256 i; i < count; ++i) {
            segments[i] = Segments.segmentIndex(seed, i, segs, count);
        }
        emit ValidatorsDrawn(unitId, seed, picked, segments, commitDeadline, commitDeadline + _revealWindow);
        // INVARIANT: never Verified with nobody drawn. Wait for validators, with randomness from a later block.
        if (count == 0) Units.noneDrawn(_s, registry, unitId);
    }

    /// @inheritdoc ITaskPool
    function commitVerdict(uint256 unitId, bytes32 h) external {
        StoredUnit storage u = _s.unitIn(unitId, UnitStatus.Committed);
        if (!u.drawn) drawValidators(unitId);
        Panel storage v = _s.panels[unitId];
        uint256 i = v.indexOf(unitId, u.nValidators, msg.sender);
        v.seal(u, unitId, i, h);
    }

    /// @inheritdoc ITaskPool
    function revealVerdict(
        uint256 unitId,
        bool accept,
        bytes32 transcriptHash,
        bytes32 salt,
        bytes32 startHash,
        bytes32 endHash,
        bytes32 transcriptCommit,
        bytes32[] calldata proof
    ) external nonReentrant {
        StoredUnit storage u = _s.units[unitId];
        // A dispute opened by another validator's reject does not silence the rest: every sealed verdict
        // can still be revealed, and is judged when the dispute settles (an unrevealed one is not free).
        if (u.status != UnitStatus.Disputed) u = _s.unitIn(unitId, UnitStatus.Committed);
        if (!u.drawn) revert NotDrawn(unitId);
        Panel storage v = _s.panels[unitId];
        uint256 i = v.indexOf(unitId, u.nValidators, msg.sender);
        if (v.stateOf(i) == Verdicts.ANSWERED) {
            // The solver answered this validator's unavailability report: its real verdict, by `revealBy`.
            uint64 by = _s.avail[unitId].revealBy;
            if (block.timestamp > by) revert DeadlinePassed(unitId, by);
        } else {
            v.checkReveal(u, unitId, i, accept, transcriptHash, salt, _revealWindow);
            // A sealed "unavailable" is a reject without a proof: the solver must answer it (DataAvailability).
            if (!accept && transcriptHash == Verdicts.UNAVAILABLE_MARK) {
                DataAvailability.report(_s, unitId, i);
                return;
            }
        }
        uint256 seg = Segments.segmentIndex(u.seed, i, _s.numSegments(u), u.nValidators);
        // INVARIANT: a verdict is about the committed segment the seed assigned to this validator.
        if (!Segments.verify(u.checkpointRoot, seg, startHash, endHash, transcriptCommit, proof)) {
            revert InvalidSegmentProof(unitId, seg);
        }
        // INVARIANT: accepting requires the transcript preimage, which only a replayer knows.
        if (accept && Segments.commitOfTranscript(transcriptHash) != transcriptCommit) {
            revert TranscriptMismatch(unitId, transcriptCommit);
        }
        v.setState(i, accept ? Verdicts.ACCEPT : Verdicts.REJECT);
        ++u.revealed;
        emit VerdictRevealed(unitId, msg.sender, accept, transcriptHash);
        if (u.status == UnitStatus.Committed) _afterReveal(unitId, u, accept, seg);
    }

    /// @inheritdoc ITaskPool
    function closeVerdicts(uint256 unitId) external nonReentrant {
        DataAvailability.close(_s, registry, unitId);
    }

    /// @inheritdoc ITaskPool
    /// @dev The answer travels ABI-encoded and is decoded by the library: forwarding its dynamic structs
    ///      typed would cost this contract's size budget some 300 bytes.
    function answerUnavailable(uint256 unitId, uint256 slot, bytes calldata answer) external {
        DataAvailability.answer(_s, unitId, slot, answer);
    }

    /// @inheritdoc ITaskPool
    function claimUnavailable(uint256 unitId) external {
        DataAvailability.claim(_s, unitId);
    }

    /// @inheritdoc ITaskPool
    function commitChallenge(uint256 unitId, bytes32 h) external {
        Disputes.seal(_s, registry, unitId, h);
    }

    /// @inheritdoc ITaskPool
    /// @dev `Disputes.challenge` checks the seal, the role, the window and the segment and books the bond; the
    ///      pool then pulls the bond and opens the dispute.
    function challenge(uint256 unitId, uint256 segmentIndex, bytes32 salt) external nonReentrant {
        uint256 bond = Disputes.challenge(_s, registry, unitId, segmentIndex, salt);
        token.safeTransferFrom(msg.sender, address(this), bond);
        Disputes.open(_s, resolverOf(unitId), unitId, msg.sender, segmentIndex);
    }

    // ---------------------------------------------------------------- settlement

    /// @inheritdoc ITaskPool
    function finalize(uint256 unitId) external nonReentrant {
        StoredUnit storage u = _s.unitIn(unitId, UnitStatus.Verified);
        // INVARIANT: escrow pays out only after the challenge window closes.
        if (block.timestamp <= u.deadline) revert DeadlineNotReached(unitId, u.deadline);
        _s.settle(registry, unitId, u, _validatorBond, _validatorFee);
    }

    /// @inheritdoc ITaskPool
    function onDisputeResolved(uint256 unitId, Outcome outcome, address[] calldata winners) external nonReentrant {
        // INVARIANT: only the unit's own dispute resolver moves a disputed unit's money.
        if (msg.sender != address(resolverOf(unitId))) revert NotResolver(msg.sender);
        Disputes.settle(_s, registry, unitId, outcome, winners);
    }

    /// @inheritdoc ITaskPool
    function claimCredit() external nonReentrant {
        uint256 amount = _s.books.withdraw(msg.sender);
        token.safeTransfer(msg.sender, amount);
        emit CreditClaimed(msg.sender, amount);
    }

    // ---------------------------------------------------------------- views

    /// @inheritdoc ITaskPool
    function longestExposure() external view returns (uint64) {
        PoolParams storage c = _s.params;
        uint64 longest = resolver.maxDuration();
        if (address(game) != address(0)) {
            uint64 g = game.maxDuration();
            if (g > longest) longest = g;
        }
        return c.verdictCommitWindow + c.revealWindow + c.challengeWindow + longest;
    }

    /// @inheritdoc ITaskPool
    function params()
        external
        view
        returns (
            uint16 validatorsPerUnit,
            uint16 livenessPenaltyBps,
            uint16 committeeRewardBps,
            uint64 claimWindow,
            uint64 verdictCommitWindow,
            uint64 revealWindow,
            uint64 challengeWindow,
            uint64 minCommitWindow,
            uint128 validatorFee,
            uint128 validatorBond,
            uint128 challengeBond
        )
    {
        PoolParams storage c = _s.params;
        return (
            c.validatorsPerUnit,
            c.livenessPenaltyBps,
            c.committeeRewardBps,
            c.claimWindow,
            c.verdictCommitWindow,
            c.revealWindow,
            c.challengeWindow,
            c.minCommitWindow,
            c.validatorFee,
            c.validatorBond,
            c.challengeBond
        );
    }

    /// @inheritdoc ITaskPool
    function nextJobId() external view returns (uint256) {
        return _s.nextJobId;
    }

    /// @inheritdoc ITaskPool
    function nextUnitId() external view returns (uint256) {
        return _s.nextUnitId;
    }

    /// @inheritdoc ITaskPool
    function jobState(
        uint256 jobId
    )
        external
        view
        returns (address requester, JobStatus status, uint32 round, bool aggPhase, uint32 pending, uint256 escrow)
    {
        Job storage j = _s.jobs[jobId];
        return (j.requester, j.status, j.round, j.aggPhase, j.pending, j.escrow);
    }

    /// @inheritdoc ITaskPool
    function phaseState(uint256 jobId) external view returns (uint32 settling, uint32 unsettled, uint32 live) {
        Job storage j = _s.jobs[jobId];
        return (j.settling, j.unsettled, j.live);
    }

    /// @inheritdoc ITaskPool
    function commitBy(uint256 unitId) external view returns (uint64) {
        StoredUnit storage u = _s.units[unitId];
        return u.status == UnitStatus.Assigned ? Units.commitBy(_s.jobs[u.jobId], u) : 0;
    }

    /// @inheritdoc ITaskPool
    function resolverOf(uint256 unitId) public view returns (IDisputeResolver) {
        StoredUnit storage u = _s.units[unitId];
        // INVARIANT: the contract judges a repro training unit of a job with a step table; the committee every
        // other (an exact unit, an aggregation, a job without a table), or every unit when no game is wired.
        bool judged = address(game) != address(0) && u.shard != Units.AGGREGATION && _s.steps[u.jobId].root != 0;
        return judged ? game : resolver;
    }

    /// @inheritdoc ITaskPool
    function getUnit(uint256 unitId) external view returns (Unit memory x) {
        return _s.toUnit(unitId);
    }

    /// @inheritdoc ITaskPool
    function numSegments(uint256 unitId) external view returns (uint256) {
        return _s.numSegments(_s.units[unitId]);
    }

    /// @inheritdoc ITaskPool
    function partialOf(uint256 unitId) external view returns (address solver, bytes32 root, uint32 segments) {
        Partial storage p = _s.partials[unitId];
        return (p.solver, p.root, p.segments);
    }

    /// @inheritdoc ITaskPool
    function stepTable(uint256 jobId) external view returns (bytes32 root, uint32 interval) {
        StepTable storage t = _s.steps[jobId];
        return (t.root, t.interval);
    }

    /// @inheritdoc ITaskPool
    function claimScore(address node, uint256 unitId) external view returns (uint256 score, uint256 required) {
        return Units.claimScore(_s, registry, node, unitId);
    }

    /// @inheritdoc ITaskPool
    function availability(uint256 unitId) external view returns (Availability memory) {
        return _s.avail[unitId];
    }

    /// @inheritdoc ITaskPool
    function verdictState(uint256 unitId, uint256 i) external view returns (uint8) {
        return _s.panels[unitId].stateOf(i);
    }

    /// @inheritdoc ITaskPool
    function verdictCommits(uint256 unitId, uint256 i) external view returns (bytes32) {
        return _s.panels[unitId].commits[i];
    }

    /// @inheritdoc ITaskPool
    function credit(address account) external view returns (uint256) {
        return _s.books.credit[account];
    }

    /// @inheritdoc ITaskPool
    function totalEscrow() external view returns (uint256) {
        return _s.books.totalEscrow;
    }

    /// @inheritdoc ITaskPool
    function totalBonds() external view returns (uint256) {
        return _s.books.totalBonds;
    }

    /// @inheritdoc ITaskPool
    function totalCredit() external view returns (uint256) {
        return _s.books.totalCredit;
    }

    // ---------------------------------------------------------------- internal

    /// @dev Role, jail, hardware, price and claim-score checks of `claim` (one registry call).
    function _checkClaimer(
        uint256 unitId,
        address s,
        StoredUnit storage u,
        JobCore storage p
    ) internal view returns (Hardware memory hw) {
        uint8 roles;
        bool jailed;
        uint32 c;
        uint32 m;
        uint32 f;
        (roles, jailed, hw, c, m, f) = registry.claimInfo(s);
        // INVARIANT: only a registered, unjailed solver of the job's device class and needs takes a unit.
        if (roles & SOLVER == 0) revert MissingRole(s, SOLVER);
        if (jailed) revert NodeJailed(s);
        if (hw.deviceClass != p.deviceClass || hw.memoryMb < p.minMemoryMb || hw.throughput < p.minThroughput) {
            revert HardwareMismatch(s, unitId);
        }
        uint128 maxPrice = p.maxPricePerUnit;
        if (hw.pricePerUnit > maxPrice) revert PriceTooHigh(s, hw.pricePerUnit, maxPrice);
        uint256 score = Scoring.ofNode(c, m, f, hw, maxPrice, p.minThroughput);
        uint256 req = Scoring.required(u.openedAt, _claimWindow, block.timestamp);
        if (score < req) revert ScoreTooLow(s, score, req);
    }

    /// @dev A reject opens a dispute at once; the last accept verifies the unit.
    function _afterReveal(uint256 unitId, StoredUnit storage u, bool accept, uint256 seg) internal {
        if (!accept) {
            Disputes.open(_s, resolverOf(unitId), unitId, msg.sender, seg);
        } else if (u.revealed == u.nValidators) {
            _s.verify(u, unitId, _challengeWindow);
        }
    }
}
