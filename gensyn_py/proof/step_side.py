"""One side's play in a step game (``contracts/StepGame.sol``), from its own trace of the step.

A side knows its trace; from it and the chain's state it computes every move, so a player restarted mid-game
needs nothing it kept:

- the bisection over op-prefix roots (``op_prefix``), with ``chain.bisection.next_move``;
- the claimant's opening of the disputed op: its leaf and the sibling path of its slot;
- the counter's refutation of that opening, checked in the order the contract decides them: code, attributes
  or wiring against the program; a named input that is not the agreed one; an input root that is not its
  producer's output; an output element the rule does not give (elementwise ops, with the claimant's published
  trace, whose output element the counter opens).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gensyn_py.chain.bisection import Move, next_move
from gensyn_py.proof.onchain_trace import OpOpening, element_check, open_op
from gensyn_py.proof.op_prefix import depth_for, prefix_roots, slot_path
from gensyn_py.proof.step_program import input_proof, program_entry, program_proof
from gensyn_py.proof.trace import Trace, TraceError, check_element
from gensyn_py.repro.opset import ELEMENTWISE


@dataclass(frozen=True)
class Refutation:
    """The counter's call: the contract function's name and its arguments after the game id."""

    function: str
    args: tuple[Any, ...]


class StepSide:
    """A party to a step game holding `trace`."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

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

    def open_op(self, i: int) -> OpOpening:
        """The claimant's opening of op i (``StepGame.openOp``): its leaf and slot i's sibling path."""
        o = open_op(self.trace, i)
        return OpOpening(o.index, o.code_hash, o.attrs_hash, o.inputs, o.output_root,
                         tuple(slot_path(self.leaves, i, i, self.depth)))

    def refutation(self, opened: OpOpening, claimant: Trace | None = None) -> Refutation | None:
        """The counter's refutation of the claimant's opening of op i (None when this side finds none):
        `claimant` is the claimant's published trace, needed only to open one of its output elements."""
        i, t = opened.index, self.trace
        code, attrs, ids = program_entry(t, i)
        if (code, attrs, ids) != (opened.code_hash, opened.attrs_hash, tuple(j for j, _ in opened.inputs)):
            return Refutation("refuteProgram", (opened.as_arg(), code, attrs, list(ids), program_proof(t, i)))
        if t.ops[i].code == "input":
            if t.tensor_roots[i] != opened.output_root:
                return Refutation("refuteNamedInput", (opened.as_arg(), t.tensor_roots[i], input_proof(t, i)))
            return None
        for j, (p, root) in enumerate(opened.inputs):
            if t.tensor_roots[p] != root:
                producer = open_op(t, p)
                at_prefix = OpOpening(p, producer.code_hash, producer.attrs_hash, producer.inputs,
                                      producer.output_root, tuple(slot_path(self.leaves, p, i, self.depth)))
                return Refutation("refuteInputRoot", (opened.as_arg(), j, at_prefix.as_arg()))
        if claimant is not None and t.ops[i].code in ELEMENTWISE:
            element = wrong_element(claimant, i)
            if element is not None:
                c = element_check(claimant, i, element)
                return Refutation("refuteElement", ((opened.as_arg(), *c[1:]),))
        return None


def wrong_element(trace: Trace, i: int) -> int | None:
    """The first output element of op i that its recomputation from the op's inputs does not give."""
    out = trace.values[i]
    if out.size == 0:
        return None
    try:
        for e in range(out.size):
            if not check_element(trace, i, e):
                return e
    except (TraceError, ValueError, IndexError):
        return None
    return None

