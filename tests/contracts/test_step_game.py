"""The step game (`contracts/StepGame.sol`) played on anvil over REAL traces of a repro training step.

The tiny MLP's AdamW step (189 ops) is traced once; cheating traces are made from it the ways a solver could
cheat inside one step, and each game is played move by move with each side's own `StepSide`:

- one bit of one elementwise op's output flipped: the bisection stops at that op, the contract recomputes the
  element from the claimant's proven inputs and decides for the counter;
- an op that computes the right numbers from the wrong wiring, a named input that is not the agreed one, an
  input root that is not its producer's output: each decided by its own refutation;
- an honest claimant against a lying counter: every refutation reverts `NotRefuted`; the counter loses on time;
- each side running out of time at each stage loses; every bad move reverts with its named error.
"""

from __future__ import annotations

import math
from functools import cache, cached_property
from typing import Any

import numpy as np
import pytest

from gensyn_py.chain.step_game import Stage
from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.proof.descent import RevealedChunk
from gensyn_py.proof.onchain_trace import NO_ELEMENT, OpOpening, open_element, open_op, tensor_ref
from gensyn_py.proof.op_prefix import prefix_roots, slot_path
from gensyn_py.proof.step_program import input_proof, program_entry, program_proof
from gensyn_py.proof.step_side import CONTEST, StepSide
from gensyn_py.proof.trace import Trace, TraceOp, attrs_hash, recompute_element
from gensyn_py.repro import reference as R
from tests.contracts.helpers import Protocol
from tests.contracts.step_game_play import (
    CLOCK,
    WrongPartialSum,
    bisect,
    challenged_mid,
    decided,
    deploy_step_game,
    descend,
    flipped,
    open_disputed,
    open_game,
    play_dot,
    refute,
    revealed_chunk,
)
from tests.contracts.test_element_step import traced
from tests.contracts.test_registry import expect
from tests.contracts.test_trace_proofs import reverts

(OPS, OPEN_OP, REFUTE, DESCEND, REVEAL_CHUNK, DOT_ANSWER, DOT_CHALLENGE, DOT_BISECT, DOT_STEP, ROW_ANSWER,
 ROW_CHALLENGE, DECIDED) = list(Stage)[2:]
(TIMEOUT, WRONG_PROGRAM, WRONG_INPUT_ROOT, WRONG_NAMED_INPUT, WRONG_ELEMENT, WRONG_BLOCK, WRONG_MULTIPLY_ADD,
 NON_FINITE_DOT, WRONG_MOVE, WRONG_ROW_MAX) = range(10)


@cache
def honest() -> Trace:
    return traced("mlp", "adamw")


def first(code: str, after: int = 0) -> int:
    return next(i for i, op in enumerate(honest().ops) if op.code == code and i > after)


def rewired(t: Trace, i: int, inputs: tuple[int, ...]) -> Trace:
    ops = list(t.ops)
    ops[i] = TraceOp(ops[i].code, inputs, ops[i].attrs)
    return Trace(ops, list(t.values), dict(t.outputs))


class ForgedInputRoot(StepSide):
    """A claimant whose leaf of op i lists input 0 with a root no op produced."""

    def __init__(self, trace: Trace, i: int) -> None:
        super().__init__(trace)
        self.i = i
        self.fake = keccak256(b"not the producer's output")

    def _forged(self) -> OpOpening:
        o = open_op(self.trace, self.i)
        (p, _), *rest = o.inputs
        return OpOpening(o.index, o.code_hash, o.attrs_hash, ((p, self.fake), *rest), o.output_root, o.proof)

    @cached_property
    def leaves(self) -> list[bytes]:
        leaves = [self.trace.op_leaf(j) for j in range(self.n_ops)]
        leaves[self.i] = self._forged().leaf()
        return leaves

    @cached_property
    def roots(self) -> list[bytes]:
        return prefix_roots(self.leaves, self.depth)

    def open_op(self, i: int) -> OpOpening:
        o = self._forged() if i == self.i else super().open_op(i)
        return OpOpening(o.index, o.code_hash, o.attrs_hash, o.inputs, o.output_root,
                         tuple(slot_path(self.leaves, i, i, self.depth)))


@pytest.fixture(scope="module")
def game(proto_base: Protocol) -> Any:
    return deploy_step_game(proto_base)


def play_to_refutation(p: Protocol, game: Any, claimant: StepSide, counter: StepSide,
                       honest_t: Trace | None = None) -> tuple[Any, OpOpening]:
    a = p.accounts
    c, d = (a[2], claimant), (a[3], counter)
    played = open_game(p, game, honest() if honest_t is None else honest_t, c, d)
    op = bisect(p, game, played, c, d)
    assert played.moves["claimant"] + played.moves["counter"] <= math.ceil(math.log2(claimant.n_ops)) + 1
    assert game.functions.gameOf(played.game_id).call()[0] == OPEN_OP
    opened = open_disputed(p, game, played, c)
    assert opened.index == op and game.functions.gameOf(played.game_id).call()[0] == REFUTE
    return played, opened


# ---- a cheating claimant loses, whatever the cheat ----


def _refuted_element(move: bytes, inputs: int) -> int:
    """The output element a packed ``refuteElement`` move opens (the layout of contracts/libraries/PackedMoves.sol)."""
    words = [int.from_bytes(move[i:i + 32], "big") for i in range(0, len(move), 32)]
    at = 4 + 2 * inputs  # past the op leaf: index, code, attrs, (id, root) per input, output root
    at += 1 + words[at]  # its path
    at += 1  # clamp's bounds
    return words[at + 2 + words[at + 1]]  # past the output header: dtype, ndim, dims


def contested(p: Protocol, game: Any, played: Any, opened: OpOpening, claimant: StepSide,
              counter: StepSide) -> RevealedChunk:
    """The counter contests the opened output and both descend to a chunk the claimant reveals."""
    a = p.accounts
    assert counter.refutation(opened) == CONTEST
    return descend(p, game, played, opened, (a[2], claimant), (a[3], counter))


