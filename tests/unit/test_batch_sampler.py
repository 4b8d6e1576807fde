"""The counter-mode SHA-256 batch sampler: a pure function of (seed, round, shard, step), keyed by each of them,
spreading a step's draws evenly over the shard (gensyn_py/train/batch_sampler.py)."""

from __future__ import annotations

import numpy as np
import pytest

from gensyn_py.crypto.hashing import sha256
from gensyn_py.errors import SpecError
from gensyn_py.train.batch_sampler import DOMAIN, position, positions
from gensyn_py.train.data import batch_indices


def test_positions_are_the_documented_sha256_mod_shard_size() -> None:
    seed, round_, shard, step, size = 9, 2, 1, 17, 1003
    step_seed = sha256(DOMAIN + b"".join(v.to_bytes(32, "big") for v in (seed, round_, shard, step)))
    words = [sha256(step_seed + i.to_bytes(32, "big")) for i in range(5)]
    assert positions(seed, round_, shard, step, 5, size).tolist() == [int.from_bytes(w, "big") % size for w in words]
    assert [position(seed, round_, shard, step, i, size) for i in range(5)] == positions(
        seed, round_, shard, step, 5, size
    ).tolist()


@pytest.mark.parametrize("size", [1, 1437, 2**31 + 11, 2**32 - 1, 2**32, 2**40 + 3])
def test_large_batches_reduce_in_numpy_to_the_scalar_positions(size: int) -> None:
    # 300 draws take the numpy path below 2^32, the Python-int path from 2^32 on; both equal the scalar form.
    got = positions(2**62 + 5, 7, 3, 11, 300, size)
    assert got.tolist() == [position(2**62 + 5, 7, 3, 11, i, size) for i in range(300)]


def test_the_same_keys_give_the_same_batch_and_a_prefix_of_a_larger_one() -> None:
    a = positions(5, 1, 2, 3, 64, 777)
    assert (positions(5, 1, 2, 3, 64, 777) == a).all()
    # Index i does not depend on the batch size: a smaller batch is a prefix of a larger one.
    assert (positions(5, 1, 2, 3, 16, 777) == a[:16]).all()


def test_draws_cover_the_shard_uniformly() -> None:
    # 200 steps x 500 draws over 97 positions (fixed keys, so the statistic is one fixed number): Pearson's
    # chi-square with 96 degrees of freedom has mean 96 and sd ~14; a biased sampler (modulo bias of a narrow
    # word, a stuck counter, a skewed step) lands in the thousands.
    size, steps, batch = 97, 200, 500
    draws = np.concatenate([positions(31, 4, 2, t, batch, size) for t in range(steps)])
    counts = np.bincount(draws, minlength=size)
    expected = steps * batch / size
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 160, chi2
    assert counts.min() > 0.8 * expected and counts.max() < 1.2 * expected


def test_batches_larger_than_the_shard_and_a_one_example_shard() -> None:
    idx = np.array([4, 8, 15])
    out = batch_indices(idx, 50, 7, 0, 0, 0)
    assert out.shape == (50,) and set(out.tolist()) == {4, 8, 15}  # with replacement: every member, repeated
    assert batch_indices(np.array([42]), 6, 7, 0, 0, 0).tolist() == [42] * 6


def test_an_empty_shard_is_refused() -> None:
    with pytest.raises(SpecError, match="shard size"):
        positions(1, 0, 0, 0, 4, 0)
    with pytest.raises(SpecError, match="shard size"):
        position(1, 0, 0, 0, 0, 0)
