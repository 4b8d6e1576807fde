"""A step table the requester publishes: decoded only with the job's shape and on-chain root, and checked by each
node for its own unit's entries alone, reading only that unit's chunks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gensyn_py.errors import VerificationError
from gensyn_py.node.preflight import UnfitJob, check_unit
from gensyn_py.proof.published_table import decode, encode, verify_unit
from gensyn_py.proof.step_table import step_table
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.chunks import ChunkedDataset, open_dataset
from gensyn_py.train.data import batch_indices, digits, shard_indices
from tests.unit.test_chunked_dataset import spec_with, store_chunked
from tests.unit.test_preflight_shape import unit as open_unit

FLIP = bytes(31) + b"\x01"


def chunked_job(tmp_path: Path) -> tuple[LocalStore, object]:
    store = LocalStore(tmp_path)
    entry = store_chunked(store, digits(image=False)[0], 10)
    return store, spec_with(entry, mode="repro", steps_per_unit=4, checkpoint_interval=2)


def test_a_table_decodes_only_with_the_jobs_shape_and_root(tmp_path: Path) -> None:
    store, spec = chunked_job(tmp_path)
    table = step_table(spec, open_dataset(spec.dataset, store.get))  # type: ignore[attr-defined]
    data = encode(table)
    assert decode(data, spec, table.root()) == table  # type: ignore[arg-type]
    with pytest.raises(VerificationError, match="not the job's on-chain step table root"):
        decode(data, spec, bytes(32))  # type: ignore[arg-type]
    with pytest.raises(VerificationError, match="a 1x2x4 table for a 1x2x8 job"):
        decode(data, spec.model_copy(update={"steps_per_unit": 8}), table.root())  # type: ignore[attr-defined]
    with pytest.raises(VerificationError, match="entries"):
        decode(data + bytes(32), spec, table.root())  # type: ignore[arg-type]


def test_each_unit_checks_its_own_entries_and_reads_only_its_own_chunks(tmp_path: Path) -> None:
    store, spec = chunked_job(tmp_path)
    table = step_table(spec, open_dataset(spec.dataset, store.get))  # type: ignore[attr-defined]
    bad_batch = replace(table, batches=(*table.batches[:5], FLIP, *table.batches[6:]))  # shard 1, step 1
    fresh = open_dataset(spec.dataset, store.get)  # type: ignore[attr-defined]
    assert isinstance(fresh, ChunkedDataset)
    check_unit(spec, fresh, open_unit(0), bad_batch)  # shard 0's entries are right: its solver takes it
    members = shard_indices(fresh.num_examples, 2, 0, spec.seed)  # type: ignore[attr-defined]
    read = set().union(*(fresh.chunks_of(batch_indices(members, 16, spec.seed, 0, 0, k))  # type: ignore[attr-defined]
                         for k in range(4)))
    assert set(fresh.held()) == read and len(read) < len(fresh.manifest.chunks) / 2  # 64 reads of 144 chunks
    with pytest.raises(UnfitJob, match=r"batch root of step 1 of unit \(round 0, shard 1\)"):
        check_unit(spec, fresh, open_unit(1), bad_batch)
    bad_start = replace(table, starts=(table.starts[0], FLIP))
    with pytest.raises(VerificationError, match="shard 1's start state root"):
        verify_unit(bad_start, spec, fresh, 0, 1)  # type: ignore[arg-type]
    bad_program = replace(table, programs=(table.programs[0], FLIP))
    with pytest.raises(VerificationError, match="program roots"):
        verify_unit(bad_program, spec, fresh, 0, 0)  # type: ignore[arg-type]
    assert np.all([verify_unit(table, spec, fresh, 0, s) is None for s in (0, 1)])  # type: ignore[arg-type]
