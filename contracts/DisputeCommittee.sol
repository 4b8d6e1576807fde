// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IDisputeCommittee} from "./interfaces/IDisputeCommittee.sol";
import {IDisputeResolver} from "./interfaces/IDisputeResolver.sol";
import {DRAW_WEIGHT_SCALE, INodeRegistry} from "./interfaces/INodeRegistry.sol";
import {ITaskPool} from "./interfaces/ITaskPool.sol";
import {Outcome} from "./types/Types.sol";
import {Unit} from "./types/Pool.sol";
import {Dispute, Seat} from "./types/Dispute.sol";

/// @title DisputeCommittee: a committee of staked validators, drawn by stake, replays the disputed segment and
///        votes in sealed commit-reveal rounds; a round without a decision escalates to a committee twice as large.
/// @notice Stand-in for the on-chain bisection referee, for `exact` units. Every seat locks `memberBond` of its
///         holder's free stake at the draw; that lock is the seat's weight, so stake added after the draw, or
///         unbonded (it cannot be: it is locked), changes nothing. A vote against the outcome loses the whole
///         lock, a missing vote `MISS_PENALTY_BPS` of it; what is slashed goes to the members who voted with the
///         outcome. Between transactions this contract holds no tokens: TaskPool moves the unit's money.
contract DisputeCommittee is IDisputeCommittee, Ownable {
    using SafeERC20 for IERC20;

    /// @notice Largest first-round committee: the last round seats 4x it, and a round's draw and the final
    ///         settlement walk every seat (7 x 16 = 112 seats keeps `resolve` far under a 30M block).
    uint256 public constant MAX_COMMITTEE_SIZE = 16;
    /// @notice Rounds a dispute can run: the first and two escalations (sizes 1x, 2x, 4x).
    uint8 public constant MAX_ROUNDS = 3;
    /// @notice Share of the locked stake a member loses for not revealing: a fault, cheaper than a wrong vote
    ///         but never free (staying silent to stall a decision costs stake and only escalates).
    uint256 public constant MISS_PENALTY_BPS = 5000;
    /// @dev Random picks per seat wanted before the sweep (bounds the draw's gas whatever the set's size).
    uint256 internal constant ATTEMPTS_PER_SEAT = 8;
    /// @dev Most candidates the sweep after the random picks visits.
    uint256 internal constant SWEEP_LIMIT = 64;
    /// @dev Longest phase accepted: keeps `maxDuration` and every deadline far inside uint64.
    uint64 internal constant MAX_PERIOD = 30 days;

    INodeRegistry public immutable registry;
    IERC20 internal immutable _token;
    ITaskPool public taskPool;
    uint8 public immutable committeeSize;
    /// @notice Commit phase of a round (seconds from the round's start; the draw happens inside it).
    uint64 public immutable votingPeriod;
    /// @notice Reveal phase of a round (seconds after the commit phase).
    uint64 public immutable revealPeriod;
    /// @notice Stake each seat locks at the draw: its vote weight and what a wrong vote loses.
    uint256 public immutable memberBond;
    uint256 public nextDisputeId = 1;
    mapping(uint256 => Dispute) internal _disputes;
    mapping(uint256 => mapping(address => Seat)) internal _seats;

    constructor(
        address registry_,
        uint8 committeeSize_,
        uint64 votingPeriod_,
        uint64 revealPeriod_,
        uint256 memberBond_,
        address owner_
    ) Ownable(owner_) {
        if (registry_ == address(0)) revert InvalidCommitteeParam("registry", 0);
        if (committeeSize_ == 0 || committeeSize_ > MAX_COMMITTEE_SIZE) {
            revert InvalidCommitteeParam("committeeSize", committeeSize_);
        }
        if (votingPeriod_ == 0 || votingPeriod_ > MAX_PERIOD)
            revert InvalidCommitteeParam("votingPeriod", votingPeriod_);
        if (revealPeriod_ == 0 || revealPeriod_ > MAX_PERIOD)
            revert InvalidCommitteeParam("revealPeriod", revealPeriod_);
        // A bond above the 128-bit stake amounts could never be locked.
        if (memberBond_ == 0 || memberBond_ > type(uint128).max)
            revert InvalidCommitteeParam("memberBond", memberBond_);
        registry = INodeRegistry(registry_);
        _token = IERC20(INodeRegistry(registry_).token());
        committeeSize = committeeSize_;
        votingPeriod = votingPeriod_;
        revealPeriod = revealPeriod_;
        memberBond = memberBond_;
    }

    /// @notice Set the task pool allowed to open disputes (owner, once).
    function wire(address taskPool_) external onlyOwner {
        if (address(taskPool) != address(0)) revert AlreadyWired();
        if (taskPool_ == address(0)) revert InvalidCommitteeParam("taskPool", 0);
        taskPool = ITaskPool(taskPool_);
    }

    /// @inheritdoc IDisputeResolver
    function openDispute(
        uint256 unitId,
        uint256, // segment: every member replays the disputed segment off-chain
        uint8 deviceClass,
        bytes32 replayClass,
        address solver,
        address opener
    ) external returns (uint256 id) {
        if (msg.sender != address(taskPool)) revert NotTaskPool(msg.sender);
        id = nextDisputeId++;
        Dispute storage d = _disputes[id];
        d.unitId = unitId;
        d.solver = solver;
        d.opener = opener;
        d.deviceClass = deviceClass;
        if (replayClass != 0) d.replayClass = replayClass; // a repro dispute writes no extra slot
        d.openBlock = uint64(block.number);
        // The candidate set and its weights are frozen at the opening, before the randomness exists: members that
        // joined, or whose stake moved, after `openBlock` are skipped by the draw (`_candidate`).
        // INVARIANT: an exact unit's committee comes from its solver's replay class only (`_setOf`).
        d.candidates = uint32(registry.validatorCountIn(_setOf(d)));
        _startRound(d, 0);
        emit DisputeOpened(id, unitId, solver, opener, d.commitDeadline);
    }

    /// @inheritdoc IDisputeCommittee
    function drawCommittee(uint256 id) public {
        Dispute storage d = _open(id);
        if (d.drawn) return;
        // INVARIANT: the seed is the hash of a block mined after the round began, never one known at its start.
        if (block.number <= d.seedBlock) revert TooEarly(id, block.number);
        if (block.timestamp > d.commitDeadline) revert VotingClosed(id, d.commitDeadline);
        bytes32 h = blockhash(d.seedBlock);
        if (h == bytes32(0)) {
            // Over 256 blocks old: the hash is gone. Falling back to a recent block would let the caller pick
            // a hash it already knows; commit to the next block instead, and draw once it is mined.
            d.seedBlock = uint64(block.number + 1);
            emit SeedRetargeted(id, d.round, d.seedBlock);
            return;
        }
        d.drawn = true;
        address[] memory seated = _draw(d, id, keccak256(abi.encode(h, d.unitId, id, d.round)));
        d.seatedWeight += seated.length * memberBond;
        emit CommitteeDrawn(id, seated);
    }

    /// @inheritdoc IDisputeCommittee
    function commitVote(uint256 id, bytes32 commitment) external {
        Dispute storage d = _open(id);
        Seat storage s = _seatInRound(d, id);
        if (block.timestamp > d.commitDeadline) revert VotingClosed(id, d.commitDeadline);
        if (s.committed) revert AlreadyCommitted(id, msg.sender);
        s.committed = true;
        s.commitment = commitment;
        ++d.committed;
        emit VoteCommitted(id, msg.sender, d.round);
    }

    /// @inheritdoc IDisputeCommittee
    function revealVote(uint256 id, bool solverHonest, bytes32 salt) external {
        Dispute storage d = _open(id);
        Seat storage s = _seatInRound(d, id);
        if (!s.committed) revert NotCommitted(id, msg.sender);
        if (s.vote != 0) revert AlreadyVoted(id, msg.sender);
        // INVARIANT: no vote is readable while anyone of the round can still seal one (nobody copies a vote).
        if (d.committed < d.members.length - d.roundFirst && block.timestamp <= d.commitDeadline) {
            revert RevealNotOpen(id, d.commitDeadline);
        }
        if (block.timestamp > d.deadline) revert VotingClosed(id, d.deadline);
        if (keccak256(abi.encode(id, msg.sender, solverHonest, salt)) != s.commitment) {
            revert VoteMismatch(id, msg.sender);
        }
        s.vote = solverHonest ? 1 : 2;
        ++d.revealed;
        if (solverHonest) d.yesWeight += memberBond;
        else d.noWeight += memberBond;
        emit VoteRevealed(id, msg.sender, solverHonest, memberBond);
    }

    /// @inheritdoc IDisputeCommittee
    function resolve(uint256 id) external {
        Dispute storage d = _open(id);
        // A round ends early only when nothing can change any more: every seat revealed. An undrawn round ends
        // at its commit deadline (nobody can be seated after it), a drawn one at its reveal deadline.
        bool over =
            d.drawn
                ? (d.revealed == d.members.length - d.roundFirst || block.timestamp > d.deadline)
                : block.timestamp > d.commitDeadline;
        if (!over) revert VotingOpen(id, d.drawn ? d.deadline : d.commitDeadline);
        // Quorum by weight: more than half of all the weight seated so far revealed, and one side is heavier.
        Outcome outcome = Outcome.NoQuorum;
        if ((d.yesWeight + d.noWeight) * 2 > d.seatedWeight) {
            if (d.yesWeight > d.noWeight) outcome = Outcome.SolverHonest;
            else if (d.noWeight > d.yesWeight) outcome = Outcome.SolverFraud;
        }
        if (outcome == Outcome.NoQuorum && d.round + 1 < MAX_ROUNDS) {
            // No decision is never free and never final while a round is left: a committee twice as large,
            // with a fresh seed, joins the earlier members (their votes still count and are still judged).
            _startRound(d, d.round + 1);
            emit Escalated(id, d.round, uint256(committeeSize) << d.round, d.seedBlock, d.commitDeadline, d.deadline);
            return;
        }
        d.resolved = true; // effects first: nothing below can re-enter a live dispute
        address[] memory winners = _settleMembers(d, id, outcome);
        emit DisputeResolved(id, d.unitId, uint8(outcome), d.yesWeight, d.noWeight);
        // The pool's committee share goes to members who voted with a decision (none on NoQuorum).
        if (outcome == Outcome.NoQuorum) winners = new address[](0);
        taskPool.onDisputeResolved(d.unitId, outcome, winners);
    }

    /// @inheritdoc IDisputeResolver
    function maxDuration() external view returns (uint64) {
        return MAX_ROUNDS * (votingPeriod + revealPeriod);
    }

    /// @notice Full dispute state.
    function getDispute(uint256 id) external view returns (Dispute memory) {
        return _disputes[id];
    }

    /// @notice Every seat drawn so far, all rounds, in draw order.
    function membersOf(uint256 id) external view returns (address[] memory) {
        return _disputes[id].members;
    }

    /// @notice `member`'s seat in dispute `id` (round 0 = none).
    function seatOf(uint256 id, address member) external view returns (Seat memory) {
        return _seats[id][member];
    }

    /// @notice Revealed vote: 0 = none yet, 1 = solver honest, 2 = fraud (a sealed vote reads 0).
    function voteOf(uint256 id, address member) external view returns (uint8) {
        return _seats[id][member].vote;
    }

    function _open(uint256 id) internal view returns (Dispute storage d) {
        d = _disputes[id];
        if (d.openBlock == 0) revert UnknownDispute(id);
        if (d.resolved) revert DisputeClosed(id);
    }

    /// @dev The caller's seat, which must belong to the current round (an earlier round's member has voted
    ///      or missed already; its vote is judged at the end either way).
    function _seatInRound(Dispute storage d, uint256 id) internal view returns (Seat storage s) {
        s = _seats[id][msg.sender];
        if (s.round != d.round + 1) revert NotCommitteeMember(id, msg.sender);
    }

    /// @dev Start round `r`: its seed is the hash of the next block, which nobody knows yet.
    function _startRound(Dispute storage d, uint8 r) internal {
        d.round = r;
        d.drawn = false;
        d.seedBlock = uint64(block.number + 1);
        d.commitDeadline = uint64(block.timestamp) + votingPeriod;
        d.deadline = d.commitDeadline + revealPeriod;
        d.roundFirst = uint16(d.members.length);
        d.committed = 0;
        d.revealed = 0;
    }

    /// @dev Seat up to `committeeSize << round` members. Random picks among the candidates frozen at the opening,
    ///      each kept with probability weight / DRAW_WEIGHT_SCALE, the registry's stake weight (rejection sampling:
    ///      odds proportional to bonded stake up to its `weightCap`); then, if seats are left, a bounded sweep from
    ///      a random offset gives each candidate one more chance at the same odds, so picks that collided on seated
    ///      or excluded candidates in a small set do not leave seats empty. The sweep is stake-weighted too: one
    ///      accepting anyone eligible would favour many one-minimum sybils, whose rejected picks are what leaves
    ///      seats for it. Seats can stay empty (quorum is relative to the weight seated). Gas is bounded by the
    ///      seats wanted, not the set's size. `gensyn_py/chain/draw.py` `draw_seats` is the same rule in Python.
    function _draw(Dispute storage d, uint256 id, bytes32 seed) internal returns (address[] memory seated) {
        uint256 want = uint256(committeeSize) << d.round;
        bytes32 set = _setOf(d);
        uint256 n = registry.validatorCountIn(set);
        address[] memory excluded = _parties(d);
        seated = new address[](want);
        uint256 k;
        for (uint256 a; a < want * ATTEMPTS_PER_SEAT && k < want && n > 0; ++a) {
            uint256 r = uint256(keccak256(abi.encode(seed, a)));
            address m = _candidate(d, set, r % n, (r >> 128) % DRAW_WEIGHT_SCALE);
            if (m != address(0) && _trySeat(d, id, m, excluded)) seated[k++] = m;
        }
        uint256 start = uint256(seed);
        uint256 attempts = want * ATTEMPTS_PER_SEAT;
        for (uint256 i; i < n && i < SWEEP_LIMIT && k < want; ++i) {
            uint256 r = uint256(keccak256(abi.encode(seed, attempts + i)));
            address m = _candidate(d, set, (start + i) % n, (r >> 128) % DRAW_WEIGHT_SCALE);
            if (m != address(0) && _trySeat(d, id, m, excluded)) seated[k++] = m;
        }
        // Trim the array to the seats filled.
        // solhint-disable-next-line no-inline-assembly
        assembly {
            mstore(seated, k)
        }
    }

    /// @dev The member at `index` if it was a candidate at the opening with its current weight and that weight
    ///      beats `ticket`; address(0) otherwise.
    function _candidate(Dispute storage d, bytes32 set, uint256 index, uint256 ticket) internal view returns (address) {
        (address m, uint256 since, uint256 changedAt, uint256 weight) = registry.validatorEntryIn(set, index);
        // INVARIANT: nobody joins or adds stake after the opening, once it can know the seed, to win a seat.
        if (since > d.openBlock || changedAt > d.openBlock || weight <= ticket) return address(0);
        return m;
    }

    /// @dev Seat `m` if it is no party to the unit, not seated yet and its free stake covers a bond, which is
    ///      locked now, fixing its weight for the whole dispute.
    function _trySeat(Dispute storage d, uint256 id, address m, address[] memory excluded) internal returns (bool) {
        if (_seats[id][m].round != 0) return false;
        for (uint256 i; i < excluded.length; ++i) {
            if (excluded[i] == m) return false;
        }
        // INVARIANT: a seat needs a bond of free stake (1 wei buys nothing).
        if (!registry.tryLock(m, memberBond)) return false;
        _seats[id][m].round = d.round + 1;
        d.members.push(m);
        return true;
    }

    /// @dev The registry set (`INodeRegistry.validatorCountIn`) the committee comes from: the solver's replay
    ///      class for an exact unit, else the device class.
    function _setOf(Dispute storage d) internal view returns (bytes32) {
        bytes32 rc = d.replayClass;
        return rc != 0 ? rc : bytes32(uint256(d.deviceClass));
    }

    /// @dev Who never sits: the solver, the opener, the job's requester and every validator drawn for the unit
    ///      (accepting or rejecting: each already staked a verdict on the answer).
    function _parties(Dispute storage d) internal view returns (address[] memory out) {
        Unit memory u = taskPool.getUnit(d.unitId);
        (address requester, , , , , ) = taskPool.jobState(u.jobId);
        out = new address[](u.validators.length + 3);
        out[0] = d.solver;
        out[1] = d.opener;
        out[2] = requester;
        for (uint256 i; i < u.validators.length; ++i) {
            out[i + 3] = u.validators[i];
        }
    }

    /// @dev Release every seat's lock; slash wrong votes (whole bond) and missing ones (`MISS_PENALTY_BPS`) into
    ///      this contract and pay it out at once, evenly, to the members who voted with the outcome (on NoQuorum:
    ///      to every member who revealed; with nobody to pay, to the job's requester, whose unit was delayed).
    ///      Returns the members who voted with the outcome.
    function _settleMembers(Dispute storage d, uint256 id, Outcome outcome) internal returns (address[] memory) {
        uint8 winning = outcome == Outcome.SolverHonest ? 1 : (outcome == Outcome.SolverFraud ? 2 : 0);
        uint256 bond = memberBond;
        uint256 n = d.members.length;
        address[] memory winners = new address[](n);
        uint256 k;
        uint256 pot;
        for (uint256 i; i < n; ++i) {
            address m = d.members[i];
            uint8 v = _seats[id][m].vote;
            if (v != 0 && (winning == 0 || v == winning)) {
                registry.unlock(m, bond);
                winners[k++] = m;
                continue;
            }
            // Slash before unlocking: the registry lets the committee take only stake it still holds locked
            // (and taking it releases that much); the rest of the bond is unlocked after.
            uint256 taken = registry.slash(m, v == 0 ? (bond * MISS_PENALTY_BPS) / 10_000 : bond, address(this));
            registry.unlock(m, bond);
            pot += taken;
            registry.recordMissed(m);
            emit MemberSlashed(id, m, taken, v == 0);
        }
        // solhint-disable-next-line no-inline-assembly
        assembly {
            mstore(winners, k)
        }
        if (pot != 0) {
            if (k == 0) {
                Unit memory u = taskPool.getUnit(d.unitId);
                (address requester, , , , , ) = taskPool.jobState(u.jobId);
                _pay(id, requester, pot);
            } else {
                uint256 share = pot / k;
                for (uint256 i; i < k; ++i) {
                    // The first winner also takes the rounding dust, so the contract keeps nothing.
                    _pay(id, winners[i], i == 0 ? pot - share * (k - 1) : share);
                }
            }
        }
        return winners;
    }

    /// @dev Push, not pull: the stake token calls no receiver hook, so a recipient cannot block the transfer, and
    ///      paying at once keeps this contract's balance at zero between transactions.
    function _pay(uint256 id, address to, uint256 amount) internal {
        if (amount == 0) return;
        _token.safeTransfer(to, amount);
        emit MemberRewarded(id, to, amount);
    }
}
