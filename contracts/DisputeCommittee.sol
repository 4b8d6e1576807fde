// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IDisputeResolver} from "./interfaces/IDisputeResolver.sol";
import {INodeRegistry} from "./interfaces/INodeRegistry.sol";
import {ITaskPool} from "./interfaces/ITaskPool.sol";
import {Outcome} from "./types/Types.sol";
import {Dispute} from "./types/Dispute.sol";

/// @title DisputeCommittee: a random committee of staked validators replays the disputed segment and votes.
/// @notice Stand-in for the on-chain bisection referee. Holds no tokens: TaskPool moves all money.
contract DisputeCommittee is IDisputeResolver, Ownable {
    /// @dev Most candidates the draw sweeps after its random picks (keeps the draw's gas bounded).
    uint256 internal constant SWEEP_LIMIT = 64;

    INodeRegistry public immutable registry;
    ITaskPool public taskPool;
    uint8 public immutable committeeSize;
    uint64 public immutable votingPeriod;
    uint256 public nextDisputeId = 1;
    mapping(uint256 => Dispute) internal _disputes;
    /// @notice 0 = not voted, 1 = voted solver honest, 2 = voted fraud.
    mapping(uint256 => mapping(address => uint8)) public voteOf;

    constructor(address registry_, uint8 committeeSize_, uint64 votingPeriod_, address owner_) Ownable(owner_) {
        registry = INodeRegistry(registry_);
        committeeSize = committeeSize_;
        votingPeriod = votingPeriod_;
    }

    /// @notice Set the task pool allowed to open disputes (owner, once).
    function wire(address taskPool_) external onlyOwner {
        if (address(taskPool) != address(0)) revert AlreadyWired();
        taskPool = ITaskPool(taskPool_);
    }

    /// @inheritdoc IDisputeResolver
    function openDispute(
        uint256 unitId,
        uint8 deviceClass,
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
        d.openBlock = uint64(block.number);
        d.deadline = uint64(block.timestamp) + votingPeriod;
        emit DisputeOpened(id, unitId, solver, opener, d.deadline);
    }

    /// @inheritdoc IDisputeResolver
    function drawCommittee(uint256 id) public {
        Dispute storage d = _open(id);
        if (d.drawn) return;
        uint256 base = uint256(d.openBlock) + 1;
        // INVARIANT: the committee comes from randomness fixed after the dispute opened.
        if (block.number <= base) revert TooEarly(id, block.number);
        if (block.timestamp > d.deadline) revert VotingClosed(id, d.deadline);
        if (block.number - base > 256) base = block.number - 1; // stale hash: use the latest block
        bytes32 seed = keccak256(abi.encode(blockhash(base), d.unitId, id));
        d.drawn = true;
        uint256 n = registry.validatorCount(d.deviceClass);
        uint256 want = committeeSize;
        for (uint256 a; a < want * 4 && d.members.length < want && n > 0; ++a) {
            _tryAdd(d, registry.validatorAt(d.deviceClass, uint256(keccak256(abi.encode(seed, a))) % n));
        }
        // Few candidates: the random picks collide and can leave seats empty although enough eligible
        // validators exist. Sweep on from a random offset; bounded, so the gas does not grow with the set.
        uint256 start = uint256(seed);
        for (uint256 k; k < n && k < SWEEP_LIMIT && d.members.length < want; ++k) {
            _tryAdd(d, registry.validatorAt(d.deviceClass, (start + k) % n));
        }
        emit CommitteeDrawn(id, d.members);
    }

    /// @inheritdoc IDisputeResolver
    function vote(uint256 id, bool solverHonest) external {
        Dispute storage d = _open(id);
        if (block.timestamp > d.deadline) revert VotingClosed(id, d.deadline);
        if (!d.drawn) drawCommittee(id);
        if (!_isMember(d, msg.sender)) revert NotCommitteeMember(id, msg.sender);
        if (voteOf[id][msg.sender] != 0) revert AlreadyVoted(id, msg.sender);
        uint256 w = registry.bondedOf(msg.sender);
        voteOf[id][msg.sender] = solverHonest ? 1 : 2;
        ++d.votes;
        if (solverHonest) d.yesWeight += w;
        else d.noWeight += w;
        emit Voted(id, msg.sender, solverHonest, w);
    }

    /// @inheritdoc IDisputeResolver
    function resolve(uint256 id) external {
        Dispute storage d = _open(id);
        // INVARIANT: early resolution only once every member voted; otherwise wait for the deadline.
        if ((!d.drawn || d.votes < d.members.length) && block.timestamp <= d.deadline) {
            revert VotingOpen(id, d.deadline);
        }
        d.resolved = true;
        Outcome outcome = Outcome.NoQuorum;
        // Quorum: a strict majority of the drawn members voted; a weight tie is no decision.
        if (d.members.length != 0 && d.votes * 2 > d.members.length) {
            if (d.yesWeight > d.noWeight) outcome = Outcome.SolverHonest;
            else if (d.noWeight > d.yesWeight) outcome = Outcome.SolverFraud;
        }
        uint8 winning = outcome == Outcome.SolverHonest ? 1 : (outcome == Outcome.SolverFraud ? 2 : 0);
        address[] memory winners = new address[](d.members.length);
        uint256 k;
        for (uint256 i; i < d.members.length; ++i) {
            uint8 v = voteOf[id][d.members[i]];
            if (v == 0) registry.recordMissed(d.members[i]);
            else if (v == winning) winners[k++] = d.members[i];
        }
        // Trim the array to the winners found.
        // solhint-disable-next-line no-inline-assembly
        assembly {
            mstore(winners, k)
        }
        emit DisputeResolved(id, d.unitId, uint8(outcome), d.yesWeight, d.noWeight);
        taskPool.onDisputeResolved(d.unitId, outcome, winners);
    }

    /// @inheritdoc IDisputeResolver
    function maxDuration() external view returns (uint64) {
        return votingPeriod;
    }

    /// @notice Full dispute state.
    function getDispute(uint256 id) external view returns (Dispute memory) {
        return _disputes[id];
    }

    /// @notice Drawn committee members.
    function membersOf(uint256 id) external view returns (address[] memory) {
        return _disputes[id].members;
    }

    function _open(uint256 id) internal view returns (Dispute storage d) {
        d = _disputes[id];
        if (d.openBlock == 0) revert UnknownDispute(id);
        if (d.resolved) revert DisputeClosed(id);
    }

    /// @dev Seat `m` unless it is a party to the dispute, holds no stake, or already sits.
    function _tryAdd(Dispute storage d, address m) internal {
        if (m == d.solver || m == d.opener || registry.bondedOf(m) == 0 || _isMember(d, m)) return;
        d.members.push(m);
    }

    function _isMember(Dispute storage d, address m) internal view returns (bool) {
        for (uint256 i; i < d.members.length; ++i) {
            if (d.members[i] == m) return true;
        }
        return false;
    }
}
