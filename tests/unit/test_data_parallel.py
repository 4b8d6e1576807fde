"""A repro unit trained data-parallel by two processes (torch.distributed, gloo) ends in the state one
process gets, bit for bit: weights, optimizer state and losses, for every model family.  Exact mode
refuses to run split."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from gensyn_py.errors import TrainingError
from gensyn_py.proof.state import state_hash
from gensyn_py.repro.distributed import rows_of
from gensyn_py.train.chunks import chunked_entry, open_dataset, split
from gensyn_py.train.spec import parse_spec
from gensyn_py.train.trainer import Trainer

from .onnxkit import dataset_of, onnx_spec
from .trainkit import dataset_for, spec_dict, tiny_spec

STEPS = 3
ADAMW = {"name": "adamw", "lr": 0.01, "weight_decay": 0.01}
CASES: dict[str, dict[str, Any]] = {
    "mlp/sgd": {"family": "mlp"},
    "cnn/sgd": {"family": "cnn"},
    "transformer/adamw": {"family": "transformer", "optimizer": ADAMW},
    "mlp/adamw/odd": {"family": "mlp", "optimizer": ADAMW, "batch_size": 18},  # 9 rows a rank
}


def _train(case: dict[str, Any]) -> tuple[str, list[float]]:
    over = {k: v for k, v in case.items() if k != "family"}
    spec = tiny_spec(case["family"], mode="repro", steps_per_unit=STEPS, checkpoint_interval=STEPS, **over)
    t = Trainer(spec, dataset_for(case["family"]), 0, 0, "cpu")
    losses = t.run(STEPS)
    return state_hash(t.state_dict()).hex(), losses


def worker(rank: int, size: int, init: str, out: str) -> None:
    """One process of the group (run as `python -m tests.unit.test_data_parallel RANK SIZE INIT OUT`)."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=size)
    try:
        result: dict[str, Any] = {name: _train(case) for name, case in CASES.items()}
        try:
            Trainer(tiny_spec("mlp", mode="exact"), dataset_for("mlp"), 0, 0, "cpu").run(1)
            result["exact"] = "ran"
        except TrainingError as e:
            result["exact"] = str(e)
        try:
            Trainer(onnx_spec("gpt"), dataset_of("gpt"), 0, 0, "cpu").run(1)
            result["onnx"] = "ran"
        except TrainingError as e:
            result["onnx"] = str(e)
        Path(out, f"{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def test_two_processes_train_the_state_one_process_trains(tmp_path: Path) -> None:
    single = {name: _train(case) for name, case in CASES.items()}
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-m", "tests.unit.test_data_parallel", str(rank), "2",
                               str(tmp_path / "init"), str(tmp_path)], cwd=root) for rank in (0, 1)]
    try:
        assert [p.wait(timeout=300) for p in procs] == [0, 0]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    for rank in (0, 1):
        got = json.loads((tmp_path / f"{rank}.json").read_text())
        for name in CASES:
            assert got[name][0] == single[name][0], (rank, name)  # state hash: weights, optimizer, RNG, cursor
            assert got[name][1] == single[name][1], (rank, name)  # every step's loss
        assert "needs mode 'repro'" in got["exact"]
        assert "an ONNX graph trains in one process" in got["onnx"]


def test_a_batch_splits_into_equal_shares_or_not_at_all() -> None:
    assert [rows_of(16, r, 2) for r in (0, 1)] == [(0, 8), (8, 16)]
    assert [rows_of(12, r, 3) for r in range(3)] == [(0, 4), (4, 8), (8, 12)]
    with pytest.raises(ValueError, match="does not split evenly"):
        rows_of(15, 0, 2)


if __name__ == "__main__":
    worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])


def _unit_root(trainer: Trainer, store_dir: Path) -> bytes:
    from gensyn_py.proof.unit import commit_segments
    from gensyn_py.storage.local import LocalStore

    return commit_segments(trainer, LocalStore(store_dir), 1, overlap=False).checkpoint_root


def test_a_training_group_commits_the_root_one_process_commits(tmp_path: Path) -> None:
    """The solver's way: this process is rank 0 of a group whose helper it starts; the unit's checkpoint root
    (every checkpoint's state hash) is the one-process root, also when the unit resumes mid-way."""
    from gensyn_py.train.process_group import TrainingGroup

    spec = tiny_spec("transformer", mode="repro", optimizer=ADAMW, steps_per_unit=4, checkpoint_interval=2)
    single = _unit_root(Trainer(spec, dataset_for("transformer"), 0, 1, "cpu"), tmp_path / "single")
    trainer = Trainer(spec, dataset_for("transformer"), 0, 1, "cpu")
    with TrainingGroup(trainer, 2):
        assert dist.get_world_size() == 2
        grouped = _unit_root(trainer, tmp_path / "group")
    assert not dist.is_initialized()
    assert grouped == single


