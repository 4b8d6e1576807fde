"""One side of the segment game (``contracts/SegmentGame.sol``; docs/dispute-game.md "Stage (a) and the binding").

Each side replays the disputed segment from the agreed start state on its own and commits to its position
after every step: position i of the bisection is the state root after i steps bound to the losses of those
steps (``transcript_positions.py``).  The claimant then reveals the step the bisection ends on (``reveal``): the
step's program and batch with their proof in the job's step table, the states before and after it entry by
entry with the losses before it and its loss, and its trace's root with the op of every named output (the loss
too) opened in it.  Each side then plays the step game from its own trace of that step (``step_side``).

A ``Flip`` makes a side cheat the smallest way there is: one bit of one op's output in one step flipped, and
everything after it computed from the flipped value, the states that follow included.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from gensyn_py.chain.bisection import Move, next_move
from gensyn_py.crypto.merkle import merkle_proof
from gensyn_py.proof.commitment import transcript_hash
from gensyn_py.proof.lazy_roots import LazyRoots
from gensyn_py.proof.replay_snapshots import Snapshots
from gensyn_py.proof.state import canonical_arrays, key_hash, state_keys, state_root
from gensyn_py.proof.step_program import ops_root
from gensyn_py.proof.step_side import StepSide
from gensyn_py.proof.step_table import StepTable, batch_root_of
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.proof.tensor_commit import DataRoots, tensor_roots
from gensyn_py.proof.trace import Trace, TraceError, TracingBackend
from gensyn_py.proof.transcript_positions import Positions, loss_bytes

if TYPE_CHECKING:
    import numpy as np
    import torch

    from gensyn_py.train.trainer import Trainer

LOSS = "loss"  # the one named output of a step that is not state


@dataclass(frozen=True)
class Flip:
    """A cheat: at unit step `step`, bit `bit` of element `element` of op `op`'s float32 output is flipped, or the
    element is set to `value` when one is given (a dot element from a wrong partial sum, say: `sums` are then the
    cheat's prefix sums of it, which its side answers a dot challenge with)."""

    step: int
    op: int
    element: int
    bit: int = 0
    value: float | None = None
    sums: tuple[int, ...] | None = None


def matmuls(trace: Trace) -> list[int]:
    """The step's matmul ops, the longest contraction K first."""
    return sorted((j for j, op in enumerate(trace.ops) if op.code == "matmul"),
                  key=lambda j: -int(trace.values[trace.ops[j].inputs[0]].shape[-1]))


def partial_sum_flip(trace: Trace, step: int, op: int | None = None) -> Flip:
    """A cheat inside matmul `op` (the longest by default) of a traced step (unit step `step`): its middle element
    computed from a partial sum off from multiply-add K/3 on, by 2^16 times the least change that moves the rounded
    element, the element that sum rounds to, and the prefix sums the cheat answers with."""
    import numpy as np

    from gensyn_py.proof.trace import recompute_element
    from gensyn_py.repro import reference as R

    i = matmuls(trace)[0] if op is None else op
    element, k = int(trace.values[i].size) // 2, int(trace.values[trace.ops[i].inputs[0]].shape[-1]) // 3
    d = recompute_element(trace, i, element).detail
    if d is None:
        raise TraceError(f"op {i} is not a dot op")
    least = next(1 << b for b in range(8, 200) if R.round_int(d.n + (1 << b), d.scale) != d.value)
    sums = tuple(v + (least << 16 if j >= k else 0) for j, v in enumerate(d.partial))
    return Flip(step, i, element, value=float(np.float32(R.round_int(sums[-1], d.scale))), sums=sums)


def middle_elementwise(trace: Trace) -> int:
    """The elementwise op with the largest float32 output in the middle half of a step: where a one-bit cheat (and
    the benches' cheats) flip a bit, far from both the named inputs and outputs."""
    import numpy as np

    from gensyn_py.repro.opset import ELEMENTWISE

    n = len(trace.ops)
    ids = [i for i in range(n // 4, 3 * n // 4) if trace.ops[i].code in ELEMENTWISE
           and trace.values[i].dtype == np.float32 and trace.values[i].size > 0]
    return max(ids, key=lambda i: trace.values[i].size)


class _Flipping(TracingBackend):
    """Traces a step whose op `flip.op` computes its output with one bit flipped; later ops read the flipped value."""

    def __init__(self, inner: Any, flip: Flip) -> None:
        super().__init__(inner)
        self.flip = flip

    def _record(self, code: str, inputs: list[int], attrs: tuple[Any, ...], out: Any) -> Any:
        import torch

        if len(self.ops) == self.flip.op:
            out = out.detach().clone().contiguous()
            if self.flip.value is None:
                out.view(-1).view(torch.int32)[self.flip.element] ^= 1 << self.flip.bit
            else:
                out.view(-1)[self.flip.element] = self.flip.value
        return super()._record(code, inputs, attrs, out)


def flipped_step(trainer: Trainer, flip: Flip) -> float:
    """Take the trainer's next step with `flip` applied (the cheat); its loss."""
    trace = trace_step(trainer, _Flipping(_torch(), flip))
    trainer.load_state_dict(next_state(trainer.state_dict(), trace))
    return float(trace.values[trace.outputs[LOSS]].reshape(-1)[0])


def next_state(state: Mapping[str, torch.Tensor], trace: Trace) -> dict[str, torch.Tensor]:
    """The state after the traced step: its named outputs, the cursor one step on, everything else carried."""
    import torch

    out = dict(state)
    for key, i in trace.outputs.items():
        if key != LOSS:
            out[key] = torch.from_numpy(trace.values[i].copy())
    round_, shard, step = (int(v) for v in state["cursor"].tolist())
    out["cursor"] = torch.tensor([round_, shard, step + 1], dtype=torch.int64)
    return out


def entries(state: Mapping[str, np.ndarray[Any, Any]], data: DataRoots | None = None
            ) -> tuple[list[bytes], list[bytes]]:
    """(key hashes, tensor roots) of a state, in the state tree's order (``ISegmentGame.StateEntries``); the data
    roots looked up in and kept in `data` when given."""
    keys = state_keys(state)
    return [key_hash(k) for k in keys], tensor_roots([state[k] for k in keys], data)


class StateRoots(LazyRoots):
    """The state roots of `states`, hashed on demand and kept; the tensors' data roots are looked up in and kept in
    `data` when given (a tensor a step leaves as it was, the RNG state, say, is hashed once)."""

    def __init__(self, states: list[dict[str, np.ndarray[Any, Any]]], data: DataRoots | None = None) -> None:
        super().__init__(len(states))
        self._states = states
        self._data = data

    def _compute(self, j: int) -> bytes:
        return state_root(self._states[j], self._data)


class SegmentSide:
    """A side's replay of one segment, from `trainer` positioned at the segment's start (its state is the start
    state both sides agree on); `flip` makes it cheat. The side takes the trainer over: it replays the segment with
    it, then loads into it whichever state a trace is asked of."""

    def __init__(self, trainer: Trainer, table: StepTable, flip: Flip | None = None) -> None:
        spec = trainer.spec
        if trainer.step % spec.checkpoint_interval:
            raise TraceError(f"a segment starts at a multiple of {spec.checkpoint_interval}, not at {trainer.step}")
        self.spec, self.dataset = spec, trainer.dataset
        self.round, self.shard, self.first = trainer.round, trainer.shard, trainer.step
        self.table, self.flip = table, flip
        # This side's data roots by content, shared by its state roots, its traces and its reveal: a state's tensor,
        # the trace input that reads it and the output that writes the next one are hashed once (one per side, as
        # two nodes would each hash their own).
        self._data: DataRoots = {}
        self.states = [canonical_arrays(trainer.state_dict())]
        self.losses: list[bytes] = []  # each step's loss, as its transcript has it
        fast = Snapshots.of(trainer, self.states[0])
        shots = []
        for _ in range(spec.checkpoint_interval):
            self._advance(trainer)
            if fast is None:
                self.states.append(canonical_arrays(trainer.state_dict()))
            else:
                shots.append(fast.take(trainer))
        if fast is not None:
            self.states += [fast.state(shot) for shot in shots]
        self._trainer = trainer

    def _advance(self, trainer: Trainer) -> None:
        if self.flip is not None and trainer.step == self.flip.step:
            loss = flipped_step(trainer, self.flip)
        else:
            loss = trainer.train_step()
        self.losses.append(loss_bytes(loss))

    @cached_property
    def roots(self) -> StateRoots:
        """The state root after 0, 1, ..., interval steps of the segment, each hashed when first asked for: a game
        asks for about log2(interval) of them, and hashing a state costs more than the step that made it."""
        return StateRoots(self.states, self._data)

    @cached_property
    def positions(self) -> Positions:
        """The game's position after 0, 1, ..., interval steps: each state root bound to the losses before it."""
        return Positions(self.roots, self.losses)

    def move(self, lo: int, hi: int, pending: bytes | None) -> Move:
        """This side's bisection move (``SegmentGame.moveSteps``)."""
        return next_move(lo, hi, pending, self.positions)

    def contest(self) -> tuple[bytes, bytes]:
        """The counter's ``SegmentGame.contest``: its end position, and its position at the first midpoint (its
        first bisection move, made with the contest)."""
        k = len(self.positions) - 1
        return self.positions[k], next_move(0, k, None, self.positions).at_next if k > 1 else bytes(32)

    def transcript_hash(self, author: str | bytes | None, end: bytes | None = None) -> bytes:
        """This side's loss transcript of the segment as `author` commits it (``proof/commitment.py``), ending at its
        own end state or at `end`."""
        losses = [struct.unpack("<f", b)[0] for b in self.losses]
        return transcript_hash(losses, self.roots[-1] if end is None else end, author)

    def open_transcript(self, author: str, pending: bytes, partial_proof: Sequence[bytes] = ()) -> tuple[Any, ...]:
        """The claimant's ``SegmentGame.openTranscript`` arguments after the game id: its transcript (by `author`,
        with the segment's path in the unit's partial root when inherited) and its answer to the counter's first
        move (`pending`, its position at the first midpoint)."""
        k = len(self.positions) - 1
        m = next_move(0, k, pending if k > 1 else None, self.positions)
        return (author, b"".join(self.losses), list(partial_proof)), m.at_pending, m.at_next

    @cache  # noqa: B019 - one side per game, kept for the game's length
    def trace(self, t: int) -> Trace:
        """This side's trace of step t of the segment (from its own state after t steps)."""
        import torch

        trainer = self._trainer
        trainer.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in self.states[t].items()})
        flip = self.flip if self.flip is not None and self.flip.step == self.first + t else None
        trace = trace_step(trainer, None if flip is None else _Flipping(_torch(), flip))
        trace.data_roots = self._data
        return trace

    @cache  # noqa: B019
    def step_side(self, t: int) -> StepSide:
        """The step game's side for step t: this side's trace, its named inputs bound to the state after t steps (a
        cheat's side answers a dot challenge of the element it cheated in with its own sums)."""
        flip, sums = self.flip, None
        if flip is not None and flip.sums is not None and flip.step == self.first + t:
            sums = {(flip.op, flip.element): flip.sums}
        return StepSide(self.trace(t), self.states[t], sums)

    def reveal(self, t: int) -> tuple[Any, ...]:
        """The claimant's ``revealStep`` argument (``ISegmentGame.StepReveal``) for step t of the segment."""
        trace, side = self.trace(t), self.step_side(t)
        outputs = sorted(trace.outputs, key=key_hash)
        step = self.first + t
        proof = merkle_proof(self.table.leaves(), self.table.position(self.round, self.shard, step))
        opened = [side.open_op(trace.outputs[k], side.n_ops).as_arg() for k in outputs]
        before, after = entries(self.states[t], self._data), entries(self.states[t + 1], self._data)
        return (ops_root(trace), [key_hash(k) for k in outputs], [trace.outputs[k] for k in outputs],
                batch_root_of(trace), proof, before, after, side.n_ops, side.root, opened,
                self.positions.running[t], self.losses[t])


def _torch() -> Any:
    from gensyn_py.repro.backend import TORCH

    return TORCH