@pytest.mark.parametrize(("code", "element"), [("mul", 3), ("where", -1), ("sqrt", 0), ("div", 77)])
def test_one_flipped_bit_in_one_elementwise_op_is_pinpointed_and_decided_by_the_contract(
    proto: Protocol, game: Any, code: str, element: int
) -> None:
    p, a = proto, proto.accounts
    i = first(code, after=20)
    element %= honest().values[i].size
    cheat = flipped(honest(), i, element)
    counter = StepSide(honest())
    played, opened = play_to_refutation(p, game, StepSide(cheat), counter)
    assert played.op == i  # the first op whose output differs, not any later op that read it
    # The counter holds nothing of the claimant's but its commitments: the descent finds the chunk.
    revealed = contested(p, game, played, opened, StepSide(cheat), counter)
    assert revealed.index == element * 4 // 32
    r = counter.refute_chunk(opened, revealed)
    assert r is not None and r.function == "refuteElement"
    assert _refuted_element(r.args[0], len(opened.inputs)) == element
    # A refutation that does not hold reverts and leaves the counter its turn: the program is right.
    code_h, attrs, ids = program_entry(honest(), i)
    expect(p, "NotRefuted", a[3], game.functions.refuteProgram(played.game_id, opened.as_arg(), code_h, attrs,
                                                               list(ids), program_proof(honest(), i)))
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["loser"], out["reason"]) == (a[3].address, a[2].address, WRONG_ELEMENT)
    assert game.functions.gameOf(played.game_id).call()[0] == DECIDED
    chunks = -(-honest().values[i].nbytes // 32)
    descent_moves = math.ceil(math.log2(chunks)) + 1 if chunks > 1 else 2  # the levels, the chunk
    assert played.moves["counter"] + played.moves["claimant"] <= (
        math.ceil(math.log2(len(cheat.ops))) + 1 + 1 + descent_moves + 1)
    # Decided is final: no side moves again, and nobody can time it out.
    expect(p, "WrongStage", a[3], game.functions.refuteElement(played.game_id, r.args[0]))
    expect(p, "WrongStage", a[9], game.functions.timeout(played.game_id))


@pytest.mark.parametrize(("code", "after", "element"), [("reshape", 20, 9), ("t", 0, 33), ("narrow", 0, 100),
                                                     ("const", 20, 0), ("cat", 0, 1100), ("onehot", 0, 13),
                                                     ("append_ones", 0, 20), ("append_ones", 0, 16),
                                                     ("gather", 0, 5)])
def test_one_flipped_bit_in_a_copy_or_a_constant_is_decided_by_the_contract(
    proto: Protocol, game: Any, code: str, after: int, element: int
) -> None:
    p, a = proto, proto.accounts
    i = first(code, after=after)
    cheat, counter = StepSide(flipped(honest(), i, element)), StepSide(honest())
    played, opened = play_to_refutation(p, game, cheat, counter)
    assert played.op == i
    r = counter.refute_chunk(opened, contested(p, game, played, opened, cheat, counter))
    assert r is not None and r.function == "refuteMove"
    if code == "narrow":  # its (dim, start, length) must be the committed attributes
        move = list(r.args[0])
        move[5] = [move[5][0], move[5][1] + 1, move[5][2]]
        expect(p, "BadAttributes", a[3], game.functions.refuteMove(played.game_id, tuple(move)))
    if code == "cat":  # element 1100 of the parameters is in the third: the first two runs are proven
        move = list(r.args[0])
        assert move[5][0] == 0 and len(move[5]) == 5
        move[5] = [0, move[5][1] + 8, *move[5][2:]]
        expect(p, "InputRootMismatch", a[3], game.functions.refuteMove(played.game_id, tuple(move)))
        move[5] = r.args[0][5][:3]  # as if the element were in the second input
        expect(p, "InputRootMismatch", a[3], game.functions.refuteMove(played.game_id, tuple(move)))
    if code != "const" and (code, element) != ("append_ones", 16):  # the input element opened must be the one read
        move = list(r.args[0])
        move[2] = open_element(honest(), honest().ops[i].inputs[0], (move[2][0] + 1) % 16).as_arg()
        expect(p, "WrongOperand", a[3], game.functions.refuteMove(played.game_id, tuple(move)))
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["reason"]) == (a[3].address, WRONG_MOVE)


@pytest.mark.parametrize(("kind", "element"), [("im2col", 40), ("im2col", 9), ("pool", 7), ("unpool", 100),
                                                ("col2im", 5)])
def test_one_flipped_bit_in_a_convolution_s_index_map_is_decided_by_the_contract(
    proto: Protocol, game: Any, kind: str, element: int
) -> None:
    """A CNN step's index maps (patches, windows: -1 for padding) are recomputed on-chain from the op's attributes."""
    p, a = proto, proto.accounts
    cnn = traced("cnn", "sgd")
    i = next(j for j, op in enumerate(cnn.ops) if op.code == "index_map" and op.attrs[0] == kind)
    cheat, counter = StepSide(flipped_int(cnn, i, element)), StepSide(cnn)
    played, opened = play_to_refutation(p, game, cheat, counter, cnn)
    assert played.op == i
    r = counter.refute_chunk(opened, contested(p, game, played, opened, cheat, counter))
    assert r is not None and r.function == "refuteMove"
    move = list(r.args[0])
    move[5] = [*move[5][:-1], move[5][-1] + 1]  # the parameters must be the committed attributes
    expect(p, "BadAttributes", a[3], game.functions.refuteMove(played.game_id, tuple(move)))
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["reason"]) == (a[3].address, WRONG_MOVE)


def flipped_int(t: Trace, i: int, element: int) -> Trace:
    """`t` with the lowest bit of one int64 element of op i's output flipped."""
    values = [v.copy() for v in t.values]
    values[i].reshape(-1)[element] ^= 1
    return Trace(list(t.ops), values, dict(t.outputs))


def timed_out(p: Protocol, game: Any, played: Any) -> tuple[str, int]:
    """Past both clocks, anyone ends the game: (the winner, the reason)."""
    p.advance(CLOCK + 1)
    out = decided(p, game, p.tx(p.accounts[9], game.functions.timeout(played.game_id)))
    return out["winner"], out["reason"]


ROW = 3  # the row of the softmax's rowmax the rowmax tests dispute


def with_row_max(t: Trace, i: int, row: int, value: np.float32) -> Trace:
    """`t` with rowmax op i's element `row` set to `value` (every later op left as recorded)."""
    values = [v.copy() for v in t.values]
    values[i].reshape(-1)[row] = value
    return Trace(list(t.ops), values, dict(t.outputs))


