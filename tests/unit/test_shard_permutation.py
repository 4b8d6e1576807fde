"""The shard permutation: a permutation of the dataset for any size, split as array_split, keyed by the seed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensyn_py.errors import SpecError
from gensyn_py.train.data import shard_indices
from gensyn_py.train.shard_permutation import member, permute, shard_members


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**63 - 1))
def test_pi_is_a_permutation_of_every_size(n: int, seed: int) -> None:
    p = permute(np.arange(n, dtype=np.uint64), n, seed)
    assert (np.sort(p) == np.arange(n)).all()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 3000), shards=st.integers(1, 16), seed=st.integers(0, 2**63 - 1))
def test_shards_partition_the_dataset_with_array_split_sizes(n: int, shards: int, seed: int) -> None:
    parts = [shard_indices(n, shards, s, seed) for s in range(shards)]
    assert [len(p) for p in parts] == [len(a) for a in np.array_split(np.arange(n), shards)]
    assert (np.sort(np.concatenate(parts)) == np.arange(n)).all()


def test_the_scalar_member_is_the_vector_one() -> None:
    members = shard_members(1437, 3, 2, 11)
    assert [member(1437, 3, 2, 11, j) for j in (0, 1, 200, len(members) - 1)] == [
        int(members[j]) for j in (0, 1, 200, len(members) - 1)
    ]


def test_the_seed_moves_every_shard_and_spreads_classes() -> None:
    a, b = shard_indices(1000, 4, 0, 1), shard_indices(1000, 4, 0, 2)
    assert len(set(a.tolist()) ^ set(b.tolist())) > 300  # another seed, mostly other members
    # A dataset sorted by class (10 classes of 100): each shard of 250 gets every class, none more than half.
    counts = np.bincount(np.arange(1000)[a] // 100, minlength=10)
    assert counts.min() > 0 and counts.max() < 125


def test_out_of_range_shard_and_member_are_refused() -> None:
    with pytest.raises(SpecError, match="shard 4 out of range"):
        shard_indices(10, 4, 4, 0)
    with pytest.raises(SpecError, match="member 3 out of range"):
        member(10, 4, 3, 0, 3)  # shard 3 of 10 in 4 has 2 members