def test_a_chunked_dataset_trains_in_a_group(tmp_path: Path) -> None:
    """A unit on a chunked dataset: the helper reads the manifest and the unit's chunks from the node's store
    (only those: the others are never asked for), and the group commits the one-process root."""
    from gensyn_py.storage.cid import cid_for_bytes
    from gensyn_py.train.chunks import ChunkedDataset, unit_chunks
    from gensyn_py.train.process_group import TrainingGroup

    ds = dataset_for("transformer")
    manifest, files = split(ds, 4)
    manifest_bytes = manifest.to_bytes()
    store = {cid_for_bytes(f): f for f in [*files, manifest_bytes]}
    spec = parse_spec({**spec_dict("transformer", mode="repro", optimizer=ADAMW, shards=4, steps_per_unit=4,
                                   checkpoint_interval=2),
                       "dataset": chunked_entry(ds, manifest, manifest_bytes)})
    asked: list[str] = []

    def get(cid: str) -> bytes:
        asked.append(cid)
        return store[cid]

    def trainer() -> Trainer:
        opened = open_dataset(spec.dataset, store.__getitem__)
        assert isinstance(opened, ChunkedDataset)
        return Trainer(spec, opened, 0, 1, "cpu")

    single = _unit_root(trainer(), tmp_path / "single")
    t = trainer()
    with TrainingGroup(t, 2, get=get):
        grouped = _unit_root(t, tmp_path / "group")
    assert grouped == single
    assert isinstance(t.dataset, ChunkedDataset)
    read = unit_chunks(t.dataset, spec, 0, 1)
    assert 0 < len(read) < len(files)  # one shard of a chunked dataset: some chunks, not all
    assert sorted(asked) == sorted([spec.dataset.cid, *(manifest.chunks[k].cid for k in read)])


def test_a_group_refuses_what_it_cannot_split_or_hand_over() -> None:
    from gensyn_py.train.chunks import ChunkedDataset
    from gensyn_py.train.process_group import TrainingGroup

    with pytest.raises(TrainingError, match="an ONNX graph trains in one process"):
        TrainingGroup(Trainer(onnx_spec("gpt"), dataset_of("gpt"), 0, 0, "cpu"), 2)
    ds = dataset_for("mlp")
    manifest, files = split(ds, 16)
    data = manifest.to_bytes()
    spec = parse_spec({**spec_dict("mlp", mode="repro"), "dataset": chunked_entry(ds, manifest, data)})
    store = {spec.dataset.cid: data, **{e.cid: f for e, f in zip(manifest.chunks, files, strict=True)}}
    opened = open_dataset(spec.dataset, store.__getitem__)
    assert isinstance(opened, ChunkedDataset)
    with pytest.raises(TrainingError, match="needs its chunks from the node's store"), \
            TrainingGroup(Trainer(spec, opened, 0, 0, "cpu"), 2):
        pass


def test_a_helper_that_dies_fails_the_training_not_the_node(tmp_path: Path) -> None:
    from gensyn_py.train.process_group import TrainingGroup

    spec = tiny_spec("mlp", mode="repro", steps_per_unit=40, checkpoint_interval=2)
    trainer = Trainer(spec, dataset_for("mlp"), 0, 0, "cpu")
    group = TrainingGroup(trainer, 2, timeout=90)
    with pytest.raises(TrainingError, match="data-parallel training failed"), group:
        trainer.train_step()
        group._helpers[0].kill()
        for _ in range(10):
            trainer.train_step()
    assert not dist.is_initialized() and group._helpers == []
    with pytest.raises(TrainingError, match="only a repro unit"):
        TrainingGroup(Trainer(tiny_spec("mlp", mode="exact"), dataset_for("mlp"), 0, 0, "cpu"), 2)


def _rank0_until_killed(ready: str) -> None:
    """A process that forms a group of 2, says its helper's pid, and trains until it is killed."""
    from gensyn_py.train.process_group import TrainingGroup

    spec = tiny_spec("mlp", mode="repro", steps_per_unit=100_000, checkpoint_interval=100_000)
    trainer = Trainer(spec, dataset_for("mlp"), 0, 0, "cpu")
    with TrainingGroup(trainer, 2) as group:
        trainer.train_step()
        Path(ready).write_text(str(group.helper_pids[0]))
        while True:
            trainer.train_step()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_killed_node_takes_its_helpers_with_it(tmp_path: Path) -> None:
    """kill -9 of the daemon's process (rank 0) mid-unit: its helper dies too, nothing is left waiting (the
    helper's next collective sees the closed peer; PR_SET_PDEATHSIG covers a helper that is not in one)."""
    from gensyn_py.sim.localnet import wait_until

    ready = tmp_path / "ready"
    root = Path(__file__).resolve().parents[2]
    code = f"from tests.unit.test_data_parallel import _rank0_until_killed; _rank0_until_killed({str(ready)!r})"
    rank0 = subprocess.Popen([sys.executable, "-c", code], cwd=root)
    try:
        wait_until(lambda: rank0.poll() is not None or (ready.exists() and ready.read_text() != ""), 120,
                   "the group to form")
        assert rank0.poll() is None
        helper = int(ready.read_text())
        assert _alive(helper)
        os.kill(rank0.pid, signal.SIGKILL)
        rank0.wait()
        wait_until(lambda: not _alive(helper), 30, "the helper to die with its parent")
    finally:
        rank0.kill()
        rank0.wait()
