// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Address} from "@openzeppelin/contracts/utils/Address.sol";
import {IStepGame} from "../interfaces/IStepGame.sol";
import {Bisection} from "../libraries/Bisection.sol";
import {OutputDescent} from "../libraries/OutputDescent.sol";
import {TraceProofs} from "../libraries/TraceProofs.sol";
import {DotReferee} from "../referee/DotReferee.sol";
import {ElementReferee} from "../referee/ElementReferee.sol";
import {MoveReferee} from "../referee/MoveReferee.sol";
import {OpOpening} from "../types/Trace.sol";

/// @title StepGameBase: what every stage of the step game shares (`contracts/StepGame.sol`).
/// @notice A game's state, the referees and the clock, and the checks each move starts with (whose turn, at which
///         stage, about which opened op) and the decision. The stages are in `StepGame` (the bisection over ops,
///         the op's opening, the refutations and the descent into its output), `StepGameRows` (a row maximum's
///         witnesses) and `StepGameDots` (a dot element down to one integer multiply-add).
abstract contract StepGameBase is IStepGame {
    using Bisection for Bisection.Game;
    using OutputDescent for OutputDescent.Tree;

    /// @dev Prefix trees hold at most 2^24 ops.
    uint8 internal constant MAX_DEPTH = 24;
    bytes32 internal constant INPUT = keccak256("input");
    bytes32 internal constant ROWMAX = keccak256("rowmax");
    bytes32 internal constant FIRST_MAX = keccak256("first_max");
    // What a first_max answer left the counter to show (`Game.blockA` of a row game; docs/dispute-game.md):
    uint16 internal constant EARLIER_EQUAL = 1; // claimed true at an equal entry j: an equal entry before j
    uint16 internal constant ANY_EQUAL = 2; // claimed true at j = 0, which is not equal: any equal entry
    uint16 internal constant FIRST_EQUAL = 3; // claimed false at j = 0 with a later equal entry: entry 0 equal
    uint16 internal constant NOTHING = 4; // claimed false and shown so: nothing refutes it

    struct Game {
        Bisection.Game g;
        bytes32 program;
        bytes32 inputs;
        bytes32 opened; // the claimant's leaf of the disputed op
        int256 sum; // the claimant's N for the disputed dot element
        int256 counterSum; // the counter's
        // One slot from here on: the deciding move reads the stage, the element and the block exponents and writes
        // the stage and the winner, all in one slot (a fresh slot would cost the move 20,000 gas more, a cold one
        // 2,100 more to read).
        uint8 won; // once decided: WON_CLAIMANT, WON_COUNTER, or 0 for a game decided without a winner
        uint64 element; // the disputed output element of a dot op or a row maximum (elements are counted in uint64)
        uint32 length; // K: the multiply-adds of that element
        uint16 blockA; // the claimant's block exponents
        uint16 blockB;
        uint8 depth;
        Stage stage;
    }

    uint8 internal constant WON_CLAIMANT = 1;
    uint8 internal constant WON_COUNTER = 2;

    /// @notice Who may open games: the contract that binds the traces to commitments (the deployer until then).
    address public immutable opener;
    /// @notice Seconds each side has over a whole game.
    uint64 public immutable clock;
    /// @notice The referee that recomputes one element of an elementwise op.
    ElementReferee public immutable elements;
    /// @notice The referee of a dot element's answer, block exponents and one multiply-add.
    DotReferee public immutable dots;
    /// @notice The referee of one element of a data-movement or constant op.
    MoveReferee public immutable moves;
    /// @notice Games opened so far; ids run from 1.
    uint256 public gameCount;
    mapping(uint256 => Game) internal _games;

    mapping(uint256 => OutputDescent.Tree) internal _descents;

    constructor(address opener_, uint64 clock_, ElementReferee elements_, DotReferee dots_, MoveReferee moves_) {
        // A clock of a day at most: the game keeps clocks in uint32 seconds, and the pool's exposure bounds hold.
        if (clock_ == 0 || clock_ > 1 days) revert InvalidClock(clock_);
        opener = opener_;
        clock = clock_;
        elements = elements_;
        dots = dots_;
        moves = moves_;
    }

    // ---- internals ----

    function _game(uint256 gameId) internal view returns (Game storage s) {
        s = _games[gameId];
        if (s.stage == Stage.None) revert UnknownGame(gameId);
    }

    function _at(uint256 gameId, Stage want) internal view returns (Game storage s) {
        s = _game(gameId);
        if (s.stage != want) revert WrongStage(gameId, want, s.stage);
    }

    /// @dev The counter's turn to refute, with `op` the leaf the claimant opened (its clock checked, not charged:
    ///      see `_deciding`).
    function _refuting(uint256 gameId, OpOpening calldata op) internal view returns (Game storage s) {
        s = _deciding(gameId, Stage.Refute);
        bytes32 leaf = TraceProofs.opLeaf(op);
        if (leaf != s.opened) revert NotOpenedOp(leaf, s.opened);
    }

    /// @dev The counter's turn at stage `want`; charges the counter's clock.
    function _counterAt(uint256 gameId, Stage want) internal returns (Game storage s) {
        s = _at(gameId, want);
        _charge(s.g, s.g.counter);
    }

    /// @dev The counter's turn at stage `want` for a refutation, which decides the game or reverts: its clock is
    ///      checked but not charged (no clock is read after a decision; the write would cost the deciding move).
    function _deciding(uint256 gameId, Stage want) internal view returns (Game storage s) {
        s = _at(gameId, want);
        if (msg.sender != s.g.counter) revert Bisection.NotYourTurn(msg.sender, s.g.counter);
        s.g.checkTurn(msg.sender);
    }

    /// @dev Call `referee.selector(root, <this call's one struct argument>)`: this call's arguments are
    ///      (gameId, struct) and the referee's (root, struct), so the ABI bytes after the first word are the same
    ///      and are passed on as they came, not decoded and encoded again. A revert is passed up as it is.
    function _forward(address referee, bytes4 selector, bytes32 root) internal view returns (bytes memory ret) {
        (bool ok, bytes memory out) = referee.staticcall(abi.encodePacked(selector, root, msg.data[36:]));
        ret = Address.verifyCallResult(ok, out);
    }

    /// @dev `who`, the party this stage waits for, moves now (`Bisection.charge`: its turn, inside its clock).
    function _charge(Bisection.Game storage g, address who) internal {
        if (msg.sender != who) revert Bisection.NotYourTurn(msg.sender, who);
        g.charge(msg.sender);
    }

    /// @dev A refutation that holds decides for the counter; one that does not reverts (the counter may try
    ///      another while its clock runs).
    function _decide(uint256 gameId, Game storage s, bool refuted, Reason reason) internal {
        if (!refuted) revert NotRefuted(gameId, reason);
        s.stage = Stage.Decided;
        s.won = WON_COUNTER;
        emit GameDecided(gameId, s.g.counter, s.g.claimant, reason);
    }
}
