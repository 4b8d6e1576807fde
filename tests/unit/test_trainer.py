"""Trainer: exact determinism, full state, bit-identical resume, seeded data order."""

from __future__ import annotations

import time

import numpy as np
import pytest

from gensyn_py.errors import SpecError, TrainingError
from gensyn_py.proof.state import decode_state, encode_state, state_hash
from gensyn_py.train.data import Dataset, batch_indices, shard_indices, synthetic_tokens
from gensyn_py.train.schedule import lr_at
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, digits_flat, tiny_spec


@pytest.mark.parametrize("mode", ["exact", "repro"])
@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_tiny_config_of_each_family_steps_fast(family: str, mode: str) -> None:
    t = Trainer(tiny_spec(family, mode=mode), dataset_for(family), 0, 0, "cpu")
    t.train_step()
    start = time.perf_counter()
    loss = t.train_step()
    assert time.perf_counter() - start < 0.5
    assert np.isfinite(loss) and loss > 0


@pytest.mark.parametrize("mode", ["exact", "repro"])
@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_two_runs_give_identical_bits(family: str, mode: str) -> None:
    spec, ds = tiny_spec(family, mode=mode), dataset_for(family)
    a, b = Trainer(spec, ds, 0, 1, "cpu"), Trainer(spec, ds, 0, 1, "cpu")
    assert a.run(4) == b.run(4)
    assert encode_state(a.state_dict()) == encode_state(b.state_dict())


@pytest.mark.parametrize("optimizer", [{"name": "sgd", "lr": 0.1, "momentum": 0.9}, {"name": "adamw", "lr": 0.01}])
def test_resume_from_checkpoint_continues_bit_identically(optimizer: dict[str, object]) -> None:
    spec, ds = tiny_spec(optimizer=optimizer), digits_flat()
    straight = Trainer(spec, ds, 1, 0, "cpu")
    straight_losses = straight.run(8)

    first = Trainer(spec, ds, 1, 0, "cpu")
    first_losses = first.run(3)
    saved = encode_state(first.state_dict())
    resumed = Trainer(spec, ds, 1, 0, "cpu")
    resumed.load_state_dict(decode_state(saved))
    assert resumed.step == 3
    assert first_losses + resumed.run(5) == straight_losses
    assert state_hash(resumed.state_dict()) == state_hash(straight.state_dict())


@pytest.mark.parametrize("mode", ["exact", "repro"])
def test_state_covers_model_optimizer_rng_and_cursor(mode: str) -> None:
    t = Trainer(tiny_spec(mode=mode), digits_flat(), 1, 1, "cpu")
    t.run(2)
    state = t.state_dict()
    assert any(k.startswith("model/") for k in state)
    assert any(k.endswith("/momentum_buffer") for k in state)
    assert state["rng"].dtype.is_floating_point is False and state["rng"].numel() > 0
    assert state["cursor"].tolist() == [1, 1, 2]


@pytest.mark.parametrize("mode", ["exact", "repro"])
@pytest.mark.parametrize("optimizer", [{"name": "sgd", "lr": 0.1, "momentum": 0.9},
                                       {"name": "adamw", "lr": 0.01, "weight_decay": 0.01}])
def test_a_state_is_a_snapshot_that_later_steps_leave_alone(mode: str, optimizer: dict[str, object]) -> None:
    """The checkpoint writer encodes a state on its own thread while training goes on: every tensor of
    state_dict() must be a copy (torch's optimizers update their state in place)."""
    t = Trainer(tiny_spec(mode=mode, optimizer=optimizer), digits_flat(), 0, 0, "cpu")
    t.run(2)
    state = t.state_dict()
    before = encode_state(state)
    t.run(2)
    assert encode_state(state) == before
    assert encode_state(t.state_dict()) != before


def test_loading_another_units_state_is_refused() -> None:
    spec = tiny_spec()
    other = Trainer(spec, digits_flat(), 0, 1, "cpu").state_dict()
    with pytest.raises(TrainingError, match="round/shard"):
        Trainer(spec, digits_flat(), 0, 0, "cpu").load_state_dict(other)


def test_shards_train_on_different_data_and_start_from_the_same_model() -> None:
    spec = tiny_spec()
    a, b = Trainer(spec, digits_flat(), 0, 0, "cpu"), Trainer(spec, digits_flat(), 0, 1, "cpu")
    assert a.weights().keys() == b.weights().keys()
    assert all((a.weights()[k] == b.weights()[k]).all() for k in a.weights())
    assert a.run(2) != b.run(2)


def test_shards_partition_the_dataset() -> None:
    parts = [shard_indices(103, 4, i, seed=5) for i in range(4)]
    joined = np.sort(np.concatenate(parts))
    assert (joined == np.arange(103)).all()


def test_batch_order_depends_on_every_key() -> None:
    idx = np.arange(500)
    base = batch_indices(idx, 8, 1, 0, 0, 0)
    assert (batch_indices(idx, 8, 1, 0, 0, 0) == base).all()
    for args in [(2, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 0), (1, 0, 0, 1)]:
        assert not (batch_indices(idx, 8, *args) == base).all()


def test_more_steps_than_the_unit_is_refused() -> None:
    t = Trainer(tiny_spec(steps_per_unit=2, checkpoint_interval=2), digits_flat(), 0, 0, "cpu")
    t.run(2)
    with pytest.raises(TrainingError, match="already ran"):
        t.train_step()


@pytest.mark.parametrize("mode", ["exact", "repro"])
def test_training_reduces_loss_on_digits(mode: str) -> None:
    spec = tiny_spec(steps_per_unit=60, checkpoint_interval=60, rounds=1, shards=1,
                     schedule={"kind": "constant"}, mode=mode)
    losses = Trainer(spec, digits_flat(), 0, 0, "cpu").run(60)
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:5])


def test_checkpoint_callback_sees_every_interval_and_progress_is_reported() -> None:
    seen: list[int] = []
    progress: list[int] = []
    t = Trainer(tiny_spec(), digits_flat(), 0, 0, "cpu")
    t.run(8, on_step=lambda s, total, loss: progress.append(s), on_checkpoint=lambda s, _: seen.append(s))
    assert seen == [0, 2, 4, 6, 8]
    assert progress == list(range(1, 9))


def test_schedules() -> None:
    cos = tiny_spec()
    assert lr_at(cos, 0) == pytest.approx(0.05)  # warmup 2 steps
    assert lr_at(cos, 2) == pytest.approx(0.1)
    assert lr_at(cos, 15) < 0.01
    const = tiny_spec(schedule={"kind": "constant"})
    assert lr_at(const, 9) == 0.1


def test_dataset_bytes_round_trip_and_are_checked_against_the_spec() -> None:
    ds = synthetic_tokens(n=8)
    back = Dataset.from_bytes(ds.to_bytes())
    assert (back.x == ds.x).all() and (back.y == ds.y).all()
    spec = tiny_spec()
    with pytest.raises(SpecError):
        Dataset.from_bytes(ds.to_bytes(), spec.dataset)
    with pytest.raises(SpecError, match="safetensors"):
        Dataset.from_bytes(b"\x80\x04pickle")
    assert Dataset.from_bytes(digits_flat().to_bytes(), spec.dataset).num_examples == digits_flat().num_examples
