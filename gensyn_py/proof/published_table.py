"""A step table the requester publishes, so that a node checks only its own unit's entries.

Building a job's whole step table (``step_table.step_table``) reads every batch of every unit, which for a
chunked dataset means every chunk. A requester that submits a repro job on a chunked dataset stores the table
itself (``encode``) and names it in the spec (``step_table``: its CID and size). A node then fetches it, checks
that its Merkle root is the job's on-chain step table root, and recomputes only what its own unit will be judged
by (``verify_unit``): the two program roots (traced on its own unit), the batch roots of its unit's steps (only
its chunks are read), and its shard's start leaf. An entry of another unit is that unit's solver's to check:
no dispute about this unit reads it.

File layout: rounds, shards, steps per unit as three 32-byte big-endian words; the two program roots; the batch
roots in (round, shard, step) order; each shard's start state root. 32 bytes each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gensyn_py.errors import VerificationError
from gensyn_py.proof.step_table import StepTable, batch_root, step_inputs

if TYPE_CHECKING:
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec

WORD = 32


def encode(table: StepTable) -> bytes:
    head = b"".join(n.to_bytes(WORD, "big") for n in (table.rounds, table.shards, table.steps))
    return head + b"".join(table.programs) + b"".join(table.batches) + b"".join(table.starts)


def decode(data: bytes, spec: JobSpec, root: bytes) -> StepTable:
    """The table in `data`, which must have the spec's shape and the on-chain `root`."""
    if len(data) < 5 * WORD or len(data) % WORD:
        raise VerificationError(f"step_table: {len(data)} bytes is not a step table file")
    rounds, shards, steps = (int.from_bytes(data[i * WORD:(i + 1) * WORD], "big") for i in range(3))
    if (rounds, shards, steps) != (spec.rounds, spec.shards, spec.steps_per_unit):
        raise VerificationError(f"step_table: a {rounds}x{shards}x{steps} table for a {spec.rounds}x{spec.shards}x"
                                f"{spec.steps_per_unit} job")
    words = [data[i:i + WORD] for i in range(3 * WORD, len(data), WORD)]
    n = rounds * shards * steps
    if len(words) != 2 + n + shards:
        raise VerificationError(f"step_table: {len(words)} entries; a {rounds}x{shards}x{steps} table has "
                                f"{2 + n + shards}")
    table = StepTable(rounds, shards, steps, (words[0], words[1]), tuple(words[2:2 + n]), tuple(words[2 + n:]))
    if table.root() != root:
        raise VerificationError(f"step_table: its root 0x{table.root().hex()} is not the job's on-chain step "
                                f"table root 0x{root.hex()}")
    return table


def verify_unit(table: StepTable, spec: JobSpec, dataset: Dataset, round_: int, shard: int) -> None:
    """The entries a dispute about unit (round, shard) reads are this spec's and dataset's: VerificationError
    naming the first that is not."""
    from gensyn_py.proof.state import state_hash
    from gensyn_py.proof.step_program import program_root
    from gensyn_py.proof.step_trace import trace_step
    from gensyn_py.train.trainer import Trainer

    t = Trainer(spec, dataset, round_, shard, "cpu")
    origin = t if round_ == 0 else Trainer(spec, dataset, 0, shard, "cpu")  # the shard's round-0 start
    if table.starts[shard] != state_hash(origin.state_dict()):
        raise VerificationError(f"step_table: shard {shard}'s start state root is not the spec's")
    programs = [program_root(trace_step(t))]
    batches = [batch_root(step_inputs(t, 0))]
    if spec.steps_per_unit > 1:
        t.train_step()
        programs.append(program_root(trace_step(t)))
    else:
        programs.append(programs[0])
    if tuple(programs) != table.programs:
        raise VerificationError("step_table: its program roots are not the spec's model and optimizer")
    batches += [batch_root(step_inputs(t, k)) for k in range(1, spec.steps_per_unit)]
    first = table.position(round_, shard, 0)
    for k, mine in enumerate(batches):
        if table.batches[first + k] != mine:
            raise VerificationError(f"step_table: the batch root of step {k} of unit (round {round_}, shard {shard}) "
                                    f"is not the spec's and dataset's")
