"""A repro job's step table (`proof/step_table.py`): built from two traced steps and the batches, it names the
program and the inputs of every training step of every unit, and a solver refuses a job whose on-chain root
differs (`node/preflight.py`)."""

from __future__ import annotations

from functools import cache

import pytest

from gensyn_py.crypto.merkle import verify_proof
from gensyn_py.node.preflight import UnfitJob, check_steps
from gensyn_py.proof.state import state_hash
from gensyn_py.proof.step_program import program_root
from gensyn_py.proof.step_table import StepTable, batch_root_of, start_leaf, step_leaf, step_table
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.proof.trace import TraceError
from gensyn_py.train.spec import JobSpec
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, tiny_spec

OPT = {"name": "adamw", "lr": 0.01}


@cache
def spec(**over: object) -> JobSpec:
    return tiny_spec("mlp", mode="repro", rounds=2, shards=2, optimizer=OPT, **over)


@cache
def table(**over: object) -> StepTable:
    return step_table(spec(**over), dataset_for("mlp"))


@pytest.mark.parametrize(("round_", "shard", "step"), [(0, 0, 0), (0, 0, 3), (1, 1, 0), (1, 0, 7)])
def test_every_step_s_trace_is_the_table_s_program_and_batch(round_: int, shard: int, step: int) -> None:
    t = Trainer(spec(), dataset_for("mlp"), round_, shard, "cpu")
    t.run(step)
    tr = trace_step(t)
    tab = table()
    assert program_root(tr) == tab.program(step)
    assert batch_root_of(tr) == tab.batches[tab.position(round_, shard, step)]
    leaf = step_leaf(round_, shard, step, tab.program(step), tab.batches[tab.position(round_, shard, step)])
    assert verify_proof(leaf, tab.proof(round_, shard, step), tab.root())


def test_a_unit_s_first_step_runs_its_own_program_and_the_rest_one_program() -> None:
    tab = table()
    assert tab.programs[0] != tab.programs[1]  # no optimizer state before the first step
    assert len(set(tab.batches)) == len(tab.batches) == 2 * 2 * spec().steps_per_unit


@pytest.mark.parametrize("shard", [0, 1])
def test_each_shard_s_round_0_start_state_is_in_the_table(shard: int) -> None:
    """A round-0 unit's segment 0 starts from the spec's seeded state, which the table binds (`SegmentGame.proveStart`);
    each shard's differs (its cursor and its random stream)."""
    tab = table()
    start = state_hash(Trainer(spec(), dataset_for("mlp"), 0, shard, "cpu").state_dict())
    assert tab.starts[shard] == start and tab.starts[0] != tab.starts[1]
    assert verify_proof(start_leaf(shard, start), tab.start_proof(shard), tab.root())
    assert not verify_proof(start_leaf(1 - shard, start), tab.start_proof(shard), tab.root())
    with pytest.raises(TraceError, match="no shard 2"):
        tab.start_proof(2)


def test_the_schedule_is_an_input_not_the_program() -> None:
    warm = step_table(tiny_spec("mlp", mode="repro", rounds=2, shards=2, optimizer=OPT,
                                schedule={"kind": "cosine", "warmup_steps": 3}), dataset_for("mlp"))
    assert warm.programs == table().programs
    assert warm.batches != table().batches and warm.root() != table().root()


def test_out_of_range_steps_and_exact_jobs_have_no_table() -> None:
    with pytest.raises(TraceError, match="no training step"):
        table().position(2, 0, 0)
    with pytest.raises(TraceError, match="only a repro job"):
        step_table(tiny_spec("mlp", mode="exact"), dataset_for("mlp"))


def test_a_solver_refuses_a_job_whose_on_chain_table_is_another() -> None:
    check_steps(spec(), dataset_for("mlp"), table().root())
    check_steps(spec(), dataset_for("mlp"), bytes(32))  # no table: the committee judges its disputes
    assert table(seed=12345).root() != table().root()  # another seed draws other batches
    with pytest.raises(UnfitJob, match="step table root"):
        check_steps(spec(), dataset_for("mlp"), table(seed=12345).root())
