"""One side's play in a step game (``contracts/StepGame.sol``), from its own trace of the step.

A side knows its trace; from it and the chain's state it computes every move, so a player restarted mid-game
needs nothing it kept:

- the bisection over op-prefix roots (``op_prefix``), with ``chain.bisection.next_move``;
- the claimant's opening of the disputed op: its leaf and the sibling path of its slot;
- the counter's refutation of that opening, checked in the order the contract decides them: code, attributes
  or wiring against the program; a named input that is not the agreed one; an input root that is not its
  producer's output; else an output that differs, contested down to one chunk (``descent``), where one element
  is recomputed on-chain (elementwise ops) or narrowed to one multiply-add (dot ops).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from gensyn_py.chain.bisection import Move, midpoint, next_move
from gensyn_py.proof.descent import DataTree, RevealedChunk
from gensyn_py.proof.onchain_trace import (
    DOT_OPS,
    NO_ELEMENT,
    OpOpening,
    dot_move,
    dot_operands,
    dot_partials,
    double_bits,
    element_check,
    open_element,
    open_op,
    tensor_ref,
)
from gensyn_py.proof.op_prefix import depth_for, path_of, prefix_levels, prefix_roots, slot_path
from gensyn_py.proof.packed_moves import pack_dot_step, pack_element_check
from gensyn_py.proof.prefix_sums import int256
from gensyn_py.proof.step_program import input_proof, program_entry, program_proof
from gensyn_py.proof.tensor_commit import CHUNK, chunk_of
from gensyn_py.proof.trace import Trace, TraceOp, recompute_element
from gensyn_py.repro import reference as R
from gensyn_py.repro.opset import ELEMENTWISE


@dataclass(frozen=True)
class Refutation:
    """The counter's call: the contract function's name and its arguments after the game id."""

    function: str
    args: tuple[Any, ...]


def bare(opened: OpOpening) -> tuple[Any, ...]:
    """The opened leaf without its path: the referees prove it against the opened leaf's hash (a one-leaf tree)."""
    return OpOpening(opened.index, opened.code_hash, opened.attrs_hash, opened.inputs, opened.output_root,
                     ()).as_arg()


CONTEST = Refutation("descend", ())  # contest the output: the counter's first descent (its args come from the chain)
INDEXED = frozenset(["gather", "take", "embed"])  # movement ops that read an index tensor
ROW_OPS = frozenset(["rowmax", "first_max"])  # decided by a witness entry and a refuting one
# what `MoveReferee.check` decides
MOVES = frozenset(["const", "zeros", "index_map", "reshape", "t", "narrow", "cat", "permute", "append_ones",
                   "onehot"]) | INDEXED
DECIDED = ELEMENTWISE | frozenset(DOT_OPS) | MOVES | ROW_OPS  # every op whose output the contract judges
INDEX_MAPS = ("im2col", "col2im", "pool", "unpool", "causal")  # `IndexMaps.sol`'s kind numbers, in order