def row_game(p: Protocol, game: Any, cheat: StepSide, counter: StepSide) -> tuple[Any, OpOpening, RevealedChunk]:
    """Play to the counter's challenge of the disputed rowmax element."""
    played, opened = play_to_refutation(p, game, cheat, counter)
    revealed = contested(p, game, played, opened, cheat, counter)
    r = counter.refute_chunk(opened, revealed)
    assert r is not None and r.function == "challengeRow" and r.args[1] == ROW
    refute(p, game, played, p.accounts[3], r)
    assert game.functions.gameOf(played.game_id).call()[0] == ROW_ANSWER
    return played, opened, revealed


def test_a_row_maximum_that_no_entry_has_loses_on_time(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("rowmax")
    m = honest().values[i].reshape(-1)[ROW]
    cheat = StepSide(with_row_max(honest(), i, ROW, np.nextafter(m, np.float32(np.inf), dtype=np.float32)))
    played, opened, _ = row_game(p, game, cheat, StepSide(honest()))
    assert cheat.row_answer(opened, ROW) is None  # above every entry: no witness
    honest_answer = StepSide(honest()).row_answer(opened, ROW)
    assert honest_answer is not None  # the true maximum's entry is no witness of the cheat's maximum
    check = list(honest_answer.args[0])
    check[4] = open_element(cheat.trace, i, ROW).as_arg()
    expect(p, "NotAWitness", a[2], game.functions.answerRow(played.game_id, tuple(check)))
    assert timed_out(p, game, played) == (a[3].address, TIMEOUT)


def test_a_row_maximum_below_the_largest_entry_is_refuted_by_it(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("rowmax")
    (j,) = honest().ops[i].inputs
    row = honest().values[j].reshape(-1, honest().values[j].shape[-1])[ROW]
    second = np.sort(row)[-2] + np.float32(0)  # an entry, so the cheat has a witness
    cheat, counter = StepSide(with_row_max(honest(), i, ROW, second)), StepSide(honest())
    played, opened, revealed = row_game(p, game, cheat, counter)
    answer = cheat.row_answer(opened, ROW)
    assert answer is not None
    p.tx(a[2], game.functions.answerRow(played.game_id, *answer.args))
    assert game.functions.gameOf(played.game_id).call()[0] == ROW_CHALLENGE
    expect(p, "NotRefuted", a[3], game.functions.refuteRow(played.game_id, *answer.args))  # the witness is no larger
    r = counter.row_refutation(opened, revealed, ROW)
    assert r is not None
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["reason"]) == (a[3].address, WRONG_ROW_MAX)


def test_an_honest_row_maximum_survives_a_counter_that_lies_about_it(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("rowmax")
    m = honest().values[i].reshape(-1)[ROW]
    liar, claimant = StepSide(with_row_max(honest(), i, ROW, m - np.float32(1))), StepSide(honest())
    played, opened, revealed = row_game(p, game, claimant, liar)
    answer = claimant.row_answer(opened, ROW)
    assert answer is not None
    p.tx(a[2], game.functions.answerRow(played.game_id, *answer.args))
    assert liar.row_refutation(opened, revealed, ROW) is None  # no entry is above the true maximum
    (j,) = honest().ops[i].inputs
    width = honest().values[j].shape[-1]
    for entry in range(ROW * width, (ROW + 1) * width):  # every entry of the row fails
        check = list(answer.args[0])
        check[2] = open_element(honest(), j, entry).as_arg()
        check[4] = (ROW, revealed.index, revealed.chunk, list(revealed.siblings))
        expect(p, "NotRefuted", a[3], game.functions.refuteRow(played.game_id, tuple(check)))
    assert timed_out(p, game, played) == (a[2].address, TIMEOUT)


def with_bool(t: Trace, i: int, element: int, value: bool) -> Trace:
    values = [v.copy() for v in t.values]
    values[i].reshape(-1)[element] = value
    return Trace(list(t.ops), values, dict(t.outputs))


def first_max_case() -> tuple[Trace, int, int, int]:
    """The CNN step, its first_max op, a row whose first maximum is not at 0, and that position."""
    cnn = traced("cnn", "sgd")
    i = next(j for j, op in enumerate(cnn.ops) if op.code == "first_max")
    out = cnn.values[i]
    row = next(r for r in range(out.shape[0]) if not out[r, 0])
    return cnn, i, row, int(np.argmax(out[row]))


def first_max_game(p: Protocol, game: Any, cheat: StepSide, counter: StepSide, cnn: Trace,
                   element: int) -> tuple[Any, OpOpening, RevealedChunk]:
    played, opened = play_to_refutation(p, game, cheat, counter, cnn)
    revealed = contested(p, game, played, opened, cheat, counter)
    r = counter.refute_chunk(opened, revealed)
    assert r is not None and r.function == "challengeRow" and r.args[1] == element
    refute(p, game, played, p.accounts[3], r)
    return played, opened, revealed


def test_a_first_maximum_moved_to_entry_0_is_refuted_by_the_real_one(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    cnn, i, row, j = first_max_case()
    width = cnn.values[i].shape[1]
    cheat, counter = StepSide(with_bool(cnn, i, row * width, True)), StepSide(cnn)  # claims entry 0 is first
    played, opened, revealed = first_max_game(p, game, cheat, counter, cnn, row * width)
    answer = cheat.row_answer(opened, row * width)
    assert answer is not None  # true at 0, which is unequal: it claims no entry is equal
    p.tx(a[2], game.functions.answerRow(played.game_id, *answer.args))
    r = counter.row_refutation(opened, revealed, row * width)
    assert r is not None and r.args[0][2][0] == row * width + j  # the real first maximum
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["reason"]) == (a[3].address, WRONG_ROW_MAX)


def test_a_first_maximum_denied_has_no_answer(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    cnn, i, row, j = first_max_case()
    e = row * cnn.values[i].shape[1] + j
    cheat = StepSide(with_bool(cnn, i, e, False))
    played, opened, _ = first_max_game(p, game, cheat, StepSide(cnn), cnn, e)
    assert cheat.row_answer(opened, e) is None  # j is equal and first, and not 0: nothing shows false
    assert timed_out(p, game, played) == (a[3].address, TIMEOUT)


def test_an_honest_first_maximum_survives_a_counter_that_lies_about_it(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    cnn, i, row, j = first_max_case()
    e = row * cnn.values[i].shape[1] + j
    claimant, liar = StepSide(cnn), StepSide(with_bool(cnn, i, e, False))
    played, opened, revealed = first_max_game(p, game, claimant, liar, cnn, e)
    answer = claimant.row_answer(opened, e)
    assert answer is not None
    p.tx(a[2], game.functions.answerRow(played.game_id, *answer.args))
    assert liar.row_refutation(opened, revealed, e) is None
    expect(p, "NotRefuted", a[3], game.functions.refuteRow(played.game_id, *answer.args))
    assert timed_out(p, game, played) == (a[2].address, TIMEOUT)


def test_an_honest_copy_survives_a_counter_that_lies_about_it(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("t")
    liar = StepSide(flipped(honest(), i, 33))
    played, opened = play_to_refutation(p, game, StepSide(honest()), liar)
    r = liar.refute_chunk(opened, contested(p, game, played, opened, StepSide(honest()), liar))
    assert r is not None and r.function == "refuteMove"
    expect(p, "NotRefuted", a[3], game.functions.refuteMove(played.game_id, *r.args))
    p.advance(CLOCK + 1)
    assert decided(p, game, p.tx(a[9], game.functions.timeout(played.game_id)))["winner"] == a[2].address


NO_INDEX = ((bytes(32), 0, []), NO_ELEMENT.as_arg())


def test_the_move_referee_refuses_an_op_it_does_not_decide(proto: Protocol, game: Any) -> None:
    """`MoveReferee.check` judges one element from the elements it copies; a `rowmax` element depends on its whole
    row and goes through the row stage instead (`challengeRow`), so `check` refuses it by name."""
    p = proto
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = Trace([TraceOp("input", (), ("x",)), TraceOp("rowmax", (0,), ())], [x, x.max(axis=1, keepdims=True)])
    move = (open_op(t, 1).as_arg(), tensor_ref(t, 0).as_arg(), open_element(t, 0, 2).as_arg(),
            tensor_ref(t, 1).as_arg(), open_element(t, 1, 0).as_arg(), [], 0, *NO_INDEX)
    assert reverts(p.errors, move_referee(p, game).functions.check(t.root, move)) == "BadMove"


@pytest.mark.parametrize(("code", "table", "index"), [
    ("take", np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[5, -1], [0, -2]], dtype=np.int64)),
    ("embed", np.arange(12, dtype=np.float32).reshape(4, 3), np.array([3, 0, -1], dtype=np.int64)),
    ("gather", np.arange(6, dtype=np.float32).reshape(2, 3), np.array([2, -3], dtype=np.int64)),
])
def test_a_looked_up_element_is_the_one_its_index_names(proto: Protocol, game: Any, code: str, table: Any,
                                                       index: Any) -> None:
    """take (-1 reads +0), embed and gather, negative indices counting from the end: every output element of the
    honest op is the copy the index names, one flipped bit is not, and an index element other than the one
    the output element reads is refused."""
    p = proto
    value = R.execute(code, [table, index], ())
    honest_t = Trace([TraceOp("input", (), ("w",)), TraceOp("input", (), ("i",)), TraceOp(code, (0, 1), ())],
                     [table, index, np.ascontiguousarray(value)])
    for e in range(value.size):
        for t, same in ((honest_t, True), (flipped(honest_t, 2, e), False)):
            side = StepSide(t)
            opened = open_op(t, 2)
            ref = tensor_ref(t, 2)
            out = (t.tensor_roots[2], ref.dtype, list(ref.shape))
            move = side._move_check(opened, e, out, open_element(t, 2, e).as_arg())
            move = (open_op(t, 2).as_arg(), *move[1:])
            assert move_referee(p, game).functions.check(t.root, move).call()[2] is same, (code, e)
    out = (honest_t.tensor_roots[2], tensor_ref(honest_t, 2).dtype, list(tensor_ref(honest_t, 2).shape))
    move = list(StepSide(honest_t)._move_check(open_op(honest_t, 2), 0, out, open_element(honest_t, 2, 0).as_arg()))
    move[0], move[8] = open_op(honest_t, 2).as_arg(), open_element(honest_t, 1, 1).as_arg()
    assert reverts(p.errors, move_referee(p, game).functions.check(honest_t.root, tuple(move))) == "WrongOperand"


def move_referee(p: Protocol, game: Any) -> Any:
    return p.w3.eth.contract(address=game.functions.moves().call(), abi=p.artifacts["MoveReferee"]["abi"])


@pytest.mark.parametrize("dims", [(2, 0, 1), (1, 0, 2), (0, 2, 1)])
def test_a_permuted_element_is_the_input_element_its_dims_name(proto: Protocol, game: Any,
                                                               dims: tuple[int, int, int]) -> None:
    p = proto
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    honest_t = Trace([TraceOp("input", (), ("x",)), TraceOp("permute", (0,), (dims,))],
                     [x, np.ascontiguousarray(np.transpose(x, dims))])
    for e in (0, 7, 23):
        flipped_t = flipped(honest_t, 1, e)
        source = int(np.transpose(np.arange(24).reshape(2, 3, 4), dims).reshape(-1)[e])
        for t, same in ((honest_t, True), (flipped_t, False)):
            move = (open_op(t, 1).as_arg(), tensor_ref(t, 0).as_arg(), open_element(t, 0, source).as_arg(),
                    tensor_ref(t, 1).as_arg(), open_element(t, 1, e).as_arg(), list(dims), 0, *NO_INDEX)
            assert move_referee(p, game).functions.check(t.root, move).call()[2] is same
        bad = (open_op(honest_t, 1).as_arg(), tensor_ref(honest_t, 0).as_arg(), open_element(honest_t, 0, source)
               .as_arg(), tensor_ref(honest_t, 1).as_arg(), open_element(honest_t, 1, e).as_arg(), [0, 0, 1], 0,
               *NO_INDEX)
        assert reverts(p.errors, move_referee(p, game).functions.check(honest_t.root, bad)) == "BadMove"


def test_right_numbers_from_the_wrong_wiring_lose_against_the_program(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("add", after=20)
    x, y = honest().ops[i].inputs
    cheat = rewired(honest(), i, (y, x))  # add is commutative: the output is the honest one, the op is not
    played, opened = play_to_refutation(p, game, StepSide(cheat), StepSide(honest()))
    assert played.op == i and opened.output_root == honest().tensor_roots[i]
    r = StepSide(honest()).refutation(opened)
    assert r is not None and r.function == "refuteProgram"
    assert decided(p, game, refute(p, game, played, a[3], r))["reason"] == WRONG_PROGRAM


def test_a_named_input_other_than_the_agreed_one_loses(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    cheat = flipped(honest(), 0, 7)  # the parameters the step starts from
    played, opened = play_to_refutation(p, game, StepSide(cheat), StepSide(honest()))
    assert played.op == 0
    r = StepSide(honest()).refutation(opened)
    assert r is not None and r.function == "refuteNamedInput"
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["reason"]) == (a[3].address, WRONG_NAMED_INPUT)


def test_an_input_root_no_producer_output_loses(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("mul", after=20)
    played, opened = play_to_refutation(p, game, ForgedInputRoot(honest(), i), StepSide(honest()))
    assert played.op == i
    r = StepSide(honest()).refutation(opened)
    assert r is not None and r.function == "refuteInputRoot"
    # The producer must be the op the input names, opened in the agreed prefix.
    (_, j, producer) = r.args
    wrong = (producer[0] + 1, *producer[1:])
    expect(p, "NotProducer", a[3], game.functions.refuteInputRoot(played.game_id, opened.as_arg(), j, wrong))
    expect(p, "NoSuchInput", a[3], game.functions.refuteInputRoot(played.game_id, opened.as_arg(), 9, producer))
    assert decided(p, game, refute(p, game, played, a[3], r))["reason"] == WRONG_INPUT_ROOT


# ---- inside a matmul: down to one integer multiply-add ----

MATMUL_ELEMENT = 5


@pytest.mark.parametrize("k", [0, 21, 63])
def test_a_wrong_partial_sum_inside_a_matmul_is_narrowed_to_one_integer_multiply_add(
    proto: Protocol, game: Any, k: int
) -> None:
    p, a = proto, proto.accounts
    i = first("matmul")
    cheat = WrongPartialSum(honest(), i, MATMUL_ELEMENT, k)
    counter = StepSide(honest())
    played, opened = play_to_refutation(p, game, cheat, counter)
    assert played.op == i
    revealed = contested(p, game, played, opened, cheat, counter)
    r = counter.refute_chunk(opened, revealed)
    assert r is not None and r.function == "challengeDot" and r.args[1] == MATMUL_ELEMENT
    refute(p, game, played, a[3], r)
    assert game.functions.gameOf(played.game_id).call()[0] == DOT_ANSWER
    out = decided(p, game, play_dot(p, game, played, opened, MATMUL_ELEMENT, (a[2], cheat), (a[3], counter)))
    assert played.multiply_add == k  # the one wrong multiply-add of the 64
    assert (out["winner"], out["loser"], out["reason"]) == (a[3].address, a[2].address, WRONG_MULTIPLY_ADD)
    ops_moves = math.ceil(math.log2(cheat.n_ops)) + 1
    chunk_levels = math.ceil(math.log2(16 * 16 * 4 / 32))
    # ops + open + levels, chunk + challenge + answer (the first move over the 64 sums) + the rest + the last move
    assert sum(played.moves.values()) <= ops_moves + 1 + (chunk_levels + 1) + 2 + math.ceil(math.log2(64)) + 1


def test_an_honest_matmul_element_survives_a_counter_that_lies_about_one_multiply_add(
    proto: Protocol, game: Any
) -> None:
    p, a = proto, proto.accounts
    i = first("matmul")
    liar = WrongPartialSum(honest(), i, MATMUL_ELEMENT, 30)
    claimant = StepSide(honest())
    played, opened = play_to_refutation(p, game, claimant, liar)
    gid = played.game_id
    revealed = contested(p, game, played, opened, claimant, liar)  # its own output differs: it contests
    r = liar.refute_chunk(opened, revealed)
    assert r is not None and r.args[1] == MATMUL_ELEMENT
    refute(p, game, played, a[3], r)
    mid = challenged_mid(p, game, gid)
    rc = p.tx(a[2], game.functions.answerDot(gid, *claimant.dot_answer(i, MATMUL_ELEMENT, mid)))
    answer = p.events(rc, game, "DotAnswered")[0]["args"]
    assert game.functions.gameOf(gid).call()[0] == DOT_BISECT
    assert answer["length"] == 64 and answer["n"] == claimant.dot_sums(i, MATMUL_ELEMENT)[-1]
    # Its block exponents are the maxima: no entry refutes them.
    m, *_ = claimant.dot_answer(i, MATMUL_ELEMENT, mid)
    for of_a, wit in ((True, m[7]), (False, m[8])):
        expect(p, "NotRefuted", a[3], game.functions.refuteBlock(gid, m, wit, of_a))
    k = bisect(p, game, played, (a[2], claimant), (a[3], liar), DOT_BISECT, "moveDot",
               lambda side: side.dot_positions(i, MATMUL_ELEMENT))
    assert k == 30 and game.functions.gameOf(gid).call()[0] == DOT_STEP
    _, _, _, agreed, mine, _ = game.functions.gameOf(gid).call()
    prev, cur = (int.from_bytes(w, "big", signed=True) for w in (agreed, mine))
    blocks = (answer["blockA"], answer["blockB"])
    move = liar.dot_step(opened, MATMUL_ELEMENT, k, prev, cur, blocks)
    expect(p, "NotRefuted", a[3], game.functions.refuteDotStep(gid, move))
    lie = liar.dot_step(opened, MATMUL_ELEMENT, k, prev, cur + 1, blocks)
    expect(p, "PartialMismatch", a[3], game.functions.refuteDotStep(gid, lie))
    early = liar.dot_step(opened, MATMUL_ELEMENT, k - 1, prev, cur, blocks)
    expect(p, "WrongOp", a[3], game.functions.refuteDotStep(gid, early))
    p.advance(CLOCK + 1)
    out = decided(p, game, p.tx(a[9], game.functions.timeout(gid)))
    assert (out["winner"], out["reason"]) == (a[2].address, TIMEOUT)


def test_a_dot_answer_must_round_to_the_committed_element(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("matmul")
    cheat = WrongPartialSum(honest(), i, MATMUL_ELEMENT, 10)
    played, opened = play_to_refutation(p, game, cheat, StepSide(honest()))
    gid = played.game_id
    cheat_n = cheat.dot_sums(i, MATMUL_ELEMENT)[-1]
    # Only an element of the claimant's committed output (16 x 16) can be asked about: it could answer no other.
    z = bytes(32)
    expect(p, "NoSuchElement", a[3], game.functions.challengeDot(gid, opened.as_arg(), 256, cheat_n, z))
    p.tx(a[3], game.functions.challengeDot(gid, opened.as_arg(), MATMUL_ELEMENT, cheat_n, z))  # a counter that agrees
    m, out, el, n, at_pending, at_next = cheat.dot_answer(i, MATMUL_ELEMENT, z)
    honest_n = StepSide(honest()).dot_sums(i, MATMUL_ELEMENT)[-1]
    # The honest sum does not round to the element it committed: it must stand by its own N.
    expect(p, "SumDoesNotRound", a[2], game.functions.answerDot(gid, m, out, el, honest_n, at_pending, at_next))
    other = (m[0], m[1], m[2], MATMUL_ELEMENT + 1, *m[4:])
    expect(p, "NotDisputedElement", a[2], game.functions.answerDot(gid, other, out, el, n, at_pending, at_next))
    p.tx(a[2], game.functions.answerDot(gid, m, out, el, n, at_pending, at_next))
    # The same sum: nothing to bisect; only a block exponent could still be refuted, or the counter loses.
    assert game.functions.gameOf(gid).call()[0] == DOT_CHALLENGE
    expect(p, "NotRefuted", a[3], game.functions.refuteBlock(gid, m, m[7], True))
    p.advance(CLOCK + 1)
    assert decided(p, game, p.tx(a[9], game.functions.timeout(gid)))["winner"] == a[2].address


def test_block_exponents_below_the_rule_s_are_refuted_by_the_witness_a_counter_finds(
    proto: Protocol, game: Any
) -> None:
    """What a counter's daemon sends against an `answerDot` whose block exponent for A (or B) is below the rule's
    (`StepSide.block_refutation`): the entry with the rule's exponent field, which the contract's referee takes as
    a refutation; none against the rule's own block exponents."""
    i = first("matmul")
    side, opened = StepSide(honest()), open_op(honest(), i)
    d = recompute_element(honest(), i, MATMUL_ELEMENT).detail
    assert d is not None
    assert side.block_refutation(opened, MATMUL_ELEMENT, (d.block_a, d.block_b)) is None
    dots = proto.w3.eth.contract(address=game.functions.dots().call(), abi=proto.artifacts["DotReferee"]["abi"])
    for blocks, of_a in (((d.block_a - 1, d.block_b), True), ((d.block_a, d.block_b - 1), False)):
        r = side.block_refutation(opened, MATMUL_ELEMENT, blocks)
        assert r is not None and r.function == "refuteBlock" and r.args[2] == of_a
        m, witness, _ = r.args
        assert (m[5], m[6]) == blocks  # about the claimant's block exponents, as the game checks
        assert dots.functions.refutesBlock(opened.leaf(), m, witness, of_a).call()


def test_an_honest_claimant_whose_dot_element_is_non_finite_ends_the_game_undecided(
    proto: Protocol, game: Any
) -> None:
    """The non-finite rule is not on-chain: an honest claimant asked about an element whose row holds an infinity
    shows that entry and the game ends with no decision, instead of the claimant losing on time."""
    p, a = proto, proto.accounts
    i = first("matmul")
    x, w = honest().ops[i].inputs
    values = list(honest().values)
    values[x] = values[x].copy()
    values[x][0, 3] = np.inf  # row 0 of A: output elements 0..15 follow the non-finite rule
    values[i] = np.asarray(R.execute("matmul", [values[x], values[w]], ()), np.float32)
    base = Trace(list(honest().ops), values, dict(honest().outputs))
    claimant, liar = StepSide(base), StepSide(flipped(base, i, MATMUL_ELEMENT))
    played = open_game(p, game, base, (a[2], claimant), (a[3], liar))
    bisect(p, game, played, (a[2], claimant), (a[3], liar))
    assert played.op == i
    opened = open_disputed(p, game, played, (a[2], claimant))
    r = liar.refute_chunk(opened, descend(p, game, played, opened, (a[2], claimant), (a[3], liar)))
    assert r is not None and r.function == "challengeDot" and r.args[1] == MATMUL_ELEMENT
    refute(p, game, played, a[3], r)
    assert claimant.non_finite(i, 17) is None  # row 1 is finite: that element would be answered
    declared = claimant.non_finite(i, MATMUL_ELEMENT)
    assert declared is not None and declared[1][0] == 3 and declared[2] is True
    m, witness, of_a = declared
    finite = (0, open_element(base, x, 0).as_arg())
    expect(p, "FiniteEntry", a[2], game.functions.declareNonFinite(played.game_id, m, finite, True))
    out = decided(p, game, p.tx(a[2], game.functions.declareNonFinite(played.game_id, m, witness, of_a)))
    zero = "0x" + "00" * 20
    assert (out["winner"], out["loser"], out["reason"]) == (zero, zero, NON_FINITE_DOT)
    assert game.functions.gameOf(played.game_id).call()[0] == DECIDED


def test_a_dot_or_row_challenge_of_an_elementwise_op_reverts(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    cheat = flipped(honest(), first("mul", after=20), 3)
    played, opened = play_to_refutation(p, game, StepSide(cheat), StepSide(honest()))
    expect(p, "NotDotOp", a[3], game.functions.challengeDot(played.game_id, opened.as_arg(), 3, 0, bytes(32)))
    expect(p, "NotRowMax", a[3], game.functions.challengeRow(played.game_id, opened.as_arg(), 3))


# ---- an honest claimant wins ----


def test_an_honest_claimant_against_a_lying_counter_wins_on_time(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i = first("mul", after=20)
    liar = StepSide(flipped(honest(), i, 3))
    played, opened = play_to_refutation(p, game, StepSide(honest()), liar)
    assert played.op == i
    revealed = contested(p, game, played, opened, StepSide(honest()), liar)
    r = liar.refute_chunk(opened, revealed)
    assert r is not None and r.function == "refuteElement"
    gid = played.game_id
    # Every refutation it could try reverts, leaving the game where it was.
    expect(p, "NotRefuted", a[3], game.functions.refuteElement(gid, *r.args))
    code_h, attrs, ids = program_entry(honest(), i)
    expect(p, "NotRefuted", a[3], game.functions.refuteProgram(gid, opened.as_arg(), code_h, attrs, list(ids),
                                                               program_proof(honest(), i)))
    expect(p, "AlreadyContested", a[3], game.functions.descend(gid, *[b"\x01" * 32] * 4))
    expect(p, "ClockRunning", a[9], game.functions.timeout(gid))
    p.advance(CLOCK + 1)
    out = decided(p, game, p.tx(a[9], game.functions.timeout(gid)))  # anyone may call it
    assert (out["winner"], out["loser"], out["reason"]) == (a[2].address, a[3].address, TIMEOUT)


def bisected(p: Protocol, game: Any, code: str, element: int) -> tuple[int, StepSide, StepSide, Any]:
    """A game over a claimant that flipped `element` of the first `code` op after op 20, bisected to that op:
    (the op, the claimant's side, the counter's, the play)."""
    a = p.accounts
    i = first(code, after=20)
    cheat, counter = StepSide(flipped(honest(), i, element)), StepSide(honest())
    played = open_game(p, game, honest(), (a[2], cheat), (a[3], counter))
    bisect(p, game, played, (a[2], cheat), (a[3], counter))
    return i, cheat, counter, played


def test_bad_descent_moves_revert_with_named_errors(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    i, cheat, counter, played = bisected(p, game, "mul", 3)
    gid = played.game_id
    op = cheat.open_op(i).as_arg()
    dtype, shape, root, left, right = cheat.reveal_output(i)
    expect(p, "OutputMismatch", a[2], game.functions.openOp(gid, op, (dtype, shape, left, left, right)))
    expect(p, "ChildrenMismatch", a[2], game.functions.openOp(gid, op, (dtype, shape, root, right, right)))
    p.tx(a[2], game.functions.openOp(gid, op, (dtype, shape, root, left, right)))
    expect(p, "WrongStage", a[3], game.functions.revealChunk(gid, b"\x00" * 32))
    level, index, _, pl, pr = game.functions.descentOf(gid).call()
    expect(p, "NoDifference", a[3], game.functions.descend(gid, pl, pr, b"\x00" * 32, b"\x00" * 32))
    move = counter.descend(i, level, index, (pl, pr))
    expect(p, "ChildrenMismatch", a[3], game.functions.descend(gid, *move[:2], move[3], move[3]))
    p.tx(a[3], game.functions.descend(gid, *move))
    level, index, _, pl, pr = game.functions.descentOf(gid).call()
    expect(p, "ChildrenMismatch", a[2], game.functions.descend(gid, pr, pr, b"\x00" * 32, b"\x00" * 32))
    sides = {a[2].address: (a[2], cheat), a[3].address: (a[3], counter)}
    while game.functions.gameOf(gid).call()[0] == DESCEND:
        level, index, _, pl, pr = game.functions.descentOf(gid).call()
        acct, side = sides[game.functions.deadline(gid).call()[0]]
        p.tx(acct, game.functions.descend(gid, *side.descend(i, level, index, (pl, pr))))
    index = game.functions.descentOf(gid).call()[1]
    expect(p, "ChunkMismatch", a[2], game.functions.revealChunk(gid, counter.chunk(i, index)))
    p.tx(a[2], game.functions.revealChunk(gid, cheat.chunk(i, index)))
    assert game.functions.gameOf(gid).call()[0] == REFUTE


def test_a_claimant_whose_own_descent_move_reaches_the_chunk_reveals_it_with_that_move(proto: Protocol,
                                                                                         game: Any) -> None:
    """The counter contests first, so the claimant's move ends a descent of an even number of levels (the sqrt's
    output of 1,210 elements at chunk 0 takes 8): its chunk comes with that move, which must hold its leaf there."""
    p, a = proto, proto.accounts
    i, cheat, counter, played = bisected(p, game, "sqrt", 0)
    gid = played.game_id
    opened = open_disputed(p, game, played, (a[2], cheat))
    sides = {a[2].address: (a[2], cheat), a[3].address: (a[3], counter)}

    def one_move() -> Any:
        level, index, _, pl, pr = game.functions.descentOf(gid).call()
        acct, side = sides[game.functions.deadline(gid).call()[0]]
        move = side.descend(i, level, index, (pl, pr))
        if side is cheat and move[2:] == (cheat.chunk(i, 0), bytes(32)):  # this move reaches chunk 0
            expect(p, "ChunkMismatch", a[2], game.functions.descend(gid, *move[:2], counter.chunk(i, 0), move[3]))
        return p.tx(acct, game.functions.descend(gid, *move))

    receipts = [one_move()]  # the counter's contest
    while game.functions.gameOf(gid).call()[0] == DESCEND:
        receipts.append(one_move())
    assert len(receipts) == 8
    rc = receipts[-1]
    revealed = p.events(rc, game, "ChunkRevealed")
    assert [(e["args"]["index"], e["args"]["chunk"]) for e in revealed] == [(0, cheat.chunk(i, 0))]
    assert game.functions.gameOf(gid).call()[0] == REFUTE  # no separate reveal: the counter refutes next
    expect(p, "WrongStage", a[2], game.functions.revealChunk(gid, cheat.chunk(i, 0)))
    r = counter.refute_chunk(opened, revealed_chunk(p, game, gid, a[2].address, rc))
    assert r is not None and r.function == "refuteElement"
    out = decided(p, game, refute(p, game, played, a[3], r))
    assert (out["winner"], out["reason"]) == (a[3].address, WRONG_ELEMENT)


# ---- clocks: whoever runs out of time at any stage loses ----


STAGES = ["claimant bisecting", "counter bisecting", "claimant opening", "counter refuting", "claimant descending",
          "claimant revealing a chunk", "claimant answering a dot challenge", "counter bisecting prefix sums"]


@pytest.mark.parametrize("stage", STAGES)
def test_the_side_that_runs_out_of_time_loses_at_every_stage(proto: Protocol, game: Any, stage: str) -> None:
    p, a = proto, proto.accounts
    dot = "dot" in stage or "prefix" in stage
    i = first("matmul") if dot else first("mul", after=20)
    cheat = WrongPartialSum(honest(), i, MATMUL_ELEMENT, 9) if dot else StepSide(flipped(honest(), i, 3))
    c, d = (a[2], cheat), (a[3], StepSide(honest()))
    played = open_game(p, game, honest(), c, d)
    gid = played.game_id
    late: Any = game.functions.moveOps(gid, b"\x01" * 32, b"\x02" * 32)
    if stage == "counter bisecting":
        m = cheat.move(0, cheat.n_ops, None)
        p.tx(a[2], game.functions.moveOps(gid, m.at_pending, m.at_next))
    elif stage != "claimant bisecting":
        bisect(p, game, played, c, d)
        late = game.functions.openOp(gid, cheat.open_op(i).as_arg(), cheat.reveal_output(i))
    if stage not in ("claimant bisecting", "counter bisecting", "claimant opening"):
        opened = open_disputed(p, game, played, c)
        late = game.functions.refuteProgram(gid, opened.as_arg(), *program_entry(honest(), i)[:2],
                                            list(program_entry(honest(), i)[2]), program_proof(honest(), i))
    if dot:
        p.tx(a[3], game.functions.challengeDot(gid, *d[1].dot_challenge(opened, MATMUL_ELEMENT).args))
        late = game.functions.answerDot(gid, *cheat.dot_answer(i, MATMUL_ELEMENT, challenged_mid(p, game, gid)))
    if stage == "counter bisecting prefix sums":
        p.tx(a[2], late)
        late = game.functions.moveDot(gid, b"\x01" * 32, b"\x02" * 32)
    if stage in ("claimant descending", "claimant revealing a chunk"):
        level, index, _, pl, pr = game.functions.descentOf(gid).call()
        p.tx(a[3], game.functions.descend(gid, *d[1].descend(i, level, index, (pl, pr))))
        late = game.functions.descend(gid, *[b"\x01" * 32] * 4)
    if stage == "claimant revealing a chunk":
        while game.functions.gameOf(gid).call()[0] == DESCEND:
            level, index, _, pl, pr = game.functions.descentOf(gid).call()
            acct, side = (a[2], cheat) if game.functions.deadline(gid).call()[0] == a[2].address else (a[3], d[1])
            p.tx(acct, game.functions.descend(gid, *side.descend(i, level, index, (pl, pr))))
        late = game.functions.revealChunk(gid, cheat.chunk(i, game.functions.descentOf(gid).call()[1]))
    loser = a[3] if stage.startswith("counter") else a[2]
    mover, due = game.functions.deadline(gid).call()
    assert mover == loser.address
    expect(p, "ClockRunning", a[9], game.functions.timeout(gid))
    p.advance(due - p.w3.eth.get_block("latest")["timestamp"] + 1)
    expect(p, "ClockExpired", loser, late)  # a late move cannot save it
    out = decided(p, game, p.tx(a[9], game.functions.timeout(gid)))
    assert (out["loser"], out["reason"]) == (loser.address, TIMEOUT)
    assert out["winner"] == (a[2] if loser == a[3] else a[3]).address


# ---- bad moves revert by name ----


def test_bad_moves_revert_with_named_errors(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    h = honest()
    i = first("mul", after=20)
    cheat = StepSide(flipped(h, i, 3))
    c, d = (a[2], cheat), (a[3], StepSide(h))
    z = b"\x00" * 32
    expect(p, "NotOpener", a[2], game.functions.open(a[2].address, a[3].address, z, z, 5, z, b"\x01" * 32))
    expect(p, "BadOpCount", a[0], game.functions.open(a[2].address, a[3].address, z, z, 0, z, b"\x01" * 32))
    expect(p, "BadOpCount", a[0], game.functions.open(a[2].address, a[3].address, z, z, 2**24 + 1, z, b"\x01" * 32))
    expect(p, "NoDisagreement", a[0], game.functions.open(a[2].address, a[3].address, z, z, 5, z, z))
    expect(p, "UnknownGame", a[2], game.functions.moveOps(10**6, z, z))
    played = open_game(p, game, h, c, d)
    gid = played.game_id
    expect(p, "NotYourTurn", a[3], game.functions.moveOps(gid, z, z))  # the claimant moves first
    m = cheat.move(0, cheat.n_ops, None)
    p.tx(a[2], game.functions.moveOps(gid, m.at_pending, m.at_next))
    expect(p, "NotYourTurn", a[2], game.functions.moveOps(gid, m.at_pending, m.at_next))  # a second move
    out = cheat.reveal_output(i)
    expect(p, "WrongStage", a[2], game.functions.openOp(gid, cheat.open_op(i).as_arg(), out))
    bisect(p, game, played, c, d)
    expect(p, "NotYourTurn", a[3], game.functions.openOp(gid, cheat.open_op(i).as_arg(), out))
    expect(p, "WrongOp", a[2], game.functions.openOp(gid, cheat.open_op(i - 1).as_arg(), cheat.reveal_output(i - 1)))
    short = cheat.open_op(i)
    expect(p, "BadSlotPath", a[2], game.functions.openOp(gid, (*short.as_arg()[:5], list(short.proof[:-1])), out))
    theirs = StepSide(h).open_op(i)  # the counter's leaf is not in the claimant's prefix
    expect(p, "SlotMismatch", a[2], game.functions.openOp(gid, theirs.as_arg(), StepSide(h).reveal_output(i)))
    opened = open_disputed(p, game, played, c)
    expect(p, "WrongStage", a[2], game.functions.moveOps(gid, z, z))
    expect(p, "NotYourTurn", a[2], game.functions.refuteProgram(gid, opened.as_arg(), z, z, [], []))
    expect(p, "NotOpenedOp", a[3], game.functions.refuteProgram(gid, theirs.as_arg(), z, z, [], []))
    code_h, attrs, ids = program_entry(h, i)
    expect(p, "NotInProgram", a[3], game.functions.refuteProgram(gid, opened.as_arg(), code_h, attrs, list(ids),
                                                                 program_proof(h, i - 1)))
    expect(p, "NotNamedInput", a[3], game.functions.refuteNamedInput(gid, opened.as_arg(), h.tensor_roots[0],
                                                                     input_proof(h, 0)))
    assert StepSide(h).refutation(opened) == CONTEST


def test_a_one_op_trace_goes_straight_to_its_opening(proto: Protocol, game: Any) -> None:
    p, a = proto, proto.accounts
    rc = p.tx(a[0], game.functions.open(a[2].address, a[3].address, b"\x00" * 32, b"\x00" * 32, 1,
                                        keccak256(b"c"), keccak256(b"d")))
    gid = p.events(rc, game, "GameOpened")[0]["args"]["gameId"]
    assert p.events(rc, game, "OpNarrowed")[0]["args"]["op"] == 0
    assert game.functions.gameOf(gid).call()[:3] == [OPEN_OP, 0, 1]


def test_the_contract_and_python_build_the_same_commitments(proto: Protocol, game: Any) -> None:
    h = honest()
    side = StepSide(h)
    assert game.functions.depthFor(side.n_ops).call() == side.depth == 8
    assert game.functions.emptyRoot(side.depth).call() == side.roots[0]
    code_h, attrs, ids = program_entry(h, 5)
    assert game.functions.programLeaf(5, code_h, attrs, list(ids)).call() == keccak256(
        uint256(5) + code_h + attrs + b"".join(uint256(j) for j in ids))
    assert game.functions.inputLeaf(attrs_hash(h.ops[0].attrs), h.tensor_roots[0]).call() == keccak256(
        attrs_hash(h.ops[0].attrs) + h.tensor_roots[0])
