"""A repro job's step table: the program and the inputs of every training step, committed with the job
(``JobParams.stepsRoot``) so that a dispute game judges a step against what the requester asked for.

- A step's **program root** is ``step_program.program_root`` of its trace: its ops and where its named
  outputs come from, never values.  A unit's first step (no optimizer state yet) runs one program and every
  later step another, so the table is built from two traced steps, whatever the job's length.
- A step's **batch root** is the Merkle root of its named inputs that are not state: ``lr``, ``x`` and ``y``,
  each entry ``keccak256(key hash ++ tensor root)`` (``step_program.input_leaf``), in key-hash order.
- ``leaf(round, shard, step) = keccak256(uint256 round ++ uint256 shard ++ uint256 step ++ program root ++
  batch root)``; the table's root is the Merkle root (``crypto.merkle``) of the leaves of every training
  unit's steps, in (round, shard, step) order, then one **start leaf** per shard: ``keccak256(uint256 0 ++
  uint256 shard ++ uint256 (2^256 - 1) ++ start state root ++ 32 zero bytes)``, the state a round-0 unit of that
  shard starts from (later rounds start from the round's agreed weights, which no table can know).  Aggregation
  units run no step and have no leaves.

Everything here is a pure function of the spec and the dataset, so every honest node rebuilds the root and
refuses a job whose on-chain root differs (``node/preflight.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import merkle_proof, merkle_root
from gensyn_py.proof.state import key_hash, state_entry, state_hash
from gensyn_py.proof.step_program import BATCH_KEYS, program_root
from gensyn_py.proof.trace import Trace, TraceError

if TYPE_CHECKING:
    import numpy as np

    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec


def batch_root(inputs: dict[str, np.ndarray[Any, Any]]) -> bytes:
    """The Merkle root of a step's ``lr``, ``x`` and ``y`` entries, in key-hash order."""
    if set(inputs) != set(BATCH_KEYS):
        raise TraceError(f"a step's batch inputs are {BATCH_KEYS}, got {sorted(inputs)}")
    return merkle_root([state_entry(k, inputs[k]) for k in sorted(inputs, key=key_hash)])


def batch_root_of(trace: Trace) -> bytes:
    """The batch root of a traced step, from its named inputs."""
    return batch_root({k: trace.values[trace.inputs[k]] for k in BATCH_KEYS})


START = 2**256 - 1  # the step index of a start leaf (`SegmentGame.START`): no training step has it


def step_leaf(round_: int, shard: int, step: int, program: bytes, batch: bytes) -> bytes:
    return keccak256(uint256(round_) + uint256(shard) + uint256(step) + program + batch)


def start_leaf(shard: int, start: bytes) -> bytes:
    """The leaf binding a round-0 unit of `shard` to its start state root (``SegmentGame.proveStart``)."""
    return step_leaf(0, shard, START, start, bytes(32))


@dataclass(frozen=True)
class StepTable:
    """Every training step's program and batch roots, and the table's Merkle tree."""

    rounds: int
    shards: int
    steps: int  # per unit
    programs: tuple[bytes, bytes]  # (a unit's first step, every later step)
    batches: tuple[bytes, ...]  # in (round, shard, step) order
    starts: tuple[bytes, ...]  # each shard's round-0 start state root

    def position(self, round_: int, shard: int, step: int) -> int:
        if not (0 <= round_ < self.rounds and 0 <= shard < self.shards and 0 <= step < self.steps):
            raise TraceError(f"no training step ({round_}, {shard}, {step}) in a {self.rounds}x{self.shards}x"
                             f"{self.steps} job")
        return (round_ * self.shards + shard) * self.steps + step

    def program(self, step: int) -> bytes:
        return self.programs[0 if step == 0 else 1]

    def leaves(self) -> list[bytes]:
        n = self.shards * self.steps
        return [*(step_leaf(p // n, p // self.steps % self.shards, p % self.steps, self.program(p % self.steps), b)
                  for p, b in enumerate(self.batches)),
                *(start_leaf(s, root) for s, root in enumerate(self.starts))]

    def root(self) -> bytes:
        return merkle_root(self.leaves())

    def proof(self, round_: int, shard: int, step: int) -> list[bytes]:
        """The path of step (round, shard, step)'s leaf up to the root."""
        return merkle_proof(self.leaves(), self.position(round_, shard, step))

    def start_proof(self, shard: int) -> list[bytes]:
        """The path of `shard`'s start leaf up to the root."""
        if not 0 <= shard < self.shards:
            raise TraceError(f"no shard {shard} in a job of {self.shards}")
        return merkle_proof(self.leaves(), len(self.batches) + shard)


def step_inputs(trainer: Any, step: int) -> dict[str, np.ndarray[Any, Any]]:
    """Step `step`'s ``lr``, ``x`` and ``y`` as a trace records them (``proof/step_trace.py``)."""
    from gensyn_py.repro.backend import TORCH

    x, y = trainer.batch(step)
    lr = TORCH.const(trainer.learning_rate(step), x)
    return {"lr": lr.cpu().numpy(), "x": x.cpu().numpy(), "y": y.cpu().numpy()}


def step_table(spec: JobSpec, dataset: Dataset, on_unit: Callable[[int, int], None] | None = None) -> StepTable:
    """Build `spec`'s table over `dataset` on CPU: two traced steps, then every step's batch (`on_unit(done,
    total)` after each unit's steps, for progress)."""
    from gensyn_py.proof.step_trace import trace_step
    from gensyn_py.train.trainer import Trainer

    if spec.mode != "repro":
        raise TraceError(f"only a repro job has a step table, this one is {spec.mode}")
    first = Trainer(spec, dataset, 0, 0, "cpu")
    starts = [state_hash(first.state_dict())] + [state_hash(Trainer(spec, dataset, 0, s, "cpu").state_dict())
                                                 for s in range(1, spec.shards)]
    programs = [program_root(trace_step(first))]
    if spec.steps_per_unit > 1:
        first.train_step()
        programs.append(program_root(trace_step(first)))
    else:
        programs.append(programs[0])
    batches: list[bytes] = []
    total = spec.rounds * spec.shards
    for r in range(spec.rounds):
        for s in range(spec.shards):
            t = first if (r, s) == (0, 0) else Trainer(spec, dataset, r, s, "cpu")
            batches += [batch_root(step_inputs(t, k)) for k in range(spec.steps_per_unit)]
            if on_unit is not None:
                on_unit(r * spec.shards + s + 1, total)
    return StepTable(spec.rounds, spec.shards, spec.steps_per_unit, (programs[0], programs[1]), tuple(batches),
                     tuple(starts))