class StepSide:
    """A party to a step game holding `trace`; `state`, when given, is the whole state the step starts from (the
    named-inputs root is then that state's, as the segment game opens it; ``step_program.inputs_root``)."""

    def __init__(self, trace: Trace, state: Mapping[str, np.ndarray[Any, Any]] | None = None,
                 sums: Mapping[tuple[int, int], tuple[int, ...]] | None = None) -> None:
        """`sums`: prefix sums of (op, element) this side answers with instead of computing them from its trace (a
        cheat's, whose element was computed from a wrong partial sum)."""
        self.trace = trace
        self.state = state
        self._trees: dict[int, DataTree] = {}
        self._sums: dict[tuple[int, int], tuple[int, ...]] = dict(sums or {})
        self._prefixes: dict[int, list[list[bytes]]] = {}  # prefix trees by ops filled, kept for ``open_op``

    @cached_property
    def leaves(self) -> list[bytes]:
        return [self.trace.op_leaf(i) for i in range(len(self.trace.ops))]

    @property
    def n_ops(self) -> int:
        return len(self.trace.ops)

    @cached_property
    def depth(self) -> int:
        return depth_for(self.n_ops)

    @cached_property
    def roots(self) -> list[bytes]:
        """The prefix root at every position 0..n_ops."""
        return prefix_roots(self.leaves, self.depth)

    @property
    def root(self) -> bytes:
        """The prefix root of the whole trace: what the game opens with."""
        return self.roots[-1]

    def move(self, lo: int, hi: int, pending: bytes | None) -> Move:
        """This side's bisection move (``StepGame.moveOps``)."""
        return next_move(lo, hi, pending, self.roots)

    def contest(self) -> tuple[bytes, bytes]:
        """The counter's ``StepGame.contestTrace`` (a game the segment game opened): its trace's root, and its root
        at the first midpoint (its first bisection move, made with it)."""
        n = self.n_ops
        return self.root, next_move(0, n, None, self.roots).at_next if n > 1 else bytes(32)

    def open_op(self, i: int, filled: int | None = None) -> OpOpening:
        """Op i's leaf with its slot path in the prefix of `filled` ops: by default the claimant's opening of the
        disputed op (``StepGame.openOp``: the prefix of i ops); with ``n_ops`` op i opened in the whole trace."""
        o = open_op(self.trace, i)
        filled = i if filled is None else filled
        levels = self._prefixes.get(filled)
        if levels is None:  # the reveal opens every named output in the whole trace: one tree for all of them
            levels = self._prefixes[filled] = prefix_levels(self.leaves, filled, self.depth)
        return OpOpening(o.index, o.code_hash, o.attrs_hash, o.inputs, o.output_root, tuple(path_of(levels, i)))

    def refutation(self, opened: OpOpening) -> Refutation | None:
        """The counter's refutation of the claimant's opening of op i (None when this side finds none), checked in
        the order the contract decides them; an output that differs is contested (``contestOutput``), and
        ``refute_chunk`` answers the chunk the descent ends on."""
        i, t = opened.index, self.trace
        code, attrs, ids = program_entry(t, i)
        if (code, attrs, ids) != (opened.code_hash, opened.attrs_hash, tuple(j for j, _ in opened.inputs)):
            return Refutation("refuteProgram", (opened.as_arg(), code, attrs, list(ids), program_proof(t, i)))
        if t.ops[i].code == "input":
            if t.tensor_roots[i] != opened.output_root:
                return Refutation("refuteNamedInput", (opened.as_arg(), t.tensor_roots[i],
                                                         input_proof(t, i, self.state)))
            return None
        for j, (p, root) in enumerate(opened.inputs):
            if t.tensor_roots[p] != root:
                producer = open_op(t, p)
                at_prefix = OpOpening(p, producer.code_hash, producer.attrs_hash, producer.inputs,
                                      producer.output_root, tuple(slot_path(self.leaves, p, i, self.depth)))
                return Refutation("refuteInputRoot", (opened.as_arg(), j, at_prefix.as_arg()))
        if t.ops[i].code in DECIDED and t.tensor_roots[i] != opened.output_root:
            return CONTEST
        return None

    def refute_chunk(self, opened: OpOpening, revealed: RevealedChunk) -> Refutation | None:
        """The counter's refutation of an element of the chunk the claimant revealed: recomputed on-chain for an
        elementwise op (``refuteElement``), narrowed to one multiply-add for a dot op (``challengeDot``)."""
        i, t = opened.index, self.trace
        own = t.values[i].reshape(-1)
        item = own.dtype.itemsize
        per = CHUNK // item
        start = revealed.index * per
        wrong = next((e for e in range(start, min(start + per, own.size))
                      if chunk_of(own[e:e + 1], 0)[:item] != revealed.chunk[(e - start) * item:(e - start + 1) * item]),
                     None)
        if wrong is None:
            return None
        if t.ops[i].code in DOT_OPS:
            return self.dot_challenge(opened, wrong)
        if t.ops[i].code in ROW_OPS:
            return Refutation("challengeRow", (opened.as_arg(), wrong))
        out = self._out(opened)
        out_el = (wrong, revealed.index, revealed.chunk, list(revealed.siblings))
        if t.ops[i].code in MOVES:
            return Refutation("refuteMove", (self._move_check(opened, wrong, out, out_el),))
        c = element_check(t, i, wrong)
        return Refutation("refuteElement", (pack_element_check((bare(opened), c[1], c[2], out, out_el, c[5])),))

    def _move_check(self, opened: OpOpening, element: int, out: tuple[Any, ...], out_el: tuple[Any, ...]
                    ) -> tuple[Any, ...]:
        """The `MoveCheck` of output element `element` of a movement or constant op: the input element it copies
        (found by running the op on the input's flat positions), narrow's attributes, a constant's value; for a
        ``cat``, the input holding it and the length along ``dim`` and data root of every input before that one;
        for ``gather``, ``take`` and ``embed``, the index element that names it."""
        op, t = self.trace.ops[opened.index], self.trace
        none: tuple[bytes, int, list[int]] = (bytes(32), 0, [])  # no input: a TensorRef of nothing
        no_index = (none, NO_ELEMENT.as_arg())
        if op.code in ("const", "zeros"):
            value = double_bits(float(op.attrs[0])) if op.code == "const" else 0
            return (bare(opened), none, NO_ELEMENT.as_arg(), out, out_el, [], value, *no_index)
        if op.code == "index_map":  # recomputed from its kind (by number) and parameters
            kind, params = op.attrs
            return (bare(opened), none, NO_ELEMENT.as_arg(), out, out_el, [int(v) for v in params],
                    INDEX_MAPS.index(kind), *no_index)
        if op.code in INDEXED:
            table, copied, index, named = self._indexed_source(op, element)
            return (bare(opened), table, copied, out, out_el, [], 0, index, named)
        if op.code == "onehot" or (op.code == "append_ones" and
                                   element % (t.values[op.inputs[0]].shape[1] + 1) == t.values[op.inputs[0]].shape[1]):
            # onehot reads label i of output row i; an appended 1.0 reads nothing
            (j,) = op.inputs
            opening = (open_element(t, j, element // int(op.attrs[0])).as_arg() if op.code == "onehot"
                       else NO_ELEMENT.as_arg())
            return (bare(opened), tensor_ref(t, j).as_arg(), opening, out, out_el, [], 0, *no_index)
        # Tag every input element with (input, flat position) and run the op on the tags.
        tags = [(k << 40) + np.arange(t.values[j].size, dtype=np.int64).reshape(t.values[j].shape)
                for k, j in enumerate(op.inputs)]
        tag = int(np.asarray(R.execute(op.code, tags, op.attrs)).reshape(-1)[element])
        k, source = tag >> 40, tag & ((1 << 40) - 1)
        j = op.inputs[k]
        ints = ([int(v) for v in op.attrs] if op.code in ("narrow", "cat")
                else [int(v) for v in op.attrs[0]] if op.code == "permute" else [])
        if op.code == "cat":
            dim = int(op.attrs[0])
            for before in op.inputs[:k]:
                ints += [t.values[before].shape[dim], int.from_bytes(self.data_tree(before).root, "big")]
        return (bare(opened), tensor_ref(t, j).as_arg(), open_element(t, j, source).as_arg(), out, out_el, ints, 0,
                *no_index)

    def _indexed_source(self, op: TraceOp, element: int) -> tuple[Any, Any, Any, Any]:
        """(table header, table element or none, index header, index element) of an op that
        looks up its first input at positions its second names: ``gather`` (row i's label), ``take`` (flat
        positions, -1 reading +0) and ``embed`` (whole rows)."""
        t = self.trace
        table, idx = t.values[op.inputs[0]], t.values[op.inputs[1]].reshape(-1)
        width = 1 if op.code == "take" else table.shape[1]
        at = element // width if op.code == "embed" else element
        rows = table.size + 1 if op.code == "take" else width if op.code == "gather" else table.shape[0]
        v = int(idx[at]) % rows  # a negative index counts from the end
        source = (element * width + v if op.code == "gather" else v if op.code == "take"
                  else v * width + element % width)
        opening = NO_ELEMENT if op.code == "take" and v == rows - 1 else open_element(t, op.inputs[0], source)
        return (tensor_ref(t, op.inputs[0]).as_arg(), opening.as_arg(), tensor_ref(t, op.inputs[1]).as_arg(),
                open_element(t, op.inputs[1], at).as_arg())

    # ---- a rowmax or first_max element: the claimant's witness entry, the counter's refuting entry ----

    def _out(self, opened: OpOpening) -> tuple[Any, ...]:
        """The claimant's output header of the opened op (a `TensorRef`: its root and this side's dtype and shape)."""
        ref = tensor_ref(self.trace, opened.index)
        return (opened.output_root, ref.dtype, list(ref.shape))

    def _row_check(self, opened: OpOpening, entry: int, out_el: tuple[Any, ...]) -> tuple[Any, ...]:
        t, op = self.trace, self.trace.ops[opened.index]
        out = self._out(opened)
        w = op.inputs[0]
        if op.code == "first_max":  # the row's maximum too
            width = t.values[w].shape[-1]
            maximum = (tensor_ref(t, op.inputs[1]).as_arg(), open_element(t, op.inputs[1], entry // width).as_arg())
        else:
            maximum = ((bytes(32), 0, []), NO_ELEMENT.as_arg())
        return (bare(opened), tensor_ref(t, w).as_arg(), open_element(t, w, entry).as_arg(), out, out_el, *maximum)

    def _row(self, opened: OpOpening, element: int) -> tuple[Any, Any, int]:
        """(the disputed row of the op's first input, the row's maximum for first_max, the row's width)."""
        t, op = self.trace, self.trace.ops[opened.index]
        w = t.values[op.inputs[0]]
        width = w.shape[-1]
        row = w.reshape(-1, width)[element // width if op.code == "first_max" else element]
        m = t.values[op.inputs[1]].reshape(-1)[element // width] if op.code == "first_max" else None
        return row, m, width

    def row_answer(self, opened: OpOpening, element: int) -> Refutation | None:
        """The claimant's ``answerRow`` (None when its committed element has no answer). rowmax: the first entry
        of row `element` that, plus +0, is its committed maximum. first_max (i, j): entry j when it claims true;
        else an entry showing false (j unequal, an earlier equal entry, or for j = 0 a later equal one)."""
        t, code = self.trace, self.trace.ops[opened.index].code
        row, m, width = self._row(opened, element)
        mine = t.values[opened.index].reshape(-1)[element]
        if code == "first_max":
            j, equal = element % width, row == m  # NumPy's ==: -0 == +0, a NaN equals nothing
            if bool(mine):
                k: int | None = j if equal[j] or j == 0 else None
            elif j != 0 and not equal[j]:
                k = j
            elif equal[:j].any():
                k = int(np.argmax(equal[:j]))
            elif j == 0 and equal[1:].any():
                k = 1 + int(np.argmax(equal[1:]))
            else:
                k = None
            if k is None:
                return None
            entry = element - j + k
        else:
            hits = np.isnan(row) if np.isnan(mine) else ((row + np.float32(0)).view(np.uint32) == mine.view(np.uint32))
            if not hits.any():
                return None
            entry = element * width + int(np.argmax(hits))
        return Refutation("answerRow", (self._row_check(opened, entry, open_element(t, opened.index, element)
                                                        .as_arg()),))

    def row_refutation(self, opened: OpOpening, revealed: RevealedChunk, element: int) -> Refutation | None:
        """The counter's ``refuteRow`` against the claimant's element (read from the chunk it revealed), or None.
        rowmax: an entry that is NaN or above the maximum. first_max (i, j): an equal entry before j where it
        claims true at an equal j, any equal entry where it claims true at an unequal j = 0, entry 0 where it
        claims false at j = 0."""
        code = self.trace.ops[opened.index].code
        row, m, width = self._row(opened, element)
        item = 1 if code == "first_max" else 4
        at = (element * item) % CHUNK
        raw = revealed.chunk[at:at + item]
        if code == "first_max":
            j, equal = element % width, row == m
            if raw == b"\x01" and equal[j]:
                candidates = equal[:j]
            elif raw == b"\x01" and j == 0:
                candidates = equal
            elif raw == b"\x00" and j == 0:
                candidates = equal[:1]
            else:
                return None
            if not candidates.any():
                return None
            entry = element - j + int(np.argmax(candidates))
        else:
            mx = np.frombuffer(raw, dtype="<f4")[0]
            bigger = np.isnan(row) | (row > mx)
            if np.isnan(mx) or not bigger.any():
                return None
            entry = element * width + int(np.argmax(bigger))
        out_el = (element, revealed.index, revealed.chunk, list(revealed.siblings))
        return Refutation("refuteRow", (self._row_check(opened, entry, out_el),))

    # ---- the descent into the disputed op's output ----

    def data_tree(self, i: int) -> DataTree:
        tree = self._trees.get(i)
        if tree is None:
            tree = self._trees[i] = DataTree(self.trace.values[i])
        return tree

    def reveal_output(self, i: int) -> tuple[Any, ...]:
        """The `OutputReveal` the claimant opens op i with: its output header, data root and the root's children."""
        ref, tree = tensor_ref(self.trace, i), self.data_tree(i)
        top = len(tree.levels) - 1
        return (ref.dtype, list(ref.shape), tree.root, *tree.children(top, 0))

    def descend(self, i: int, level: int, index: int, pending: tuple[bytes, bytes]) -> tuple[bytes, ...]:
        """This side's ``descend`` arguments at node (level, index) of op i's output tree."""
        return self.data_tree(i).move(level, index, pending)

    def chunk(self, i: int, index: int) -> bytes:
        """Chunk `index` of op i's output: the claimant's ``revealChunk``."""
        return chunk_of(self.trace.values[i], index)

    # ---- a dot element: the claimant's answer, both sides' prefix sums, the counter's last move ----

    def dot_sums(self, i: int, element: int) -> tuple[int, ...]:
        """This side's prefix sums of output element `element` of dot op i (partial[k]: the first k + 1 products)."""
        sums = self._sums.get((i, element))
        if sums is None:
            sums = self._sums[(i, element)] = dot_partials(self.trace, i, element)
        return sums

    def dot_challenge(self, opened: OpOpening, element: int) -> Refutation:
        """The counter's ``challengeDot`` of `element`: its sum N and its prefix sum at the first midpoint (the first
        move of the bisection over prefix sums, made with the challenge)."""
        sums = self.dot_sums(opened.index, element)
        at_mid = self.dot_positions(opened.index, element)[midpoint(0, len(sums))] if len(sums) > 1 else bytes(32)
        return Refutation("challengeDot", (opened.as_arg(), element, sums[-1], at_mid))

    def dot_answer(self, i: int, element: int, counter_mid: bytes) -> tuple[Any, ...]:
        """The claimant's ``answerDot`` arguments after the game id: the witnesses of its block exponents, its
        output element, its sum N and its move of the bisection over prefix sums on the counter's sum at the
        midpoint (`counter_mid`, posted with its ``challengeDot``)."""
        sums = self.dot_sums(i, element)
        m = dot_move(self.trace, i, element, 0, sums)
        z = bytes(32)
        move = next_move(0, len(sums), counter_mid, self.dot_positions(i, element)) if len(sums) > 1 else None
        return ((bare(self.open_op(i)), *m[1:]), tensor_ref(self.trace, i).as_arg(),
                open_element(self.trace, i, element).as_arg(), sums[-1],
                *((move.at_pending, move.at_next) if move is not None else (z, z)))

    def block_refutation(self, opened: OpOpening, element: int, blocks: tuple[int, int]) -> Refutation | None:
        """The counter's ``refuteBlock`` when the claimant's block exponents (`blocks`, from its ``answerDot``) are
        below the rule's for the disputed element: the entry of the row of A (or column of B) whose exponent field
        is the rule's block exponent shows it. None when both are the rule's."""
        i = opened.index
        d = recompute_element(self.trace, i, element).detail
        if d is None:
            return None
        m = dot_move(self.trace, i, element, 0, blocks=blocks)
        for of_a, rule, claimed, witness in ((True, d.block_a, blocks[0], m[7]), (False, d.block_b, blocks[1], m[8])):
            if rule > claimed:
                return Refutation("refuteBlock", ((bare(opened), *m[1:]), witness, of_a))
        return None

    def non_finite(self, i: int, element: int) -> tuple[Any, ...] | None:
        """The claimant's ``declareNonFinite`` arguments after the game id when the element's row of A or column of B
        holds a NaN or an infinity (the non-finite rule, not on-chain yet); None for a finite element."""
        for k in range(dot_operands(self.trace, i, element, 0).length):
            ops = dot_operands(self.trace, i, element, k)
            sides = [(True, ops.a_tensor, ops.a_index)] if self.trace.ops[i].code != "index_sum" else []
            if ops.b_tensor is not None and ops.b_index is not None:
                sides.append((False, ops.b_tensor, ops.b_index))
            for of_a, tensor, index in sides:
                if not np.isfinite(self.trace.values[tensor].reshape(-1)[index]):
                    m = dot_move(self.trace, i, element, 0)
                    witness = (k, open_element(self.trace, tensor, index).as_arg())
                    return ((bare(self.open_op(i)), *m[1:]), witness, of_a)
        return None

    def dot_positions(self, i: int, element: int) -> list[bytes]:
        """Position p of the bisection over prefix sums: the sum of the first p products, as a word."""
        return [int256(v) for v in (0, *self.dot_sums(i, element))]

    def dot_step(self, opened: OpOpening, element: int, k: int, prev: int, cur: int,
                 blocks: tuple[int, int]) -> bytes:
        """The counter's ``refuteDotStep`` move for multiply-add k, packed (``packed_moves.pack_dot_step``): a_k
        and b_k opened in the (agreed) inputs, the agreed sum `prev` of k products and the claimant's `cur` of
        k + 1 (the game holds both from its bisection), at the claimant's block exponents `blocks` (witnessed
        with its answer, so none are opened again)."""
        i = opened.index
        op = self.trace.ops[i]
        ins = [tensor_ref(self.trace, j).as_arg() for j in op.inputs]
        rows = int(op.attrs[0]) if op.code == "index_sum" else 0
        ops = dot_operands(self.trace, i, element, k)
        a = open_element(self.trace, ops.a_tensor, ops.a_index)
        b = None if ops.b_tensor is None or ops.b_index is None else open_element(self.trace, ops.b_tensor,
                                                                                     ops.b_index).as_arg()
        return pack_dot_step(bare(opened), ins, rows, element, k, a.as_arg(), b, (prev, cur), blocks)

