"""The step game's off-chain commitments (`op_prefix`, `descent`, `step_program`) against plain constructions.

- a prefix root is the root of a full tree with the first i leaves and zeros after, built level by level;
- one slot path leads from the empty slot to the agreed prefix and from the leaf to the next prefix; a path
  opened in a longer prefix verifies the op there;
- the descent's sibling path from posted children equals `merkle_proof`, through promoted nodes, for every
  chunk count up to 70; `DataTree.move` goes where the two trees first differ and passes promoted nodes;
- program and named-input entries bind what they claim to.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from gensyn_py.crypto.hashing import keccak256
from gensyn_py.crypto.merkle import hash_pair, merkle_levels, merkle_proof, process_proof, verify_proof
from gensyn_py.proof.descent import DataTree, pass_promoted, sibling_path, width
from gensyn_py.proof.op_prefix import ZERO, depth_for, empty_root, prefix_roots, slot_path
from gensyn_py.proof.step_program import input_leaf, input_proof, inputs_root, program_leaf, program_proof, program_root
from gensyn_py.proof.tensor_commit import tensor_leaves
from gensyn_py.proof.trace import Trace, TraceOp


def leaves(n: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(32) for _ in range(n)]


def full_root(slots: list[bytes]) -> bytes:
    level = slots
    while len(level) > 1:
        level = [hash_pair(level[j], level[j + 1]) for j in range(0, len(level), 2)]
    return level[0]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100])
def test_prefix_roots_are_full_trees_with_zeros_after_the_prefix(n: int) -> None:
    ls = leaves(n)
    d = depth_for(n)
    assert 2 ** d >= n and (d == 1 or 2 ** (d - 1) < n)
    roots = prefix_roots(ls, d)
    assert roots[0] == empty_root(d)
    for i in range(n + 1):
        assert roots[i] == full_root(ls[:i] + [ZERO] * (2 ** d - i))


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_one_slot_path_links_the_agreed_prefix_to_the_next(n: int) -> None:
    ls = leaves(n, seed=n)
    d = depth_for(n)
    roots = prefix_roots(ls, d)
    for i in range(n):
        path = slot_path(ls, i, i, d)
        assert len(path) == d
        assert process_proof(ZERO, path) == roots[i] and process_proof(ls[i], path) == roots[i + 1]
        for filled in range(i + 1, n + 1):
            assert verify_proof(ls[i], slot_path(ls, i, filled, d), roots[filled])


def test_depth_refuses_what_the_contract_refuses() -> None:
    with pytest.raises(ValueError):
        depth_for(0)
    with pytest.raises(ValueError):
        depth_for(2**24 + 1)


@pytest.mark.parametrize("chunks", list(range(1, 71)))
def test_the_siblings_the_claimant_posts_are_its_merkle_proof(chunks: int) -> None:
    ls = leaves(chunks, seed=chunks)
    levels = merkle_levels(ls)
    # Everything a claimant could post on the way down: the children of every node with two.
    posted = {(h, j): (levels[h - 1][2 * j], levels[h - 1][2 * j + 1])
              for h in range(1, len(levels)) for j in range(len(levels[h])) if 2 * j + 1 < len(levels[h - 1])}
    for c in range(chunks):
        assert list(sibling_path(posted, c, chunks)) == merkle_proof(ls, c)
    for h, level in enumerate(levels):
        assert width(chunks, h) == len(level)


@pytest.mark.parametrize("size", [1, 8, 9, 40, 333])
def test_a_descent_between_two_tensors_ends_on_a_chunk_where_they_differ(size: int) -> None:
    rng = np.random.default_rng(size)
    a = rng.standard_normal(size).astype(np.float32)
    for changed in sorted({0, size // 2, size - 1}):
        b = a.copy()
        b[changed] += 1
        claimant, counter = DataTree(a), DataTree(b)
        level, index = len(claimant.levels) - 1, 0
        pending = claimant.children(level, index)  # revealed with its op; the counter moves first
        mover, other = counter, claimant
        while level > 0:
            mine = mover.move(level, index, pending)
            right = mine[0] == pending[0]
            level, index = pass_promoted(claimant.chunks, level - 1, 2 * index + int(right))
            pending = mine[2:]
            mover, other = other, mover
        assert index == changed * 4 // 32
        assert tensor_leaves(a)[index] != tensor_leaves(b)[index]


def test_program_and_input_entries_bind_code_attributes_wiring_and_values() -> None:
    ops = [TraceOp("input", (), ("x",)), TraceOp("input", (), ("w",)), TraceOp("mul", (0, 1)),
           TraceOp("add", (2, 0))]
    vals = [np.ones(3, np.float32), np.full(3, 2, np.float32), np.full(3, 2, np.float32), np.full(3, 3, np.float32)]
    t = Trace(ops, vals, {"y": 3})
    root = program_root(t)
    for i in range(4):
        assert verify_proof(program_leaf(t, i), program_proof(t, i), root)
    rewired = Trace([*ops[:3], TraceOp("add", (0, 2))], vals, {"y": 3})
    assert program_leaf(rewired, 3) != program_leaf(t, 3) and program_root(rewired) != root
    assert program_root(Trace(ops, vals, {"y": 2})) != root  # the named outputs are part of the program
    other_values = Trace(ops, [v + 1 for v in vals], {"y": 3})
    assert program_root(other_values) == root  # the program never binds values
    assert inputs_root(other_values) != inputs_root(t)
    assert verify_proof(input_leaf(t, 1), input_proof(t, 1), inputs_root(t))
    assert input_leaf(t, 0) == keccak256(keccak256(b'["x"]') + t.tensor_roots[0])
